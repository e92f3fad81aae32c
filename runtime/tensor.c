/* SPDX-License-Identifier: MIT */
/*
 * Debug-tensor-read events: the reference payload header, then the tensor
 * gathered in C order straight into the ring; and the same payload read
 * back. Writer and reader share one rule for what a tensor may be
 * (tensor_size()), so that nothing the producer accepts is refused by a
 * reader, and nothing contradictory is written.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "evstream/tensor.h"
#include "nrt/ndebug_stream.h"
#include "errors.h"
#include "producer.h"
#include "ringcopy.h"

typedef ndebug_stream_payload_debug_tensor_read_t payload_t;

#define FIELD_SIZE(f) sizeof(((payload_t *)0)->f)
_Static_assert(sizeof(struct evs_event_header) == sizeof(ndebug_stream_event_header_t), "hdr");
_Static_assert(sizeof(payload_t) == EVS_TENSOR_FIXED_BYTES, "fixed");
_Static_assert(offsetof(payload_t, logical_nc_id) == 512, "nc");
_Static_assert(offsetof(payload_t, tensor_dtype) == 520, "dtype");
_Static_assert(offsetof(payload_t, tensor_shape) == 536, "shape");
_Static_assert(offsetof(payload_t, tensor_data_size) == 600, "size");
_Static_assert(offsetof(payload_t, reserved0) == EVS_TENSOR_EXT_OFFSET, "ext");
_Static_assert(FIELD_SIZE(prefix) == EVS_TENSOR_PREFIX_MAX, "prefix");
_Static_assert(FIELD_SIZE(tensor_dtype) == EVS_TENSOR_DTYPE_MAX, "dtype size");
_Static_assert(FIELD_SIZE(tensor_shape) == EVS_TENSOR_MAX_DIMS * sizeof(uint64_t), "dims");

static const struct { const char *name; uint32_t size; } dtypes[] = {
	{ "float64", 8 }, { "float32", 4 }, { "float16", 2 }, { "bfloat16", 2 },
	{ "int64", 8 },   { "int32", 4 },   { "int16", 2 },   { "int8", 1 },
	{ "uint64", 8 },  { "uint32", 4 },  { "uint16", 2 },  { "uint8", 1 },
	{ "bool", 1 },
};

EVS_API uint32_t evs_dtype_size(const char *dtype)
{
	if (!dtype)
		return 0;
	for (size_t i = 0; i < sizeof(dtypes) / sizeof(dtypes[0]); i++)
		if (!strcmp(dtype, dtypes[i].name))
			return dtypes[i].size;
	return 0;
}

/* The element size a tensor of this dtype has: the dtype's own when known
 * (a given size must agree with it), else the given one. 0: contradictory
 * or unknown. */
static uint32_t element_size(const char *dtype, uint32_t given)
{
	uint32_t known = evs_dtype_size(dtype);

	if (known)
		return given == 0 || given == known ? known : 0;
	return given;
}

/* Elements and bytes of a shape: any 0 makes the tensor empty whatever
 * the other sizes are; otherwise the product must not overflow. */
static int tensor_size(const uint64_t *shape, uint32_t ndim, uint32_t esz, uint64_t *numel,
		       uint64_t *bytes)
{
	uint64_t n = 1;

	for (uint32_t i = 0; i < ndim; i++)
		if (shape[i] == 0) {
			*numel = *bytes = 0;
			return 0;
		}
	for (uint32_t i = 0; i < ndim; i++)
		if (__builtin_mul_overflow(n, shape[i], &n))
			return -ERANGE;
	if (__builtin_mul_overflow(n, (uint64_t)esz, bytes))
		return -ERANGE;
	*numel = n;
	return 0;
}

/*
 * Copy a strided view into dst in C order. Trailing dimensions that are
 * contiguous in the source are merged into one block copied at once;
 * the outer dimensions are walked with an odometer.
 */
static void gather(uint8_t *dst, const uint8_t *src, uint32_t ndim, const uint64_t *shape,
		   const int64_t *strides, uint64_t esz)
{
	uint64_t block = esz, idx[EVS_TENSOR_MAX_DIMS] = { 0 }, outer = 1;
	int k = (int)ndim;
	const uint8_t *at = src;

	while (k > 0 && strides[k - 1] == (int64_t)block) {
		block *= shape[k - 1];
		k--;
	}
	for (int i = 0; i < k; i++)
		outer *= shape[i];
	for (uint64_t n = 0; n < outer; n++) {
		ring_copy(dst, at, block);
		dst += block;
		for (int d = k - 1; d >= 0; d--) {
			at += strides[d];
			if (++idx[d] < shape[d])
				break;
			at -= strides[d] * (int64_t)shape[d];
			idx[d] = 0;
		}
	}
}

/* A device print: the reference payload with an empty dtype and no data. */
static bool is_print(const struct evs_tensor *t)
{
	return !t->dtype || !t->dtype[0];
}

/* The dtypes evstream knows, for messages: "float64, float32, ..., bool". */
static const char *known_dtype_list(void)
{
	static char names[160];

	if (!names[0])
		for (size_t i = 0; i < sizeof(dtypes) / sizeof(dtypes[0]); i++)
			snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s",
				 i ? ", " : "", dtypes[i].name);
	return names;
}

/* Why a tensor was refused, for evs_errmsg(): the field, its value and
 * what is allowed. Cold: only a caller's mistake leads here. */
static __attribute__((cold, noinline)) int tensor_refuse(const struct evs_tensor *t, int err,
							  uint64_t bytes)
{
	uint32_t known;

	if (t->pipe != 1 && t->pipe != 2)
		return evs_fail(EINVAL, "pipe=%u is not allowed: use 1 (stdout) or 2 (stderr)", t->pipe);
	if (is_print(t))
		return evs_fail(EINVAL, "a device print (no dtype) carries its prefix alone: ndim=%u, "
				"elem_size=%u and data=%s must be 0 and NULL", t->ndim, t->elem_size,
				t->data ? "non-NULL" : "NULL");
	if (strnlen(t->dtype, EVS_TENSOR_DTYPE_MAX) >= EVS_TENSOR_DTYPE_MAX)
		return evs_fail(EINVAL, "dtype '%.*s...' is too long: allowed is up to %d characters",
				EVS_TENSOR_DTYPE_MAX - 1, t->dtype, EVS_TENSOR_DTYPE_MAX - 1);
	if (t->ndim > EVS_TENSOR_MAX_DIMS)
		return evs_fail(EINVAL, "ndim=%u is out of range: allowed is 0 to %d", t->ndim,
				EVS_TENSOR_MAX_DIMS);
	if (t->ndim && !t->shape)
		return evs_fail(EINVAL, "shape is NULL with ndim=%u: give ndim sizes", t->ndim);
	known = evs_dtype_size(t->dtype);
	if (known && t->elem_size && t->elem_size != known)
		return evs_fail(EINVAL, "elem_size=%u does not match dtype '%s' (%u bytes): give 0 or %u",
				t->elem_size, t->dtype, known, known);
	if (!known && !t->elem_size)
		return evs_fail(EINVAL, "dtype '%s' is not one evstream knows (%s): give its elem_size",
				t->dtype, known_dtype_list());
	if (err == -ERANGE) {
		char shape[EVS_TENSOR_MAX_DIMS * 22 + 1] = "";

		for (uint32_t i = 0; i < t->ndim; i++)
			snprintf(shape + strlen(shape), sizeof(shape) - strlen(shape), "%s%llu",
				 i ? ", " : "", (unsigned long long)t->shape[i]);
		return evs_fail(ERANGE, "shape [%s] of %s makes more than 2^62 bytes", shape, t->dtype);
	}
	return evs_fail(EINVAL, "data is NULL for a tensor of %llu bytes", (unsigned long long)bytes);
}

static int tensor_check(const struct evs_tensor *t, uint32_t *esz, uint64_t *bytes)
{
	uint64_t numel;
	int err;

	*esz = 0;
	*bytes = 0;
	if (t->pipe != 1 && t->pipe != 2)
		return tensor_refuse(t, -EINVAL, 0);
	/* a print: the text alone; nothing else may be given, so none is lost */
	if (is_print(t))
		return t->ndim || t->elem_size || t->data ? tensor_refuse(t, -EINVAL, 0) : 0;
	if (strnlen(t->dtype, EVS_TENSOR_DTYPE_MAX) >= EVS_TENSOR_DTYPE_MAX ||
	    t->ndim > EVS_TENSOR_MAX_DIMS || (t->ndim && !t->shape))
		return tensor_refuse(t, -EINVAL, 0);
	*esz = element_size(t->dtype, t->elem_size);
	if (!*esz)
		return tensor_refuse(t, -EINVAL, 0);
	err = tensor_size(t->shape, t->ndim, *esz, &numel, bytes);
	if (!err && *bytes > (1ULL << 62))
		err = -ERANGE;
	if (err)
		return tensor_refuse(t, err, 0);
	if (*bytes && !t->data)
		return tensor_refuse(t, -EINVAL, *bytes);
	return 0;
}

EVS_API int evs_producer__emit_tensor(struct evs_producer *p, unsigned int core,
				      const struct evs_tensor *t)
{
	payload_t *pl;
	struct evs_tensor_ext ext;
	uint64_t bytes;
	uint32_t esz;
	int err;

	if (!p || !t || core >= evs_producer__ncores(p))
		return !t ? evs_fail(EINVAL, "the tensor is NULL") : evs_producer_refuse_core(p, core);
	err = tensor_check(t, &esz, &bytes);
	if (err)
		return err;
	pl = evs_producer__reserve(p, core, EVS_EVENT_TENSOR_READ, sizeof(*pl) + bytes);
	if (!pl)
		return -errno;
	memset(pl, 0, sizeof(*pl));
	if (t->prefix)
		strncpy(pl->prefix, t->prefix, sizeof(pl->prefix) - 1);
	pl->logical_nc_id = core;
	pl->pipe = t->pipe;
	if (is_print(t))
		return evs_producer__commit(p, core); /* dtype, shape, size: all 0 */
	strncpy(pl->tensor_dtype, t->dtype, sizeof(pl->tensor_dtype) - 1);
	for (uint32_t i = 0; i < t->ndim; i++)
		pl->tensor_shape[i] = t->shape[i];
	pl->tensor_data_size = bytes;
	ext = (struct evs_tensor_ext){ .magic = EVS_TENSOR_EXT_MAGIC, .ndim = (uint8_t)t->ndim,
				       .elem_size = esz };
	memcpy(pl->reserved0, &ext, sizeof(ext));
	if (bytes) {
		if (t->strides && t->ndim)
			gather((uint8_t *)pl->tensor_data, t->data, t->ndim, t->shape, t->strides, esz);
		else
			ring_copy(pl->tensor_data, t->data, bytes);
	}
	return evs_producer__commit(p, core);
}

/* Copy field f of the payload at p into dst (of the same size). */
#define COPY_FIELD(dst, p, f) memcpy((dst), (const char *)(p) + offsetof(payload_t, f), FIELD_SIZE(f))

EVS_API int evs_tensor_parse(const void *payload, uint64_t size, struct evs_tensor_info *ev)
{
	uint64_t shape[EVS_TENSOR_MAX_DIMS], bytes;
	struct evs_tensor_ext ext;
	uint32_t pipe, given_esz;

	if (!payload || !ev)
		return -EINVAL;
	memset(ev, 0, sizeof(*ev));
	if (size < EVS_TENSOR_FIXED_BYTES)
		return -EBADMSG;
	/* shared memory the producer may still write: each field used is
	 * copied once, straight to where it goes, and only the copy is checked */
	COPY_FIELD(&ev->bytes, payload, tensor_data_size);
	if (ev->bytes > size - EVS_TENSOR_FIXED_BYTES)
		return -EBADMSG;
	COPY_FIELD(ev->prefix, payload, prefix);
	ev->prefix[sizeof(ev->prefix) - 1] = '\0';
	COPY_FIELD(ev->dtype, payload, tensor_dtype);
	COPY_FIELD(&ev->core, payload, logical_nc_id);
	COPY_FIELD(&pipe, payload, pipe);
	ev->pipe = pipe == 2 ? 2 : 1;
	ev->data = (const char *)payload + EVS_TENSOR_FIXED_BYTES;
	if (memchr(ev->dtype, '\0', sizeof(ev->dtype)) == NULL)
		return -EBADMSG;
	if (!ev->dtype[0]) {
		/* a print: the text alone */
		ev->is_print = 1;
		return ev->bytes ? -EBADMSG : 0;
	}

	memcpy(&ext, (const char *)payload + EVS_TENSOR_EXT_OFFSET, sizeof(ext));
	COPY_FIELD(shape, payload, tensor_shape);
	if (ext.magic == EVS_TENSOR_EXT_MAGIC) {
		if (ext.ndim > EVS_TENSOR_MAX_DIMS)
			return -EBADMSG;
		ev->ndim = ext.ndim;
		given_esz = ext.elem_size;
	} else {
		/* a producer that does not record ndim: count the leading sizes */
		while (ev->ndim < EVS_TENSOR_MAX_DIMS && shape[ev->ndim])
			ev->ndim++;
		given_esz = 0;
	}
	ev->elem_size = element_size(ev->dtype, given_esz);
	if (!ev->elem_size)
		return -EBADMSG;
	memcpy(ev->shape, shape, ev->ndim * sizeof(shape[0]));
	if (tensor_size(ev->shape, ev->ndim, ev->elem_size, &ev->numel, &bytes) || bytes != ev->bytes)
		return -EBADMSG;
	return 0;
}

/* SPDX-License-Identifier: MIT */
/* Debug-tensor-read events: the reference payload header, then the tensor
 * gathered in C order straight into the ring. */
#include <errno.h>
#include <string.h>

#include "internal.h"
#include "ringcopy.h"
#include "nrt/ndebug_stream.h"

_Static_assert(sizeof(struct evs_event_header) == sizeof(ndebug_stream_event_header_t), "hdr");
_Static_assert(offsetof(ndebug_stream_payload_debug_tensor_read_t, tensor_data) == 1024, "fixed");
_Static_assert(offsetof(ndebug_stream_payload_debug_tensor_read_t, logical_nc_id) == 512, "nc");
_Static_assert(offsetof(ndebug_stream_payload_debug_tensor_read_t, tensor_dtype) == 520, "dtype");
_Static_assert(offsetof(ndebug_stream_payload_debug_tensor_read_t, tensor_shape) == 536, "shape");
_Static_assert(offsetof(ndebug_stream_payload_debug_tensor_read_t, tensor_data_size) == 600, "size");
_Static_assert(offsetof(ndebug_stream_payload_debug_tensor_read_t, reserved0) == EVS_TENSOR_EXT_OFFSET, "ext");

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

/*
 * Copy a strided view into dst in C order. Trailing dimensions that are
 * contiguous in the source are merged into one block copied at once;
 * the outer dimensions are walked with an odometer.
 */
static void gather(uint8_t *dst, const uint8_t *src, uint32_t ndim, const uint64_t *shape,
		   const int64_t *strides, uint64_t esz)
{
	uint64_t block = esz, idx[8] = { 0 }, outer = 1;
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

static int tensor_bytes(const struct evs_tensor *t, uint32_t *esz, uint64_t *bytes)
{
	uint64_t n = 1;

	if (t->pipe != 1 && t->pipe != 2)
		return -EINVAL;
	if (is_print(t)) {
		/* the text alone: nothing else may be given, so none is lost */
		*esz = 0;
		*bytes = 0;
		return t->ndim || t->elem_size || t->data ? -EINVAL : 0;
	}
	if (strnlen(t->dtype, 16) >= 16 || t->ndim > 8 || (t->ndim && !t->shape))
		return -EINVAL;
	*esz = t->elem_size ? t->elem_size : evs_dtype_size(t->dtype);
	if (!*esz)
		return -EINVAL;
	for (uint32_t i = 0; i < t->ndim; i++)
		if (__builtin_mul_overflow(n, t->shape[i], &n))
			return -ERANGE;
	if (__builtin_mul_overflow(n, (uint64_t)*esz, bytes) || *bytes > (1ULL << 62))
		return -ERANGE;
	if (*bytes && !t->data)
		return -EINVAL;
	return 0;
}

EVS_API int evs_producer__emit_tensor(struct evs_producer *p, unsigned int core,
				      const struct evs_tensor *t)
{
	ndebug_stream_payload_debug_tensor_read_t *pl;
	struct evs_tensor_ext ext;
	uint64_t bytes;
	uint32_t esz;
	int err;

	if (!p || !t || core >= p->ncores)
		return -EINVAL;
	err = tensor_bytes(t, &esz, &bytes);
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

/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "nrt/ndebug_stream.h"
#include "tensor_event.h"

typedef ndebug_stream_payload_debug_tensor_read_t payload_t;

#define FIELD_SIZE(f) sizeof(((payload_t *)0)->f)
_Static_assert(sizeof(payload_t) == TENSOR_EVENT_FIXED, "fixed");
_Static_assert(sizeof(((struct tensor_event *)0)->prefix) == FIELD_SIZE(prefix), "prefix");
_Static_assert(sizeof(((struct tensor_event *)0)->dtype) == FIELD_SIZE(tensor_dtype), "dtype");
_Static_assert(sizeof(((struct tensor_event *)0)->shape) == FIELD_SIZE(tensor_shape), "shape");
_Static_assert(sizeof(((struct tensor_event *)0)->bytes) == FIELD_SIZE(tensor_data_size), "size");
_Static_assert(sizeof(uint32_t) == FIELD_SIZE(pipe), "pipe");

/* Copy field f of the payload at p into dst (of the same size). */
#define COPY_FIELD(dst, p, f) memcpy((dst), (const char *)(p) + offsetof(payload_t, f), FIELD_SIZE(f))

int tensor_event_parse(const void *payload, uint64_t size, struct tensor_event *ev)
{
	uint64_t shape[8], n = 1, bytes;
	struct evs_tensor_ext ext;
	uint32_t pipe;

	if (size < TENSOR_EVENT_FIXED)
		return -EBADMSG;
	/* shared memory the producer may still write: each field used is
	 * copied once, straight to where it goes, and only the copy is checked */
	COPY_FIELD(&ev->bytes, payload, tensor_data_size);
	if (ev->bytes > size - TENSOR_EVENT_FIXED)
		return -EBADMSG;
	COPY_FIELD(ev->prefix, payload, prefix);
	ev->prefix[sizeof(ev->prefix) - 1] = '\0';
	COPY_FIELD(ev->dtype, payload, tensor_dtype);
	ev->dtype[sizeof(ev->dtype) - 1] = '\0';
	COPY_FIELD(&pipe, payload, pipe);
	ev->pipe = pipe == 2 ? 2 : 1;
	ev->data = (const char *)payload + TENSOR_EVENT_FIXED;
	ev->is_print = !ev->dtype[0] && !ev->bytes;
	memset(ev->shape, 0, sizeof(ev->shape));
	if (ev->is_print) {
		ev->ndim = 0;
		ev->elem_size = 0;
		ev->numel = 0;
		return 0;
	}

	memcpy(&ext, (const char *)payload + EVS_TENSOR_EXT_OFFSET, sizeof(ext));
	COPY_FIELD(shape, payload, tensor_shape);
	if (ext.magic == EVS_TENSOR_EXT_MAGIC) {
		if (ext.ndim > 8)
			return -EBADMSG;
		ev->ndim = ext.ndim;
		ev->elem_size = ext.elem_size ? ext.elem_size : evs_dtype_size(ev->dtype);
	} else {
		/* a producer that does not record ndim: count the leading sizes */
		ev->ndim = 0;
		while (ev->ndim < 8 && shape[ev->ndim])
			ev->ndim++;
		ev->elem_size = evs_dtype_size(ev->dtype);
	}
	if (!ev->elem_size)
		return -EBADMSG;
	for (uint32_t i = 0; i < ev->ndim; i++) {
		ev->shape[i] = shape[i];
		if (__builtin_mul_overflow(n, ev->shape[i], &n))
			return -EBADMSG;
	}
	if (__builtin_mul_overflow(n, (uint64_t)ev->elem_size, &bytes) || bytes != ev->bytes)
		return -EBADMSG;
	ev->numel = n;
	return 0;
}

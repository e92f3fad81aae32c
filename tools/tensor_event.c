/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <string.h>

#include "nrt/ndebug_stream.h"
#include "tensor_event.h"

_Static_assert(sizeof(ndebug_stream_payload_debug_tensor_read_t) == TENSOR_EVENT_FIXED, "fixed");

int tensor_event_parse(const void *payload, uint64_t size, struct tensor_event *ev)
{
	ndebug_stream_payload_debug_tensor_read_t pl;
	struct evs_tensor_ext ext;
	uint64_t n = 1, bytes;

	if (size < sizeof(pl))
		return -EBADMSG;
	/* shared memory: copy once, check only the copy */
	memcpy(&pl, payload, sizeof(pl));
	memcpy(&ext, (const char *)&pl + EVS_TENSOR_EXT_OFFSET, sizeof(ext));
	if (pl.tensor_data_size > size - sizeof(pl))
		return -EBADMSG;

	memcpy(ev->prefix, pl.prefix, sizeof(ev->prefix));
	ev->prefix[sizeof(ev->prefix) - 1] = '\0';
	memcpy(ev->dtype, pl.tensor_dtype, sizeof(ev->dtype));
	ev->dtype[sizeof(ev->dtype) - 1] = '\0';
	ev->pipe = pl.pipe == 2 ? 2 : 1;
	ev->bytes = pl.tensor_data_size;
	ev->data = (const char *)payload + sizeof(pl);
	ev->is_print = !ev->dtype[0] && !ev->bytes;
	memset(ev->shape, 0, sizeof(ev->shape));
	if (ev->is_print) {
		ev->ndim = 0;
		ev->elem_size = 0;
		ev->numel = 0;
		return 0;
	}

	if (ext.magic == EVS_TENSOR_EXT_MAGIC) {
		if (ext.ndim > 8)
			return -EBADMSG;
		ev->ndim = ext.ndim;
		ev->elem_size = ext.elem_size ? ext.elem_size : evs_dtype_size(ev->dtype);
	} else {
		/* a producer that does not record ndim: count the leading sizes */
		ev->ndim = 0;
		while (ev->ndim < 8 && pl.tensor_shape[ev->ndim])
			ev->ndim++;
		ev->elem_size = evs_dtype_size(ev->dtype);
	}
	if (!ev->elem_size)
		return -EBADMSG;
	for (uint32_t i = 0; i < ev->ndim; i++) {
		ev->shape[i] = pl.tensor_shape[i];
		if (__builtin_mul_overflow(n, ev->shape[i], &n))
			return -EBADMSG;
	}
	if (__builtin_mul_overflow(n, (uint64_t)ev->elem_size, &bytes) || bytes != ev->bytes)
		return -EBADMSG;
	ev->numel = n;
	return 0;
}

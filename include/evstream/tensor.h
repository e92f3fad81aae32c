/* SPDX-License-Identifier: MIT */
/*
 * Debug-tensor-read events on top of the evstream transport.
 *
 * The payload is the reference debug-stream API's
 * ndebug_stream_payload_debug_tensor_read_t: a 1024-byte fixed part
 * (prefix, core, pipe, dtype, shape, byte size) followed by the tensor
 * bytes in C order. evstream_tensor writes it (evs_producer__emit_tensor)
 * and reads it back (evs_tensor_parse) with the same rules, so that what
 * one accepts the other accepts too.
 */
#ifndef EVSTREAM_TENSOR_H
#define EVSTREAM_TENSOR_H

#include <stdint.h>

#include <evstream/evstream.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The event type of a tensor read (the reference's
 * NDEBUG_STREAM_EVENT_TYPE_DEBUG_TENSOR_READ). */
#define EVS_EVENT_TENSOR_READ 1u

#define EVS_TENSOR_FIXED_BYTES 1024u /* payload bytes before the tensor data */
#define EVS_TENSOR_PREFIX_MAX  512u  /* prefix field, NUL included */
#define EVS_TENSOR_DTYPE_MAX   16u   /* dtype field, NUL included */
#define EVS_TENSOR_MAX_DIMS    8u

/* What evs_producer__emit_tensor() writes. */
struct evs_tensor {
	const char *prefix;      /* printed text; at most 511 bytes are kept */
	uint32_t pipe;           /* 1 stdout, 2 stderr */
	const char *dtype;       /* "float32", "bfloat16", "int8", ... (< 16 bytes);
	                          * NULL or "": a print, the prefix alone (ndim,
	                          * elem_size and data must then be 0) */
	uint32_t elem_size;      /* 0: from dtype; required for unknown dtypes,
	                          * and equal to the dtype's size for known ones */
	uint32_t ndim;           /* 0..8; 0 is a scalar */
	const uint64_t *shape;   /* ndim sizes; a 0 anywhere is an empty tensor */
	const int64_t *strides;  /* NULL: C-contiguous; else ndim strides in bytes */
	const void *data;        /* element [0,...,0] */
};

/*
 * What evstream keeps in the payload's reserved0 bytes (payload offset
 * 608): a shape of zeros cannot tell a scalar from an empty tensor, and an
 * unknown dtype has no size, so emit_tensor records both. Readers must
 * accept payloads without it (magic 0): then ndim is the count of leading
 * non-zero sizes.
 */
#define EVS_TENSOR_EXT_OFFSET 608
#define EVS_TENSOR_EXT_MAGIC  0x4e45u /* "EN" little-endian */
struct evs_tensor_ext {
	uint16_t magic;      /* EVS_TENSOR_EXT_MAGIC */
	uint8_t ndim;        /* 0..8 */
	uint8_t reserved;    /* 0 */
	uint32_t elem_size;  /* bytes per element; 0: the dtype's */
};

/*
 * Emit a debug-tensor-read event: the fixed payload part followed by the
 * tensor bytes in C order. A strided view is gathered straight into the
 * ring. Without a dtype it is a device print: the prefix with an empty
 * dtype and no data, as the reference lays prints out. Returns as
 * evs_producer__emit(); a tensor it refuses (-EINVAL, -ERANGE) is named in
 * evs_errmsg() with the rule it breaks, those of evs_tensor_parse() below.
 */
EVS_API int evs_producer__emit_tensor(struct evs_producer *p, unsigned int core,
				      const struct evs_tensor *t);

/* Size in bytes of one element of a known dtype, 0 if unknown. Known:
 * float64/32/16, bfloat16, int8..64, uint8..64, bool. */
EVS_API uint32_t evs_dtype_size(const char *dtype);

/* A tensor-read payload as read back: copied out of the (untrusted)
 * payload field by field, checked, with data pointing at the tensor bytes
 * inside the payload. */
struct evs_tensor_info {
	char prefix[EVS_TENSOR_PREFIX_MAX]; /* NUL-terminated */
	char dtype[EVS_TENSOR_DTYPE_MAX];   /* NUL-terminated; "" for a print */
	uint32_t core;           /* logical_nc_id as the producer wrote it */
	uint32_t pipe;           /* 1 stdout, 2 stderr (anything else reads as 1) */
	uint32_t ndim;
	uint32_t elem_size;      /* bytes per element (0 for a print) */
	uint64_t shape[EVS_TENSOR_MAX_DIMS]; /* ndim sizes, then zeros */
	uint64_t bytes;          /* tensor data bytes: numel * elem_size */
	uint64_t numel;          /* elements; 0 for an empty tensor and a print */
	const void *data;        /* bytes of tensor data, C order, in the payload */
	uint32_t is_print;       /* 1: no dtype and no data, the prefix alone */
	uint32_t reserved[7];
};

/*
 * Read a tensor-read payload of size bytes. 0, or -EBADMSG when it is not
 * a consistent event: shorter than the fixed part, a data size past the
 * payload, a dtype without its NUL, more than 8 dimensions, an element
 * size that contradicts a known dtype (or is missing for an unknown one),
 * or a shape whose element count times the element size is not the data
 * size. An empty tensor (a 0 among its sizes) of any shape is valid.
 */
EVS_API int evs_tensor_parse(const void *payload, uint64_t size, struct evs_tensor_info *out);

#ifdef __cplusplus
}
#endif
#endif /* EVSTREAM_TENSOR_H */

/* SPDX-License-Identifier: MIT */
/*
 * The debug-stream API of the accelerator runtime, implemented by evstream
 * on top of its native API (evstream/evstream.h). See docs/api.md.
 */
#ifndef NRT_NDEBUG_STREAM_H
#define NRT_NDEBUG_STREAM_H

#include <stdint.h>
#include <nrt/nrt_status.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifndef NRT_API
#define NRT_API __attribute__((visibility("default")))
#endif

typedef enum ndebug_stream_event_type {
	NDEBUG_STREAM_EVENT_TYPE_INVALID = 0,
	NDEBUG_STREAM_EVENT_TYPE_DEBUG_TENSOR_READ = 1,
} ndebug_stream_event_type_t;

typedef struct ndebug_stream_event_header {
	uint64_t data_size;
	uint32_t type;
	char reserved[52];
} ndebug_stream_event_header_t;

typedef struct ndebug_stream_payload_debug_tensor_read {
	char prefix[512];
	uint32_t logical_nc_id;
	uint32_t pipe;
	char tensor_dtype[16];
	uint64_t tensor_shape[8];
	uint64_t tensor_data_size;
	char reserved0[416];
	char tensor_data[];
} ndebug_stream_payload_debug_tensor_read_t;

/* Connect to a logical core's debug stream; *stream_fd is pollable. */
NRT_API NRT_STATUS nrt_debug_client_connect(int logical_nc_idx, int *stream_fd);
/* Close a connection created by nrt_debug_client_connect. */
NRT_API void nrt_debug_client_connect_close(int stream_fd);
/* Consume one event; *payload is malloc'd and must be freed by the caller. */
NRT_API NRT_STATUS nrt_debug_client_read_one_event(int stream_fd,
						   ndebug_stream_event_header_t *header,
						   void **payload);

#ifdef __cplusplus
}
#endif
#endif

/* SPDX-License-Identifier: MIT */
/* Status codes of the runtime's public API, with the runtime's values. */
#ifndef NRT_NRT_STATUS_H
#define NRT_NRT_STATUS_H

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
	NRT_SUCCESS = 0,
	NRT_FAILURE = 1,        /* non specific failure */
	NRT_INVALID = 2,        /* bad argument, or a second client on a stream */
	NRT_INVALID_HANDLE = 3, /* not a stream fd from nrt_debug_client_connect */
	NRT_RESOURCE = 4,       /* out of memory or descriptors */
	NRT_TIMEOUT = 5,
	NRT_QUEUE_FULL = 7,
	NRT_UNINITIALIZED = 13, /* no producer (runtime) to connect to */
	NRT_CLOSED = 14,        /* the producer has gone and the stream is drained */
	NRT_QUEUE_EMPTY = 15,   /* no event available now */
} NRT_STATUS;

#ifdef __cplusplus
}
#endif
#endif

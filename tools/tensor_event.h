/* SPDX-License-Identifier: MIT */
/*
 * A debug-tensor-read payload, read out of a ring record: each field used
 * is copied once out of the fixed 1024-byte part and checked; the tensor
 * bytes stay in the ring (data points there).
 */
#ifndef EVS_TOOLS_TENSOR_EVENT_H
#define EVS_TOOLS_TENSOR_EVENT_H

#include <stdbool.h>
#include <stdint.h>

#include "evstream/evstream.h"

struct tensor_event {
	char prefix[512];          /* NUL-terminated */
	uint32_t pipe;             /* 1 stdout, 2 stderr (anything else: stdout) */
	char dtype[16];            /* NUL-terminated; "" for a plain print */
	uint32_t ndim;
	uint64_t shape[8];
	uint32_t elem_size;        /* 0: unknown */
	uint64_t bytes;            /* tensor_data_size */
	uint64_t numel;
	const void *data;          /* bytes of tensor data, C order */
	bool is_print;             /* no dtype and no data: text only */
};

/*
 * Fill ev from a record's payload. -EBADMSG when the payload is not a
 * consistent tensor-read event (too short, data size past the record,
 * shape times element size not the data size, ndim > 8).
 */
int tensor_event_parse(const void *payload, uint64_t size, struct tensor_event *ev);

/* The payload's fixed part: the reference struct up to tensor_data. */
#define TENSOR_EVENT_FIXED 1024u

#endif

/* SPDX-License-Identifier: MIT */
/*
 * The runtime's names and sizes for a stream (runtime/env.c): how many
 * unconsumed debug events a stream keeps by default, as the reference
 * debug-stream API documents it, and the size of the event a default
 * stream is sized for. The transport's limits (transport/config.c) start
 * from these.
 */
#ifndef EVS_RUNTIME_ENV_H
#define EVS_RUNTIME_ENV_H

#include <stdint.h>

/* "The buffer size currently defaults to 64K debug events." */
#define EVS_RUNTIME_BUFFER_EVENTS   65536ULL
#define EVS_RUNTIME_BUFFER_SIZE_VAR "NEURON_RT_DEBUG_STREAM_BUFFER_SIZE"
/* The smallest tensor-read event: a 64-byte header and the 1024-byte fixed
 * payload. A default ring holds the event count of these. */
#define EVS_RUNTIME_EVENT_BYTES     (64ULL + 1024ULL)

/* The stream buffer size the runtime's environment asks for: 1 and
 * *events when set, 0 when not, or -EINVAL with a sentence naming the
 * variable when it is not a count from 1 to max. */
int evs_runtime_buffer_events(uint64_t max, uint64_t *events);

#endif

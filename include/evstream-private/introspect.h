/* SPDX-License-Identifier: MIT */
/*
 * Not API: how a stream is tuned, for evstream's own tests and benchmark
 * (transport/introspect.c). Exported under the version node
 * EVSTREAM_PRIVATE, never installed, and free to change with any release.
 */
#ifndef EVS_INTROSPECT_H
#define EVS_INTROSPECT_H

#include <stddef.h>
#include <stdint.h>

#include "evstream/evstream.h"

struct evs_tuning {
	uint32_t membarrier;     /* the producer skips its fence; the consumer
				  * arms with membarrier() */
	uint32_t tsc_timestamps; /* producer: timestamp_ns is read from the TSC */
	uint64_t arms;           /* consumer: times it armed its wakeup */
	uint64_t catchup_ns;     /* consumer: its catch-up pause (EVSTREAM_CATCHUP_NS) */
	uint64_t catchup_pauses; /* consumer: pauses it made */
};

EVS_API int evs__producer_tuning(const struct evs_producer *p, unsigned int core,
				 struct evs_tuning *t);
EVS_API int evs__consumer_tuning(const struct evs_consumer *c, struct evs_tuning *t);
/* How emit copies payloads into the ring (transport/ringcopy.h), for the
 * bench's bare paths to copy alike: streaming from this many bytes on. */
#define EVS__RING_COPY_STREAMING (64 * 1024)
EVS_API void evs__ring_copy(void *dst, const void *src, size_t n);

/* The consumer's catch-up pause (transport/consumer.h), for the bench's
 * bare ring to pace its reader alike: records found after fewer empty
 * looks than this start a spell; a look after a pause that finds fewer
 * bytes than this ends it. */
#define EVS__CATCHUP_QUIET_LOOKS 8
#define EVS__CATCHUP_MIN_BYTES 2048

/* Drops reach the drop tracepoint in batches of at most this many
 * (transport/probes.h). */
#define EVS__DROP_BATCH 4096u

#endif

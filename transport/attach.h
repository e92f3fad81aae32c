/* SPDX-License-Identifier: MIT */
/*
 * Attaching a consumer to a stream (attach.c): one consumer per stream
 * (claim), a stream made live for it (activate), and given up again
 * (release); used by the in-process connect in attach.c itself and by the
 * socket server (server.c).
 */
#ifndef EVS_ATTACH_H
#define EVS_ATTACH_H

#include <stdbool.h>

#include "consumer.h"
#include "producer.h"

/* One consumer per stream: the first claim wins (0), others -EBUSY. */
int evs_stream_claim(struct evs_stream *s);
/* With the stream claimed, before the consumer sees any data: a fresh
 * consumer page (where to start, the wait word armed), the mode of the
 * barrier agreed. consumer_membarrier: the consumer can call
 * membarrier(); returns 1 when it must (the producer then skips its
 * fence), 0 when not, -errno when no page could be made. */
int evs_stream_activate(struct evs_stream *s, bool consumer_membarrier);
/* The consumer left: events drop as no_consumer, the next may claim. */
void evs_stream_release_claim(struct evs_stream *s);
/* The producer is being freed: an in-process consumer keeps its own
 * mappings and loses its link to the stream. Under the registry lock. */
void evs_stream_orphan_local(struct evs_stream *s);

/* Map a stream from its files (control and data read-only, the consumer's
 * page read-write) on the consumer's side and check the shared memory
 * against what the producer said (sizes, seals, identity, positions); the
 * consumer starts where the last one stopped. 0 or a negative errno with a
 * sentence for evs_errmsg(). */
int evs_consumer_map(struct evs_consumer *c, int ctl_fd, int cons_fd, int data_fd,
		     uint64_t ring_bytes, uint64_t page_size, unsigned int core, bool membarrier);

#endif

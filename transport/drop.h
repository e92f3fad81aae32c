/* SPDX-License-Identifier: MIT */
/* Counting drops, and reporting them to the drop tracepoint (drop.c). */
#ifndef EVS_DROP_H
#define EVS_DROP_H

#include "producer.h"

/* The single place a drop is counted; returns the emit error of cause. */
int evs_stream_drop(struct evs_stream *s, uint64_t bytes, int cause);
/* An event was accepted after drops: the run ends, its batch is reported. */
void evs_stream_drop_burst_end(struct evs_stream *s);
/* Report the batch held back (evs_producer__flush, free). */
void evs_stream_drop_flush(struct evs_stream *s);

#endif

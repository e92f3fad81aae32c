/* SPDX-License-Identifier: MIT */
/*
 * Drop accounting. evs_stream_drop() is the only place a dropped event is
 * counted, so that produced == committed + dropped by construction and the
 * drop tracepoint sees every drop.
 */
#include "internal.h"

void evs_stream_drop(struct evs_stream *s, uint64_t bytes, int cause)
{
	/* a dropped event still takes a sequence number: consumers see the gap */
	s->produced++;
	s->dropped_events[cause]++;
	s->dropped_bytes[cause] += bytes;
	/* relaxed: counters for readers of stats; no data is published with them */
	WRITE_ONCE(&s->prod->dropped_events[cause], s->dropped_events[cause]);
	WRITE_ONCE(&s->prod->dropped_bytes[cause], s->dropped_bytes[cause]);
	WRITE_ONCE(&s->prod->produced, s->produced);

	s->burst_events++;
	s->burst_bytes += bytes;
	s->burst_cause = cause;
}

void evs_stream_drop_burst_end(struct evs_stream *s)
{
	s->burst_events = 0;
	s->burst_bytes = 0;
}

void evs_stream_drop_flush(struct evs_stream *s)
{
	evs_stream_drop_burst_end(s);
}

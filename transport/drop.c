/* SPDX-License-Identifier: MIT */
/*
 * Drop accounting. evs_stream_drop() is the only place a dropped event is
 * counted, so that produced == committed + dropped by construction and the
 * drop tracepoint sees every drop.
 *
 * The tracepoint (USDT evstream:drop) reports drops in batches, because a
 * hit uprobe costs several hundred ns and dropping must stay cheap while the
 * consumer is stalled. A batch is reported when
 *   - the drop run ends: the next event is accepted (evs_stream_drop_burst_end),
 *   - it reaches EVS_DROP_BATCH events,
 *   - the cause changes (one batch, one cause),
 *   - on evs_producer__flush() and when the producer is freed.
 * So a tracer's totals equal the shared counters after a flush and lag them
 * by less than one batch otherwise. The batching bookkeeping runs whether or
 * not anything is attached; only the report itself checks the semaphore.
 */
#include "internal.h"
#include "probes.h"

/* The probe semaphores; the kernel increments them while a tracer is
 * attached (uprobe reference counter at the address in the stapsdt note). */
EVS_PROBE_DEFINE(drop);
EVS_PROBE_DEFINE(connect);
EVS_PROBE_DEFINE(disconnect);
EVS_PROBE_DEFINE(wakeup);

/* Out of line and cold: one probe site (so one uprobe), and the drop path
 * keeps only the calls. */
__attribute__((noinline, cold)) static void drop_report(struct evs_stream *s)
{
	if (EVS_PROBE_ENABLED(drop)) {
		uint64_t total = 0;

		for (int i = 0; i < EVS_DROP_CAUSE_COUNT; i++)
			total += s->dropped_events[i];
		/* first: no batch of this run was reported yet, so a tracer can
		 * count runs (bursts) and not just batches */
		EVS_PROBE6(drop, s->core, s->burst_pending, s->burst_bytes, s->burst_cause,
			   total, (int)(s->burst_pending == s->burst_events));
	}
	s->burst_pending = 0;
	s->burst_bytes = 0;
}

void evs_stream_drop(struct evs_stream *s, uint64_t bytes, int cause)
{
	/* a batch has one cause: report what came before a change */
	if (unlikely(s->burst_pending && cause != s->burst_cause))
		drop_report(s);

	/* a dropped event still takes a sequence number: consumers see the gap */
	s->produced++;
	s->dropped_events[cause]++;
	s->dropped_bytes[cause] += bytes;
	/* relaxed: counters for readers of stats; no data is published with them */
	WRITE_ONCE(&s->prod->dropped_events[cause], s->dropped_events[cause]);
	WRITE_ONCE(&s->prod->dropped_bytes[cause], s->dropped_bytes[cause]);
	WRITE_ONCE(&s->prod->produced, s->produced);

	s->burst_events++;
	s->burst_pending++;
	s->burst_bytes += bytes;
	s->burst_cause = cause;
	if (unlikely(s->burst_pending >= EVS_DROP_BATCH))
		drop_report(s);
}

/* Called by stream_reserve() only when burst_events is set: the accept
 * path pays a single branch for all of this. */
void evs_stream_drop_burst_end(struct evs_stream *s)
{
	if (s->burst_pending)
		drop_report(s);
	s->burst_events = 0;
}

/* The run goes on (the next accept still ends it); only the batch is cut. */
void evs_stream_drop_flush(struct evs_stream *s)
{
	if (s->burst_pending)
		drop_report(s);
}

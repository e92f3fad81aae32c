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
#include <errno.h>

#include "drop.h"
#include "probes.h"

/* The probe semaphores; the kernel increments them while a tracer is
 * attached (uprobe reference counter at the address in the stapsdt note). */
EVS_PROBE_DEFINE(drop);
EVS_PROBE_DEFINE(connect);
EVS_PROBE_DEFINE(disconnect);
EVS_PROBE_DEFINE(wakeup);

/* Drops of the batch's cause not yet reported? */
static bool drop_batch_pending(const struct evs_stream *s)
{
	return s->dropped_events[s->burst_cause] != s->batch_events0;
}

/* Out of line and cold: one probe site (so one uprobe), and the drop path
 * keeps only the calls. The batch is what the cause's counters gained
 * since the last report, so a drop itself keeps no batch sums. */
__attribute__((noinline, cold)) static void drop_report(struct evs_stream *s)
{
	int cause = s->burst_cause;
	/* without probes (EVS_NO_PROBES, no <sys/sdt.h>) there is no report,
	 * only the bookkeeping below */
#ifdef EVS_HAVE_PROBES
	uint64_t events = s->dropped_events[cause] - s->batch_events0;

	if (EVS_PROBE_ENABLED(drop)) {
		uint64_t total = 0;

		for (int i = 0; i < EVS_DROP_CAUSE_COUNT; i++)
			total += s->dropped_events[i];
		/* first: no batch of this run was reported yet, so a tracer can
		 * count runs (bursts) and not just batches */
		EVS_PROBE6(drop, s->core, events, s->dropped_bytes[cause] - s->batch_bytes0, cause,
			   total, (int)(events == s->burst_events));
	}
#endif
	s->batch_events0 = s->dropped_events[cause];
	s->batch_bytes0 = s->dropped_bytes[cause];
}

/*
 * The cold ends of evs_stream_drop() are tail calls that return its
 * error: the drop path then keeps nothing live across a call, and saves
 * no registers.
 */
__attribute__((noinline, cold)) static int drop_batch_full(struct evs_stream *s, int err)
{
	drop_report(s);
	return err;
}

/* The batch changes cause: report the one before, start one of the new,
 * and count the drop. */
__attribute__((noinline, cold)) static int drop_new_cause(struct evs_stream *s, uint64_t bytes,
							  int cause)
{
	if (drop_batch_pending(s))
		drop_report(s);
	s->burst_cause = cause;
	s->batch_events0 = s->dropped_events[cause];
	s->batch_bytes0 = s->dropped_bytes[cause];
	return evs_stream_drop(s, bytes, cause);
}

int evs_stream_drop(struct evs_stream *s, uint64_t bytes, int cause)
{
	/* a cause left out here would return 0, as if committed: a new cause
	 * stops the build below until it has its errno here
	 * (docs/architecture.md, "Adding a drop cause") */
	_Static_assert(EVS_DROP_CAUSE_COUNT == 4, "err_of names four causes: give the new one its errno");
	static const int err_of[EVS_DROP_CAUSE_COUNT] = {
		[EVS_DROP_RING_FULL] = -ENOBUFS,
		[EVS_DROP_TOO_BIG] = -EMSGSIZE,
		[EVS_DROP_NO_CONSUMER] = -ENOTCONN,
		[EVS_DROP_NO_MEMORY] = -ENOMEM,
	};
	struct evs_shm_prod *prod = s->prod;
	uint64_t events, total_bytes;

	/* a batch has one cause */
	if (unlikely(cause != s->burst_cause))
		return drop_new_cause(s, bytes, cause);

	events = ++s->dropped_events[cause];
	total_bytes = s->dropped_bytes[cause] += bytes;
	/* a dropped event still takes a sequence number: consumers see the gap */
	s->produced++;
	/* relaxed: counters for readers of stats; no data is published with them */
	WRITE_ONCE(&prod->dropped_events[cause], events);
	WRITE_ONCE(&prod->dropped_bytes[cause], total_bytes);

	s->burst_events++;
	if (unlikely(events - s->batch_events0 >= EVS_DROP_BATCH))
		return drop_batch_full(s, err_of[cause]);
	return err_of[cause];
}

/* Called by the producer only when burst_events is set: the accept
 * path pays a single branch for all of this. */
void evs_stream_drop_burst_end(struct evs_stream *s)
{
	if (drop_batch_pending(s))
		drop_report(s);
	s->burst_events = 0;
}

/* The run goes on (the next accept still ends it); only the batch is cut. */
void evs_stream_drop_flush(struct evs_stream *s)
{
	if (drop_batch_pending(s))
		drop_report(s);
}

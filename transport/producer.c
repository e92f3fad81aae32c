/* SPDX-License-Identifier: MIT */
/*
 * The producer side of a stream: reserve, commit, discard, emit.
 *
 * The producer thread of a core is the only writer of that stream's
 * producer fields; it never blocks and makes no syscall unless the consumer
 * has armed its wakeup (then one eventfd write per sleep).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "drop.h"
#include "errors.h"
#include "probes.h"
#include "producer.h"
#include "ringcopy.h"
#include "stats.h"
#include "wakeup.h"

static struct evs_stream *stream_of(const struct evs_producer *p, unsigned int core)
{
	if (unlikely(!p || core >= p->ncores))
		return NULL;
	return &p->streams[core];
}

/*
 * Why a call was refused, for evs_errmsg(); each returns -EINVAL or
 * -EBUSY. Out of line and cold, so that the calls' fast paths carry only
 * the branch here. Drops are no refusal: they are counted, their cause is
 * the return value, and they set no message.
 */
__attribute__((cold, noinline)) int evs_producer_refuse_core(const struct evs_producer *p,
							      unsigned int core)
{
	if (!p)
		return evs_fail(EINVAL, "the producer is NULL");
	if (!p->name)
		return evs_fail(EINVAL, "core %u is out of range: this in-process producer has cores "
				"0 to %u", core, p->ncores - 1);
	return evs_fail(EINVAL, "core %u is out of range: producer '%s' has cores 0 to %u", core,
			p->name, p->ncores - 1);
}

static __attribute__((cold, noinline)) int refuse_event(const struct evs_producer *p,
							unsigned int core, size_t size)
{
	if (!stream_of(p, core))
		return evs_producer_refuse_core(p, core);
	return evs_fail(EINVAL, "data is NULL with size=%zu: give the payload's address, or size 0",
			size);
}

static __attribute__((cold, noinline)) int refuse_busy(const struct evs_stream *s)
{
	return evs_fail(EBUSY, "core %u has a reservation open (%llu bytes): commit or discard it first",
			s->core, (unsigned long long)s->resv_size);
}

/* The same for reserve(), which answers NULL and errno: tail calls, so
 * that the fast path keeps no frame for them. */
static __attribute__((cold, noinline)) void *refuse_reserve(const struct evs_producer *p,
							    unsigned int core)
{
	errno = -evs_producer_refuse_core(p, core);
	return NULL;
}

static __attribute__((cold, noinline)) void *refuse_reserve_busy(const struct evs_stream *s)
{
	errno = -refuse_busy(s);
	return NULL;
}

static __attribute__((cold, noinline)) int refuse_unreserved(const struct evs_producer *p,
							     unsigned int core, const char *call)
{
	if (!stream_of(p, core))
		return evs_producer_refuse_core(p, core);
	return evs_fail(EINVAL, "%s: core %u has no reservation open: call evs_producer__reserve() first",
			call, core);
}

/* The bounds stream_has_room() checks, from what the consumer was last
 * seen to have released and what memory the ring has so far. While the
 * ring is first filled, positions are offsets (a stream starts at 0) and
 * the committed part ends the room. */
void evs_stream_set_limits(struct evs_stream *s)
{
	/* relaxed: our own word, atomic only for attach.c's reads */
	uint64_t end = READ_ONCE(&s->cons_cache) + s->cap;

	if (s->commit_end < s->cap && s->commit_end < end)
		end = s->commit_end;
	s->room_end = end;
	s->events_end = READ_ONCE(&s->released_cache) + s->max_events;
}

/* Re-read what the consumer published, clamped to what is possible: a
 * consumer that writes nonsense only makes the producer see a full ring.
 * The raw words read go to *c and *r. */
static __always_inline void stream_refresh_cons(struct evs_stream *s, uint64_t *c, uint64_t *r)
{
	/* relaxed: our own words, atomic only for attach.c's reads */
	uint64_t cc = READ_ONCE(&s->cons_cache), rc = READ_ONCE(&s->released_cache);

	/* pairs with smp_store_release(&cons->cons_pos) in consumer_publish()
	 * (consumer.c): the consumer is done reading everything below cons_pos */
	*c = smp_load_acquire(&s->cons->cons_pos);
	/* relaxed: a count, clamped below; stale is only more conservative */
	*r = READ_ONCE(&s->cons->released);

	if (*c - cc <= s->prod_pos - cc) {
		WRITE_ONCE(&s->cons_cache, *c);
		/* pairs with smp_rmb() in stream_handover() (attach.c): the
		 * new bound is seen before any record written over the ring
		 * below it, which the handover's walk may be reading */
		smp_wmb();
	}
	/* A count ahead of committed is taken as committed: the next
	 * consumer's count starts from what the handover read, which can be
	 * ahead by a publication whose count was stored and whose position
	 * not yet (stream_publish()); ignored, it kept the event limit shut
	 * for good. It gives a consumer nothing that writing committed itself
	 * would not. A count behind the last accepted one is ignored. */
	if (*r - rc <= s->committed - rc)
		WRITE_ONCE(&s->released_cache, *r);
	else if (*r - s->committed < (1ULL << 63))
		WRITE_ONCE(&s->released_cache, s->committed);
	evs_stream_set_limits(s);
}

/*
 * The ring was found full for a record of full_len bytes and the consumer
 * has not moved since: a record as long or longer is full too, without
 * the whole look of stream_make_room(). While the consumer's words stay
 * as they were, the room only shrinks (records written since took some;
 * the memory committed during the first lap is no part of a full
 * verdict), so the answer is the one that look would give. A consumer
 * that rewrites its words with an old value only keeps the ring full.
 */
static __always_inline bool stream_still_full(const struct evs_stream *s, uint64_t len)
{
	/* relaxed: compared, not used to reach any data */
	return s->full_len && len >= s->full_len &&
	       READ_ONCE(&s->cons->cons_pos) == s->full_cons &&
	       READ_ONCE(&s->cons->released) == s->full_released;
}

/* Two compares against bounds kept up to date off the fast path; as
 * differences, so that they hold across the wrap of 64-bit counts:
 * prod_pos <= room_end and committed <= events_end always. */
static __always_inline bool stream_has_room(const struct evs_stream *s, uint64_t len)
{
	return s->room_end - s->prod_pos >= len && s->committed != s->events_end;
}

/*
 * No room by the cached bounds: look at the consumer again and, while the
 * ring is first filled, commit its memory up to past the record (after a
 * commit that failed for want of memory, only once EVS_COMMIT_RETRY_NS
 * have passed). -1 when there is room now, else the drop cause.
 */
static __attribute__((noinline)) int stream_make_room(struct evs_stream *s, uint64_t len)
{
	uint64_t to, c, r;

	stream_refresh_cons(s, &c, &r);
	/* a verdict kept from an earlier look stays true: room was found for
	 * a shorter record, or the consumer moved and it no longer applies */
	if (stream_has_room(s, len))
		return -1;
	if (s->commit_end == s->cap || s->prod_pos + len - READ_ONCE(&s->cons_cache) > s->cap ||
	    s->committed - READ_ONCE(&s->released_cache) >= s->max_events) {
		s->full_len = len;
		s->full_cons = c;
		s->full_released = r;
		return EVS_DROP_RING_FULL;
	}
	/* a chunk past the record, so that the next records find it there */
	to = (s->prod_pos + len + 2 * EVS_COMMIT_CHUNK - 1) / EVS_COMMIT_CHUNK * EVS_COMMIT_CHUNK;
	if (to > s->cap)
		to = s->cap;
	if (s->commit_retry_ns && evs_monotonic_ns() < s->commit_retry_ns)
		return EVS_DROP_NO_MEMORY;
	if (evs_backing_commit(&s->backing, s->data, s->commit_end, to)) {
		s->commit_retry_ns = evs_monotonic_ns() + EVS_COMMIT_RETRY_NS;
		return EVS_DROP_NO_MEMORY;
	}
	s->commit_retry_ns = 0;
	s->commit_end = to;
	evs_stream_set_limits(s);
	return -1;
}

/* What stream_admit() decided about a new record. */
enum admit {
	ADMIT_OK,           /* write it */
	ADMIT_BUSY,         /* a reservation is open */
	ADMIT_NO_CONSUMER,  /* drop it */
	ADMIT_TOO_BIG,      /* drop it */
	ADMIT_LOOK_AGAIN,   /* no room by the cached consumer position */
	ADMIT_STILL_FULL,   /* drop it: full, and the consumer has not moved */
	ADMIT_END_RUN,      /* write it, and first end the drop run */
};

/*
 * The checks in front of every record, from cached state only. Callers
 * switch on the answer with one tail call per way out, so that a dropped
 * event saves no registers and nothing is checked twice.
 */
static __always_inline enum admit stream_admit(const struct evs_stream *s, uint64_t size)
{
	if (unlikely(s->resv_len))
		return ADMIT_BUSY;
	/* pairs with smp_store_release(&s->active) in evs_stream_activate():
	 * the consumer's wait word is initialised before we see active */
	if (unlikely(!smp_load_acquire(&s->active)))
		return ADMIT_NO_CONSUMER;
	if (unlikely(size > s->cap - EVS_RECORD_HDR))
		return ADMIT_TOO_BIG;
	if (unlikely(!stream_has_room(s, evs_record_len(size))))
		return stream_still_full(s, evs_record_len(size)) ? ADMIT_STILL_FULL :
								     ADMIT_LOOK_AGAIN;
	if (unlikely(s->burst_events))
		return ADMIT_END_RUN;
	return ADMIT_OK;
}

/* Open the reservation the admit step allowed; returns where its payload goes. */
static __always_inline void *stream_open(struct evs_stream *s, uint32_t type, uint64_t size)
{
	s->resv_len = evs_record_len(size);
	s->resv_size = size;
	s->resv_type = type;
	return s->data + s->prod_off + EVS_RECORD_HDR;
}

/* The first record after a drop run: report the run's last batch. */
static __attribute__((noinline)) void *stream_open_after_drops(struct evs_stream *s, uint32_t type,
							       uint64_t size)
{
	evs_stream_drop_burst_end(s);
	return stream_open(s, type, size);
}

/* Drop the new record; deferred records not yet published are published
 * first. They may be what fills the ring, and the consumer frees no room
 * it cannot see: a producer that keeps dropping instead of reaching its
 * publish() would otherwise stall the stream for good. */
static __attribute__((noinline)) int stream_drop(struct evs_stream *s, uint64_t size, int cause)
{
	/* relaxed: our own store, read back */
	if (unlikely(READ_ONCE(&s->prod->prod_pos) != s->prod_pos))
		evs_stream_publish(s);
	return evs_stream_drop(s, size, cause);
}

static __attribute__((noinline)) void *stream_reserve_drop(struct evs_stream *s, uint64_t size,
							   int cause)
{
	errno = -stream_drop(s, size, cause);
	return NULL;
}

/* No room by the cached bounds: look again, then decide. */
static __attribute__((noinline)) void *stream_reserve_full(struct evs_stream *s, uint32_t type,
							   uint64_t size)
{
	int cause = stream_make_room(s, evs_record_len(size));

	if (cause >= 0)
		return stream_reserve_drop(s, size, cause);
	if (s->burst_events)
		return stream_open_after_drops(s, type, size);
	return stream_open(s, type, size);
}

/* The consumer said it will sleep: take its wait word and wake it once. */
static void stream_wake_slow(struct evs_stream *s)
{
	/* races the consumer's xchg in consumer_take_arm_back(): one of the
	 * two takes an armed word, and only that one writes the eventfd */
	if (xchg(&s->cons->wait, EVS_WAIT_AWAKE) != EVS_WAIT_ARMED)
		return;
	/* one write per sleep cannot fill the counter; evs_efd_kick() also
	 * makes sure a consumer that filled it cannot make us wait */
	if (evs_efd_kick(s->efd)) {
		s->wakeups++;
		WRITE_ONCE(&s->prod->wakeups, s->wakeups);
		if (EVS_PROBE_ENABLED(wakeup))
			EVS_PROBE2(wakeup, s->core, s->wakeups);
	}
}

_Static_assert(offsetof(struct evs_event_header, reserved) == EVS_RECORD_POS_AT, "position");

/* Write the header of a record of len bytes at prod_off and move the
 * private position past it; nothing is visible to the consumer until
 * stream_publish(). All of the header is written here, at once: a
 * consumer waiting for this record polls (and prefetches) this line, and
 * stores split between reserve and commit would hand it over twice
 * (docs/design-notes.md, "Emit"). */
static __always_inline void stream_seal_as(struct evs_stream *s, uint64_t size, uint32_t type,
					   uint64_t len, uint64_t timestamp_ns)
{
	struct evs_event_header *h = (struct evs_event_header *)(s->data + s->prod_off);

	h->data_size = size;
	h->type = type;
	h->flags = 0;
	h->seq = s->produced;
	h->timestamp_ns = timestamp_ns;
	/* the position, so that a position a consumer leaves inside a payload
	 * is not taken for a record (attach.c); the rest of the reserved
	 * bytes zero, as old payload bytes are there after a wrap */
	memcpy(h->reserved, &s->prod_pos, sizeof(s->prod_pos));
	memset(h->reserved + sizeof(s->prod_pos), 0, sizeof(h->reserved) - sizeof(s->prod_pos));

	s->produced++;
	s->committed++;
	s->prod_pos += len;
	s->prod_off += len;
	if (s->prod_off >= s->cap)
		s->prod_off -= s->cap;
}

/* Seal the open reservation. */
static __always_inline void stream_seal(struct evs_stream *s, uint64_t timestamp_ns)
{
	stream_seal_as(s, s->resv_size, s->resv_type, s->resv_len, timestamp_ns);
	s->resv_len = 0;
}

/* Give the deferred records sealed since the last clock read the time of
 * this one: the publication about to make them visible, or the commit of
 * one more than EVS_UNSTAMPED_MAX, which cannot wait longer. */
static __attribute__((noinline)) void stream_stamp_deferred(struct evs_stream *s,
							     uint64_t timestamp_ns)
{
	for (uint64_t i = 0; i < s->unstamped; i++) {
		struct evs_event_header *h =
			(struct evs_event_header *)(s->data + s->unstamped_off[i]);

		h->timestamp_ns = timestamp_ns;
	}
	s->unstamped = 0;
}

/* Make every sealed record visible: one release store, one wake check. */
static __always_inline void stream_publish(struct evs_stream *s)
{
	/* relaxed: a stats counter, not used to find data */
	WRITE_ONCE(&s->prod->committed, s->committed);
	/* pairs with smp_load_acquire(&prod->prod_pos) in consumer_fill()
	 * (consumer.c) and stream_handover() (attach.c): the records are
	 * complete before their end is visible */
	smp_store_release(&s->prod->prod_pos, s->prod_pos);
	/* pairs with smp_mb() in consumer_prepare_wait() (consumer.c), and with
	 * the barrier after the first arm in evs_stream_activate() (attach.c):
	 * either the consumer sees prod_pos above, or we see its ARMED below. A consumer
	 * that arms with membarrier() runs this fence for us (membarrier.c);
	 * then only the compiler must keep the store before the load. That is
	 * the usual case (Linux 4.16 on): the fence is laid out off the path. */
	if (unlikely(READ_ONCE(&s->fence)))
		smp_mb();
	else
		barrier();
	/* relaxed: the fence above orders it; the xchg in the slow path decides */
	if (unlikely(READ_ONCE(&s->cons->wait) == EVS_WAIT_ARMED))
		stream_wake_slow(s);
}

/* publish() and free: deferred records take one clock read between them.
 * Nothing new to show: no store, and no wake of a consumer that sleeps. */
void evs_stream_publish(struct evs_stream *s)
{
	/* relaxed: our own store, read back */
	if (READ_ONCE(&s->prod->prod_pos) == s->prod_pos)
		return;
	if (s->unstamped)
		stream_stamp_deferred(s, evs_clock_now(&s->clock));
	stream_publish(s);
}

/* The record's timestamp. One clock read stamps the record and any
 * deferred ones before it, so that timestamps never go back along the
 * stream. */
static __always_inline uint64_t stream_stamp(struct evs_stream *s)
{
	uint64_t ts = s->timestamps ? evs_clock_now(&s->clock) : 0;

	if (unlikely(s->unstamped))
		stream_stamp_deferred(s, ts);
	return ts;
}

static __always_inline void stream_commit(struct evs_stream *s)
{
	stream_seal(s, stream_stamp(s));
	stream_publish(s);
}

EVS_API void *evs_producer__reserve(struct evs_producer *p, unsigned int core, uint32_t type,
				    size_t size)
{
	struct evs_stream *s = stream_of(p, core);

	if (unlikely(!s))
		return refuse_reserve(p, core);
	switch (stream_admit(s, size)) {
	case ADMIT_OK:
		return stream_open(s, type, size);
	case ADMIT_BUSY:
		return refuse_reserve_busy(s);
	case ADMIT_NO_CONSUMER:
		return stream_reserve_drop(s, size, EVS_DROP_NO_CONSUMER);
	case ADMIT_TOO_BIG:
		return stream_reserve_drop(s, size, EVS_DROP_TOO_BIG);
	case ADMIT_LOOK_AGAIN:
		return stream_reserve_full(s, type, size);
	case ADMIT_STILL_FULL:
		return stream_reserve_drop(s, size, EVS_DROP_RING_FULL);
	case ADMIT_END_RUN:
		return stream_open_after_drops(s, type, size);
	}
	__builtin_unreachable();
}

EVS_API int evs_producer__commit(struct evs_producer *p, unsigned int core)
{
	struct evs_stream *s = stream_of(p, core);

	if (!s || !s->resv_len)
		return refuse_unreserved(p, core, "commit");
	stream_commit(s);
	return 0;
}

EVS_API int evs_producer__commit_deferred(struct evs_producer *p, unsigned int core)
{
	struct evs_stream *s = stream_of(p, core);

	if (!s || !s->resv_len)
		return refuse_unreserved(p, core, "commit_deferred");
	/* stamped when published: one clock read per publication */
	if (s->timestamps) {
		if (unlikely(s->unstamped == EVS_UNSTAMPED_MAX))
			stream_stamp_deferred(s, evs_clock_now(&s->clock));
		s->unstamped_off[s->unstamped++] = s->prod_off;
	}
	stream_seal(s, 0);
	return 0;
}

EVS_API int evs_producer__publish(struct evs_producer *p, unsigned int core)
{
	struct evs_stream *s = stream_of(p, core);

	if (!s)
		return evs_producer_refuse_core(p, core);
	evs_stream_publish(s);
	return 0;
}

EVS_API int evs_producer__discard(struct evs_producer *p, unsigned int core)
{
	struct evs_stream *s = stream_of(p, core);

	if (!s || !s->resv_len)
		return refuse_unreserved(p, core, "discard");
	/* nothing was published: forgetting the length frees the space */
	s->resv_len = 0;
	return 0;
}

/* Write a whole record the admit step allowed; out of line, so that
 * only this path saves the caller's registers. It looks at burst_events
 * again rather than having a path of its own for the first write after
 * drops, which was slower through two cores (docs/design-notes.md, "Emit").
 * No reservation is opened: size, type and length go to the header
 * directly, not through resv_* and back. */
static __attribute__((noinline)) int stream_write(struct evs_stream *s, uint32_t type,
						  const void *data, size_t size)
{
	if (unlikely(s->burst_events))
		evs_stream_drop_burst_end(s);
	ring_copy(s->data + s->prod_off + EVS_RECORD_HDR, data, size);
	stream_seal_as(s, size, type, evs_record_len(size), stream_stamp(s));
	stream_publish(s);
	return 0;
}

/* No room by the cached bounds: look again, then decide. */
static __attribute__((noinline)) int stream_emit_full(struct evs_stream *s, uint32_t type,
						      const void *data, size_t size)
{
	int cause = stream_make_room(s, evs_record_len(size));

	if (cause >= 0)
		return stream_drop(s, size, cause);
	return stream_write(s, type, data, size);
}

EVS_API int evs_producer__emit(struct evs_producer *p, unsigned int core, uint32_t type,
			       const void *data, size_t size)
{
	struct evs_stream *s = stream_of(p, core);

	if (unlikely(!s || (!data && size)))
		return refuse_event(p, core, size);
	switch (stream_admit(s, size)) {
	case ADMIT_OK:
	case ADMIT_END_RUN:
		return stream_write(s, type, data, size);
	case ADMIT_BUSY:
		return refuse_busy(s);
	case ADMIT_NO_CONSUMER:
		return stream_drop(s, size, EVS_DROP_NO_CONSUMER);
	case ADMIT_TOO_BIG:
		return stream_drop(s, size, EVS_DROP_TOO_BIG);
	case ADMIT_LOOK_AGAIN:
		return stream_emit_full(s, type, data, size);
	case ADMIT_STILL_FULL:
		return stream_drop(s, size, EVS_DROP_RING_FULL);
	}
	__builtin_unreachable();
}

EVS_API int evs_producer__flush(struct evs_producer *p, unsigned int core)
{
	struct evs_stream *s = stream_of(p, core);

	if (!s)
		return evs_producer_refuse_core(p, core);
	evs_stream_drop_flush(s);
	return 0;
}

EVS_API unsigned int evs_producer__ncores(const struct evs_producer *p)
{
	return p ? p->ncores : 0;
}

/* Stats are read from the shared page so any thread may call this. */
EVS_API int evs_producer__stats(const struct evs_producer *p, unsigned int core,
				struct evs_stream_stats *st)
{
	const struct evs_stream *s = stream_of(p, core);
	struct evs_stream_stats full;
	int err;

	if (!s)
		return evs_producer_refuse_core(p, core);
	err = evs_stats_check(st);
	if (err)
		return err;
	evs_stats_from_shm(s->prod, s->cons, &full);
	full.connected = (uint32_t)READ_ONCE(&s->active);
	evs_stats_copy_out(st, &full);
	return 0;
}

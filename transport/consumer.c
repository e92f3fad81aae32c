/* SPDX-License-Identifier: MIT */
/*
 * The consumer side of a stream: peek, release, batch consume, and the
 * consumer half of the wakeup protocol. Everything the producer wrote is
 * untrusted: positions are checked against the ring size, and each record
 * header is copied out once and checked before its payload is handed out.
 * Attaching (mapping and checking the shared memory) is attach.c's.
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "consumer.h"
#include "errors.h"
#include "membarrier.h"
#include "stats.h"
#include "wakeup.h"

/* Every call on a broken stream says why, for evs_errmsg(): the message
 * is the calling thread's, and may have been written over since. */
static __attribute__((cold, noinline)) int consumer_still_broken(const struct evs_consumer *c)
{
	return evs_fail(-c->broken, "core %u: stream corrupt: %s", c->core, c->broken_why);
}

/* The producer wrote something impossible: the stream is broken for
 * good, and fmt says what. Cold: only corrupt memory leads here. */
static __attribute__((cold, noinline, format(printf, 2, 3))) int
consumer_broken(struct evs_consumer *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	/* clang-analyzer 14 misses the va_start above */
	vsnprintf(c->broken_why, sizeof(c->broken_why), fmt, ap); /* NOLINT(clang-analyzer-valist.Uninitialized) */
	va_end(ap);
	c->broken = -EBADMSG;
	return consumer_still_broken(c);
}

/* Misuse of a call: -EINVAL, and what was wrong for evs_errmsg(). */
static __attribute__((cold, noinline)) int consumer_refuse(const char *call, const char *why)
{
	return evs_fail(EINVAL, "%s: %s", call, why);
}

/* peek_next with the most records held that a consumer may hold */
static __attribute__((cold, noinline)) int consumer_window_full(void)
{
	return evs_fail(ENOBUFS, "peek_next: %d records are held already, the most a consumer may "
			"hold (EVS_CONSUMER_MAX_HELD): release the oldest first", EVS_CONSUMER_MAX_HELD);
}

/* A producer in another process that died cannot say so in shared memory:
 * its end of the socket hangs up. One poll, no waiting. */
static bool socket_hung_up(const struct evs_consumer *c)
{
	struct pollfd pfd = { .fd = c->sock, .events = POLLIN };

	return c->sock >= 0 && poll(&pfd, 1, 0) == 1;
}

static bool producer_hung_up(struct evs_consumer *c)
{
	if (!c->gone && socket_hung_up(c))
		c->gone = true;
	return c->gone;
}

/* Look at the socket this often when a busy-polling caller finds the ring
 * empty: a poll() costs as much as ~100 empty peeks, so at 4096 it adds
 * about 1 %, and a dead producer is still noticed within ~20-40 us of
 * spinning (a record that lands during the poll() waits for it). */
#define EMPTY_PEEKS_PER_HUP_CHECK 4096

/* Empty ring: has the producer gone (closed, or its process hung up)? */
static bool producer_gone(struct evs_consumer *c)
{
	/* pairs with smp_store_release(&prod->state) in stream_fini() (lifecycle.c): every
	 * record committed before CLOSED is visible once CLOSED is */
	if (smp_load_acquire(&c->prod->state) & EVS_STATE_CLOSED)
		return true;
	if (c->sock < 0)
		return false;
	return c->gone || (++c->empty_peeks % EMPTY_PEEKS_PER_HUP_CHECK == 0 && producer_hung_up(c));
}

/* After the last handed-out record. Kept in read_pos only while more than
 * one record is held (peek_next): peek and release, the common pair, then
 * keep nothing but peek_len. */
static inline uint64_t consumer_read_pos(const struct evs_consumer *c)
{
	if (likely(c->held <= 1))
		return c->cons_pos + (c->held ? c->peek_len : 0);
	return c->read_pos;
}

/* consumer_read_pos() as a ring offset: where the next record starts. */
static inline uint64_t consumer_read_off(const struct evs_consumer *c)
{
	uint64_t off;

	if (likely(c->held <= 1)) {
		off = c->cons_off + (c->held ? c->peek_len : 0);
		return off >= c->cap ? off - c->cap : off;
	}
	return c->read_off;
}

/* Checks a producer position; 0 when records are pending beyond what
 * was handed out. */
static int consumer_take_pos(struct evs_consumer *c, uint64_t p)
{
	/* more than a ring ahead, behind us, or off the record grid: corrupt */
	uint64_t read_pos = consumer_read_pos(c);

	if (unlikely(p - c->cons_pos > c->cap || p % EVS_RECORD_ALIGN ||
		     p - c->cons_pos < read_pos - c->cons_pos))
		return consumer_broken(c, "the producer's position %llu is not on the %u-byte "
				       "record grid in %llu..%llu (from what was read to one ring "
				       "past the consumer)", (unsigned long long)p, EVS_RECORD_ALIGN,
				       (unsigned long long)read_pos,
				       (unsigned long long)c->cons_pos + (unsigned long long)c->cap);
	c->prod_cache = p;
	return p == read_pos ? -EAGAIN : 0;
}

/* Returns 0 when a record is pending after the handed-out ones, or a
 * negative status. */
static int consumer_fill(struct evs_consumer *c)
{
	/* pairs with smp_store_release(&prod->prod_pos) in stream_publish()
	 * (producer.c): records below prod_pos are complete */
	uint64_t p = smp_load_acquire(&c->prod->prod_pos);

	if (p != consumer_read_pos(c))
		return consumer_take_pos(c, p);
	if (!producer_gone(c))
		return -EAGAIN;
	/* gone: what it committed before is visible now; look once more (not
	 * in a loop, so that a position that keeps flipping cannot hold us).
	 * Pairs, as above, with smp_store_release(&prod->prod_pos). */
	p = smp_load_acquire(&c->prod->prod_pos);
	if (p != consumer_read_pos(c))
		return consumer_take_pos(c, p);
	return -EPIPE;
}

/*
 * The catch-up pause. A consumer that keeps up with a busy producer reads
 * every record as soon as it is published and finds the ring empty after
 * each: every look at prod_pos then pulls the producer's lines over while
 * the producer writes them, and a record costs a cache-line round trip
 * instead of a few instructions (docs/design-notes.md, "Catch-up pause").
 * So when records come faster than we look (a look found some after fewer
 * than EVS_CATCHUP_QUIET_LOOKS empty ones) and we have read them all, we
 * stay off the shared lines for catchup_ns before looking again: the
 * producer writes on undisturbed and the next look finds a batch. A look
 * that finds nothing, or less than EVS_CATCHUP_MIN_BYTES after a pause,
 * ends it. A sparse stream (at 1 M/s a spinning reader looks dozens of
 * times between records) and the first record after a sleep are never
 * followed by a pause; while the producer is busy, a record can be seen up
 * to catchup_ns later.
 */
static __attribute__((noinline)) void consumer_catch_up(struct evs_consumer *c)
{
	uint64_t end = evs_monotonic_ns() + c->catchup_ns;

	c->catchup_pauses++;
	/* no PAUSE instruction: in a KVM guest a loop of them exits to the
	 * hypervisor (pause-loop exiting), which can take the vCPU away for
	 * longer than the pause (docs/benchmarks.md, "Method") */
	while (evs_monotonic_ns() < end)
		barrier();
}

/* Count how the looks at prod_pos go (err: consumer_fill()'s answer;
 * paused: the look came after a pause). */
static inline void consumer_note_look(struct evs_consumer *c, int err, bool paused)
{
	if (err == 0) {
		if (paused)
			c->following = c->prod_cache - consumer_read_pos(c) >= EVS_CATCHUP_MIN_BYTES;
		else
			c->following = c->catchup_ns && c->quiet_looks < EVS_CATCHUP_QUIET_LOOKS;
		c->quiet_looks = 0;
		return;
	}
	c->following = false;
	if (c->quiet_looks < EVS_CATCHUP_QUIET_LOOKS)
		c->quiet_looks++;
}

/* The ring looked empty by what we knew: look at prod_pos. off is where
 * the next record will start. */
static int consumer_look(struct evs_consumer *c, uint64_t off)
{
	bool paused = c->following;
	int err;

	if (paused)
		consumer_catch_up(c);
	/* start pulling the next header's line now, so that when prod_pos
	 * moves both lines cross from the producer's core at once instead of
	 * one after the other (a hint only; the header is read after the
	 * acquire) */
	__builtin_prefetch(c->data + off);
	err = consumer_fill(c);
	consumer_note_look(c, err, paused);
	return err;
}

/* consumer_read_header() writes the checked size over the header's first word */
_Static_assert(offsetof(struct evs_event_header, data_size) == 0, "data_size first");

/*
 * Copy out and check the header of the record at ring offset off,
 * position pos (below prod_cache) to hdr, a struct evs_event_header's 64
 * bytes; its length, or -EBADMSG. *size: its payload's size as checked.
 */
static __always_inline int64_t consumer_read_header(struct evs_consumer *c, uint64_t off,
						    uint64_t pos, void *hdr, uint64_t *size)
{
	const uint8_t *r = c->data + off;
	uint64_t avail = c->prod_cache - pos, len;

	/* read the size once and check that value; it is also the one handed
	 * out, whatever the producer writes meanwhile (the copy of the other
	 * fields does not wait on it) */
	*size = READ_ONCE_PLAIN((const uint64_t *)r);
	memcpy(hdr, r, sizeof(struct evs_event_header));
	memcpy(hdr, size, sizeof(*size)); /* data_size, first */
	/* no record is larger than the ring (at most 2^46): len cannot wrap */
	if (unlikely(*size > c->cap))
		return consumer_broken(c, "the record at position %llu claims %llu payload bytes, "
				       "more than the ring's %llu", (unsigned long long)pos,
				       (unsigned long long)*size, (unsigned long long)c->cap);
	len = evs_record_len(*size);
	if (unlikely(len > avail))
		return consumer_broken(c, "the record at position %llu (%llu bytes with its header) "
				       "runs past the producer's position, %llu bytes on",
				       (unsigned long long)pos, (unsigned long long)len,
				       (unsigned long long)avail);
	return (int64_t)len;
}

/* consumer_read_header() into a record, with its payload's address. */
static __always_inline int64_t consumer_read(struct evs_consumer *c, uint64_t off, uint64_t pos,
					     struct evs_record *rec)
{
	uint64_t size;

	/* first: after the header's stores c->data would be loaded again */
	rec->data = c->data + off + EVS_RECORD_HDR;
	return consumer_read_header(c, off, pos, &rec->hdr, &size);
}

/* The oldest held record, handed out again. Alone, it is read afresh
 * (checked like a new one); with later ones held behind it, it must
 * still end where the next one starts. */
static __attribute__((noinline)) int consumer_peek_held(struct evs_consumer *c,
							 struct evs_record *rec)
{
	int64_t len = consumer_read(c, c->cons_off, c->cons_pos, rec);

	if (len < 0)
		return (int)len;
	if ((uint64_t)len == c->peek_len)
		return 0;
	if (c->held > 1)
		return consumer_broken(c, "the held record at position %llu changed its length "
				       "from %llu to %lld bytes",
				       (unsigned long long)c->cons_pos,
				       (unsigned long long)c->peek_len, (long long)len);
	c->peek_len = (uint64_t)len;
	return 0;
}

/*
 * peek, once the arguments are checked. *looks: how many more times it may
 * look at the producer's position; with none left, a ring empty by what
 * we know is -EAGAIN without a look (consume's max == 0: one look a call).
 */
static __always_inline int consumer_peek(struct evs_consumer *c, struct evs_record *rec,
					 size_t *looks)
{
	int64_t len;
	int err;

	if (unlikely(c->broken))
		return consumer_still_broken(c);
	if (unlikely(c->held))
		return consumer_peek_held(c, rec);
	if (c->cons_pos == c->prod_cache) {
		if (!*looks)
			return -EAGAIN;
		--*looks;
		err = consumer_look(c, c->cons_off);
		if (err)
			return err;
	}
	len = consumer_read(c, c->cons_off, c->cons_pos, rec);
	if (unlikely(len < 0))
		return (int)len;
	c->peek_len = (uint64_t)len;
	c->held = 1;
	return 0;
}

EVS_API int evs_consumer__peek(struct evs_consumer *c, struct evs_record *rec)
{
	size_t looks = 1;

	if (unlikely(!c || !rec))
		return consumer_refuse("peek", !c ? "the consumer is NULL" : "the record is NULL");
	return consumer_peek(c, rec, &looks);
}

/* Room for one more held length; lengths of held records after the
 * oldest are kept in a ring that grows by doubling. */
static int held_reserve(struct evs_consumer *c)
{
	size_t n = c->held - 1, cap = c->held_cap ? c->held_cap * 2 : 64;
	uint64_t *to;

	if (n < c->held_cap)
		return 0;
	to = malloc(cap * sizeof(*to));
	if (!to)
		return -ENOMEM;
	/* full: n == held_cap entries from held_head on, wrapping */
	for (size_t i = 0; i < c->held_cap; i++)
		to[i] = c->held_len[(c->held_head + i) % c->held_cap];
	free(c->held_len);
	c->held_len = to;
	c->held_cap = cap;
	c->held_head = 0;
	return 0;
}

EVS_API int evs_consumer__peek_next(struct evs_consumer *c, struct evs_record *rec)
{
	int64_t len;
	int err;

	if (!c || !rec)
		return consumer_refuse("peek_next", !c ? "the consumer is NULL" : "the record is NULL");
	if (c->broken)
		return consumer_still_broken(c);
	if (!c->held)
		return evs_consumer__peek(c, rec);
	if (c->held >= EVS_CONSUMER_MAX_HELD)
		return consumer_window_full();
	if (c->held == 1) {
		/* the second held record: from here on read_pos is kept */
		c->read_pos = consumer_read_pos(c);
		c->read_off = consumer_read_off(c);
	}
	if (c->read_pos == c->prod_cache) {
		err = consumer_look(c, c->read_off);
		if (err)
			return err;
	}
	err = held_reserve(c);
	if (err)
		return err;
	len = consumer_read(c, c->read_off, c->read_pos, rec);
	if (len < 0)
		return (int)len;
	c->held_len[(c->held_head + c->held - 1) % c->held_cap] = (uint64_t)len;
	c->held++;
	c->read_pos += (uint64_t)len;
	c->read_off += (uint64_t)len;
	if (c->read_off >= c->cap)
		c->read_off -= c->cap;
	return 0;
}

/* Past the oldest record, len bytes long (not yet published). */
static inline void consumer_pass(struct evs_consumer *c, uint64_t len)
{
	c->cons_pos += len;
	c->cons_off += len;
	if (c->cons_off >= c->cap)
		c->cons_off -= c->cap;
	c->released++;
}

/* Forget the oldest held record; the next held one becomes the oldest. */
static void consumer_advance(struct evs_consumer *c)
{
	consumer_pass(c, c->peek_len);
	if (unlikely(--c->held)) {
		c->peek_len = c->held_len[c->held_head];
		c->held_head = (c->held_head + 1) % c->held_cap;
	}
}

static void consumer_publish(struct evs_consumer *c)
{
	/* relaxed: a count the producer clamps; cons_pos below carries the order */
	WRITE_ONCE(&c->cons->released, c->released);
	/* pairs with smp_load_acquire(&cons->cons_pos) in stream_refresh_cons():
	 * we are done reading the records below cons_pos */
	smp_store_release(&c->cons->cons_pos, c->cons_pos);
}

EVS_API int evs_consumer__release(struct evs_consumer *c)
{
	if (unlikely(!c || !c->held))
		return consumer_refuse("release", !c ? "the consumer is NULL" :
					"no record is held: peek one first");
	consumer_advance(c);
	consumer_publish(c);
	return 0;
}

/*
 * The debug-stream API's read (runtime/nrt_compat.c) in one call: peek,
 * copy and release, and the wakeup armed after a read that took the last
 * record known, so that the fd is readable exactly while a read would
 * succeed. The header goes straight to the caller's, once; the payload to
 * memory from alloc(). 0; -EAGAIN when there is nothing to read (armed:
 * the fd becomes readable when there is); -ENOMEM when alloc() fails, the
 * record left in the ring; -EPIPE, -EBADMSG as peek; -EINVAL when records
 * are held (the API never holds any).
 */
int evs_consumer_take(struct evs_consumer *c, void *hdr, void **payload, void *(*alloc)(size_t))
{
	uint64_t size;
	int64_t len;
	void *buf;
	int err;

	if (unlikely(c->broken))
		return consumer_still_broken(c);
	if (unlikely(c->held))
		return consumer_refuse("read", "records are held: release them first");
	if (c->cons_pos == c->prod_cache) {
		err = consumer_look(c, c->cons_off);
		if (err == -EAGAIN) {
			/* the caller will poll the fd next: arm first; its own
			 * look may find records (-EAGAIN: prod_cache has them) */
			err = evs_consumer__prepare_wait(c);
			if (err == 0)
				return -EAGAIN;
			if (err == -EAGAIN)
				err = 0;
		}
		if (err)
			return err;
	}
	len = consumer_read_header(c, c->cons_off, c->cons_pos, hdr, &size);
	if (unlikely(len < 0))
		return (int)len;
	/* malloc(0) may return NULL: one byte keeps "free it" uniform */
	buf = alloc(size ? size : 1);
	if (unlikely(!buf))
		return -ENOMEM;
	memcpy(buf, c->data + c->cons_off + EVS_RECORD_HDR, size);
	consumer_pass(c, (uint64_t)len);
	consumer_publish(c);
	if (c->cons_pos == c->prod_cache)
		evs_consumer__prepare_wait(c);
	*payload = buf;
	return 0;
}

/* Publish the consumer position at least this often in a batch, so that a
 * long batch frees ring space while it runs. */
#define CONSUME_PUBLISH_EVERY 32

/*
 * max == 0 is what is pending: the records known already and those up to
 * the producer's position at one look, made when the ring looks empty
 * (not at entry, so that the catch-up pause still keeps us off the
 * producer's lines); records published after that look wait for the next
 * call, so that a producer that keeps publishing cannot hold the call. The
 * count is returned as an int: at most INT_MAX records a call, whatever max.
 */
EVS_API int evs_consumer__consume(struct evs_consumer *c, evs_record_fn fn, void *ctx, size_t max)
{
	struct evs_record rec;
	size_t n = 0, lim = max && max < INT_MAX ? max : INT_MAX, looks = max ? SIZE_MAX : 1;
	int err = 0, stop = 0;

	if (!c || !fn)
		return consumer_refuse("consume", !c ? "the consumer is NULL" : "the callback is NULL");
	while (!stop && n < lim) {
		err = consumer_peek(c, &rec, &looks);
		if (err)
			break;
		stop = fn(ctx, &rec);
		consumer_advance(c);
		if (++n % CONSUME_PUBLISH_EVERY == 0)
			consumer_publish(c);
	}
	if (n)
		consumer_publish(c);
	if (n || err == -EAGAIN)
		return (int)n;
	return err;
}

/* Records are there while our word may be ARMED: take the word back, or
 * let the producer's kick stand; either way one kick is pending, so the fd
 * is readable while the records are there (a kick that finds the counter
 * full is not made: it is readable already). */
static void consumer_take_arm_back(struct evs_consumer *c)
{
	/* races the producer's xchg in stream_wake_slow(): whichever takes
	 * the armed word writes the eventfd, the other does not */
	if (xchg(&c->cons->wait, EVS_WAIT_AWAKE) == EVS_WAIT_ARMED)
		evs_efd_kick(c->efd);
	c->armed = false;
	c->kick_pending = true;
}

/* Our arm stood (nobody took the word) but the eventfd may hold a count
 * all the same: a write from before we attached (a producer that took the
 * previous consumer's arm and was preempted before its write), or from
 * anyone holding the fd. Read it, then look at the word again: still
 * ARMED means no producer took it before the count was read, so the count
 * was not its kick. 0 when the arm stands (sleep), -EAGAIN when the word
 * was taken meanwhile (what we read may have been its kick). */
static int consumer_drop_stale_kick(struct evs_consumer *c)
{
	if (!evs_efd_drain(c->efd))
		return 0;
	/* relaxed: the eventfd read (a system call) ordered it */
	if (READ_ONCE(&c->cons->wait) == EVS_WAIT_ARMED)
		return 0;
	c->armed = false;
	return -EAGAIN;
}

/* The producer took our word (its kick is on the way) and we have read
 * what it committed: had we slept now, its kick would land on an empty
 * ring and make the fd readable for nothing. Wait for it, once per kick
 * and briefly (a producer preempted between its xchg and its write still
 * makes that one wake for nothing); true when it landed and was read. */
static bool consumer_await_kick(struct evs_consumer *c)
{
	struct pollfd pfd = { .fd = c->efd, .events = POLLIN };

	if (c->kick_awaited)
		return false;
	c->kick_awaited = true;
	return poll(&pfd, 1, c->kick_landing_ms) == 1 && evs_efd_drain(c->efd);
}

/*
 * The wakeup protocol, consumer half (see docs/architecture.md):
 *  - armed: our wait word is ARMED; the producer's next commit takes it
 *    (xchg) and writes the eventfd once.
 *  - kick_pending: exactly one eventfd write is done or on its way and has
 *    not been read yet. We read (drain) it only when the ring is empty, so
 *    the fd stays readable while records are pending.
 */
static int consumer_prepare_wait(struct evs_consumer *c)
{
	int err;

	if (!c)
		return consumer_refuse("prepare_wait", "the consumer is NULL");
	if (c->broken)
		return consumer_still_broken(c);
	/* records we know of: nothing to look at */
	if (consumer_read_pos(c) != c->prod_cache)
		return -EAGAIN;
	for (;;) {
		/* a look like peek's, catch-up pause included: the
		 * debug-stream API calls this after every read that emptied
		 * what we knew of, so without the pause a reader that keeps
		 * up would look at prod_pos on every record. Only the first
		 * look can pause: one that finds nothing ends the spell, as
		 * does the empty peek before a reader goes to sleep. */
		err = consumer_look(c, consumer_read_off(c));
		if (err == 0)
			return -EAGAIN;
		if (err != -EAGAIN)
			return err;
		if (producer_hung_up(c))
			continue; /* drain what is left, then -EPIPE */
		if (c->armed) {
			/* relaxed: only the xchg decides who takes the word */
			if (READ_ONCE(&c->cons->wait) == EVS_WAIT_ARMED) {
				if (consumer_drop_stale_kick(c) == 0)
					return 0; /* the producer will kick at its next commit */
				continue;
			}
			c->armed = false; /* taken: the kick is done or on its way */
			c->kick_pending = true;
			continue;
		}
		if (c->kick_pending) {
			if (!evs_efd_drain(c->efd) && !consumer_await_kick(c))
				return 0; /* not landed yet: poll will see it */
			c->kick_pending = c->kick_awaited = false;
			continue;
		}
		WRITE_ONCE(&c->cons->wait, EVS_WAIT_ARMED);
		c->arms++;
		/* pairs with smp_mb() in stream_publish() (producer.c), or stands in for it
		 * (membarrier.c): either the producer sees ARMED, or we see its
		 * new prod_pos in consumer_fill() */
		if (c->membarrier) {
			err = evs_membarrier();
			if (err) {
				/* not armed after all: take the word back; if the
				 * producer took it first, its kick is on its way
				 * (races the xchg in stream_wake_slow(), producer.c:
				 * one of the two takes the armed word) */
				if (xchg(&c->cons->wait, EVS_WAIT_AWAKE) != EVS_WAIT_ARMED)
					c->kick_pending = true;
				return err;
			}
		} else {
			smp_mb();
		}
		c->armed = true;
		err = consumer_fill(c);
		if (err == -EAGAIN)
			return 0;
		consumer_take_arm_back(c);
		return err == 0 ? -EAGAIN : err;
	}
}

EVS_API int evs_consumer__prepare_wait(struct evs_consumer *c)
{
	int err = consumer_prepare_wait(c);

	/* about to sleep: what comes next starts a new spell */
	if (err == 0)
		c->quiet_looks = EVS_CATCHUP_QUIET_LOOKS;
	return err;
}

void evs_consumer_arm_at_start(struct evs_consumer *c)
{
	/* nothing seen yet: the first records start a spell */
	c->quiet_looks = EVS_CATCHUP_QUIET_LOOKS;
	/* evs_stream_activate() armed the word; records left by the consumer
	 * before us are not going to make the producer kick */
	c->armed = true;
	if (consumer_fill(c) == 0)
		consumer_take_arm_back(c);
}

EVS_API int evs_consumer__wait(struct evs_consumer *c, int timeout_ms)
{
	int64_t deadline = timeout_ms >= 0 ? evs_monotonic_ms() + timeout_ms : -1;
	struct pollfd pfd[2];
	int err, n, left = timeout_ms;

	if (!c)
		return consumer_refuse("wait", "the consumer is NULL");
	for (;;) {
		err = evs_consumer__prepare_wait(c);
		if (err == -EAGAIN)
			return 0;
		if (err)
			return err;
		pfd[0] = (struct pollfd){ .fd = c->efd, .events = POLLIN };
		pfd[1] = (struct pollfd){ .fd = c->sock, .events = POLLIN };
		n = poll(pfd, c->sock >= 0 ? 2 : 1, left);
		if (n < 0 && errno != EINTR)
			return -errno;
		if (n > 0 && c->sock >= 0 && pfd[1].revents)
			c->gone = true; /* the producer closed its end or died */
		/* a wake for nothing (or a signal) does not restart the time */
		if (deadline >= 0) {
			int64_t rest = deadline - evs_monotonic_ms();

			if (n == 0 || rest <= 0) {
				err = evs_consumer__prepare_wait(c);
				return err == -EAGAIN ? 0 : err ? err : -ETIMEDOUT;
			}
			left = (int)rest;
		}
	}
}

EVS_API int evs_consumer__fd(const struct evs_consumer *c)
{
	return c ? c->wait_fd : consumer_refuse("fd", "the consumer is NULL");
}

EVS_API int evs_consumer__hup_fd(const struct evs_consumer *c)
{
	return c ? c->sock : consumer_refuse("hup_fd", "the consumer is NULL");
}

EVS_API int evs_consumer__stats(const struct evs_consumer *c, struct evs_stream_stats *st)
{
	struct evs_stream_stats full;
	int err;

	if (!c)
		return consumer_refuse("stats", "the consumer is NULL");
	err = evs_stats_check(st);
	if (err)
		return err;
	evs_stats_from_shm(c->prod, c->cons, &full);
	full.released = c->released;
	full.connected = 1;
	/* gone: the socket hung up; without CLOSED that is a death. Looked
	 * at here, not left to the next empty peek's turn to look: stats are
	 * read to find out */
	full.producer_died = (c->gone || socket_hung_up(c)) && !full.producer_closed;
	evs_stats_copy_out(st, &full);
	return 0;
}

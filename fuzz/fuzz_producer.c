/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: the producer facing arbitrary consumer-written fields.
 *
 * The input is a program of operations: the consumer page's cons_pos,
 * released and wait word are overwritten with arbitrary values between
 * emits, reservations, commits and discards of arbitrary sizes. The
 * producer must never write outside its ring, never block, keep
 * produced == committed + dropped, and never let its clamped view of the
 * consumer run ahead of what it produced. Records may be deferred and
 * published later, and a next consumer may take over from whatever
 * position the page holds: it must start where a record of ours starts.
 */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/eventfd.h>

#include "attach.h"
#include "consumer.h"
#include "producer.h"

#define RING 4096u
#define MAX_EVENTS 16u

static struct evs_producer *p;
static struct evs_consumer *c;
static uint8_t payload[2 * RING];
/* where the records of this input start: a ring holds at most
 * RING / EVS_RECORD_HDR of them */
#define STARTS (RING / EVS_RECORD_HDR)
static uint64_t starts[STARTS];
static unsigned int nstarts;

static void note_start(uint64_t pos)
{
	starts[nstarts++ % STARTS] = pos;
}

/* pos is prod_pos, or where one of the ring's records starts */
static bool on_grid(const struct evs_stream *s, uint64_t pos)
{
	/* relaxed: this thread's own stores */
	uint64_t published = READ_ONCE(&s->prod->prod_pos);

	if (pos == published)
		return true;
	for (unsigned int i = 0; i < STARTS && i < nstarts; i++)
		if (starts[i] == pos && published - pos <= s->cap)
			return true;
	return false;
}

static void setup(void)
{
	EVS_OPTS(evs_producer_opts, o, .ring_bytes = RING, .max_events = MAX_EVENTS,
		 .hugepages = EVS_HUGEPAGES_OFF, .no_timestamps = 1);

	p = evs_producer__new(NULL, 1, &o);
	if (!p)
		abort();
	/* an attached consumer makes the stream active; the fuzzer then
	 * writes its shared page in its place */
	c = evs_consumer__connect(NULL, 0, NULL);
	if (!c)
		abort();
	memset(payload, 0xa5, sizeof(payload));
}

/* Start every input from a fresh stream at an input-chosen position. */
static void reset_stream(struct evs_stream *s, uint64_t base)
{
	for (int i = 0; i < EVS_DROP_CAUSE_COUNT; i++)
		s->dropped_events[i] = s->dropped_bytes[i] = 0;
	s->prod_pos = base;
	WRITE_ONCE(&s->cons_cache, base);
	s->prod_off = base % s->cap;
	s->committed = s->produced = 0;
	WRITE_ONCE(&s->released_cache, 0);
	s->resv_len = 0;
	/* the drop run and batch restart with the counters (drop.c) */
	s->burst_events = s->batch_events0 = s->batch_bytes0 = 0;
	s->burst_cause = EVS_DROP_RING_FULL;
	s->unstamped = 0;
	s->full_len = 0;
	s->prod->prod_pos = base;
	s->prod->committed = 0;
	s->cons->cons_pos = base;
	s->cons->released = 0;
	s->cons->wait = EVS_WAIT_AWAKE;
	/* the whole 4 KiB ring was committed when it was made */
	evs_stream_set_limits(s);
	nstarts = 0;
}

static uint64_t take(const uint8_t **buf, size_t *len, size_t n)
{
	uint64_t v = 0;

	if (n > *len)
		n = *len;
	memcpy(&v, *buf, n);
	*buf += n;
	*len -= n;
	return v;
}

static void check_invariants(const struct evs_stream *s)
{
	uint64_t dropped = 0;

	for (int i = 0; i < EVS_DROP_CAUSE_COUNT; i++)
		dropped += s->dropped_events[i];
	assert(s->produced == s->committed + dropped);
	assert(s->prod_pos - s->cons_cache <= s->cap);
	assert(s->committed - s->released_cache <= s->max_events);
	assert(s->room_end - s->cons_cache <= s->cap && s->events_end - s->released_cache == s->max_events);
	assert(s->prod_pos % EVS_RECORD_ALIGN == 0 && s->prod_off == s->prod_pos % s->cap);
}

int LLVMFuzzerTestOneInput(const uint8_t *buf, size_t len)
{
	struct evs_stream *s;
	uint64_t v;
	uint8_t *d;
	size_t size;
	int err;

	if (!p)
		setup();
	s = &p->streams[0];
	reset_stream(s, take(&buf, &len, 8) & ~(uint64_t)(EVS_RECORD_ALIGN - 1));
	while (len) {
		uint8_t op = (uint8_t)take(&buf, &len, 1);

		uint64_t at = s->prod_pos;

		switch (op % 11) {
		case 0: /* a consumer writes any position */
			WRITE_ONCE(&s->cons->cons_pos, take(&buf, &len, 8));
			break;
		case 1: /* ... any released count */
			WRITE_ONCE(&s->cons->released, take(&buf, &len, 8));
			break;
		case 2: /* ... any wait word */
			WRITE_ONCE(&s->cons->wait, (uint32_t)take(&buf, &len, 4));
			break;
		case 3: /* an honest consumer releases everything */
			WRITE_ONCE(&s->cons->released, s->committed);
			WRITE_ONCE(&s->cons->cons_pos, s->prod_pos);
			break;
		case 4:
			size = take(&buf, &len, 2) % (RING + 64);
			err = evs_producer__emit(p, 0, 1, payload, size);
			assert(err == 0 || err == -ENOBUFS || err == -EMSGSIZE);
			if (!err)
				note_start(at);
			break;
		case 5:
		case 6:
			size = take(&buf, &len, 2) % (RING + 64);
			d = evs_producer__reserve(p, 0, 1, size);
			if (!d) {
				assert(errno == ENOBUFS || errno == EMSGSIZE);
				break;
			}
			assert(d >= s->data + EVS_RECORD_HDR && d + size <= s->data + 2 * (size_t)s->cap);
			memset(d, (int)op, size);
			err = op % 11 == 5 ? evs_producer__commit(p, 0) : evs_producer__discard(p, 0);
			assert(err == 0);
			if (op % 11 == 5)
				note_start(at);
			break;
		case 7: /* the consumer reads its kick, if any */
			eventfd_read(evs_consumer__fd(c), &v);
			break;
		case 8: /* a record left for a later publish */
			size = take(&buf, &len, 2) % (RING + 64);
			d = evs_producer__reserve(p, 0, 1, size);
			if (!d)
				break;
			memset(d, (int)op, size);
			assert(evs_producer__commit_deferred(p, 0) == 0);
			note_start(at);
			break;
		case 9:
			assert(evs_producer__publish(p, 0) == 0);
			assert(READ_ONCE(&s->prod->prod_pos) == s->prod_pos);
			break;
		case 10: /* the consumer leaves, another takes over from its page */
			assert(evs_stream_activate(s, false) >= 0);
			assert(on_grid(s, READ_ONCE(&s->cons->cons_pos)));
			assert(READ_ONCE(&s->cons->released) <= s->committed);
			break;
		}
		check_invariants(s);
	}
	return 0;
}

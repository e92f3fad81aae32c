/* SPDX-License-Identifier: MIT */
/*
 * The limit of the design itself: the bare SPSC ring of bare.h between the
 * two CPUs, through the same harness as evstream: the producer copies the
 * payload from the same hot source, the consumer reads the header and
 * touches every payload line. What it leaves out is everything evstream
 * adds: the API calls and their argument checks, the untrusted-memory
 * checks, the statistics, drop accounting, the wakeup check and the
 * timestamp. evstream divided by this is what the library costs; this
 * divided by a pipe is the most any transport of this shape can show on
 * this machine.
 *
 * Stamped (a TSC read per record) and with the reader paced as evstream's
 * default consumer is, it is the limit of a timestamped default path: its
 * rate over the bare ring's is what the clock read costs on two CPUs, and
 * evstream's default path over it what the library's own work costs.
 */
#include <stdlib.h>
#include <string.h>

#include "bare.h"
#include "bench.h"
#include "evstream-private/introspect.h"

struct bare {
	struct bare_ring ring;
	bool stamped;   /* a TSC read per record, the reader paced like evstream's */
	size_t size;
	const uint8_t *src;
	uint64_t got __attribute__((aligned(128))); /* consumer's */
	struct run run;
};

static volatile uint64_t sink;

static void *bare_producer(void *arg)
{
	struct bare *b = arg;
	struct bare_side p = { 0 };
	uint64_t n = 0;

	for (;;) {
		/* two calls with a constant: each inlines its own loop body */
		if (b->stamped ? !bare_push_stamped(&b->ring, &p, b->src, b->size, n, true)
			       : !bare_push(&b->ring, &p, b->src, b->size, n))
			continue;
		n++;
		if ((n & 63) == 0 && run_tick(&b->run))
			break;
	}
	run_finish(&b->run, n);
	return NULL;
}

static void *bare_consumer(void *arg)
{
	struct bare *b = arg;
	struct bare_side c = { 0 };
	struct bare_pace pace = { .pause_ns = b->stamped ? bopt.catchup_ns : 0,
				  .quiet_looks = EVS__CATCHUP_QUIET_LOOKS };

	for (;;) {
		const uint8_t *r = b->stamped ? bare_peek_paced(&b->ring, &c, &pace)
					      : bare_peek(&b->ring, &c);
		uint64_t size;

		if (!r) {
			if (run_drained(&b->run, b->got))
				break;
			cpu_relax();
			continue;
		}
		/* volatile: the size read from the header once, as evstream's
		 * consumer reads it; not synchronisation (bare_peek()'s acquire
		 * ordered the header). READ_ONCE_PLAIN() would say it, but gcc
		 * 12 then allocates this loop's registers differently */
		size = *(const volatile uint64_t *)r;
		sink += touch(r + 64, size);
		bare_release(&b->ring, &c, size);
		b->got++;
		run_mark(&b->run, b->got);
	}
	run_mark(&b->run, b->got);
	return NULL;
}

struct tput bare_measure(size_t size, const uint8_t *src, bool stamped)
{
	struct bare *b = aligned_alloc(128, sizeof(*b));
	size_t area = bopt.ring_bytes + bare_rec_len(size) + 4096;
	struct tput t = { 0 };

	if (!b)
		return t;
	memset(b, 0, sizeof(*b));
	b->ring.cap = bopt.ring_bytes;
	b->size = size;
	b->stamped = stamped;
	b->src = src;
	/* faulted in before the clock starts, as evstream's rings are */
	b->ring.area = bench_area(area);
	if (!b->ring.area) {
		free(b);
		return t;
	}
	run_start(&b->run);
	bench_pair(bare_producer, b, bare_consumer, b);
	t = tput_of(run_rate(&b->run), size);
	bench_area_free(b->ring.area, area);
	free(b);
	return t;
}

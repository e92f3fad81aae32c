/* SPDX-License-Identifier: MIT */
/*
 * The limit of the design itself: a bare single-producer/single-consumer
 * ring between the two CPUs, with nothing but what moving a record needs.
 * It moves the same records as evstream (a 64-byte header and the payload,
 * 8-aligned, in a ring as large as evstream's), through the same harness:
 * the producer copies the payload from the same hot source and publishes
 * its position after every record; the consumer reads the header, touches
 * every payload line and publishes its own position after every record.
 * What it leaves out is everything evstream adds: the API calls and their
 * argument checks, the untrusted-memory checks, the statistics, drop
 * accounting, the wakeup check and the timestamp. evstream divided by this
 * is what the library costs; this divided by a pipe is the most any
 * transport of this shape can show on this machine.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

struct bare {
	uint8_t *ring;
	size_t cap, size;
	const uint8_t *src;
	_Atomic uint64_t prod_pos __attribute__((aligned(128)));
	_Atomic uint64_t cons_pos __attribute__((aligned(128)));
	struct run run;
};

static volatile uint64_t sink;

static uint64_t rec_len(size_t size)
{
	return 64 + ((size + 7) & ~(uint64_t)7);
}

static void *bare_producer(void *arg)
{
	struct bare *b = arg;
	uint64_t pos = 0, cons = 0, len = rec_len(b->size), n = 0;

	for (;;) {
		if (pos + len - cons > b->cap) {
			cons = atomic_load_explicit(&b->cons_pos, memory_order_acquire);
			if (pos + len - cons > b->cap)
				continue;
		}
		/* records do not wrap: the area has a record's worth of slack */
		uint64_t *h = (uint64_t *)(b->ring + pos % b->cap);

		memcpy(h + 8, b->src, b->size);
		h[0] = b->size;
		h[1] = 1;
		h[2] = n;
		pos += len;
		atomic_store_explicit(&b->prod_pos, pos, memory_order_release);
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
	uint64_t pos = 0, prod = 0, got = 0;

	for (;;) {
		if (pos == prod) {
			prod = atomic_load_explicit(&b->prod_pos, memory_order_acquire);
			if (pos == prod) {
				if (atomic_load_explicit(&b->run.done, memory_order_acquire) &&
				    got >= atomic_load_explicit(&b->run.sent_total, memory_order_relaxed))
					break;
				cpu_relax();
				continue;
			}
		}
		const uint8_t *r = b->ring + pos % b->cap;
		uint64_t size = *(const volatile uint64_t *)r;

		sink += touch(r + 64, size);
		pos += rec_len(size);
		atomic_store_explicit(&b->cons_pos, pos, memory_order_release);
		got++;
		run_mark(&b->run, got);
	}
	run_mark(&b->run, got);
	return NULL;
}

struct tput bare_measure(size_t size, const uint8_t *src)
{
	struct bare *b = aligned_alloc(128, sizeof(*b));
	struct tput t = { 0 };

	if (!b)
		return t;
	memset(b, 0, sizeof(*b));
	b->cap = bopt.ring_bytes;
	b->size = size;
	b->src = src;
	b->ring = aligned_alloc(4096, b->cap + rec_len(size) + 4096);
	if (!b->ring) {
		free(b);
		return t;
	}
	/* fault it in before the clock starts, as evstream's rings are */
	memset(b->ring, 0, b->cap + rec_len(size) + 4096);
	run_start(&b->run, bopt.secs / 4, bopt.secs);
	bench_pair(bare_producer, b, bare_consumer, b);
	t.ev_s = run_rate(&b->run);
	t.gb_s = t.ev_s * (double)size / 1e9;
	t.ok = t.ev_s > 0;
	free(b->ring);
	free(b);
	return t;
}

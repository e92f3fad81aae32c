/* SPDX-License-Identifier: MIT */
/*
 * The least a timestamped message can do between the two CPUs, run at the
 * busy-poll case's offered rate and count, right before it: the floor
 * under its percentiles, the tail included, in the same round.
 *
 * Each message is one cache line of its own: the producer reads the clock,
 * stores the time, then the sequence number with release; the consumer
 * polls the next slot's line and reads the clock when the number appears.
 * No shared index, no header, no checks: one line crosses per message.
 * Both sides read the TSC where there is one (the producer's read not
 * ordered, as evstream's is not; the consumer's after an lfence, so it
 * cannot be taken before the number was seen), and the difference is
 * converted with a rate measured against cli_now_ns(); elsewhere both read
 * cli_now_ns().
 * A thread that is not running when its message is due (the host took the
 * vCPU) delays it exactly as it delays evstream's record, so the tail of
 * this figure is the machine's, not a transport's.
 */
#include "bench.h"

/* bench_stamp() after the loads before it (the sample's end) */
static inline uint64_t stamp_after_load(void)
{
#if BENCH_HAVE_TSC
	_mm_lfence();
#endif
	return bench_stamp();
}

#define FLOOR_SLOTS 65536u /* 4 MiB: a consumer away for 65 ms at 1 M/s */

struct floor_slot {
	_Atomic uint64_t seq; /* n + 1 once message n is in; the release is the last store */
	uint64_t ts;
} __attribute__((aligned(64)));

static struct {
	struct floor_slot *slot;
	uint64_t n, interval_ns;
	double ns_per_stamp;
	_Atomic uint64_t consumed __attribute__((aligned(128))); /* every 1024 messages */
	struct hist h;
} fl;

static void *floor_producer(void *arg)
{
	uint64_t t0 = cli_now_ns() + 1000000;

	(void)arg;
	for (uint64_t i = 0; i < fl.n; i++) {
		struct floor_slot *s = &fl.slot[i % FLOOR_SLOTS];

		bench_spin_until(t0 + i * fl.interval_ns);
		/* never overwrite a slot the consumer has not passed;
		 * acquire pairs with the release of consumed in floor_consumer */
		while (i - atomic_load_explicit(&fl.consumed, memory_order_acquire) >= FLOOR_SLOTS)
			cpu_relax();
		s->ts = bench_stamp();
		/* release: ts is visible before seq; pairs with the consumer's acquire */
		atomic_store_explicit(&s->seq, i + 1, memory_order_release);
	}
	return NULL;
}

static void *floor_consumer(void *arg)
{
	(void)arg;
	for (uint64_t i = 0; i < fl.n; i++) {
		struct floor_slot *s = &fl.slot[i % FLOOR_SLOTS];
		uint64_t now, d;

		/* acquire pairs with the producer's release of seq: ts is in */
		while (atomic_load_explicit(&s->seq, memory_order_acquire) != i + 1)
			cpu_relax();
		now = stamp_after_load();
		d = now > s->ts ? now - s->ts : 0;
		hist_add(&fl.h, (uint64_t)((double)d * fl.ns_per_stamp + 0.5));
		if ((i & 1023) == 1023)
			/* release: the slots before i are read; pairs with the
			 * producer's acquire of consumed */
			atomic_store_explicit(&fl.consumed, i + 1, memory_order_release);
	}
	return NULL;
}

/* Nanoseconds per unit of bench_stamp(), over 20 ms. */
static double stamp_rate(void)
{
	uint64_t t0, c0, t1, c1;

	if (!BENCH_HAVE_TSC)
		return 1.0;
	t0 = cli_now_ns();
	c0 = bench_stamp();
	bench_spin_until(t0 + 20000000);
	t1 = cli_now_ns();
	c1 = bench_stamp();
	return c1 > c0 ? (double)(t1 - t0) / (double)(c1 - c0) : 1.0;
}

int limit_line_message(double rate, uint64_t n, struct lat *out, struct hist *all)
{
	size_t bytes = FLOOR_SLOTS * sizeof(struct floor_slot);

	fl.slot = bench_area(bytes);
	hist_init(&fl.h);
	if (!fl.slot) {
		lat_from_hist(out, &fl.h); /* no samples: NAN figures */
		return -1;
	}
	if (!fl.ns_per_stamp)
		fl.ns_per_stamp = stamp_rate();
	fl.n = n;
	fl.interval_ns = (uint64_t)(1e9 / rate);
	atomic_store(&fl.consumed, 0);
	bench_pair(floor_producer, NULL, floor_consumer, NULL);
	bench_area_free(fl.slot, bytes);
	lat_from_hist(out, &fl.h);
	hist_merge(all, &fl.h);
	return 0;
}

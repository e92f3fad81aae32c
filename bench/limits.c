/* SPDX-License-Identifier: MIT */
/*
 * The physical limits every evstream figure is divided by, measured in the
 * same run on the same two CPUs: memcpy bandwidth, the cost of a clock read,
 * the one-way time of a cache line between the two cores, and the latency of
 * a raw eventfd wakeup between two threads.
 */
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/eventfd.h>

#include "bench.h"
#include "evstream/evstream.h"
#include "evstream-private/introspect.h"

static void *map_area(size_t len)
{
	void *p = bench_area(len);

	if (!p)
		exit(1);
	return p;
}

/* Payload-sized copies from one hot source into a destination as large as
 * the ring, advancing like records do: a copy's cost, alone. With
 * streaming, evstream's own copy (evs__ring_copy()), else glibc's memcpy. */
static struct tput copy_bw(size_t size, uint8_t *dst, size_t area, const uint8_t *src, double secs,
			   bool streaming)
{
	struct tput r = { 0 };
	size_t step = (size + 64 + 7) & ~(size_t)7, off = 0;
	uint64_t n = 0, t0, t1, end;

	if (!size)
		return r;
	t0 = cli_now_ns();
	end = t0 + (uint64_t)(secs * 1e9);
	do {
		for (int k = 0; k < 16; k++) {
			if (off + size > area)
				off = 0;
			if (streaming)
				evs__ring_copy(dst + off, src, size);
			else
				memcpy(dst + off, src, size);
			/* every copy made, in order, none merged or left out */
			barrier();
			off += step;
			n++;
		}
		t1 = cli_now_ns();
	} while (t1 < end);
	return tput_of((double)n / ((double)(t1 - t0) / 1e9), size);
}

static double clock_cost(void)
{
	uint64_t t0 = cli_now_ns(), x = 0;
	const int n = 1000000;

	for (int i = 0; i < n; i++)
		x += cli_now_ns();
	__asm__ __volatile__("" : : "r"(x));
	return (double)(cli_now_ns() - t0) / n;
}

/* Back-to-back TSC reads, as a timestamped record makes one: how many a
 * core can make at most (bench_stamp()). Best of some passes. */
static double tsc_read_cost(void)
{
	double best = INFINITY;

	for (int k = 0; k < 20; k++) {
		uint64_t t0 = cli_now_ns(), x = 0;
		const int n = 100000;

		for (int i = 0; i < n; i++)
			x += bench_stamp();
		__asm__ __volatile__("" : : "r"(x));
		best = fmin(best, (double)(cli_now_ns() - t0) / n);
	}
	return best;
}

/* ------------------------------------------------- cache line ping-pong */

static struct {
	_Atomic uint64_t v __attribute__((aligned(128)));
	uint64_t rounds;
	struct hist h;
} pp;

#define PP_BATCH 64

static void *pp_ping(void *arg)
{
	(void)arg;
	for (uint64_t r = 0; r < pp.rounds; r++) {
		uint64_t t0 = cli_now_ns();

		for (uint64_t k = 0; k < PP_BATCH; k++) {
			uint64_t want = 2 * (r * PP_BATCH + k) + 2;

			/* the line is the message, nothing else rides on it:
			 * release and acquire only as a handover's would be
			 * (plain moves on x86). Pairs with smp_load_acquire(&pp.v)
			 * in pp_pong() */
			smp_store_release(&pp.v, want - 1);
			/* pairs with smp_store_release(&pp.v) in pp_pong() */
			while (smp_load_acquire(&pp.v) != want)
				;
		}
		/* one sample: the mean one-way time over a batch of round trips,
		 * so the clock read is not part of it */
		hist_add(&pp.h, (cli_now_ns() - t0) / (2 * PP_BATCH));
	}
	return NULL;
}

static void *pp_pong(void *arg)
{
	uint64_t total = 2 * pp.rounds * PP_BATCH;

	(void)arg;
	for (uint64_t want = 1; want < total; want += 2) {
		/* pairs with smp_store_release(&pp.v) in pp_ping() */
		while (smp_load_acquire(&pp.v) != want)
			;
		/* pairs with smp_load_acquire(&pp.v) in pp_ping() */
		smp_store_release(&pp.v, want + 1);
	}
	return NULL;
}

/* ------------------------------------------------- raw eventfd wake */

static struct {
	int efd;
	bool use_poll;
	uint64_t n, gap_ns;
	_Atomic uint64_t sent_at __attribute__((aligned(64)));
	_Atomic uint64_t acked __attribute__((aligned(64)));
	struct hist h;
} ew;

static void *ew_waker(void *arg)
{
	(void)arg;
	for (uint64_t i = 0; i < ew.n; i++) {
		/* let the sleeper get back into the kernel and go idle */
		bench_spin_until(cli_now_ns() + ew.gap_ns);
		uint64_t t0 = cli_now_ns();

		/* relaxed: no atomic pairs with it; eventfd_write() after it
		 * and the sleeper's read of the eventfd (system calls, the
		 * kernel's lock of the counter) order it before its load in
		 * ew_sleeper() */
		WRITE_ONCE(&ew.sent_at, t0);
		eventfd_write(ew.efd, 1);
		/* pairs with smp_store_release(&ew.acked) in ew_sleeper(): it
		 * has read sent_at, which the next round may write again */
		while (smp_load_acquire(&ew.acked) != i + 1)
			cpu_relax();
	}
	return NULL;
}

static void *ew_sleeper(void *arg)
{
	eventfd_t v;

	(void)arg;
	for (uint64_t i = 0; i < ew.n; i++) {
		if (ew.use_poll) {
			struct pollfd pfd = { .fd = ew.efd, .events = POLLIN };

			while (poll(&pfd, 1, -1) < 1)
				;
			eventfd_read(ew.efd, &v);
		} else {
			while (eventfd_read(ew.efd, &v) < 0)
				;
		}
		/* relaxed: ordered after ew_waker()'s store only by the
		 * eventfd's system calls (see there) */
		hist_add(&ew.h, cli_now_ns() - READ_ONCE(&ew.sent_at));
		/* pairs with smp_load_acquire(&ew.acked) in ew_waker(): done
		 * with sent_at */
		smp_store_release(&ew.acked, i + 1);
	}
	return NULL;
}

void limit_efd_wake(struct lat *out, bool use_poll)
{
	ew.efd = eventfd(0, EFD_CLOEXEC | (use_poll ? EFD_NONBLOCK : 0));
	if (ew.efd < 0) {
		warn("eventfd: %s", strerror(errno));
		hist_init(&ew.h);
		lat_from_hist(out, &ew.h); /* no samples: NAN figures, not garbage */
		return;
	}
	ew.use_poll = use_poll;
	ew.n = bopt.quick ? 3000 : 20000;
	ew.gap_ns = 100000; /* 10k wakeups/s: the sleeper is really asleep */
	/* relaxed: before the threads start; pthread_create() orders it */
	WRITE_ONCE(&ew.acked, 0);
	hist_init(&ew.h);
	bench_pair(ew_waker, NULL, ew_sleeper, NULL);
	close(ew.efd);
	lat_from_hist(out, &ew.h);
}

/* ------------------------------------------------- CPU stolen from a spinner */

static struct {
	double secs;
	uint64_t lost_ns, gaps;
	struct hist h;    /* gaps of 2 us and more */
} hic;

static void *hic_spin(void *arg)
{
	uint64_t t0 = cli_now_ns(), prev = t0, end = t0 + (uint64_t)(hic.secs * 1e9), now;

	(void)arg;
	while ((now = cli_now_ns()) < end) {
		if (now - prev >= 2000) {
			hist_add(&hic.h, now - prev);
			hic.lost_ns += now - prev;
			hic.gaps++;
		}
		prev = now;
	}
	return NULL;
}

static void *nothing(void *arg)
{
	return arg;
}

/* How often and for how long a thread spinning on the consumer's CPU is
 * not running (interrupts, other tasks, the host): the floor under every
 * tail percentile of this run. */
static void limit_hiccups(struct lat *gaps, double *lost, double *per_s)
{
	hic.secs = bopt.quick ? 0.3 : 1.0;
	hic.lost_ns = hic.gaps = 0;
	hist_init(&hic.h);
	bench_pair(nothing, NULL, hic_spin, NULL);
	lat_from_hist(gaps, &hic.h);
	*lost = (double)hic.lost_ns / (hic.secs * 1e9);
	*per_s = (double)hic.gaps / hic.secs;
}

void limit_line_oneway(struct lat *out)
{
	pp.rounds = bopt.quick ? 5000 : 30000;
	/* relaxed: before the threads start; pthread_create() orders it */
	WRITE_ONCE(&pp.v, 0);
	hist_init(&pp.h);
	bench_pair(pp_ping, NULL, pp_pong, NULL);
	lat_from_hist(out, &pp.h);
}

#define MC_SRC_BYTES (4u << 20)
static uint8_t *mc_dst, *mc_src;

/* The destination (as large as the ring) and the source of the copies,
 * made on first use: only the throughput and limits parts need them. */
static void memcpy_areas(void)
{
	if (mc_dst)
		return;
	mc_dst = map_area(bopt.ring_bytes);
	mc_src = map_area(MC_SRC_BYTES);
	memset(mc_src, 0x5a, MC_SRC_BYTES);
}

struct tput limit_memcpy(size_t size)
{
	memcpy_areas();
	return copy_bw(size, mc_dst, bopt.ring_bytes, mc_src, bopt.quick ? 0.1 : 0.3, false);
}

struct tput limit_ring_copy(size_t size)
{
	memcpy_areas();
	return copy_bw(size, mc_dst, bopt.ring_bytes, mc_src, bopt.quick ? 0.1 : 0.3, true);
}

void limits_run(void)
{
	struct lat line_oneway, efd_wake, efd_wake_poll, hiccup;
	double clock_ns, tsc_ns, memcpy_hot_gb_s, hiccup_lost, hiccup_per_s;

	memcpy_areas();
	say("\n== limits (same run, CPUs %d and %d)\n", BENCH_CPU_PRODUCER, BENCH_CPU_CONSUMER);
	clock_ns = clock_cost();
	say("clock_gettime(CLOCK_MONOTONIC)   %8.1f ns per call\n", clock_ns);
	tsc_ns = tsc_read_cost();
	say("TSC read (rdtsc), back to back   %8.1f ns per read\n", tsc_ns);
	memcpy_hot_gb_s = copy_bw(1 << 20, mc_dst, 2 << 20, mc_src, bopt.quick ? 0.1 : 0.3, false).gb_s;
	say("memcpy 1 MiB within 2 MiB (cache)  %8.2f GB/s\n", memcpy_hot_gb_s);

	limit_line_oneway(&line_oneway);
	say("cache line one-way (CPU0<->CPU1) p50 %6.1f ns  p99 %6.1f ns\n",
	    line_oneway.p50, line_oneway.p99);

	limit_hiccups(&hiccup, &hiccup_lost, &hiccup_per_s);
	say("CPU %d taken from a spinner        %6.3f%% of the time, %.0f gaps >= 2 us/s, p50 %.1f us, max %.0f us\n",
	    BENCH_CPU_CONSUMER, hiccup_lost * 100, hiccup_per_s, hiccup.p50 / 1e3, hiccup.max / 1e3);
	limit_efd_wake(&efd_wake, false);
	say("eventfd wake, blocked read()     p50 %6.0f ns  p99 %6.0f ns  p99.9 %6.0f ns\n",
	    efd_wake.p50, efd_wake.p99, efd_wake.p999);
	limit_efd_wake(&efd_wake_poll, true);
	say("eventfd wake, poll()             p50 %6.0f ns  p99 %6.0f ns  p99.9 %6.0f ns\n",
	    efd_wake_poll.p50, efd_wake_poll.p99, efd_wake_poll.p999);

	rep_section("limits");
	rep_obj_begin();
	rep_str("name", "clock_gettime_ns");
	rep_num("value", clock_ns);
	rep_obj_end();
	rep_obj_begin();
	rep_str("name", "tsc_read_ns");
	rep_num("value", tsc_ns);
	rep_obj_end();
	rep_obj_begin();
	rep_str("name", "memcpy_hot");
	rep_int("payload", 1 << 20);
	rep_num("gb_s", memcpy_hot_gb_s);
	rep_obj_end();
	rep_obj_begin();
	rep_str("name", "cacheline_oneway");
	rep_lat("lat", &line_oneway);
	rep_obj_end();
	rep_obj_begin();
	rep_str("name", "cpu_stolen_from_spinner");
	rep_num("fraction_lost", hiccup_lost);
	rep_num("gaps_per_s", hiccup_per_s);
	rep_lat("gaps_2us_plus", &hiccup);
	rep_obj_end();
	rep_obj_begin();
	rep_str("name", "eventfd_wake_read");
	rep_lat("lat", &efd_wake);
	rep_obj_end();
	rep_obj_begin();
	rep_str("name", "eventfd_wake_poll");
	rep_lat("lat", &efd_wake_poll);
	rep_obj_end();
	rep_section_end();
}

/* SPDX-License-Identifier: MIT */
/*
 * The producer's timestamp clock: CLOCK_MONOTONIC nanoseconds, read from
 * the TSC where it is invariant (constant and nonstop: whatever the
 * clocksource, tsc or kvm-clock), else from clock_gettime().
 *
 * A clock_gettime() costs 22-26 ns on the machines evs-bench has met (its
 * vDSO reads the TSC behind an lfence and a seqlock, and with kvm-clock a
 * hypervisor page too); a bare rdtsc ~10 ns, and it overlaps with the
 * record's stores. Each stream extrapolates from an anchor, a (TSC,
 * CLOCK_MONOTONIC) pair, that it renews every EVS_CLOCK_ANCHOR_NS, with a
 * slope measured over at least EVS_CLOCK_SLOPE_NS, so that the error stays
 * a few nanoseconds and NTP's slewing of CLOCK_MONOTONIC is followed within
 * a second. See "Timestamps" in docs/architecture.md.
 */
#ifndef EVS_CLOCK_H
#define EVS_CLOCK_H

#include <stdbool.h>
#include <stdint.h>

#include "atomics.h"

#define EVS_CLOCK_ANCHOR_NS 1000000ull    /* renew the anchor after 1 ms */
#define EVS_CLOCK_SLOPE_NS  1000000000ull /* re-measure the slope after 1 s */

enum evs_clock_mode {
	EVS_CLOCK_AUTO = 0, /* the TSC when it is invariant */
	EVS_CLOCK_GETTIME,  /* clock_gettime() for every record (EVSTREAM_TSC=off) */
};

/* One stream's clock; only its producer thread touches it. */
struct evs_clock {
	uint64_t tsc0;       /* anchor: the TSC ... */
	uint64_t ns0;        /* ... and CLOCK_MONOTONIC at the same moment */
	uint64_t span;       /* TSC ticks after tsc0 that extrapolation is trusted */
	uint64_t mult;       /* nanoseconds per tick, times 2^32 */
	uint64_t last_ns;    /* the last value handed out: never go back */
	uint64_t slope_tsc;  /* where the baseline of the next slope starts */
	uint64_t slope_ns;
};

/* CLOCK_MONOTONIC in nanoseconds, from clock_gettime(): the library's one
 * reader of it for deadlines and pauses (a vDSO call, no system call,
 * where the clocksource is tsc or kvm-clock). */
uint64_t evs_monotonic_ns(void);

static inline int64_t evs_monotonic_ms(void)
{
	return (int64_t)(evs_monotonic_ns() / 1000000);
}

/* Set up a stream's clock; the first call in a process measures the TSC
 * rate (~2 ms). */
void evs_clock_init(struct evs_clock *c, enum evs_clock_mode mode);
/* Out of the fast path: the anchor is old (or there is no TSC). */
uint64_t evs_clock_slow(struct evs_clock *c);

/* span is 0 when the stream reads clock_gettime() for every record */
static inline bool evs_clock_uses_tsc(const struct evs_clock *c)
{
	return c->span != 0;
}

/* The TSC, not ordered with the code around it; 0 where there is none
 * (then span is 0 and every read goes to clock_gettime()). */
static __always_inline uint64_t evs_tsc(void)
{
#if defined(__x86_64__) || defined(__i386__)
	return __builtin_ia32_rdtsc();
#else
	return 0;
#endif
}

/* Hand a value out, never below the last one. */
static __always_inline uint64_t evs_clock_hand_out(struct evs_clock *c, uint64_t ns)
{
	if (unlikely(ns < c->last_ns))
		ns = c->last_ns;
	c->last_ns = ns;
	return ns;
}

/* CLOCK_MONOTONIC d ticks after the anchor, for d < span. */
static __always_inline uint64_t evs_clock_at(const struct evs_clock *c, uint64_t d)
{
	/* d < span keeps d * mult below 2^64 (clock_anchor() in clock.c) */
	return c->ns0 + ((d * c->mult) >> 32);
}

static __always_inline uint64_t evs_clock_now(struct evs_clock *c)
{
	/* not ordered (no lfence): the timestamp is one of the record's
	 * stores, and an earlier read by a few cycles is within the error */
	uint64_t d = evs_tsc() - c->tsc0;

	if (unlikely(d >= c->span))
		return evs_clock_slow(c);
	return evs_clock_hand_out(c, evs_clock_at(c, d));
}

#endif

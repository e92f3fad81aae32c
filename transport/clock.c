/* SPDX-License-Identifier: MIT */
/*
 * The producer's timestamp clock (clock.h): calibration and anchors.
 *
 * With an invariant TSC, CLOCK_MONOTONIC is, over a millisecond, a linear
 * map of the TSC (exactly so with clocksource "tsc", whose slope NTP
 * adjusts; through the hypervisor's scaling with kvm-clock). We keep our
 * own copy of that map: an
 * anchor pair renewed every millisecond (so an offset error cannot grow),
 * and a slope measured over a second or more (so the jitter of one pair,
 * ~10-20 ns, becomes parts per billion). Between renewals the error is the
 * slope error times at most 1 ms: a few nanoseconds after the first
 * second, ~10 ns before it. Values never go back within a stream.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "clock.h"

/* A pair wider than this (in ns) was interrupted: not used as an anchor. */
#define PAIR_MAX_NS 1000ull
/* The process's first slope is measured over this long. */
#define FIRST_SLOPE_NS 2000000ull
/* A new slope this far off the last one means the TSC cannot be trusted
 * (the kernel switched clocksource, the VM migrated): use clock_gettime(). */
#define SLOPE_JUMP_DIV 100

struct clock_pair {
	uint64_t tsc;
	uint64_t ns;
	uint64_t width; /* ticks between the two TSC reads around the clock read */
};

uint64_t evs_monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#if defined(__x86_64__) || defined(__i386__)
#define HAVE_TSC true
/* lfence before: earlier loads are done; after: the clock read that
 * follows does not start early */
#define tsc_fence() __builtin_ia32_lfence()
#else
#define HAVE_TSC false
#define tsc_fence() barrier()
#endif

static uint64_t tsc_ordered(void)
{
	uint64_t t;

	tsc_fence();
	t = evs_tsc();
	tsc_fence();
	return t;
}

/* The tightest of a few (TSC, CLOCK_MONOTONIC) pairs: the clock read sits
 * between two TSC reads, and the midpoint stands for it. */
static struct clock_pair pair_read(void)
{
	struct clock_pair best = { .width = UINT64_MAX };

	for (int i = 0; i < 4; i++) {
		uint64_t t1 = tsc_ordered();
		uint64_t ns = evs_monotonic_ns();
		uint64_t t2 = tsc_ordered();

		if (t2 - t1 < best.width) {
			best.width = t2 - t1;
			best.tsc = t1 + (t2 - t1) / 2;
			best.ns = ns;
		}
	}
	return best;
}

/* Nanoseconds per tick times 2^32, from two pairs; 0 when implausible
 * (a TSC below 10 MHz or above 100 GHz, or going back). */
static uint64_t slope_of(const struct clock_pair *a, const struct clock_pair *b)
{
	unsigned __int128 m;

	if (b->tsc <= a->tsc || b->ns <= a->ns)
		return 0;
	m = ((unsigned __int128)(b->ns - a->ns) << 32) / (b->tsc - a->tsc);
	if (m < (1ull << 32) / 100 || m > (1ull << 32) * 100)
		return 0;
	return (uint64_t)m;
}

/* The TSC ticks at one rate whatever the CPU's frequency and sleep state. */
static bool cpu_flags_have_stable_tsc(void)
{
	char line[8192];
	bool constant = false, nonstop = false;
	FILE *f = fopen("/proc/cpuinfo", "re");

	if (!f)
		return false;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "flags", 5) != 0)
			continue;
		constant = strstr(line, " constant_tsc") != NULL;
		nonstop = strstr(line, " nonstop_tsc") != NULL;
		break;
	}
	fclose(f);
	return constant && nonstop;
}

static struct {
	pthread_once_t once;
	bool usable;
	struct clock_pair start; /* the baseline every new stream's slope starts at */
	uint64_t mult;           /* the slope over FIRST_SLOPE_NS */
} proc = { .once = PTHREAD_ONCE_INIT };

static void proc_calibrate(void)
{
	struct timespec nap = { 0, FIRST_SLOPE_NS };
	struct clock_pair b;

	/* an invariant TSC is enough: CLOCK_MONOTONIC need not read it
	 * (kvm-clock scales it behind a hypervisor's page, hpet not at all);
	 * anchors every millisecond and a slope re-measured every second keep
	 * us on CLOCK_MONOTONIC, and a slope that jumps sends the stream back
	 * to clock_gettime() */
	if (!HAVE_TSC || !cpu_flags_have_stable_tsc())
		return;
	proc.start = pair_read();
	nanosleep(&nap, NULL);
	b = pair_read();
	proc.mult = slope_of(&proc.start, &b);
	proc.usable = proc.mult != 0;
}

static uint64_t ticks_of(uint64_t ns, uint64_t mult)
{
	return (uint64_t)(((unsigned __int128)ns << 32) / mult);
}

/* A pair is a good anchor when its clock read was not interrupted. */
static bool pair_is_tight(const struct clock_pair *p, uint64_t mult)
{
	return p->width <= ticks_of(PAIR_MAX_NS, mult);
}

static void clock_anchor(struct evs_clock *c, const struct clock_pair *p)
{
	c->tsc0 = p->tsc;
	c->ns0 = p->ns;
	/* d < span bounds d * mult by EVS_CLOCK_ANCHOR_NS * 2^32 < 2^64 */
	c->span = ticks_of(EVS_CLOCK_ANCHOR_NS, c->mult);
}

void evs_clock_init(struct evs_clock *c, enum evs_clock_mode mode)
{
	struct clock_pair p;
	uint64_t m;

	memset(c, 0, sizeof(*c)); /* span 0: clock_gettime() */
	if (mode != EVS_CLOCK_AUTO)
		return;
	pthread_once(&proc.once, proc_calibrate);
	if (!proc.usable)
		return;
	p = pair_read();
	/* the longer baseline from the process's first pair, when it is */
	m = p.ns - proc.start.ns >= FIRST_SLOPE_NS ? slope_of(&proc.start, &p) : 0;
	c->mult = m ? m : proc.mult;
	c->slope_tsc = p.tsc;
	c->slope_ns = p.ns;
	clock_anchor(c, &p);
	if (!pair_is_tight(&p, c->mult))
		c->tsc0 = p.tsc - c->span; /* not a good anchor: the first read renews it */
}

uint64_t evs_clock_slow(struct evs_clock *c)
{
	struct clock_pair p;
	uint64_t d;

	if (!evs_clock_uses_tsc(c))
		return evs_clock_hand_out(c, evs_monotonic_ns());
	p = pair_read();
	/* the clock value itself is right whatever the pair's width; only a
	 * tight pair becomes the anchor (else the next read tries again) */
	if (pair_is_tight(&p, c->mult)) {
		if (p.ns - c->slope_ns >= EVS_CLOCK_SLOPE_NS) {
			struct clock_pair from = { .tsc = c->slope_tsc, .ns = c->slope_ns };
			uint64_t m = slope_of(&from, &p);

			if (!m || m > c->mult + c->mult / SLOPE_JUMP_DIV ||
			    m < c->mult - c->mult / SLOPE_JUMP_DIV) {
				c->span = 0; /* clock_gettime() from now on */
				return evs_clock_hand_out(c, evs_monotonic_ns());
			}
			c->mult = m;
			c->slope_tsc = p.tsc;
			c->slope_ns = p.ns;
		}
		clock_anchor(c, &p);
		/* hand out the time of this return, not of the pair: reading the
		 * pairs took ~200 ns, which would count as the record's latency */
		d = evs_tsc() - c->tsc0;
		if (d < c->span)
			return evs_clock_hand_out(c, evs_clock_at(c, d));
	}
	return evs_clock_hand_out(c, evs_monotonic_ns());
}

/* SPDX-License-Identifier: MIT */
/* A paced producer, shared by evstream's and LTTng-UST's drop-free trials. */
#ifndef EVS_BENCH_PACE_H
#define EVS_BENCH_PACE_H

#include "bench.h"

/*
 * A producer paced at an offered rate: it emits bursts of PACE_BURST
 * events once that many are due, and reads the clock between bursts, as
 * often as the throughput runs do (once per 64 events). Smaller bursts
 * would read the clock for nearly every event near the producer's limit.
 */
#define PACE_BURST 64
struct pacer {
	uint64_t t0, t_end;
	double per_ns;  /* offered events per nanosecond; 0 as fast as it can */
	uint64_t sent;
};

static inline void pace_start(struct pacer *p, double rate, double secs)
{
	p->t0 = cli_now_ns();
	p->t_end = p->t0 + (uint64_t)(secs * 1e9);
	p->per_ns = rate / 1e9;
	p->sent = 0;
}

/* How many events to emit now (0: not yet), -1 when the window is over. */
static inline int pace_next(const struct pacer *p)
{
	uint64_t now = cli_now_ns();

	if (now >= p->t_end)
		return -1;
	if (p->per_ns == 0 || (double)(now - p->t0) * p->per_ns >= (double)(p->sent + PACE_BURST))
		return PACE_BURST;
	return 0;
}

/* What was offered, per second, over the whole window. */
static inline double pace_rate(const struct pacer *p)
{
	return (double)p->sent / ((double)(p->t_end - p->t0) / 1e9);
}

#endif

/* SPDX-License-Identifier: MIT */
/*
 * LTTng-UST as a peer in evs-bench: what lttng.c (the sections, the
 * evstream side and the report), lttng_peer.c (the process that traces)
 * and lttng_ctf.c (counting the events of a trace) share.
 */
#ifndef EVS_BENCH_LTTNG_H
#define EVS_BENCH_LTTNG_H

#include "bench.h"

/* Both sides carry the same 64-byte payloads. */
#define LT_PAYLOAD 64
/* The provider and event of bench/lttng_tp.h, as `lttng enable-event` names them. */
#define LT_EVENT "evs_bench:event64"

/* One run of the peer: a session created, started, emitted into, stopped,
 * read and destroyed. */
struct lt_req {
	int quit;      /* 1: stop the daemon, clean up and exit */
	int tput;      /* 1: as fast as it can, a warm-up of secs / 4 first, the whole
	                * trace kept and its events counted; 0: a drop-free trial */
	double rate;   /* trial: offered events/s; 0 as fast as it can */
	double secs;   /* measured (tput) or emitting (trial) seconds */
};

struct lt_res {
	int ok;
	char why[256];      /* !ok: why nothing was measured */
	uint64_t emitted;   /* tracepoint calls, warm-up included */
	uint64_t discarded; /* what the session daemon says its buffers discarded */
	uint64_t recorded;  /* events in the trace; counted only with tput */
	int counted;
	double ev_s;        /* tput: emitted per second while measured; trial: over the window */
	double run_s;       /* the whole run, session set-up and tear-down included */
};

/*
 * The peer: a process of its own (forked) that runs a private session
 * daemon and loads the tracepoint provider. 0, or -1 with why said in
 * why (also on later calls, without trying again).
 */
int lt_peer_open(char *why, size_t len);
int lt_peer_run(const struct lt_req *q, struct lt_res *r);
/* Stops the daemon and removes everything the peer made; safe to repeat. */
void lt_peer_close(void);
/* The channel every session gets, in words, and lttng-tools' version. */
const char *lt_channel_desc(void);
const char *lt_version(void);

/*
 * The events named `event` in the CTF trace under dir (every stream of
 * every buffer directory below it), read as LTTng-UST 2.13 writes them:
 * the layout is checked against the trace's own metadata, and every
 * packet must end exactly where its header says. 0, or -1 with why.
 */
int lt_ctf_count(const char *dir, const char *event, uint64_t *events, char *why, size_t len);

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

/* SPDX-License-Identifier: MIT */
/*
 * LTTng-UST as a peer in evs-bench: the process that traces
 * (lttng_peer.c), as lttng.c (the sections, the evstream side and the
 * report) drives it.
 */
#ifndef EVS_BENCH_LTTNG_PEER_H
#define EVS_BENCH_LTTNG_PEER_H

#include <stddef.h>
#include <stdint.h>

#include "lttng_event.h"

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

#endif

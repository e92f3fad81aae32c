/* SPDX-License-Identifier: MIT */
/*
 * Following a running producer's streams from one thread, as evs-dump and
 * evs-forward do: one consumer per core, each stream's eventfd and
 * producer socket, a signalfd (SIGINT, SIGTERM, SIGHUP) and two timerfds
 * (the status tick, the --seconds deadline) in one epoll set. The tool
 * takes records in turns of its own; this keeps which streams are
 * runnable, what a stop must still drain, how each stream ended, and says
 * so in the tool's words.
 */
#ifndef EVS_TOOLS_FOLLOW_H
#define EVS_TOOLS_FOLLOW_H

#include <stdbool.h>
#include <stdint.h>

#include "evstream/evstream.h"

#define FOLLOW_MAX_CORES 4096u

/* epoll tokens: the tool's own descriptors take FOLLOW_TOK_USER to
 * FOLLOW_TOK_STREAM - 1 */
enum {
	FOLLOW_TOK_SIGNAL = 1,
	FOLLOW_TOK_TICK,
	FOLLOW_TOK_DEADLINE,
	FOLLOW_TOK_USER = 8,
	FOLLOW_TOK_STREAM = 16, /* 16 + 2i: stream i's eventfd; + 1: its producer socket */
};

struct follow_stream {
	unsigned int core;
	struct evs_consumer *c;
	int hup_fd;          /* producer socket, -1 once it hung up (or none) */
	bool runnable;       /* records may be pending: not asleep in epoll */
	bool done;           /* ended (drained, or broken) */
	bool died;           /* ended because its producer died */
	bool broken;         /* the ring was corrupt: the stream was given up */
	uint64_t drain_left; /* when stopping: records still to take */
};

struct follow {
	/* set before follow_open() */
	const char *name;    /* the producer */
	const char *doing;   /* "dumping": what the tool does with records */
	const char *done;    /* "dumped" */
	const char *took;    /* "drained": what became of what was committed */
	void (*clear_status)(void *ctx); /* before anything is said */
	void *ctx;
	/* state */
	struct follow_stream *s; /* FOLLOW_MAX_CORES of them, n used */
	unsigned int n, live;
	int ep, sfd, tick_fd, deadline_fd;
	bool draining;       /* stop asked: take what is in the rings, then end */
	bool stop_now;       /* asked twice: end without draining */
	int signals;
};

/* "0,2-3" into set[FOLLOW_MAX_CORES]: digits, commas and ranges only, not
 * empty. 0, or -EINVAL / -ERANGE after saying why (naming the core). */
int follow_parse_cores(const char *arg, unsigned char *set);

/* SIGINT, SIGTERM and SIGHUP blocked (before any thread starts: they then
 * reach only the signalfd), SIGPIPE ignored, the descriptors and the
 * epoll set made. 0, or -errno after saying so. */
int follow_open(struct follow *fl);

/* One of the tool's descriptors in the set, readable -> tok (below
 * FOLLOW_TOK_STREAM: -EINVAL otherwise). 0 or -errno. */
int follow_add_fd(struct follow *fl, int fd, uint64_t tok);

/* Connects to the producer's cores (all, or those in set; the first, or
 * each named one, waited for up to wait_s), calling on_stream for each.
 * A producer that ends while its cores are being connected leaves the
 * ones connected to be followed. 0, or nonzero after saying why (on_stream
 * says why it refused a stream). */
int follow_connect(struct follow *fl, const unsigned char *set, bool all, double wait_s,
		   int (*on_stream)(void *ctx, struct follow_stream *s), void *ctx);

/* The status tick every tick_ns, and the deadline after seconds (0: none). */
int follow_arm(struct follow *fl, int64_t tick_ns, double seconds);

/* How many records of s may be taken now, at most max: fewer while a stop
 * drains what the ring held when it was asked; 0 when that is done (s is
 * then no longer runnable). */
uint64_t follow_quota(struct follow *fl, struct follow_stream *s, uint64_t max);

/* n records of s were taken. */
void follow_took(struct follow *fl, struct follow_stream *s, uint64_t n);

/* The ring of s was empty. true: records came meanwhile, look again;
 * false: s sleeps until its eventfd, its drain is done, or it ended (its
 * producer closed or died, said by follow_end()). */
bool follow_empty(struct follow *fl, struct follow_stream *s);

/* s ended: err -EPIPE (drained, and closed, or its producer died), or
 * anything else (corrupt: said, in the library's words). */
void follow_end(struct follow *fl, struct follow_stream *s, int err);

/* Stop asked: take what the rings hold now, not what arrives after. */
void follow_start_draining(struct follow *fl);

/* Every stream still followed has taken what it must. */
bool follow_drained(const struct follow *fl);

/* Waits up to timeout_ms (-1: until something comes) and handles what
 * came: signals and the deadline start the drain (a second signal sets
 * stop_now), a stream's eventfd or its producer's hang-up makes it
 * runnable. The tick (FOLLOW_TOK_TICK) and the tool's descriptors go to
 * on_token. How many events came, or -errno. */
int follow_poll(struct follow *fl, int timeout_ms, void (*on_token)(void *ctx, uint64_t tok), void *ctx);

/* Reads what made fd readable (a timerfd's count, a pipe's bytes). */
void follow_ack(int fd);

/* At the end: says the producer died, or (when say_closed) that it
 * closed every stream, with what was taken. 3 when it died, else 0. */
int follow_report_end(const struct follow *fl, bool say_closed);

/* A stream was given up as corrupt. */
bool follow_any_broken(const struct follow *fl);

/* Lets go of every stream at once (its consumer freed: the producer sees
 * it leave, and what its ring holds waits for the next consumer); how each
 * ended (done, died, broken) is kept for follow_report_end(). */
void follow_detach(struct follow *fl);

/* Frees the consumers (those not detached), closes the descriptors. */
void follow_close(struct follow *fl);

#endif

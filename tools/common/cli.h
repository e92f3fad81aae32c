/* SPDX-License-Identifier: MIT */
/*
 * What the command-line tools share: option values parsed strictly (the
 * whole string, range checked) with an error that names the option, the
 * value and what is allowed; the monotonic clock; connecting to a producer
 * that may not be there yet, and waiting for consumers that may not be.
 * Header only: each tool is built from a few sources, and an unused static
 * inline costs nothing.
 */
#ifndef EVS_TOOLS_CLI_H
#define EVS_TOOLS_CLI_H

#include <errno.h>
#include <math.h>
#include <poll.h>
/* not transport/atomics.h: that would put transport/ on the include
 * path of every program that includes this (PROG_CFLAGS: the tools, the
 * demo, the soak), internals and all */
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "evstream/evstream.h"

#define CLI_SIZE 1u          /* K, M, G suffixes (powers of 1024) allowed */
#define CLI_SECONDS_MAX 1e8  /* about three years; keeps nanoseconds in an int64 */
/* The shortest "stop after S seconds": a limit, never 0 (which would read
 * as no limit at all). */
#define CLI_SECONDS_MIN 0.001

static inline void cli_u64_allowed(const char *opt, const char *s, const char *why,
				   uint64_t min, uint64_t max, unsigned int flags)
{
	const char *what = flags & CLI_SIZE ? "a size in bytes" : "a whole number";
	const char *sfx = flags & CLI_SIZE ? " (K, M, G suffixes: 8M is 8 MiB)" : "";

	if (max == UINT64_MAX)
		fprintf(stderr, "%s: %s '%s' is %s; allowed is %s from %llu up%s\n",
			program_invocation_short_name, opt, s, why, what,
			(unsigned long long)min, sfx);
	else
		fprintf(stderr, "%s: %s '%s' is %s; allowed is %s from %llu to %llu%s\n",
			program_invocation_short_name, opt, s, why, what,
			(unsigned long long)min, (unsigned long long)max, sfx);
}

/*
 * The value of option opt (named in the message, e.g. "--ring"): decimal
 * digits, with CLI_SIZE a K, M or G suffix (optionally KiB, KB), nothing
 * else; min <= value <= max. 0, or -EINVAL / -ERANGE after saying why.
 */
static inline int cli_parse_u64(const char *opt, const char *s, uint64_t min, uint64_t max,
				unsigned int flags, uint64_t *out)
{
	unsigned long long v;
	unsigned int shift = 0;
	char *end;

	/* strtoull would take leading blanks, a sign, and negate "-1" */
	if (!s || *s < '0' || *s > '9')
		goto bad;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno == ERANGE)
		goto range;
	if (*end && (flags & CLI_SIZE)) {
		switch (*end) {
		case 'k': case 'K': shift = 10; break;
		case 'm': case 'M': shift = 20; break;
		case 'g': case 'G': shift = 30; break;
		default: goto bad;
		}
		end++;
		if (*end == 'i')
			end++;
		if (*end == 'B' || *end == 'b')
			end++;
	}
	if (*end)
		goto bad;
	if (v > (UINT64_MAX >> shift))
		goto range;
	v <<= shift;
	if (v < min || v > max)
		goto range;
	*out = v;
	return 0;
bad:
	cli_u64_allowed(opt, s, flags & CLI_SIZE ? "not a size" : "not a whole number", min, max, flags);
	return -EINVAL;
range:
	cli_u64_allowed(opt, s, "out of range", min, max, flags);
	return -ERANGE;
}

/* A decimal number (e.g. seconds, a rate; 1.5, .5, 2e3) from min to max;
 * unit names it in the message ("seconds"). 0, or -EINVAL / -ERANGE after
 * saying why. */
static inline int cli_parse_double(const char *opt, const char *s, double min, double max,
				   const char *unit, double *out)
{
	const char *p = s && *s == '-' ? s + 1 : s, *why = "not a number";
	char *end;
	double v;
	int err = -EINVAL;

	/* digits first: strtod would also take blanks, "inf" and "nan"; and
	 * decimal only: it would take hexadecimal too ("0x10" is 16) */
	if (p && (*p == '.' || (*p >= '0' && *p <= '9')) && !p[strspn(p, "0123456789.eE+-")]) {
		errno = 0;
		v = strtod(s, &end);
		if (end != s && !*end && !isnan(v)) {
			if (errno != ERANGE && v >= min && v <= max) {
				*out = v;
				return 0;
			}
			why = "out of range";
			err = -ERANGE;
		}
	}
	fprintf(stderr, "%s: %s '%s' is %s; allowed is a number of %s from %.15g to %.15g\n",
		program_invocation_short_name, opt, s ? s : "", why, unit, min, max);
	return err;
}

static inline uint64_t cli_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* How long one connect may wait for a producer that does not answer when
 * something may ask to stop: the longest a signal waits to be seen. */
#define CLI_CONNECT_SLICE_MS 200
/* How long a producer that does not answer is tried at least (the
 * library's own default deadline). */
#define CLI_CONNECT_ANSWER_S 2.0

/*
 * Connect to stream core of producer name, trying again for up to wait_s
 * seconds while there is no such producer (ENOENT) and, with retry_busy,
 * while another consumer still holds the stream (EBUSY). A producer that
 * does not answer (ETIMEDOUT: stopped, or its queue full) is tried for
 * wait_s too, and at least CLI_CONNECT_ANSWER_S. With a stop_fd (e.g. a
 * signalfd; -1 for none), each try waits at most CLI_CONNECT_SLICE_MS and
 * stop_fd is polled between tries: readable, it gives up with EINTR. NULL
 * and errno as evs_consumer__connect() when it gives up.
 */
static inline struct evs_consumer *cli_connect_or_stop(const char *name, unsigned int core,
						       double wait_s, bool retry_busy, int stop_fd)
{
	EVS_OPTS(evs_consumer_opts, opts, .timeout_ms = stop_fd >= 0 ? CLI_CONNECT_SLICE_MS : 0);
	uint64_t start = cli_now_ns();
	uint64_t deadline = start + (uint64_t)(wait_s * 1e9);
	uint64_t answer_deadline = start + (uint64_t)(fmax(wait_s, CLI_CONNECT_ANSWER_S) * 1e9);
	bool timed_out = false;
	int pause_ms = 1;

	for (;;) {
		struct evs_consumer *c = evs_consumer__connect(name, core, &opts);
		struct pollfd pfd = { .fd = stop_fd, .events = POLLIN };
		uint64_t now = cli_now_ns();
		bool again;

		if (c)
			return c;
		/* after a try that gave up waiting, the stream may still be
		 * claimed by it until the producer sees it gone */
		again = errno == ENOENT || ((retry_busy || timed_out) && errno == EBUSY);
		if (errno == ETIMEDOUT) {
			timed_out = true;
			if (now < answer_deadline) {
				if (poll(&pfd, 1, 0) > 0) {
					errno = EINTR;
					return NULL;
				}
				continue;
			}
		}
		if (!again || now >= deadline)
			return NULL;
		/* a negative fd is ignored: a plain sleep */
		if (poll(&pfd, 1, pause_ms) > 0) {
			errno = EINTR;
			return NULL;
		}
		/* soon at first (a killed consumer's stream is free again
		 * within milliseconds), then every 20 ms */
		if (pause_ms < 20)
			pause_ms = pause_ms * 2 < 20 ? pause_ms * 2 : 20;
	}
}

/*
 * Wait up to secs seconds until each of the first ncores streams of p has
 * a consumer (a producer keeps events only from then on), or until *stop
 * (when given) is set. 0 when all have one; -ETIMEDOUT, with how many do
 * in *connected, or -EINTR when stopped.
 */
static inline int cli_wait_consumers(struct evs_producer *p, unsigned int ncores, double secs,
				     atomic_int *stop, unsigned int *connected)
{
	uint64_t deadline = cli_now_ns() + (uint64_t)(secs * 1e9);

	/* pairs with the atomic_store(&stop)s of on_signal() and main()
	 * (demo/evs-demo.c): a flag, nothing is read through it, so the
	 * seq_cst of atomic_load() is more than it needs (a plain load on
	 * x86) */
	while (!stop || !atomic_load(stop)) {
		unsigned int n = 0;

		for (unsigned int i = 0; i < ncores; i++) {
			struct evs_stream_stats st = { .sz = sizeof(st) };

			if (!evs_producer__stats(p, i, &st) && st.connected)
				n++;
		}
		*connected = n;
		if (n == ncores)
			return 0;
		if (cli_now_ns() >= deadline)
			return -ETIMEDOUT;
		usleep(5000);
	}
	return -EINTR;
}

/* cli_connect_or_stop() with nothing to stop it. */
static inline struct evs_consumer *cli_connect(const char *name, unsigned int core, double wait_s,
					       bool retry_busy)
{
	return cli_connect_or_stop(name, core, wait_s, retry_busy, -1);
}

#endif

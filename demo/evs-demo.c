/* SPDX-License-Identifier: MIT */
/*
 * evs-demo: a simulated accelerator runtime. A named producer with N logical
 * cores; one thread per core emits tensor-read events (realistic shapes and
 * dtypes, strided views among them) and plain debug prints at a set rate.
 * Contents are a function of (seed, core, sequence number), so
 * `evs-demo --verify DIR` can check a dump byte for byte.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "demo_gen.h"
#include "demo_verify.h"
#include "evstream/evstream.h"
#include "evstream/tensor.h"

struct demo {
	struct evs_producer *p;
	unsigned int ncores;
	int pattern;
	uint64_t seed;
	double rate;          /* events per second per core; 0: as fast as possible */
	uint64_t max_events;  /* per core; 0: no limit */
	double seconds;       /* 0: no limit */
	int64_t huge_at;      /* -1: never; else the seq on core 0 that is too big */
	int64_t burst_at;     /* -1: never; else core 1 emits flat out from this seq */
	uint64_t burst;       /* events in the burst */
	uint64_t ring_bytes;
};

struct worker {
	struct demo *d;
	unsigned int core;
	pthread_t thread;
	uint64_t emitted;
	int err;
};

/* Set by on_signal() and by main() when a thread cannot start; read by
 * the workers, sleep_until(), main()'s hold loop and cli_wait_consumers()
 * (tools/common/cli.h). A flag: nothing is read through it. */
static atomic_int stop;

static void on_signal(int sig)
{
	(void)sig;
	/* pairs with the atomic_load(&stop)s (see stop); lock-free, so
	 * allowed in a signal handler */
	atomic_store(&stop, 1);
}

static void sleep_until(uint64_t t)
{
	struct timespec ts = { (time_t)(t / 1000000000ull), (long)(t % 1000000000ull) };

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR && !atomic_load(&stop))
		;
}

/* A device print: no dtype, no data. */
static int emit_print(struct evs_producer *p, unsigned int core, const struct demo_event *e)
{
	struct evs_tensor t = { .prefix = e->prefix, .pipe = e->pipe };

	return evs_producer__emit_tensor(p, core, &t);
}

static int emit_huge(struct demo *d, unsigned int core)
{
	uint64_t shape[1] = { d->ring_bytes / 4 + 1024 };
	float *x = calloc(shape[0], sizeof(float));
	struct evs_tensor t = { .prefix = "huge =", .pipe = 1, .dtype = "float32", .ndim = 1,
				.shape = shape, .data = x };
	int err;

	if (!x)
		return -ENOMEM;
	err = evs_producer__emit_tensor(d->p, core, &t);
	free(x);
	return err;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct demo *d = w->d;
	uint64_t t0 = cli_now_ns(), end = d->seconds > 0 ? t0 + (uint64_t)(d->seconds * 1e9) : UINT64_MAX;
	size_t cap = 1 << 20;
	uint8_t *buf = malloc(cap);
	struct demo_event e;

	if (!buf) {
		w->err = -ENOMEM;
		return NULL;
	}
	uint64_t paced = 0;
	bool burst_core = w->core == (d->ncores > 1 ? 1u : 0u);

	for (uint64_t k = 0; !atomic_load(&stop) && (!d->max_events || k < d->max_events); k++) {
		int64_t strides[8];
		uint64_t now = cli_now_ns(); /* one clock read per event */
		int err;

		/* a print storm: the ring fills and the rest is dropped, counted */
		if (burst_core && d->burst_at >= 0 && k >= (uint64_t)d->burst_at &&
		    k < (uint64_t)d->burst_at + d->burst) {
			/* not paced */
		} else if (d->rate > 0) {
			uint64_t due = t0 + (uint64_t)((double)paced++ * 1e9 / d->rate);

			if (due > now) {
				sleep_until(due);
				now = due;
			}
		}
		if (now >= end)
			break;
		if (w->core == 0 && (int64_t)k == d->huge_at) {
			err = emit_huge(d, w->core);
		} else {
			demo_event_make(d->pattern, d->seed, w->core, k, &e);
			if (e.is_print) {
				err = emit_print(d->p, w->core, &e);
			} else {
				size_t need = demo_view_size(&e);
				struct evs_tensor t = { .prefix = e.prefix, .pipe = e.pipe, .dtype = e.dtype,
							.ndim = e.ndim, .shape = e.shape };

				if (need > cap) {
					uint8_t *nb = realloc(buf, need);

					if (!nb) {
						w->err = -ENOMEM;
						break;
					}
					buf = nb;
					cap = need;
				}
				t.data = demo_view_make(&e, buf, strides);
				t.strides = e.view == DEMO_CONTIG ? NULL : strides;
				err = evs_producer__emit_tensor(d->p, w->core, &t);
			}
		}
		w->emitted++;
		/* a drop (ring full, too big, no consumer) is counted by the
		 * stream, and shown from its stats at the end */
		if (err && err != -ENOBUFS && err != -EMSGSIZE && err != -ENOTCONN) {
			fprintf(stderr, "evs-demo: core %u: emit: %s\n", w->core, evs_strerror(err));
			w->err = err;
			break;
		}
	}
	evs_producer__flush(d->p, w->core);
	free(buf);
	return NULL;
}

static void usage(FILE *f)
{
	fprintf(f,
"usage: evs-demo [options]              run the simulated runtime\n"
"       evs-demo --verify DIR [options]  check a dump of it\n"
"  -N, --name NAME        producer name (default evs-demo)\n"
"  -c, --cores N          logical cores, one producer thread each (default 2)\n"
"  -r, --rate R           events per second per core (default 2000; 0: flat out)\n"
"  -t, --seconds S        stop after S seconds (default: run until SIGINT/SIGTERM)\n"
"  -n, --events N         stop after N events per core\n"
"  -P, --pattern P        mixed (realistic, default) or all (every dtype, ndim 0..8,\n"
"                         strided views, empty tensors)\n"
"  -s, --seed S           content seed (default 1)\n"
"      --ring BYTES       ring size per core, K, M, G suffixes (default: the library's)\n"
"      --huge-at K        event K of core 0 is a tensor larger than the ring\n"
"      --burst-at K       from event K, core 1 (core 0 if alone) emits --burst N\n"
"      --burst N          events unpaced: a print storm that overruns the ring\n"
"  -w, --wait-consumers S wait up to S seconds for a consumer on every core before\n"
"                         emitting (default 10; 0: start at once)\n"
"      --hold             when done emitting, keep the streams open until\n"
"                         SIGINT/SIGTERM (the consumers see no end before)\n"
"      --verify DIR       check DIR/index.jsonl and its .npy files against what\n"
"                         this generator emits (same --pattern and --seed)\n"
"      --allow-missing    with --verify: tensors indexed without a file are not errors\n");
}

static int wait_consumers(struct demo *d, double secs)
{
	unsigned int n = 0;
	int err = cli_wait_consumers(d->p, d->ncores, secs, &stop, &n);

	if (err == -ETIMEDOUT)
		fprintf(stderr, "evs-demo: only %u of %u cores have a consumer after %.0f s; "
			"starting anyway (the others drop events as no_consumer)\n", n, d->ncores, secs);
	return err;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "name", required_argument, NULL, 'N' },
		{ "cores", required_argument, NULL, 'c' },
		{ "rate", required_argument, NULL, 'r' },
		{ "seconds", required_argument, NULL, 't' },
		{ "events", required_argument, NULL, 'n' },
		{ "pattern", required_argument, NULL, 'P' },
		{ "seed", required_argument, NULL, 's' },
		{ "ring", required_argument, NULL, 'R' },
		{ "huge-at", required_argument, NULL, 'H' },
		{ "burst-at", required_argument, NULL, 'B' },
		{ "burst", required_argument, NULL, 'b' },
		{ "wait-consumers", required_argument, NULL, 'w' },
		{ "verify", required_argument, NULL, 'V' },
		{ "allow-missing", no_argument, NULL, 'A' },
		{ "hold", no_argument, NULL, 'O' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct demo d = { .ncores = 2, .pattern = DEMO_MIXED, .seed = 1, .rate = 2000, .huge_at = -1,
			  .burst_at = -1 };
	const char *name = "evs-demo", *verify = NULL;
	double wait_s = 10;
	bool allow_missing = false, hold = false, burst_given = false;
	struct worker *w;
	struct sigaction sa = { .sa_handler = on_signal };
	uint64_t v;
	int opt, rc = 0;

	while ((opt = getopt_long(argc, argv, "N:c:r:t:n:P:s:w:h", opts, NULL)) != -1) {
		switch (opt) {
		case 'N': name = optarg; break;
		case 'c':
			if (cli_parse_u64("--cores", optarg, 1, 4096, 0, &v))
				return 2;
			d.ncores = (unsigned int)v;
			break;
		case 'r':
			if (cli_parse_double("--rate", optarg, 0, 1e9, "events per second", &d.rate))
				return 2;
			break;
		case 't':
			if (cli_parse_double("--seconds", optarg, CLI_SECONDS_MIN, CLI_SECONDS_MAX, "seconds", &d.seconds))
				return 2;
			break;
		case 'n':
			if (cli_parse_u64("--events", optarg, 1, UINT64_MAX, 0, &d.max_events))
				return 2;
			break;
		case 'P':
			d.pattern = demo_pattern_parse(optarg);
			if (d.pattern < 0) {
				fprintf(stderr, "evs-demo: --pattern '%s': use mixed or all\n", optarg);
				return 2;
			}
			break;
		case 's':
			if (cli_parse_u64("--seed", optarg, 0, UINT64_MAX, 0, &d.seed))
				return 2;
			break;
		case 'R':
			if (cli_parse_u64("--ring", optarg, 0, UINT64_MAX, CLI_SIZE, &d.ring_bytes))
				return 2;
			break;
		case 'H':
			if (cli_parse_u64("--huge-at", optarg, 0, INT64_MAX, 0, &v))
				return 2;
			d.huge_at = (int64_t)v;
			break;
		case 'B':
			if (cli_parse_u64("--burst-at", optarg, 0, INT64_MAX, 0, &v))
				return 2;
			d.burst_at = (int64_t)v;
			break;
		case 'b':
			if (cli_parse_u64("--burst", optarg, 0, UINT64_MAX, 0, &d.burst))
				return 2;
			burst_given = true;
			break;
		case 'w':
			if (cli_parse_double("--wait-consumers", optarg, 0, CLI_SECONDS_MAX, "seconds", &wait_s))
				return 2;
			break;
		case 'V': verify = optarg; break;
		case 'A': allow_missing = true; break;
		case 'O': hold = true; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "evs-demo: unexpected argument '%s': it takes options only\n", argv[optind]);
		usage(stderr);
		return 2;
	}
	/* each is nothing without the other: said, not ignored */
	if (burst_given != (d.burst_at >= 0)) {
		fprintf(stderr, "evs-demo: %s without %s: a burst is --burst-at K --burst N, both\n",
			burst_given ? "--burst" : "--burst-at", burst_given ? "--burst-at" : "--burst");
		return 2;
	}
	if (allow_missing && !verify) {
		fprintf(stderr, "evs-demo: --allow-missing is allowed only with --verify DIR\n");
		return 2;
	}
	if (verify)
		return demo_verify(verify, d.pattern, d.seed, allow_missing);

	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	/* stderr read by one who left (| head): the write fails, and the
	 * streams are still closed on the way out (as evs-dump, follow.c) */
	signal(SIGPIPE, SIG_IGN);
	{
		EVS_OPTS(evs_producer_opts, po, .ring_bytes = d.ring_bytes);

		d.p = evs_producer__new(name, d.ncores, &po);
	}
	if (!d.p) {
		fprintf(stderr, "evs-demo: cannot create producer '%s': %s\n", name,
			*evs_errmsg() ? evs_errmsg() : strerror(errno));
		return 2;
	}
	{
		struct evs_stream_stats st = { .sz = sizeof(st) };

		evs_producer__stats(d.p, 0, &st);
		d.ring_bytes = st.ring_bytes;
		fprintf(stderr, "evs-demo: producer '%s' up: %u cores, %.1f MiB ring each (%s pages), "
			"pattern %s, %s\n", name, d.ncores, (double)st.ring_bytes / (1 << 20),
			st.hugepages ? "huge" : "normal", d.pattern == DEMO_ALL ? "all" : "mixed",
			d.rate > 0 ? "paced" : "flat out");
	}
	if (wait_s > 0)
		wait_consumers(&d, wait_s);

	w = calloc(d.ncores, sizeof(*w));
	if (!w) {
		evs_producer__free(d.p);
		return 2;
	}
	for (unsigned int i = 0; i < d.ncores; i++) {
		w[i] = (struct worker){ .d = &d, .core = i };
		if (pthread_create(&w[i].thread, NULL, worker_main, &w[i])) {
			fprintf(stderr, "evs-demo: cannot start the thread of core %u\n", i);
			/* pairs with the atomic_load(&stop)s (see stop): the
			 * workers already started end */
			atomic_store(&stop, 1);
			d.ncores = i;
			rc = 2;
			break;
		}
	}
	for (unsigned int i = 0; i < d.ncores; i++) {
		struct evs_stream_stats st = { .sz = sizeof(st) };

		pthread_join(w[i].thread, NULL);
		if (w[i].err)
			rc = 1;
		evs_producer__stats(d.p, i, &st);
		fprintf(stderr, "evs-demo: core %u: %" PRIu64 " events emitted, %" PRIu64 " committed; dropped:",
			i, w[i].emitted, st.committed);
		for (int k = 0; k < EVS_DROP_CAUSE_COUNT; k++)
			fprintf(stderr, "%s %s %" PRIu64, k ? "," : "", evs_drop_cause_name(k),
				st.dropped_events[k]);
		fputc('\n', stderr);
	}
	if (hold) {
		fprintf(stderr, "evs-demo: done emitting; holding the streams open until SIGINT/SIGTERM\n");
		while (!atomic_load(&stop))
			usleep(10000);
	}
	/* closing marks every stream closed: consumers drain, then see the end */
	evs_producer__free(d.p);
	free(w);
	return rc;
}

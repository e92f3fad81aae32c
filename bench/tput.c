/* SPDX-License-Identifier: MIT */
/*
 * evstream throughput, producer on one CPU and consumer on the other. A
 * path is a producer call and a consumer call:
 *   producer  emit      evs_producer__emit() (what emit_tensor does: a copy)
 *             reserve   evs_producer__reserve() + commit(), zero-copy
 *             deferred32  reserve() + commit_deferred(), publish() every 32
 *   consumer  peek      evs_consumer__peek() + release(), spinning when empty
 *             consume   evs_consumer__consume(), spinning when empty
 *             nrt       nrt_debug_client_read_one_event(), poll() when empty
 *             wait      peek() + release(), evs_consumer__wait() when empty
 * Each path runs with timestamps on normal pages (the default), and a few
 * also on huge pages or without timestamps (options). Every path moves
 * the same bytes: the producer copies the payload from a hot source buffer
 * (into the ring directly for reserve, with evs__ring_copy() as emit
 * does), and the consumer reads it (read_one_event copies it out; peek and
 * consume touch every cache line in place).
 */
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "evstream/evstream.h"
#include "evstream-private/introspect.h"
#include "nrt/ndebug_stream.h"

enum prod { P_EMIT, P_RESERVE, P_DEFERRED };
enum cons { C_PEEK, C_CONSUME, C_NRT, C_WAIT };
static const char *const prod_names[] = { "emit", "reserve", "deferred32" };
static const char *const cons_names[] = { "peek", "consume", "nrt", "wait" };

/* Payloads up to this size are where the clock read weighs: the paths
 * without timestamps and the stamped bare ring run for them only (beyond,
 * the read is lost in the copy). */
#define CLOCK_WEIGHS_MAX_PAYLOAD 1024

/* P_DEFERRED: zero-copy records published in bursts of this many */
#define DEFERRED_BURST 32

struct tp {
	enum prod prod;
	enum cons cons;
	size_t size;
	const uint8_t *src;
	struct evs_producer *p;
	struct evs_consumer *c;
	int nrt_fd;
	uint64_t full_retries;
	/* written by the consumer on every event: on a line of its own, or
	 * the producer's reads of the fields above would bounce with it */
	uint64_t got __attribute__((aligned(128)));
	uint64_t empty;  /* reads that found the ring empty */
	struct run run;
};

static volatile uint64_t sink;

/* One event; false when it must stop (an error). */
static bool tp_emit_one(struct tp *t, uint64_t n, uint64_t *retries)
{
	void *d;
	int err;

	if (t->prod == P_EMIT) {
		while ((err = evs_producer__emit(t->p, 0, 1, t->src, t->size)) == -ENOBUFS) {
			(*retries)++;
			cpu_relax();
		}
		if (err)
			warn("emit: %s", evs_strerror(err));
		return !err;
	}
	while (!(d = evs_producer__reserve(t->p, 0, 1, t->size))) {
		if (errno != ENOBUFS) {
			warn("reserve: %s", strerror(errno));
			return false;
		}
		if (t->prod == P_DEFERRED)
			evs_producer__publish(t->p, 0);
		(*retries)++;
		cpu_relax();
	}
	evs__ring_copy(d, t->src, t->size);
	if (t->prod == P_RESERVE)
		return !evs_producer__commit(t->p, 0);
	evs_producer__commit_deferred(t->p, 0);
	if ((n + 1) % DEFERRED_BURST == 0)
		evs_producer__publish(t->p, 0);
	return true;
}

static void *tp_producer(void *arg)
{
	struct tp *t = arg;
	uint64_t n = 0, retries = 0; /* stored once: the consumer reads this struct */

	for (;;) {
		if (!tp_emit_one(t, n, &retries))
			break;
		n++;
		if ((n & 63) == 0 && run_tick(&t->run))
			break;
	}
	if (t->prod == P_DEFERRED)
		evs_producer__publish(t->p, 0);
	t->full_retries = retries;
	run_finish(&t->run, n);
	return NULL;
}

static bool tp_drained(struct tp *t)
{
	return run_drained(&t->run, t->got);
}

static int batch_cb(void *ctx, const struct evs_record *rec)
{
	(void)ctx;
	sink += touch(rec->data, rec->hdr.data_size);
	return 0;
}

/* Events read by one call of the consumer's path: > 0, 0 when the ring was
 * empty, < 0 on an error. */
static int tp_read(struct tp *t)
{
	struct evs_record rec;
	int err;

	switch (t->cons) {
	case C_NRT: {
		ndebug_stream_event_header_t h;
		void *pl;
		NRT_STATUS st = nrt_debug_client_read_one_event(t->nrt_fd, &h, &pl);

		if (st == NRT_SUCCESS) {
			free(pl);
			return 1;
		}
		if (st != NRT_QUEUE_EMPTY) {
			warn("read_one_event: status %d", (int)st);
			return -1;
		}
		return 0;
	}
	case C_CONSUME:
		/* bounded batches, so the consumer publishes and looks up */
		return evs_consumer__consume(t->c, batch_cb, NULL, 256);
	case C_PEEK:
	case C_WAIT:
		err = evs_consumer__peek(t->c, &rec);
		if (err == -EAGAIN)
			return 0;
		if (err)
			return err;
		sink += touch(rec.data, rec.hdr.data_size);
		evs_consumer__release(t->c);
		return 1;
	}
	return -1;
}

static void *tp_consumer(void *arg)
{
	struct tp *t = arg;

	for (;;) {
		int n = tp_read(t);

		if (n > 0) {
			t->got += (uint64_t)n;
			run_mark(&t->run, t->got);
			continue;
		}
		if (n < 0 || tp_drained(t))
			break;
		t->empty++;
		if (t->cons == C_NRT) {
			/* as the reference API's users do: sleep on the stream fd */
			struct pollfd pfd = { .fd = t->nrt_fd, .events = POLLIN };

			poll(&pfd, 1, 1);
		} else if (t->cons == C_WAIT) {
			/* sleep until the producer's next commit; the 1 ms bound
			 * only lets the drained check above run */
			evs_consumer__wait(t->c, 1);
		} else {
			cpu_relax();
		}
	}
	run_mark(&t->run, t->got);
	return NULL;
}

#define MAX_KEPT 64
static struct {
	char name[64];
	size_t payload;
	double x_pipe, x_memcpy, x_bare; /* paired ratios, see report_variant() */
} kept[MAX_KEPT];
static int nkept;

double tput_ratio(const char *variant, size_t payload, enum tput_base base)
{
	for (int i = 0; i < nkept; i++)
		if (!strcmp(kept[i].name, variant) && kept[i].payload == payload)
			return base == VS_MEMCPY ? kept[i].x_memcpy :
			       base == VS_BARE ? kept[i].x_bare : kept[i].x_pipe;
	return NAN;
}

struct variant {
	enum prod prod;
	enum cons cons;
	bool huge;
	bool no_ts;
};

/* As bench_prime(), through this path's consumer call. */
static void prime_ring(struct tp *t)
{
	uint64_t filled = 0, ring = bopt.ring_bytes;

	while (filled < 2 * ring) {
		int n = 0, got;

		while (evs_producer__emit(t->p, 0, 1, t->src, t->size) == 0)
			n++;
		filled += (uint64_t)n * (64 + ((t->size + 7) & ~(size_t)7));
		while ((got = tp_read(t)) > 0)
			;
		if (!n)
			break;
	}
}

/* -1 with why set when the variant cannot run here, else 0. */
static int tp_one(const struct variant *v, size_t size, const uint8_t *src, struct tput *out,
		  uint64_t *retries, uint64_t *ring_bytes, double *empty_per_event,
		  char *why, size_t whylen)
{
	EVS_OPTS(evs_producer_opts, po, .ring_bytes = bopt.ring_bytes,
		 .max_events = bopt.ring_bytes / 64,
		 .hugepages = v->huge ? EVS_HUGEPAGES_ON : EVS_HUGEPAGES_OFF,
		 .no_timestamps = v->no_ts);
	struct tp t = { .prod = v->prod, .cons = v->cons, .size = size, .src = src, .nrt_fd = -1 };
	struct evs_stream_stats st = { .sz = sizeof(st) };

	memset(out, 0, sizeof(*out));
	t.p = evs_producer__new(NULL, 1, &po);
	if (!t.p) {
		snprintf(why, whylen, "producer: %s", evs_errmsg()[0] ? evs_errmsg() : strerror(errno));
		return -1;
	}
	if (v->cons == C_NRT) {
		NRT_STATUS st = nrt_debug_client_connect(0, &t.nrt_fd);

		if (st != NRT_SUCCESS) {
			snprintf(why, whylen, "nrt_debug_client_connect: status %d", (int)st);
			evs_producer__free(t.p);
			return -1;
		}
	} else {
		t.c = evs_consumer__connect(NULL, 0, NULL);
		if (!t.c) {
			snprintf(why, whylen, "consumer: %s", evs_errmsg()[0] ? evs_errmsg() : strerror(errno));
			evs_producer__free(t.p);
			return -1;
		}
	}
	prime_ring(&t);
	run_start(&t.run);
	bench_pair(tp_producer, &t, tp_consumer, &t);
	evs_producer__stats(t.p, 0, &st);
	*ring_bytes = st.ring_bytes;
	if (v->cons == C_NRT)
		nrt_debug_client_connect_close(t.nrt_fd);
	else
		evs_consumer__free(t.c);
	evs_producer__free(t.p);
	*out = tput_of(run_rate(&t.run), size);
	*retries = t.full_retries;
	*empty_per_event = t.got ? (double)t.empty / (double)t.got : NAN;
	return 0;
}

/* Median over the rounds of a[r] / b[r]: each ratio from one round, where
 * both sides ran next to each other. */
static double paired_ratio(const double *a, const double *b, int n)
{
	double q[MAX_ROUNDS];

	for (int r = 0; r < n; r++)
		q[r] = ratio(a[r], b[r]);
	return median(q, n);
}

/*
 * The paths that answer a question. The first four are what a runtime and
 * a reader get by default, timestamps on (docs/benchmarks.md leads with
 * them); the rest are options: huge pages, no timestamps, deferred
 * publication; and a consumer that sleeps when empty.
 */
static const struct variant variants[] = {
	{ P_EMIT, C_PEEK, false, false },     { P_RESERVE, C_PEEK, false, false },
	{ P_EMIT, C_CONSUME, false, false },  { P_EMIT, C_NRT, false, false },
	{ P_RESERVE, C_PEEK, true, false },   { P_RESERVE, C_PEEK, false, true },
	{ P_DEFERRED, C_PEEK, false, false }, { P_EMIT, C_WAIT, false, false },
};
#define NVARIANTS (sizeof(variants) / sizeof(variants[0]))

/* Everything measured for one payload size, round by round. */
struct payload_rounds {
	double memcpy_ev[MAX_ROUNDS], pipe[MAX_ROUNDS], sock[MAX_ROUNDS], bare[MAX_ROUNDS];
	/* the bare ring stamped and paced (bare.c), up to
	 * CLOCK_WEIGHS_MAX_PAYLOAD */
	double stamped[MAX_ROUNDS];
	double ring_copy_ev[MAX_ROUNDS]; /* evs__ring_copy() alone; payloads that it streams */
	double ev[NVARIANTS][MAX_ROUNDS];
	double empty[NVARIANTS][MAX_ROUNDS]; /* consumer found the ring empty, per event */
	bool run[NVARIANTS];
	char skipped[NVARIANTS][128];
	uint64_t retries[NVARIANTS], ring[NVARIANTS];
};

static void variant_name(const struct variant *v, char *name, size_t n)
{
	snprintf(name, n, "%s+%s%s%s", prod_names[v->prod], cons_names[v->cons],
		 v->huge ? "/huge" : "", v->no_ts ? "/no-ts" : "");
}

static bool variant_wanted(const struct variant *v, size_t size)
{
	char name[64];

	variant_name(v, name, sizeof(name));
	if (v->no_ts && size > CLOCK_WEIGHS_MAX_PAYLOAD)
		return false;
	return !bopt.variant || strstr(name, bopt.variant);
}

/* One round: the limit and the alternatives, then every evstream path,
 * back to back, so that a ratio compares figures taken a second apart. */
static void measure_round(struct payload_rounds *pr, int r, size_t size, const uint8_t *src,
			  bool *huge_skipped)
{
	pr->memcpy_ev[r] = size ? limit_memcpy(size).ev_s : 0;
	pr->ring_copy_ev[r] = size >= EVS__RING_COPY_STREAMING ? limit_ring_copy(size).ev_s : NAN;
	pr->pipe[r] = alt_measure(false, size, src).ev_s;
	pr->sock[r] = alt_measure(true, size, src).ev_s;
	pr->bare[r] = bare_measure(size, src, false).ev_s;
	pr->stamped[r] = size <= CLOCK_WEIGHS_MAX_PAYLOAD ? bare_measure(size, src, true).ev_s : NAN;
	for (size_t k = 0; k < NVARIANTS; k++) {
		const struct variant *v = &variants[k];
		struct tput t;
		uint64_t retries = 0, ring = 0;
		double empty = NAN;

		if (!variant_wanted(v, size) || pr->skipped[k][0])
			continue;
		/* skipped as a whole, earlier rounds too: a median needs them all */
		if (v->huge && *huge_skipped) {
			snprintf(pr->skipped[k], sizeof(pr->skipped[k]),
				 "huge pages could not be had for an earlier variant");
			continue;
		}
		if (tp_one(v, size, src, &t, &retries, &ring, &empty, pr->skipped[k],
			   sizeof(pr->skipped[k])) < 0) {
			*huge_skipped |= v->huge;
			continue;
		}
		pr->run[k] = true;
		pr->ev[k][r] = t.ev_s;
		pr->empty[k][r] = empty;
		pr->retries[k] += retries;
		pr->ring[k] = ring;
	}
}

/* The medians over the rounds of what one payload size's variants are
 * compared with. */
struct payload_limits {
	struct tput memcpy, pipe, sock, bare, stamped, ring_copy;
};

static void report_variant(const struct payload_rounds *pr, size_t k, int rounds,
			   const struct payload_limits *pl, size_t size, FILE *dat)
{
	const struct variant *v = &variants[k];
	char name[64];
	double ev = median(pr->ev[k], rounds);
	struct tput t = tput_of(ev, size);
	double xp = paired_ratio(pr->ev[k], pr->pipe, rounds);
	double xs = paired_ratio(pr->ev[k], pr->sock, rounds);
	double xb = paired_ratio(pr->ev[k], pr->bare, rounds);
	double xst = paired_ratio(pr->ev[k], pr->stamped, rounds);
	/* same bytes per event on both sides: the events/s ratio is the GB/s one */
	double xm = size ? paired_ratio(pr->ev[k], pr->memcpy_ev, rounds) : NAN;
	double xc = paired_ratio(pr->ev[k], pr->ring_copy_ev, rounds);
	double q[MAX_ROUNDS], lo, hi;

	variant_name(v, name, sizeof(name));
	for (int r = 0; r < rounds; r++)
		q[r] = ratio(pr->ev[k][r], pr->pipe[r]);
	min_max(q, rounds, &lo, &hi);
	if (nkept < MAX_KEPT) {
		snprintf(kept[nkept].name, sizeof(kept[nkept].name), "%s", name);
		kept[nkept].payload = size;
		kept[nkept].x_pipe = xp;
		kept[nkept].x_bare = xb;
		kept[nkept++].x_memcpy = xm;
	}
	say("  %-24s %8zu %13.0f %8.3f %9.2f %9.2f %9.2f %9.2f\n", name, size, t.ev_s, t.gb_s, xp, xs,
	    xb, xm);
	rep_obj_begin();
	rep_str("variant", name);
	rep_str("producer", prod_names[v->prod]);
	rep_str("consumer", cons_names[v->cons]);
	rep_int("default", !v->huge && !v->no_ts && v->prod != P_DEFERRED);
	rep_str("pages", v->huge ? "huge" : "normal");
	rep_int("timestamps", !v->no_ts);
	rep_int("payload", size);
	rep_int("ring_bytes", pr->ring[k]);
	rep_int("rounds", (uint64_t)rounds);
	rep_num("events_s", t.ev_s);
	rep_num("gb_s", t.gb_s);
	rep_num("x_pipe", xp);
	rep_num("x_pipe_min", lo);
	rep_num("x_pipe_max", hi);
	rep_num("x_socket", xs);
	rep_num("x_bare_ring", xb);
	/* x the bare ring stamped and paced like the default path: what the
	 * library's own work costs on two CPUs, the clock read paid */
	rep_num("x_stamped_ring", xst);
	rep_num("x_memcpy", xm);
	/* from EVS__RING_COPY_STREAMING on, the producer's copy streams past its
	 * caches and can beat memcpy: this says by how much of its own limit */
	rep_num("x_ring_copy", xc);
	/* the figures the ratios divide by, on every row so that a row reads
	 * alone (bench/table.py takes them from the rows) */
	rep_num("memcpy_gb_s", size ? pl->memcpy.gb_s : NAN);
	rep_num("ring_copy_gb_s", pl->ring_copy.gb_s);
	rep_num("pipe_events_s", pl->pipe.ev_s);
	rep_num("socket_events_s", pl->sock.ev_s);
	rep_num("bare_ring_events_s", pl->bare.ev_s);
	rep_num("stamped_ring_events_s", pl->stamped.ev_s);
	rep_int("ring_full_retries", pr->retries[k]);
	/* how closely the consumer follows: near 0 it reads from behind, near
	 * or above 1 it waits on every record (docs/benchmarks.md) */
	rep_num("consumer_empty_per_event", median(pr->empty[k], rounds));
	rep_obj_end();
	if (dat)
		fprintf(dat, "%s %zu %.6g %.6g %.6g %.6g %.6g\n", name, size, t.ev_s, t.gb_s,
			pl->memcpy.gb_s, pl->pipe.gb_s, pl->sock.gb_s);
}

static void report_limit(const char *name, const struct tput *t, size_t size, const char *col)
{
	say("%-26s %8zu %13.0f %8.3f %9s %9s %9s %9s\n", name, size, t->ev_s, t->gb_s,
	    !strcmp(col, "pipe") ? "1.00" : "", !strcmp(col, "socket") ? "1.00" : "",
	    !strcmp(col, "bare") ? "1.00" : "", !strcmp(col, "memcpy") ? "1.00" : "");
}

void tput_run(void)
{
	bool huge_skipped = false;
	int rounds = bopt.rounds;
	uint8_t *src = malloc(4 << 20);
	struct payload_rounds *pr = malloc(sizeof(*pr));
	FILE *dat = plot_open("throughput.dat",
			      "# variant payload events_s gb_s memcpy_gb_s pipe_gb_s socket_gb_s");

	if (!src || !pr) {
		warn("out of memory");
		exit(1);
	}
	memset(src, 0xa5, 4 << 20);
	say("\n== throughput (ring %llu MiB, %d rounds). Each round measures the limits and the\n"
	    "   alternatives, then every evstream path, back to back; a figure is the median over\n"
	    "   the rounds, a ratio the median of the ratios within each round\n",
	    (unsigned long long)(bopt.ring_bytes >> 20), rounds);
	rep_section("throughput");
	for (int i = 0; i < NPAYLOADS; i++) {
		size_t size = bench_payloads[i];
		struct payload_limits pl;

		if (bopt.payload >= 0 && (size_t)bopt.payload != size)
			continue;
		memset(pr, 0, sizeof(*pr));
		for (int r = 0; r < rounds; r++) {
			progress("throughput %zu B: round %d of %d", size, r + 1, rounds);
			measure_round(pr, r, size, src, &huge_skipped);
		}
		progress_done();
		pl.memcpy = tput_of(median(pr->memcpy_ev, rounds), size);
		pl.ring_copy = tput_of(median(pr->ring_copy_ev, rounds), size);
		pl.pipe = tput_of(median(pr->pipe, rounds), size);
		pl.sock = tput_of(median(pr->sock, rounds), size);
		pl.bare = tput_of(median(pr->bare, rounds), size);
		pl.stamped = tput_of(median(pr->stamped, rounds), size);
		say("\n%-26s %8s %13s %8s %9s %9s %9s %9s\n", "payload / path/pages", "bytes", "events/s",
		    "GB/s", "x pipe", "x socket", "x bare", "x memcpy");
		if (size)
			report_limit("  limit: memcpy", &pl.memcpy, size, "memcpy");
		if (size >= EVS__RING_COPY_STREAMING)
			say("  %-24s %8zu %13.0f %8.3f %29s %9.2f\n", "limit: evs_ring_copy", size,
			    pl.ring_copy.ev_s, pl.ring_copy.gb_s, "",
			    paired_ratio(pr->ring_copy_ev, pr->memcpy_ev, rounds));
		report_limit("  limit: bare SPSC ring", &pl.bare, size, "bare");
		if (size <= CLOCK_WEIGHS_MAX_PAYLOAD)
			/* x bare: what one clock read a record costs on two CPUs */
			say("%-26s %8zu %13.0f %8.3f %9s %9s %9.2f\n", "  limit: stamped ring", size,
			    pl.stamped.ev_s, pl.stamped.gb_s, "", "",
			    paired_ratio(pr->stamped, pr->bare, rounds));
		report_limit("  alternative: pipe", &pl.pipe, size, "pipe");
		report_limit("  alternative: socket", &pl.sock, size, "socket");
		for (size_t k = 0; k < NVARIANTS; k++) {
			if (pr->skipped[k][0]) {
				char name[64];

				variant_name(&variants[k], name, sizeof(name));
				warn("SKIP %s %zu B: %s", name, size, pr->skipped[k]);
				rep_obj_begin();
				rep_str("variant", name);
				rep_int("payload", size);
				rep_str("skipped", pr->skipped[k]);
				rep_obj_end();
				continue;
			}
			if (pr->run[k])
				report_variant(pr, k, rounds, &pl, size, dat);
		}
	}
	rep_section_end();
	if (dat)
		fclose(dat);
	free(pr);
	free(src);
}

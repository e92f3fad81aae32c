/* SPDX-License-Identifier: MIT */
/*
 * LTTng-UST next to evstream, in the same run, with the same 64-byte
 * events, the producer on CPU 0 and the consumer (for LTTng its consumer
 * daemon, writing the trace) on CPU 1:
 *
 *   lttng     events/s of evstream's default path and of an LTTng-UST
 *             tracepoint emitted as fast as it can into a real session,
 *             round by round; LTTng's events are counted afterwards:
 *             emitted = recorded (in the trace) + discarded (by its buffers)
 *   dropfree  for each, the highest offered rate with no event lost over a
 *             window (--window, 10 s), found by a bounded search
 *
 * evstream's default path: evs_producer__emit() (a copy) on the producer,
 * evs_consumer__consume() busy-polling on the consumer, timestamps on, each
 * record published at its commit, the ring of the throughput part
 * (--ring-mb, 64 MiB) on normal pages, as LTTng's buffers are.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "lttng_peer.h"
#include "pace.h"
#include "evstream/evstream.h"

/* ------------------------------------------------ evstream's default path */

struct ed {
	struct evs_producer *p;
	struct evs_consumer *c;
	const uint8_t *src;
	bool tput;            /* as fast as it can, retrying a full ring; else paced */
	double rate, secs;    /* paced */
	uint64_t retries, sent, failed;
	/* written by the consumer on every batch: a line of its own */
	uint64_t got __attribute__((aligned(128)));
	struct run run;
};

static volatile uint64_t sink;

static void *ed_producer(void *arg)
{
	struct ed *e = arg;
	uint64_t n = 0, retries = 0, failed = 0;
	struct pacer pc;
	int k;

	if (e->tput) {
		/* as the throughput part's copy path: a full ring is retried */
		for (;;) {
			int err = evs_producer__emit(e->p, 0, 1, e->src, LT_PAYLOAD);

			if (err == -ENOBUFS) {
				retries++;
				cpu_relax();
				continue;
			}
			if (err) {
				warn("emit: %s", evs_strerror(err));
				break;
			}
			if ((++n & 63) == 0 && run_tick(&e->run))
				break;
		}
		e->retries = retries;
		e->sent = n;
		run_finish(&e->run, n);
		return NULL;
	}
	/* paced: what does not fit is dropped and counted, as in production */
	pace_start(&pc, e->rate, e->secs);
	while ((k = pace_next(&pc)) >= 0) {
		for (int i = 0; i < k; i++)
			failed += evs_producer__emit(e->p, 0, 1, e->src, LT_PAYLOAD) != 0;
		pc.sent += (uint64_t)k;
	}
	e->sent = pc.sent;
	e->failed = failed;
	e->rate = pace_rate(&pc);
	run_finish(&e->run, pc.sent - failed);
	return NULL;
}

static int ed_cb(void *ctx, const struct evs_record *rec)
{
	(void)ctx;
	sink += touch(rec->data, rec->hdr.data_size);
	return 0;
}

static void *ed_consumer(void *arg)
{
	struct ed *e = arg;

	for (;;) {
		/* bounded batches, so that it releases and looks up */
		int n = evs_consumer__consume(e->c, ed_cb, NULL, 256);

		if (n > 0) {
			e->got += (uint64_t)n;
			run_mark(&e->run, e->got);
			continue;
		}
		if (n < 0 || run_drained(&e->run, e->got))
			break;
		cpu_relax();
	}
	run_mark(&e->run, e->got);
	return NULL;
}

/* One run of the default path; -1 (why said) when it cannot run. */
static int ed_run(struct ed *e, struct evs_stream_stats *st)
{
	EVS_OPTS(evs_producer_opts, po, .ring_bytes = bopt.ring_bytes,
		 .max_events = bopt.ring_bytes / 64, .hugepages = EVS_HUGEPAGES_OFF);
	struct evs_stream_stats primed = { .sz = sizeof(primed) };

	st->sz = sizeof(*st);
	e->p = evs_producer__new(NULL, 1, &po);
	if (!e->p) {
		warn("evstream producer: %s", evs_errmsg()[0] ? evs_errmsg() : strerror(errno));
		return -1;
	}
	e->c = evs_consumer__connect(NULL, 0, NULL);
	if (!e->c) {
		warn("evstream consumer: %s", evs_errmsg()[0] ? evs_errmsg() : strerror(errno));
		evs_producer__free(e->p);
		return -1;
	}
	bench_prime(e->p, e->c, e->src, LT_PAYLOAD);
	/* priming fills the ring until emit fails: those drops are not the run's */
	evs_producer__stats(e->p, 0, &primed);
	if (e->tput)
		run_start(&e->run);
	bench_pair(ed_producer, e, ed_consumer, e);
	evs_producer__stats(e->p, 0, st);
	st->dropped -= primed.dropped;
	evs_consumer__free(e->c);
	evs_producer__free(e->p);
	return 0;
}

static uint8_t *src_buf(void)
{
	static uint8_t src[LT_PAYLOAD];

	memset(src, 0xa5, sizeof(src));
	return src;
}

/* ------------------------------------------------------------ lttng */

static double x_lttng = NAN;

double lttng_ratio(void)
{
	return x_lttng;
}

static double paired(const double *a, const double *b, int n, double *lo, double *hi)
{
	double q[MAX_ROUNDS];

	for (int r = 0; r < n; r++)
		q[r] = ratio(a[r], b[r]);
	min_max(q, n, lo, hi);
	return median(q, n);
}

void lttng_run(void)
{
	int rounds = bopt.rounds, lt_rounds = 0;
	double evs[MAX_ROUNDS], lt[MAX_ROUNDS], lt_rec[MAX_ROUNDS], run_s = 0;
	uint64_t emitted = 0, recorded = 0, discarded = 0, retries = 0, ring = 0;
	bool accounted = true;
	char why[300] = "";
	struct lt_res res;

	say("\n== LTTng-UST, the same 64-byte events (%d rounds; producer CPU %d, consumer CPU %d:\n"
	    "   evstream's consumer thread, LTTng's consumer daemon writing the trace)\n",
	    rounds, BENCH_CPU_PRODUCER, BENCH_CPU_CONSUMER);
	rep_section("lttng");
	if (lt_peer_open(why, sizeof(why)))
		warn("SKIP lttng: %s", why);
	for (int r = 0; r < rounds; r++) {
		struct ed e = { .src = src_buf(), .tput = true };
		struct evs_stream_stats st = { 0 };
		struct lt_req q = { .tput = 1, .secs = bopt.secs };

		progress("lttng: round %d of %d", r + 1, rounds);
		evs[r] = ed_run(&e, &st) ? NAN : run_rate(&e.run);
		retries += e.retries;
		ring = st.ring_bytes;
		if (why[0])
			continue;
		if (lt_peer_run(&q, &res)) {
			snprintf(why, sizeof(why), "%s", res.why);
			warn("SKIP lttng: %s", why);
			continue;
		}
		lt[r] = res.ev_s;
		lt_rec[r] = res.emitted ? res.ev_s * (double)res.recorded / (double)res.emitted : NAN;
		emitted += res.emitted;
		recorded += res.recorded;
		discarded += res.discarded;
		accounted &= res.recorded + res.discarded == res.emitted;
		run_s += res.run_s;
		lt_rounds++;
	}
	progress_done();

	double ev = median(evs, rounds), lo, hi, xr = NAN;

	say("  %-36s %13s %13s %12s %12s %12s\n", "", "events/s", "recorded/s", "emitted", "recorded",
	    "discarded");
	say("  %-36s %13.0f\n", "evstream emit + consume (default)", ev);
	if (lt_rounds == rounds) {
		double lev = median(lt, rounds), lrec = median(lt_rec, rounds);

		x_lttng = paired(evs, lt, rounds, &lo, &hi);
		xr = paired(evs, lt_rec, rounds, &(double){ 0 }, &(double){ 0 });
		say("  %-36s %13.0f %13.0f %12llu %12llu %12llu%s\n", "LTTng-UST tracepoint, session on",
		    lev, lrec, (unsigned long long)emitted, (unsigned long long)recorded,
		    (unsigned long long)discarded,
		    !accounted ? "  MISMATCH: recorded + discarded != emitted" :
		    discarded ? "  (discards)" : "");
		say("  channel: %s; %s\n", lt_channel_desc(), lt_version());
		if (discarded)
			say("  LTTng discarded %.2f%% of what it was given at full speed: its consumer "
			    "daemon did not keep up\n", 100.0 * (double)discarded / (double)emitted);
		say("  evstream default / LTTng-UST: %.2fx its emit rate (rounds %.2f-%.2f), %.2fx "
		    "what it recorded\n", x_lttng, lo, hi, xr);
	} else {
		say("  %-36s %s\n", "LTTng-UST", why);
	}
	rep_obj_begin();
	rep_str("system", "evstream");
	rep_str("variant", "emit+consume/normal");
	rep_int("payload", LT_PAYLOAD);
	rep_int("timestamps", 1);
	rep_int("ring_bytes", ring);
	rep_int("rounds", (uint64_t)rounds);
	rep_num("events_s", ev);
	rep_int("ring_full_retries", retries);
	/* paired: the median of the ratios within each round */
	rep_num("x_lttng", x_lttng);
	if (!isnan(x_lttng)) {
		rep_num("x_lttng_min", lo);
		rep_num("x_lttng_max", hi);
	}
	rep_num("x_lttng_recorded", xr);
	rep_obj_end();
	rep_obj_begin();
	rep_str("system", "lttng-ust");
	rep_int("payload", LT_PAYLOAD);
	if (lt_rounds == rounds) {
		rep_str("channel", lt_channel_desc());
		rep_str("version", lt_version());
		rep_int("rounds", (uint64_t)rounds);
		/* emitted per second while measured, discarded or not */
		rep_num("events_s", median(lt, rounds));
		/* ... times the share that reached the trace */
		rep_num("recorded_events_s", median(lt_rec, rounds));
		rep_int("emitted", emitted);
		rep_int("recorded", recorded);
		rep_int("discarded", discarded);
		rep_int("discards", discarded > 0);
		rep_int("accounted", accounted);
		rep_num("session_s", run_s / rounds);
	} else {
		rep_str("skipped", why);
	}
	rep_obj_end();
	rep_section_end();
}

/* ------------------------------------------------------------ dropfree */

/*
 * The drop-free rate: the highest offered rate at which nothing was lost
 * over a window. Each trial is a fresh stream (or session) with a producer
 * paced at the offered rate. First a short probe as fast as the producer
 * can go gives what got through at full speed, D; trials then start at D/2
 * and double while nothing is lost, halve while something is, and bisect
 * once the rate is between a trial that lost nothing and one that lost
 * something (or could not be offered: the producer is too slow for it). At
 * most DROPFREE_TRIALS windows, fewer once the bracket is within 3 %.
 */
#define DROPFREE_TRIALS 6
#define DROPFREE_TRIALS_QUICK 4
#define DROPFREE_PROBE_S 1.0
#define DROPFREE_MAX 10 /* trials kept: the probe, the windows */

struct trial {
	double offered;   /* 0: as fast as it can */
	double achieved;  /* what the producer offered, per second */
	double secs;
	uint64_t emitted, dropped;
	bool pass, probe;
};

struct search {
	const char *system, *variant;
	struct trial t[DROPFREE_MAX];
	int n;
	double lo, hi;    /* highest passing and lowest failing rate; NAN none */
	bool producer_bound; /* nothing lost even at full speed */
	double total_s;
	char why[300];
};

/* A trial of one system; -1 with why when it cannot run. */
typedef int (*trial_fn)(double rate, double secs, struct trial *t, char *why, size_t len);

static int evs_trial(double rate, double secs, struct trial *t, char *why, size_t len)
{
	struct ed e = { .src = src_buf(), .rate = rate, .secs = secs };
	struct evs_stream_stats st = { 0 };

	if (ed_run(&e, &st)) {
		snprintf(why, len, "evstream could not be set up (said above)");
		return -1;
	}
	t->emitted = e.sent;
	t->dropped = st.dropped;
	t->achieved = e.rate;
	if (st.dropped != e.failed)
		warn("dropfree: evstream counted %llu drops, emit failed %llu times",
		     (unsigned long long)st.dropped, (unsigned long long)e.failed);
	return 0;
}

static int lt_trial(double rate, double secs, struct trial *t, char *why, size_t len)
{
	struct lt_req q = { .rate = rate, .secs = secs };
	struct lt_res r;

	if (lt_peer_run(&q, &r)) {
		snprintf(why, len, "%s", r.why);
		return -1;
	}
	t->emitted = r.emitted;
	t->dropped = r.discarded;
	t->achieved = r.ev_s;
	return 0;
}

static int one_trial(struct search *s, trial_fn fn, double rate, double secs, bool probe)
{
	struct trial *t = &s->t[s->n];
	uint64_t t0 = cli_now_ns();

	memset(t, 0, sizeof(*t));
	t->offered = rate;
	t->secs = secs;
	t->probe = probe;
	progress("dropfree %s: trial %d, %.2f M/s offered, %.1f s", s->system, s->n + 1,
		 rate / 1e6, secs);
	if (fn(rate, secs, t, s->why, sizeof(s->why)))
		return -1;
	/* lost nothing, and the producer kept the pace (it checks the clock
	 * every 64 events, so a paced one is within a burst of it) */
	t->pass = !t->dropped && (rate == 0 || t->achieved >= 0.99 * rate);
	s->total_s += (double)(cli_now_ns() - t0) / 1e9;
	s->n++;
	return 0;
}

static void search(struct search *s, trial_fn fn, double window, int trials)
{
	double probe_s = window < DROPFREE_PROBE_S ? window : DROPFREE_PROBE_S, full, got, r;
	struct trial *t;

	s->lo = s->hi = NAN;
	if (one_trial(s, fn, 0, probe_s, true))
		return;
	t = &s->t[0];
	full = t->achieved;
	got = (double)(t->emitted - t->dropped) / probe_s;
	if (!t->dropped) {
		/* nothing lost at full speed: over a whole window? */
		if (one_trial(s, fn, 0, window, false))
			return;
		t = &s->t[1];
		trials--;
		if (t->pass) {
			s->lo = t->achieved;
			s->producer_bound = true;
			return;
		}
		full = t->achieved;
		got = (double)(t->emitted - t->dropped) / window;
	}
	/* at full speed it lost events */
	s->hi = full;
	r = got / 2;
	if (!(r > 0)) {
		snprintf(s->why, sizeof(s->why), "nothing got through at full speed");
		return;
	}
	while (trials-- > 0) {
		if (one_trial(s, fn, r, window, false))
			return;
		t = &s->t[s->n - 1];
		if (t->pass)
			s->lo = r;
		else
			s->hi = r;
		if (!isnan(s->lo) && (s->hi - s->lo) / s->hi <= 0.03)
			break;
		if (isnan(s->lo))
			r /= 2;
		else if (t->pass && 2 * r < s->hi)
			r *= 2;
		else
			r = (s->lo + s->hi) / 2;
	}
}

static void report_search(const struct search *s, double window)
{
	say("  %s (%s):\n", s->system, s->variant);
	for (int i = 0; i < s->n; i++) {
		const struct trial *t = &s->t[i];
		char off[32];

		if (t->offered)
			snprintf(off, sizeof(off), "%9.2f M/s", t->offered / 1e6);
		else
			snprintf(off, sizeof(off), "%13s", "full speed");
		say("    %s %4.1f s  offered %s  achieved %9.2f M/s  emitted %11llu  %s %9llu  %s\n",
		    t->probe ? "probe " : "window", t->secs, off, t->achieved / 1e6,
		    (unsigned long long)t->emitted, !strcmp(s->system, "lttng-ust") ? "discarded" : "dropped",
		    (unsigned long long)t->dropped,
		    t->pass ? "ok" : t->dropped ? "LOST" : "producer too slow");
	}
	if (s->why[0])
		say("    %s\n", s->why);
	else if (s->producer_bound)
		say("    drop-free at full speed: %.2f M/s over %.3g s (the producer is the limit)\n",
		    s->lo / 1e6, window);
	else if (isnan(s->lo))
		say("    no drop-free rate found (every trial lost events; highest tried %.2f M/s)\n",
		    s->hi / 1e6);
	else
		say("    drop-free rate %.2f M/s (bracket %.2f-%.2f M/s), %d trials, %.0f s\n",
		    s->lo / 1e6, s->lo / 1e6, s->hi / 1e6, s->n, s->total_s);
	rep_obj_begin();
	rep_str("system", s->system);
	rep_str("variant", s->variant);
	rep_int("payload", LT_PAYLOAD);
	rep_num("window_s", window);
	if (s->why[0]) {
		rep_str("skipped", s->why);
		rep_obj_end();
		return;
	}
	rep_num("dropfree_events_s", s->lo);
	rep_num("bracket_low", s->lo);
	rep_num("bracket_high", s->hi);
	rep_str("limit", s->producer_bound ? "producer" : "drops");
	rep_num("search_s", s->total_s);
	rep_section("trials");
	for (int i = 0; i < s->n; i++) {
		const struct trial *t = &s->t[i];

		rep_obj_begin();
		rep_int("probe", t->probe);
		rep_num("secs", t->secs);
		rep_num("offered_events_s", t->offered ? t->offered : NAN);
		rep_num("achieved_events_s", t->achieved);
		rep_int("emitted", t->emitted);
		rep_int("dropped", t->dropped);
		rep_int("pass", t->pass);
		rep_obj_end();
	}
	rep_section_end();
	rep_obj_end();
}

void dropfree_run(void)
{
	static struct search evs = { .system = "evstream", .variant = "emit+consume/normal" };
	static struct search lt = { .system = "lttng-ust", .variant = "tracepoint, session on" };
	int trials = bopt.quick ? DROPFREE_TRIALS_QUICK : DROPFREE_TRIALS;
	double w = bopt.window;

	evs.lo = evs.hi = lt.lo = lt.hi = NAN;
	say("\n== drop-free rate: the highest offered rate (paced producer) with nothing lost over %.3g s\n"
	    "   (at most %d windows each after a probe at full speed; evstream: dropped, LTTng: discarded)\n",
	    w, trials);
	rep_section("dropfree");
	search(&evs, evs_trial, w, trials);
	report_search(&evs, w);
	if (lt_peer_open(lt.why, sizeof(lt.why)) == 0) {
		say("  (LTTng channel: %s)\n", lt_channel_desc());
		search(&lt, lt_trial, w, trials);
	} else {
		warn("SKIP dropfree lttng: %s", lt.why);
	}
	progress_done();
	report_search(&lt, w);
	if (!evs.why[0] && !lt.why[0] && !isnan(evs.lo) && !isnan(lt.lo)) {
		double x = evs.lo / lt.lo;

		say("  evstream / LTTng-UST drop-free rate: %.2fx\n", x);
		rep_obj_begin();
		rep_str("system", "ratio");
		rep_num("x_lttng", x);
		rep_obj_end();
	}
	rep_section_end();
}

void lttng_done(void)
{
	lt_peer_close();
}

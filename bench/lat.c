/* SPDX-License-Identifier: MIT */
/*
 * One-way latency: the producer commits a 64-byte event at a paced offered
 * rate; the consumer, on the other CPU, subtracts the header's timestamp
 * (CLOCK_MONOTONIC taken by the producer inside commit, from the TSC where
 * that is CLOCK_MONOTONIC's source: transport/clock.h) from its own
 * CLOCK_MONOTONIC read right after peek returns the event. Both CPUs read
 * the same clock (on a TSC that is synchronised and invariant).
 * A consumer either busy-polls evs_consumer__peek() or sleeps in
 * evs_consumer__wait() and is woken through the eventfd.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "bench.h"
#include "evstream/evstream.h"

struct lt {
	bool sleep;
	uint64_t n, interval_ns;
	struct evs_producer *p;
	struct evs_consumer *c;
	uint64_t late;   /* sends that started later than their slot by > 1 interval */
	struct hist h;
};

static struct lat_case kept[8];
static int nkept;

const struct lat_case *lat_find(const char *name)
{
	for (int i = 0; i < nkept; i++)
		if (!strcmp(kept[i].name, name))
			return &kept[i];
	return NULL;
}

static void *lt_producer(void *arg)
{
	struct lt *l = arg;
	uint64_t t0 = cli_now_ns() + 1000000;

	for (uint64_t i = 0; i < l->n; i++) {
		uint64_t slot = t0 + i * l->interval_ns, now;
		void *d;

		while ((now = cli_now_ns()) < slot)
			cpu_relax();
		if (now - slot > l->interval_ns)
			l->late++;
		while (!(d = evs_producer__reserve(l->p, 0, 1, 64)))
			cpu_relax();
		memcpy(d, &i, sizeof(i));
		evs_producer__commit(l->p, 0);
	}
	return NULL;
}

static void *lt_consumer(void *arg)
{
	struct lt *l = arg;
	struct evs_record rec;
	uint64_t got = 0;

	while (got < l->n) {
		int err = evs_consumer__peek(l->c, &rec);

		if (err == 0) {
			uint64_t now = cli_now_ns();

			hist_add(&l->h, now > rec.hdr.timestamp_ns ? now - rec.hdr.timestamp_ns : 0);
			evs_consumer__release(l->c);
			got++;
			continue;
		}
		if (err != -EAGAIN) {
			warn("latency consumer: %s", evs_strerror(err));
			break;
		}
		if (l->sleep) {
			err = evs_consumer__wait(l->c, 1000);
			if (err && err != -ETIMEDOUT) {
				warn("wait: %s", evs_strerror(err));
				break;
			}
		} else {
			cpu_relax();
		}
	}
	return NULL;
}

/* Events of one run of a case at this offered rate. */
static uint64_t lt_count(double rate)
{
	uint64_t n = (uint64_t)(rate * (bopt.quick ? 0.4 : 2.0));
	uint64_t most = bopt.quick ? 100000 : 1000000;

	return n < most ? n : most;
}

/* One run of a case; its samples are added to *h. -1 with why set when
 * it cannot run. */
static int lt_one(bool sleep, double rate, struct hist *h, struct lat *out, uint64_t *late,
		  char *why, size_t whylen)
{
	EVS_OPTS(evs_producer_opts, po, .ring_bytes = 8 << 20, .hugepages = EVS_HUGEPAGES_OFF);
	struct lt l = { .sleep = sleep, .interval_ns = (uint64_t)(1e9 / rate), .n = lt_count(rate) };

	hist_init(&l.h);
	l.p = evs_producer__new(NULL, 1, &po);
	if (!l.p) {
		snprintf(why, whylen, "producer: %s", evs_errmsg()[0] ? evs_errmsg() : strerror(errno));
		return -1;
	}
	l.c = evs_consumer__connect(NULL, 0, NULL);
	if (!l.c) {
		snprintf(why, whylen, "consumer: %s", evs_errmsg()[0] ? evs_errmsg() : strerror(errno));
		evs_producer__free(l.p);
		return -1;
	}
	bench_pair(lt_producer, &l, lt_consumer, &l);
	evs_consumer__free(l.c);
	evs_producer__free(l.p);
	lat_from_hist(out, &l.h);
	hist_merge(h, &l.h);
	*late += l.late;
	return 0;
}

static const struct { bool sleep; double rate; } cases[] = {
	{ false, 10e3 }, { false, 1e6 }, { true, 10e3 }, { true, 200e3 },
};
#define NCASES (sizeof(cases) / sizeof(cases[0]))

/* What the rounds of one case gave: every sample, and per round the limit
 * measured right before it and the two ratios; for a busy-polling case
 * also the one-line message at its rate (floor.c) and the ratios to it. */
struct lat_rounds {
	struct hist h;
	struct hist floor_h;
	uint64_t late;
	int n, nfloor;
	char failed[128];  /* why the case could not run, "" while it can */
	struct lat limit[MAX_ROUNDS];
	double r50[MAX_ROUNDS], r999[MAX_ROUNDS];
	double f50[MAX_ROUNDS], f999[MAX_ROUNDS];       /* the case x the message */
	double fl50[MAX_ROUNDS], fl999[MAX_ROUNDS];     /* the message x the limit's p50 */
};

static void lat_round(size_t k, struct lat_rounds *lr)
{
	bool sleep = cases[k].sleep;
	struct lat l, floor, *limit = &lr->limit[lr->n];
	bool have_floor = false;

	/* the limit right before the case it divides */
	if (sleep) {
		limit_efd_wake(limit, false);
	} else {
		limit_line_oneway(limit);
		have_floor = !limit_line_message(cases[k].rate, lt_count(cases[k].rate), &floor,
						 &lr->floor_h);
	}
	if (lt_one(sleep, cases[k].rate, &lr->h, &l, &lr->late, lr->failed, sizeof(lr->failed)) < 0)
		return;
	lr->r50[lr->n] = ratio(l.p50, limit->p50);
	lr->r999[lr->n] = ratio(l.p999, limit->p50);
	if (have_floor) {
		lr->f50[lr->nfloor] = ratio(l.p50, floor.p50);
		lr->f999[lr->nfloor] = ratio(l.p999, floor.p999);
		lr->fl50[lr->nfloor] = ratio(floor.p50, limit->p50);
		lr->fl999[lr->nfloor] = ratio(floor.p999, limit->p50);
		lr->nfloor++;
	}
	lr->n++;
}

/* The limit over the rounds: the median of each percentile. */
static void limit_median(const struct lat_rounds *lr, struct lat *out)
{
	double v[MAX_ROUNDS];

#define MEDIAN_OF(f)                                 \
	do {                                         \
		for (int r = 0; r < lr->n; r++)      \
			v[r] = lr->limit[r].f;       \
		out->f = median(v, lr->n);           \
	} while (0)
	MEDIAN_OF(p50);
	MEDIAN_OF(p90);
	MEDIAN_OF(p99);
	MEDIAN_OF(p999);
	MEDIAN_OF(max);
	MEDIAN_OF(mean);
#undef MEDIAN_OF
	out->n = lr->limit[0].n;
}

static void lat_report(size_t k, struct lat_rounds *lr, FILE *dat)
{
	bool sleep = cases[k].sleep;
	struct lat_case *lc = nkept < 8 ? &kept[nkept++] : NULL;
	struct lat l, limit, floor;
	double lo, hi;

	if (!lc)
		return;
	snprintf(lc->name, sizeof(lc->name), "%s@%.0fk/s", sleep ? "sleeping" : "busy-poll",
		 cases[k].rate / 1e3);
	lat_from_hist(&l, &lr->h);
	limit_median(lr, &limit);
	min_max(lr->r50, lr->n, &lo, &hi);
	lc->p50_x_limit = median(lr->r50, lr->n);
	lc->p999_x_limit_p50 = median(lr->r999, lr->n);
	lc->p50_x_floor = median(lr->f50, lr->nfloor);
	lc->p999_x_floor = median(lr->f999, lr->nfloor);
	lc->floor_p50_x_limit = median(lr->fl50, lr->nfloor);
	lc->floor_p999_x_limit_p50 = median(lr->fl999, lr->nfloor);

	say("%-18s %9llu %8.0f %8.0f %8.0f %8.0f %9.0f %9.2f %9.2f\n", lc->name,
	    (unsigned long long)l.n, l.p50, l.p90, l.p99, l.p999, l.max, lc->p50_x_limit,
	    lc->p999_x_limit_p50);
	say("%-18s %9llu %8.0f %8.0f %8.0f %8.0f %9.0f   limit, median of the rounds\n",
	    sleep ? "  eventfd wake" : "  line one-way", (unsigned long long)limit.n, limit.p50,
	    limit.p90, limit.p99, limit.p999, limit.max);
	if (lr->nfloor) {
		lat_from_hist(&floor, &lr->floor_h);
		say("%-18s %9llu %8.0f %8.0f %8.0f %8.0f %9.0f %9.2f %9.2f   one-line message (floor.c)\n",
		    "  line message", (unsigned long long)floor.n, floor.p50, floor.p90, floor.p99,
		    floor.p999, floor.max, lc->floor_p50_x_limit, lc->floor_p999_x_limit_p50);
		say("%-18s the case x the message: p50 %.2fx, p99.9 %.2fx\n", "", lc->p50_x_floor,
		    lc->p999_x_floor);
	}
	say("%-18s p50 x limit by round:", "");
	for (int r = 0; r < lr->n; r++)
		say(" %.2f", lr->r50[r]);
	say("\n");
	rep_obj_begin();
	rep_str("case", lc->name);
	rep_str("consumer", sleep ? "sleeping" : "busy_poll");
	rep_num("offered_rate", cases[k].rate);
	rep_int("rounds", lr->n);
	rep_int("late_sends", lr->late);
	rep_lat("lat", &l);
	rep_str("limit", sleep ? "eventfd_wake_read" : "cacheline_oneway");
	rep_lat("limit_lat", &limit);
	rep_num("p50_x_limit", lc->p50_x_limit);
	rep_num("p50_x_limit_min", lo);
	rep_num("p50_x_limit_max", hi);
	/* the target's measure: the tail against the limit's typical time */
	rep_num("p999_x_limit_p50", lc->p999_x_limit_p50);
	if (lr->nfloor) {
		/* the floor: the least timestamped message at the same rate */
		rep_str("floor", "line_message");
		rep_lat("floor_lat", &floor);
		rep_num("p50_x_floor", lc->p50_x_floor);
		rep_num("p999_x_floor", lc->p999_x_floor);
		rep_num("floor_p50_x_limit", lc->floor_p50_x_limit);
		rep_num("floor_p999_x_limit_p50", lc->floor_p999_x_limit_p50);
	}
	rep_obj_end();
	if (dat) {
		fprintf(dat, "%s %.1f %.1f %.1f %.1f %.1f\n", lc->name, l.p50, l.p90, l.p99, l.p999, l.max);
		fprintf(dat, "%s %.1f %.1f %.1f %.1f %.1f\n", sleep ? "(eventfd-wake)" : "(cacheline-1way)",
			limit.p50, limit.p90, limit.p99, limit.p999, limit.max);
		if (lr->nfloor)
			fprintf(dat, "(line-message) %.1f %.1f %.1f %.1f %.1f\n", floor.p50, floor.p90,
				floor.p99, floor.p999, floor.max);
	}
}

/*
 * Every case runs once per round, right after its limit; a figure is taken
 * from the samples of all rounds, the limit is the median of the rounds,
 * and a ratio is the median of the ratios within each round (as for
 * throughput: the host moves these vCPUs between near and far within
 * minutes, and one round alone can land on either).
 */
void latency_run(void)
{
	static struct lat_rounds lr[NCASES];
	FILE *dat = plot_open("latency.dat", "# case p50 p90 p99 p999 max (ns)");

	for (size_t k = 0; k < NCASES; k++) {
		memset(&lr[k], 0, sizeof(lr[k]));
		hist_init(&lr[k].h);
		hist_init(&lr[k].floor_h);
	}
	for (int r = 0; r < bopt.rounds; r++) {
		progress("latency round %d of %d", r + 1, bopt.rounds);
		for (size_t k = 0; k < NCASES; k++)
			if (!lr[k].failed[0])
				lat_round(k, &lr[k]);
	}
	progress_done();
	say("\n== one-way latency, 64-byte events (ns; %d round(s): samples of all rounds, the\n"
	    "   limit's median, ratios the median of the ratios within each round)\n", bopt.rounds);
	say("%-18s %9s %8s %8s %8s %8s %9s %9s %9s\n", "consumer@rate", "events", "p50", "p90", "p99",
	    "p99.9", "max", "p50 x lim", "p99.9 x");
	rep_section("latency");
	for (size_t k = 0; k < NCASES; k++) {
		if (lr[k].failed[0] || !lr[k].n) {
			warn("SKIP latency %s@%.0fk/s: %s", cases[k].sleep ? "sleeping" : "busy-poll",
			     cases[k].rate / 1e3, lr[k].failed[0] ? lr[k].failed : "no round ran");
			continue;
		}
		lat_report(k, &lr[k], dat);
	}
	if (dat)
		fclose(dat);
	rep_section_end();
}

/* SPDX-License-Identifier: MIT */
/*
 * One-way latency: the producer commits a 64-byte event at a paced offered
 * rate; the consumer, on the other CPU, subtracts the header's timestamp
 * (CLOCK_MONOTONIC taken by the producer inside commit) from its own
 * CLOCK_MONOTONIC read right after peek returns the event. Both CPUs read
 * the same clock (the vDSO's, on a TSC that is synchronised and invariant).
 * A consumer either busy-polls evs_consumer__peek() or sleeps in
 * evs_consumer__wait() and is woken through the eventfd.
 */
#include <errno.h>
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

static struct { char name[64]; struct lat l, limit; } kept[8];
static int nkept;

const struct lat *lat_find(const char *name, const struct lat **limit)
{
	for (int i = 0; i < nkept; i++)
		if (!strcmp(kept[i].name, name)) {
			*limit = &kept[i].limit;
			return &kept[i].l;
		}
	return NULL;
}

static void *lt_producer(void *arg)
{
	struct lt *l = arg;
	uint64_t t0 = bench_now() + 1000000;

	for (uint64_t i = 0; i < l->n; i++) {
		uint64_t slot = t0 + i * l->interval_ns, now;
		void *d;

		while ((now = bench_now()) < slot)
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
			uint64_t now = bench_now();

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

static int lt_one(bool sleep, double rate, struct lat *out, uint64_t *late)
{
	EVS_OPTS(evs_producer_opts, po, .ring_bytes = 8 << 20, .hugepages = EVS_HUGEPAGES_OFF);
	struct lt l = { .sleep = sleep, .interval_ns = (uint64_t)(1e9 / rate) };
	double secs = bopt.quick ? 0.4 : 2.0;

	l.n = (uint64_t)(rate * secs);
	if (l.n > (bopt.quick ? 100000 : 1000000))
		l.n = bopt.quick ? 100000 : 1000000;
	hist_init(&l.h);
	l.p = evs_producer__new(NULL, 1, &po);
	if (!l.p)
		return -1;
	l.c = evs_consumer__connect(NULL, 0, NULL);
	if (!l.c) {
		evs_producer__free(l.p);
		return -1;
	}
	bench_pair(lt_producer, &l, lt_consumer, &l);
	evs_consumer__free(l.c);
	evs_producer__free(l.p);
	lat_from_hist(out, &l.h);
	*late = l.late;
	return 0;
}

void latency_run(void)
{
	static const struct { bool sleep; double rate; } cases[] = {
		{ false, 10e3 }, { false, 1e6 }, { true, 10e3 }, { true, 200e3 },
	};
	FILE *dat = plot_open("latency.dat", "# case p50 p90 p99 p999 max (ns)");
	say("\n== one-way latency, 64-byte events (ns; ratios to the same run's limits)\n");
	say("%-18s %9s %8s %8s %8s %8s %9s %9s %9s\n", "consumer@rate", "events", "p50", "p90", "p99",
	    "p99.9", "max", "p50 x lim", "p99.9 x");
	rep_section("latency");
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		bool sleep = cases[k].sleep;
		struct lat l, adj, *limit = &adj;
		uint64_t late = 0;
		char name[64];

		snprintf(name, sizeof(name), "%s@%.0fk/s", sleep ? "sleeping" : "busy-poll", cases[k].rate / 1e3);
		/* the limit right before the case it divides */
		if (sleep)
			limit_efd_wake(&adj, false);
		else
			limit_line_oneway(&adj);
		if (lt_one(sleep, cases[k].rate, &l, &late) < 0) {
			warn("SKIP latency %s: %s", name, evs_errmsg());
			continue;
		}
		if (nkept < 8) {
			snprintf(kept[nkept].name, sizeof(kept[nkept].name), "%s", name);
			kept[nkept].l = l;
			kept[nkept++].limit = adj;
		}
		double r50 = ratio(l.p50, limit->p50), r999 = ratio(l.p999, limit->p50);

		say("%-18s %9llu %8.0f %8.0f %8.0f %8.0f %9.0f %9.2f %9.2f\n", name,
		    (unsigned long long)l.n, l.p50, l.p90, l.p99, l.p999, l.max, r50, r999);
		rep_obj_begin();
		rep_str("case", name);
		rep_str("consumer", sleep ? "sleeping" : "busy_poll");
		rep_num("offered_rate", cases[k].rate);
		rep_int("late_sends", late);
		rep_lat("lat", &l);
		rep_str("limit", sleep ? "eventfd_wake_read" : "cacheline_oneway");
		rep_lat("limit_lat", limit);
		rep_num("p50_x_limit", r50);
		/* the target's measure: the tail against the limit's typical time */
		rep_num("p999_x_limit_p50", r999);
		rep_obj_end();
		if (dat) {
			fprintf(dat, "%s %.1f %.1f %.1f %.1f %.1f\n", name, l.p50, l.p90, l.p99, l.p999, l.max);
			fprintf(dat, "%s %.1f %.1f %.1f %.1f %.1f\n", sleep ? "(eventfd-wake)" : "(cacheline-1way)",
				adj.p50, adj.p90, adj.p99, adj.p999, adj.max);
		}
		say("%-18s %9llu %8.0f %8.0f %8.0f %8.0f %9.0f   limit measured just before\n",
		    sleep ? "  eventfd wake" : "  line one-way", (unsigned long long)adj.n, adj.p50, adj.p90,
		    adj.p99, adj.p999, adj.max);
	}
	if (dat)
		fclose(dat);
	rep_section_end();
}

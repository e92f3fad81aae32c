/* SPDX-License-Identifier: MIT */
/*
 * The drop path without the eBPF program: how many events per second a
 * producer can drop (and count) when nobody listens or the ring is full.
 * The cost with the eBPF program attached comes from evs-bench-drops,
 * whose JSON `make bench` folds into the report.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "evstream/evstream.h"
#include "jsonl.h"

static double drop_loop(struct evs_producer *p, uint64_t n, int want)
{
	uint8_t buf[BENCH_DROP_PAYLOAD] = { 0 };
	uint64_t t0 = cli_now_ns(), bad = 0;

	for (uint64_t i = 0; i < n; i++)
		bad += evs_producer__emit(p, 0, 1, buf, sizeof(buf)) != want;
	double ns = (double)(cli_now_ns() - t0) / (double)n;

	evs_producer__flush(p, 0);
	if (bad)
		warn("drop loop: %llu emits did not fail as expected", (unsigned long long)bad);
	return ns;
}

static void drop_report(const char *cause, double ns)
{
	say("%-12s %8.1f ns per dropped event  %10.0f drops/s\n", cause, ns, 1e9 / ns);
	rep_obj_begin();
	rep_str("cause", cause);
	rep_str("bpf", "none");
	rep_num("ns_per_drop", ns);
	rep_num("drops_s", 1e9 / ns);
	rep_obj_end();
}

void drops_run(void)
{
	EVS_OPTS(evs_producer_opts, po, .ring_bytes = BENCH_DROP_RING, .hugepages = EVS_HUGEPAGES_OFF);
	uint64_t n = bopt.quick ? 2000000 : 10000000;
	struct evs_producer *p;
	struct evs_consumer *c;
	uint8_t buf[BENCH_DROP_PAYLOAD] = { 0 };

	say("\n== drop path (no eBPF program; producer on CPU %d)\n", BENCH_CPU_PRODUCER);
	rep_section("drops");
	p = evs_producer__new(NULL, 1, &po);
	if (!p) {
		warn("SKIP drops: %s", evs_errmsg());
		rep_section_end();
		return;
	}
	drop_report("no_consumer", drop_loop(p, n, -ENOTCONN));
	c = evs_consumer__connect(NULL, 0, NULL);
	if (c) {
		/* fill the ring; the consumer never reads */
		while (evs_producer__emit(p, 0, 1, buf, sizeof(buf)) == 0)
			;
		drop_report("ring_full", drop_loop(p, n, -ENOBUFS));
		evs_consumer__free(c);
	}
	evs_producer__free(p);
	rep_section_end();
}

/* ns per drop with the eBPF program, from the folded report; NAN if none */
static double bpf_ns = NAN;

/* Fold the JSON of evs-bench-drops (ns per drop with and without the eBPF
 * program) into the report as it is, and keep the figure the target needs. */
void drops_bpf_fold(void)
{
	FILE *f;
	char *buf;
	long len;

	if (!bopt.drops_json)
		return;
	f = fopen(bopt.drops_json, "r");
	if (!f) {
		warn("--drops-json %s: %s", bopt.drops_json, strerror(errno));
		return;
	}
	fseek(f, 0, SEEK_END);
	len = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = calloc(1, (size_t)(len > 0 ? len : 0) + 1);
	if (buf && len > 0 && fread(buf, 1, (size_t)len, f) == (size_t)len) {
		while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == ' '))
			buf[--len] = 0;
		if (len > 0 && (buf[0] == '{' || buf[0] == '[')) {
			rep_raw("drops_bpf", buf);
			say("\n== drop path with the eBPF program (evs-bench-drops)\n%s\n", buf);
			/* the key bench/drop_cost.c writes (absent without BPF) */
			if (json_get_double(buf, "ns_per_drop_bpf", &bpf_ns))
				bpf_ns = NAN;
		} else {
			warn("--drops-json %s: not JSON, left out", bopt.drops_json);
		}
	}
	free(buf);
	fclose(f);
}

double drops_bpf_ns(void)
{
	return bpf_ns;
}

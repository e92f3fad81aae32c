/* SPDX-License-Identifier: MIT */
/*
 * evs-bench: evstream's throughput and latency next to the physical limits
 * (memcpy, a cache line between two cores, an eventfd wakeup) and the
 * alternatives (a pipe, a Unix socket, LTTng-UST with a real session), all
 * measured in the same run with the producer pinned to CPU 0 and the
 * consumer to CPU 1. Every evstream figure is printed as a ratio, because
 * on a shared machine only ratios taken side by side mean something.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/utsname.h>

#include "bench.h"
#include "evstream/evstream.h"
#include "evstream-private/introspect.h"


static void usage(FILE *f)
{
	fprintf(f,
		"usage: evs-bench [--quick] [--json] [--secs S] [--ring-mb N] [--plot-dir DIR]\n"
		"                 [--drops-json FILE] [--only limits|tput|cost|lat|drops|lttng|dropfree|oneway]\n"
		"                 [--variant SUBSTR] [--payload BYTES] [--rounds N] [--window S]\n"
		"  --quick        shorter runs (about a minute and a half in all instead of six)\n"
		"  --json         one JSON document on stdout; the human table goes to stderr\n"
		"  --secs S       measured seconds per throughput point, 0.001 to 3600\n"
		"                 (default 0.5, quick 0.15)\n"
		"  --ring-mb N    ring size of the throughput runs in MiB, 8 to 65536 (default 64)\n"
		"  --rounds N     rounds of each throughput payload and of the latency cases,\n"
		"                 1 to 9 (default 3); ratios are medians of the ratios\n"
		"                 within a round\n"
		"  --variant S    throughput: only the paths whose name contains S\n"
		"  --payload B    throughput: only this payload size: 0, 64, 1K, 64K, 1M or 4M\n"
		"  --window S     drop-free rate: seconds of each trial, 0.01 to 3600\n"
		"                 (default 10, quick 2)\n"
		"  --plot-dir DIR write throughput.dat and latency.dat for bench/plot.gp\n"
		"  --drops-json F fold the output of evs-bench-drops --json into the report\n"
		"  --only oneway  a probe, not in the whole run: the one-line message at\n"
		"                 10 k/s taken apart (no pause, one line, stamp after store)\n");
}

static void read_line_of(const char *path, const char *key, char *out, size_t len)
{
	FILE *f = fopen(path, "r");
	char line[512];

	snprintf(out, len, "unknown");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (key && strncmp(line, key, strlen(key)))
			continue;
		char *v = key ? strchr(line, ':') : line;

		if (!v)
			continue;
		v += key ? 1 : 0;
		while (*v == ' ' || *v == '\t')
			v++;
		v[strcspn(v, "\n")] = 0;
		snprintf(out, len, "%s", v);
		break;
	}
	fclose(f);
}

/* How streams are tuned in this run: where the producer's timestamps
 * come from on this machine (docs/architecture.md, "Timestamps") and the
 * consumers' catch-up pause (the default, or EVSTREAM_CATCHUP_NS), which
 * the stamped bare ring takes too. A stream made for the question says. */
static const char *stream_tuning(void)
{
	EVS_OPTS(evs_producer_opts, o, .ring_bytes = 4096, .hugepages = EVS_HUGEPAGES_OFF);
	struct evs_producer *p = evs_producer__new(NULL, 1, &o);
	struct evs_consumer *c = p ? evs_consumer__connect(NULL, 0, NULL) : NULL;
	const char *clk = "unknown";
	struct evs_tuning t;

	if (p && evs__producer_tuning(p, 0, &t) == 0)
		clk = t.tsc_timestamps ? "tsc" : "clock_gettime";
	if (c && evs__consumer_tuning(c, &t) == 0)
		bopt.catchup_ns = t.catchup_ns;
	else
		warn("no consumer to read the catch-up pause off (%s): the stamped ring reads "
		     "without one", evs_errmsg());
	evs_consumer__free(c);
	evs_producer__free(p);
	return clk;
}

static void machine(void)
{
	char cpu[256], cs[64], hp[64], load[128];
	const char *clk = stream_tuning();
	struct utsname u;

	read_line_of("/proc/cpuinfo", "model name", cpu, sizeof(cpu));
	read_line_of("/sys/devices/system/clocksource/clocksource0/current_clocksource", NULL, cs, sizeof(cs));
	read_line_of("/proc/meminfo", "HugePages_Free", hp, sizeof(hp));
	read_line_of("/proc/loadavg", NULL, load, sizeof(load));
	uname(&u);
	say("evs-bench: %s, %ld CPUs, Linux %s (%s), clocksource %s, huge pages free %s, load %s\n",
	    cpu, sysconf(_SC_NPROCESSORS_ONLN), u.release, u.machine, cs, hp, load);
	say("producer on CPU %d, consumer on CPU %d; timestamps CLOCK_MONOTONIC, read by the producer %s%s\n",
	    BENCH_CPU_PRODUCER, BENCH_CPU_CONSUMER,
	    !strcmp(clk, "tsc") ? "from the TSC" : "with clock_gettime()", bopt.quick ? "; --quick" : "");
	if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
		warn("fewer than 2 CPUs: producer and consumer share one; figures are not comparable");
	rep_raw("schema", "1");
	rep_str("cpu", cpu);
	rep_int("cpus", (uint64_t)sysconf(_SC_NPROCESSORS_ONLN));
	rep_str("kernel", u.release);
	rep_str("clocksource", cs);
	rep_str("producer_clock", clk);
	rep_int("catchup_ns", bopt.catchup_ns);
	rep_str("loadavg_start", load);
	rep_int("quick", bopt.quick);
	rep_num("secs_per_point", bopt.secs);
	rep_int("ring_bytes", bopt.ring_bytes);
	rep_int("cpu_producer", BENCH_CPU_PRODUCER);
	rep_int("cpu_consumer", BENCH_CPU_CONSUMER);
	rep_num("dropfree_window_s", bopt.window);
}

static void target(const char *name, double value, double goal, bool at_least, const char *unit)
{
	bool met = !isnan(value) && (at_least ? value >= goal : value <= goal);

	/* three decimals near the goal, so that 0.7996 does not print as 0.80 */
	say("  %-52s %9.*f %s  (target %s %.1f)  %s\n", name, value < 10 ? 3 : 2, value, unit,
	    at_least ? ">=" : "<=", goal,
	    isnan(value) ? "NOT MEASURED" : met ? "met" : "MISSED");
	rep_obj_begin();
	rep_str("target", name);
	rep_num("value", value);
	rep_num("goal", goal);
	rep_int("at_least", at_least);
	rep_str("unit", unit);
	rep_str("status", isnan(value) ? "not_measured" : met ? "met" : "missed");
	rep_obj_end();
}

static void targets(void)
{
	const struct lat_case *busy = lat_find("busy-poll@10k/s"), *sl = lat_find("sleeping@10k/s");

	say("\n== targets (ratios within this run)\n");
	rep_section("targets");
	/* the default paths, timestamps on: what a runtime and a reader get */
	target("64 B emit + peek, x bare SPSC ring", tput_ratio("emit+peek", 64, VS_BARE), 1, true, "x");
	target("64 B reserve/commit + peek, x bare SPSC ring", tput_ratio("reserve+peek", 64, VS_BARE),
	       1, true, "x");
	target("64 B emit + consume, x bare SPSC ring", tput_ratio("emit+consume", 64, VS_BARE), 1,
	       true, "x");
	target("64 B emit + read_one_event, x bare SPSC ring", tput_ratio("emit+nrt", 64, VS_BARE), 1,
	       true, "x");
	target("1 MiB reserve/commit + peek GB/s, x memcpy", tput_ratio("reserve+peek", 1 << 20, VS_MEMCPY),
	       0.8, true, "x");
	target("1 MiB reserve/commit + peek, huge pages, x memcpy",
	       tput_ratio("reserve+peek/huge", 1 << 20, VS_MEMCPY), 0.8, true, "x");
	target("busy-poll p50, x cache-line one-way",
	       busy ? busy->p50_x_limit : NAN, 1.5, false, "x");
	target("busy-poll p99.9, x cache-line one-way",
	       busy ? busy->p999_x_limit_p50 : NAN, 5, false, "x");
	target("sleeping p50, x raw eventfd wake (read)",
	       sl ? sl->p50_x_limit : NAN, 1.2, false, "x");
	target("drop with eBPF attached, ns per event", drops_bpf_ns(), 10, false, "ns");
	target("evstream default 64 B, x LTTng-UST", lttng_ratio(), 3, true, "x");
	rep_section_end();
	/* not targets: what the machine allows the busy-poll figures, from
	 * the one-line message at the same rate in the same rounds (in the
	 * JSON, on the case's latency row) */
	if (busy && !isnan(busy->p999_x_floor)) {
		say("  context: the least timestamped message (one line, 10k/s, same rounds) reaches\n"
		    "           p50 %.2fx and p99.9 %.2fx the cache-line one-way by itself;\n"
		    "           busy-poll@10k/s is p50 %.2fx and p99.9 %.2fx that message's\n",
		    busy->floor_p50_x_limit, busy->floor_p999_x_limit_p50, busy->p50_x_floor,
		    busy->p999_x_floor);
	}
}

/* --payload: one of the sizes the throughput part measures */
static int parse_payload(const char *s)
{
	uint64_t v;

	if (!cli_parse_u64("--payload", s, 0, bench_payloads[NPAYLOADS - 1], CLI_SIZE, &v)) {
		for (int i = 0; i < NPAYLOADS; i++)
			if (bench_payloads[i] == v) {
				bopt.payload = (long)v;
				return 0;
			}
		fprintf(stderr, "evs-bench: --payload '%s' is not a payload size of the benchmark\n", s);
	}
	fprintf(stderr, "evs-bench: --payload: the sizes measured are");
	for (int i = 0; i < NPAYLOADS; i++)
		fprintf(stderr, "%s %zu", i ? "," : "", bench_payloads[i]);
	fprintf(stderr, " (or 1K, 64K, 1M, 4M)\n");
	return -EINVAL;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "quick", no_argument, NULL, 'q' },     { "json", no_argument, NULL, 'j' },
		{ "secs", required_argument, NULL, 's' }, { "ring-mb", required_argument, NULL, 'r' },
		{ "plot-dir", required_argument, NULL, 'p' }, { "drops-json", required_argument, NULL, 'd' },
		{ "only", required_argument, NULL, 'o' }, { "variant", required_argument, NULL, 'v' },
		{ "payload", required_argument, NULL, 'P' }, { "rounds", required_argument, NULL, 'R' },
		{ "window", required_argument, NULL, 'w' }, { "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	uint64_t v;
	int opt;

	bopt.ring_bytes = 64ull << 20;
	bopt.secs = 0;
	bopt.payload = -1;
	while ((opt = getopt_long(argc, argv, "qjs:r:p:d:o:v:P:R:w:h", lo, NULL)) != -1) {
		switch (opt) {
		case 'q': bopt.quick = true; break;
		case 'j': bopt.json = true; break;
		case 's':
			if (cli_parse_double("--secs", optarg, 0.001, 3600, "seconds", &bopt.secs))
				return 2;
			break;
		case 'r':
			/* 8 MiB at least: the ring must hold a 4 MiB event */
			if (cli_parse_u64("--ring-mb", optarg, 8, 65536, 0, &v))
				return 2;
			bopt.ring_bytes = v << 20;
			break;
		case 'p': bopt.plot_dir = optarg; break;
		case 'd': bopt.drops_json = optarg; break;
		case 'o':
			if (strcmp(optarg, "limits") && strcmp(optarg, "tput") &&
			    strcmp(optarg, "cost") && strcmp(optarg, "lat") && strcmp(optarg, "drops") &&
			    strcmp(optarg, "lttng") && strcmp(optarg, "dropfree") &&
			    strcmp(optarg, "oneway")) {
				fprintf(stderr, "evs-bench: --only '%s' is not a part: use limits, tput, "
					"cost, lat, drops, lttng, dropfree or oneway\n", optarg);
				return 2;
			}
			bopt.only = optarg;
			break;
		case 'v': bopt.variant = optarg; break;
		case 'P':
			if (parse_payload(optarg))
				return 2;
			break;
		case 'R':
			if (cli_parse_u64("--rounds", optarg, 1, MAX_ROUNDS, 0, &v))
				return 2;
			bopt.rounds = (int)v;
			break;
		case 'w':
			if (cli_parse_double("--window", optarg, 0.01, 3600, "seconds", &bopt.window))
				return 2;
			break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "evs-bench: unexpected argument '%s': it takes options only\n", argv[optind]);
		usage(stderr);
		return 2;
	}
	if (bopt.secs == 0)
		bopt.secs = bopt.quick ? 0.15 : 0.5;
	if (bopt.rounds == 0)
		bopt.rounds = 3;
	if (bopt.window == 0)
		bopt.window = bopt.quick ? 2 : 10;
	/* private runtime directory: never meet another producer's socket */
	if (!getenv("EVSTREAM_RUNTIME_DIR")) {
		static char dir[64];

		snprintf(dir, sizeof(dir), "/tmp/evs-bench-%d", (int)getpid());
		setenv("EVSTREAM_RUNTIME_DIR", dir, 1);
	}
	unsetenv("EVSTREAM_PRODUCER");
	bench_raise_priority();

	rep_begin();
	machine();
#define PART(n) (!bopt.only || !strcmp(bopt.only, n))
	/* every part's single-threaded loops on the producer's CPU; the
	 * two-thread runs pin their own threads (bench_pair) */
	if (bench_pin(BENCH_CPU_PRODUCER))
		warn("cannot pin to CPU %d: figures may move", BENCH_CPU_PRODUCER);
	/* the ratios of tput and lat divide by limits measured in their own
	 * rounds: this part is the overview */
	if (PART("limits"))
		limits_run();
	if (PART("tput"))
		tput_run();
	if (PART("cost"))
		cost_run();
	if (PART("lat"))
		latency_run();
	if (PART("drops"))
		drops_run();
	/* LTTng-UST's session daemon runs from the first of these to the end */
	if (PART("lttng"))
		lttng_run();
	if (PART("dropfree"))
		dropfree_run();
	/* a probe, never part of the whole run */
	if (bopt.only && !strcmp(bopt.only, "oneway"))
		oneway_probe_run();
	lttng_done();
	drops_bpf_fold();
	if (!bopt.only)
		targets();
	rep_finish();
	return 0;
}

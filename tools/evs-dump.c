/* SPDX-License-Identifier: MIT */
/*
 * evs-dump: connect to a running producer's streams and write every tensor
 * event to disk (.npy files, or raw per-core files for the highest rates),
 * with an index, device-print output and a live status line.
 *
 * One thread (tools/common/follow.h): every stream's eventfd and producer
 * socket, a signalfd and the timers sit in one epoll set. Streams are
 * drained in turns of a bounded batch so that a busy core cannot starve
 * the others.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "follow.h"
#include "jsonl.h"
#include "dump.h"
#include "dump_writer.h"
#include "kafka_dump.h"
#include "evstream/evstream.h"

#define BATCH 256            /* records per stream per turn */
#define TICK_NS 500000000ll  /* status line */

_Static_assert(FOLLOW_MAX_CORES == DUMP_MAX_CORES, "one core range for following and dumping");

struct dumper {
	struct follow fl;    /* the producer's streams; fl.stop_now also on a limit */
	struct dump_writer w;
	uint64_t max_events, max_bytes;
	bool progress, summary;
	bool status_shown;
	uint64_t t0, last_t, last_events, last_bytes;
};

static void usage(FILE *f)
{
	fprintf(f,
"usage: evs-dump [options] [PRODUCER]      (PRODUCER defaults to evs-demo)\n"
"       evs-dump --convert RAWDIR [-o OUTDIR]\n"
"Writes every tensor event of a running producer to disk.\n"
"  -o, --output DIR      output directory (default ./dump)\n"
"  -c, --cores LIST      cores to dump, e.g. 0,2-3 (default all)\n"
"  -n, --events N        stop after N events\n"
"  -b, --bytes N         stop after N tensor bytes (K, M, G suffixes)\n"
"  -t, --seconds S       stop after S seconds (then drain what is in the rings)\n"
"  -i, --index-only      write the index and the prints, no tensor data\n"
"  -r, --raw             append records to one file per core (core<N>.evsraw)\n"
"      --convert RAWDIR  turn raw files into .npy files and an index (in OUTDIR,\n"
"                        default RAWDIR/npy)\n"
"  -w, --wait S          wait up to S seconds for the producer to appear\n"
"      --no-print        do not print the events' prefixes\n"
"  -p, --progress        live status line even when stderr is not a terminal\n"
"  -s, --summary         summary at the end even when stderr is not a terminal\n"
"  -q, --quiet           neither status line nor summary\n"
"From Kafka (what evs-forward published; docs/kafka.md), instead of PRODUCER:\n"
"      --kafka BROKERS   bootstrap servers, host:port[,host:port...]\n"
"      --topic T         the topic to read\n"
"      --group G         consumer group (default evs-dump); readers in one group\n"
"                        share the partitions\n"
"      --until-idle S    stop when every partition is read to its end and\n"
"                        nothing came for S seconds\n"
"      --timeout S       give up when no broker answers within S s (default 10)\n"
"  -X key=value          a librdkafka setting; repeatable\n"
"SIGINT, SIGTERM, SIGHUP: take what is in the rings, write it, end (a second\n"
"signal: end now).\n"
"Exit status: 0 done; 1 events could not be written (or a stream broke);\n"
"2 bad usage or setup (or a signal before the producer was found);\n"
"3 the producer died (its rings were drained first).\n");
}

/* ------------------------------------------------------------ status */

static void status_clear(void *ctx)
{
	struct dumper *d = ctx;

	if (d->status_shown) {
		fputs("\r\033[K", stderr);
		d->status_shown = false;
	}
}

static uint64_t stream_drops(const struct follow_stream *s)
{
	struct evs_stream_stats st = { .sz = sizeof(st) };

	if (evs_consumer__stats(s->c, &st))
		return 0;
	return st.dropped;
}

static void status_line(struct dumper *d)
{
	uint64_t t = cli_now_ns();
	double dt = (double)(t - d->last_t) / 1e9;
	double evs = dt > 0 ? (double)(d->w.events - d->last_events) / dt : 0;
	double mbs = dt > 0 ? (double)(d->w.bytes - d->last_bytes) / dt / 1e6 : 0;

	d->last_t = t;
	d->last_events = d->w.events;
	d->last_bytes = d->w.bytes;
	fprintf(stderr, "\r\033[K%6.1fs %9.0f ev/s %8.1f MB/s  written %.1f MB in %" PRIu64 " events  drops",
		(double)(t - d->t0) / 1e9, evs, mbs, (double)d->w.bytes / 1e6, d->w.events);
	for (unsigned int i = 0; i < d->fl.n && i < 8; i++)
		fprintf(stderr, " c%u:%" PRIu64, d->fl.s[i].core, stream_drops(&d->fl.s[i]));
	if (d->fl.n > 8)
		fprintf(stderr, " (+%u cores)", d->fl.n - 8);
	if (d->w.failed)
		fprintf(stderr, "  FAILED %" PRIu64, d->w.failed);
	d->status_shown = true;
}

static void write_summary(struct dumper *d, FILE *f, bool json)
{
	double secs = (double)(cli_now_ns() - d->t0) / 1e9;

	if (json) {
		fprintf(f, "{\"producer\":\"%s\",\"seconds\":%.3f,\"events\":%" PRIu64
			",\"bytes\":%" PRIu64 ",\"failed\":%" PRIu64 ",\"bad\":%" PRIu64
			",\"unrepresentable\":%" PRIu64 ",\"skipped\":%" PRIu64 ",\"index_error\":%s%s%s,"
			"\"unindexed\":%" PRIu64 ",\"cores\":[",
			d->fl.name, secs, d->w.events, d->w.bytes, d->w.failed, d->w.bad, d->w.unfit,
			d->w.skipped, d->w.index_errno ? "\"" : "",
			d->w.index_errno ? strerror(d->w.index_errno) : "null", d->w.index_errno ? "\"" : "",
			d->w.unindexed);
	} else {
		fprintf(f, "evs-dump: %" PRIu64 " events, %.1f MB in %.2f s (%.0f ev/s, %.1f MB/s) to %s\n"
			"  core    events   tensors        bytes    gaps",
			d->w.events, (double)d->w.bytes / 1e6, secs,
			secs > 0 ? (double)d->w.events / secs : 0,
			secs > 0 ? (double)d->w.bytes / secs / 1e6 : 0, d->w.dir);
		for (int k = 0; k < EVS_DROP_CAUSE_COUNT; k++)
			fprintf(f, "  %s", evs_drop_cause_name(k));
		fprintf(f, "  failed\n");
	}
	for (unsigned int i = 0; i < d->fl.n; i++) {
		struct follow_stream *s = &d->fl.s[i];
		struct evs_stream_stats st = { .sz = sizeof(st) };
		/* add_core() gave every stream its slot */
		const struct dump_core *c = &d->w.cores[s->core];

		evs_consumer__stats(s->c, &st);
		if (json) {
			fprintf(f, "%s{\"core\":%u,\"events\":%" PRIu64 ",\"tensors\":%" PRIu64
				",\"bytes\":%" PRIu64 ",\"gaps\":%" PRIu64 ",\"produced_before\":%" PRIu64
				",\"dropped_before\":%" PRIu64 ",\"produced\":%" PRIu64 ",\"dropped\":%" PRIu64,
				i ? "," : "", s->core, c->events, c->tensors, c->bytes, c->gaps, c->base,
				c->base_dropped, st.produced, st.dropped);
			for (int k = 0; k < EVS_DROP_CAUSE_COUNT; k++)
				fprintf(f, ",\"%s\":%" PRIu64, evs_drop_cause_name(k), st.dropped_events[k]);
			fprintf(f, ",\"failed\":%" PRIu64 ",\"bad\":%" PRIu64 ",\"unrepresentable\":%" PRIu64
				",\"skipped\":%" PRIu64 ",\"producer_died\":%s}", c->failed, c->bad, c->unfit,
				c->skipped, s->died ? "true" : "false");
		} else {
			fprintf(f, "  %4u %9" PRIu64 " %9" PRIu64 " %12" PRIu64 " %7" PRIu64,
				s->core, c->events, c->tensors, c->bytes, c->gaps);
			/* each count under its name */
			for (int k = 0; k < EVS_DROP_CAUSE_COUNT; k++)
				fprintf(f, " %*" PRIu64, (int)strlen(evs_drop_cause_name(k)) + 1,
					st.dropped_events[k]);
			fprintf(f, " %7" PRIu64 "\n", c->failed);
		}
	}
	if (json) {
		fprintf(f, "]}\n");
		return;
	}
	/* drops after a core's last event read show as no gap: said, so the
	 * table's columns add up */
	for (unsigned int i = 0; i < d->fl.n; i++) {
		struct follow_stream *s = &d->fl.s[i];
		struct evs_stream_stats st = { .sz = sizeof(st) };
		const struct dump_core *c = &d->w.cores[s->core];

		/* since it was connected: its drops less the gaps among them */
		if (evs_consumer__stats(s->c, &st) || st.dropped - c->base_dropped <= c->base_gaps)
			continue;
		fprintf(f, "  core %u: %" PRIu64 " of its drops came after the last event read", s->core,
			st.dropped - c->base_dropped - c->base_gaps);
		if (c->events)
			fprintf(f, " (seq %" PRIu64 "): no later event shows them as a gap\n", dump_core_last_seq(c));
		else
			fprintf(f, " (none was read)\n");
	}
}

/*
 * summary.json in the output directory, whole or not at all: written under
 * a temporary name, synced, then renamed over. 0, or -errno after saying
 * why (and removing the temporary).
 */
static void fill_summary(FILE *f, void *d)
{
	write_summary(d, f, true);
}

static int save_summary(struct dumper *d)
{
	int err = json_file_whole(d->w.out.fd, "summary.json", fill_summary, d);

	if (err)
		fprintf(stderr, "evs-dump: cannot write %s/summary.json: %s (none was left)\n", d->w.dir,
			strerror(-err));
	return err;
}

/* ------------------------------------------------------------ streams */

static bool limit_reached(const struct dumper *d)
{
	return (d->max_events && d->w.events >= d->max_events) ||
	       (d->max_bytes && d->w.bytes >= d->max_bytes);
}

/* One turn of a stream, for the consume() callback. */
struct turn {
	struct dumper *d;
	struct follow_stream *s;
	int err;             /* dump_writer_record() failed: stop */
};

/* The first record skipped for its sequence number, said as it happens
 * (the count is in the summary and said at the end). */
static void say_skipped(struct dumper *d, unsigned int core, uint64_t seq)
{
	status_clear(d);
	fprintf(stderr, "evs-dump: core %u: a record with sequence number %" PRIu64 " is at or below %" PRIu64
		", already dumped for that core: skipped, not indexed (a core's records are dumped once, "
		"in order: the producer repeated a sequence number or went back; further ones are "
		"counted)\n", core, seq, dump_core_last_seq(&d->w.cores[core]));
}

static int turn_record(void *ctx, const struct evs_record *rec)
{
	struct turn *t = ctx;

	t->err = dump_writer_record(&t->d->w, t->s->core, &rec->hdr, rec->data);
	if (t->err == DUMP_SKIPPED) {
		if (t->d->w.skipped == 1)
			say_skipped(t->d, t->s->core, rec->hdr.seq);
		t->err = 0;
	}
	return t->err || limit_reached(t->d);
}

/*
 * Take up to BATCH records (consume() publishes our position every 32, not
 * every record). Returns true when the stream may still hold records (come
 * back without sleeping).
 */
static bool stream_drain(struct dumper *d, struct follow_stream *s)
{
	struct turn t = { .d = d, .s = s };
	size_t budget = BATCH;

	while (budget) {
		size_t max = (size_t)follow_quota(&d->fl, s, budget);
		int n;

		if (!max)
			return false;
		n = evs_consumer__consume(s->c, turn_record, &t, max);
		if (n > 0) {
			budget -= (size_t)n;
			follow_took(&d->fl, s, (uint64_t)n);
			/* an index failure was said where it happened */
			if (t.err && !d->w.index_errno)
				fprintf(stderr, "evs-dump: core %u: %s\n", s->core, strerror(-t.err));
			if (t.err || limit_reached(d)) {
				d->fl.stop_now = true;
				return false;
			}
			continue;
		}
		if (n == 0) {
			if (follow_empty(&d->fl, s))
				continue;
			return false;
		}
		follow_end(&d->fl, s, n);
		return false;
	}
	return true;
}

static void on_token(void *ctx, uint64_t tok)
{
	struct dumper *d = ctx;

	if (tok == FOLLOW_TOK_TICK && d->progress)
		status_line(d);
}

static int run(struct dumper *d)
{
	struct follow *fl = &d->fl;

	while (fl->live && !fl->stop_now) {
		bool busy = false;
		int n;

		for (unsigned int i = 0; i < fl->n && !fl->stop_now; i++)
			if (!fl->s[i].done && fl->s[i].runnable)
				busy |= stream_drain(d, &fl->s[i]);
		/* every stream may have ended in this turn: no need to wait */
		if (!fl->live || fl->stop_now || (fl->draining && follow_drained(fl)))
			break;
		n = follow_poll(fl, busy ? 0 : -1, on_token, d);
		if (n < 0)
			return n;
	}
	return 0;
}

/* ------------------------------------------------------------ setup */

/* Each stream connected: its core directory or raw file. */
static int add_core(void *ctx, struct follow_stream *s)
{
	struct dumper *d = ctx;
	struct evs_stream_stats st = { .sz = sizeof(st) };
	int err = dump_writer_add_core(&d->w, s->core);

	/* the counters as the dump finds them: what it accounts for is
	 * what comes after (taken after connecting, every later event's
	 * drop or commit is ours to see) */
	if (!err && !evs_consumer__stats(s->c, &st)) {
		d->w.cores[s->core].base = st.produced;
		d->w.cores[s->core].base_dropped = st.dropped;
	}
	return err;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "cores", required_argument, NULL, 'c' },
		{ "events", required_argument, NULL, 'n' },
		{ "bytes", required_argument, NULL, 'b' },
		{ "seconds", required_argument, NULL, 't' },
		{ "index-only", no_argument, NULL, 'i' },
		{ "raw", no_argument, NULL, 'r' },
		{ "convert", required_argument, NULL, 'C' },
		{ "wait", required_argument, NULL, 'w' },
		{ "no-print", no_argument, NULL, 'N' },
		{ "progress", no_argument, NULL, 'p' },
		{ "summary", no_argument, NULL, 's' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		/* Kafka: tools/kafka_dump.c */
		{ "kafka", required_argument, NULL, 'K' },
		{ "topic", required_argument, NULL, 'T' },
		{ "group", required_argument, NULL, 'G' },
		{ "until-idle", required_argument, NULL, 'I' },
		{ "timeout", required_argument, NULL, 'O' },
		{ 0 },
	};
	static char *kprops[128];
	struct kafka_dump_opts ko = { .timeout = 10 };
	static unsigned char core_set[FOLLOW_MAX_CORES];
	struct dumper d = { .fl = { .name = "evs-demo", .doing = "dumping", .done = "dumped", .took = "drained" } };
	const char *out = NULL, *convert = NULL;
	const char *live = NULL;  /* the last option --convert has no use for */
	enum dump_mode mode = DUMP_NPY;
	bool all_cores = true, print = true, quiet = false;
	bool tty = isatty(STDERR_FILENO);
	double seconds = 0, wait_s = 0;
	int opt, err, rc = 0;

	d.progress = d.summary = tty;
	while ((opt = getopt_long(argc, argv, "o:c:n:b:t:irw:psqhX:", opts, NULL)) != -1) {
		switch (opt) {
		case 'o': out = optarg; break;
		case 'c':
			if (follow_parse_cores(optarg, core_set))
				return 2;
			all_cores = false;
			live = "--cores";
			break;
		case 'n':
			if (cli_parse_u64("--events", optarg, 1, UINT64_MAX, 0, &d.max_events))
				return 2;
			live = "--events";
			break;
		case 'b':
			if (cli_parse_u64("--bytes", optarg, 1, UINT64_MAX, CLI_SIZE, &d.max_bytes))
				return 2;
			live = "--bytes";
			break;
		case 't':
			if (cli_parse_double("--seconds", optarg, CLI_SECONDS_MIN, CLI_SECONDS_MAX, "seconds", &seconds))
				return 2;
			live = "--seconds";
			break;
		case 'w':
			if (cli_parse_double("--wait", optarg, 0, CLI_SECONDS_MAX, "seconds", &wait_s))
				return 2;
			live = "--wait";
			break;
		case 'i': mode = DUMP_INDEX_ONLY; live = "--index-only"; break;
		case 'r': mode = DUMP_RAW; live = "--raw"; break;
		case 'C': convert = optarg; break;
		/* --convert prints nothing (dump_convert()): refused there */
		case 'N': print = false; live = "--no-print"; break;
		case 'p': d.progress = true; d.summary = true; break;
		case 's': d.summary = true; break;
		case 'q': quiet = true; break;
		case 'h': usage(stdout); return 0;
		case 'K': ko.brokers = optarg; break;
		case 'T': ko.topic = optarg; break;
		case 'G': ko.group = optarg; break;
		case 'I':
			if (cli_parse_double("--until-idle", optarg, 0, CLI_SECONDS_MAX, "seconds", &ko.until_idle))
				return 2;
			break;
		case 'O':
			if (cli_parse_double("--timeout", optarg, 0.1, 3600, "seconds", &ko.timeout))
				return 2;
			break;
		case 'X':
			if (ko.nprops == sizeof(kprops) / sizeof(kprops[0])) {
				fprintf(stderr, "evs-dump: more than %zu -X settings\n", sizeof(kprops) / sizeof(kprops[0]));
				return 2;
			}
			kprops[ko.nprops++] = optarg;
			break;
		default: usage(stderr); return 2;
		}
	}
	if (quiet)
		d.progress = d.summary = false;
	if (ko.brokers || ko.topic) {
		if (!ko.brokers || !ko.topic || convert || !all_cores || wait_s > 0 || d.max_bytes || optind < argc) {
			fprintf(stderr, "evs-dump: --kafka BROKERS and --topic T go together, without a PRODUCER, "
				"--cores, --wait, --bytes or --convert\n");
			return 2;
		}
		/* librdkafka would wait its whole timeout for no broker at all */
		if (!*ko.brokers || !*ko.topic) {
			fprintf(stderr, "evs-dump: %s '' is empty: allowed is %s\n",
				!*ko.brokers ? "--kafka" : "--topic",
				!*ko.brokers ? "host:port[,host:port...]" : "a topic name");
			return 2;
		}
#ifdef EVS_KAFKA
		ko.props = kprops;
		ko.out = out;
		ko.mode = mode;
		ko.print = print;
		ko.progress = d.progress;
		ko.summary = d.summary;
		ko.max_events = d.max_events;
		ko.seconds = seconds;
		return kafka_dump_main(&ko);
#else
		fprintf(stderr, "evs-dump: built without Kafka (librdkafka was missing at build time: make deps, "
			"then make)\n");
		return 2;
#endif
	}
	if (convert) {
		char def[4096];

		/* what reads a producer has nothing to do here: said, not ignored */
		if (live || optind < argc) {
			if (live)
				fprintf(stderr, "evs-dump: %s is not allowed with --convert RAWDIR, which takes "
					"only -o OUTDIR, --progress, --summary and --quiet\n", live);
			else
				fprintf(stderr, "evs-dump: unexpected argument '%s': --convert RAWDIR takes no "
					"PRODUCER\n", argv[optind]);
			return 2;
		}
		if (!out) {
			snprintf(def, sizeof(def), "%s/npy", convert);
			out = def;
		}
		return dump_convert(convert, out, !quiet, d.progress);
	}
	if (optind < argc)
		d.fl.name = argv[optind++];
	if (optind < argc) {
		fprintf(stderr, "evs-dump: unexpected argument '%s': it takes one PRODUCER at most\n",
			argv[optind]);
		usage(stderr);
		return 2;
	}

	d.fl.clear_status = status_clear;
	d.fl.ctx = &d;
	if (follow_open(&d.fl)) {
		rc = 2;
		goto out;
	}
	d.w.print = print;
	d.w.clear_status = status_clear;
	d.w.ctx = &d;
	if (dump_writer_open(&d.w, out ? out : "dump", mode)) {
		rc = 2;
		goto out;
	}
	if (follow_connect(&d.fl, core_set, all_cores, wait_s, add_core, &d) ||
	    follow_arm(&d.fl, TICK_NS, seconds)) {
		rc = 2;
		goto out_abort;
	}
	d.t0 = d.last_t = cli_now_ns();

	err = run(&d);
	if (err) {
		fprintf(stderr, "evs-dump: epoll: %s\n", strerror(-err));
		rc = 2;
	}
	status_clear(&d);
	fflush(stdout);
	/* the index first: its reserve, given back, makes room for the summary */
	if (dump_writer_close_index(&d.w))
		rc = 1;
	if (save_summary(&d))
		rc = 1;
	if (d.summary)
		write_summary(&d, stderr, false);
	if (follow_report_end(&d.fl, d.summary) && !rc)
		rc = 3; /* the producer died */
	if (d.w.failed) {
		fprintf(stderr, "evs-dump: %" PRIu64 " events could not be written (%s); no partial files were left\n",
			d.w.failed, strerror(d.w.first_errno));
		rc = 1;
	}
	if (d.w.index_errno) {
		fprintf(stderr, "evs-dump: %s/index.jsonl is incomplete (%s): the dump stopped at the "
			"first event it could not index (%" PRIu64 " read and not indexed; its file, if "
			"any, was removed)\n", d.w.dir, strerror(d.w.index_errno), d.w.unindexed);
		rc = 1;
	}
	if (d.w.unfit)
		fprintf(stderr, "evs-dump: %" PRIu64 " empty tensors have shapes NumPy cannot represent: "
			"indexed with their shape, no .npy written\n", d.w.unfit);
	if (follow_any_broken(&d.fl))
		rc = 1;
	if (d.w.bad) {
		fprintf(stderr, "evs-dump: %" PRIu64 " malformed events were indexed as \"bad\"\n", d.w.bad);
		rc = rc ? rc : 1;
	}
	if (d.w.skipped) {
		fprintf(stderr, "evs-dump: %" PRIu64 " records were skipped, not indexed: each one's sequence "
			"number was at or below one already dumped for its core (the first is said above)\n",
			d.w.skipped);
		rc = rc ? rc : 1;
	}
	follow_close(&d.fl);
	if (dump_writer_close(&d.w) && !rc)
		rc = 1;
	return rc;
out_abort:
	dump_writer_abort(&d.w);
out:
	follow_close(&d.fl);
	return rc;
}

/* SPDX-License-Identifier: MIT */
/*
 * evs-dump: connect to a running producer's streams and write every tensor
 * event to disk (.npy files, or raw per-core files for the highest rates),
 * with an index, device-print output and a live status line.
 *
 * One thread: every stream's eventfd and producer socket, a signalfd and a
 * timerfd sit in one epoll set. Streams are drained in turns of a bounded
 * batch so that a busy core cannot starve the others.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>

#include "cli.h"
#include "jsonl.h"
#include "dump.h"
#include "dump_writer.h"
#include "kafka_dump.h"
#include "evstream/evstream.h"

#define BATCH 256            /* records per stream per turn */
#define TICK_NS 500000000ll  /* status line */
#define MAX_CORES DUMP_MAX_CORES

enum { TOK_SIGNAL = 1, TOK_TICK, TOK_DEADLINE, TOK_STREAM = 16 };

struct stream {
	unsigned int core;
	struct evs_consumer *c;
	int hup_fd;          /* producer socket, -1 once it hung up (or none) */
	bool runnable;       /* records may be pending: not asleep in epoll */
	bool died;           /* the stream ended because its producer died */
	bool done;           /* ended (drained, or broken) */
	bool broken;         /* the ring was corrupt: the stream was given up */
	uint64_t drain_left; /* when stopping: records still to take */
};

struct dumper {
	const char *name;
	struct dump_writer w;
	struct stream *s;
	unsigned int n, live;
	int ep, sfd, tick_fd, deadline_fd;
	uint64_t max_events, max_bytes;
	bool draining;       /* stop asked: take what is in the rings, then end */
	bool stop_now;       /* a limit was reached */
	bool progress, summary;
	bool status_shown;
	uint64_t t0, last_t, last_events, last_bytes;
	int signals;
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

static uint64_t stream_drops(const struct stream *s)
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
	for (unsigned int i = 0; i < d->n && i < 8; i++)
		fprintf(stderr, " c%u:%" PRIu64, d->s[i].core, stream_drops(&d->s[i]));
	if (d->n > 8)
		fprintf(stderr, " (+%u cores)", d->n - 8);
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
			",\"unrepresentable\":%" PRIu64 ",\"index_error\":%s%s%s,\"unindexed\":%" PRIu64
			",\"cores\":[",
			d->name, secs, d->w.events, d->w.bytes, d->w.failed, d->w.bad, d->w.unfit,
			d->w.index_errno ? "\"" : "", d->w.index_errno ? strerror(d->w.index_errno) : "null",
			d->w.index_errno ? "\"" : "", d->w.unindexed);
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
	for (unsigned int i = 0; i < d->n; i++) {
		struct stream *s = &d->s[i];
		struct evs_stream_stats st = { .sz = sizeof(st) };
		/* add_stream() gave every stream its slot */
		const struct dump_core *c = &d->w.cores[s->core];

		evs_consumer__stats(s->c, &st);
		if (json) {
			fprintf(f, "%s{\"core\":%u,\"events\":%" PRIu64 ",\"tensors\":%" PRIu64
				",\"bytes\":%" PRIu64 ",\"gaps\":%" PRIu64 ",\"produced\":%" PRIu64,
				i ? "," : "", s->core, c->events, c->tensors, c->bytes, c->gaps, st.produced);
			for (int k = 0; k < EVS_DROP_CAUSE_COUNT; k++)
				fprintf(f, ",\"%s\":%" PRIu64, evs_drop_cause_name(k), st.dropped_events[k]);
			fprintf(f, ",\"failed\":%" PRIu64 ",\"bad\":%" PRIu64 ",\"unrepresentable\":%" PRIu64
				",\"producer_died\":%s}", c->failed, c->bad, c->unfit, s->died ? "true" : "false");
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
	if (json)
		fprintf(f, "]}\n");
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

static void stream_end(struct dumper *d, struct stream *s)
{
	if (s->done)
		return;
	s->done = true;
	s->runnable = false;
	epoll_ctl(d->ep, EPOLL_CTL_DEL, evs_consumer__fd(s->c), NULL);
	if (s->hup_fd >= 0)
		epoll_ctl(d->ep, EPOLL_CTL_DEL, s->hup_fd, NULL);
	d->live--;
}

static bool limit_reached(const struct dumper *d)
{
	return (d->max_events && d->w.events >= d->max_events) ||
	       (d->max_bytes && d->w.bytes >= d->max_bytes);
}

/* The ring is drained and will stay so (-EPIPE: closed, or its producer
 * died), or it is corrupt. */
static void stream_finish(struct dumper *d, struct stream *s, int err)
{
	struct evs_stream_stats st = { .sz = sizeof(st) };

	if (err == -EPIPE) {
		s->died = !evs_consumer__stats(s->c, &st) && st.producer_died;
	} else {
		/* the library's sentence names the core and what was corrupt */
		if (err == -EBADMSG)
			fprintf(stderr, "evs-dump: %s\n", evs_errmsg());
		else
			fprintf(stderr, "evs-dump: core %u: stream broken: %s\n", s->core,
				evs_strerror(err));
		s->broken = true;
	}
	stream_end(d, s);
}

/* One turn of a stream, for the consume() callback. */
struct turn {
	struct dumper *d;
	struct stream *s;
	int err;             /* dump_writer_record() failed: stop */
};

static int turn_record(void *ctx, const struct evs_record *rec)
{
	struct turn *t = ctx;

	t->err = dump_writer_record(&t->d->w, t->s->core, &rec->hdr, rec->data);
	return t->err || limit_reached(t->d);
}

/*
 * Take up to BATCH records (consume() publishes our position every 32, not
 * every record). Returns true when the stream may still hold records (come
 * back without sleeping).
 */
static bool stream_drain(struct dumper *d, struct stream *s)
{
	struct turn t = { .d = d, .s = s };
	size_t budget = BATCH;

	while (budget) {
		size_t max = budget;
		int n;

		if (d->draining) {
			if (!s->drain_left) {
				s->runnable = false;
				return false;
			}
			if (s->drain_left < max)
				max = s->drain_left;
		}
		n = evs_consumer__consume(s->c, turn_record, &t, max);
		if (n > 0) {
			budget -= (size_t)n;
			if (d->draining)
				s->drain_left -= (uint64_t)n;
			/* an index failure was said where it happened */
			if (t.err && !d->w.index_errno)
				fprintf(stderr, "evs-dump: core %u: %s\n", s->core, strerror(-t.err));
			if (t.err || limit_reached(d)) {
				d->stop_now = true;
				return false;
			}
			continue;
		}
		if (n == 0) { /* empty */
			if (d->draining) {
				s->runnable = false;
				return false;
			}
			/* polls the producer's socket too: a hang-up gives -EPIPE
			 * once the ring is drained */
			n = evs_consumer__prepare_wait(s->c);
			if (n == 0) {
				s->runnable = false; /* asleep until the eventfd fires */
				return false;
			}
			if (n == -EAGAIN)
				continue;
		}
		stream_finish(d, s, n);
		return false;
	}
	return true;
}

/* Stop asked: take what the rings hold now, not what arrives after. */
static void start_draining(struct dumper *d)
{
	if (d->draining)
		return;
	d->draining = true;
	for (unsigned int i = 0; i < d->n; i++) {
		struct evs_stream_stats st = { .sz = sizeof(st) };
		struct stream *s = &d->s[i];

		if (s->done)
			continue;
		s->drain_left = evs_consumer__stats(s->c, &st) ? 0 : st.committed - st.released;
		s->runnable = true;
	}
}

static bool drained(const struct dumper *d)
{
	for (unsigned int i = 0; i < d->n; i++)
		if (!d->s[i].done && d->s[i].runnable)
			return false;
	return true;
}

static void handle_signal(struct dumper *d)
{
	struct signalfd_siginfo si;

	while (read(d->sfd, &si, sizeof(si)) == sizeof(si)) {
		if (++d->signals > 1)
			d->stop_now = true; /* asked twice: stop without draining */
		start_draining(d);
	}
}

/* A timerfd fired: read its count (nothing needs it) so it rearms. */
static void timer_ack(int fd)
{
	uint64_t n;
	ssize_t r = read(fd, &n, sizeof(n));

	(void)r;
}

static int run(struct dumper *d)
{
	struct epoll_event evs[64];

	while (d->live && !d->stop_now) {
		bool busy = false;
		int n;

		for (unsigned int i = 0; i < d->n && !d->stop_now; i++)
			if (!d->s[i].done && d->s[i].runnable)
				busy |= stream_drain(d, &d->s[i]);
		/* every stream may have ended in this turn: no need to wait */
		if (!d->live || d->stop_now || (d->draining && drained(d)))
			break;
		n = epoll_wait(d->ep, evs, 64, busy ? 0 : -1);
		if (n < 0 && errno != EINTR)
			return -errno;
		for (int i = 0; i < n; i++) {
			uint64_t tok = evs[i].data.u64;

			if (tok == TOK_SIGNAL) {
				handle_signal(d);
			} else if (tok == TOK_TICK) {
				timer_ack(d->tick_fd);
				if (d->progress)
					status_line(d);
			} else if (tok == TOK_DEADLINE) {
				timer_ack(d->deadline_fd);
				start_draining(d);
			} else {
				struct stream *s = &d->s[(tok - TOK_STREAM) >> 1];

				if (s->done)
					continue;
				if ((tok - TOK_STREAM) & 1) {
					/* the producer went away: stop watching (it stays
					 * readable); draining then meets -EPIPE */
					epoll_ctl(d->ep, EPOLL_CTL_DEL, s->hup_fd, NULL);
					s->hup_fd = -1;
				}
				if (!d->draining)
					s->runnable = true;
			}
		}
	}
	return 0;
}

/* ------------------------------------------------------------ setup */

/* "0,2-3" into a bitmap of MAX_CORES; -EINVAL (malformed) or -ERANGE (a
 * core beyond MAX_CORES - 1) after saying which. */
static int parse_cores(const char *arg, unsigned char *set)
{
	const char *s = arg;

	/* an empty list would be a dump of nothing that looks like success */
	if (!*s)
		goto bad;
	while (*s) {
		const char *num = s;
		char *end;
		unsigned long a, b;

		/* digits only: strtoul would also take a sign or blanks */
		if (!isdigit((unsigned char)*s))
			goto bad;
		a = b = strtoul(s, &end, 10);
		if (a >= MAX_CORES)
			goto range;
		s = end;
		if (*s == '-') {
			num = ++s;
			if (!isdigit((unsigned char)*s))
				goto bad;
			b = strtoul(s, &end, 10);
			if (b >= MAX_CORES)
				goto range;
			if (b < a)
				goto bad;
			s = end;
		}
		for (unsigned long i = a; i <= b; i++)
			set[i] = 1;
		if (*s == ',')
			s++;
		else if (*s)
			goto bad;
		continue;
range:
		fprintf(stderr, "evs-dump: --cores '%s': core %.*s is out of range; cores are 0 to %u\n",
			arg, (int)strspn(num, "0123456789"), num, MAX_CORES - 1);
		return -ERANGE;
	}
	return 0;
bad:
	fprintf(stderr, "evs-dump: --cores '%s': use a list like 0,2-3\n", arg);
	return -EINVAL;
}

static int add_stream(struct dumper *d, unsigned int core, struct evs_consumer *c)
{
	struct stream *s = &d->s[d->n];
	struct epoll_event ev = { .events = EPOLLIN };
	int idx = (int)d->n;

	*s = (struct stream){ .core = core, .c = c, .hup_fd = evs_consumer__hup_fd(c), .runnable = true };
	ev.data.u64 = TOK_STREAM + ((uint64_t)idx << 1);
	if (epoll_ctl(d->ep, EPOLL_CTL_ADD, evs_consumer__fd(c), &ev) < 0)
		return -errno;
	if (s->hup_fd >= 0) {
		ev.events = EPOLLIN | EPOLLRDHUP;
		ev.data.u64 = TOK_STREAM + ((uint64_t)idx << 1) + 1;
		if (epoll_ctl(d->ep, EPOLL_CTL_ADD, s->hup_fd, &ev) < 0)
			return -errno;
	}
	d->n++;
	d->live++;
	return dump_writer_add_core(&d->w, core);
}

/* The producer is no longer there to connect to: it exited (its socket
 * is gone), died (nobody listens), or hung up during the handshake. */
static bool producer_gone(int err)
{
	return err == ENOENT || err == ECONNREFUSED || err == ECONNRESET || err == EPIPE;
}

static int connect_all(struct dumper *d, const unsigned char *set, bool all, double wait_s)
{
	for (unsigned int core = 0; core < MAX_CORES; core++) {
		struct evs_consumer *c;
		uint64_t t0;
		int err;

		if (!all && !set[core])
			continue;
		t0 = cli_now_ns();
		c = cli_connect_or_stop(d->name, core, core == 0 || !all ? wait_s : 0, false, d->sfd);
		if (!c) {
			err = errno;
			if (all && err == EINVAL && d->n)
				break; /* past the producer's last core */
			if (d->n && producer_gone(err)) {
				/* what it committed on the cores already connected
				 * is in their rings: dump it */
				fprintf(stderr, "evs-dump: producer '%s' ended while its cores were being "
					"connected (core %u: %s); dumping the %u connected\n", d->name, core,
					*evs_errmsg() ? evs_errmsg() : strerror(err), d->n);
				break;
			}
			if (err == EINTR) {
				struct signalfd_siginfo si = { 0 };

				if (read(d->sfd, &si, sizeof(si)) != sizeof(si))
					si.ssi_signo = 0;
				const char *sig = si.ssi_signo ? sigabbrev_np((int)si.ssi_signo) : NULL;

				fprintf(stderr, "evs-dump: SIG%s while waiting for producer '%s'; nothing was "
					"dumped\n", sig ? sig : "?", d->name);
				return -EINTR;
			}
			fprintf(stderr, "evs-dump: cannot connect to core %u of producer '%s': %s", core,
				d->name, *evs_errmsg() ? evs_errmsg() : strerror(err));
			if (err == ETIMEDOUT)
				fprintf(stderr, " (tried for %.1f s)", (double)(cli_now_ns() - t0) / 1e9);
			fputc('\n', stderr);
			return -err;
		}
		err = add_stream(d, core, c);
		if (err)
			return err;
	}
	return 0;
}

static int arm_timer(int fd, int64_t first_ns, int64_t period_ns)
{
	struct itimerspec it = {
		.it_value = { first_ns / 1000000000, first_ns % 1000000000 },
		.it_interval = { period_ns / 1000000000, period_ns % 1000000000 },
	};

	return timerfd_settime(fd, 0, &it, NULL) < 0 ? -errno : 0;
}

static int add_fd(int ep, int fd, uint64_t tok)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = tok };

	return epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) < 0 ? -errno : 0;
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
	static unsigned char core_set[MAX_CORES];
	struct dumper d = { .name = "evs-demo", .ep = -1, .sfd = -1, .tick_fd = -1, .deadline_fd = -1 };
	const char *out = NULL, *convert = NULL;
	enum dump_mode mode = DUMP_NPY;
	bool all_cores = true, print = true, quiet = false;
	bool tty = isatty(STDERR_FILENO);
	double seconds = 0, wait_s = 0;
	sigset_t mask;
	int opt, err, rc = 0;

	d.progress = d.summary = tty;
	while ((opt = getopt_long(argc, argv, "o:c:n:b:t:irw:psqhX:", opts, NULL)) != -1) {
		switch (opt) {
		case 'o': out = optarg; break;
		case 'c':
			if (parse_cores(optarg, core_set))
				return 2;
			all_cores = false;
			break;
		case 'n':
			if (cli_parse_u64("--events", optarg, 0, UINT64_MAX, 0, &d.max_events))
				return 2;
			break;
		case 'b':
			if (cli_parse_u64("--bytes", optarg, 0, UINT64_MAX, CLI_SIZE, &d.max_bytes))
				return 2;
			break;
		case 't':
			if (cli_parse_double("--seconds", optarg, 0, CLI_SECONDS_MAX, "seconds", &seconds))
				return 2;
			break;
		case 'w':
			if (cli_parse_double("--wait", optarg, 0, CLI_SECONDS_MAX, "seconds", &wait_s))
				return 2;
			break;
		case 'i': mode = DUMP_INDEX_ONLY; break;
		case 'r': mode = DUMP_RAW; break;
		case 'C': convert = optarg; break;
		case 'N': print = false; break;
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

		if (!out) {
			snprintf(def, sizeof(def), "%s/npy", convert);
			out = def;
		}
		return dump_convert(convert, out, !quiet);
	}
	if (optind < argc)
		d.name = argv[optind++];
	if (optind < argc) {
		usage(stderr);
		return 2;
	}

	signal(SIGPIPE, SIG_IGN);
	/* From here on signals arrive through the signalfd: while waiting for
	 * the producer (which then gives up cleanly), and in the epoll set,
	 * between records. A hang-up (terminal or ssh closed) stops like
	 * SIGTERM, so the index up to there is written. */
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	d.sfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
	d.tick_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	d.deadline_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	d.ep = epoll_create1(EPOLL_CLOEXEC);
	d.s = calloc(MAX_CORES, sizeof(*d.s));
	if (d.sfd < 0 || d.tick_fd < 0 || d.deadline_fd < 0 || d.ep < 0 || !d.s ||
	    add_fd(d.ep, d.sfd, TOK_SIGNAL) || add_fd(d.ep, d.tick_fd, TOK_TICK) ||
	    add_fd(d.ep, d.deadline_fd, TOK_DEADLINE)) {
		perror("evs-dump: setting up epoll");
		rc = 2;
		goto out_fds;
	}

	d.w.print = print;
	d.w.clear_status = status_clear;
	d.w.ctx = &d;
	if (dump_writer_open(&d.w, out ? out : "dump", mode)) {
		rc = 2;
		goto out_fds;
	}
	if (connect_all(&d, core_set, all_cores, wait_s)) {
		rc = 2;
		goto out_abort;
	}
	if (arm_timer(d.tick_fd, TICK_NS, TICK_NS) ||
	    (seconds > 0 && arm_timer(d.deadline_fd, (int64_t)(seconds * 1e9), 0))) {
		perror("evs-dump: arming timers");
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
	{
		unsigned int died = 0, ended = 0;

		for (unsigned int i = 0; i < d.n; i++) {
			died += d.s[i].died;
			/* a broken stream ended too, but not closed by its producer */
			ended += d.s[i].done && !d.s[i].broken;
		}
		if (died) {
			fprintf(stderr, "evs-dump: producer '%s' died (hang-up without closing its streams); "
				"everything it had committed was drained\n", d.name);
			if (!rc)
				rc = 3;
		} else if (ended == d.n && d.summary) {
			fprintf(stderr, "evs-dump: producer '%s' closed its streams; everything it committed was drained\n",
				d.name);
		}
	}
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
	for (unsigned int i = 0; i < d.n; i++)
		if (d.s[i].broken)
			rc = 1;
	if (d.w.bad) {
		fprintf(stderr, "evs-dump: %" PRIu64 " malformed events were indexed as \"bad\"\n", d.w.bad);
		rc = rc ? rc : 1;
	}
	for (unsigned int i = 0; i < d.n; i++)
		evs_consumer__free(d.s[i].c);
	if (dump_writer_close(&d.w) && !rc)
		rc = 1;
	goto out_fds;
out_abort:
	for (unsigned int i = 0; i < d.n; i++)
		evs_consumer__free(d.s[i].c);
	dump_writer_abort(&d.w);
out_fds:
	{
		int fds[] = { d.ep, d.sfd, d.tick_fd, d.deadline_fd };

		for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
			if (fds[i] >= 0)
				close(fds[i]);
	}
	free(d.s);
	return rc;
}

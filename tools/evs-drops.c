/* SPDX-License-Identifier: MIT */
/*
 * evs-drops: how many events each evstream stream drops, and why, read from
 * the USDT probe evstream:drop with a BPF program; the running producers are
 * neither touched nor restarted. See docs/drop-stats.md.
 */
#include <errno.h>
#include <stdint.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <fcntl.h>
#include <sys/wait.h>

#include "cli.h"
#include "drops_loader.h"
#include "jsonl.h"

struct entry {
	struct evs_drop_key k;
	struct evs_drop_val v;
};

struct snap {
	struct entry *e;
	size_t n, cap;
	double t;
};

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static void usage(FILE *f)
{
	fprintf(f,
"usage: evs-drops [options]\n"
"Counts the events evstream producers drop, per process and logical core,\n"
"with a BPF program on the USDT probe evstream:drop, and prints a table.\n"
"\n"
"  -b, --binary PATH   library or program with the probes (default: the\n"
"                      libevstream.so built next to evs-drops, else installed)\n"
"  -p, --pid PID       only that process (its mapped libevstream.so)\n"
"  -d, --pin-dir DIR   where the maps are pinned (default " EVS_DROPS_PIN_DIR ")\n"
"  -i, --interval SEC  seconds between tables (default 1)\n"
"  -n, --count N       print N tables, then exit (default: until Ctrl-C)\n"
"      --once          one table after one interval (same as -n 1)\n"
"      --json          one JSON object per table, one per line\n"
"      --background    attach, keep counting in a background process, exit\n"
"      --detach        stop counting and remove the pins\n"
"  -v, --verbose       show libbpf's messages\n"
"  -h, --help\n"
"\n"
"Counts survive evs-drops: they stay pinned (bpftool map dump pinned\n"
"DIR/drops) until --detach. A second evs-drops reuses the pinned maps and\n"
"does not attach again, so nothing is counted twice.\n");
}

static int cmp_entry(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;

	if (x->k.pid != y->k.pid)
		return x->k.pid < y->k.pid ? -1 : 1;
	return x->k.core < y->k.core ? -1 : x->k.core > y->k.core;
}

static int snap_add(void *ctx, const struct evs_drop_key *k, const struct evs_drop_val *v)
{
	struct snap *s = ctx;

	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 256;
		struct entry *e = realloc(s->e, cap * sizeof(*e));

		if (!e)
			return -1;
		s->e = e;
		s->cap = cap;
	}
	s->e[s->n].k = *k;
	s->e[s->n].v = *v;
	s->n++;
	return 0;
}

static int snap_take(const struct evs_drops *d, struct snap *s)
{
	int n;

	s->n = 0;
	s->t = (double)cli_now_ns() / 1e9;
	n = evs_drops__for_each(d, snap_add, s);
	if (n < 0)
		return n;
	if (s->n) /* s->e is NULL before the first entry: qsort(NULL) is undefined */
		qsort(s->e, s->n, sizeof(*s->e), cmp_entry);
	return 0;
}

static const struct evs_drop_val *snap_find(const struct snap *s, const struct evs_drop_key *k)
{
	struct entry key = { .k = *k };
	/* s->e is NULL before the first entry: bsearch(NULL) is undefined */
	struct entry *e = s->n ? bsearch(&key, s->e, s->n, sizeof(*s->e), cmp_entry) : NULL;

	return e ? &e->v : NULL;
}

static void comm_clean(char *out, const char *comm)
{
	size_t i;

	for (i = 0; i < 15 && comm[i]; i++)
		out[i] = (comm[i] >= 0x20 && comm[i] < 0x7f) ? comm[i] : '?';
	out[i] = 0;
	if (!i)
		strcpy(out, "?");
}

static double rate_of(const struct snap *prev, const struct entry *e, double dt)
{
	const struct evs_drop_val *p = snap_find(prev, &e->k);
	uint64_t before = p ? p->events : 0;

	if (dt <= 0 || e->v.events < before)
		return 0;
	return (double)(e->v.events - before) / dt;
}

/* evs_drop_cause_name()'s words: evs-drops reads libevstream's probes and
 * does not link it, so the names are kept here, once, by enum value. */
static const char *const cause_names[] = {
	[EVS_DROP_RING_FULL] = "ring_full",
	[EVS_DROP_TOO_BIG] = "too_big",
	[EVS_DROP_NO_CONSUMER] = "no_consumer",
	[EVS_DROP_NO_MEMORY] = "no_memory",
};
_Static_assert(sizeof(cause_names) / sizeof(cause_names[0]) == EVS_DROP_CAUSE_COUNT, "causes");

/* The BPF map's count for a cause (its fields follow enum evs_drop_cause). */
static uint64_t cause_events(const struct evs_drop_val *v, int cause)
{
	switch (cause) {
	case EVS_DROP_RING_FULL: return v->ring_full;
	case EVS_DROP_TOO_BIG: return v->too_big;
	case EVS_DROP_NO_CONSUMER: return v->no_consumer;
	case EVS_DROP_NO_MEMORY: return v->no_memory;
	}
	return 0;
}

static void print_causes(const struct evs_drop_val *v)
{
	int any = 0;

	for (int k = 0; k < EVS_DROP_CAUSE_COUNT; k++)
		if (cause_events(v, k))
			any += printf("%s%s=%llu", any ? " " : "", cause_names[k],
				      (unsigned long long)cause_events(v, k)) > 0;
	if (!any)
		printf("-");
}

static void print_table(const struct evs_drops *d, const struct snap *cur,
			const struct snap *prev)
{
	double dt = cur->t - prev->t;
	unsigned long long ev = 0, by = 0;
	double rate = 0;
	char tbuf[32], comm[16];
	time_t now = time(NULL);
	pid_t owner = evs_drops__owner_pid(d);

	strftime(tbuf, sizeof(tbuf), "%H:%M:%S", localtime(&now));
	printf("%s  evstream drops  (maps %s, ", tbuf, evs_drops__pin_dir(d));
	if (evs_drops__is_owner(d))
		printf("counted by this process");
	else if (owner)
		printf("counted by evs-drops pid %d", (int)owner);
	else
		printf("nobody attached: counts are frozen");
	printf(")\n");
	printf("%8s %-15s %5s %14s %12s %14s %8s  %s\n", "PID", "COMM", "CORE", "DROPPED",
	       "DROPPED/s", "BYTES", "BURSTS", "CAUSES");
	for (size_t i = 0; i < cur->n; i++) {
		const struct entry *e = &cur->e[i];
		double r = rate_of(prev, e, dt);

		comm_clean(comm, e->v.comm);
		printf("%8u %-15s %5u %14llu %12.1f %14llu %8llu  ", e->k.pid, comm, e->k.core,
		       (unsigned long long)e->v.events, r, (unsigned long long)e->v.bytes,
		       (unsigned long long)e->v.bursts);
		print_causes(&e->v);
		putchar('\n');
		ev += e->v.events;
		by += e->v.bytes;
		rate += r;
	}
	if (!cur->n)
		printf("%8s (no drops recorded since the probe was attached)\n", "-");
	else
		printf("%8s %-15s %5s %14llu %12.1f %14llu\n", "total", "", "", ev, rate, by);
	putchar('\n');
	fflush(stdout);
}

static void print_json(const struct evs_drops *d, const struct snap *cur, const struct snap *prev)
{
	double dt = cur->t - prev->t;
	char comm[16];

	printf("{\"time\":%lld,\"interval_s\":%.3f,\"pin_dir\":", (long long)time(NULL), dt);
	json_put_str(stdout, evs_drops__pin_dir(d));
	printf(",\"binary\":");
	json_put_str(stdout, evs_drops__binary(d));
	printf(",\"owner_pid\":%d,\"entries\":[", (int)evs_drops__owner_pid(d));
	for (size_t i = 0; i < cur->n; i++) {
		const struct entry *e = &cur->e[i];

		comm_clean(comm, e->v.comm);
		printf("%s{\"pid\":%u,\"comm\":", i ? "," : "", e->k.pid);
		json_put_str(stdout, comm);
		printf(",\"core\":%u,\"events\":%llu,\"events_per_s\":%.1f,\"bytes\":%llu,"
		       "\"bursts\":%llu,\"batches\":%llu",
		       e->k.core, (unsigned long long)e->v.events, rate_of(prev, e, dt),
		       (unsigned long long)e->v.bytes, (unsigned long long)e->v.bursts,
		       (unsigned long long)e->v.batches);
		for (int k = 0; k < EVS_DROP_CAUSE_COUNT; k++)
			printf(",\"%s\":%llu", cause_names[k],
			       (unsigned long long)cause_events(&e->v, k));
		printf(",\"stream_total\":%llu}", (unsigned long long)e->v.total);
	}
	printf("]}\n");
	fflush(stdout);
}

static void sleep_s(double s)
{
	struct timespec ts = { (time_t)s, (long)((s - (time_t)s) * 1e9) };

	/* a signal ends the sleep early; the caller checks stop */
	nanosleep(&ts, NULL);
}

/* Attach in a child that keeps the probe until --detach (SIGTERM). */
static int run_background(const struct evs_drops_opts *o)
{
	int pfd[2], status;
	char msg[2200];
	ssize_t n;
	pid_t pid;

	if (pipe(pfd))
		return perror("pipe"), 1;
	pid = fork();
	if (pid < 0)
		return perror("fork"), 1;
	if (pid == 0) {
		struct evs_drops *d;
		int fd;

		close(pfd[0]);
		setsid();
		/* opened here: a relative --pin-dir is the caller's */
		d = evs_drops__open(o);
		/* a daemon must not keep the caller's directory busy */
		if (chdir("/"))
			_exit(1);
		if (!d) {
			snprintf(msg, sizeof(msg), "E%s", evs_drops__errmsg());
		} else if (!evs_drops__is_owner(d) && evs_drops__owner_in_background(d)) {
			snprintf(msg, sizeof(msg), "Oevs-drops pid %d already counts drops of %s into "
				 "%s in the background; nothing else was started",
				 (int)evs_drops__owner_pid(d), evs_drops__binary(d),
				 evs_drops__pin_dir(d));
		} else if (!evs_drops__is_owner(d)) {
			/* a background reader would leave nothing counting once the
			 * owner exits: refuse rather than seem to have started */
			snprintf(msg, sizeof(msg), "Eevs-drops pid %d counts drops of %s into %s, "
				 "not in the background: counting stops when it exits, so no "
				 "background evs-drops was started; stop it (Ctrl-C where it runs, "
				 "or kill %d) and run --background again, or give another --pin-dir",
				 (int)evs_drops__owner_pid(d), evs_drops__binary(d),
				 evs_drops__pin_dir(d), (int)evs_drops__owner_pid(d));
		} else {
			snprintf(msg, sizeof(msg), "Kcounting drops of %s in the background "
				 "(pid %d), maps in %s; `evs-drops --detach%s%s` stops it",
				 evs_drops__binary(d), (int)getpid(), evs_drops__pin_dir(d),
				 o->pin_dir ? " --pin-dir " : "", o->pin_dir ? evs_drops__pin_dir(d) : "");
		}
		if (write(pfd[1], msg, strlen(msg)) < 0)
			_exit(1);
		close(pfd[1]);
		if (!d || !evs_drops__is_owner(d)) {
			evs_drops__free(d);
			_exit(d ? 0 : 1);
		}
		fd = open("/dev/null", O_RDWR);
		if (fd >= 0) {
			dup2(fd, 0);
			dup2(fd, 1);
			dup2(fd, 2);
			if (fd > 2)
				close(fd);
		}
		/* a --pid process that exits leaves nothing to count: let go */
		while (!stop && !evs_drops__refresh(d))
			sleep_s(1);
		evs_drops__free(d);
		_exit(0);
	}
	close(pfd[1]);
	n = read(pfd[0], msg, sizeof(msg) - 1);
	close(pfd[0]);
	msg[n > 0 ? n : 0] = 0;
	if (n <= 0 || msg[0] == 'E') {
		waitpid(pid, &status, 0);
		fprintf(stderr, "evs-drops: %s\n", n > 0 ? msg + 1 : "background process failed");
		return 1;
	}
	if (msg[0] == 'O')
		waitpid(pid, &status, 0);
	printf("evs-drops: %s\n", msg + 1);
	return 0;
}

int main(int argc, char **argv)
{
	enum { OPT_ONCE = 256, OPT_JSON, OPT_DETACH, OPT_BG };
	static const struct option lopts[] = {
		{ "binary", required_argument, NULL, 'b' },
		{ "pid", required_argument, NULL, 'p' },
		{ "pin-dir", required_argument, NULL, 'd' },
		{ "interval", required_argument, NULL, 'i' },
		{ "count", required_argument, NULL, 'n' },
		{ "once", no_argument, NULL, OPT_ONCE },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "detach", no_argument, NULL, OPT_DETACH },
		{ "background", no_argument, NULL, OPT_BG },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	struct evs_drops_opts o = { .sz = sizeof(o) };
	int json = 0, detach = 0, bg = 0, gone = 0, c, err;
	long count = 0;
	double interval = 1.0;
	struct snap prev = { 0 }, cur = { 0 };
	struct sigaction sa = { .sa_handler = on_signal };
	struct evs_drops *d;
	uint64_t v;

	while ((c = getopt_long(argc, argv, "b:p:d:i:n:vh", lopts, NULL)) != -1) {
		switch (c) {
		case 'b': o.binary = optarg; break;
		case 'p':
			if (cli_parse_u64("--pid", optarg, 1, INT_MAX, 0, &v))
				return 2;
			o.pid = (pid_t)v;
			break;
		case 'd': o.pin_dir = optarg; break;
		case 'i':
			if (cli_parse_double("--interval", optarg, 0.001, 86400, "seconds", &interval))
				return 2;
			break;
		case 'n':
			if (cli_parse_u64("--count", optarg, 1, LONG_MAX, 0, &v))
				return 2;
			count = (long)v;
			break;
		case OPT_ONCE: count = 1; break;
		case OPT_JSON: json = 1; break;
		case OPT_DETACH: detach = 1; break;
		case OPT_BG: bg = 1; break;
		case 'v': evs_drops__set_verbose(1); break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "evs-drops: unexpected argument '%s': it takes options only\n", argv[optind]);
		usage(stderr);
		return 2;
	}
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);

	if (detach) {
		const char *dir = o.pin_dir ? o.pin_dir : EVS_DROPS_PIN_DIR;
		struct evs_drops_unpinned r;

		err = evs_drops__check_env(dir);
		if (!err)
			err = evs_drops__unpin_report(dir, &r);
		if (err) {
			fprintf(stderr, "evs-drops: %s\n", evs_drops__errmsg());
			return 1;
		}
		if (r.stopped)
			printf("evs-drops: stopped evs-drops pid %d, which counted into %s, and "
			       "removed its counts\n", (int)r.stopped, dir);
		else if (r.pins)
			printf("evs-drops: nothing was counting into %s; removed the counts "
			       "left pinned there\n", dir);
		else
			printf("evs-drops: nothing pinned at %s: nothing to detach\n", dir);
		return 0;
	}
	if (bg)
		return run_background(&o);

	d = evs_drops__open(&o);
	if (!d) {
		fprintf(stderr, "evs-drops: %s\n", evs_drops__errmsg());
		return 1;
	}
	if (!json && !evs_drops__is_owner(d))
		fprintf(stderr, "evs-drops: evs-drops pid %d already counts into %s: reading its maps\n",
			(int)evs_drops__owner_pid(d), evs_drops__pin_dir(d));
	if ((err = snap_take(d, &prev)))
		fprintf(stderr, "evs-drops: reading the map: %s\n", strerror(-err));
	for (long i = 0; !err && !stop && !gone && (!count || i < count); i++) {
		int was_owner = evs_drops__is_owner(d);

		sleep_s(interval);
		if ((err = evs_drops__refresh(d))) {
			fprintf(stderr, "evs-drops: %s\n", evs_drops__errmsg());
			if (err != -ESRCH)
				break;
			/* the --pid process exited: its last counts are still shown */
			gone = 1;
			err = 0;
		}
		if (!was_owner && evs_drops__is_owner(d) && !json)
			fprintf(stderr, "evs-drops: the owner exited; this process counts now\n");
		if ((err = snap_take(d, &cur))) {
			fprintf(stderr, "evs-drops: reading the map: %s\n", strerror(-err));
			break;
		}
		if (json)
			print_json(d, &cur, &prev);
		else
			print_table(d, &cur, &prev);
		struct snap t = prev;
		prev = cur;
		cur = t;
	}
	if (evs_drops__is_owner(d) && !json && !count)
		fprintf(stderr, "evs-drops: probe detached; counts stay pinned in %s "
			"(evs-drops --detach removes them)\n", evs_drops__pin_dir(d));
	evs_drops__free(d);
	free(prev.e);
	free(cur.e);
	return err ? 1 : 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * eBPF drop accounting: the USDT probes in libevstream.so, the BPF map they
 * feed (read with libbpf and with `bpftool -j map dump pinned`), the probe
 * semaphore, evs-drops' pin/reuse/detach/takeover, and what it refuses to
 * find at the pin path. Needs root and a kernel with
 * BTF and uprobes; skips loudly otherwise. Pins go to a directory unique to
 * the test process, never to /sys/fs/bpf/evstream.
 */
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <bpf/bpf.h>

#include "helpers.h"
#include "evstream-private/introspect.h"

#ifdef EVS_HAVE_BPF
#include "drops_loader.h"

#define NPROC    3
#define NCORES   3        /* cores 0, 1: stalled consumer; core 2: none */
#define MAXEV    8        /* event limit of each ring */
#define RING     65536
#define SMALL    100
#define BIG      (RING + 1)
#define BATCH    EVS__DROP_BATCH

struct lib_info {
	char path[PATH_MAX];
	unsigned long base;
};

static int find_lib(struct dl_phdr_info *info, size_t size, void *ctx)
{
	struct lib_info *li = ctx;

	(void)size;
	if (info->dlpi_name && strstr(info->dlpi_name, "libevstream.so")) {
		if (!realpath(info->dlpi_name, li->path))
			return 0;
		li->base = info->dlpi_addr;
		return 1;
	}
	return 0;
}

static const struct lib_info *this_lib(void)
{
	static struct lib_info li;

	if (!li.path[0])
		dl_iterate_phdr(find_lib, &li);
	ck_assert_msg(li.path[0], "libevstream.so is not mapped in the test");
	return &li;
}

/* The drop probe's semaphore as this process sees it. */
static unsigned short drop_semaphore(void)
{
	const struct lib_info *li = this_lib();
	struct evs_stapsdt_note n;

	ck_assert_int_eq(evs_stapsdt_find(li->path, "evstream", "drop", &n), 0);
	ck_assert(n.sema != 0);
	return __atomic_load_n((unsigned short *)(li->base + n.sema), __ATOMIC_RELAXED);
}

/* the suite's pid, so main() can clean up after a test that failed midway */
static pid_t suite_pid;
static const char *const pin_tags[] = { "multi", "lag", "sema", "reuse", "tool", "err",
					  "json\t\x01\xff", "layout", "dir", "real", "user",
					  "owner", "rel", "scope", "takeover", "fg", "pidexit",
					  "said" };

static const char *pin_dir(const char *tag)
{
	static char buf[128];

	snprintf(buf, sizeof(buf), "/sys/fs/bpf/evstream-test-%d-%s", (int)suite_pid, tag);
	return buf;
}

static const char *tool_path(void)
{
	static char buf[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 32);
	char *slash;

	ck_assert(n > 0);
	buf[n] = 0;
	slash = strrchr(buf, '/');
	ck_assert(slash);
	strcpy(slash, "/../evs-drops");
	return buf;
}

/* Skip (loudly) unless BPF can be used here. */
#define NEED_BPF(dir)                                                           \
	do {                                                                    \
		if (evs_drops__check_env(dir))                                  \
			EVS_SKIP("BPF unusable here: %s", evs_drops__errmsg()); \
	} while (0)

static struct evs_drops *attach(const char *dir)
{
	struct evs_drops_opts o = { .sz = sizeof(o), .pin_dir = dir, .binary = this_lib()->path };
	struct evs_drops *d = evs_drops__open(&o);

	ck_assert_msg(d, "evs_drops__open: %s", evs_drops__errmsg());
	return d;
}

static void stats_of(struct evs_producer *p, unsigned int core, struct evs_stream_stats *st)
{
	memset(st, 0, sizeof(*st));
	st->sz = sizeof(*st);
	ck_assert_int_eq(evs_producer__stats(p, core, st), 0);
}

static uint64_t sum(const uint64_t *v)
{
	uint64_t s = 0;

	for (int i = 0; i < EVS_DROP_CAUSE_COUNT; i++)
		s += v[i];
	return s;
}

static void emit_n(struct evs_producer *p, unsigned int core, int n, size_t size, int want)
{
	static char buf[BIG];

	for (int i = 0; i < n; i++)
		ck_assert_int_eq(evs_producer__emit(p, core, 1, buf, size), want);
}

static int count_one(void *ctx, const struct evs_record *r)
{
	(void)r;
	(*(int *)ctx)++;
	return 0;
}

START_TEST(test_library_has_probe_notes_with_semaphores)
{
	static const char *const probes[] = { "drop", "connect", "disconnect", "wakeup" };
	struct evs_stapsdt_note n;

	for (size_t i = 0; i < sizeof(probes) / sizeof(probes[0]); i++) {
		ck_assert_msg(evs_stapsdt_find(this_lib()->path, "evstream", probes[i], &n) == 0,
			      "no evstream:%s note in %s", probes[i], this_lib()->path);
		ck_assert_msg(n.sema != 0, "evstream:%s has no semaphore", probes[i]);
	}
	/* drop(core, events, bytes, cause, total, first) */
	ck_assert_int_eq(evs_stapsdt_find(this_lib()->path, "evstream", "drop", &n), 0);
	int args = 1;
	for (const char *s = n.args; *s; s++)
		args += *s == ' ';
	ck_assert_int_eq(args, 6);
	ck_assert_int_eq(evs_stapsdt_find("/bin/true", "evstream", "drop", &n), -ENOENT);
}
END_TEST

/*
 * One child: ring-full and too-big drops on cores 0 and 1 (consumer attached
 * and stalled), no-consumer drops on core 2; runs that end by an accepted
 * event, cause changes inside a run, runs longer than a batch. Writes its
 * final shared-header stats to fd.
 */
static void child_drops(int idx, int fd)
{
	EVS_OPTS(evs_producer_opts, o, .max_events = MAXEV, .ring_bytes = RING,
		 .hugepages = EVS_HUGEPAGES_OFF);
	struct evs_stream_stats st[NCORES];
	struct evs_consumer *c[2];
	char name[80];
	struct evs_producer *p;

	snprintf(name, sizeof(name), "%s-%d", evs_test_name("bpf"), idx);
	p = evs_producer__new(name, NCORES, &o);
	ck_assert_msg(p, "producer: %s", evs_errmsg());
	for (int core = 0; core < 2; core++) {
		int got = 0;

		c[core] = evs_consumer__connect(name, core, NULL);
		ck_assert_msg(c[core], "consumer: %s", evs_errmsg());
		emit_n(p, core, MAXEV, SMALL, 0);
		emit_n(p, core, 50 + 7 * idx + 3 * core, SMALL, -ENOBUFS);
		emit_n(p, core, 2 + core, BIG, -EMSGSIZE);          /* cause changes */
		emit_n(p, core, 1500 + 100 * idx, SMALL, -ENOBUFS); /* crosses a batch */
		ck_assert_int_eq(evs_consumer__consume(c[core], count_one, &got, 0), MAXEV);
		emit_n(p, core, 1, SMALL, 0);                       /* run 1 ends */
		emit_n(p, core, 3, BIG, -EMSGSIZE);
		emit_n(p, core, 1, SMALL, 0);                       /* run 2 ends */
		emit_n(p, core, MAXEV - 2, SMALL, 0);
		emit_n(p, core, 2 * BATCH + 52, SMALL, -ENOBUFS);   /* run 3: flushed */
		ck_assert_int_eq(evs_producer__flush(p, core), 0);
	}
	emit_n(p, 2, 300 + idx, SMALL, -ENOTCONN);
	ck_assert_int_eq(evs_producer__flush(p, 2), 0);
	for (int core = 0; core < NCORES; core++)
		stats_of(p, core, &st[core]);
	ck_assert(write(fd, st, sizeof(st)) == sizeof(st));
	evs_consumer__free(c[0]);
	evs_consumer__free(c[1]);
	evs_producer__free(p);
}

/* pid core events bytes bursts ring_full too_big no_consumer total, one line
 * per entry, from bpftool's JSON (parsed by Python's json module). */
static int bpftool_dump(const char *dir, unsigned long long rows[][9], int max)
{
	char cmd[512];
	FILE *f;
	int n = 0;

	snprintf(cmd, sizeof(cmd),
		 "bpftool -j map dump pinned %s/drops | /usr/bin/python3 -c '"
		 "import json,sys\n"
		 "for e in json.load(sys.stdin):\n"
		 "  k=e[\"formatted\"][\"key\"]; v=e[\"formatted\"][\"value\"]\n"
		 "  print(k[\"pid\"],k[\"core\"],v[\"events\"],v[\"bytes\"],v[\"bursts\"],"
		 "v[\"ring_full\"],v[\"too_big\"],v[\"no_consumer\"],v[\"total\"])'", dir);
	f = popen(cmd, "r");
	ck_assert(f);
	while (n < max && fscanf(f, "%llu %llu %llu %llu %llu %llu %llu %llu %llu", &rows[n][0],
				 &rows[n][1], &rows[n][2], &rows[n][3], &rows[n][4], &rows[n][5],
				 &rows[n][6], &rows[n][7], &rows[n][8]) == 9)
		n++;
	ck_assert_int_eq(pclose(f), 0);
	return n;
}

START_TEST(test_map_equals_shared_counters_after_flush)
{
	const char *dir = pin_dir("multi");
	struct evs_stream_stats st[NPROC][NCORES];
	unsigned long long rows[64][9];
	pid_t pids[NPROC];
	struct evs_drops *d;
	int nrows, entries = 0;

	NEED_BPF(dir);
	d = attach(dir);
	ck_assert(evs_drops__is_owner(d));
	for (int i = 0; i < NPROC; i++) {
		int fds[2];

		ck_assert_int_eq(pipe(fds), 0);
		pids[i] = fork();
		ck_assert(pids[i] >= 0);
		if (pids[i] == 0) {
			close(fds[0]);
			child_drops(i, fds[1]);
			_exit(0);
		}
		close(fds[1]);
		ck_assert(read(fds[0], st[i], sizeof(st[i])) == sizeof(st[i]));
		close(fds[0]);
	}
	for (int i = 0; i < NPROC; i++) {
		int status;

		ck_assert_int_eq(waitpid(pids[i], &status, 0), pids[i]);
		ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}

	nrows = bpftool_dump(dir, rows, 64);
	for (int i = 0; i < NPROC; i++) {
		for (int core = 0; core < NCORES; core++) {
			const struct evs_stream_stats *s = &st[i][core];
			struct evs_drop_val v;
			int found = 0;

			ck_assert_int_eq(evs_drops__lookup(d, pids[i], core, &v), 0);
			/* exact after flush: every cause, bytes, the stream's own total */
			ck_assert_uint_eq(v.events, s->dropped);
			ck_assert_uint_eq(v.bytes, sum(s->dropped_bytes));
			ck_assert_uint_eq(v.ring_full, s->dropped_events[EVS_DROP_RING_FULL]);
			ck_assert_uint_eq(v.too_big, s->dropped_events[EVS_DROP_TOO_BIG]);
			ck_assert_uint_eq(v.no_consumer, s->dropped_events[EVS_DROP_NO_CONSUMER]);
			ck_assert_uint_eq(v.total, s->dropped);
			/* three runs on cores 0 and 1, one on core 2 */
			ck_assert_uint_eq(v.bursts, core < 2 ? 3 : 1);
			/* and the numbers child_drops() meant to drop */
			uint64_t full = core < 2 ? (50 + 7 * i + 3 * core) + (1500 + 100 * i) +
						   (2 * BATCH + 52) : 0;
			uint64_t big = core < 2 ? 5 + core : 0;
			uint64_t none = core < 2 ? 0 : 300 + i;
			ck_assert_uint_eq(s->dropped_events[EVS_DROP_RING_FULL], full);
			ck_assert_uint_eq(s->dropped_events[EVS_DROP_TOO_BIG], big);
			ck_assert_uint_eq(s->dropped_events[EVS_DROP_NO_CONSUMER], none);
			ck_assert_uint_eq(v.bytes, (full + none) * SMALL + big * BIG);
			entries++;

			for (int r = 0; r < nrows; r++) {
				if (rows[r][0] != (unsigned long long)pids[i] || rows[r][1] != (unsigned)core)
					continue;
				found = 1;
				ck_assert_uint_eq(rows[r][2], s->dropped);
				ck_assert_uint_eq(rows[r][3], sum(s->dropped_bytes));
				ck_assert_uint_eq(rows[r][4], v.bursts);
				ck_assert_uint_eq(rows[r][5], s->dropped_events[EVS_DROP_RING_FULL]);
				ck_assert_uint_eq(rows[r][6], s->dropped_events[EVS_DROP_TOO_BIG]);
				ck_assert_uint_eq(rows[r][7], s->dropped_events[EVS_DROP_NO_CONSUMER]);
				ck_assert_uint_eq(rows[r][8], s->dropped);
			}
			ck_assert_msg(found, "bpftool shows no entry for pid %d core %d",
				      (int)pids[i], core);
		}
	}
	ck_assert_int_eq(entries, NPROC * NCORES);
	evs_drops__free(d);
	ck_assert_int_eq(evs_drops__unpin(dir), 0);
}
END_TEST

/* A stream whose consumer never reads and whose two slots are full: every
 * further emit on core 0 drops as ring_full. */
struct stalled {
	struct evs_producer *p;
	struct evs_consumer *c;
};

static struct stalled stalled_open(const char *tag)
{
	EVS_OPTS(evs_producer_opts, o, .max_events = 2, .hugepages = EVS_HUGEPAGES_OFF);
	struct stalled s;

	s.p = evs_producer__new(evs_test_name(tag), 1, &o);
	ck_assert_msg(s.p, "%s", evs_errmsg());
	s.c = evs_consumer__connect(evs_test_name(tag), 0, NULL);
	ck_assert_msg(s.c, "%s", evs_errmsg());
	emit_n(s.p, 0, 2, SMALL, 0);
	return s;
}

static void stalled_close(struct stalled *s)
{
	evs_consumer__free(s->c);
	evs_producer__free(s->p);
}

START_TEST(test_map_lags_by_less_than_a_batch_before_flush)
{
	const char *dir = pin_dir("lag");
	struct evs_stream_stats st;
	struct evs_drop_val v;
	struct evs_producer *p;
	struct stalled stalled;
	struct evs_drops *d;

	NEED_BPF(dir);
	d = attach(dir);
	stalled = stalled_open("lag");
	p = stalled.p;
	emit_n(p, 0, 2 * BATCH + BATCH / 2, SMALL, -ENOBUFS);
	stats_of(p, 0, &st);
	ck_assert_int_eq(evs_drops__lookup(d, getpid(), 0, &v), 0);
	/* two full batches reported, half a batch held back */
	ck_assert_uint_eq(v.events, 2 * BATCH);
	ck_assert_uint_lt(st.dropped - v.events, BATCH);
	ck_assert_int_eq(evs_producer__flush(p, 0), 0);
	ck_assert_int_eq(evs_drops__lookup(d, getpid(), 0, &v), 0);
	ck_assert_uint_eq(v.events, st.dropped);
	ck_assert_uint_eq(v.batches, 3);
	ck_assert_uint_eq(v.bursts, 1);
	/* a second flush has nothing to report */
	ck_assert_int_eq(evs_producer__flush(p, 0), 0);
	ck_assert_int_eq(evs_drops__lookup(d, getpid(), 0, &v), 0);
	ck_assert_uint_eq(v.batches, 3);
	stalled_close(&stalled);
	evs_drops__free(d);
	ck_assert_int_eq(evs_drops__unpin(dir), 0);
}
END_TEST

START_TEST(test_semaphore_is_zero_and_probe_not_hit_when_detached)
{
	const char *dir = pin_dir("sema");
	struct evs_drops_opts ro = { .sz = sizeof(ro), .pin_dir = dir, .no_attach = 1 };
	struct evs_stream_stats st;
	struct evs_drop_val v;
	struct evs_producer *p;
	struct stalled stalled;
	struct evs_drops *d;

	NEED_BPF(dir);
	ck_assert_uint_eq(drop_semaphore(), 0);
	stalled = stalled_open("sema");
	p = stalled.p;
	emit_n(p, 0, 5, SMALL, -ENOBUFS);     /* before attach: never reported */
	ck_assert_int_eq(evs_producer__flush(p, 0), 0);

	d = attach(dir);
	ck_assert_uint_eq(drop_semaphore(), 1);
	emit_n(p, 0, 10, SMALL, -ENOBUFS);
	ck_assert_int_eq(evs_producer__flush(p, 0), 0);
	ck_assert_int_eq(evs_drops__lookup(d, getpid(), 0, &v), 0);
	ck_assert_uint_eq(v.events, 10);
	ck_assert_uint_eq(v.total, 15);       /* the stream's own running total */
	evs_drops__free(d);                   /* detach; the map stays pinned */
	ck_assert_uint_eq(drop_semaphore(), 0);

	emit_n(p, 0, 2000, SMALL, -ENOBUFS);  /* batch-sized runs: would fire */
	ck_assert_int_eq(evs_producer__flush(p, 0), 0);
	d = evs_drops__open(&ro);
	ck_assert_msg(d, "%s", evs_drops__errmsg());
	ck_assert_int_eq(evs_drops__lookup(d, getpid(), 0, &v), 0);
	ck_assert_uint_eq(v.events, 10);      /* the probe was not hit */
	ck_assert_uint_eq(v.batches, 1);
	stats_of(p, 0, &st);
	ck_assert_uint_eq(st.dropped, 2015);
	evs_drops__free(d);
	stalled_close(&stalled);
	ck_assert_int_eq(evs_drops__unpin(dir), 0);
}
END_TEST

START_TEST(test_second_open_reuses_pinned_map_without_double_counting)
{
	const char *dir = pin_dir("reuse");
	struct evs_drops *d1, *d2;
	struct evs_drop_val v;
	struct evs_producer *p;
	struct stalled stalled;
	char cmd[PATH_MAX + 256], out[4096], want[64];
	FILE *f;
	size_t n;

	NEED_BPF(dir);
	d1 = attach(dir);
	d2 = attach(dir);
	ck_assert(evs_drops__is_owner(d1));
	ck_assert(!evs_drops__is_owner(d2));
	ck_assert_int_eq(evs_drops__owner_pid(d2), getpid());
	ck_assert_uint_eq(drop_semaphore(), 1);   /* attached once */

	stalled = stalled_open("reuse");
	p = stalled.p;
	emit_n(p, 0, 10, SMALL, -ENOBUFS);
	ck_assert_int_eq(evs_producer__flush(p, 0), 0);
	ck_assert_int_eq(evs_drops__lookup(d2, getpid(), 0, &v), 0);
	ck_assert_uint_eq(v.events, 10);

	/* the tool, too, reads the pinned map and does not attach again */
	snprintf(cmd, sizeof(cmd), "%s --once --json -i 0.05 -d %s", tool_path(), dir);
	f = popen(cmd, "r");
	ck_assert(f);
	n = fread(out, 1, sizeof(out) - 1, f);
	out[n] = 0;
	ck_assert_int_eq(pclose(f), 0);
	snprintf(want, sizeof(want), "\"owner_pid\":%d,", (int)getpid());
	ck_assert_msg(strstr(out, want), "evs-drops output: %s", out);
	snprintf(want, sizeof(want), "{\"pid\":%d,", (int)getpid());
	ck_assert_msg(strstr(out, want), "evs-drops output: %s", out);
	ck_assert_msg(strstr(out, "\"events\":10,"), "evs-drops output: %s", out);
	ck_assert_uint_eq(drop_semaphore(), 1);

	stalled_close(&stalled);
	evs_drops__free(d2);
	evs_drops__free(d1);
	ck_assert_uint_eq(drop_semaphore(), 0);
	ck_assert_int_eq(evs_drops__unpin(dir), 0);
}
END_TEST

static int run(const char *cmd, char *out, size_t len)
{
	FILE *f = popen(cmd, "r");
	size_t n;

	ck_assert(f);
	n = fread(out, 1, len - 1, f);
	out[n] = 0;
	return pclose(f);
}

START_TEST(test_tool_background_then_detach_leaves_nothing_pinned)
{
	const char *dir = pin_dir("tool");
	char cmd[PATH_MAX + 256], out[4096];
	struct stat sb;

	NEED_BPF(dir);
	snprintf(cmd, sizeof(cmd), "%s --background --binary %s -d %s 2>&1", tool_path(),
		 this_lib()->path, dir);
	ck_assert_msg(run(cmd, out, sizeof(out)) == 0, "%s", out);
	ck_assert_msg(strstr(out, "in the background"), "%s", out);
	ck_assert_uint_eq(drop_semaphore(), 1);   /* attached for every process */

	snprintf(cmd, sizeof(cmd), "%s --once -i 0.05 -d %s 2>&1", tool_path(), dir);
	ck_assert_msg(run(cmd, out, sizeof(out)) == 0, "%s", out);
	ck_assert_msg(strstr(out, "DROPPED/s") && strstr(out, "counted by evs-drops pid"), "%s", out);

	snprintf(cmd, sizeof(cmd), "%s --detach -d %s 2>&1", tool_path(), dir);
	ck_assert_msg(run(cmd, out, sizeof(out)) == 0, "%s", out);
	ck_assert_int_ne(stat(dir, &sb), 0);
	ck_assert_int_eq(errno, ENOENT);
	ck_assert_uint_eq(drop_semaphore(), 0);
	/* detaching what is not there is not an error */
	ck_assert_msg(run(cmd, out, sizeof(out)) == 0, "%s", out);
}
END_TEST

START_TEST(test_tool_errors_say_what_to_do)
{
	char cmd[PATH_MAX + 256], out[4096], tmp[64];

	NEED_BPF(pin_dir("err"));
	snprintf(cmd, sizeof(cmd), "%s --once --binary /bin/true -d %s 2>&1", tool_path(),
		 pin_dir("err"));
	ck_assert_int_ne(run(cmd, out, sizeof(out)), 0);
	ck_assert_msg(strstr(out, "has no USDT probe evstream:drop"), "%s", out);

	snprintf(tmp, sizeof(tmp), "/tmp/evs-test-pins-%d", (int)getpid());
	ck_assert_int_eq(mkdir(tmp, 0700), 0);
	snprintf(cmd, sizeof(cmd), "%s --once -d %s/x 2>&1", tool_path(), tmp);
	ck_assert_int_ne(run(cmd, out, sizeof(out)), 0);
	ck_assert_msg(strstr(out, "not on a bpf filesystem") && strstr(out, "mount -t bpf bpf"),
		      "%s", out);
	rmdir(tmp);

	/* without privileges (setpriv: util-linux, which scripts/deps.sh installs) */
	snprintf(cmd, sizeof(cmd), "setpriv --reuid=65534 --regid=65534 "
		 "--clear-groups --inh-caps=-all %s --once -d %s 2>&1", tool_path(),
		 pin_dir("err"));
	ck_assert_int_ne(run(cmd, out, sizeof(out)), 0);
	ck_assert_msg(strstr(out, "needs root, or CAP_BPF"), "%s", out);

	/* a process without the library: asked about once it has exec'd, which
	 * closes its end of the O_CLOEXEC pipe (read gives EOF); before that it
	 * is a copy of this process, library included */
	int execd[2];
	char ch;

	ck_assert_int_eq(pipe2(execd, O_CLOEXEC), 0);
	pid_t pid = fork();
	ck_assert(pid >= 0);
	if (pid == 0) {
		close(execd[0]);
		execl("/bin/sleep", "sleep", "30", (char *)NULL);
		_exit(127);
	}
	close(execd[1]);
	ck_assert_int_eq(read(execd[0], &ch, 1), 0);
	close(execd[0]);
	snprintf(cmd, sizeof(cmd), "%s --once --pid %d -d %s 2>&1", tool_path(), (int)pid,
		 pin_dir("err"));
	int rc = run(cmd, out, sizeof(out));
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	ck_assert_int_ne(rc, 0);
	ck_assert_msg(strstr(out, "has no libevstream.so mapped"), "%s", out);
	ck_assert_int_eq(evs_drops__unpin(pin_dir("err")), 0);
}
END_TEST

/* --json stays valid JSON whatever bytes a path holds: a control byte is
 * escaped, a byte that is not UTF-8 becomes a code point */
START_TEST(test_tool_json_escapes_control_and_non_utf8_bytes)
{
	const char *dir = pin_dir("json\t\x01\xff");
	char cmd[PATH_MAX + 256], out[4096], want[256];
	struct evs_drops *d;

	NEED_BPF(dir);
	d = attach(dir);
	snprintf(cmd, sizeof(cmd), "%s --once --json -i 0.05 -d '%s'", tool_path(), dir);
	ck_assert_int_eq(run(cmd, out, sizeof(out)), 0);
	snprintf(want, sizeof(want), "\"pin_dir\":\"/sys/fs/bpf/evstream-test-%d-json\\t\\u0001\\u00ff\",",
		 (int)suite_pid);
	ck_assert_msg(strstr(out, want), "evs-drops output: %s", out);
	ck_assert_msg(!strpbrk(out, "\t\x01\xff"), "raw bytes in the JSON: %s", out);
	evs_drops__free(d);
	ck_assert_int_eq(evs_drops__unpin(dir), 0);
}
END_TEST


/* Pin a hash or array map with these sizes at path, as another tool or an
 * older evs-drops would have left it. Returns the map's fd. */
static int plant_map(const char *path, enum bpf_map_type type, unsigned int key_size,
		     unsigned int value_size, unsigned int entries)
{
	int fd = bpf_map_create(type, "planted", key_size, value_size, entries, NULL);

	ck_assert_msg(fd >= 0, "bpf_map_create: %s", strerror(errno));
	ck_assert_msg(bpf_obj_pin(fd, path) == 0, "pinning %s: %s", path, strerror(errno));
	return fd;
}

static int tool(const char *args, char *out, size_t len)
{
	char cmd[PATH_MAX + 512];

	snprintf(cmd, sizeof(cmd), "%s %s 2>&1", tool_path(), args);
	return run(cmd, out, len);
}

/* A pinned map of another layout (evs_drop_val before no_memory: 88-byte
 * values; an array map) is refused by path and sizes in every mode, not
 * reused or reported as a failed skeleton; --detach removes it. */
START_TEST(test_tool_refuses_a_pinned_map_of_another_layout_by_name)
{
	static const char *const modes[] = { "--once -i 0.05", "--once --json -i 0.05",
					     "--background" };
	const char *dir = pin_dir("layout");
	char path[256], args[512], out[4096], want[512];
	struct stat sb;
	int fd;

	NEED_BPF(dir);
	ck_assert_int_eq(mkdir(dir, 0700), 0);
	snprintf(path, sizeof(path), "%s/drops", dir);
	fd = plant_map(path, BPF_MAP_TYPE_HASH, sizeof(struct evs_drop_key), 88,
		       EVS_DROPS_MAX_ENTRIES);
	snprintf(want, sizeof(want), "%s is a BPF map of type hash with 8-byte keys and 88-byte values", path);
	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		snprintf(args, sizeof(args), "%s -d %s", modes[i], dir);
		ck_assert_msg(tool(args, out, sizeof(out)) != 0, "%s: %s", modes[i], out);
		ck_assert_msg(strstr(out, want) && strstr(out, "--detach"), "%s: %s", modes[i], out);
	}
	ck_assert_uint_eq(drop_semaphore(), 0);
	close(fd);

	snprintf(args, sizeof(args), "--detach -d %s", dir);
	ck_assert_msg(tool(args, out, sizeof(out)) == 0, "%s", out);
	ck_assert_int_ne(stat(dir, &sb), 0);

	ck_assert_int_eq(mkdir(dir, 0700), 0);
	fd = plant_map(path, BPF_MAP_TYPE_ARRAY, 4, sizeof(struct evs_drop_val), 16);
	snprintf(args, sizeof(args), "--once -i 0.05 -d %s", dir);
	ck_assert_int_ne(tool(args, out, sizeof(out)), 0);
	snprintf(want, sizeof(want), "%s is a BPF map of type array with 4-byte keys", path);
	ck_assert_msg(strstr(out, want), "%s", out);
	close(fd);
	ck_assert_int_eq(evs_drops__unpin(dir), 0);
}
END_TEST

/* A directory where a map belongs, and a pin directory that is a symbolic
 * link, are refused by name; the link's target gets no pins. */
START_TEST(test_tool_refuses_a_directory_or_link_where_a_pin_belongs)
{
	char dir[256], path[300], real[256], args[512], out[4096], want[512];
	struct stat sb;

	snprintf(dir, sizeof(dir), "%s", pin_dir("dir")); /* pin_dir's buffer is reused */
	NEED_BPF(dir);
	snprintf(path, sizeof(path), "%s/drops", dir);
	ck_assert_int_eq(mkdir(dir, 0700), 0);
	ck_assert_int_eq(mkdir(path, 0700), 0);
	snprintf(args, sizeof(args), "--once -i 0.05 -d %s", dir);
	ck_assert_int_ne(tool(args, out, sizeof(out)), 0);
	snprintf(want, sizeof(want), "%s is a directory, not a pinned map", path);
	ck_assert_msg(strstr(out, want), "%s", out);
	ck_assert_int_eq(rmdir(path), 0);
	ck_assert_int_eq(rmdir(dir), 0);

	snprintf(real, sizeof(real), "%s", pin_dir("real"));
	ck_assert_int_eq(mkdir(real, 0700), 0);
	ck_assert_int_eq(symlink(real, dir), 0);
	snprintf(args, sizeof(args), "--background -d %s", dir);
	ck_assert_int_ne(tool(args, out, sizeof(out)), 0);
	snprintf(want, sizeof(want), "%s is a symbolic link", dir);
	ck_assert_msg(strstr(out, want), "%s", out);
	snprintf(path, sizeof(path), "%s/drops", real);
	ck_assert_int_ne(stat(path, &sb), 0);
	ck_assert_int_eq(unlink(dir), 0);
	ck_assert_int_eq(evs_drops__unpin(real), 0);
}
END_TEST

/* /sys/fs/bpf is writable by everyone (mode 1777): a directory another user
 * made at the pin path is theirs to swap pins in, so it is refused. */
START_TEST(test_tool_refuses_a_pin_dir_another_user_owns)
{
	const char *dir = pin_dir("user");
	char args[512], out[4096], want[512];

	NEED_BPF(dir);
	ck_assert_int_eq(mkdir(dir, 0755), 0);
	ck_assert_int_eq(chown(dir, 65534, 65534), 0);
	snprintf(args, sizeof(args), "--once -i 0.05 -d %s", dir);
	ck_assert_int_ne(tool(args, out, sizeof(out)), 0);
	snprintf(want, sizeof(want), "%s belongs to uid 65534", dir);
	ck_assert_msg(strstr(out, want), "%s", out);
	ck_assert_int_eq(rmdir(dir), 0);
}
END_TEST

static unsigned long long start_time_of(pid_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long long t = 0;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	ck_assert(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	p = strrchr(buf, ')');
	for (int field = 2; field < 22 && p; field++)
		p = strchr(p + 1, ' ');
	ck_assert(p);
	t = strtoull(p + 1, NULL, 10);
	return t;
}

/* A child that sleeps 30 s, exec'd (so its start time is final): its
 * pid, and its start time to *start. */
static pid_t sleeper(unsigned long long *start)
{
	pid_t child = fork();

	ck_assert(child >= 0);
	if (child == 0) {
		execl("/bin/sleep", "sleep", "30", (char *)NULL);
		_exit(127);
	}
	usleep(100 * 1000);
	*start = start_time_of(child);
	return child;
}

/* --detach reads the owner map for a pid to signal: one of another layout
 * is not read (its first bytes name a live process here), only removed. */
START_TEST(test_detach_signals_no_pid_from_an_owner_map_of_another_layout)
{
	const char *dir = pin_dir("owner");
	char path[256], args[512], out[8192];
	unsigned char value[8192] = { 0 };
	unsigned long long start;
	__u32 key = 0, pid32;
	int fd, status;
	pid_t child;

	NEED_BPF(dir);
	child = sleeper(&start);
	ck_assert_int_eq(mkdir(dir, 0700), 0);
	snprintf(path, sizeof(path), "%s/drops_owner", dir);
	fd = plant_map(path, BPF_MAP_TYPE_HASH, 4, sizeof(value), 1);
	pid32 = (__u32)child;
	memcpy(value, &pid32, 4);
	memcpy(value + 8, &start, 8);
	ck_assert_int_eq(bpf_map_update_elem(fd, &key, value, BPF_ANY), 0);
	close(fd);
	snprintf(args, sizeof(args), "--detach -d %s", dir);
	ck_assert_msg(tool(args, out, sizeof(out)) == 0, "%s", out);
	ck_assert_msg(waitpid(child, &status, WNOHANG) == 0,
		      "--detach signalled pid %d, read from a map of another layout", (int)child);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	ck_assert_int_eq(evs_drops__unpin(dir), 0);
}
END_TEST

/* An owner that an evs-drops of the layout before (pid and start time,
 * 16 bytes, no binary) started is still stopped by --detach. */
START_TEST(test_detach_stops_an_owner_recorded_in_the_layout_before)
{
	const char *dir = pin_dir("owner");
	char path[256], args[512], out[4096];
	struct { __u32 pid, pad; unsigned long long start; } before = { 0 };
	__u32 key = 0;
	int fd, status;
	pid_t child;

	NEED_BPF(dir);
	child = sleeper(&before.start);
	before.pid = (__u32)child;
	ck_assert_int_eq(mkdir(dir, 0700), 0);
	snprintf(path, sizeof(path), "%s/drops_owner", dir);
	fd = plant_map(path, BPF_MAP_TYPE_HASH, 4, sizeof(before), 1);
	ck_assert_int_eq(bpf_map_update_elem(fd, &key, &before, BPF_ANY), 0);
	close(fd);
	snprintf(args, sizeof(args), "--detach -d %s", dir);
	ck_assert_msg(tool(args, out, sizeof(out)) == 0, "%s", out);
	ck_assert_int_eq(waitpid(child, &status, 0), child);
	ck_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM);
}
END_TEST

/* An entry of our layout naming pid -1 (to kill(): every process) with
 * start time 0 (what an unreadable /proc/<pid>/stat gave) is no live
 * owner: evs-drops attaches itself. Only --once is run on it: --detach
 * would signal that pid. */
START_TEST(test_owner_entry_of_pid_minus_one_is_no_live_owner)
{
	const char *dir = pin_dir("owner");
	struct evs_drops_owner planted = { .pid = (__u32)-1 };
	char path[256], args[512], out[4096];
	__u32 key = 0;
	int fd;

	NEED_BPF(dir);
	snprintf(path, sizeof(path), "%s/drops_owner", dir);
	ck_assert_int_eq(mkdir(dir, 0700), 0);
	fd = plant_map(path, BPF_MAP_TYPE_HASH, 4, sizeof(planted), 1);
	ck_assert_int_eq(bpf_map_update_elem(fd, &key, &planted, BPF_ANY), 0);
	close(fd);
	snprintf(args, sizeof(args), "--once -i 0.05 -d %s", dir);
	int rc = tool(args, out, sizeof(out));
	/* gone before any check can fail: the cleanup's unpin must never see it */
	ck_assert_int_eq(unlink(path), 0);
	ck_assert_msg(rc == 0, "%s", out);
	ck_assert_msg(strstr(out, "counted by this process"), "%s", out);
	ck_assert_int_eq(evs_drops__unpin(dir), 0);
}
END_TEST

/* --pin-dir relative to the caller's directory means the same directory to
 * the background owner (which leaves for /) and to --detach. */
START_TEST(test_tool_relative_pin_dir_is_the_callers)
{
	const char *dir = pin_dir("rel");
	const char *rel = dir + strlen("/sys/fs/bpf/");
	char cmd[PATH_MAX + 512], out[4096];
	struct stat sb;

	NEED_BPF(dir);
	snprintf(cmd, sizeof(cmd), "cd /sys/fs/bpf && %s --background --binary %s -d %s 2>&1",
		 tool_path(), this_lib()->path, rel);
	ck_assert_msg(run(cmd, out, sizeof(out)) == 0, "%s", out);
	ck_assert_msg(strstr(out, dir), "%s", out);
	ck_assert_uint_eq(drop_semaphore(), 1);
	snprintf(cmd, sizeof(cmd), "cd /sys/fs/bpf && %s --once -i 0.05 -d %s 2>&1", tool_path(), rel);
	ck_assert_msg(run(cmd, out, sizeof(out)) == 0, "%s", out);
	ck_assert_msg(strstr(out, "counted by evs-drops pid"), "%s", out);
	snprintf(cmd, sizeof(cmd), "cd /sys/fs/bpf && %s --detach -d %s 2>&1", tool_path(), rel);
	ck_assert_msg(run(cmd, out, sizeof(out)) == 0, "%s", out);
	ck_assert_int_ne(stat(dir, &sb), 0);
	ck_assert_uint_eq(drop_semaphore(), 0);
}
END_TEST

/* A reader counts nothing itself: it says which library the owner counts,
 * and refuses to stand for another one asked with --binary. */
START_TEST(test_reader_reports_and_keeps_to_the_owners_library)
{
	const char *dir = pin_dir("scope");
	char copy[128], args[PATH_MAX + 256], out[4096], want[PATH_MAX + 64], cmd[PATH_MAX + 256];
	struct evs_drops_opts o = { .sz = sizeof(o), .pin_dir = dir };
	struct evs_drops *d;

	NEED_BPF(dir);
	snprintf(copy, sizeof(copy), "/tmp/evs-test-lib-%d.so", (int)getpid());
	snprintf(cmd, sizeof(cmd), "cp %s %s", this_lib()->path, copy);
	ck_assert_int_eq(system(cmd), 0);
	o.binary = copy;
	d = evs_drops__open(&o);
	ck_assert_msg(d, "%s", evs_drops__errmsg());
	ck_assert(evs_drops__is_owner(d));

	snprintf(args, sizeof(args), "--once --json -i 0.05 -d %s", dir);
	ck_assert_msg(tool(args, out, sizeof(out)) == 0, "%s", out);
	snprintf(want, sizeof(want), "\"binary\":\"%s\",", copy);
	ck_assert_msg(strstr(out, want), "%s", out);

	snprintf(args, sizeof(args), "--once -i 0.05 -d %s --binary %s", dir, this_lib()->path);
	ck_assert_msg(tool(args, out, sizeof(out)) != 0, "%s", out);
	ck_assert_msg(strstr(out, copy) && strstr(out, this_lib()->path), "%s", out);
	evs_drops__free(d);
	unlink(copy);
	ck_assert_int_eq(evs_drops__unpin(dir), 0);
}
END_TEST

/* A reader that outlives the owner takes the probe over (counting goes on),
 * unless the pins went away (--detach): then it stops and attaches nothing. */
START_TEST(test_reader_takes_over_when_the_owner_exits)
{
	const char *dir = pin_dir("takeover");
	char cmd[PATH_MAX + 256], line[4096], want[64];
	struct evs_drops *d;
	FILE *f;
	int reader_owned = 0;

	NEED_BPF(dir);
	d = attach(dir);
	snprintf(cmd, sizeof(cmd), "%s --json -i 0.1 -n 8 -d %s", tool_path(), dir);
	f = popen(cmd, "r");
	ck_assert(f);
	ck_assert(fgets(line, sizeof(line), f));
	snprintf(want, sizeof(want), "\"owner_pid\":%d,", (int)getpid());
	ck_assert_msg(strstr(line, want), "%s", line);
	evs_drops__free(d);
	ck_assert_uint_eq(drop_semaphore(), 0);
	for (int i = 0; i < 4 && fgets(line, sizeof(line), f); i++)
		if (!strstr(line, want) && !strstr(line, "\"owner_pid\":0,"))
			reader_owned = 1;
	ck_assert_msg(reader_owned, "the reader never took over: %s", line);
	ck_assert_uint_eq(drop_semaphore(), 1);
	while (fgets(line, sizeof(line), f))
		;
	ck_assert_int_eq(pclose(f), 0);
	ck_assert_uint_eq(drop_semaphore(), 0);

	/* pins removed under a reader: it says so and does not attach */
	d = attach(dir);
	snprintf(cmd, sizeof(cmd), "%s -i 0.1 -n 20 -d %s 2>&1", tool_path(), dir);
	f = popen(cmd, "r");
	ck_assert(f);
	ck_assert(fgets(line, sizeof(line), f));
	ck_assert_int_eq(evs_drops__unpin(dir), 0);
	evs_drops__free(d);
	usleep(300 * 1000);
	ck_assert_uint_eq(drop_semaphore(), 0);
	int removed = 0;
	while (fgets(line, sizeof(line), f))
		removed |= strstr(line, "were removed") != NULL;
	ck_assert_int_ne(pclose(f), 0);
	ck_assert(removed);
	ck_assert_uint_eq(drop_semaphore(), 0);
}
END_TEST

/* The owner_pid of the first --json table an evs-drops prints on f. */
static pid_t first_owner(FILE *f)
{
	char line[4096], *p;

	ck_assert(fgets(line, sizeof(line), f));
	p = strstr(line, "\"owner_pid\":");
	ck_assert_msg(p, "%s", line);
	return (pid_t)atoi(p + strlen("\"owner_pid\":"));
}

/* --background beside an owner in the foreground would start nothing that
 * outlives it: refused, naming that owner and how to stop it. An owner in
 * the background is joined: nothing new is started, exit 0. */
START_TEST(test_background_refuses_while_a_foreground_owner_counts)
{
	const char *dir = pin_dir("fg");
	char cmd[PATH_MAX + 256], args[PATH_MAX + 256], out[4096], want[PATH_MAX + 64];
	pid_t owner;
	FILE *f;

	NEED_BPF(dir);
	snprintf(cmd, sizeof(cmd), "%s --json -i 0.1 -n 100 --binary %s -d %s", tool_path(),
		 this_lib()->path, dir);
	f = popen(cmd, "r");
	ck_assert(f);
	owner = first_owner(f);
	ck_assert_int_gt(owner, 0);
	snprintf(args, sizeof(args), "--background --binary %s -d %s", this_lib()->path, dir);
	ck_assert_msg(tool(args, out, sizeof(out)) != 0, "%s", out);
	snprintf(want, sizeof(want), "evs-drops pid %d counts drops of %s", (int)owner,
		 this_lib()->path);
	ck_assert_msg(strstr(out, want) && strstr(out, "not in the background"), "%s", out);
	snprintf(want, sizeof(want), "kill %d", (int)owner);
	ck_assert_msg(strstr(out, want), "%s", out);
	ck_assert_uint_eq(drop_semaphore(), 1);   /* attached once */
	kill(owner, SIGINT);
	while (fgets(out, sizeof(out), f))
		;
	ck_assert_int_eq(pclose(f), 0);
	ck_assert_uint_eq(drop_semaphore(), 0);

	ck_assert_msg(tool(args, out, sizeof(out)) == 0, "%s", out);
	ck_assert_msg(tool(args, out, sizeof(out)) == 0, "%s", out);
	ck_assert_msg(strstr(out, "in the background; nothing else was started"), "%s", out);
	ck_assert_uint_eq(drop_semaphore(), 1);
	ck_assert_int_eq(evs_drops__unpin(dir), 0);
	ck_assert_uint_eq(drop_semaphore(), 0);
}
END_TEST

/* A child of this test (so it maps libevstream) that, once a byte comes
 * on *go, drops 10 events on a stalled stream and exits. */
static pid_t dropper(int *go)
{
	int fds[2];
	pid_t child;
	char ch;

	ck_assert_int_eq(pipe(fds), 0);
	child = fork();
	ck_assert(child >= 0);
	if (child == 0) {
		struct stalled s;

		close(fds[1]);
		if (read(fds[0], &ch, 1) != 1)
			_exit(1);
		s = stalled_open("pidexit");
		emit_n(s.p, 0, 10, SMALL, -ENOBUFS);
		stalled_close(&s);       /* reports the batch */
		_exit(0);
	}
	close(fds[0]);
	*go = fds[1];
	return child;
}

/* An owner of one process (--pid) notices that process exit: it says so,
 * shows the counts up to its end, detaches and removes its owner entry, so
 * the next --pid counts and nothing claims to count for a dead process. */
START_TEST(test_pid_owner_lets_go_when_its_process_exits)
{
	const char *dir = pin_dir("pidexit");
	char cmd[PATH_MAX + 256], line[4096], last[4096] = "", want[128], args[512];
	struct evs_drops_owner cur;
	int go, status, said = 0, fd;
	__u32 key = 0;
	pid_t child;
	FILE *f;

	NEED_BPF(dir);
	child = dropper(&go);
	snprintf(cmd, sizeof(cmd), "%s --json -i 0.1 -n 100 --pid %d -d %s 2>&1", tool_path(),
		 (int)child, dir);
	f = popen(cmd, "r");
	ck_assert(f);
	ck_assert_int_gt(first_owner(f), 0);
	ck_assert(write(go, "x", 1) == 1);
	close(go);
	ck_assert_int_eq(waitpid(child, &status, 0), child);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	snprintf(want, sizeof(want), "process %d exited", (int)child);
	while (fgets(line, sizeof(line), f)) {
		said |= strstr(line, want) != NULL;
		if (line[0] == '{')
			snprintf(last, sizeof(last), "%s", line);
	}
	ck_assert_int_eq(pclose(f), 0);
	ck_assert_msg(said, "evs-drops never said %s; last table: %s", want, last);
	snprintf(want, sizeof(want), "{\"pid\":%d,", (int)child);
	ck_assert_msg(strstr(last, "\"owner_pid\":0,") && strstr(last, want) &&
		      strstr(last, "\"events\":10,"), "%s", last);

	snprintf(cmd, sizeof(cmd), "%s/drops_owner", dir);
	fd = bpf_obj_get(cmd);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_ne(bpf_map_lookup_elem(fd, &key, &cur), 0);
	close(fd);

	child = dropper(&go);
	snprintf(args, sizeof(args), "--once -i 0.05 --pid %d -d %s", (int)child, dir);
	int rc = tool(args, line, sizeof(line));
	close(go);
	waitpid(child, NULL, 0);
	ck_assert_msg(rc == 0 && strstr(line, "counted by this process"), "%s", line);
	ck_assert_int_eq(evs_drops__unpin(dir), 0);
}
END_TEST

/* --detach says what it did: stopped a live owner, removed counts nobody
 * was adding to, or found nothing. */
START_TEST(test_detach_says_what_it_did)
{
	const char *dir = pin_dir("said");
	char args[PATH_MAX + 256], out[4096], want[256], *p;
	int bg;

	NEED_BPF(dir);
	snprintf(args, sizeof(args), "--background --binary %s -d %s", this_lib()->path, dir);
	ck_assert_msg(tool(args, out, sizeof(out)) == 0, "%s", out);
	p = strstr(out, "(pid ");
	ck_assert_msg(p, "%s", out);
	bg = atoi(p + strlen("(pid "));
	snprintf(args, sizeof(args), "--detach -d %s", dir);
	ck_assert_msg(tool(args, out, sizeof(out)) == 0, "%s", out);
	snprintf(want, sizeof(want), "stopped evs-drops pid %d, which counted into %s, and "
		 "removed its counts", bg, dir);
	ck_assert_msg(strstr(out, want), "%s", out);

	evs_drops__free(attach(dir));   /* pins left, owner gone */
	ck_assert_msg(tool(args, out, sizeof(out)) == 0, "%s", out);
	snprintf(want, sizeof(want), "nothing was counting into %s; removed the counts", dir);
	ck_assert_msg(strstr(out, want) && !strstr(out, "stopped"), "%s", out);

	ck_assert_msg(tool(args, out, sizeof(out)) == 0, "%s", out);
	snprintf(want, sizeof(want), "nothing pinned at %s: nothing to detach", dir);
	ck_assert_msg(strstr(out, want), "%s", out);
}
END_TEST

static Suite *bpf_suite(void)
{
	Suite *s = suite_create("bpf");
	TCase *tc = evs_tcase("drops");

	/* loading the program and forking producers takes a few seconds */
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_library_has_probe_notes_with_semaphores);
	tcase_add_test(tc, test_semaphore_is_zero_and_probe_not_hit_when_detached);
	tcase_add_test(tc, test_map_lags_by_less_than_a_batch_before_flush);
	tcase_add_test(tc, test_map_equals_shared_counters_after_flush);
	tcase_add_test(tc, test_second_open_reuses_pinned_map_without_double_counting);
	tcase_add_test(tc, test_tool_background_then_detach_leaves_nothing_pinned);
	tcase_add_test(tc, test_tool_errors_say_what_to_do);
	tcase_add_test(tc, test_tool_json_escapes_control_and_non_utf8_bytes);
	tcase_add_test(tc, test_tool_refuses_a_pinned_map_of_another_layout_by_name);
	tcase_add_test(tc, test_tool_refuses_a_directory_or_link_where_a_pin_belongs);
	tcase_add_test(tc, test_tool_refuses_a_pin_dir_another_user_owns);
	tcase_add_test(tc, test_detach_signals_no_pid_from_an_owner_map_of_another_layout);
	tcase_add_test(tc, test_detach_stops_an_owner_recorded_in_the_layout_before);
	tcase_add_test(tc, test_owner_entry_of_pid_minus_one_is_no_live_owner);
	tcase_add_test(tc, test_tool_relative_pin_dir_is_the_callers);
	tcase_add_test(tc, test_reader_reports_and_keeps_to_the_owners_library);
	tcase_add_test(tc, test_reader_takes_over_when_the_owner_exits);
	tcase_add_test(tc, test_background_refuses_while_a_foreground_owner_counts);
	tcase_add_test(tc, test_pid_owner_lets_go_when_its_process_exits);
	tcase_add_test(tc, test_detach_says_what_it_did);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	int rc;

	suite_pid = getpid();
	rc = evs_run_suite(bpf_suite());
	/* a failed test stops before its own unpin (and may leave an owner) */
	for (size_t i = 0; i < sizeof(pin_tags) / sizeof(pin_tags[0]); i++)
		if (evs_drops__unpin(pin_dir(pin_tags[i])))
			printf("cleanup: %s\n", evs_drops__errmsg());
	return rc;
}

#else /* !EVS_HAVE_BPF */

START_TEST(test_bpf_not_built)
{
	EVS_SKIP("eBPF drop accounting not built (clang, bpftool, libbpf-dev, libelf-dev or "
		 "kernel BTF missing; see the note `make` printed)");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("bpf");
	TCase *tc = evs_tcase("drops");

	tcase_add_test(tc, test_bpf_not_built);
	suite_add_tcase(s, tc);
	return evs_run_suite(s);
}
#endif

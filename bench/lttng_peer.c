/* SPDX-License-Identifier: MIT */
/*
 * The LTTng-UST peer of evs-bench: a process forked for it, which starts a
 * session daemon of its own (lttng-sessiond; its consumer daemon comes with
 * the first session), loads the tracepoint provider and then, on each
 * request of evs-bench, records a session: create, enable the channel and
 * the event, start, emit, stop, read what was discarded and recorded,
 * destroy.
 *
 * Why a process: liblttng-ust registers with the session daemon when it is
 * loaded, reading LTTNG_HOME then, so it is loaded only here, after the
 * daemon is up; and as root the daemon's sockets are always in
 * /var/run/lttng, where a system daemon may listen, so the peer makes a
 * mount namespace of its own with empty /run and /dev/shm (the daemon's
 * sockets and LTTng's shared memory), which nothing outside sees and which
 * goes away with it. Without root, a daemon with a private LTTNG_HOME is
 * private already. The rest of evs-bench never has liblttng-ust in it.
 *
 * Pinning: the peer emits on the producer's CPU (it is forked from the
 * pinned main thread); the session daemon, and so its consumer daemon, run
 * on the consumer's CPU. Both inherit evs-bench's raised priority.
 *
 * Cleaning up: the daemon dies with the peer (PR_SET_PDEATHSIG), the peer
 * with evs-bench; on a signal the peer stops the daemon and removes the
 * private directory (LTTNG_HOME, the trace, the daemon's log) before it
 * dies.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>

#include "lttng_ctf.h"
#include "lttng_peer.h"
#include "pace.h"

#ifdef EVS_BENCH_LTTNG

#define LTTNG_UST_TRACEPOINT_DEFINE
#define LTTNG_UST_TRACEPOINT_PROBE_DYNAMIC_LINKAGE
#include "lttng_tp.h"

#define SESSION "evs-bench"
#define CHANNEL "evs"
#define PROVIDER_SO "evs-bench-lttng-tp.so"

/*
 * The channel: LTTng-UST's defaults (per-user buffers, discard mode, no read
 * or switch timer) but 16 sub-buffers of 4 MiB per CPU instead of 4 of
 * 512 KiB, the 64 MiB that evstream's ring has in the same runs. What
 * bounds LTTng here is its consumer daemon, which copies every sub-buffer
 * into the trace; with small ones it is woken and writes too often to keep
 * up. Measured (64-byte events at full speed for 2.5 s): 4 x 256 KiB
 * discarded 31 %, the defaults 4 %, sub-buffers of 1 to 16 MiB 2-16 %
 * (their order lost in the machine's noise), a read timer (the daemon
 * polls instead of being woken) 14 %. Overwrite mode would lose whole
 * packets instead of counting events; blocking mode (--blocking-timeout,
 * LTTNG_UST_ALLOW_BLOCKING) makes the application sleep in the tracepoint,
 * 10 ms at a time, which evstream never does (it drops and counts). The
 * trace goes to $TMPDIR or /tmp: the daemon kept up better writing to the
 * disk's page cache than to a tmpfs (0 % against 18-29 % discarded).
 * EVS_BENCH_LTTNG_CHANNEL replaces these options, to try others.
 */
static const char *const channel_opts[] = { "--subbuf-size=4M", "--num-subbuf=16" };
/*
 * A drop-free trial emits for seconds at up to ~10 M events/s (~0.7 GB/s):
 * its trace is written in four files of 64 MiB per stream, each replacing
 * the oldest, so that it takes no more than this on disk, and so that
 * gigabytes of dirty page cache do not make the kernel throttle the daemon
 * (a file removed within a second or so is never written back). The daemon
 * writes every event all the same. Throughput runs keep the whole trace.
 */
static const char *const trial_opts[] = { "--tracefile-size=64M", "--tracefile-count=4" };

/* The peer as evs-bench sees it. */
static struct {
	pid_t pid;
	int sock;              /* requests to it, results from it */
	char dir[PATH_MAX - 64]; /* LTTNG_HOME, the trace, the daemon's log */
	char why[256];         /* once set, the peer cannot be used */
	char channel[256];
	char version[96];
} peer;

/* ------------------------------------------------------------ both sides */

/* A message into a why buffer; cut short if it must be. */
static void setf(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void setf(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, len, fmt, ap);
	va_end(ap);
}

/* Over the socket between the two: a peer gone is an error, not SIGPIPE. */
static int write_all(int fd, const void *buf, size_t n)
{
	const char *p = buf;

	while (n) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* 0 when all n bytes came, -1 at end of file or on an error. */
static int read_all(int fd, void *buf, size_t n)
{
	char *p = buf;

	while (n) {
		ssize_t r = read(fd, p, n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

static int rm_one(const char *path, const struct stat *st, int type, struct FTW *f)
{
	(void)st;
	(void)f;
	if (type == FTW_DP)
		rmdir(path);
	else
		unlink(path);
	return 0;
}

static void rm_tree(const char *dir)
{
	nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* name found in PATH (executable), into out */
static bool in_path(const char *name, char *out, size_t len)
{
	const char *path = getenv("PATH");
	char buf[4096];

	snprintf(buf, sizeof(buf), "%s", path ? path : "/usr/bin:/bin");
	for (char *save, *d = strtok_r(buf, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
		snprintf(out, len, "%s/%s", *d ? d : ".", name);
		if (access(out, X_OK) == 0)
			return true;
	}
	return false;
}

/* ------------------------------------------------------------ the peer */

static volatile pid_t sessiond_pid;
static pid_t parent_pid;
static char trace_dir[PATH_MAX];
/*
 * Without a namespace of our own, liblttng-ust and the daemon leave their
 * wait files in /dev/shm (LTTng-UST 2.13's names, global and per user):
 * those that were not there before go with the peer.
 */
static char wait_shm[2][64];
static bool wait_shm_ours[2];

/* The last line that says something, for a why. */
static const char *last_line(char *out)
{
	char *end = out + strlen(out), *l;

	while (end > out && (end[-1] == '\n' || end[-1] == ' ' || end[-1] == '\r'))
		*--end = 0;
	l = strrchr(out, '\n');
	return l ? l + 1 : out;
}

/* A child of the peer: no signal blocked, dies with the peer. */
static void child_setup(void)
{
	sigset_t none;

	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	prctl(PR_SET_PDEATHSIG, SIGTERM);
}

/*
 * Runs `lttng ARGS...` (a NULL-terminated list), its output (both streams)
 * in out. Its exit status, or -1 when it could not run.
 */
static int lttng(char *out, size_t len, ...)
{
	const char *argv[24] = { "lttng" };
	int n = 1, fds[2], st;
	size_t got = 0;
	va_list ap;
	pid_t pid;

	va_start(ap, len);
	while (n < 23 && (argv[n] = va_arg(ap, const char *)))
		n++;
	va_end(ap);
	argv[n] = NULL;
	out[0] = 0;
	if (pipe2(fds, O_CLOEXEC))
		return -1;
	pid = fork();
	if (pid == 0) {
		child_setup();
		dup2(fds[1], 1);
		dup2(fds[1], 2);
		execvp("lttng", (char *const *)argv);
		_exit(127);
	}
	close(fds[1]);
	for (;;) {
		ssize_t r = read(fds[0], out + got, len - 1 - got);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
		if (got == len - 1) {
			/* keep the end: that is where errors are */
			memmove(out, out + len / 2, got - len / 2);
			got -= len / 2;
		}
	}
	out[got] = 0;
	close(fds[0]);
	if (pid < 0 || waitpid(pid, &st, 0) < 0)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Stop the daemon: SIGTERM, at most 5 s, then SIGKILL. Async-signal-safe. */
static void sessiond_stop(void)
{
	pid_t pid = sessiond_pid;
	struct timespec ms10 = { 0, 10000000 };

	if (pid <= 0)
		return;
	kill(pid, SIGTERM);
	for (int i = 0; i < 500; i++) {
		if (waitpid(pid, NULL, WNOHANG) != 0)
			goto done;
		nanosleep(&ms10, NULL);
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
done:
	sessiond_pid = 0;
}

static void wait_shm_note(void)
{
	snprintf(wait_shm[0], sizeof(wait_shm[0]), "/dev/shm/lttng-ust-wait-8");
	snprintf(wait_shm[1], sizeof(wait_shm[1]), "/dev/shm/lttng-ust-wait-8-%u", (unsigned)geteuid());
	for (int i = 0; i < 2; i++)
		wait_shm_ours[i] = access(wait_shm[i], F_OK) != 0;
}

/* Async-signal-safe. */
static void wait_shm_remove(void)
{
	for (int i = 0; i < 2; i++)
		if (wait_shm_ours[i])
			unlink(wait_shm[i]);
}

/* Killed from outside: the daemon and the private directory go first.
 * Only async-signal-safe calls. */
static void peer_on_signal(int sig)
{
	pid_t pid;

	sessiond_stop();
	wait_shm_remove();
	pid = fork();
	if (pid == 0) {
		execl("/bin/rm", "rm", "-rf", "--", peer.dir, (char *)NULL);
		_exit(127);
	}
	if (pid > 0)
		waitpid(pid, NULL, 0);
	signal(sig, SIG_DFL);
	raise(sig);
	_exit(128 + sig);
}

/* Is a session daemon listening on this client socket? */
static bool listening(const char *path)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	bool yes;

	snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
	yes = fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0;
	if (fd >= 0)
		close(fd);
	return yes;
}

/*
 * As root: a mount namespace with /run (where /var/run/lttng is) and
 * /dev/shm of our own. 0 when private; else the daemon can still be
 * started where none runs, and -1 with why when one does.
 */
static int private_mounts(char *why, size_t len)
{
	char run[PATH_MAX];
	const char *step;
	int err;

	if (!realpath("/var/run", run))
		snprintf(run, sizeof(run), "/run");
	step = "unshare(CLONE_NEWNS)";
	if (unshare(CLONE_NEWNS))
		goto shared;
	step = "making / private";
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL))
		goto shared;
	step = "mounting a tmpfs on /run";
	if (mount("tmpfs", run, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755"))
		goto shared;
	step = "mounting a tmpfs on /dev/shm";
	if (mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777"))
		goto shared;
	return 0;
shared:
	err = errno;
	if (listening("/var/run/lttng/client-lttng-sessiond")) {
		setf(why, len, "a system session daemon runs (/var/run/lttng) and no private "
			 "mount namespace can be had for another one (%s: %s)", step, strerror(err));
		return -1;
	}
	warn("LTTng-UST: no private mount namespace (%s: %s); no session daemon runs, so the "
	     "peer's own uses /var/run/lttng", step, strerror(err));
	return 0;
}

/* Start the daemon on the consumer's CPU; 0 once it said it is ready. */
static int sessiond_start(char *why, size_t len)
{
	char load[PATH_MAX], log[PATH_MAX], loadopt[PATH_MAX + 16];
	struct timespec slice = { 0, 100000000 };
	sigset_t usr1;
	pid_t pid;
	int st;

	snprintf(load, sizeof(load), "%s/noload", peer.dir);
	snprintf(log, sizeof(log), "%s/sessiond.log", peer.dir);
	/* sessions saved in /etc/lttng/sessions/auto are not ours to load */
	snprintf(loadopt, sizeof(loadopt), "--load=%s", load);
	if (mkdir(load, 0700) && errno != EEXIST) {
		setf(why, len, "%s: %s", load, strerror(errno));
		return -1;
	}
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	sigprocmask(SIG_BLOCK, &usr1, NULL);
	pid = fork();
	if (pid == 0) {
		int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		int in = open("/dev/null", O_RDONLY | O_CLOEXEC);

		child_setup();
		bench_pin(BENCH_CPU_CONSUMER);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		if (in >= 0)
			dup2(in, 0);
		execlp("lttng-sessiond", "lttng-sessiond", "--no-kernel", "--sig-parent", loadopt,
		       (char *)NULL);
		fprintf(stderr, "exec lttng-sessiond: %s\n", strerror(errno));
		_exit(127);
	}
	if (pid < 0) {
		setf(why, len, "fork: %s", strerror(errno));
		return -1;
	}
	sessiond_pid = pid;
	/* --sig-parent: SIGUSR1 once it accepts commands */
	for (int i = 0; i < 100; i++) {
		if (sigtimedwait(&usr1, NULL, &slice) == SIGUSR1)
			return 0;
		if (waitpid(pid, &st, WNOHANG) == pid) {
			char buf[512] = "";
			FILE *f = fopen(log, "r");

			sessiond_pid = 0;
			if (f) {
				size_t n = fread(buf, 1, sizeof(buf) - 1, f);

				buf[n] = 0;
				fclose(f);
			}
			setf(why, len, "lttng-sessiond exited (%s %d): %s",
				 WIFEXITED(st) ? "status" : "signal",
				 WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st), last_line(buf));
			return -1;
		}
	}
	setf(why, len, "lttng-sessiond not ready after 10 s (its log: %s)", log);
	return -1;
}

/* Everything before the first request; 0 or -1 with why. */
static int peer_setup(const char *provider, char *why, size_t len, struct lt_res *ready)
{
	char out[4096], home[PATH_MAX], pid[32];
	void *h;

	snprintf(home, sizeof(home), "%s/home", peer.dir);
	snprintf(trace_dir, sizeof(trace_dir), "%s/trace", peer.dir);
	if (mkdir(home, 0700) && errno != EEXIST) {
		setf(why, len, "%s: %s", home, strerror(errno));
		return -1;
	}
	/* the daemon's, lttng's (.lttngrc) and liblttng-ust's home */
	setenv("LTTNG_HOME", home, 1);
	/* liblttng-ust waits this long (ms) for its registration when loaded */
	setenv("LTTNG_UST_REGISTER_TIMEOUT", "10000", 1);
	/* no state dumps: nothing of them is recorded, they would only run */
	setenv("LTTNG_UST_WITHOUT_BADDR_STATEDUMP", "1", 1);
	setenv("LTTNG_UST_WITHOUT_PROCNAME_STATEDUMP", "1", 1);
	unsetenv("LTTNG_UST_ALLOW_BLOCKING");
	if (geteuid() == 0 && private_mounts(why, len))
		return -1;
	/* in a namespace of our own, /dev/shm is new and empty: nothing to note */
	wait_shm_note();
	if (sessiond_start(why, len))
		return -1;
	if (lttng(out, sizeof(out), "--version", NULL) == 0)
		snprintf(ready->why, sizeof(ready->why), "%s", last_line(out));
	h = dlopen(provider, RTLD_NOW);
	if (!h) {
		setf(why, len, "dlopen %s: %s", provider, dlerror());
		return -1;
	}
	/* registered: the daemon lists this process's tracepoints */
	snprintf(pid, sizeof(pid), "PID: %d ", (int)getpid());
	if (lttng(out, sizeof(out), "list", "-u", NULL) != 0 || !strstr(out, pid)) {
		setf(why, len, "this process did not register with the session daemon "
			 "(lttng list -u: %s)", last_line(out));
		return -1;
	}
	return 0;
}

/* `lttng list SESSION`: the sum of its channels' discarded events */
static int discarded_of(const char *out, uint64_t *n)
{
	const char *key = "Discarded events:";
	bool seen = false;

	*n = 0;
	for (const char *p = strstr(out, key); p; p = strstr(p + 1, key)) {
		*n += strtoull(p + strlen(key), NULL, 10);
		seen = true;
	}
	return seen ? 0 : -1;
}

static const uint8_t payload[LT_PAYLOAD] = { [0 ... LT_PAYLOAD - 1] = 0xa5 };

/* As fast as it can: a warm-up of secs / 4, then secs measured. */
static void emit_tput(double secs, struct lt_res *r)
{
	uint64_t t = cli_now_ns(), t_warm = t + (uint64_t)(secs / 4 * 1e9);
	uint64_t t_stop = t_warm + (uint64_t)(secs * 1e9), n = 0, n1 = 0, t1 = 0;

	for (;;) {
		for (int i = 0; i < 64; i++)
			lttng_ust_tracepoint(evs_bench, event64, payload);
		n += 64;
		t = cli_now_ns();
		if (!t1 && t >= t_warm) {
			t1 = t;
			n1 = n;
		}
		if (t >= t_stop)
			break;
	}
	r->emitted = n;
	r->ev_s = t > t1 && t1 ? (double)(n - n1) / ((double)(t - t1) / 1e9) : 0;
}

static void emit_paced(double rate, double secs, struct lt_res *r)
{
	struct pacer pc;
	int k;

	pace_start(&pc, rate, secs);
	while ((k = pace_next(&pc)) >= 0) {
		for (int i = 0; i < k; i++)
			lttng_ust_tracepoint(evs_bench, event64, payload);
		pc.sent += (uint64_t)k;
	}
	r->emitted = pc.sent;
	r->ev_s = pace_rate(&pc);
}

/*
 * EVS_BENCH_LTTNG_KEEP=DIR keeps each throughput run's trace, as DIR/trace-N
 * (same file system), for reading with babeltrace2: bench/smoke.sh checks
 * the count of lttng_ctf.c with it. Trials write theirs in rotating files,
 * so theirs are partial and not kept.
 */
static void keep_trace(const struct lt_req *q)
{
	const char *keep = getenv("EVS_BENCH_LTTNG_KEEP");
	static int n;
	char to[PATH_MAX];

	if (!keep || !*keep || !q->tput)
		return;
	setf(to, sizeof(to), "%s/trace-%d", keep, n++);
	if (rename(trace_dir, to))
		warn("EVS_BENCH_LTTNG_KEEP: rename %s to %s: %s", trace_dir, to, strerror(errno));
}

#define FAIL_CMD(what) do {                                                            \
		setf(r->why, sizeof(r->why), "lttng %s: %s", what, last_line(out)); \
		goto out;                                                              \
	} while (0)

static void peer_record(const struct lt_req *q, struct lt_res *r)
{
	const char *extra = getenv("EVS_BENCH_LTTNG_CHANNEL");
	char out[8192], output[PATH_MAX + 16], opts[512] = "", *argv[16];
	uint64_t t0 = cli_now_ns(), until;
	int n = 0;
	bool made = false;

	memset(r, 0, sizeof(*r));
	snprintf(output, sizeof(output), "--output=%s", trace_dir);
	/* the channel's options, then those of a trial */
	if (extra && *extra) {
		snprintf(opts, sizeof(opts), "%s", extra);
		for (char *s, *o = strtok_r(opts, " ", &s); o && n < 8; o = strtok_r(NULL, " ", &s))
			argv[n++] = o;
	} else {
		for (size_t i = 0; i < sizeof(channel_opts) / sizeof(channel_opts[0]); i++)
			argv[n++] = (char *)channel_opts[i];
	}
	if (!q->tput)
		for (size_t i = 0; i < sizeof(trial_opts) / sizeof(trial_opts[0]); i++)
			argv[n++] = (char *)trial_opts[i];
	while (n < 12)
		argv[n++] = NULL;
	if (lttng(out, sizeof(out), "create", SESSION, output, NULL))
		FAIL_CMD("create");
	made = true;
	if (lttng(out, sizeof(out), "enable-channel", "-u", "-s", SESSION, CHANNEL, argv[0], argv[1],
		  argv[2], argv[3], argv[4], argv[5], argv[6], argv[7], argv[8], argv[9], NULL))
		FAIL_CMD("enable-channel");
	if (lttng(out, sizeof(out), "enable-event", "-u", "-s", SESSION, "-c", CHANNEL, LT_EVENT, NULL))
		FAIL_CMD("enable-event");
	if (lttng(out, sizeof(out), "start", SESSION, NULL))
		FAIL_CMD("start");
	/* start returns once the registered applications were told */
	until = cli_now_ns() + 5000000000ull;
	while (!lttng_ust_tracepoint_enabled(evs_bench, event64)) {
		if (cli_now_ns() > until) {
			setf(r->why, sizeof(r->why), "the event was not enabled 5 s after lttng start");
			goto out;
		}
		usleep(1000);
	}
	if (q->tput)
		emit_tput(q->secs, r);
	else
		emit_paced(q->rate, q->secs, r);
	/* stop waits until the consumer daemon has written everything */
	if (lttng(out, sizeof(out), "stop", SESSION, NULL))
		FAIL_CMD("stop");
	if (lttng(out, sizeof(out), "list", SESSION, NULL))
		FAIL_CMD("list");
	if (discarded_of(out, &r->discarded)) {
		setf(r->why, sizeof(r->why), "lttng list %s: no 'Discarded events' count", SESSION);
		goto out;
	}
	if (q->tput) {
		if (lt_ctf_count(trace_dir, LT_EVENT, &r->recorded, r->why, sizeof(r->why)))
			goto out;
		r->counted = 1;
	}
	r->ok = 1;
out:
	if (made && lttng(out, sizeof(out), "destroy", SESSION, NULL) && r->ok) {
		r->ok = 0;
		setf(r->why, sizeof(r->why), "lttng destroy: %s", last_line(out));
	}
	keep_trace(q);
	rm_tree(trace_dir);
	r->run_s = (double)(cli_now_ns() - t0) / 1e9;
}

static void peer_main(const char *provider, int sock)
{
	struct sigaction sa = { .sa_handler = peer_on_signal };
	struct lt_res res = { 0 };
	struct lt_req q;

	prctl(PR_SET_PDEATHSIG, SIGTERM);
	if (getppid() != parent_pid)
		_exit(1);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	/* the ready message: ok, or why not; lttng's version in why */
	if (peer_setup(provider, res.why, sizeof(res.why), &res) == 0)
		res.ok = 1;
	if (write_all(sock, &res, sizeof(res)) || !res.ok)
		goto out;
	while (read_all(sock, &q, sizeof(q)) == 0 && !q.quit) {
		peer_record(&q, &res);
		if (write_all(sock, &res, sizeof(res)))
			break;
	}
out:
	sessiond_stop();
	wait_shm_remove();
	_exit(0);
}

/* ------------------------------------------------------------ evs-bench's side */

static void peer_gone(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void peer_gone(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(peer.why, sizeof(peer.why), fmt, ap);
	va_end(ap);
	lt_peer_close();
}

int lt_peer_open(char *why, size_t len)
{
	char provider[PATH_MAX], bin[PATH_MAX], *slash;
	const char *tmp = getenv("TMPDIR");
	int sv[2];
	struct lt_res ready;
	ssize_t n;

	if (peer.pid)
		return 0;
	if (peer.why[0])
		goto fail;
	n = readlink("/proc/self/exe", provider, sizeof(provider) - sizeof(PROVIDER_SO) - 1);
	if (n < 0 || !(slash = memrchr(provider, '/', (size_t)n))) {
		peer_gone("cannot find evs-bench's own directory: %s", strerror(errno));
		goto fail;
	}
	strcpy(slash + 1, PROVIDER_SO);
	if (access(provider, R_OK)) {
		peer_gone("%s: %s (make bench-build makes it)", provider, strerror(errno));
		goto fail;
	}
	if (!in_path("lttng", bin, sizeof(bin)) || !in_path("lttng-sessiond", bin, sizeof(bin))) {
		peer_gone("no %s in PATH (Debian package lttng-tools)",
			  in_path("lttng", bin, sizeof(bin)) ? "lttng-sessiond" : "lttng binary");
		goto fail;
	}
	snprintf(peer.dir, sizeof(peer.dir), "%s/evs-bench-lttng.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(peer.dir)) {
		peer_gone("mkdtemp %s: %s", peer.dir, strerror(errno));
		peer.dir[0] = 0;
		goto fail;
	}
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv)) {
		peer_gone("socketpair: %s", strerror(errno));
		goto fail;
	}
	/* nothing buffered may be written twice */
	fflush(stdout);
	fflush(stderr);
	parent_pid = getpid();
	peer.pid = fork();
	if (peer.pid == 0) {
		close(sv[0]);
		peer_main(provider, sv[1]);
	}
	close(sv[1]);
	peer.sock = sv[0];
	if (peer.pid < 0) {
		peer.pid = 0;
		close(peer.sock);
		peer_gone("fork: %s", strerror(errno));
		goto fail;
	}
	if (read_all(peer.sock, &ready, sizeof(ready))) {
		peer_gone("the LTTng peer process died while starting");
		goto fail;
	}
	if (!ready.ok) {
		peer_gone("%s", ready.why);
		goto fail;
	}
	setf(peer.version, sizeof(peer.version), "%s", ready.why);
	return 0;
fail:
	setf(why, len, "LTTng-UST unusable: %s", peer.why);
	return -1;
}

int lt_peer_run(const struct lt_req *q, struct lt_res *r)
{
	memset(r, 0, sizeof(*r));
	if (!peer.pid) {
		setf(r->why, sizeof(r->why), "LTTng-UST unusable: %s",
		     peer.why[0] ? peer.why : "not started");
		return -1;
	}
	if (write_all(peer.sock, q, sizeof(*q)) || read_all(peer.sock, r, sizeof(*r))) {
		peer_gone("the LTTng peer process died");
		memset(r, 0, sizeof(*r));
		setf(r->why, sizeof(r->why), "LTTng-UST unusable: %s", peer.why);
		return -1;
	}
	return r->ok ? 0 : -1;
}

void lt_peer_close(void)
{
	struct lt_req quit = { .quit = 1 };
	struct timespec ms10 = { 0, 10000000 };

	if (peer.pid > 0) {
		/* it stops its daemon and exits; killed after 15 s */
		write_all(peer.sock, &quit, sizeof(quit));
		for (int i = 0; waitpid(peer.pid, NULL, WNOHANG) == 0; i++) {
			if (i == 1500) {
				warn("LTTng peer %d does not exit: killed", (int)peer.pid);
				kill(peer.pid, SIGKILL);
				waitpid(peer.pid, NULL, 0);
				break;
			}
			nanosleep(&ms10, NULL);
		}
		close(peer.sock);
	}
	peer.pid = 0;
	if (peer.dir[0]) {
		rm_tree(peer.dir);
		peer.dir[0] = 0;
	}
}

const char *lt_channel_desc(void)
{
	const char *extra = getenv("EVS_BENCH_LTTNG_CHANNEL");

	if (extra && *extra)
		snprintf(peer.channel, sizeof(peer.channel), "per-user buffers, EVS_BENCH_LTTNG_CHANNEL: %s",
			 extra);
	else
		snprintf(peer.channel, sizeof(peer.channel),
			 "per-user buffers, discard mode, 16 x 4 MiB sub-buffers per CPU, no timers");
	return peer.channel;
}

const char *lt_version(void)
{
	return peer.version;
}

#else /* !EVS_BENCH_LTTNG */

/* bench.mk says why: no liblttng-ust-dev, or EVS_NO_LTTNG */
#ifndef EVS_BENCH_LTTNG_OFF
#define EVS_BENCH_LTTNG_OFF "liblttng-ust-dev missing"
#endif

int lt_peer_open(char *why, size_t len)
{
	snprintf(why, len, "LTTng-UST not built: " EVS_BENCH_LTTNG_OFF);
	return -1;
}

int lt_peer_run(const struct lt_req *q, struct lt_res *r)
{
	(void)q;
	memset(r, 0, sizeof(*r));
	snprintf(r->why, sizeof(r->why), "LTTng-UST not built: " EVS_BENCH_LTTNG_OFF);
	return -1;
}

void lt_peer_close(void)
{
}

const char *lt_channel_desc(void)
{
	return "";
}

const char *lt_version(void)
{
	return "";
}

#endif

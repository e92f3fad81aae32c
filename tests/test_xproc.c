/* SPDX-License-Identifier: MIT */
/*
 * Producer and consumer in different processes (fork): both directions,
 * one consumer per stream, consumer hang-up and reconnect, producer exit
 * and crash with the committed records still drained. A stopped producer
 * holds neither a consumer's connect nor a new producer of its name past a
 * deadline; connections that never say hello hold neither the server nor
 * more than a few of its descriptors; one name has one producer, also when
 * many start at once.
 */
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <time.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>

#include "helpers.h"
#include "handshake.h"
#include "pending.h"

#define N_EVENTS 20000
/* EMPTY_PEEKS_PER_HUP_CHECK in transport/consumer.c: a busy peeker looks
 * for a producer hang-up at every 4096th empty peek */
#define HUP_CHECK_EVERY 4096

static double ms_since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)(t.tv_sec - t0->tv_sec) * 1e3 + (double)(t.tv_nsec - t0->tv_nsec) / 1e6;
}

static void fill(uint8_t *d, size_t n, uint64_t seq)
{
	for (size_t i = 0; i < n; i++)
		d[i] = (uint8_t)(seq * 13 + i);
}

static bool intact(const uint8_t *d, size_t n, uint64_t seq)
{
	for (size_t i = 0; i < n; i++)
		if (d[i] != (uint8_t)(seq * 13 + i))
			return false;
	return true;
}

static size_t size_of(uint64_t seq)
{
	return (size_t)(seq * 7919 % 3000);
}

/* Emit n events with sizes/patterns from seq, retrying while the ring is
 * full so that nothing is dropped. */
static void emit_all(struct evs_producer *p, unsigned int core, uint64_t from, uint64_t n)
{
	static uint8_t buf[4096];

	for (uint64_t s = from; s < from + n; s++) {
		int err;

		fill(buf, size_of(s), s);
		while ((err = evs_producer__emit(p, core, 3, buf, size_of(s))) == -ENOBUFS)
			usleep(100);
		if (err)
			_exit(100 + (-err & 0x7f));
	}
}

/* Read n events, expecting consecutive payload patterns from first; the
 * sequence numbers may skip ring-full retries (counted as drops). */
static int read_n(struct evs_consumer *c, uint64_t first, uint64_t n)
{
	struct evs_record rec;
	uint64_t got = 0;

	while (got < n) {
		int err = evs_consumer__peek(c, &rec);

		if (err == -EAGAIN) {
			err = evs_consumer__wait(c, 5000);
			if (err)
				return 2;
			continue;
		}
		if (err)
			return 3;
		if (rec.hdr.data_size != size_of(first + got) || rec.hdr.type != 3)
			return 4;
		if (!intact(rec.data, rec.hdr.data_size, first + got))
			return 5;
		got++;
		evs_consumer__release(c);
	}
	return 0;
}

/* Pipes between a test and the child it forked: the child writes
 * to_parent ("ready") and reads from_parent ("go on"). */
static int to_parent[2] = { -1, -1 }, from_parent[2] = { -1, -1 };

/* Reaps the child and closes the test's ends of the pipes. */
static int exit_code(pid_t pid)
{
	int status, rc;

	if (waitpid(pid, &status, 0) != pid)
		rc = -1;
	else if (WIFSIGNALED(status))
		rc = 1000 + WTERMSIG(status);
	else
		rc = WEXITSTATUS(status);
	close(to_parent[0]);
	close(from_parent[1]);
	to_parent[0] = from_parent[1] = -1;
	return rc;
}

static void sync_read(int fd)
{
	char ch;

	ck_assert_int_eq(read(fd, &ch, 1), 1);
}

static void sync_write(int fd)
{
	ck_assert_int_eq(write(fd, "x", 1), 1);
}

static bool child_says_ready(void)
{
	return write(to_parent[1], "r", 1) == 1;
}

static bool child_waits_done(void)
{
	char ch;

	return read(from_parent[0], &ch, 1) == 1;
}

typedef int (*child_fn)(const void *arg);

/* Forks a child that _exits with fn(arg). The test keeps only its own
 * pipe ends, so a child that dies early gives EOF (a failed sync_read),
 * never a hang. With `ready`, returns once the child has said so. */
static pid_t spawn(child_fn fn, const void *arg, bool ready)
{
	pid_t pid;

	ck_assert_int_eq(pipe2(to_parent, O_CLOEXEC), 0);
	ck_assert_int_eq(pipe2(from_parent, O_CLOEXEC), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		close(to_parent[0]);
		close(from_parent[1]);
		_exit(fn(arg));
	}
	close(to_parent[1]);
	close(from_parent[0]);
	if (ready)
		sync_read(to_parent[0]);
	return pid;
}

typedef int (*consumer_child_fn)(struct evs_consumer *c);

struct consumer_child {
	const char *name;
	unsigned int core;
	consumer_child_fn fn;
};

static int consumer_child(const void *arg)
{
	const struct consumer_child *cc = arg;
	struct evs_consumer *c = evs_consumer__connect(cc->name, cc->core, NULL);

	return c ? cc->fn(c) : 1;
}

/* Fork a consumer process attached to core of producer name; it exits with
 * child(c)'s result, or 1 if it could not connect. */
static pid_t spawn_consumer(const char *name, unsigned int core, consumer_child_fn child, bool ready)
{
	struct consumer_child cc = { .name = name, .core = core, .fn = child };

	return spawn(consumer_child, &cc, ready);
}

static int child_reads_all(struct evs_consumer *c)
{
	return read_n(c, 0, N_EVENTS);
}

static int child_holds_until_done(struct evs_consumer *c)
{
	if (!child_says_ready() || !child_waits_done())
		return 2;
	evs_consumer__free(c);
	return 0;
}

/* reads 100, then waits to be killed */
static int child_reads_100_then_hangs(struct evs_consumer *c)
{
	if (read_n(c, 0, 100) || !child_says_ready())
		return 2;
	pause();
	return 0;
}

/* the reconnecting consumer: 50 left unreleased by the dead one, 10 new */
static int child_reads_leftovers_and_new(struct evs_consumer *c)
{
	return child_says_ready() ? read_n(c, 100, 60) : 2;
}

static int child_sleeps_until_woken(struct evs_consumer *c)
{
	struct pollfd pfd = { .fd = evs_consumer__fd(c), .events = POLLIN };

	if (evs_consumer__prepare_wait(c) != 0 || !child_says_ready())
		return 2;
	if (poll(&pfd, 1, 5000) != 1)
		return 3;
	return read_n(c, 0, 1);
}

static bool fd_is(int fd, const char *what)
{
	char path[64], link[64] = "";

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	return readlink(path, link, sizeof(link) - 1) > 0 && !strcmp(link, what);
}

/* the stream fd of a consumer in another process: one epoll set holding
 * the eventfd and the socket, close-on-exec */
static int child_checks_fd_is_an_epoll_set(struct evs_consumer *c)
{
	int fd = evs_consumer__fd(c);

	if (!fd_is(fd, "anon_inode:[eventpoll]") || !(fcntl(fd, F_GETFD) & FD_CLOEXEC))
		return 2;
	return 0;
}

/* The eventfd the handshake handed this process (a hostile consumer has
 * it in its fd table whatever the library shows). */
static int handed_eventfd(void)
{
	for (int fd = 3; fd < 1024; fd++)
		if (fd_is(fd, "anon_inode:[eventfd]"))
			return fd;
	return -1;
}

/* arms, then clears O_NONBLOCK on the shared eventfd and fills its counter */
static int child_tries_to_block_producer(struct evs_consumer *c)
{
	uint64_t full = 0xfffffffffffffffeull;
	int fd = handed_eventfd();

	if (evs_consumer__prepare_wait(c) != 0 || fcntl(fd, F_SETFL, 0) < 0 ||
	    write(fd, &full, 8) != 8 || !child_says_ready())
		return 2;
	pause();
	return 0;
}

START_TEST(test_xproc_consumer_child_receives_all)
{
	const char *name = evs_test_name("cc");
	struct evs_producer *p = evs_producer__new(name, 2, NULL);
	pid_t pid;

	ck_assert_msg(p, "%s", evs_errmsg());
	pid = spawn_consumer(name, 1, child_reads_all, false);
	ck_assert(evs_wait_connected(p, 1, 1, 5000));
	emit_all(p, 1, 0, N_EVENTS);
	ck_assert_int_eq(exit_code(pid), 0);
	evs_producer__free(p);
}
END_TEST

/* emits N_EVENTS once a consumer is there, frees when told */
static int producer_emits_all(const void *name)
{
	struct evs_producer *p = evs_producer__new(name, 1, NULL);

	if (!p)
		return 1;
	if (!child_says_ready() || !evs_wait_connected(p, 0, 1, 5000))
		return 2;
	emit_all(p, 0, 0, N_EVENTS);
	if (!child_waits_done())
		return 3;
	evs_producer__free(p);
	return 0;
}

START_TEST(test_xproc_producer_child_consumer_parent)
{
	const char *name = evs_test_name("pc");
	struct evs_consumer *c;
	struct evs_record rec;
	pid_t pid;

	pid = spawn(producer_emits_all, name, true);
	c = evs_consumer__connect(name, 0, NULL);
	ck_assert_msg(c, "%s", evs_errmsg());
	ck_assert_int_eq(read_n(c, 0, N_EVENTS), 0);
	sync_write(from_parent[1]);
	ck_assert_int_eq(exit_code(pid), 0);
	/* the producer has gone: drained and told so */
	ck_assert_int_eq(evs_consumer__wait(c, -1), -EPIPE);
	ck_assert_int_eq(evs_consumer__peek(c, &rec), -EPIPE);
	evs_consumer__free(c);
}
END_TEST

START_TEST(test_xproc_second_consumer_is_refused)
{
	const char *name = evs_test_name("two");
	struct evs_producer *p = evs_producer__new(name, 1, NULL);
	pid_t pid;

	ck_assert_ptr_nonnull(p);
	pid = spawn_consumer(name, 0, child_holds_until_done, true);
	/* another process's client holds core 0: this process cannot have it */
	ck_assert_ptr_null(evs_consumer__connect(name, 0, NULL));
	ck_assert_int_eq(errno, EBUSY);
	sync_write(from_parent[1]);
	ck_assert_int_eq(exit_code(pid), 0);
	ck_assert(evs_wait_connected(p, 0, 0, 5000));
	evs_producer__free(p);
}
END_TEST

/* A consumer that dies (SIGKILL) is noticed; the producer drops as
 * no_consumer without blocking; the next consumer gets what was committed
 * but not released, then fresh events. */
START_TEST(test_xproc_consumer_hangup_then_reconnect)
{
	const char *name = evs_test_name("hup");
	struct evs_producer *p = evs_producer__new(name, 1, NULL);
	struct evs_stream_stats st = { .sz = sizeof(st) };
	struct timespec t0;
	pid_t pid;

	ck_assert_ptr_nonnull(p);
	pid = spawn_consumer(name, 0, child_reads_100_then_hangs, false);
	ck_assert(evs_wait_connected(p, 0, 1, 5000));
	emit_all(p, 0, 0, 150); /* the child reads 100 of them */
	sync_read(to_parent[0]);
	kill(pid, SIGKILL);
	ck_assert_int_eq(exit_code(pid), 1000 + SIGKILL);
	/* no limit of its own: the test case's timeout bounds the wait */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	evs_wait_connected(p, 0, 0, -1);
	printf("hang-up noticed after %.1f ms\n", ms_since(&t0));
	ck_assert_int_eq(evs_producer__emit(p, 0, 3, "lost", 4), -ENOTCONN);

	pid = spawn_consumer(name, 0, child_reads_leftovers_and_new, true);
	ck_assert(evs_wait_connected(p, 0, 1, 5000));
	emit_all(p, 0, 150, 10);
	ck_assert_int_eq(exit_code(pid), 0);
	evs_wait_connected(p, 0, 0, -1);
	ck_assert_int_eq(evs_producer__stats(p, 0, &st), 0);
	ck_assert_uint_eq(st.produced, 161);
	ck_assert_uint_eq(st.committed, 160);
	ck_assert_uint_eq(st.dropped_events[EVS_DROP_NO_CONSUMER], 1);
	ck_assert_uint_eq(st.released, 160);
	ck_assert_uint_eq(st.produced, st.released + st.dropped);
	evs_producer__free(p);
}
END_TEST

/* The producer process is killed with records in the ring: the consumer
 * still reads every committed record, then learns the producer is gone;
 * its stats tell a death from a close as soon as the process is gone. */
struct dying_producer {
	const char *name;
	bool crash;
};

/* emits 500 once a consumer is there, says so, then exits or dies when told */
static int producer_emits_500_then_goes(const void *arg)
{
	const struct dying_producer *dp = arg;
	struct evs_producer *p = evs_producer__new(dp->name, 1, NULL);

	if (!p || !child_says_ready() || !evs_wait_connected(p, 0, 1, 5000))
		return 1;
	emit_all(p, 0, 0, 500);
	if (!child_says_ready() || !child_waits_done())
		return 2;
	if (dp->crash)
		raise(SIGKILL);
	evs_producer__free(p);
	return 0;
}

static void producer_dies(bool crash)
{
	struct dying_producer dp = { .name = evs_test_name(crash ? "crash" : "exit"), .crash = crash };
	struct evs_consumer *c;
	struct evs_record rec;
	struct evs_stream_stats st = { .sz = sizeof(st) };
	pid_t pid;

	pid = spawn(producer_emits_500_then_goes, &dp, true);
	c = evs_consumer__connect(dp.name, 0, NULL);
	ck_assert_msg(c, "%s", evs_errmsg());
	sync_read(to_parent[0]); /* 500 records are in the ring */
	sync_write(from_parent[1]);
	ck_assert_int_eq(exit_code(pid), crash ? 1000 + SIGKILL : 0);
	/* the stats say it at once, before any read or wait looked */
	ck_assert_int_eq(evs_consumer__stats(c, &st), 0);
	ck_assert_uint_eq(st.producer_closed, !crash);
	ck_assert_uint_eq(st.producer_died, crash);
	ck_assert_int_eq(read_n(c, 0, 500), 0);
	ck_assert_int_eq(evs_consumer__wait(c, -1), -EPIPE);
	ck_assert_int_eq(evs_consumer__peek(c, &rec), -EPIPE);
	/* the stats tell a clean close from a death */
	ck_assert_int_eq(evs_consumer__stats(c, &st), 0);
	ck_assert_uint_eq(st.producer_closed, !crash);
	ck_assert_uint_eq(st.producer_died, crash);
	evs_consumer__free(c);
}

START_TEST(test_xproc_producer_exit_drains_then_epipe)
{
	producer_dies(false);
}
END_TEST

START_TEST(test_xproc_producer_crash_drains_then_epipe)
{
	producer_dies(true);
}
END_TEST

/* emits 300 once the consumer has its connection, then dies. The stream
 * is live before the server's welcome has left, so "connected" alone
 * would let this die before the consumer's handshake ends. */
static int producer_emits_300_then_crashes(const void *name)
{
	struct evs_producer *p = evs_producer__new(name, 1, NULL);

	if (!p || !child_says_ready() || !evs_wait_connected(p, 0, 1, 5000) ||
	    !child_waits_done())
		return 1;
	emit_all(p, 0, 0, 300);
	raise(SIGKILL);
	return 2;
}

/* A consumer that only ever peeks (never sleeps) still learns that a
 * crashed producer has gone, after reading everything it committed: the
 * producer is reaped first, then the records are drained, and the gone
 * producer shows within one hang-up check's worth of empty peeks. */
START_TEST(test_xproc_busy_peeker_sees_producer_crash)
{
	const char *name = evs_test_name("busy");
	struct evs_consumer *c;
	struct evs_record rec;
	uint64_t got = 0, empties = 0;
	pid_t pid;
	int err;

	pid = spawn(producer_emits_300_then_crashes, name, true);
	c = evs_consumer__connect(name, 0, NULL);
	ck_assert_msg(c, "%s", evs_errmsg());
	sync_write(from_parent[1]);
	ck_assert_int_eq(exit_code(pid), 1000 + SIGKILL);
	while ((err = evs_consumer__peek(c, &rec)) == 0 || err == -EAGAIN) {
		if (err == -EAGAIN) {
			ck_assert_uint_le(++empties, HUP_CHECK_EVERY);
			continue;
		}
		ck_assert_uint_eq(empties, 0); /* all 300 were there */
		ck_assert_uint_eq(rec.hdr.data_size, size_of(got));
		ck_assert(intact(rec.data, rec.hdr.data_size, got));
		got++;
		evs_consumer__release(c);
	}
	ck_assert_int_eq(err, -EPIPE);
	ck_assert_uint_eq(got, 300);
	printf("busy peeker: producer gone seen after %llu empty peeks\n", (unsigned long long)empties);
	ck_assert_int_eq(evs_consumer__prepare_wait(c), -EPIPE);
	evs_consumer__free(c);
}
END_TEST

/* A sleeping cross-process consumer is woken through the passed eventfd. */
START_TEST(test_xproc_eventfd_wakes_other_process)
{
	const char *name = evs_test_name("wake");
	struct evs_producer *p = evs_producer__new(name, 1, NULL);
	pid_t pid;

	ck_assert_ptr_nonnull(p);
	pid = spawn_consumer(name, 0, child_sleeps_until_woken, true);
	emit_all(p, 0, 0, 1);
	ck_assert_int_eq(exit_code(pid), 0);
	evs_producer__free(p);
}
END_TEST

/* The stream fd of another process's consumer is one epoll set of the
 * eventfd and the socket: records and the producer's end both wake it. */
START_TEST(test_xproc_stream_fd_is_an_epoll_set)
{
	const char *name = evs_test_name("efd");
	struct evs_producer *p = evs_producer__new(name, 1, NULL);
	pid_t pid;

	ck_assert_ptr_nonnull(p);
	pid = spawn_consumer(name, 0, child_checks_fd_is_an_epoll_set, false);
	ck_assert_int_eq(exit_code(pid), 0);
	evs_producer__free(p);
}
END_TEST

/* A hostile consumer clears O_NONBLOCK on the shared eventfd and fills its
 * counter, then arms: the producer's wake must not wait. */
START_TEST(test_xproc_hostile_consumer_cannot_block_producer)
{
	const char *name = evs_test_name("hostile");
	struct evs_producer *p = evs_producer__new(name, 1, NULL);
	pid_t pid;

	ck_assert_ptr_nonnull(p);
	pid = spawn_consumer(name, 0, child_tries_to_block_producer, true);
	alarm(10); /* a blocked producer fails the test by SIGALRM */
	for (int i = 0; i < 100; i++)
		ck_assert_int_eq(evs_producer__emit(p, 0, 3, "x", 1), 0);
	alarm(0);
	kill(pid, SIGKILL);
	ck_assert_int_eq(exit_code(pid), 1000 + SIGKILL); /* it had paused, not failed */
	evs_producer__free(p);
}
END_TEST

/* ------------------------------------------------------ deadlines */

static void socket_path(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "%s/%s.sock", getenv("EVSTREAM_RUNTIME_DIR"), name);
}

/* holds a producer until told */
static int producer_holds(const void *name)
{
	struct evs_producer *p = evs_producer__new(name, 1, NULL);

	if (!p || !child_says_ready() || !child_waits_done())
		return 1;
	evs_producer__free(p);
	return 0;
}

/* Connections that never say hello until the listen queue of producer
 * name is full (a stopped server takes none off it); their fds go to q. */
static int fill_listen_queue(const char *name, int *q, int max)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int n;

	socket_path(sa.sun_path, sizeof(sa.sun_path), name);
	for (n = 0; n < max; n++) {
		q[n] = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		ck_assert_int_ge(q[n], 0);
		if (connect(q[n], (struct sockaddr *)&sa, sizeof(sa)) < 0) {
			ck_assert_int_eq(errno, EAGAIN);
			close(q[n]);
			break;
		}
	}
	ck_assert_int_lt(n, max);
	return n;
}

/* A producer stopped with SIGSTOP (paused in a debugger) and its listen
 * queue full: a consumer's connect ends at its deadline, saying why, and a
 * new producer of the same name fails at once, naming the pid. */
START_TEST(test_xproc_stopped_producer_holds_no_connect_past_its_deadline)
{
	EVS_OPTS(evs_consumer_opts, o, .timeout_ms = 300);
	const char *name = evs_test_name("stopped");
	char pid_s[32];
	struct timespec t0;
	int q[64], n, status;
	double ms;
	pid_t pid;

	pid = spawn(producer_holds, name, true);
	ck_assert_int_eq(kill(pid, SIGSTOP), 0);
	ck_assert_int_eq(waitpid(pid, &status, WUNTRACED), pid);
	ck_assert(WIFSTOPPED(status));
	n = fill_listen_queue(name, q, 64);
	alarm(10); /* a connect that blocks fails the test by SIGALRM */

	clock_gettime(CLOCK_MONOTONIC, &t0);
	ck_assert_ptr_null(evs_consumer__connect(name, 0, &o));
	ms = ms_since(&t0);
	ck_assert_int_eq(errno, ETIMEDOUT);
	ck_assert_msg(strstr(evs_errmsg(), "accepts no connection"), "message: %s", evs_errmsg());
	ck_assert_msg(ms >= 290 && ms < 1300, "connect gave up after %.0f ms, its deadline was 300", ms);
	printf("stopped producer: connect gave up after %.0f ms: %s\n", ms, evs_errmsg());

	clock_gettime(CLOCK_MONOTONIC, &t0);
	ck_assert_ptr_null(evs_producer__new(name, 1, NULL));
	ms = ms_since(&t0);
	ck_assert_int_eq(errno, EADDRINUSE);
	snprintf(pid_s, sizeof(pid_s), "pid %d", (int)pid);
	ck_assert_msg(strstr(evs_errmsg(), pid_s), "message: %s", evs_errmsg());
	ck_assert_msg(ms < 1000, "a second producer took %.0f ms to fail", ms);
	printf("stopped producer: a second one failed after %.1f ms: %s\n", ms, evs_errmsg());
	alarm(0);

	while (n--)
		close(q[n]);
	kill(pid, SIGKILL);
	ck_assert_int_eq(exit_code(pid), 1000 + SIGKILL);
}
END_TEST

/* ------------------------------------------------- silent clients */

/* Silent connections opened at once. A server that waits up to 1 s for
 * each hello in turn needs 4 s to get past them: unambiguous against a
 * connect deadline of 1.5 s. */
#define SILENT 4

/* n connections to producer name that say nothing; their fds go to q. Non-
 * blocking: a full listen queue fails the test instead of waiting. */
static void open_silent(const char *name, int *q, int n)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };

	socket_path(sa.sun_path, sizeof(sa.sun_path), name);
	for (int i = 0; i < n; i++) {
		q[i] = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		ck_assert_int_ge(q[i], 0);
		ck_assert_msg(connect(q[i], (struct sockaddr *)&sa, sizeof(sa)) == 0,
			      "silent connection %d: %s", i, strerror(errno));
	}
}

/* The server has closed fd (EOF or hang-up readable), without waiting. */
static bool closed_by_server(int fd)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };

	return poll(&pfd, 1, 0) == 1;
}

/* connects to core 0 with a 1.5 s deadline, says how it went */
static int consumer_connects_in_1500_ms(const void *name)
{
	EVS_OPTS(evs_consumer_opts, o, .timeout_ms = 1500);
	struct timespec t0;
	struct evs_consumer *c;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	c = evs_consumer__connect(name, 0, &o);
	printf("honest connect %s after %.1f ms%s%s\n", c ? "succeeded" : "FAILED", ms_since(&t0),
	       c ? "" : ": ", c ? "" : evs_errmsg());
	fflush(stdout);
	evs_consumer__free(c);
	return c ? 0 : 1;
}

/* Connections of the producer's uid that never say hello hold no honest
 * consumer: its connect succeeds within a deadline of 1.5 s, where the
 * server that waited for each hello in turn (1 s each) took 4 s. */
START_TEST(test_xproc_silent_connections_hold_no_honest_connect)
{
	const char *name = evs_test_name("silent");
	struct evs_producer *p = evs_producer__new(name, 1, NULL);
	int q[SILENT];
	pid_t pid;

	ck_assert_ptr_nonnull(p);
	open_silent(name, q, SILENT);
	printf("%d silent connections, then: ", SILENT);
	fflush(stdout); /* before the fork */
	pid = spawn(consumer_connects_in_1500_ms, name, false);
	ck_assert_msg(exit_code(pid) == 0, "the honest consumer could not connect past %d silent "
		      "connections within 1.5 s", SILENT);
	for (int i = 0; i < SILENT; i++)
		close(q[i]);
	evs_producer__free(p);
}
END_TEST

/* While connections wait for their hello, the server still sees a
 * consumer hang up: before their deadline, none of them is closed yet.
 * The server that waited for one hello at a time saw it only after
 * closing the first silent connection, a second later. */
START_TEST(test_xproc_hang_up_is_seen_while_hellos_are_awaited)
{
	const char *name = evs_test_name("hupsilent");
	struct evs_producer *p = evs_producer__new(name, 1, NULL);
	struct timespec t0;
	int q[SILENT];
	pid_t pid;

	ck_assert_ptr_nonnull(p);
	pid = spawn_consumer(name, 0, child_holds_until_done, true);
	ck_assert(evs_wait_connected(p, 0, 1, 5000));
	open_silent(name, q, SILENT);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	kill(pid, SIGKILL);
	ck_assert_int_eq(exit_code(pid), 1000 + SIGKILL);
	/* no limit of its own: the test case's timeout bounds the wait */
	evs_wait_connected(p, 0, 0, -1);
	printf("hang-up seen %.1f ms after the kill, %d connections waiting for their hello\n",
	       ms_since(&t0), SILENT);
	for (int i = 0; i < SILENT; i++)
		ck_assert_msg(!closed_by_server(q[i]), "silent connection %d was closed before the "
			      "hang-up was seen: the server waited on it", i);
	for (int i = 0; i < SILENT; i++)
		close(q[i]);
	evs_producer__free(p);
}
END_TEST

static int count_fds(void)
{
	int n = 0;

	for (int fd = 0; fd < 1024; fd++)
		n += fcntl(fd, F_GETFD) >= 0;
	return n;
}

/* What the server did with a silent connection it closed: 'r' refused
 * with a welcome of status -EAGAIN (too many waiting), 't' closed without
 * a word (its deadline passed), '?' anything else. */
static char how_closed(int fd)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	struct evs_welcome w;
	ssize_t n = recv(fd, &w, sizeof(w), MSG_DONTWAIT);

	if (n == 0)
		return 't';
	if (n != (ssize_t)sizeof(w) || w.magic != EVS_WELCOME_MAGIC || w.status != -EAGAIN)
		return '?';
	/* the close follows the welcome: a safety net, not a time limit */
	return poll(&pfd, 1, 5000) == 1 && recv(fd, &w, sizeof(w), MSG_DONTWAIT) == 0 ? 'r' : '?';
}

/* More silent connections than the server keeps waiting for a hello
 * (EVS_PENDING_MAX): the surplus is refused (EAGAIN), the ones that
 * waited longest first, the rest closed unanswered when their deadline
 * passes; meanwhile the producer never holds more descriptors for them
 * than the cap. The old server kept none of them pending: it waited 1 s
 * for each in turn, so 12 took 12 s and none was refused. */
START_TEST(test_xproc_silent_connections_are_capped_and_closed_at_their_deadline)
{
	enum { N = EVS_PENDING_MAX + 4 };
	const char *name = evs_test_name("cap");
	struct evs_producer *p = evs_producer__new(name, 1, NULL);
	int q[N], base, most = 0, refused = 0, timed_out = 0, other = 0;
	char how[N] = { 0 };
	uint64_t t0 = evs_test_now_ns();

	ck_assert_ptr_nonnull(p);
	base = count_fds();
	open_silent(name, q, N);
	/* the safety net (10 s) is far past the 1 s deadline */
	while (refused + timed_out + other < N && evs_test_now_ns() - t0 < 10000000000ull) {
		/* the producer's share: all but our N ends */
		int held = count_fds() - base - N;

		most = held > most ? held : most;
		for (int i = 0; i < N; i++) {
			if (how[i] || !closed_by_server(q[i]))
				continue;
			how[i] = how_closed(q[i]);
			refused += how[i] == 'r';
			timed_out += how[i] == 't';
			other += how[i] == '?';
		}
		usleep(1000);
	}
	printf("%d silent connections: %d refused, %d closed at their deadline, %d else, within "
	       "%.0f ms; at most %d descriptors held for them\n", N, refused, timed_out, other,
	       (double)(evs_test_now_ns() - t0) / 1e6, most);
	fflush(stdout); /* before the fork below */
	ck_assert_int_eq(refused, N - EVS_PENDING_MAX);
	ck_assert_int_eq(timed_out, EVS_PENDING_MAX);
	ck_assert_int_eq(other, 0);
	ck_assert_int_le(most, EVS_PENDING_MAX);
	/* the ones refused were the first, waiting longest */
	for (int i = 0; i < N - EVS_PENDING_MAX; i++)
		ck_assert_msg(how[i] == 'r', "connection %d (of the first) was not the one refused", i);
	for (int i = 0; i < N; i++)
		close(q[i]);
	/* the server still answers */
	pid_t pid = spawn(consumer_connects_in_1500_ms, name, false);
	ck_assert_int_eq(exit_code(pid), 0);
	evs_producer__free(p);
}
END_TEST

/* ------------------------------------------------------- one name */

#define STORM_PROCS 12
#define STORM_ROUNDS 100

/* Waits for the start (EOF on go), tries to be producer `name`; says
 * {index, 'w' won / 'l' lost with EADDRINUSE / 'e' other error} on res;
 * a winner stays until `stay` ends. */
static void storm_child(int idx, const char *name, int go, int res, int stay)
{
	EVS_OPTS(evs_producer_opts, o, .ring_bytes = 4096, .hugepages = EVS_HUGEPAGES_OFF);
	struct evs_producer *p;
	char msg[2] = { (char)idx, 'e' }, ch;

	alarm(20);
	if (read(go, &ch, 1) != 0)
		_exit(120);
	p = evs_producer__new(name, 1, &o);
	msg[1] = p ? 'w' : errno == EADDRINUSE ? 'l' : 'e';
	if (write(res, msg, 2) != 2)
		_exit(121);
	if (!p)
		_exit(0);
	if (read(stay, &ch, 1) != 0)
		_exit(122);
	evs_producer__free(p);
	_exit(0);
}

/* Many processes create a producer of one name at the same instant: one
 * wins each round, and stays reachable once the others have gone; when
 * it exits, the name is free for the next. */
START_TEST(test_xproc_one_name_one_producer_in_a_fork_storm)
{
	char name[64];

	snprintf(name, sizeof(name), "%s", evs_test_name("storm"));
	for (int round = 0; round < STORM_ROUNDS; round++) {
		int go[2], res[2], stay[2], won = 0, lost = 0, winner = -1, status;
		pid_t pids[STORM_PROCS];
		struct evs_consumer *c;

		ck_assert_int_eq(pipe2(go, O_CLOEXEC), 0);
		ck_assert_int_eq(pipe2(res, O_CLOEXEC), 0);
		ck_assert_int_eq(pipe2(stay, O_CLOEXEC), 0);
		for (int i = 0; i < STORM_PROCS; i++) {
			pids[i] = fork();
			ck_assert_int_ge(pids[i], 0);
			if (pids[i] == 0) {
				close(go[1]);
				close(res[0]);
				close(stay[1]);
				storm_child(i, name, go[0], res[1], stay[0]);
			}
		}
		close(go[0]);
		close(res[1]);
		close(stay[0]);
		close(go[1]); /* all at once */
		for (int i = 0; i < STORM_PROCS; i++) {
			char msg[2];

			ck_assert_int_eq(read(res[0], msg, 2), 2);
			ck_assert_msg(msg[1] != 'e', "round %d: a producer failed otherwise than "
				      "EADDRINUSE", round);
			if (msg[1] == 'w') {
				won++;
				winner = msg[0];
			} else {
				lost++;
			}
		}
		close(res[0]);
		ck_assert_msg(won == 1, "round %d: %d producers of one name", round, won);
		/* the losers have gone; the winner is still there */
		for (int i = 0; i < STORM_PROCS; i++) {
			if (i == winner)
				continue;
			ck_assert_int_eq(waitpid(pids[i], &status, 0), pids[i]);
			ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
		}
		c = evs_consumer__connect(name, 0, NULL);
		ck_assert_msg(c, "round %d: the winner is unreachable: %s", round, evs_errmsg());
		evs_consumer__free(c);
		close(stay[1]);
		ck_assert_int_eq(waitpid(pids[winner], &status, 0), pids[winner]);
		ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
	printf("fork storm: %d rounds of %d producers, one winner each\n", STORM_ROUNDS, STORM_PROCS);
	{
		struct evs_producer *p = evs_producer__new(name, 1, NULL);

		ck_assert_msg(p, "the name stayed taken: %s", evs_errmsg());
		evs_producer__free(p);
	}
}
END_TEST

/* A producer removes the socket file it made, and no other: here another
 * one has replaced it (a producer of an evstream that took no lock). */
START_TEST(test_xproc_free_leaves_a_socket_file_that_is_not_its_own)
{
	const char *name = evs_test_name("notmine");
	struct evs_producer *p = evs_producer__new(name, 1, NULL);
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct stat mine, after;
	int fd;

	ck_assert_msg(p, "%s", evs_errmsg());
	socket_path(sa.sun_path, sizeof(sa.sun_path), name);
	ck_assert_int_eq(unlink(sa.sun_path), 0);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ck_assert_int_eq(stat(sa.sun_path, &mine), 0);
	evs_producer__free(p);
	ck_assert_msg(stat(sa.sun_path, &after) == 0, "the producer removed a socket file not its own");
	ck_assert_uint_eq(after.st_ino, mine.st_ino);
	close(fd);
	unlink(sa.sun_path);
}
END_TEST

/* A producer killed leaves its socket and lock files: the next producer of
 * the name takes both over, and consumers reach it. */
START_TEST(test_xproc_name_is_free_again_after_its_producer_is_killed)
{
	const char *name = evs_test_name("killed");
	struct evs_producer *p;
	pid_t pid;

	pid = spawn(producer_holds, name, true);
	kill(pid, SIGKILL);
	ck_assert_int_eq(exit_code(pid), 1000 + SIGKILL);
	p = evs_producer__new(name, 1, NULL);
	ck_assert_msg(p, "%s", evs_errmsg());
	pid = spawn_consumer(name, 0, child_holds_until_done, true);
	sync_write(from_parent[1]);
	ck_assert_int_eq(exit_code(pid), 0);
	evs_producer__free(p);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("xproc");
	TCase *tc = evs_tcase("xproc");

	/* a child gone early is an error from write(), not the end of the suite */
	signal(SIGPIPE, SIG_IGN);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_xproc_consumer_child_receives_all);
	tcase_add_test(tc, test_xproc_producer_child_consumer_parent);
	tcase_add_test(tc, test_xproc_second_consumer_is_refused);
	tcase_add_test(tc, test_xproc_consumer_hangup_then_reconnect);
	tcase_add_test(tc, test_xproc_producer_exit_drains_then_epipe);
	tcase_add_test(tc, test_xproc_producer_crash_drains_then_epipe);
	tcase_add_test(tc, test_xproc_eventfd_wakes_other_process);
	tcase_add_test(tc, test_xproc_busy_peeker_sees_producer_crash);
	tcase_add_test(tc, test_xproc_stream_fd_is_an_epoll_set);
	tcase_add_test(tc, test_xproc_hostile_consumer_cannot_block_producer);
	tcase_add_test(tc, test_xproc_stopped_producer_holds_no_connect_past_its_deadline);
	tcase_add_test(tc, test_xproc_silent_connections_hold_no_honest_connect);
	tcase_add_test(tc, test_xproc_hang_up_is_seen_while_hellos_are_awaited);
	tcase_add_test(tc, test_xproc_silent_connections_are_capped_and_closed_at_their_deadline);
	tcase_add_test(tc, test_xproc_one_name_one_producer_in_a_fork_storm);
	tcase_add_test(tc, test_xproc_free_leaves_a_socket_file_that_is_not_its_own);
	tcase_add_test(tc, test_xproc_name_is_free_again_after_its_producer_is_killed);
	suite_add_tcase(s, tc);
	return evs_run_suite(s);
}

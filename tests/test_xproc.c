/* SPDX-License-Identifier: MIT */
/*
 * Producer and consumer in different processes (fork): both directions,
 * one consumer per stream, consumer hang-up and reconnect, producer exit
 * and crash with the committed records still drained.
 */
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <time.h>
#include <sys/wait.h>

#include "helpers.h"

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

static int child_checks_fd_is_eventfd(struct evs_consumer *c)
{
	char path[64], link[64] = "";

	snprintf(path, sizeof(path), "/proc/self/fd/%d", evs_consumer__fd(c));
	if (readlink(path, link, sizeof(link) - 1) < 0 || strcmp(link, "anon_inode:[eventfd]"))
		return 2;
	return 0;
}

/* arms, then clears O_NONBLOCK on the shared eventfd and fills its counter */
static int child_tries_to_block_producer(struct evs_consumer *c)
{
	uint64_t full = 0xfffffffffffffffeull;
	int fd = evs_consumer__fd(c);

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
 * still reads every committed record, then learns the producer is gone. */
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

/* The stream fd is an eventfd, handed to the other process. */
START_TEST(test_xproc_stream_fd_is_an_eventfd)
{
	const char *name = evs_test_name("efd");
	struct evs_producer *p = evs_producer__new(name, 1, NULL);
	pid_t pid;

	ck_assert_ptr_nonnull(p);
	pid = spawn_consumer(name, 0, child_checks_fd_is_eventfd, false);
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
	tcase_add_test(tc, test_xproc_stream_fd_is_an_eventfd);
	tcase_add_test(tc, test_xproc_hostile_consumer_cannot_block_producer);
	suite_add_tcase(s, tc);
	return evs_run_suite(s);
}

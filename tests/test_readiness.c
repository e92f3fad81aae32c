/* SPDX-License-Identifier: MIT */
/*
 * When a stream fd is readable: a new client sees what is already pending,
 * a producer's death wakes a poller (poll, epoll, select) in another
 * process, readiness is exact after the last read, a late eventfd count
 * never makes a wait spin, publish() with nothing new wakes nobody, and
 * every fd the library makes is close-on-exec.
 */
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/select.h>
#include <sys/wait.h>
#include <time.h>

#include "helpers.h"
#include "consumer.h"
#include "nrt/ndebug_stream.h"
#include "producer.h"

static bool readable(int fd, int timeout_ms)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };

	return poll(&pfd, 1, timeout_ms) == 1;
}

/* Wait for fd by one of the three kernel interfaces the reference names. */
enum waiter { BY_POLL, BY_EPOLL, BY_SELECT };

static const char *waiter_name(int w)
{
	return w == BY_POLL ? "poll" : w == BY_EPOLL ? "epoll" : "select";
}

static bool readable_by(int how, int fd, int timeout_ms)
{
	if (how == BY_POLL)
		return readable(fd, timeout_ms);
	if (how == BY_EPOLL) {
		struct epoll_event ev = { .events = EPOLLIN }, out;
		int ep = epoll_create1(EPOLL_CLOEXEC), n;

		ck_assert_int_ge(ep, 0);
		ck_assert_int_eq(epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev), 0);
		n = epoll_wait(ep, &out, 1, timeout_ms);
		close(ep);
		return n == 1;
	}
	{
		struct timeval tv = { .tv_sec = timeout_ms / 1000, .tv_usec = timeout_ms % 1000 * 1000 };
		fd_set set;

		FD_ZERO(&set);
		FD_SET(fd, &set);
		return select(fd + 1, &set, NULL, NULL, &tv) == 1;
	}
}

static void emit_n(struct evs_producer *p, unsigned int core, int n)
{
	for (int i = 0; i < n; i++)
		ck_assert_int_eq(evs_producer__emit(p, core, 1, &i, sizeof(i)), 0);
}

/* Read with the reference API until it says something else than success;
 * returns that status and counts the events. */
static NRT_STATUS nrt_drain(int fd, int *n)
{
	ndebug_stream_event_header_t h;
	void *payload;
	NRT_STATUS s;

	while ((s = nrt_debug_client_read_one_event(fd, &h, &payload)) == NRT_SUCCESS) {
		free(payload);
		(*n)++;
	}
	return s;
}

/* ------------------------------------------------ pending at connect */

/* Client A connects, events are committed, A closes without reading;
 * client B inherits them: its fresh stream_fd is readable at once, reads
 * deliver them, and then it is not readable any more. */
START_TEST(test_readiness_new_client_sees_pending_events)
{
	EVS_OPTS(evs_producer_opts, o, .ring_bytes = 1 << 20, .hugepages = EVS_HUGEPAGES_OFF);
	struct evs_producer *p = evs_producer__new(NULL, 1, &o);
	int a, b, n = 0;

	ck_assert_msg(p, "%s", evs_errmsg());
	ck_assert_int_eq(nrt_debug_client_connect(0, &a), NRT_SUCCESS);
	emit_n(p, 0, 3);
	nrt_debug_client_connect_close(a);
	ck_assert_int_eq(nrt_debug_client_connect(0, &b), NRT_SUCCESS);
	ck_assert_msg(readable(b, 2000), "pending events, and the new stream_fd is not readable");
	ck_assert_int_eq(nrt_drain(b, &n), NRT_QUEUE_EMPTY);
	ck_assert_int_eq(n, 3);
	ck_assert(!readable(b, 0));
	emit_n(p, 0, 1);
	ck_assert(readable(b, 2000));
	nrt_debug_client_connect_close(b);
	evs_producer__free(p);
}
END_TEST

/* The same with the native API: a consumer that waits on
 * evs_consumer__fd() before it reads anything. */
START_TEST(test_readiness_native_consumer_sees_pending_records)
{
	EVS_OPTS(evs_producer_opts, o, .ring_bytes = 1 << 20, .hugepages = EVS_HUGEPAGES_OFF);
	struct evs_producer *p = evs_producer__new(NULL, 1, &o);
	struct evs_consumer *c;
	struct evs_record rec;

	ck_assert_msg(p, "%s", evs_errmsg());
	c = evs_consumer__connect(NULL, 0, NULL);
	ck_assert_ptr_nonnull(c);
	emit_n(p, 0, 2);
	evs_consumer__free(c);
	c = evs_consumer__connect(NULL, 0, NULL);
	ck_assert_ptr_nonnull(c);
	ck_assert(readable(evs_consumer__fd(c), 2000));
	ck_assert_int_eq(evs_consumer__peek(c, &rec), 0);
	evs_consumer__free(c);
	evs_producer__free(p);
}
END_TEST

/* Pipes between a test and its forked producer: "r" when ready. */
static int ready_pipe[2] = { -1, -1 }, go_pipe[2] = { -1, -1 };
static pid_t spawned; /* the forked producer until it is reaped */

static void child_ready(void)
{
	if (write(ready_pipe[1], "r", 1) != 1)
		_exit(90);
}

static void wait_child_ready(void)
{
	char ch;

	ck_assert_int_eq(read(ready_pipe[0], &ch, 1), 1);
}

static void wait_go(void)
{
	char ch;

	if (read(go_pipe[0], &ch, 1) != 1)
		_exit(91);
}

static void go(void)
{
	ck_assert_int_eq(write(go_pipe[1], "g", 1), 1);
}

/* A producer process: waits for a consumer, emits `events`, says ready,
 * then waits until told (or killed). */
static pid_t spawn_producer(const char *name, int events)
{
	pid_t pid;

	ck_assert_int_eq(pipe(ready_pipe), 0);
	ck_assert_int_eq(pipe(go_pipe), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct evs_producer *p = evs_producer__new(name, 1, NULL);

		alarm(30);
		if (!p)
			_exit(92);
		child_ready();
		if (!evs_wait_connected(p, 0, 1, 10000))
			_exit(93);
		for (int i = 0; i < events; i++)
			if (evs_producer__emit(p, 0, 1, &i, sizeof(i)))
				_exit(94);
		child_ready();
		wait_go();
		evs_producer__free(p);
		_exit(0);
	}
	spawned = pid;
	wait_child_ready();
	return pid;
}

static void close_pipes(void)
{
	for (int i = 0; i < 2; i++) {
		if (ready_pipe[i] >= 0)
			close(ready_pipe[i]);
		if (go_pipe[i] >= 0)
			close(go_pipe[i]);
		ready_pipe[i] = go_pipe[i] = -1;
	}
}

/* Teardown: the producer of a test that failed before reaping it, and
 * the name it left in the environment. */
static void spawned_release(void)
{
	if (spawned > 0) {
		kill(spawned, SIGKILL);
		waitpid(spawned, NULL, 0);
		spawned = 0;
	}
	close_pipes();
	unsetenv("EVSTREAM_PRODUCER");
}

static void reap(pid_t pid, bool killed)
{
	int status;

	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	spawned = 0;
	close_pipes();
	if (killed)
		ck_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	else
		ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %d", status);
}

/* Across processes: A (this process) leaves events unread; B sees them. */
START_TEST(test_readiness_new_client_sees_pending_events_of_another_process)
{
	const char *name = evs_test_name("pend");
	pid_t pid = spawn_producer(name, 4);
	int a, b, n = 0;

	setenv("EVSTREAM_PRODUCER", name, 1);
	ck_assert_int_eq(nrt_debug_client_connect(0, &a), NRT_SUCCESS);
	wait_child_ready();
	nrt_debug_client_connect_close(a);
	ck_assert_int_eq(nrt_debug_client_connect(0, &b), NRT_SUCCESS);
	ck_assert_msg(readable(b, 2000), "4 events pending, and the new stream_fd is not readable");
	ck_assert_int_eq(nrt_drain(b, &n), NRT_QUEUE_EMPTY);
	ck_assert_int_eq(n, 4);
	ck_assert(!readable(b, 0));
	go();
	ck_assert(readable(b, 5000));
	ck_assert_int_eq(nrt_drain(b, &n), NRT_CLOSED);
	nrt_debug_client_connect_close(b);
	unsetenv("EVSTREAM_PRODUCER");
	reap(pid, false);
}
END_TEST

/* A client process dies with events unread (SIGKILL); the next client
 * inherits them, readable at once. */
START_TEST(test_readiness_client_killed_leaves_events_to_the_next)
{
	const char *name = evs_test_name("killa");
	pid_t prod = spawn_producer(name, 5), a;
	int b, n = 0, status;

	setenv("EVSTREAM_PRODUCER", name, 1);
	a = fork();
	ck_assert_int_ge(a, 0);
	if (a == 0) {
		int fd;

		if (nrt_debug_client_connect(0, &fd) != NRT_SUCCESS)
			_exit(1);
		pause();
		_exit(0);
	}
	wait_child_ready(); /* the producer emitted its 5 into A's stream */
	kill(a, SIGKILL);
	ck_assert_int_eq(waitpid(a, &status, 0), a);
	/* the producer's server sees A's hang-up and frees the stream */
	for (int tries = 0; tries < 500; tries++) {
		if (nrt_debug_client_connect(0, &b) == NRT_SUCCESS)
			break;
		b = -1;
		usleep(10000);
	}
	ck_assert_int_ge(b, 0);
	ck_assert(readable(b, 2000));
	ck_assert_int_eq(nrt_drain(b, &n), NRT_QUEUE_EMPTY);
	ck_assert_int_eq(n, 5);
	nrt_debug_client_connect_close(b);
	unsetenv("EVSTREAM_PRODUCER");
	go();
	reap(prod, false);
}
END_TEST

/* ------------------------------------------------ producer death */

/* A client waiting on stream_fd alone (poll, epoll, select) when the
 * producer process is SIGKILLed: woken, it drains what was committed and
 * gets NRT_CLOSED. */
START_TEST(test_readiness_producer_death_wakes_the_poller)
{
	const char *name = evs_test_name("death");
	pid_t pid = spawn_producer(name, 0);
	int fd, n = 0;

	printf("waiting by %s\n", waiter_name(_i));
	setenv("EVSTREAM_PRODUCER", name, 1);
	ck_assert_int_eq(nrt_debug_client_connect(0, &fd), NRT_SUCCESS);
	wait_child_ready();
	ck_assert_int_eq(nrt_drain(fd, &n), NRT_QUEUE_EMPTY);
	ck_assert(!readable_by(_i, fd, 0));
	kill(pid, SIGKILL);
	ck_assert_msg(readable_by(_i, fd, 5000), "the producer died and %s did not wake",
		      waiter_name(_i));
	ck_assert_int_eq(nrt_drain(fd, &n), NRT_CLOSED);
	ck_assert_int_eq(n, 0);
	nrt_debug_client_connect_close(fd);
	unsetenv("EVSTREAM_PRODUCER");
	reap(pid, true);
}
END_TEST

/* A native consumer that read everything and declared it sleeps
 * (prepare_wait) on evs_consumer__fd() alone: the producer's death wakes
 * it, and then it learns the end (-EPIPE). */
START_TEST(test_readiness_producer_death_wakes_a_native_waiter)
{
	const char *name = evs_test_name("ndeath");
	pid_t pid = spawn_producer(name, 3);
	struct evs_consumer *c = NULL;
	struct evs_record rec;
	int n = 0;

	for (int tries = 0; tries < 500 && !c; tries++)
		if (!(c = evs_consumer__connect(name, 0, NULL)))
			usleep(10000);
	ck_assert_ptr_nonnull(c);
	wait_child_ready();
	while (evs_consumer__peek(c, &rec) == 0) {
		n++;
		evs_consumer__release(c);
	}
	ck_assert_int_eq(n, 3);
	ck_assert_int_eq(evs_consumer__prepare_wait(c), 0);
	ck_assert(!readable_by(_i, evs_consumer__fd(c), 0));
	kill(pid, SIGKILL);
	ck_assert_msg(readable_by(_i, evs_consumer__fd(c), 5000), "the producer died and %s on "
		      "evs_consumer__fd() did not wake", waiter_name(_i));
	ck_assert_int_eq(evs_consumer__prepare_wait(c), -EPIPE);
	ck_assert_int_eq(evs_consumer__peek(c, &rec), -EPIPE);
	evs_consumer__free(c);
	reap(pid, true);
}
END_TEST

/* The other direction: a client process SIGKILLed while it polls; the
 * producer frees its stream and a new client connects. */
START_TEST(test_readiness_client_death_frees_the_stream)
{
	const char *name = evs_test_name("cdeath");
	struct evs_producer *p = evs_producer__new(name, 1, NULL);
	int fd, status;
	pid_t a;

	ck_assert_msg(p, "%s", evs_errmsg());
	setenv("EVSTREAM_PRODUCER", name, 1);
	a = fork();
	ck_assert_int_ge(a, 0);
	if (a == 0) {
		struct pollfd pfd;

		if (nrt_debug_client_connect(0, &fd) != NRT_SUCCESS)
			_exit(1);
		pfd = (struct pollfd){ .fd = fd, .events = POLLIN };
		poll(&pfd, 1, -1);
		_exit(2);
	}
	ck_assert(evs_wait_connected(p, 0, 1, 5000));
	kill(a, SIGKILL);
	ck_assert_int_eq(waitpid(a, &status, 0), a);
	ck_assert(evs_wait_connected(p, 0, 0, 5000));
	ck_assert_int_eq(evs_producer__emit(p, 0, 1, "x", 1), -ENOTCONN);
	ck_assert_int_eq(nrt_debug_client_connect(0, &fd), NRT_SUCCESS);
	nrt_debug_client_connect_close(fd);
	unsetenv("EVSTREAM_PRODUCER");
	evs_producer__free(p);
}
END_TEST

/* ------------------------------------------------ exact readiness */

/* After the last event is read with NRT_SUCCESS, stream_fd is not
 * readable: no wake for nothing. */
START_TEST(test_readiness_exact_after_the_last_read)
{
	EVS_OPTS(evs_producer_opts, o, .ring_bytes = 1 << 20, .hugepages = EVS_HUGEPAGES_OFF);
	struct evs_producer *p = evs_producer__new(NULL, 1, &o);
	ndebug_stream_event_header_t h;
	void *payload;
	int fd;

	ck_assert_msg(p, "%s", evs_errmsg());
	ck_assert_int_eq(nrt_debug_client_connect(0, &fd), NRT_SUCCESS);
	for (int round = 0; round < 3; round++) {
		emit_n(p, 0, 2);
		ck_assert(readable(fd, 2000));
		for (int i = 0; i < 2; i++) {
			ck_assert_int_eq(nrt_debug_client_read_one_event(fd, &h, &payload), NRT_SUCCESS);
			free(payload);
		}
		ck_assert_msg(!readable(fd, 0), "round %d: readable after the last event was read", round);
	}
	nrt_debug_client_connect_close(fd);
	evs_producer__free(p);
}
END_TEST

struct late_kick {
	int efd;
	useconds_t after_us;
};

static void *kick_late(void *arg)
{
	struct late_kick *k = arg;

	usleep(k->after_us);
	eventfd_write(k->efd, 1);
	return NULL;
}

/* The producer took the consumer's wait word at a commit, and the consumer
 * read that record and emptied the ring before the producer's eventfd
 * write landed: the fd must not be left readable for nothing. The
 * producer's commit is split by hand: the word taken, the record
 * committed (no kick: the word is not ARMED), the write 300 us later. */
START_TEST(test_readiness_exact_when_the_kick_lands_after_the_read)
{
	EVS_OPTS(evs_producer_opts, o, .ring_bytes = 1 << 20, .hugepages = EVS_HUGEPAGES_OFF);
	struct evs_producer *p = evs_producer__new(NULL, 1, &o);
	struct late_kick k = { .after_us = 300 };
	struct evs_consumer *c;
	struct evs_record rec;
	pthread_t t;

	ck_assert_msg(p, "%s", evs_errmsg());
	c = evs_consumer__connect(NULL, 0, NULL);
	ck_assert_ptr_nonnull(c);
	/* in process, the stream fd is the eventfd itself */
	k.efd = evs_consumer__fd(c);
	/* the kick lands 300 us late by the clock, but a loaded machine (or
	 * valgrind) may run the kicking thread much later: the test waits
	 * for the kick however late, so that only the mechanism is tested */
	c->kick_landing_ms = 60000;
	for (int round = 0; round < 3; round++) {
		ck_assert_int_eq(evs_consumer__prepare_wait(c), 0);
		ck_assert_uint_eq(xchg(&p->streams[0].cons->wait, EVS_WAIT_AWAKE), EVS_WAIT_ARMED);
		emit_n(p, 0, 1);
		ck_assert_int_eq(pthread_create(&t, NULL, kick_late, &k), 0);
		ck_assert_int_eq(evs_consumer__peek(c, &rec), 0);
		ck_assert_int_eq(evs_consumer__release(c), 0);
		ck_assert_int_eq(evs_consumer__prepare_wait(c), 0);
		pthread_join(t, NULL);
		ck_assert_msg(!readable(k.efd, 50), "round %d: readable with nothing to read", round);
	}
	/* and the next commit still wakes it */
	emit_n(p, 0, 1);
	ck_assert(readable(k.efd, 2000));
	evs_consumer__free(c);
	evs_producer__free(p);
}
END_TEST

/* ------------------------------------------------ stale wakeups */

static double thread_cpu_ms(void)
{
	struct rusage ru;

	getrusage(RUSAGE_THREAD, &ru);
	return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
	       (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
}

static double now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* A count in the eventfd that no arm of this consumer asked for (a late
 * write by a producer that took the previous consumer's arm, preempted
 * before its write): wait() sleeps out its timeout instead of spinning,
 * and the stale readiness does not persist. */
START_TEST(test_wakeup_stale_count_does_not_make_wait_spin)
{
	EVS_OPTS(evs_producer_opts, o, .ring_bytes = 1 << 20, .hugepages = EVS_HUGEPAGES_OFF);
	struct evs_producer *p = evs_producer__new(NULL, 1, &o);
	struct evs_consumer *c;
	double t0, cpu0;
	int err;

	ck_assert_msg(p, "%s", evs_errmsg());
	c = evs_consumer__connect(NULL, 0, NULL);
	ck_assert_ptr_nonnull(c);
	ck_assert_int_eq(evs_consumer__prepare_wait(c), 0);
	/* in process, the stream fd is the eventfd itself */
	ck_assert_int_eq(eventfd_write(evs_consumer__fd(c), 1), 0);
	t0 = now_ms();
	cpu0 = thread_cpu_ms();
	err = evs_consumer__wait(c, 300);
	printf("wait: %d after %.0f ms, %.1f ms of CPU\n", err, now_ms() - t0, thread_cpu_ms() - cpu0);
	ck_assert_int_eq(err, -ETIMEDOUT);
	ck_assert_double_ge(now_ms() - t0, 299);
	ck_assert_double_lt(thread_cpu_ms() - cpu0, 150);
	ck_assert(!readable(evs_consumer__fd(c), 0));
	/* and a real commit still wakes it */
	emit_n(p, 0, 1);
	ck_assert_int_eq(evs_consumer__wait(c, 5000), 0);
	evs_consumer__free(c);
	evs_producer__free(p);
}
END_TEST

/* The same through the reference API: one wake for nothing at most, then
 * the fd is quiet again. */
START_TEST(test_wakeup_stale_count_is_one_wake_at_most)
{
	EVS_OPTS(evs_producer_opts, o, .ring_bytes = 1 << 20, .hugepages = EVS_HUGEPAGES_OFF);
	struct evs_producer *p = evs_producer__new(NULL, 1, &o);
	int fd, n = 0;

	ck_assert_msg(p, "%s", evs_errmsg());
	ck_assert_int_eq(nrt_debug_client_connect(0, &fd), NRT_SUCCESS);
	ck_assert_int_eq(nrt_drain(fd, &n), NRT_QUEUE_EMPTY);
	ck_assert_int_eq(eventfd_write(fd, 1), 0);
	ck_assert(readable(fd, 0));
	ck_assert_int_eq(nrt_drain(fd, &n), NRT_QUEUE_EMPTY);
	ck_assert_msg(!readable(fd, 0), "readiness for nothing persists");
	nrt_debug_client_connect_close(fd);
	evs_producer__free(p);
}
END_TEST

struct reconnect {
	struct evs_producer *p;
	_Atomic int stop;
	_Atomic uint64_t emitted;
};

/* Bursts with pauses: the consumer arms and is woken all the time. */
static void *bursts(void *arg)
{
	struct reconnect *r = arg;
	unsigned int seed = 7;

	while (!r->stop) {
		int n = (int)(rand_r(&seed) % 8);

		for (int i = 0; i < n; i++)
			if (evs_producer__emit(r->p, 0, 1, &i, sizeof(i)) == 0)
				r->emitted++;
		usleep(rand_r(&seed) % 300);
	}
	return NULL;
}

/* Consumers come and go while a producer thread emits bursts: every wait
 * returns within its timeout (plus scheduling), a wait that says records
 * are pending finds one at most one time in a row short, and readiness
 * with an empty ring never persists. RECONNECTS cycles of 4 waits each,
 * however long they take; what went wrong is asserted once the producer
 * thread has been joined. */
#define RECONNECTS 200
START_TEST(test_wakeup_reconnect_cycles_leave_no_stale_readiness)
{
	EVS_OPTS(evs_producer_opts, o, .ring_bytes = 1 << 20, .hugepages = EVS_HUGEPAGES_OFF);
	struct reconnect r = { .p = evs_producer__new(NULL, 1, &o) };
	uint64_t cycles, waits = 0, empty_wakes = 0;
	int bad_err = 0, bad_connect = 0, most_empty_in_a_row = 0;
	double worst = 0;
	pthread_t t;

	ck_assert_msg(r.p, "%s", evs_errmsg());
	ck_assert_int_eq(pthread_create(&t, NULL, bursts, &r), 0);
	for (cycles = 0; cycles < RECONNECTS && !bad_connect && !bad_err; cycles++) {
		struct evs_consumer *c = evs_consumer__connect(NULL, 0, NULL);
		int empty_in_a_row = 0;

		if (!c) {
			bad_connect = errno ? errno : -1;
			break;
		}
		for (int k = 0; k < 4; k++) {
			struct evs_record rec;
			double t0;
			int err;

			while (evs_consumer__peek(c, &rec) == 0)
				evs_consumer__release(c);
			t0 = now_ms();
			err = evs_consumer__wait(c, 2);
			worst = now_ms() - t0 > worst ? now_ms() - t0 : worst;
			waits++;
			if (err != 0 && err != -ETIMEDOUT)
				bad_err = err;
			if (err == 0 && evs_consumer__peek(c, &rec) == -EAGAIN) {
				empty_wakes++;
				if (++empty_in_a_row > most_empty_in_a_row)
					most_empty_in_a_row = empty_in_a_row;
			} else {
				empty_in_a_row = 0;
			}
		}
		evs_consumer__free(c);
	}
	r.stop = 1;
	pthread_join(t, NULL);
	printf("%llu reconnects, %llu waits (longest %.1f ms), %llu wakes for an empty ring, "
	       "%llu events\n", (unsigned long long)cycles, (unsigned long long)waits, worst,
	       (unsigned long long)empty_wakes, (unsigned long long)r.emitted);
	ck_assert_msg(!bad_connect, "reconnect %llu: %s", (unsigned long long)cycles, evs_errmsg());
	ck_assert_msg(!bad_err, "wait: %d", bad_err);
	ck_assert_int_le(most_empty_in_a_row, 1);
	ck_assert_uint_eq(cycles, RECONNECTS);
	ck_assert_double_lt(worst, 1000);
	evs_producer__free(r.p);
}
END_TEST

/* publish() with nothing new to show takes no armed word and wakes no
 * sleeping consumer. */
START_TEST(test_wakeup_empty_publish_wakes_nobody)
{
	EVS_OPTS(evs_producer_opts, o, .ring_bytes = 1 << 20, .hugepages = EVS_HUGEPAGES_OFF);
	struct evs_producer *p = evs_producer__new(NULL, 1, &o);
	struct evs_stream_stats st = { .sz = sizeof(st) };
	struct evs_consumer *c;

	ck_assert_msg(p, "%s", evs_errmsg());
	c = evs_consumer__connect(NULL, 0, NULL);
	ck_assert_ptr_nonnull(c);
	ck_assert_int_eq(evs_consumer__prepare_wait(c), 0);
	ck_assert_int_eq(evs_producer__publish(p, 0), 0);
	ck_assert(!readable(evs_consumer__fd(c), 0));
	ck_assert_int_eq(evs_producer__stats(p, 0, &st), 0);
	ck_assert_uint_eq(st.wakeups, 0);
	/* a deferred record is something new: published, it wakes */
	ck_assert_ptr_nonnull(evs_producer__reserve(p, 0, 1, 8));
	ck_assert_int_eq(evs_producer__commit_deferred(p, 0), 0);
	ck_assert(!readable(evs_consumer__fd(c), 0));
	ck_assert_int_eq(evs_producer__publish(p, 0), 0);
	ck_assert(readable(evs_consumer__fd(c), 2000));
	evs_consumer__free(c);
	evs_producer__free(p);
}
END_TEST

/* ------------------------------------------------ environment, fds */

/* EVSTREAM_MEMBARRIER: auto and off (any case) are taken; anything else is
 * refused by name, by producers and consumers alike. */
START_TEST(test_membarrier_env_refuses_what_it_does_not_document)
{
	static const char *const bad[] = { "0", "no", "bogus", "" };
	struct evs_producer *p;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		setenv("EVSTREAM_MEMBARRIER", bad[i], 1);
		p = evs_producer__new(NULL, 1, NULL);
		ck_assert_msg(!p && errno == EINVAL, "'%s' was taken", bad[i]);
		ck_assert_msg(strstr(evs_errmsg(), "EVSTREAM_MEMBARRIER") &&
			      strstr(evs_errmsg(), "auto or off"), "%s", evs_errmsg());
	}
	unsetenv("EVSTREAM_MEMBARRIER");
	p = evs_producer__new(NULL, 1, NULL);
	ck_assert_ptr_nonnull(p);
	setenv("EVSTREAM_MEMBARRIER", "sometimes", 1);
	ck_assert_ptr_null(evs_consumer__connect(NULL, 0, NULL));
	ck_assert_msg(strstr(evs_errmsg(), "EVSTREAM_MEMBARRIER='sometimes'"), "%s", evs_errmsg());
	setenv("EVSTREAM_MEMBARRIER", "OFF", 1);
	{
		struct evs_consumer *c = evs_consumer__connect(NULL, 0, NULL);

		ck_assert_msg(c, "%s", evs_errmsg());
		evs_consumer__free(c);
	}
	unsetenv("EVSTREAM_MEMBARRIER");
	evs_producer__free(p);
}
END_TEST

/* Open fds of this process that an exec would keep, but for the test's
 * own (Check's pipes and log file, the terminal); each is printed. */
static int fds_without_cloexec(void)
{
	int bad = 0;

	for (int i = 3; i < 1024; i++) {
		int fl = fcntl(i, F_GETFD);
		char path[64], link[128] = "";

		if (fl < 0 || (fl & FD_CLOEXEC))
			continue;
		snprintf(path, sizeof(path), "/proc/self/fd/%d", i);
		if (readlink(path, link, sizeof(link) - 1) < 0)
			continue;
		/* not the library's: Check's pipes and log, the terminal, and the
		 * log file valgrind writes when the suite runs under it */
		if (strstr(link, "pipe:") || strstr(link, "/dev/") || strstr(link, "/tmp/check_") ||
		    (strlen(link) > 4 && !strcmp(link + strlen(link) - 4, ".log")))
			continue;
		printf("fd %d (%s) is not close-on-exec\n", i, link);
		bad++;
	}
	return bad;
}

/* Every fd the library makes or hands out is close-on-exec: a runtime
 * that execs a helper leaks none of them. */
START_TEST(test_every_library_fd_is_close_on_exec)
{
	const char *name = evs_test_name("cloexec");
	struct evs_producer *p, *named;
	struct evs_consumer *c, *remote;
	int fd, bad = 0;

	p = evs_producer__new(NULL, 2, NULL);
	named = evs_producer__new(name, 1, NULL);
	ck_assert_ptr_nonnull(p);
	ck_assert_ptr_nonnull(named);
	c = evs_consumer__connect(NULL, 1, NULL);
	ck_assert_ptr_nonnull(c);
	ck_assert_int_eq(nrt_debug_client_connect(0, &fd), NRT_SUCCESS);
	/* through the socket, as another process would */
	remote = NULL;
	{
		pid_t pid = fork();
		int status;

		ck_assert_int_ge(pid, 0);
		if (pid == 0) {
			remote = evs_consumer__connect(name, 0, NULL);
			if (!remote)
				_exit(2);
			status = fds_without_cloexec();
			fflush(stdout);
			_exit(status ? 3 : 0);
		}
		ck_assert_int_eq(waitpid(pid, &status, 0), pid);
		ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
			      "remote consumer: status %d", status);
	}
	bad = fds_without_cloexec();
	ck_assert_int_eq(bad, 0);
	ck_assert(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	ck_assert(fcntl(evs_consumer__fd(c), F_GETFD) & FD_CLOEXEC);
	nrt_debug_client_connect_close(fd);
	evs_consumer__free(c);
	evs_producer__free(named);
	evs_producer__free(p);
}
END_TEST

static Suite *readiness_suite(void)
{
	Suite *s = suite_create("readiness");
	TCase *tc = evs_tcase("readiness");

	tcase_add_checked_fixture(tc, NULL, spawned_release);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_readiness_new_client_sees_pending_events);
	tcase_add_test(tc, test_readiness_native_consumer_sees_pending_records);
	tcase_add_test(tc, test_readiness_new_client_sees_pending_events_of_another_process);
	tcase_add_test(tc, test_readiness_client_killed_leaves_events_to_the_next);
	tcase_add_loop_test(tc, test_readiness_producer_death_wakes_the_poller, BY_POLL, BY_SELECT + 1);
	tcase_add_loop_test(tc, test_readiness_producer_death_wakes_a_native_waiter, BY_POLL,
			    BY_SELECT + 1);
	tcase_add_test(tc, test_readiness_client_death_frees_the_stream);
	tcase_add_test(tc, test_readiness_exact_after_the_last_read);
	tcase_add_test(tc, test_readiness_exact_when_the_kick_lands_after_the_read);
	tcase_add_test(tc, test_wakeup_stale_count_does_not_make_wait_spin);
	tcase_add_test(tc, test_wakeup_stale_count_is_one_wake_at_most);
	tcase_add_test(tc, test_wakeup_reconnect_cycles_leave_no_stale_readiness);
	tcase_add_test(tc, test_wakeup_empty_publish_wakes_nobody);
	tcase_add_test(tc, test_membarrier_env_refuses_what_it_does_not_document);
	tcase_add_test(tc, test_every_library_fd_is_close_on_exec);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	evs_test_runtime_dir();
	return evs_run_suite(readiness_suite());
}

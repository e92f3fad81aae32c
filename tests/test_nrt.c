/* SPDX-License-Identifier: MIT */
/*
 * The reference debug-stream API, as documented: connect / poll / read one
 * event / close, its structs and its status codes.
 */
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/select.h>
#include <sys/wait.h>
#include <pthread.h>

#include "helpers.h"
#include "nrt/ndebug_stream.h"

START_TEST(test_nrt_abi_of_structs_and_status_values)
{
	ck_assert_uint_eq(sizeof(ndebug_stream_event_header_t), 64);
	ck_assert_uint_eq(offsetof(ndebug_stream_event_header_t, data_size), 0);
	ck_assert_uint_eq(offsetof(ndebug_stream_event_header_t, type), 8);
	ck_assert_uint_eq(offsetof(ndebug_stream_event_header_t, reserved), 12);
	ck_assert_uint_eq(offsetof(ndebug_stream_payload_debug_tensor_read_t, prefix), 0);
	ck_assert_uint_eq(offsetof(ndebug_stream_payload_debug_tensor_read_t, logical_nc_id), 512);
	ck_assert_uint_eq(offsetof(ndebug_stream_payload_debug_tensor_read_t, pipe), 516);
	ck_assert_uint_eq(offsetof(ndebug_stream_payload_debug_tensor_read_t, tensor_dtype), 520);
	ck_assert_uint_eq(offsetof(ndebug_stream_payload_debug_tensor_read_t, tensor_shape), 536);
	ck_assert_uint_eq(offsetof(ndebug_stream_payload_debug_tensor_read_t, tensor_data_size), 600);
	ck_assert_uint_eq(offsetof(ndebug_stream_payload_debug_tensor_read_t, reserved0), 608);
	ck_assert_uint_eq(offsetof(ndebug_stream_payload_debug_tensor_read_t, tensor_data), 1024);
	ck_assert_int_eq(NDEBUG_STREAM_EVENT_TYPE_INVALID, 0);
	ck_assert_int_eq(NDEBUG_STREAM_EVENT_TYPE_DEBUG_TENSOR_READ, 1);
	ck_assert_int_eq(NRT_SUCCESS, 0);
	ck_assert_int_eq(NRT_FAILURE, 1);
	ck_assert_int_eq(NRT_INVALID, 2);
	ck_assert_int_eq(NRT_INVALID_HANDLE, 3);
	ck_assert_int_eq(NRT_RESOURCE, 4);
	ck_assert_int_eq(NRT_TIMEOUT, 5);
	ck_assert_int_eq(NRT_QUEUE_FULL, 7);
	ck_assert_int_eq(NRT_UNINITIALIZED, 13);
	ck_assert_int_eq(NRT_CLOSED, 14);
	ck_assert_int_eq(NRT_QUEUE_EMPTY, 15);
}
END_TEST

static struct evs_producer *runtime(unsigned int ncores)
{
	struct evs_producer *p = evs_producer__new(NULL, ncores, NULL);

	ck_assert_msg(p, "%s", evs_errmsg());
	return p;
}

static void emit_tensor(struct evs_producer *p, unsigned int core, const char *prefix, int32_t v)
{
	uint64_t shape[1] = { 3 };
	int32_t data[3] = { v, v + 1, v + 2 };
	struct evs_tensor t = { .prefix = prefix, .pipe = 1, .dtype = "int32", .ndim = 1,
				.shape = shape, .data = data };

	ck_assert_int_eq(evs_producer__emit_tensor(p, core, &t), 0);
}

START_TEST(test_nrt_second_connect_is_invalid)
{
	struct evs_producer *p = runtime(2);
	int fd, fd2, fd3;

	ck_assert_int_eq(nrt_debug_client_connect(0, &fd), NRT_SUCCESS);
	ck_assert_int_eq(nrt_debug_client_connect(0, &fd2), NRT_INVALID);
	ck_assert_int_eq(nrt_debug_client_connect(1, &fd3), NRT_SUCCESS);
	nrt_debug_client_connect_close(fd);
	/* closed: the stream takes a client again */
	ck_assert_int_eq(nrt_debug_client_connect(0, &fd2), NRT_SUCCESS);
	nrt_debug_client_connect_close(fd2);
	nrt_debug_client_connect_close(fd3);
	evs_producer__free(p);
}
END_TEST

START_TEST(test_nrt_connect_bad_arguments)
{
	struct evs_producer *p;
	int fd;

	ck_assert_int_eq(nrt_debug_client_connect(0, &fd), NRT_UNINITIALIZED);
	p = runtime(2);
	ck_assert_int_eq(nrt_debug_client_connect(2, &fd), NRT_INVALID);
	evs_producer__free(p);
}
END_TEST

START_TEST(test_nrt_read_empty_and_bad_handle)
{
	struct evs_producer *p = runtime(1);
	ndebug_stream_event_header_t h;
	void *pl = NULL;
	int fd;

	ck_assert_int_eq(nrt_debug_client_connect(0, &fd), NRT_SUCCESS);
	ck_assert_int_eq(nrt_debug_client_read_one_event(fd, &h, &pl), NRT_QUEUE_EMPTY);
	ck_assert_ptr_null(pl);
	nrt_debug_client_connect_close(fd);
	ck_assert_int_eq(nrt_debug_client_read_one_event(fd, &h, &pl), NRT_INVALID_HANDLE);
	nrt_debug_client_connect_close(fd); /* twice: harmless */
	evs_producer__free(p);
}
END_TEST

START_TEST(test_nrt_nothing_delivered_from_before_connect)
{
	struct evs_producer *p = runtime(1);
	ndebug_stream_event_header_t h;
	void *pl;
	int fd;

	{
		uint64_t shape[1] = { 1 };
		int32_t v = 1;
		struct evs_tensor t = { .prefix = "before", .pipe = 1, .dtype = "int32",
					.ndim = 1, .shape = shape, .data = &v };

		/* dropped: no client yet */
		ck_assert_int_eq(evs_producer__emit_tensor(p, 0, &t), -ENOTCONN);
	}
	ck_assert_int_eq(nrt_debug_client_connect(0, &fd), NRT_SUCCESS);
	ck_assert_int_eq(nrt_debug_client_read_one_event(fd, &h, &pl), NRT_QUEUE_EMPTY);
	emit_tensor(p, 0, "after", 7);
	ck_assert_int_eq(nrt_debug_client_read_one_event(fd, &h, &pl), NRT_SUCCESS);
	ck_assert_uint_eq(h.type, NDEBUG_STREAM_EVENT_TYPE_DEBUG_TENSOR_READ);
	ck_assert_uint_eq(h.data_size, 1024 + 12);
	{
		ndebug_stream_payload_debug_tensor_read_t *t = pl;
		int32_t v[3];

		ck_assert_str_eq(t->prefix, "after");
		ck_assert_str_eq(t->tensor_dtype, "int32");
		ck_assert_uint_eq(t->tensor_shape[0], 3);
		ck_assert_uint_eq(t->tensor_data_size, 12);
		ck_assert_uint_eq(t->logical_nc_id, 0);
		memcpy(v, t->tensor_data, 12);
		ck_assert_int_eq(v[0], 7);
		ck_assert_int_eq(v[2], 9);
	}
	free(pl);
	ck_assert_int_eq(nrt_debug_client_read_one_event(fd, &h, &pl), NRT_QUEUE_EMPTY);
	nrt_debug_client_connect_close(fd);
	evs_producer__free(p);
}
END_TEST

/* The payload is the caller's: it survives the ring being reused and the
 * stream being closed (valgrind checks it is freed exactly once here). */
START_TEST(test_nrt_payload_owned_by_caller)
{
	EVS_OPTS(evs_producer_opts, o, .ring_bytes = 4096, .hugepages = EVS_HUGEPAGES_OFF);
	struct evs_producer *p = evs_producer__new(NULL, 1, &o);
	ndebug_stream_event_header_t h;
	void *keep[40];
	int fd;

	ck_assert_ptr_nonnull(p);
	ck_assert_int_eq(nrt_debug_client_connect(0, &fd), NRT_SUCCESS);
	for (int i = 0; i < 40; i++) {
		char msg[200];

		memset(msg, 'a' + i % 26, sizeof(msg));
		ck_assert_int_eq(evs_producer__emit(p, 0, 1, msg, sizeof(msg)), 0);
		ck_assert_int_eq(nrt_debug_client_read_one_event(fd, &h, &keep[i]), NRT_SUCCESS);
		ck_assert_uint_eq(h.data_size, sizeof(msg));
	}
	nrt_debug_client_connect_close(fd);
	evs_producer__free(p);
	/* 40 x 264-byte records went around a 4 KiB ring: copies are intact */
	for (int i = 0; i < 40; i++) {
		for (int j = 0; j < 200; j++)
			ck_assert_int_eq(((char *)keep[i])[j], 'a' + i % 26);
		free(keep[i]);
	}
}
END_TEST

START_TEST(test_nrt_zero_byte_event_gives_freeable_payload)
{
	struct evs_producer *p = runtime(1);
	ndebug_stream_event_header_t h;
	void *pl = NULL;
	int fd;

	ck_assert_int_eq(nrt_debug_client_connect(0, &fd), NRT_SUCCESS);
	ck_assert_int_eq(evs_producer__emit(p, 0, 1, NULL, 0), 0);
	ck_assert_int_eq(nrt_debug_client_read_one_event(fd, &h, &pl), NRT_SUCCESS);
	ck_assert_uint_eq(h.data_size, 0);
	ck_assert_ptr_nonnull(pl);
	free(pl);
	nrt_debug_client_connect_close(fd);
	evs_producer__free(p);
}
END_TEST

/* Readiness through epoll, poll and select: not readable while empty,
 * readable after an event, and again not readable after the queue-empty
 * read. _i: 0 epoll, 1 poll, 2 select. */
static int readable(int how, int fd, int timeout_ms)
{
	if (how == 0) {
		int ep = epoll_create1(0), n;
		struct epoll_event ev = { .events = EPOLLIN }, out;

		epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
		n = epoll_wait(ep, &out, 1, timeout_ms);
		close(ep);
		return n;
	}
	if (how == 1) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };

		return poll(&pfd, 1, timeout_ms);
	}
	{
		fd_set r;
		struct timeval tv = { .tv_sec = timeout_ms / 1000, .tv_usec = (timeout_ms % 1000) * 1000 };

		FD_ZERO(&r);
		FD_SET(fd, &r);
		return select(fd + 1, &r, NULL, NULL, &tv);
	}
}

START_TEST(test_nrt_fd_readiness)
{
	static const char *how[] = { "epoll", "poll", "select" };
	struct evs_producer *p = runtime(1);
	ndebug_stream_event_header_t h;
	void *pl;
	int fd;

	ck_assert_int_eq(nrt_debug_client_connect(0, &fd), NRT_SUCCESS);
	ck_assert_msg(readable(_i, fd, 0) == 0, "%s: readable while empty", how[_i]);
	/* a client may poll before its first read: still woken */
	emit_tensor(p, 0, "x", 1);
	ck_assert_msg(readable(_i, fd, 1000) == 1, "%s: not readable with an event", how[_i]);
	emit_tensor(p, 0, "y", 2);
	ck_assert_int_eq(nrt_debug_client_read_one_event(fd, &h, &pl), NRT_SUCCESS);
	free(pl);
	/* one event read, one pending: still readable */
	ck_assert_msg(readable(_i, fd, 0) == 1, "%s: not readable with one pending", how[_i]);
	ck_assert_int_eq(nrt_debug_client_read_one_event(fd, &h, &pl), NRT_SUCCESS);
	free(pl);
	ck_assert_int_eq(nrt_debug_client_read_one_event(fd, &h, &pl), NRT_QUEUE_EMPTY);
	ck_assert_msg(readable(_i, fd, 0) == 0, "%s: readable after queue empty", how[_i]);
	emit_tensor(p, 0, "z", 3);
	ck_assert_msg(readable(_i, fd, 1000) == 1, "%s: not woken for a new event", how[_i]);
	nrt_debug_client_connect_close(fd);
	evs_producer__free(p);
}
END_TEST

/* A payload that cannot be allocated: NRT_RESOURCE, and the event stays
 * in the ring, the fd readable, until a read can take it whole. */
START_TEST(test_nrt_payload_that_cannot_be_allocated_stays_in_the_ring)
{
	EVS_OPTS(evs_producer_opts, o, .ring_bytes = 64u << 20, .hugepages = EVS_HUGEPAGES_OFF);
	const size_t big = 32u << 20;
	ndebug_stream_event_header_t h;
	struct rlimit old, low;
	struct evs_producer *p;
	uint8_t *d;
	void *pl = NULL;
	long vm_kb;
	int fd;

#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
	printf("SKIP test_nrt_payload_that_cannot_be_allocated_stays_in_the_ring: "
	       "a sanitizer's allocator aborts where malloc would fail\n");
	return;
#endif
	p = evs_producer__new(NULL, 1, &o);
	ck_assert_msg(p, "producer: %s", evs_errmsg());
	ck_assert_int_eq(nrt_debug_client_connect(0, &fd), NRT_SUCCESS);
	d = evs_producer__reserve(p, 0, 1, big);
	ck_assert_ptr_nonnull(d);
	for (size_t i = 0; i < big; i += 4096)
		d[i] = (uint8_t)(i >> 12);
	ck_assert_int_eq(evs_producer__commit(p, 0), 0);
	/* room for what the process has mapped and 8 MiB more: no 32 MiB copy */
	vm_kb = evs_proc_number("/proc/self/status", "VmSize:");
	ck_assert_int_gt(vm_kb, 0);
	ck_assert_int_eq(getrlimit(RLIMIT_AS, &old), 0);
	low = old;
	low.rlim_cur = (rlim_t)vm_kb * 1024 + (8u << 20);
	ck_assert_int_eq(setrlimit(RLIMIT_AS, &low), 0);
	for (int i = 0; i < 2; i++)
		ck_assert_int_eq(nrt_debug_client_read_one_event(fd, &h, &pl), NRT_RESOURCE);
	ck_assert_int_eq(setrlimit(RLIMIT_AS, &old), 0);
	ck_assert_int_eq(readable(1, fd, 0), 1);
	ck_assert_int_eq(nrt_debug_client_read_one_event(fd, &h, &pl), NRT_SUCCESS);
	ck_assert_uint_eq(h.data_size, big);
	ck_assert_uint_eq(h.type, 1);
	for (size_t i = 0; i < big; i += 4096)
		ck_assert_uint_eq(((uint8_t *)pl)[i], (uint8_t)(i >> 12));
	free(pl);
	ck_assert_int_eq(nrt_debug_client_read_one_event(fd, &h, &pl), NRT_QUEUE_EMPTY);
	nrt_debug_client_connect_close(fd);
	evs_producer__free(p);
}
END_TEST

/* A thread blocked in poll() is woken by an event from another thread. */
struct waker {
	struct evs_producer *p;
	int delay_us;
};

static void *emit_later(void *arg)
{
	struct waker *w = arg;

	usleep((useconds_t)w->delay_us);
	emit_tensor(w->p, 0, "late", 5);
	return NULL;
}

START_TEST(test_nrt_blocked_poll_is_woken)
{
	struct waker w = { .p = runtime(1) };
	ndebug_stream_event_header_t h;
	struct pollfd pfd;
	pthread_t t;
	void *pl;
	int fd;

	ck_assert_int_eq(nrt_debug_client_connect(0, &fd), NRT_SUCCESS);
	for (int round = 0; round < 50; round++) {
		w.delay_us = round % 5 * 200;
		ck_assert_int_eq(nrt_debug_client_read_one_event(fd, &h, &pl), NRT_QUEUE_EMPTY);
		pthread_create(&t, NULL, emit_later, &w);
		pfd = (struct pollfd){ .fd = fd, .events = POLLIN };
		ck_assert_int_eq(poll(&pfd, 1, 5000), 1);
		ck_assert_int_eq(nrt_debug_client_read_one_event(fd, &h, &pl), NRT_SUCCESS);
		free(pl);
		pthread_join(t, NULL);
	}
	nrt_debug_client_connect_close(fd);
	evs_producer__free(w.p);
}
END_TEST

/* Streams of different cores are used from different threads at once. */
struct reader {
	int fd;
	int got;
};

static void *read_stream(void *arg)
{
	struct reader *r = arg;
	ndebug_stream_event_header_t h;
	void *pl;

	while (r->got < 1000) {
		NRT_STATUS s = nrt_debug_client_read_one_event(r->fd, &h, &pl);

		if (s == NRT_SUCCESS) {
			r->got++;
			free(pl);
		} else if (s == NRT_QUEUE_EMPTY) {
			struct pollfd pfd = { .fd = r->fd, .events = POLLIN };

			if (poll(&pfd, 1, 5000) != 1)
				return NULL;
		} else {
			return NULL;
		}
	}
	return NULL;
}

START_TEST(test_nrt_different_streams_from_different_threads)
{
	struct evs_producer *p = runtime(2);
	struct reader r[2];
	pthread_t t[2];

	for (int i = 0; i < 2; i++) {
		r[i].got = 0;
		ck_assert_int_eq(nrt_debug_client_connect(i, &r[i].fd), NRT_SUCCESS);
		pthread_create(&t[i], NULL, read_stream, &r[i]);
	}
	for (int n = 0; n < 1000; n++)
		for (int i = 0; i < 2; i++) {
			while (evs_producer__emit(p, (unsigned)i, 1, &n, sizeof(n)) == -ENOBUFS)
				usleep(10);
		}
	for (int i = 0; i < 2; i++) {
		pthread_join(t[i], NULL);
		ck_assert_int_eq(r[i].got, 1000);
		nrt_debug_client_connect_close(r[i].fd);
	}
	evs_producer__free(p);
}
END_TEST

/* With no producer in this process, EVSTREAM_PRODUCER names one in another. */
START_TEST(test_nrt_reaches_named_producer_in_other_process)
{
	const char *name = evs_test_name("nrt");
	int ready[2], done[2];
	ndebug_stream_event_header_t h;
	struct pollfd pfd;
	void *pl;
	pid_t pid;
	int fd, status;
	char ch;

	ck_assert_int_eq(pipe2(ready, O_CLOEXEC), 0);
	ck_assert_int_eq(pipe2(done, O_CLOEXEC), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct evs_producer *p = evs_producer__new(name, 1, NULL);

		close(ready[0]);
		close(done[1]);
		if (!p || write(ready[1], "r", 1) != 1 || !evs_wait_connected(p, 0, 1, 5000))
			_exit(1);
		emit_tensor(p, 0, "remote", 11);
		if (read(done[0], &ch, 1) != 1)
			_exit(2);
		evs_producer__free(p);
		_exit(0);
	}
	/* only the child's ends stay open there: its early death is EOF here */
	close(ready[1]);
	close(done[0]);
	ck_assert_int_eq(read(ready[0], &ch, 1), 1);
	setenv("EVSTREAM_PRODUCER", name, 1);
	ck_assert_int_eq(nrt_debug_client_connect(0, &fd), NRT_SUCCESS);
	pfd = (struct pollfd){ .fd = fd, .events = POLLIN };
	ck_assert_int_eq(poll(&pfd, 1, 5000), 1);
	ck_assert_int_eq(nrt_debug_client_read_one_event(fd, &h, &pl), NRT_SUCCESS);
	ck_assert_str_eq(((ndebug_stream_payload_debug_tensor_read_t *)pl)->prefix, "remote");
	free(pl);
	ck_assert_int_eq(write(done[1], "d", 1), 1);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_int_eq(WEXITSTATUS(status), 0);
	close(ready[0]);
	close(done[1]);
	/* drained and the producer is gone */
	for (int i = 0; i < 200; i++) {
		NRT_STATUS s = nrt_debug_client_read_one_event(fd, &h, &pl);

		if (s == NRT_CLOSED)
			break;
		ck_assert_int_eq(s, NRT_QUEUE_EMPTY);
		usleep(10000);
		ck_assert_int_lt(i, 199);
	}
	nrt_debug_client_connect_close(fd);
	unsetenv("EVSTREAM_PRODUCER");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("nrt");
	TCase *tc = evs_tcase("nrt");

	/* a child gone early is an error from write(), not the end of the suite */
	signal(SIGPIPE, SIG_IGN);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_nrt_abi_of_structs_and_status_values);
	tcase_add_test(tc, test_nrt_second_connect_is_invalid);
	tcase_add_test(tc, test_nrt_connect_bad_arguments);
	tcase_add_test(tc, test_nrt_read_empty_and_bad_handle);
	tcase_add_test(tc, test_nrt_nothing_delivered_from_before_connect);
	tcase_add_test(tc, test_nrt_payload_owned_by_caller);
	tcase_add_test(tc, test_nrt_zero_byte_event_gives_freeable_payload);
	tcase_add_loop_test(tc, test_nrt_fd_readiness, 0, 3);
	tcase_add_test(tc, test_nrt_payload_that_cannot_be_allocated_stays_in_the_ring);
	tcase_add_test(tc, test_nrt_blocked_poll_is_woken);
	tcase_add_test(tc, test_nrt_different_streams_from_different_threads);
	tcase_add_test(tc, test_nrt_reaches_named_producer_in_other_process);
	suite_add_tcase(s, tc);
	return evs_run_suite(s);
}

/* SPDX-License-Identifier: MIT */
/*
 * Bad arguments to every public function, table-driven: each row is one
 * call with one bad argument, the status it must give (constructors: NULL
 * and errno, reported here as -errno) and what evs_errmsg() must then say. Every row runs as its own test
 * against a fresh fixture: a producer with one small stream, an in-process
 * consumer on it, and a named producer for the socket path.
 */
#include <limits.h>

#include "helpers.h"
#include "nrt/ndebug_stream.h"

struct fx {
	struct evs_producer *p;
	struct evs_consumer *c;
	const char *name;
};

static struct fx fx;

static void setup(void)
{
	EVS_OPTS(evs_producer_opts, o, .ring_bytes = 4096, .max_events = 16,
		 .hugepages = EVS_HUGEPAGES_OFF);

	evs_test_runtime_dir();
	fx.name = evs_test_name("badargs");
	fx.p = evs_producer__new(fx.name, 1, &o);
	ck_assert_msg(fx.p, "producer: %s", evs_errmsg());
	fx.c = evs_consumer__connect(fx.name, 0, NULL);
	ck_assert_msg(fx.c, "consumer: %s", evs_errmsg());
}

static void teardown(void)
{
	evs_consumer__free(fx.c);
	evs_producer__free(fx.p);
	memset(&fx, 0, sizeof(fx));
}

/* Constructors: NULL + errno becomes -errno; a non-NULL result is freed
 * and reported as 0 (which no row expects). */
static int producer_status(struct evs_producer *p)
{
	int err = errno;

	if (p) {
		evs_producer__free(p);
		return 0;
	}
	return -err;
}

static int consumer_status(struct evs_consumer *c)
{
	int err = errno;

	if (c) {
		evs_consumer__free(c);
		return 0;
	}
	return -err;
}

static int ptr_status(void *ptr)
{
	return ptr ? 0 : -errno;
}

#define P_OPTS(...) EVS_OPTS(evs_producer_opts, o, .hugepages = EVS_HUGEPAGES_OFF, \
			     .ring_bytes = 4096, __VA_ARGS__)

/* ---------------------------------------------------------- producer__new */
static int new_zero_cores(void) { return producer_status(evs_producer__new(NULL, 0, NULL)); }
static int new_too_many_cores(void) { return producer_status(evs_producer__new(NULL, 4097, NULL)); }
static int new_uint_max_cores(void) { return producer_status(evs_producer__new(NULL, UINT_MAX, NULL)); }
static int new_empty_name(void) { return producer_status(evs_producer__new("", 1, NULL)); }
static int new_dot_name(void) { return producer_status(evs_producer__new(".hidden", 1, NULL)); }
static int new_slash_name(void) { return producer_status(evs_producer__new("../etc/x", 1, NULL)); }
static int new_space_name(void) { return producer_status(evs_producer__new("a b", 1, NULL)); }
static int new_long_name(void)
{
	char name[66];

	memset(name, 'a', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	return producer_status(evs_producer__new(name, 1, NULL));
}
static int new_opts_unknown_tail(void)
{
	struct {
		struct evs_producer_opts o;
		uint64_t future;
	} big = { .o = { .sz = sizeof(big) }, .future = 1 };

	return producer_status(evs_producer__new(NULL, 1, &big.o));
}
static int new_ring_too_big(void)
{
	P_OPTS();
	o.ring_bytes = 1ULL << 62;
	return producer_status(evs_producer__new(NULL, 1, &o));
}
static int new_ring_too_small(void)
{
	P_OPTS();
	o.ring_bytes = 1;
	return producer_status(evs_producer__new(NULL, 1, &o));
}
static int new_max_events_huge(void)
{
	P_OPTS(.max_events = UINT64_MAX);
	return producer_status(evs_producer__new(NULL, 1, &o));
}
static int new_bad_hugepages(void)
{
	P_OPTS();
	o.hugepages = 99;
	return producer_status(evs_producer__new(NULL, 1, &o));
}
static int new_negative_hugepages(void)
{
	P_OPTS();
	o.hugepages = -1;
	return producer_status(evs_producer__new(NULL, 1, &o));
}
static int new_runtime_dir_too_long(void)
{
	char dir[200];

	P_OPTS();
	memset(dir, 'd', sizeof(dir) - 1);
	dir[0] = '/';
	dir[sizeof(dir) - 1] = '\0';
	o.runtime_dir = dir;
	return producer_status(evs_producer__new("longdir", 1, &o));
}
static int new_same_name_twice(void) { return producer_status(evs_producer__new(fx.name, 1, NULL)); }

/* ------------------------------------------------- producer, other calls */
static int free_null_producer(void) { evs_producer__free(NULL); return 0; }
static int ncores_null(void) { return (int)evs_producer__ncores(NULL); }
static int emit_null_producer(void) { return evs_producer__emit(NULL, 0, 1, "x", 1); }
static int emit_core_out_of_range(void) { return evs_producer__emit(fx.p, 1, 1, "x", 1); }
static int emit_core_uint_max(void) { return evs_producer__emit(fx.p, UINT_MAX, 1, "x", 1); }
static int emit_null_data(void) { return evs_producer__emit(fx.p, 0, 1, NULL, 8); }
static int emit_size_max(void) { return evs_producer__emit(fx.p, 0, 1, "x", SIZE_MAX); }
static int emit_during_reservation(void)
{
	ck_assert_ptr_nonnull(evs_producer__reserve(fx.p, 0, 1, 8));
	return evs_producer__emit(fx.p, 0, 1, "x", 1);
}
static int reserve_null_producer(void) { return ptr_status(evs_producer__reserve(NULL, 0, 1, 8)); }
static int reserve_core_out_of_range(void) { return ptr_status(evs_producer__reserve(fx.p, 7, 1, 8)); }
static int reserve_size_max(void) { return ptr_status(evs_producer__reserve(fx.p, 0, 1, SIZE_MAX)); }
static int reserve_twice(void)
{
	ck_assert_ptr_nonnull(evs_producer__reserve(fx.p, 0, 1, 8));
	return ptr_status(evs_producer__reserve(fx.p, 0, 1, 8));
}
static int commit_null_producer(void) { return evs_producer__commit(NULL, 0); }
static int commit_core_out_of_range(void) { return evs_producer__commit(fx.p, 1); }
static int commit_without_reserve(void) { return evs_producer__commit(fx.p, 0); }
static int commit_deferred_null_producer(void) { return evs_producer__commit_deferred(NULL, 0); }
static int commit_deferred_core_out_of_range(void) { return evs_producer__commit_deferred(fx.p, 1); }
static int commit_deferred_without_reserve(void) { return evs_producer__commit_deferred(fx.p, 0); }
static int publish_null_producer(void) { return evs_producer__publish(NULL, 0); }
static int publish_core_out_of_range(void) { return evs_producer__publish(fx.p, 1); }
static int discard_null_producer(void) { return evs_producer__discard(NULL, 0); }
static int discard_without_reserve(void) { return evs_producer__discard(fx.p, 0); }
static int commit_after_discard(void)
{
	ck_assert_ptr_nonnull(evs_producer__reserve(fx.p, 0, 1, 8));
	ck_assert_int_eq(evs_producer__discard(fx.p, 0), 0);
	return evs_producer__commit(fx.p, 0);
}
static int flush_null_producer(void) { return evs_producer__flush(NULL, 0); }
static int flush_core_out_of_range(void) { return evs_producer__flush(fx.p, 1); }
static int pstats_null_producer(void)
{
	struct evs_stream_stats st = { .sz = sizeof(st) };

	return evs_producer__stats(NULL, 0, &st);
}
static int pstats_null_stats(void) { return evs_producer__stats(fx.p, 0, NULL); }
static int pstats_zero_sz(void)
{
	struct evs_stream_stats st = { .sz = 0 };

	return evs_producer__stats(fx.p, 0, &st);
}
static int pstats_core_out_of_range(void)
{
	struct evs_stream_stats st = { .sz = sizeof(st) };

	return evs_producer__stats(fx.p, 1, &st);
}

/* ------------------------------------------------------- emit_tensor */
static const uint64_t shape2[2] = { 2, 3 };
static const float tdata[6];
static struct evs_tensor good_tensor(void)
{
	return (struct evs_tensor){ .prefix = "t", .pipe = 1, .dtype = "float32", .ndim = 2,
				    .shape = shape2, .data = tdata };
}
/* A good tensor with one field made bad. */
#define TENSOR_WITH(field, value) \
	({ static struct evs_tensor t_; t_ = good_tensor(); t_.field = (value); &t_; })
static int tensor_null_producer(void)
{
	struct evs_tensor t = good_tensor();

	return evs_producer__emit_tensor(NULL, 0, &t);
}
static int tensor_null_tensor(void) { return evs_producer__emit_tensor(fx.p, 0, NULL); }
static int tensor_core_out_of_range(void)
{
	struct evs_tensor t = good_tensor();

	return evs_producer__emit_tensor(fx.p, 1, &t);
}
static int tensor_null_dtype(void) { return evs_producer__emit_tensor(fx.p, 0, TENSOR_WITH(dtype, NULL)); }
static int tensor_unknown_dtype(void) { return evs_producer__emit_tensor(fx.p, 0, TENSOR_WITH(dtype, "float128")); }
static int tensor_long_dtype(void)
{
	struct evs_tensor t = good_tensor();

	t.dtype = "float32float32float32";
	t.elem_size = 4;
	return evs_producer__emit_tensor(fx.p, 0, &t);
}
static int tensor_ndim_9(void) { return evs_producer__emit_tensor(fx.p, 0, TENSOR_WITH(ndim, 9)); }
static int tensor_null_shape(void) { return evs_producer__emit_tensor(fx.p, 0, TENSOR_WITH(shape, NULL)); }
static int tensor_bad_pipe(void) { return evs_producer__emit_tensor(fx.p, 0, TENSOR_WITH(pipe, 3)); }
static int tensor_null_data(void) { return evs_producer__emit_tensor(fx.p, 0, TENSOR_WITH(data, NULL)); }
static int tensor_shape_overflow(void)
{
	static const uint64_t huge[2] = { 1ULL << 40, 1ULL << 40 };

	return evs_producer__emit_tensor(fx.p, 0, TENSOR_WITH(shape, huge));
}

/* ---------------------------------------------------------- consumer */
static int connect_bad_name(void) { return consumer_status(evs_consumer__connect("a/b", 0, NULL)); }
static int connect_empty_name(void) { return consumer_status(evs_consumer__connect("", 0, NULL)); }
static int connect_core_out_of_range(void) { return consumer_status(evs_consumer__connect(fx.name, 1, NULL)); }
static int connect_core_uint_max(void) { return consumer_status(evs_consumer__connect(fx.name, UINT_MAX, NULL)); }
static int connect_second_consumer(void) { return consumer_status(evs_consumer__connect(fx.name, 0, NULL)); }
static int connect_no_such_producer(void)
{
	return consumer_status(evs_consumer__connect("no-such-producer-anywhere", 0, NULL));
}
static int connect_opts_unknown_tail(void)
{
	struct {
		struct evs_consumer_opts o;
		uint64_t future;
	} big = { .o = { .sz = sizeof(big) }, .future = 1 };

	return consumer_status(evs_consumer__connect(fx.name, 0, &big.o));
}
static int free_null_consumer(void) { evs_consumer__free(NULL); return 0; }
static int fd_null(void) { return evs_consumer__fd(NULL); }
static int hup_fd_null(void) { return evs_consumer__hup_fd(NULL); }
static int peek_null_consumer(void)
{
	struct evs_record r;

	return evs_consumer__peek(NULL, &r);
}
static int peek_null_record(void) { return evs_consumer__peek(fx.c, NULL); }
static int release_null(void) { return evs_consumer__release(NULL); }
static int release_without_peek(void) { return evs_consumer__release(fx.c); }
static int release_twice(void)
{
	struct evs_record r;

	ck_assert_int_eq(evs_producer__emit(fx.p, 0, 1, "x", 1), 0);
	ck_assert_int_eq(evs_consumer__peek(fx.c, &r), 0);
	ck_assert_int_eq(evs_consumer__release(fx.c), 0);
	return evs_consumer__release(fx.c);
}
static int count_fn(void *ctx, const struct evs_record *r) { (void)ctx; (void)r; return 0; }
static int consume_null_consumer(void) { return evs_consumer__consume(NULL, count_fn, NULL, 0); }
static int consume_null_fn(void) { return evs_consumer__consume(fx.c, NULL, NULL, 0); }
static int prepare_wait_null(void) { return evs_consumer__prepare_wait(NULL); }
static int wait_null(void) { return evs_consumer__wait(NULL, 0); }
static int cstats_null_consumer(void)
{
	struct evs_stream_stats st = { .sz = sizeof(st) };

	return evs_consumer__stats(NULL, &st);
}
static int cstats_null_stats(void) { return evs_consumer__stats(fx.c, NULL); }
static int cstats_small_sz(void)
{
	struct evs_stream_stats st = { .sz = 8 };

	return evs_consumer__stats(fx.c, &st);
}

/* -------------------------------------------------------------- misc */
static int strerror_int_min(void) { return evs_strerror(INT_MIN) ? 0 : -1; }
static int strerror_unknown(void) { return evs_strerror(123456) ? 0 : -1; }
static int errmsg_never_null(void) { return evs_errmsg() ? 0 : -1; }
static int drop_cause_negative(void) { return strcmp(evs_drop_cause_name(-1), "unknown"); }
static int drop_cause_too_big(void) { return strcmp(evs_drop_cause_name(EVS_DROP_CAUSE_COUNT), "unknown"); }
static int dtype_null(void) { return (int)evs_dtype_size(NULL); }
static int dtype_empty(void) { return (int)evs_dtype_size(""); }

/* ---------------------------------------------------- debug-stream API */
static int nrt_connect_negative_core(void)
{
	int fd;

	return nrt_debug_client_connect(-1, &fd);
}
static int nrt_connect_null_fd(void) { return nrt_debug_client_connect(0, NULL); }
static int nrt_read_unknown_fd(void)
{
	ndebug_stream_event_header_t h;
	void *pl;

	return nrt_debug_client_read_one_event(-1, &h, &pl);
}
static int nrt_read_null_header(void)
{
	void *pl;

	return nrt_debug_client_read_one_event(evs_consumer__fd(fx.c), NULL, &pl);
}
static int nrt_read_null_payload(void)
{
	ndebug_stream_event_header_t h;

	return nrt_debug_client_read_one_event(evs_consumer__fd(fx.c), &h, NULL);
}
static int nrt_close_unknown_fd(void) { nrt_debug_client_connect_close(-12345); return 0; }

/*
 * msg: what evs_errmsg() must say after the call (a part of it, naming
 * the bad value); "": a drop, which leaves the message as it was (drops
 * are counted, not explained); NULL: no message to check (calls that
 * cannot fail, and the debug-stream API, which has its status codes).
 */
struct row {
	const char *what;
	int (*call)(void);
	int expect;
	const char *msg;
};

#define ROW(fn, want, msg) { #fn, fn, want, msg }

/* A message no row's call gives, left by an earlier failure. */
#define STALE_NAME "stale name"
static const struct row rows[] = {
	ROW(new_zero_cores, -EINVAL, "ncores=0 is not allowed: use 1 to 4096"),
	ROW(new_too_many_cores, -EINVAL, "ncores=4097"),
	ROW(new_uint_max_cores, -EINVAL, "ncores=4294967295"),
	ROW(new_empty_name, -EINVAL, "producer name '' is not allowed"),
	ROW(new_dot_name, -EINVAL, "'.hidden' is not allowed"),
	ROW(new_slash_name, -EINVAL, "'../etc/x' is not allowed"),
	ROW(new_space_name, -EINVAL, "'a b' is not allowed"),
	ROW(new_long_name, -EINVAL, "is not allowed: use 1 to 64"),
	ROW(new_opts_unknown_tail, -EINVAL, "unknown fields set (sz=64"),
	ROW(new_ring_too_big, -EINVAL, "ring_bytes=4611686018427387904 is out of range"),
	ROW(new_ring_too_small, -EINVAL, "ring_bytes=1 is out of range"),
	ROW(new_max_events_huge, -EINVAL, "max_events=18446744073709551615 is out of range"),
	ROW(new_bad_hugepages, -EINVAL, "hugepages=99 is not allowed"),
	ROW(new_negative_hugepages, -EINVAL, "hugepages=-1 is not allowed"),
	ROW(new_runtime_dir_too_long, -ENAMETOOLONG, "runtime directory name is too long"),
	ROW(new_same_name_twice, -EEXIST, "already exists in this process"),
	ROW(free_null_producer, 0, NULL),
	ROW(ncores_null, 0, NULL),
	ROW(emit_null_producer, -EINVAL, "the producer is NULL"),
	ROW(emit_core_out_of_range, -EINVAL, "core 1 is out of range: producer"),
	ROW(emit_core_uint_max, -EINVAL, "core 4294967295 is out of range"),
	ROW(emit_null_data, -EINVAL, "data is NULL with size=8"),
	ROW(emit_size_max, -EMSGSIZE, ""),
	ROW(emit_during_reservation, -EBUSY, "core 0 has a reservation open (8 bytes)"),
	ROW(reserve_null_producer, -EINVAL, "the producer is NULL"),
	ROW(reserve_core_out_of_range, -EINVAL, "core 7 is out of range"),
	ROW(reserve_size_max, -EMSGSIZE, ""),
	ROW(reserve_twice, -EBUSY, "core 0 has a reservation open"),
	ROW(commit_null_producer, -EINVAL, "the producer is NULL"),
	ROW(commit_core_out_of_range, -EINVAL, "core 1 is out of range"),
	ROW(commit_without_reserve, -EINVAL, "commit: core 0 has no reservation open"),
	ROW(commit_deferred_null_producer, -EINVAL, "the producer is NULL"),
	ROW(commit_deferred_core_out_of_range, -EINVAL, "core 1 is out of range"),
	ROW(commit_deferred_without_reserve, -EINVAL, "commit_deferred: core 0 has no reservation open"),
	ROW(publish_null_producer, -EINVAL, "the producer is NULL"),
	ROW(publish_core_out_of_range, -EINVAL, "core 1 is out of range"),
	ROW(discard_null_producer, -EINVAL, "the producer is NULL"),
	ROW(discard_without_reserve, -EINVAL, "discard: core 0 has no reservation open"),
	ROW(commit_after_discard, -EINVAL, "commit: core 0 has no reservation open"),
	ROW(flush_null_producer, -EINVAL, "the producer is NULL"),
	ROW(flush_core_out_of_range, -EINVAL, "core 1 is out of range"),
	ROW(pstats_null_producer, -EINVAL, "the producer is NULL"),
	ROW(pstats_null_stats, -EINVAL, "stats: the struct evs_stream_stats is NULL"),
	ROW(pstats_zero_sz, -EINVAL, "stats: sz=0 is too small"),
	ROW(pstats_core_out_of_range, -EINVAL, "core 1 is out of range"),
	ROW(tensor_null_producer, -EINVAL, "the producer is NULL"),
	ROW(tensor_null_tensor, -EINVAL, "the tensor is NULL"),
	ROW(tensor_core_out_of_range, -EINVAL, "core 1 is out of range"),
	ROW(tensor_null_dtype, -EINVAL, "a device print (no dtype) carries its prefix alone: ndim=2"),
	ROW(tensor_unknown_dtype, -EINVAL, "dtype 'float128' is not one evstream knows"),
	ROW(tensor_long_dtype, -EINVAL, "dtype 'float32float32f...' is too long"),
	ROW(tensor_ndim_9, -EINVAL, "ndim=9 is out of range: allowed is 0 to 8"),
	ROW(tensor_null_shape, -EINVAL, "shape is NULL with ndim=2"),
	ROW(tensor_bad_pipe, -EINVAL, "pipe=3 is not allowed"),
	ROW(tensor_null_data, -EINVAL, "data is NULL for a tensor of 24 bytes"),
	ROW(tensor_shape_overflow, -ERANGE, "shape [1099511627776, 1099511627776] of float32 makes more than 2^62 bytes"),
	ROW(connect_bad_name, -EINVAL, "producer name 'a/b' is not allowed"),
	ROW(connect_empty_name, -EINVAL, "producer name '' is not allowed"),
	ROW(connect_core_out_of_range, -EINVAL, "core 1 is out of range"),
	ROW(connect_core_uint_max, -EINVAL, "core 4294967295 is out of range"),
	ROW(connect_second_consumer, -EBUSY, "core 0 already has a consumer"),
	ROW(connect_no_such_producer, -ENOENT, "no producer named 'no-such-producer-anywhere'"),
	ROW(connect_opts_unknown_tail, -EINVAL, "evs_consumer_opts: unknown fields set"),
	ROW(free_null_consumer, 0, NULL),
	ROW(fd_null, -EINVAL, "fd: the consumer is NULL"),
	ROW(hup_fd_null, -EINVAL, "hup_fd: the consumer is NULL"),
	ROW(peek_null_consumer, -EINVAL, "peek: the consumer is NULL"),
	ROW(peek_null_record, -EINVAL, "peek: the record is NULL"),
	ROW(release_null, -EINVAL, "release: the consumer is NULL"),
	ROW(release_without_peek, -EINVAL, "release: no record is held"),
	ROW(release_twice, -EINVAL, "release: no record is held"),
	ROW(consume_null_consumer, -EINVAL, "consume: the consumer is NULL"),
	ROW(consume_null_fn, -EINVAL, "consume: the callback is NULL"),
	ROW(prepare_wait_null, -EINVAL, "prepare_wait: the consumer is NULL"),
	ROW(wait_null, -EINVAL, "wait: the consumer is NULL"),
	ROW(cstats_null_consumer, -EINVAL, "stats: the consumer is NULL"),
	ROW(cstats_null_stats, -EINVAL, "stats: the struct evs_stream_stats is NULL"),
	ROW(cstats_small_sz, -EINVAL, "stats: sz=8 is too small"),
	ROW(strerror_int_min, 0, NULL),
	ROW(strerror_unknown, 0, NULL),
	ROW(errmsg_never_null, 0, NULL),
	ROW(drop_cause_negative, 0, NULL),
	ROW(drop_cause_too_big, 0, NULL),
	ROW(dtype_null, 0, NULL),
	ROW(dtype_empty, 0, NULL),
	ROW(nrt_connect_negative_core, NRT_INVALID, NULL),
	ROW(nrt_connect_null_fd, NRT_INVALID, NULL),
	ROW(nrt_read_unknown_fd, NRT_INVALID_HANDLE, NULL),
	ROW(nrt_read_null_header, NRT_INVALID, NULL),
	ROW(nrt_read_null_payload, NRT_INVALID, NULL),
	ROW(nrt_close_unknown_fd, 0, NULL),
};
#define NROWS ((int)(sizeof(rows) / sizeof(rows[0])))

/* One row per test: the call gives exactly the documented status, and the
 * fixture still works afterwards (no state was damaged by the bad call). */
START_TEST(test_bad_argument_gives_documented_status)
{
	const struct row *r = &rows[_i];
	struct evs_record rec;
	int got;

	/* an earlier failure's message, which the call must replace */
	ck_assert_ptr_null(evs_producer__new(STALE_NAME, 1, NULL));
	ck_assert_ptr_nonnull(strstr(evs_errmsg(), STALE_NAME));
	got = r->call();
	ck_assert_msg(got == r->expect, "%s: got %d (%s), want %d", r->what, got,
		      got < 0 ? evs_strerror(got) : "-", r->expect);
	if (r->msg && *r->msg)
		ck_assert_msg(strstr(evs_errmsg(), r->msg), "%s: evs_errmsg() says '%s', want '%s' in it",
			      r->what, evs_errmsg(), r->msg);
	else if (r->msg)
		ck_assert_msg(strstr(evs_errmsg(), STALE_NAME), "%s, a drop, set evs_errmsg() to '%s'",
			      r->what, evs_errmsg());
	/* a good call still works */
	evs_producer__discard(fx.p, 0);
	while (evs_consumer__consume(fx.c, count_fn, NULL, 0) > 0)
		;
	ck_assert_msg(evs_producer__emit(fx.p, 0, 1, "ok", 2) == 0, "%s broke the producer", r->what);
	ck_assert_msg(evs_consumer__peek(fx.c, &rec) == 0 && rec.hdr.data_size == 2,
		      "%s broke the consumer", r->what);
	ck_assert_int_eq(evs_consumer__release(fx.c), 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("badargs");
	TCase *tc = evs_tcase("table");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_loop_test(tc, test_bad_argument_gives_documented_status, 0, NROWS);
	suite_add_tcase(s, tc);
	return evs_run_suite(s);
}

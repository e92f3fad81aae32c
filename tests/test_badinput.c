/* SPDX-License-Identifier: MIT */
/*
 * Bad input gets a clear error: core indexes out of range, bad environment
 * values (the message names the variable and what is allowed), oversize
 * events, producers that do not exist. The status each bad argument gives
 * is test_badargs' table; here, mostly the messages.
 */
#include "helpers.h"

/* The variables the tests set: none may reach the next test (with
 * CK_FORK=no the tests share one process). */
static void unset_env(void)
{
	unsetenv("EVSTREAM_RING_BYTES");
	unsetenv("EVSTREAM_HUGEPAGES");
	unsetenv("NEURON_RT_DEBUG_STREAM_BUFFER_SIZE");
	unsetenv("EVSTREAM_TSC");
}

static void assert_msg_has(const char *needle)
{
	ck_assert_msg(strstr(evs_errmsg(), needle), "message '%s' lacks '%s'", evs_errmsg(), needle);
}

START_TEST(test_badinput_core_out_of_range)
{
	struct evs_producer *p = evs_producer__new(NULL, 2, NULL);
	struct evs_stream_stats st = { .sz = sizeof(st) };

	ck_assert_ptr_nonnull(p);
	ck_assert_int_eq(evs_producer__emit(p, 2, 1, "x", 1), -EINVAL);
	ck_assert_ptr_null(evs_producer__reserve(p, 99, 1, 1));
	ck_assert_int_eq(evs_producer__stats(p, 2, &st), -EINVAL);
	ck_assert_ptr_null(evs_consumer__connect(NULL, 2, NULL));
	ck_assert_int_eq(errno, EINVAL);
	assert_msg_has("core 2 is out of range");
	assert_msg_has("cores 0 to 1");
	ck_assert_ptr_null(evs_producer__new(NULL, 0, NULL));
	ck_assert_int_eq(errno, EINVAL);
	assert_msg_has("ncores=0");
	evs_producer__free(p);
}
END_TEST

struct env_case {
	const char *var, *value, *expect;
};

static const struct env_case env_cases[] = {
	{ "EVSTREAM_RING_BYTES", "abc", "EVSTREAM_RING_BYTES='abc' is not a number" },
	{ "EVSTREAM_RING_BYTES", "0", "EVSTREAM_RING_BYTES=0 is out of range" },
	{ "EVSTREAM_RING_BYTES", "-5", "is not a number" },
	{ "EVSTREAM_RING_BYTES", "64Q", "is not a number" },
	{ "EVSTREAM_RING_BYTES", "999T", "EVSTREAM_RING_BYTES=999T is out of range" },
	{ "EVSTREAM_RING_BYTES", "99999999999999999999", "=99999999999999999999 is out of range" },
	{ "EVSTREAM_RING_BYTES", "99999999999999999999Q", "is not a number" },
	{ "EVSTREAM_RING_BYTES", "", "is not a number" },
	{ "NEURON_RT_DEBUG_STREAM_BUFFER_SIZE", "0", "NEURON_RT_DEBUG_STREAM_BUFFER_SIZE=0 is out of range" },
	{ "NEURON_RT_DEBUG_STREAM_BUFFER_SIZE", "lots", "is not a number" },
	{ "NEURON_RT_DEBUG_STREAM_BUFFER_SIZE", "99999999999999", "is out of range" },
	{ "EVSTREAM_HUGEPAGES", "maybe", "EVSTREAM_HUGEPAGES='maybe' is not allowed: use auto, on or off" },
	{ "EVSTREAM_TSC", "on", "EVSTREAM_TSC='on' is not allowed: use auto or off" },
};

START_TEST(test_badinput_environment_values)
{
	const struct env_case *ec = &env_cases[_i];

	setenv(ec->var, ec->value, 1);
	ck_assert_ptr_null(evs_producer__new(NULL, 1, NULL));
	ck_assert_int_eq(errno, EINVAL);
	assert_msg_has(ec->expect);
	unsetenv(ec->var);
	/* and the variable removed, all is well again */
	evs_producer__free(evs_producer__new(NULL, 1, NULL));
}
END_TEST

START_TEST(test_badinput_environment_good_values)
{
	struct evs_producer *p;
	struct evs_stream_stats st = { .sz = sizeof(st) };

	setenv("EVSTREAM_RING_BYTES", "100K", 1);
	setenv("NEURON_RT_DEBUG_STREAM_BUFFER_SIZE", "7", 1);
	setenv("EVSTREAM_HUGEPAGES", "off", 1);
	p = evs_producer__new(NULL, 1, NULL);
	ck_assert_msg(p, "%s", evs_errmsg());
	ck_assert_int_eq(evs_producer__stats(p, 0, &st), 0);
	ck_assert_uint_eq(st.ring_bytes, 100 * 1024 + 0); /* a multiple of 4 KiB already */
	ck_assert_uint_eq(st.max_events, 7);
	ck_assert_uint_eq(st.hugepages, 0);
	evs_producer__free(p);
	setenv("EVSTREAM_RING_BYTES", "5000", 1);
	p = evs_producer__new(NULL, 1, NULL);
	ck_assert_int_eq(evs_producer__stats(p, 0, &st), 0);
	ck_assert_uint_eq(st.ring_bytes, 8192); /* rounded up to the page size */
	evs_producer__free(p);
}
END_TEST

START_TEST(test_badinput_hugepages_on_without_enough)
{
	/* more huge pages than the machine has free */
	long free_pages = evs_hugepages_free();
	char ring[32];

	if (free_pages < 0)
		EVS_SKIP("kernel without hugetlb");
	snprintf(ring, sizeof(ring), "%ld", (free_pages + 1) * 2 * 1024 * 1024);
	setenv("EVSTREAM_RING_BYTES", ring, 1);
	setenv("EVSTREAM_HUGEPAGES", "on", 1);
	ck_assert_ptr_null(evs_producer__new(NULL, 1, NULL));
	assert_msg_has("hugepages on: the option or EVSTREAM_HUGEPAGES");
	assert_msg_has("nr_hugepages");
	/* auto falls back to normal pages */
	setenv("EVSTREAM_HUGEPAGES", "auto", 1);
	{
		struct evs_producer *p = evs_producer__new(NULL, 1, NULL);
		struct evs_stream_stats st = { .sz = sizeof(st) };

		ck_assert_msg(p, "%s", evs_errmsg());
		ck_assert_int_eq(evs_producer__stats(p, 0, &st), 0);
		ck_assert_uint_eq(st.hugepages, 0);
		evs_producer__free(p);
	}
}
END_TEST

START_TEST(test_badinput_oversize_events)
{
	EVS_OPTS(evs_producer_opts, o, .ring_bytes = 64 * 1024, .hugepages = EVS_HUGEPAGES_OFF);
	struct evs_producer *p = evs_producer__new(NULL, 1, &o);
	struct evs_consumer *c = evs_consumer__connect(NULL, 0, NULL);
	static uint8_t big[128 * 1024];
	uint64_t shape[2] = { 1ull << 40, 1ull << 40 };
	uint64_t bigshape[1] = { 100000 };
	struct evs_tensor overflow = { .prefix = "o", .pipe = 1, .dtype = "float32", .ndim = 2,
				       .shape = shape, .data = big };
	struct evs_tensor too_big = { .prefix = "b", .pipe = 1, .dtype = "float32", .ndim = 1,
				      .shape = bigshape, .data = big };
	struct evs_stream_stats st = { .sz = sizeof(st) };

	ck_assert_ptr_nonnull(c);
	ck_assert_int_eq(evs_producer__emit(p, 0, 1, big, sizeof(big)), -EMSGSIZE);
	ck_assert_int_eq(evs_producer__emit_tensor(p, 0, &too_big), -EMSGSIZE);
	ck_assert_int_eq(evs_producer__emit_tensor(p, 0, &overflow), -ERANGE);
	ck_assert_int_eq(evs_producer__stats(p, 0, &st), 0);
	ck_assert_uint_eq(st.dropped_events[EVS_DROP_TOO_BIG], 2);
	ck_assert_uint_eq(st.produced, 2); /* -ERANGE is bad input, not an event */
	evs_consumer__free(c);
	evs_producer__free(p);
}
END_TEST

/* An unknown dtype is accepted with its element size (the tensor fields
 * that are refused are rows of test_badargs). */
START_TEST(test_badinput_unknown_dtype_with_elem_size_is_accepted)
{
	struct evs_producer *p = evs_producer__new(NULL, 1, NULL);
	struct evs_consumer *c = evs_consumer__connect(NULL, 0, NULL);
	uint64_t shape[1] = { 1 };
	float v[1] = { 0 };
	struct evs_tensor t = { .prefix = "p", .pipe = 1, .dtype = "mytype", .elem_size = 4,
				.ndim = 1, .shape = shape, .data = v };
	struct evs_record rec;

	ck_assert_ptr_nonnull(p);
	ck_assert_ptr_nonnull(c);
	ck_assert_int_eq(evs_producer__emit_tensor(p, 0, &t), 0);
	ck_assert_int_eq(evs_consumer__peek(c, &rec), 0);
	ck_assert_uint_eq(rec.hdr.data_size, 1024 + 4); /* the fixed part, one element */
	evs_consumer__free(c);
	evs_producer__free(p);
}
END_TEST

/* The element size of a known dtype is the dtype's (or 0: implied by it);
 * any other contradicts the dtype and is refused, nothing emitted. */
START_TEST(test_badinput_tensor_elem_size_must_match_its_dtype)
{
	struct evs_producer *p = evs_producer__new(NULL, 1, NULL);
	struct evs_consumer *c = evs_consumer__connect(NULL, 0, NULL);
	uint64_t shape[1] = { 2 };
	double v[2] = { 1.5, -2.25 };
	struct evs_tensor f32 = { .prefix = "f", .pipe = 1, .dtype = "float32", .elem_size = 8,
				  .ndim = 1, .shape = shape, .data = v };
	struct evs_tensor i8 = { .prefix = "i", .pipe = 1, .dtype = "int8", .elem_size = 3,
				 .ndim = 1, .shape = shape, .data = v };
	struct evs_stream_stats st = { .sz = sizeof(st) };
	struct evs_record rec;
	struct evs_tensor_info ev;

	ck_assert_ptr_nonnull(p);
	ck_assert_ptr_nonnull(c);
	ck_assert_int_eq(evs_producer__emit_tensor(p, 0, &f32), -EINVAL);
	ck_assert_int_eq(evs_producer__emit_tensor(p, 0, &i8), -EINVAL);
	ck_assert_int_eq(evs_producer__stats(p, 0, &st), 0);
	ck_assert_uint_eq(st.produced, 0);
	ck_assert_int_eq(evs_consumer__peek(c, &rec), -EAGAIN);
	/* its own size, or 0, is taken */
	f32.elem_size = 4;
	ck_assert_int_eq(evs_producer__emit_tensor(p, 0, &f32), 0);
	i8.elem_size = 0;
	ck_assert_int_eq(evs_producer__emit_tensor(p, 0, &i8), 0);
	ck_assert_int_eq(evs_consumer__peek(c, &rec), 0);
	ck_assert_int_eq(evs_tensor_parse(rec.data, rec.hdr.data_size, &ev), 0);
	ck_assert_uint_eq(ev.elem_size, 4);
	ck_assert_uint_eq(ev.bytes, 8);
	evs_consumer__release(c);
	ck_assert_int_eq(evs_consumer__peek(c, &rec), 0);
	ck_assert_int_eq(evs_tensor_parse(rec.data, rec.hdr.data_size, &ev), 0);
	ck_assert_uint_eq(ev.elem_size, 1);
	ck_assert_uint_eq(ev.bytes, 2);
	evs_consumer__release(c);
	evs_consumer__free(c);
	evs_producer__free(p);
}
END_TEST

/* An empty tensor (a 0 among its sizes) is valid whatever its other sizes:
 * there is no element count to overflow. It reads back with its shape. */
START_TEST(test_badinput_empty_tensor_of_any_shape_is_accepted)
{
	struct evs_producer *p = evs_producer__new(NULL, 1, NULL);
	struct evs_consumer *c = evs_consumer__connect(NULL, 0, NULL);
	static const uint64_t big3[3] = { 1ull << 33, 1ull << 33, 0 }, max2[2] = { 0, UINT64_MAX };
	struct evs_tensor t[2] = {
		{ .prefix = "a", .pipe = 1, .dtype = "float32", .ndim = 3, .shape = big3 },
		{ .prefix = "b", .pipe = 1, .dtype = "int8", .ndim = 2, .shape = max2 },
	};
	struct evs_record rec;
	struct evs_tensor_info ev;

	ck_assert_ptr_nonnull(p);
	ck_assert_ptr_nonnull(c);
	for (int i = 0; i < 2; i++) {
		ck_assert_int_eq(evs_producer__emit_tensor(p, 0, &t[i]), 0);
		ck_assert_int_eq(evs_consumer__peek(c, &rec), 0);
		ck_assert_uint_eq(rec.hdr.data_size, EVS_TENSOR_FIXED_BYTES);
		ck_assert_int_eq(evs_tensor_parse(rec.data, rec.hdr.data_size, &ev), 0);
		ck_assert_uint_eq(ev.ndim, t[i].ndim);
		ck_assert_mem_eq(ev.shape, t[i].shape, t[i].ndim * sizeof(uint64_t));
		ck_assert_uint_eq(ev.numel, 0);
		ck_assert_uint_eq(ev.bytes, 0);
		evs_consumer__release(c);
	}
	evs_consumer__free(c);
	evs_producer__free(p);
}
END_TEST

START_TEST(test_badinput_producer_that_does_not_exist)
{
	ck_assert_ptr_null(evs_consumer__connect("nobody-here", 0, NULL));
	ck_assert_int_eq(errno, ENOENT);
	assert_msg_has("no producer named 'nobody-here'");
	ck_assert_ptr_null(evs_consumer__connect(NULL, 0, NULL));
	ck_assert_int_eq(errno, ENOENT);
}
END_TEST

START_TEST(test_badinput_names)
{
	ck_assert_ptr_null(evs_producer__new("bad/name", 1, NULL));
	ck_assert_int_eq(errno, EINVAL);
	assert_msg_has("producer name 'bad/name' is not allowed");
	ck_assert_ptr_null(evs_producer__new(".hidden", 1, NULL));
	ck_assert_ptr_null(evs_consumer__connect("", 0, NULL));
	ck_assert_int_eq(errno, EINVAL);
	{
		struct evs_producer *p = evs_producer__new("dup", 1, NULL);

		ck_assert_ptr_nonnull(p);
		ck_assert_ptr_null(evs_producer__new("dup", 1, NULL));
		ck_assert_int_eq(errno, EEXIST);
		evs_producer__free(p);
	}
}
END_TEST

START_TEST(test_badinput_options_struct)
{
	struct {
		struct evs_producer_opts o;
		char future[16];
	} big;

	memset(&big, 0, sizeof(big));
	big.o.sz = sizeof(big);
	/* unknown trailing bytes that are zero are accepted */
	evs_producer__free(evs_producer__new(NULL, 1, &big.o));
	big.future[3] = 1;
	ck_assert_ptr_null(evs_producer__new(NULL, 1, &big.o));
	ck_assert_int_eq(errno, EINVAL);
	assert_msg_has("unknown fields");
	{
		EVS_OPTS(evs_producer_opts, o, .hugepages = 77);

		ck_assert_ptr_null(evs_producer__new(NULL, 1, &o));
		assert_msg_has("hugepages=77");
	}
}
END_TEST

START_TEST(test_badinput_strerror_names_errors)
{
	ck_assert_str_eq(evs_strerror(-ENOBUFS), "dropped: ring full");
	ck_assert_str_eq(evs_strerror(EPIPE), "producer gone and stream drained");
	ck_assert_ptr_nonnull(evs_strerror(-EINVAL));
	ck_assert_str_eq(evs_strerror(123456), "unknown error");
	ck_assert_str_eq(evs_drop_cause_name(EVS_DROP_TOO_BIG), "too_big");
	ck_assert_str_eq(evs_drop_cause_name(42), "unknown");
	ck_assert_uint_eq(evs_dtype_size("bfloat16"), 2);
	ck_assert_uint_eq(evs_dtype_size("nope"), 0);
	ck_assert_uint_eq(evs_dtype_size(NULL), 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("badinput");
	TCase *tc = evs_tcase("badinput");

	tcase_add_checked_fixture(tc, NULL, unset_env);
	tcase_add_test(tc, test_badinput_core_out_of_range);
	tcase_add_loop_test(tc, test_badinput_environment_values, 0,
			    (int)(sizeof(env_cases) / sizeof(env_cases[0])));
	tcase_add_test(tc, test_badinput_environment_good_values);
	tcase_add_test(tc, test_badinput_hugepages_on_without_enough);
	tcase_add_test(tc, test_badinput_oversize_events);
	tcase_add_test(tc, test_badinput_unknown_dtype_with_elem_size_is_accepted);
	tcase_add_test(tc, test_badinput_tensor_elem_size_must_match_its_dtype);
	tcase_add_test(tc, test_badinput_empty_tensor_of_any_shape_is_accepted);
	tcase_add_test(tc, test_badinput_producer_that_does_not_exist);
	tcase_add_test(tc, test_badinput_names);
	tcase_add_test(tc, test_badinput_options_struct);
	tcase_add_test(tc, test_badinput_strerror_names_errors);
	suite_add_tcase(s, tc);
	return evs_run_suite(s);
}

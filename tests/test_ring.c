/* SPDX-License-Identifier: MIT */
/*
 * Ring behaviour, one behaviour per test, each run in both memory modes
 * (loop index 0: normal pages, 1: huge pages). The huge-page variant skips
 * with the reason when no huge page can be had.
 */
#include <inttypes.h>

#include "helpers.h"
#include "evstream-private/introspect.h"
#include "layout.h"
#include "nrt/ndebug_stream.h"

struct ring {
	struct evs_producer *p;
	struct evs_consumer *c;
	uint64_t cap;
};

/* Producer with one stream of the smallest ring the mode allows, and an
 * in-process consumer. Returns false (after printing why) if the mode is
 * not available here. */
static bool ring_open(struct ring *r, int mode, uint64_t max_events)
{
	EVS_OPTS(evs_producer_opts, o, .ring_bytes = 4096, .max_events = max_events,
		 .hugepages = mode ? EVS_HUGEPAGES_ON : EVS_HUGEPAGES_OFF);
	struct evs_stream_stats st = { .sz = sizeof(st) };

	if (evs_hugepages_off("ring_open hugepages", mode))
		return false;
	r->p = evs_producer__new(NULL, 1, &o);
	if (!r->p && mode && evs_hugepages_short("ring_open hugepages", errno, 1))
		return false;
	ck_assert_msg(r->p, "producer: %s", evs_errmsg());
	r->c = evs_consumer__connect(NULL, 0, NULL);
	ck_assert_msg(r->c, "consumer: %s", evs_errmsg());
	ck_assert_int_eq(evs_producer__stats(r->p, 0, &st), 0);
	ck_assert_uint_eq(st.hugepages, mode ? 1 : 0);
	ck_assert_uint_eq(st.page_size, mode ? 2u << 20 : 4096u);
	r->cap = st.ring_bytes;
	ck_assert_uint_eq(r->cap, st.page_size); /* 4096 rounded up to one page */
	return true;
}

static void ring_close(struct ring *r)
{
	evs_consumer__free(r->c);
	evs_producer__free(r->p);
}

static struct evs_stream_stats stats_of(struct ring *r)
{
	struct evs_stream_stats st = { .sz = sizeof(st) };

	ck_assert_int_eq(evs_producer__stats(r->p, 0, &st), 0);
	return st;
}

/* A producer of one stream with these options, and its in-process consumer. */
static void pair_open(const struct evs_producer_opts *o, struct evs_producer **p,
		      struct evs_consumer **c)
{
	*p = evs_producer__new(NULL, 1, o);
	ck_assert_msg(*p, "producer: %s", evs_errmsg());
	*c = evs_consumer__connect(NULL, 0, NULL);
	ck_assert_msg(*c, "consumer: %s", evs_errmsg());
}

static void fill_pattern(uint8_t *b, size_t n, uint64_t seed)
{
	for (size_t i = 0; i < n; i++)
		b[i] = (uint8_t)(seed * 31 + i * 7);
}

static bool check_pattern(const uint8_t *b, size_t n, uint64_t seed)
{
	for (size_t i = 0; i < n; i++)
		if (b[i] != (uint8_t)(seed * 31 + i * 7))
			return false;
	return true;
}

START_TEST(test_ring_empty_peek_returns_eagain)
{
	struct ring r;
	struct evs_record rec;

	if (!ring_open(&r, _i, 0))
		return;
	ck_assert_int_eq(evs_consumer__peek(r.c, &rec), -EAGAIN);
	ck_assert_int_eq(evs_consumer__release(r.c), -EINVAL);
	ck_assert_int_eq(evs_consumer__prepare_wait(r.c), 0);
	ck_assert_uint_eq(stats_of(&r).produced, 0);
	ring_close(&r);
}
END_TEST

START_TEST(test_ring_rejects_write_when_full_by_bytes)
{
	struct ring r;
	uint8_t buf[64];
	struct evs_record rec;
	uint64_t fits, n = 0;
	struct evs_stream_stats st;

	if (!ring_open(&r, _i, 0))
		return;
	fits = r.cap / evs_record_len(sizeof(buf));
	while (evs_producer__emit(r.p, 0, 7, buf, sizeof(buf)) == 0)
		n++;
	ck_assert_uint_eq(n, fits);
	ck_assert_int_eq(evs_producer__emit(r.p, 0, 7, buf, sizeof(buf)), -ENOBUFS);
	st = stats_of(&r);
	ck_assert_uint_eq(st.committed, fits);
	ck_assert_uint_eq(st.dropped_events[EVS_DROP_RING_FULL], 2);
	ck_assert_uint_eq(st.dropped_bytes[EVS_DROP_RING_FULL], 2 * sizeof(buf));
	ck_assert_uint_eq(st.produced, st.committed + st.dropped);
	/* the newest is dropped: after one release there is room again */
	ck_assert_int_eq(evs_consumer__peek(r.c, &rec), 0);
	ck_assert_uint_eq(rec.hdr.seq, 0);
	ck_assert_int_eq(evs_consumer__release(r.c), 0);
	ck_assert_int_eq(evs_producer__emit(r.p, 0, 7, buf, sizeof(buf)), 0);
	ring_close(&r);
}
END_TEST

START_TEST(test_ring_rejects_write_when_full_by_count)
{
	struct ring r;
	struct evs_record rec;

	if (!ring_open(&r, _i, 3))
		return;
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(evs_producer__emit(r.p, 0, 1, NULL, 0), 0);
	ck_assert_int_eq(evs_producer__emit(r.p, 0, 1, NULL, 0), -ENOBUFS);
	ck_assert_uint_eq(stats_of(&r).dropped_events[EVS_DROP_RING_FULL], 1);
	ck_assert_int_eq(evs_consumer__peek(r.c, &rec), 0);
	ck_assert_int_eq(evs_consumer__release(r.c), 0);
	ck_assert_int_eq(evs_producer__emit(r.p, 0, 1, NULL, 0), 0);
	ring_close(&r);
}
END_TEST

/* A ring found full for one record is full for every record as long
 * while the consumer stays where it is, and only for those: a shorter
 * record that fits is written, through emit and reserve alike, and the
 * long one is taken once the consumer releases room. */
START_TEST(test_ring_full_for_a_long_record_takes_a_shorter_one)
{
	struct ring r;
	struct evs_record rec;
	uint8_t buf[512] = { 0 };
	uint64_t fits, left, n = 0;
	size_t shrt, lng;
	struct evs_stream_stats st;

	if (!ring_open(&r, _i, 0))
		return;
	fits = r.cap / evs_record_len(sizeof(buf));
	left = r.cap - fits * evs_record_len(sizeof(buf));
	ck_assert_uint_ge(left, EVS_RECORD_HDR);
	shrt = left - EVS_RECORD_HDR; /* fills the ring exactly */
	lng = shrt + EVS_RECORD_ALIGN; /* one step too long */
	while (evs_producer__emit(r.p, 0, 1, buf, sizeof(buf)) == 0)
		n++;
	ck_assert_uint_eq(n, fits);
	for (int i = 0; i < 3; i++) {
		ck_assert_int_eq(evs_producer__emit(r.p, 0, 2, buf, lng), -ENOBUFS);
		ck_assert_ptr_null(evs_producer__reserve(r.p, 0, 2, lng));
		ck_assert_int_eq(errno, ENOBUFS);
	}
	ck_assert_ptr_nonnull(evs_producer__reserve(r.p, 0, 3, shrt));
	ck_assert_int_eq(evs_producer__discard(r.p, 0), 0);
	ck_assert_int_eq(evs_producer__emit(r.p, 0, 3, buf, shrt), 0);
	/* now full to the byte: the shortest record is refused too */
	ck_assert_int_eq(evs_producer__emit(r.p, 0, 4, NULL, 0), -ENOBUFS);
	st = stats_of(&r);
	ck_assert_uint_eq(st.dropped_events[EVS_DROP_RING_FULL], 1 + 6 + 1);
	ck_assert_uint_eq(st.dropped_bytes[EVS_DROP_RING_FULL], sizeof(buf) + 6 * lng);
	ck_assert_uint_eq(st.produced, st.committed + st.dropped);
	/* the consumer moves: the long record fits now */
	ck_assert_int_eq(evs_consumer__peek(r.c, &rec), 0);
	ck_assert_int_eq(evs_consumer__release(r.c), 0);
	ck_assert_int_eq(evs_producer__emit(r.p, 0, 2, buf, lng), 0);
	for (uint64_t i = 1; i < fits; i++) {
		ck_assert_int_eq(evs_consumer__peek(r.c, &rec), 0);
		ck_assert_uint_eq(rec.hdr.type, 1);
		ck_assert_int_eq(evs_consumer__release(r.c), 0);
	}
	ck_assert_int_eq(evs_consumer__peek(r.c, &rec), 0);
	ck_assert_uint_eq(rec.hdr.type, 3);
	ck_assert_uint_eq(rec.hdr.data_size, shrt);
	ck_assert_int_eq(evs_consumer__release(r.c), 0);
	ck_assert_int_eq(evs_consumer__peek(r.c, &rec), 0);
	ck_assert_uint_eq(rec.hdr.type, 2);
	ck_assert_uint_eq(rec.hdr.data_size, lng);
	ck_assert_int_eq(evs_consumer__release(r.c), 0);
	ring_close(&r);
}
END_TEST

/* The same while the ring is first filled, when a record that fits needs
 * more of the ring's memory committed first: a longer record refused for
 * want of room does not make the producer refuse it (with the consumer
 * where it was, only a record as long as the refused one is full too). */
START_TEST(test_ring_full_for_a_long_record_takes_a_shorter_one_on_first_fill)
{
	EVS_OPTS(evs_producer_opts, o, .ring_bytes = 16u << 20, .hugepages = EVS_HUGEPAGES_OFF);
	struct evs_producer *p;
	struct evs_consumer *c;
	struct evs_stream_stats st = { .sz = sizeof(st) };
	size_t first = 1u << 20, lng = (31u << 20) / 2, shrt = (3u << 20) / 2;
	uint8_t *buf = calloc(1, lng);

	ck_assert_ptr_nonnull(buf);
	pair_open(&o, &p, &c);
	ck_assert_int_eq(evs_producer__emit(p, 0, 1, buf, first), 0);
	/* 1 MiB in, 2 MiB of memory so far: 15.5 MiB more cannot fit in 16 */
	ck_assert_int_eq(evs_producer__emit(p, 0, 2, buf, lng), -ENOBUFS);
	ck_assert_int_eq(evs_producer__emit(p, 0, 2, buf, lng), -ENOBUFS);
	/* 1.5 MiB fits, once the ring's next 2 MiB are committed */
	ck_assert_int_eq(evs_producer__emit(p, 0, 3, buf, shrt), 0);
	ck_assert_int_eq(evs_producer__stats(p, 0, &st), 0);
	ck_assert_uint_eq(st.committed, 2);
	ck_assert_uint_eq(st.dropped_events[EVS_DROP_RING_FULL], 2);
	evs_consumer__free(c);
	evs_producer__free(p);
	free(buf);
}
END_TEST

/* Records that run past the end of the ring are contiguous in the
 * consumer's view thanks to the second mapping. */
START_TEST(test_ring_wrap_keeps_payload_contiguous)
{
	struct ring r;
	uint8_t buf[3000];
	struct evs_record rec;
	uint64_t pos = 0, straddled = 0;

	if (!ring_open(&r, _i, 0))
		return;
	for (uint64_t i = 0; pos < 3 * r.cap; i++) {
		size_t n = (size_t)((i * 977) % (sizeof(buf) < r.cap / 3 ? sizeof(buf) : r.cap / 3));

		fill_pattern(buf, n, i);
		EVS_CHECK(evs_producer__emit(r.p, 0, 2, buf, n) == 0, "emit %" PRIu64, i);
		EVS_CHECK(evs_consumer__peek(r.c, &rec) == 0, "peek %" PRIu64, i);
		EVS_CHECK(rec.hdr.data_size == n && rec.hdr.seq == i, "record %" PRIu64, i);
		EVS_CHECK(check_pattern(rec.data, n, i), "record %" PRIu64, i);
		/* bytes 32..39 the record's position (layout.h), the rest zero */
		uint64_t at;
		memcpy(&at, rec.hdr.reserved, sizeof(at));
		EVS_CHECK(at == pos, "record %" PRIu64 " says it is at %" PRIu64, i, at);
		for (size_t k = sizeof(at); k < sizeof(rec.hdr.reserved); k++)
			EVS_CHECK(rec.hdr.reserved[k] == 0, "record %" PRIu64 " reserved[%zu]", i, k);
		EVS_CHECK(rec.hdr.flags == 0, "record %" PRIu64, i);
		if (pos % r.cap + evs_record_len(n) > r.cap)
			straddled++;
		pos += evs_record_len(n);
		EVS_CHECK(evs_consumer__release(r.c) == 0, "release %" PRIu64, i);
	}
	ck_assert_uint_gt(straddled, 0);
	ring_close(&r);
}
END_TEST

START_TEST(test_ring_accepts_exact_fit)
{
	struct ring r;
	struct evs_record rec;
	void *d;

	if (!ring_open(&r, _i, 0))
		return;
	/* one record exactly the size of the ring, after a wrap */
	ck_assert_int_eq(evs_producer__emit(r.p, 0, 1, "abc", 3), 0);
	ck_assert_int_eq(evs_consumer__peek(r.c, &rec), 0);
	ck_assert_int_eq(evs_consumer__release(r.c), 0);
	d = evs_producer__reserve(r.p, 0, 9, r.cap - EVS_RECORD_HDR);
	ck_assert_ptr_nonnull(d);
	memset(d, 0x5a, r.cap - EVS_RECORD_HDR);
	ck_assert_int_eq(evs_producer__commit(r.p, 0), 0);
	/* now full: even an empty event does not fit */
	ck_assert_int_eq(evs_producer__emit(r.p, 0, 1, NULL, 0), -ENOBUFS);
	ck_assert_int_eq(evs_consumer__peek(r.c, &rec), 0);
	ck_assert_uint_eq(rec.hdr.data_size, r.cap - EVS_RECORD_HDR);
	ck_assert_uint_eq(((const uint8_t *)rec.data)[0], 0x5a);
	ck_assert_uint_eq(((const uint8_t *)rec.data)[r.cap - EVS_RECORD_HDR - 1], 0x5a);
	ck_assert_int_eq(evs_consumer__release(r.c), 0);
	ring_close(&r);
}
END_TEST

START_TEST(test_ring_drops_event_larger_than_ring)
{
	struct ring r;
	struct evs_stream_stats st;

	if (!ring_open(&r, _i, 0))
		return;
	ck_assert_ptr_null(evs_producer__reserve(r.p, 0, 1, r.cap - EVS_RECORD_HDR + 1));
	ck_assert_int_eq(errno, EMSGSIZE);
	ck_assert_ptr_null(evs_producer__reserve(r.p, 0, 1, SIZE_MAX));
	ck_assert_int_eq(errno, EMSGSIZE);
	st = stats_of(&r);
	ck_assert_uint_eq(st.dropped_events[EVS_DROP_TOO_BIG], 2);
	ck_assert_uint_eq(st.dropped_bytes[EVS_DROP_TOO_BIG], (r.cap - EVS_RECORD_HDR + 1) + (uint64_t)SIZE_MAX);
	ck_assert_uint_eq(st.committed, 0);
	ck_assert_uint_eq(st.produced, 2);
	ring_close(&r);
}
END_TEST

START_TEST(test_ring_records_are_8_byte_aligned)
{
	struct ring r;
	struct evs_record rec;
	uint8_t buf[17] = { 0 };

	if (!ring_open(&r, _i, 0))
		return;
	for (size_t n = 0; n <= sizeof(buf); n++) {
		ck_assert_int_eq(evs_producer__emit(r.p, 0, 1, buf, n), 0);
		ck_assert_int_eq(evs_consumer__peek(r.c, &rec), 0);
		ck_assert_uint_eq((uintptr_t)rec.data % 8, 0);
		ck_assert_uint_eq(rec.hdr.data_size, n);
		ck_assert_int_eq(evs_consumer__release(r.c), 0);
	}
	ring_close(&r);
}
END_TEST

/* seq counts every emit, dropped ones too: the gaps are the drops. */
START_TEST(test_ring_sequence_gaps_equal_drops)
{
	struct ring r;
	struct evs_record rec;
	uint64_t expect_seq[8], k = 0, n = 0;

	if (!ring_open(&r, _i, 2))
		return;
	for (uint64_t i = 0; i < 8; i++) {
		int err = evs_producer__emit(r.p, 0, 1, &i, sizeof(i));

		if (err == 0)
			expect_seq[k++] = i;
		else
			ck_assert_int_eq(err, -ENOBUFS);
		if (i % 3 == 2) { /* consume everything every third emit */
			while (evs_consumer__peek(r.c, &rec) == 0) {
				ck_assert_uint_eq(rec.hdr.seq, expect_seq[n]);
				ck_assert_uint_eq(*(const uint64_t *)rec.data, expect_seq[n]);
				n++;
				evs_consumer__release(r.c);
			}
		}
	}
	while (evs_consumer__peek(r.c, &rec) == 0) {
		ck_assert_uint_eq(rec.hdr.seq, expect_seq[n++]);
		evs_consumer__release(r.c);
	}
	ck_assert_uint_eq(n, k);
	ck_assert_uint_eq(stats_of(&r).dropped, 8 - k);
	ck_assert_uint_lt(k, 8);
	ring_close(&r);
}
END_TEST

/* The first line of a file, without its newline ("" if unreadable). */
static void first_line(const char *path, char *buf, size_t n)
{
	FILE *f = fopen(path, "r");

	buf[0] = '\0';
	if (f && fgets(buf, (int)n, f))
		buf[strcspn(buf, "\n")] = '\0';
	if (f)
		fclose(f);
}

/* What the library's TSC check looks at (transport/clock.c), read here
 * independently: the TSC is invariant (constant and nonstop), whatever
 * the clocksource. */
static bool machine_has_tsc_clock(void)
{
	char src[64], line[8192] = "";
	FILE *f = fopen("/proc/cpuinfo", "r");
	bool flags = false;

	first_line("/sys/devices/system/clocksource/clocksource0/current_clocksource", src, sizeof(src));
	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "flags", 5)) {
			flags = strstr(line, " constant_tsc") && strstr(line, " nonstop_tsc");
			break;
		}
	if (f)
		fclose(f);
	printf("clocksource %s, invariant TSC: %s\n", src, flags ? "yes" : "no");
	return flags;
}

/* A producer with one 4 KiB stream and its consumer, on the TSC clock
 * (tsc_off false) or on clock_gettime(); returns the slack a timestamp
 * may have against clock_gettime(), after checking the library chose the
 * clock an independent look at the machine says it should. */
#define TSC_BOUND_NS 1000
static uint64_t clocked_pair(bool tsc_off, struct evs_producer **p, struct evs_consumer **c)
{
	EVS_OPTS(evs_producer_opts, o, .ring_bytes = 4096, .hugepages = EVS_HUGEPAGES_OFF);
	struct evs_tuning t;

	if (tsc_off)
		setenv("EVSTREAM_TSC", "off", 1);
	pair_open(&o, p, c);
	unsetenv("EVSTREAM_TSC");
	ck_assert_int_eq(evs__producer_tuning(*p, 0, &t), 0);
	ck_assert_uint_eq(t.tsc_timestamps, !tsc_off && machine_has_tsc_clock());
	printf("timestamps from %s\n", t.tsc_timestamps ? "the TSC" : "clock_gettime()");
	return t.tsc_timestamps ? TSC_BOUND_NS : 0;
}

/*
 * timestamp_ns is CLOCK_MONOTONIC at commit, read from the TSC (_i 0) or
 * from clock_gettime() (_i 1, EVSTREAM_TSC=off). Every event is emitted
 * between two clock_gettime() calls; for 30 ms, so that the TSC clock
 * renews its anchor (every 1 ms) some thirty times, and for 1000 events at
 * least however slow the machine. From the TSC a timestamp may stray by the
 * documented bound, 1 us; from clock_gettime() it may not stray at all.
 * Never backwards.
 */
START_TEST(test_ring_timestamps_follow_clock_monotonic)
{
	struct evs_producer *p;
	struct evs_consumer *c;
	struct evs_record rec;
	uint64_t start, before, after, last = 0, n = 0, worst_early = 0, worst_late = 0;
	uint64_t slack = clocked_pair(_i == 1, &p, &c);

	start = evs_test_now_ns();
	do {
		before = evs_test_now_ns();
		EVS_CHECK(evs_producer__emit(p, 0, 1, NULL, 0) == 0, "event %" PRIu64, n);
		after = evs_test_now_ns();
		EVS_CHECK(evs_consumer__peek(c, &rec) == 0, "event %" PRIu64, n);
		EVS_CHECK(rec.hdr.timestamp_ns >= last, "event %" PRIu64 " goes back", n);
		last = rec.hdr.timestamp_ns;
		if (before > last && before - last > worst_early)
			worst_early = before - last;
		if (last > after && last - after > worst_late)
			worst_late = last - after;
		EVS_CHECK(last + slack >= before && last <= after + slack,
			  "event %" PRIu64 ": timestamp %" PRIu64 " outside [%" PRIu64 ", %" PRIu64 "]",
			  n, last, before, after);
		evs_consumer__release(c);
		n++;
	} while (after - start < 30 * 1000000ull || n < 1000);
	printf("%" PRIu64 " events: at most %" PRIu64 " ns before the call, %" PRIu64
	       " ns after its return\n", n, worst_early, worst_late);
	evs_consumer__free(c);
	evs_producer__free(p);
}
END_TEST

/*
 * A deferred record becomes visible when it is published, and that is the
 * time it carries: publish() (or the commit()/emit() that publishes it)
 * reads the clock once for all of them. Bursts of 1 to 5 records of
 * varied sizes in a 4 KiB ring, so that the stamping walks across the
 * wrap; every third burst is published by an emit() instead. _i as in
 * the test above. It runs until the ring has wrapped WRAPS times, however
 * long the machine takes (memcheck fits a dozen bursts in 20 ms): the
 * deadline only stops a test that makes no progress.
 */
#define WRAPS 4
START_TEST(test_ring_deferred_records_take_the_publication_time)
{
	struct evs_producer *p;
	struct evs_consumer *c;
	struct evs_record rec;
	uint64_t start, before, after, last = 0, seq = 0, bursts = 0, wraps = 0, prev_off = 0;
	uint64_t slack = clocked_pair(_i == 1, &p, &c);

	start = evs_test_now_ns();
	while (wraps < WRAPS) {
		unsigned int k = 1 + bursts % 5;
		bool by_emit = bursts % 3 == 2;
		uint64_t ts = 0;

		for (unsigned int i = 0; i < k; i++) {
			size_t size = (seq * 13) % 41;
			uint8_t *d = evs_producer__reserve(p, 0, 7, size);

			EVS_CHECK(d, "reserve %" PRIu64, seq);
			memset(d, (int)(seq & 0xff), size);
			EVS_CHECK(evs_producer__commit_deferred(p, 0) == 0, "commit %" PRIu64, seq);
			seq++;
		}
		EVS_CHECK(evs_consumer__peek(c, &rec) == -EAGAIN, "burst %" PRIu64 " seen early", bursts);
		before = evs_test_now_ns();
		if (by_emit)
			EVS_CHECK(evs_producer__emit(p, 0, 7, NULL, 0) == 0, "burst %" PRIu64, bursts);
		else
			EVS_CHECK(evs_producer__publish(p, 0) == 0, "burst %" PRIu64, bursts);
		after = evs_test_now_ns();
		for (unsigned int i = 0; i < k + by_emit; i++) {
			uint64_t n = seq - k + i;
			size_t size = i < k ? (n * 13) % 41 : 0;
			uint64_t off;

			EVS_CHECK(evs_consumer__peek(c, &rec) == 0, "record %" PRIu64, n);
			EVS_CHECK(rec.hdr.data_size == size, "record %" PRIu64, n);
			for (size_t b = 0; b < size; b++)
				EVS_CHECK(((const uint8_t *)rec.data)[b] == (n & 0xff), "record %" PRIu64, n);
			if (i == 0)
				ts = rec.hdr.timestamp_ns;
			EVS_CHECK(rec.hdr.timestamp_ns == ts,
				  "burst %" PRIu64 " record %u: timestamp %" PRIu64
				  ", the burst's first has %" PRIu64, bursts, i, rec.hdr.timestamp_ns, ts);
			off = (uint64_t)(uintptr_t)rec.data;
			wraps += off < prev_off;
			prev_off = off;
			evs_consumer__release(c);
		}
		seq += by_emit;
		EVS_CHECK(ts >= last, "burst %" PRIu64 " goes back", bursts);
		EVS_CHECK(ts + slack >= before && ts <= after + slack,
			  "burst %" PRIu64 ": timestamp %" PRIu64 " outside [%" PRIu64 ", %" PRIu64 "]",
			  bursts, ts, before, after);
		last = ts;
		bursts++;
		EVS_CHECK(after - start < 60 * 1000000000ull, "no progress: %" PRIu64 " bursts, %" PRIu64
			  " wraps in 60 s", bursts, wraps);
	}
	printf("%" PRIu64 " bursts, %" PRIu64 " records, %" PRIu64 " wraps of the ring in %.0f us\n",
	       bursts, seq, wraps, (double)(after - start) / 1e3);
	evs_consumer__free(c);
	evs_producer__free(p);
}
END_TEST

/* A burst longer than the 64 offsets the producer keeps: the first 64 take
 * the time of the 65th commit, the rest that of the publication, and the
 * stream's timestamps still never go back. Small records in a 64 KiB ring. */
START_TEST(test_ring_long_deferred_burst_stays_in_order)
{
	EVS_OPTS(evs_producer_opts, o, .ring_bytes = 65536, .hugepages = EVS_HUGEPAGES_OFF);
	struct evs_producer *p;
	struct evs_consumer *c;
	struct evs_record rec;
	uint64_t first = 0, last = 0, before, after;

	pair_open(&o, &p, &c);
	for (int i = 0; i < 200; i++) {
		ck_assert_ptr_nonnull(evs_producer__reserve(p, 0, 1, 8));
		ck_assert_int_eq(evs_producer__commit_deferred(p, 0), 0);
	}
	before = evs_test_now_ns();
	ck_assert_int_eq(evs_producer__publish(p, 0), 0);
	after = evs_test_now_ns();
	for (int i = 0; i < 200; i++) {
		ck_assert_int_eq(evs_consumer__peek(c, &rec), 0);
		ck_assert_uint_ne(rec.hdr.timestamp_ns, 0);
		ck_assert_uint_ge(rec.hdr.timestamp_ns, last);
		if (i == 0)
			first = rec.hdr.timestamp_ns;
		if (i < 64)
			ck_assert_uint_eq(rec.hdr.timestamp_ns, first);
		last = rec.hdr.timestamp_ns;
		evs_consumer__release(c);
	}
	ck_assert_uint_lt(first, before + TSC_BOUND_NS); /* stamped before publish() */
	ck_assert_uint_le(last, after + TSC_BOUND_NS);
	ck_assert_uint_ge(last + TSC_BOUND_NS, before); /* the last ones, by publish() */
	evs_consumer__free(c);
	evs_producer__free(p);
}
END_TEST

/* Deferred records that fill the ring are published by the drop of the
 * next record, reserve's or emit's (each cause): the consumer sees them,
 * frees their room, and the producer's next record is taken. Before, only
 * a record taken published them, so a producer that dropped instead of
 * reaching its publish() left the stream stalled for good. */
static int deferred_fill(struct evs_producer *p)
{
	int n = 0;

	while (evs_producer__reserve(p, 0, 1, 64)) {
		ck_assert_int_eq(evs_producer__commit_deferred(p, 0), 0);
		n++;
	}
	ck_assert_int_eq(errno, ENOBUFS);
	return n;
}

static void assert_reads(struct evs_consumer *c, int n, const char *after)
{
	struct evs_record rec;
	int got = 0;

	while (evs_consumer__peek(c, &rec) == 0) {
		got++;
		evs_consumer__release(c);
	}
	ck_assert_msg(got == n, "after %s the consumer saw %d of %d deferred records", after, got, n);
}

START_TEST(test_ring_drop_publishes_deferred_records)
{
	EVS_OPTS(evs_producer_opts, o, .ring_bytes = 4096, .hugepages = EVS_HUGEPAGES_OFF);
	static char big[8192];
	struct evs_stream_stats st = { .sz = sizeof(st) };
	struct evs_producer *p;
	struct evs_consumer *c;
	int n;

	pair_open(&o, &p, &c);
	/* the ring filled by deferred records; reserve's drop publishes */
	n = deferred_fill(p);
	ck_assert_int_gt(n, 1);
	assert_reads(c, n, "a dropped reserve");
	ck_assert_int_eq(evs_producer__emit(p, 0, 2, "x", 1), 0);
	assert_reads(c, 1, "an emit into the room they freed");

	/* filled again: an emit dropped as ring_full publishes */
	ck_assert_ptr_nonnull(evs_producer__reserve(p, 0, 1, 64));
	ck_assert_int_eq(evs_producer__commit_deferred(p, 0), 0);
	n = 1 + deferred_fill(p);
	ck_assert_int_eq(evs_producer__emit(p, 0, 2, "x", 1), -ENOBUFS);
	assert_reads(c, n, "an emit dropped as ring_full");

	/* one deferred record, then an emit too big for the ring */
	ck_assert_ptr_nonnull(evs_producer__reserve(p, 0, 1, 8));
	ck_assert_int_eq(evs_producer__commit_deferred(p, 0), 0);
	ck_assert_int_eq(evs_producer__emit(p, 0, 2, big, sizeof(big)), -EMSGSIZE);
	assert_reads(c, 1, "an emit dropped as too_big");

	ck_assert_int_eq(evs_producer__stats(p, 0, &st), 0);
	ck_assert_uint_eq(st.dropped_events[EVS_DROP_TOO_BIG], 1);
	ck_assert_uint_eq(st.dropped_events[EVS_DROP_RING_FULL], 3);
	evs_consumer__free(c);
	evs_producer__free(p);
}
END_TEST

/* no_timestamps: no clock at all, timestamp_ns 0. */
START_TEST(test_ring_no_timestamps_leaves_zero)
{
	EVS_OPTS(evs_producer_opts, o, .ring_bytes = 4096, .hugepages = EVS_HUGEPAGES_OFF,
		 .no_timestamps = 1);
	struct evs_tuning t;
	struct evs_producer *p;
	struct evs_consumer *c;
	struct evs_record rec;

	pair_open(&o, &p, &c);
	ck_assert_int_eq(evs_producer__emit(p, 0, 1, "x", 1), 0);
	ck_assert_int_eq(evs_consumer__peek(c, &rec), 0);
	ck_assert_uint_eq(rec.hdr.timestamp_ns, 0);
	ck_assert_int_eq(evs__producer_tuning(p, 0, &t), 0);
	ck_assert_uint_eq(t.tsc_timestamps, 0);
	evs_consumer__free(c);
	evs_producer__free(p);
}
END_TEST

START_TEST(test_ring_discard_publishes_nothing)
{
	struct ring r;
	struct evs_record rec;
	void *d;

	if (!ring_open(&r, _i, 0))
		return;
	d = evs_producer__reserve(r.p, 0, 1, 100);
	ck_assert_ptr_nonnull(d);
	ck_assert_ptr_null(evs_producer__reserve(r.p, 0, 1, 100));
	ck_assert_int_eq(errno, EBUSY);
	ck_assert_int_eq(evs_producer__emit(r.p, 0, 1, "x", 1), -EBUSY);
	ck_assert_int_eq(evs_producer__discard(r.p, 0), 0);
	ck_assert_int_eq(evs_producer__discard(r.p, 0), -EINVAL);
	ck_assert_int_eq(evs_producer__commit(r.p, 0), -EINVAL);
	ck_assert_int_eq(evs_consumer__peek(r.c, &rec), -EAGAIN);
	ck_assert_uint_eq(stats_of(&r).produced, 0);
	/* the next event takes the discarded space and seq 0 */
	ck_assert_int_eq(evs_producer__emit(r.p, 0, 4, "yz", 2), 0);
	ck_assert_int_eq(evs_consumer__peek(r.c, &rec), 0);
	ck_assert_uint_eq(rec.hdr.seq, 0);
	ck_assert_uint_eq(rec.hdr.type, 4);
	ring_close(&r);
}
END_TEST

START_TEST(test_ring_drops_when_no_consumer)
{
	EVS_OPTS(evs_producer_opts, o, .ring_bytes = 4 << 20,
		 .hugepages = _i ? EVS_HUGEPAGES_ON : EVS_HUGEPAGES_OFF);
	struct evs_producer *p;
	struct evs_consumer *c;
	struct evs_stream_stats st = { .sz = sizeof(st) };
	struct evs_record rec;

	if (evs_hugepages_off(__func__, _i))
		return;
	p = evs_producer__new(NULL, 2, &o);
	/* 4 MiB on each of 2 cores */
	if (!p && _i && evs_hugepages_short(__func__, errno, 4))
		return;
	ck_assert_msg(p, "producer: %s", evs_errmsg());
	ck_assert_int_eq(evs_producer__emit(p, 1, 1, "early", 5), -ENOTCONN);
	c = evs_consumer__connect(NULL, 1, NULL);
	ck_assert_ptr_nonnull(c);
	ck_assert_int_eq(evs_consumer__peek(c, &rec), -EAGAIN); /* nothing from before */
	ck_assert_int_eq(evs_producer__emit(p, 1, 1, "late", 4), 0);
	ck_assert_int_eq(evs_consumer__peek(c, &rec), 0);
	ck_assert_uint_eq(rec.hdr.seq, 1);
	ck_assert_mem_eq(rec.data, "late", 4);
	ck_assert_int_eq(evs_producer__stats(p, 1, &st), 0);
	ck_assert_uint_eq(st.dropped_events[EVS_DROP_NO_CONSUMER], 1);
	ck_assert_uint_eq(st.dropped_bytes[EVS_DROP_NO_CONSUMER], 5);
	evs_consumer__free(c);
	ck_assert_int_eq(evs_producer__emit(p, 1, 1, "gone", 4), -ENOTCONN);
	evs_producer__free(p);
}
END_TEST

static int expect_next(void *ctx, const struct evs_record *rec)
{
	uint64_t *want = ctx;

	ck_assert_uint_eq(*(const uint64_t *)rec->data, *want);
	(*want)++;
	return 0;
}

/* Batch consume hands records over in order and frees their space. */
START_TEST(test_ring_consume_batch_in_order)
{
	struct ring r;
	uint64_t next = 0;
	int n;

	if (!ring_open(&r, _i, 0))
		return;
	for (uint64_t i = 0; i < 20; i++)
		ck_assert_int_eq(evs_producer__emit(r.p, 0, 1, &i, sizeof(i)), 0);
	n = evs_consumer__consume(r.c, expect_next, &next, 5);
	ck_assert_int_eq(n, 5);
	n = evs_consumer__consume(r.c, expect_next, &next, 0);
	ck_assert_int_eq(n, 15);
	ck_assert_uint_eq(next, 20);
	ck_assert_int_eq(evs_consumer__consume(r.c, expect_next, &next, 0), 0);
	ck_assert_uint_eq(stats_of(&r).released, 20);
	ring_close(&r);
}
END_TEST

/* A reader whose producer keeps up with it: each record handed to the
 * callback, the producer publishes the next value. */
struct keeping_up {
	struct evs_producer *p;
	uint64_t next;      /* the value the next record should carry */
	uint64_t published; /* the values published so far: 0..published-1 */
	uint64_t seen;      /* records handed to the callback in this call */
};

/* Stops by itself after 1000 records in a call, so that a consume that
 * would go on for ever fails the test instead of hanging it. */
static int publish_one_more(void *ctx, const struct evs_record *rec)
{
	struct keeping_up *k = ctx;

	ck_assert_uint_eq(*(const uint64_t *)rec->data, k->next);
	k->next++;
	ck_assert_int_eq(evs_producer__emit(k->p, 0, 1, &k->published, sizeof(k->published)), 0);
	k->published++;
	return ++k->seen >= 1000;
}

/* consume(max = 0) hands over what was pending when it was called and
 * returns, however fast the producer publishes meanwhile (here: one record
 * for each one read, from the callback, so with no timing at all): it
 * looks at the producer's position once, and what is published after that
 * look is the next call's. Its return is the count the callback saw. */
START_TEST(test_ring_consume_all_pending_returns_under_a_busy_producer)
{
	struct ring r;
	struct keeping_up k = { 0 };
	int n;

	if (!ring_open(&r, _i, 0))
		return;
	k.p = r.p;
	for (; k.published < 10; k.published++)
		ck_assert_int_eq(evs_producer__emit(r.p, 0, 1, &k.published, sizeof(k.published)), 0);
	for (int call = 0; call < 3; call++) {
		k.seen = 0;
		n = evs_consumer__consume(r.c, publish_one_more, &k, 0);
		ck_assert_int_eq(n, 10);
		ck_assert_uint_eq(k.seen, 10);
		ck_assert_uint_eq(k.next, 10 * (uint64_t)(call + 1));
	}
	/* a bound given is a bound: all 10 pending, 4 asked for */
	k.seen = 0;
	ck_assert_int_eq(evs_consumer__consume(r.c, publish_one_more, &k, 4), 4);
	ck_assert_uint_eq(k.seen, 4);
	/* Records known before the call come first, the held ones first of
	 * all; the one look comes when they are read. Here 10 are pending
	 * (34..43), the consumer knows of 34..39 (its look for the call
	 * above) and holds 34 and 35: the call reads those 6, publishing 6
	 * meanwhile, and its look finds 40..49. */
	{
		struct evs_record rec;

		ck_assert_int_eq(evs_consumer__peek_next(r.c, &rec), 0);
		ck_assert_int_eq(evs_consumer__peek_next(r.c, &rec), 0);
	}
	k.seen = 0;
	n = evs_consumer__consume(r.c, publish_one_more, &k, 0);
	ck_assert_int_eq(n, (int)k.seen);
	ck_assert_int_eq(n, 16);
	ck_assert_uint_eq(k.next, 50);
	ck_assert_uint_eq(stats_of(&r).released, 50);
	ring_close(&r);
}
END_TEST

/* peek_next holds records: every one handed out stays valid (and its
 * space taken) until release gives them back, oldest first. */
START_TEST(test_ring_peek_next_holds_records_until_released)
{
	struct ring r;
	struct evs_record rec[8];
	uint64_t v;
	int n = 0;

	if (!ring_open(&r, _i, 0))
		return;
	/* 8-byte payloads: 72-byte records, cap / 72 of them fit */
	for (v = 0; v < 10; v++)
		ck_assert_int_eq(evs_producer__emit(r.p, 0, 1, &v, sizeof(v)), 0);
	ck_assert_int_eq(evs_consumer__peek_next(r.c, &rec[0]), 0); /* nothing held: peek */
	for (int i = 1; i < 8; i++)
		ck_assert_int_eq(evs_consumer__peek_next(r.c, &rec[i]), 0);
	for (int i = 0; i < 8; i++) {
		ck_assert_uint_eq(*(const uint64_t *)rec[i].data, (uint64_t)i);
		ck_assert_uint_eq(rec[i].hdr.seq, (uint64_t)i);
	}
	/* peek hands out the oldest held one again */
	ck_assert_int_eq(evs_consumer__peek(r.c, &rec[0]), 0);
	ck_assert_uint_eq(*(const uint64_t *)rec[0].data, 0);
	/* held records keep their space: the ring fills 10 records early */
	while (evs_producer__emit(r.p, 0, 1, &v, sizeof(v)) == 0)
		v++, n++;
	ck_assert_int_eq(n, (int)(r.cap / 72) - 10);
	/* released oldest first: the other views still hold their values */
	ck_assert_int_eq(evs_consumer__release(r.c), 0);
	ck_assert_int_eq(evs_consumer__release(r.c), 0);
	ck_assert_uint_eq(stats_of(&r).released, 2);
	for (int i = 2; i < 8; i++)
		ck_assert_uint_eq(*(const uint64_t *)rec[i].data, (uint64_t)i);
	ck_assert_int_eq(evs_consumer__peek(r.c, &rec[0]), 0);
	ck_assert_uint_eq(*(const uint64_t *)rec[0].data, 2);
	for (int i = 2; i < 8; i++)
		ck_assert_int_eq(evs_consumer__release(r.c), 0);
	ck_assert_int_eq(evs_consumer__release(r.c), -EINVAL);
	/* then reading goes on where peek_next stopped */
	ck_assert_int_eq(evs_consumer__peek(r.c, &rec[0]), 0);
	ck_assert_uint_eq(*(const uint64_t *)rec[0].data, 8);
	ring_close(&r);
}
END_TEST

/* The window: EVS_CONSUMER_MAX_HELD records held, the next peek_next is
 * -ENOBUFS and says why in evs_errmsg(); releasing the oldest makes room. */
START_TEST(test_ring_peek_next_window_full_says_why)
{
	EVS_OPTS(evs_producer_opts, o, .ring_bytes = 8 << 20, .hugepages = EVS_HUGEPAGES_OFF,
		 .max_events = EVS_CONSUMER_MAX_HELD + 16);
	struct evs_producer *p;
	struct evs_consumer *c;
	struct evs_record rec;

	pair_open(&o, &p, &c);
	for (int i = 0; i < EVS_CONSUMER_MAX_HELD + 1; i++)
		ck_assert_int_eq(evs_producer__emit(p, 0, 1, NULL, 0), 0);
	for (int i = 0; i < EVS_CONSUMER_MAX_HELD; i++)
		ck_assert_int_eq(evs_consumer__peek_next(c, &rec), 0);
	ck_assert_int_eq(evs_consumer__peek_next(c, &rec), -ENOBUFS);
	ck_assert_msg(strstr(evs_errmsg(), "65536 records are held"), "message: '%s'", evs_errmsg());
	ck_assert_int_eq(evs_consumer__release(c), 0);
	ck_assert_int_eq(evs_consumer__peek_next(c, &rec), 0);
	ck_assert_uint_eq(rec.hdr.seq, EVS_CONSUMER_MAX_HELD);
	evs_consumer__free(c);
	evs_producer__free(p);
}
END_TEST

/* Held records past the first lengths ring (64 entries) move when it
 * grows; an empty ring beyond the held ones says -EAGAIN. */
START_TEST(test_ring_peek_next_holds_many)
{
	EVS_OPTS(evs_producer_opts, o, .ring_bytes = 1 << 20, .hugepages = EVS_HUGEPAGES_OFF);
	struct evs_producer *p;
	struct evs_consumer *c;
	struct evs_record rec;
	uint64_t v;

	pair_open(&o, &p, &c);
	for (v = 0; v < 1000; v++)
		ck_assert_int_eq(evs_producer__emit(p, 0, 1, &v, sizeof(v)), 0);
	for (v = 0; v < 300; v++) {
		ck_assert_int_eq(evs_consumer__peek_next(c, &rec), 0);
		ck_assert_uint_eq(*(const uint64_t *)rec.data, v);
	}
	/* release 100, hold 700 more: the lengths ring wraps, then grows */
	for (v = 0; v < 100; v++)
		ck_assert_int_eq(evs_consumer__release(c), 0);
	for (v = 300; v < 1000; v++) {
		ck_assert_int_eq(evs_consumer__peek_next(c, &rec), 0);
		ck_assert_uint_eq(*(const uint64_t *)rec.data, v);
	}
	ck_assert_int_eq(evs_consumer__peek_next(c, &rec), -EAGAIN);
	/* nothing new beyond the held ones: the consumer may sleep */
	ck_assert_int_eq(evs_consumer__prepare_wait(c), 0);
	for (v = 100; v < 1000; v++) {
		ck_assert_int_eq(evs_consumer__peek(c, &rec), 0);
		ck_assert_uint_eq(*(const uint64_t *)rec.data, v);
		ck_assert_int_eq(evs_consumer__release(c), 0);
	}
	ck_assert_int_eq(evs_consumer__peek(c, &rec), -EAGAIN);
	evs_consumer__free(c);
	evs_producer__free(p);
}
END_TEST

/* A strided view is gathered into C order inside the ring. */
START_TEST(test_ring_tensor_gathers_strided_view)
{
	struct ring r;
	struct evs_record rec;
	float m[4][6];
	uint64_t shape[2] = { 3, 4 };      /* the view m[0:3, 1:5] */
	int64_t strides[2] = { 6 * 4, 4 };
	const ndebug_stream_payload_debug_tensor_read_t *pl;
	struct evs_tensor t = { .prefix = "act", .pipe = 2, .dtype = "float32", .ndim = 2,
				.shape = shape, .strides = strides, .data = &m[0][1] };

	if (!ring_open(&r, _i, 0))
		return;
	for (int i = 0; i < 4; i++)
		for (int j = 0; j < 6; j++)
			m[i][j] = (float)(i * 10 + j);
	ck_assert_int_eq(evs_producer__emit_tensor(r.p, 0, &t), 0);
	ck_assert_int_eq(evs_consumer__peek(r.c, &rec), 0);
	ck_assert_uint_eq(rec.hdr.type, NDEBUG_STREAM_EVENT_TYPE_DEBUG_TENSOR_READ);
	ck_assert_uint_eq(rec.hdr.data_size, 1024 + 12 * 4);
	pl = rec.data;
	ck_assert_str_eq(pl->prefix, "act");
	ck_assert_str_eq(pl->tensor_dtype, "float32");
	ck_assert_uint_eq(pl->pipe, 2);
	ck_assert_uint_eq(pl->logical_nc_id, 0);
	ck_assert_uint_eq(pl->tensor_shape[0], 3);
	ck_assert_uint_eq(pl->tensor_shape[1], 4);
	ck_assert_uint_eq(pl->tensor_shape[2], 0);
	ck_assert_uint_eq(pl->tensor_data_size, 48);
	for (int i = 0; i < 3; i++)
		for (int j = 0; j < 4; j++) {
			float v;

			memcpy(&v, pl->tensor_data + (i * 4 + j) * 4, 4);
			ck_assert_float_eq(v, (float)(i * 10 + j + 1));
		}
	evs_consumer__release(r.c);

	/* a transposed view: strides reversed */
	{
		uint64_t tshape[2] = { 6, 4 };
		int64_t tstrides[2] = { 4, 6 * 4 };
		struct evs_tensor tt = { .prefix = "T", .pipe = 1, .dtype = "float32", .ndim = 2,
					 .shape = tshape, .strides = tstrides, .data = m };

		ck_assert_int_eq(evs_producer__emit_tensor(r.p, 0, &tt), 0);
		ck_assert_int_eq(evs_consumer__peek(r.c, &rec), 0);
		pl = rec.data;
		for (int i = 0; i < 6; i++)
			for (int j = 0; j < 4; j++) {
				float v;

				memcpy(&v, pl->tensor_data + (i * 4 + j) * 4, 4);
				ck_assert_float_eq(v, m[j][i]);
			}
	}
	ring_close(&r);
}
END_TEST

START_TEST(test_ring_tensor_scalar_empty_and_print)
{
	struct ring r;
	struct evs_record rec;
	int32_t one = 42;
	uint64_t zshape[3] = { 2, 0, 5 };
	struct evs_tensor scalar = { .prefix = "s", .pipe = 1, .dtype = "int32", .data = &one };
	struct evs_tensor empty = { .prefix = "e", .pipe = 1, .dtype = "bfloat16", .ndim = 3,
				    .shape = zshape };
	struct evs_tensor print = { .prefix = "hello from core 0", .pipe = 2 };
	const ndebug_stream_payload_debug_tensor_read_t *pl;

	if (!ring_open(&r, _i, 0))
		return;
	ck_assert_int_eq(evs_producer__emit_tensor(r.p, 0, &scalar), 0);
	ck_assert_int_eq(evs_producer__emit_tensor(r.p, 0, &empty), 0);
	ck_assert_int_eq(evs_consumer__peek(r.c, &rec), 0);
	pl = rec.data;
	ck_assert_uint_eq(pl->tensor_data_size, 4);
	ck_assert_int_eq(*(const int32_t *)pl->tensor_data, 42);
	evs_consumer__release(r.c);
	ck_assert_int_eq(evs_consumer__peek(r.c, &rec), 0);
	pl = rec.data;
	ck_assert_uint_eq(rec.hdr.data_size, 1024);
	ck_assert_uint_eq(pl->tensor_data_size, 0);
	ck_assert_uint_eq(pl->tensor_shape[1], 0);
	evs_consumer__release(r.c);
	/* a print: the text, an empty dtype, nothing else (no ndim record) */
	ck_assert_int_eq(evs_producer__emit_tensor(r.p, 0, &print), 0);
	ck_assert_int_eq(evs_consumer__peek(r.c, &rec), 0);
	pl = rec.data;
	ck_assert_uint_eq(rec.hdr.data_size, 1024);
	ck_assert_str_eq(pl->prefix, "hello from core 0");
	ck_assert_uint_eq(pl->pipe, 2);
	ck_assert_str_eq(pl->tensor_dtype, "");
	ck_assert_uint_eq(pl->tensor_data_size, 0);
	for (size_t i = 0; i < sizeof(pl->reserved0); i++)
		ck_assert_int_eq(pl->reserved0[i], 0);
	evs_consumer__release(r.c);
	/* a print carries nothing but its text: anything more is refused */
	print.ndim = 1;
	print.shape = zshape;
	ck_assert_int_eq(evs_producer__emit_tensor(r.p, 0, &print), -EINVAL);
	print = (struct evs_tensor){ .prefix = "p", .pipe = 1, .dtype = "", .data = &one };
	ck_assert_int_eq(evs_producer__emit_tensor(r.p, 0, &print), -EINVAL);
	print.data = NULL;
	print.elem_size = 4;
	ck_assert_int_eq(evs_producer__emit_tensor(r.p, 0, &print), -EINVAL);
	ring_close(&r);
}
END_TEST

/* Deferred records stay invisible until published, then all appear in
 * order; a plain commit and freeing the producer publish them too. */
START_TEST(test_ring_deferred_commit_publishes_in_order)
{
	struct ring r;
	struct evs_record rec;
	struct evs_stream_stats st;

	if (!ring_open(&r, _i, 0))
		return;
	for (uint64_t i = 0; i < 3; i++) {
		uint64_t *d = evs_producer__reserve(r.p, 0, 1, sizeof(*d));

		ck_assert_ptr_nonnull(d);
		*d = i;
		ck_assert_int_eq(evs_producer__commit_deferred(r.p, 0), 0);
	}
	ck_assert_int_eq(evs_producer__commit_deferred(r.p, 0), -EINVAL); /* nothing reserved */
	ck_assert_int_eq(evs_consumer__peek(r.c, &rec), -EAGAIN);
	ck_assert_int_eq(evs_consumer__prepare_wait(r.c), 0);
	ck_assert_int_eq(evs_producer__publish(r.p, 0), 0);
	st = stats_of(&r);
	ck_assert_uint_eq(st.committed, 3);
	ck_assert_uint_eq(st.produced, 3);
	ck_assert_uint_eq(st.wakeups, 1); /* one wake for the whole burst */
	for (uint64_t i = 0; i < 3; i++) {
		ck_assert_int_eq(evs_consumer__peek(r.c, &rec), 0);
		ck_assert_uint_eq(rec.hdr.seq, i);
		ck_assert_uint_eq(*(const uint64_t *)rec.data, i);
		evs_consumer__release(r.c);
	}
	/* a deferred record, then a plain commit: both appear */
	ck_assert_ptr_nonnull(evs_producer__reserve(r.p, 0, 1, 8));
	evs_producer__commit_deferred(r.p, 0);
	ck_assert_int_eq(evs_producer__emit(r.p, 0, 1, "abcdefgh", 8), 0);
	ck_assert_int_eq(evs_consumer__peek(r.c, &rec), 0);
	ck_assert_uint_eq(rec.hdr.seq, 3);
	evs_consumer__release(r.c);
	ck_assert_int_eq(evs_consumer__peek(r.c, &rec), 0);
	ck_assert_uint_eq(rec.hdr.seq, 4);
	evs_consumer__release(r.c);
	/* a drop while a record waits publishes it (the drop takes seq 6)
	 * and leaves the counts adding up; freeing the producer publishes
	 * what was deferred after it */
	ck_assert_ptr_nonnull(evs_producer__reserve(r.p, 0, 1, 8));
	evs_producer__commit_deferred(r.p, 0);
	ck_assert_int_eq(evs_producer__emit(r.p, 0, 1, &st, 1ull << 40), -EMSGSIZE);
	st = stats_of(&r);
	ck_assert_uint_eq(st.committed, 6);
	ck_assert_uint_eq(st.dropped, 1);
	ck_assert_uint_eq(st.produced, st.committed + st.dropped);
	ck_assert_int_eq(evs_consumer__stats(r.c, &st), 0);
	ck_assert_uint_eq(st.produced, st.committed + st.dropped);
	ck_assert_ptr_nonnull(evs_producer__reserve(r.p, 0, 1, 8));
	evs_producer__commit_deferred(r.p, 0);
	ck_assert_int_eq(evs_consumer__peek(r.c, &rec), 0);
	ck_assert_uint_eq(rec.hdr.seq, 5);
	evs_consumer__release(r.c);
	ck_assert_int_eq(evs_consumer__peek(r.c, &rec), -EAGAIN);
	evs_producer__free(r.p);
	ck_assert_int_eq(evs_consumer__peek(r.c, &rec), 0);
	ck_assert_uint_eq(rec.hdr.seq, 7);
	evs_consumer__release(r.c);
	ck_assert_int_eq(evs_consumer__peek(r.c, &rec), -EPIPE);
	evs_consumer__free(r.c);
}
END_TEST

/*
 * evs__ring_copy() is memcpy() whatever the size and alignment: below
 * EVS__RING_COPY_STREAMING through memcpy, from there on with streaming
 * stores after a head up to a cache line and before a tail. Every byte
 * lands, and none next to the destination is touched.
 */
START_TEST(test_ring_copy_is_exact)
{
	const size_t T = EVS__RING_COPY_STREAMING;
	const size_t sizes[] = { 0, 1, 63, 64, T - 1, T, T + 1, T + 63, T + 64, 3 * T + 17 };
	const size_t shifts[] = { 0, 1, 8, 63 };
	size_t cap = 3 * T + 17 + 64 + 2 * 64;
	size_t bufsz = (cap + 64 + 63) / 64 * 64; /* aligned_alloc: a multiple of 64 */
	uint8_t *src = malloc(cap), *buf = aligned_alloc(64, bufsz);

	ck_assert_ptr_nonnull(src);
	ck_assert_ptr_nonnull(buf);
	for (size_t i = 0; i < cap; i++)
		src[i] = (uint8_t)(i * 131 + 7);
	for (size_t a = 0; a < sizeof(sizes) / sizeof(sizes[0]); a++)
		for (size_t b = 0; b < sizeof(shifts) / sizeof(shifts[0]); b++) {
			size_t n = sizes[a], at = 64 + shifts[b];

			memset(buf, 0xee, bufsz);
			evs__ring_copy(buf + at, src + shifts[b], n);
			EVS_CHECK(memcmp(buf + at, src + shifts[b], n) == 0,
				  "%zu bytes at +%zu: copy differs", n, shifts[b]);
			for (size_t k = 0; k < at; k++)
				EVS_CHECK(buf[k] == 0xee, "%zu bytes at +%zu: byte %zu before written", n,
					  shifts[b], at - k);
			for (size_t k = at + n; k < bufsz; k++)
				EVS_CHECK(buf[k] == 0xee, "%zu bytes at +%zu: byte %zu after the end written",
					  n, shifts[b], k - at - n);
		}
	free(src);
	free(buf);
}
END_TEST

/* Large payloads through emit() and emit_tensor() (contiguous, and a
 * strided view whose rows are streamed one by one) arrive byte for byte,
 * at offsets that are not cache-line aligned in the ring. */
START_TEST(test_ring_large_payloads_arrive_whole)
{
	EVS_OPTS(evs_producer_opts, o, .ring_bytes = 1 << 20, .hugepages = EVS_HUGEPAGES_OFF);
	const uint64_t rows = 3, cols = EVS__RING_COPY_STREAMING / 4 + 5; /* float32 rows > T */
	const size_t n = 2 * EVS__RING_COPY_STREAMING + 24;
	uint64_t shape[2] = { rows, cols };
	int64_t strides[2] = { (int64_t)((cols + 3) * 4), 4 }; /* padded rows */
	uint8_t *src = malloc(rows * (cols + 3) * 4);
	struct evs_producer *p;
	struct evs_consumer *c;
	struct evs_record rec;

	ck_assert_ptr_nonnull(src);
	pair_open(&o, &p, &c);
	fill_pattern(src, rows * (cols + 3) * 4, 5);
	ck_assert_int_eq(evs_producer__emit(p, 0, 1, src, 8), 0); /* the next starts at +136 */
	ck_assert_int_eq(evs_producer__emit(p, 0, 1, src + 3, n), 0);
	struct evs_tensor flat = { .prefix = "flat", .pipe = 1, .dtype = "uint8", .ndim = 1,
				   .shape = (uint64_t[]){ n }, .data = src + 1 };
	struct evs_tensor view = { .prefix = "view", .pipe = 1, .dtype = "float32", .ndim = 2,
				   .shape = shape, .strides = strides, .data = src };
	ck_assert_int_eq(evs_producer__emit_tensor(p, 0, &flat), 0);
	ck_assert_int_eq(evs_consumer__peek(c, &rec), 0);
	evs_consumer__release(c);
	ck_assert_int_eq(evs_consumer__peek(c, &rec), 0);
	ck_assert_uint_eq(rec.hdr.data_size, n);
	ck_assert(memcmp(rec.data, src + 3, n) == 0);
	evs_consumer__release(c);
	ck_assert_int_eq(evs_consumer__peek(c, &rec), 0);
	ck_assert_uint_eq(rec.hdr.data_size, 1024 + n);
	ck_assert(memcmp((const uint8_t *)rec.data + 1024, src + 1, n) == 0);
	evs_consumer__release(c);
	ck_assert_int_eq(evs_producer__emit_tensor(p, 0, &view), 0);
	ck_assert_int_eq(evs_consumer__peek(c, &rec), 0);
	ck_assert_uint_eq(rec.hdr.data_size, 1024 + rows * cols * 4);
	for (uint64_t r = 0; r < rows; r++)
		ck_assert_msg(memcmp((const uint8_t *)rec.data + 1024 + r * cols * 4,
				     src + r * (uint64_t)strides[0], cols * 4) == 0, "row %" PRIu64, r);
	evs_consumer__release(c);
	evs_consumer__free(c);
	evs_producer__free(p);
	free(src);
}
END_TEST

static Suite *ring_suite(void)
{
	Suite *s = suite_create("ring");
	TCase *tc = evs_tcase("ring");

	tcase_set_timeout(tc, 30);
	tcase_add_loop_test(tc, test_ring_empty_peek_returns_eagain, 0, EVS_MODES);
	tcase_add_loop_test(tc, test_ring_rejects_write_when_full_by_bytes, 0, EVS_MODES);
	tcase_add_loop_test(tc, test_ring_rejects_write_when_full_by_count, 0, EVS_MODES);
	tcase_add_loop_test(tc, test_ring_full_for_a_long_record_takes_a_shorter_one, 0, EVS_MODES);
	tcase_add_test(tc, test_ring_full_for_a_long_record_takes_a_shorter_one_on_first_fill);
	tcase_add_loop_test(tc, test_ring_wrap_keeps_payload_contiguous, 0, EVS_MODES);
	tcase_add_loop_test(tc, test_ring_accepts_exact_fit, 0, EVS_MODES);
	tcase_add_loop_test(tc, test_ring_drops_event_larger_than_ring, 0, EVS_MODES);
	tcase_add_loop_test(tc, test_ring_records_are_8_byte_aligned, 0, EVS_MODES);
	tcase_add_loop_test(tc, test_ring_sequence_gaps_equal_drops, 0, EVS_MODES);
	tcase_add_loop_test(tc, test_ring_timestamps_follow_clock_monotonic, 0, 2);
	tcase_add_loop_test(tc, test_ring_deferred_records_take_the_publication_time, 0, 2);
	tcase_add_test(tc, test_ring_long_deferred_burst_stays_in_order);
	tcase_add_test(tc, test_ring_drop_publishes_deferred_records);
	tcase_add_test(tc, test_ring_no_timestamps_leaves_zero);
	tcase_add_loop_test(tc, test_ring_discard_publishes_nothing, 0, EVS_MODES);
	tcase_add_loop_test(tc, test_ring_drops_when_no_consumer, 0, EVS_MODES);
	tcase_add_loop_test(tc, test_ring_consume_batch_in_order, 0, EVS_MODES);
	tcase_add_loop_test(tc, test_ring_consume_all_pending_returns_under_a_busy_producer, 0, EVS_MODES);
	tcase_add_loop_test(tc, test_ring_peek_next_holds_records_until_released, 0, EVS_MODES);
	tcase_add_test(tc, test_ring_peek_next_window_full_says_why);
	tcase_add_test(tc, test_ring_peek_next_holds_many);
	tcase_add_loop_test(tc, test_ring_tensor_gathers_strided_view, 0, EVS_MODES);
	tcase_add_loop_test(tc, test_ring_tensor_scalar_empty_and_print, 0, EVS_MODES);
	tcase_add_loop_test(tc, test_ring_deferred_commit_publishes_in_order, 0, EVS_MODES);
	tcase_add_test(tc, test_ring_copy_is_exact);
	tcase_add_test(tc, test_ring_large_payloads_arrive_whole);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return evs_run_suite(ring_suite());
}

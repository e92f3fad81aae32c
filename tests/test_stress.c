/* SPDX-License-Identifier: MIT */
/*
 * Two threads, one stream, many events (EVS_STRESS_EVENTS, default 10 M):
 * random sizes from 0 to 64 KiB (mostly small), a producer that pauses now
 * and then, and a consumer that stalls and sleeps on the eventfd.
 *
 * Checks: sequence numbers increase and their gaps add up to the drops,
 * every payload byte is intact, produced == delivered + dropped exactly,
 * and no wakeup is lost: a consumer asleep for EVS_STRESS_WAKE_MS while a
 * record is pending fails the test.
 */
#include <linux/membarrier.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <stdatomic.h>

#include "helpers.h"
#include "evstream-private/introspect.h"

#define MAX_PAYLOAD (64 * 1024)

struct stress {
	struct evs_producer *p;
	struct evs_consumer *c;
	uint64_t events;
	atomic_bool done;
	/* producer results */
	uint64_t committed, dropped;
	/* consumer results */
	uint64_t delivered, gaps, sleeps, stalls, bytes;
	uint64_t last_seq;
	char error[256];
};

static uint64_t xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Mostly small events; one in 64 anywhere up to 64 KiB inclusive. */
static size_t pick_size(uint64_t *rng)
{
	uint64_t r = xorshift(rng);

	if ((r & 63) == 0)
		return (size_t)((r >> 8) % (MAX_PAYLOAD + 1));
	return (size_t)((r >> 8) % 257);
}

/* The payload of seq is a function of seq, checked word by word. */
static void fill(uint8_t *d, size_t n, uint64_t seq)
{
	size_t i = 0;

	for (; i + 8 <= n; i += 8) {
		uint64_t w = seq * 0x9e3779b97f4a7c15ull + i;

		memcpy(d + i, &w, 8);
	}
	for (; i < n; i++)
		d[i] = (uint8_t)(seq + i);
}

static bool intact(const uint8_t *d, size_t n, uint64_t seq)
{
	size_t i = 0;

	for (; i + 8 <= n; i += 8) {
		uint64_t w;

		memcpy(&w, d + i, 8);
		if (w != seq * 0x9e3779b97f4a7c15ull + i)
			return false;
	}
	for (; i < n; i++)
		if (d[i] != (uint8_t)(seq + i))
			return false;
	return true;
}

static void *producer_main(void *arg)
{
	struct stress *st = arg;
	uint64_t rng = 0x1234567;
	static uint8_t scratch[MAX_PAYLOAD];

	for (uint64_t seq = 0; seq < st->events; seq++) {
		size_t n = pick_size(&rng);
		int err;

		if (seq & 1) {
			/* zero-copy: fill in place */
			void *d = evs_producer__reserve(st->p, 0, 1, n);

			if (d) {
				fill(d, n, seq);
				err = evs_producer__commit(st->p, 0);
			} else {
				err = -errno;
			}
		} else {
			fill(scratch, n, seq);
			err = evs_producer__emit(st->p, 0, 1, scratch, n);
		}
		if (err == 0)
			st->committed++;
		else if (err == -ENOBUFS)
			st->dropped++;
		else {
			snprintf(st->error, sizeof(st->error), "emit seq %llu: %s",
				 (unsigned long long)seq, evs_strerror(err));
			break;
		}
		/* pause now and then so that the consumer goes to sleep */
		if ((xorshift(&rng) & 0x7ff) == 0)
			usleep((useconds_t)(xorshift(&rng) % 100));
	}
	atomic_store(&st->done, true);
	return NULL;
}

static int wake_ms(void)
{
	const char *s = getenv("EVS_STRESS_WAKE_MS");

	return s ? atoi(s) : 5000;
}

static void *consumer_main(void *arg)
{
	struct stress *st = arg;
	uint64_t rng = 0xabcdef;
	struct evs_record rec;
	bool first = true;

	for (;;) {
		int err = evs_consumer__peek(st->c, &rec);

		if (err == 0) {
			if (!first && rec.hdr.seq <= st->last_seq) {
				snprintf(st->error, sizeof(st->error), "seq went from %llu to %llu",
					 (unsigned long long)st->last_seq, (unsigned long long)rec.hdr.seq);
				return NULL;
			}
			st->gaps += rec.hdr.seq - (first ? 0 : st->last_seq + 1);
			if (rec.hdr.data_size > MAX_PAYLOAD || !intact(rec.data, rec.hdr.data_size, rec.hdr.seq)) {
				snprintf(st->error, sizeof(st->error), "payload of seq %llu (%llu bytes) corrupt",
					 (unsigned long long)rec.hdr.seq, (unsigned long long)rec.hdr.data_size);
				return NULL;
			}
			st->bytes += rec.hdr.data_size;
			st->last_seq = rec.hdr.seq;
			first = false;
			st->delivered++;
			evs_consumer__release(st->c);
			/* random stalls: the ring fills and the producer drops */
			if ((xorshift(&rng) & 0xffff) == 0) {
				st->stalls++;
				usleep((useconds_t)(xorshift(&rng) % 2000));
			}
			continue;
		}
		if (err != -EAGAIN) {
			snprintf(st->error, sizeof(st->error), "peek: %s", evs_strerror(err));
			return NULL;
		}
		if (atomic_load(&st->done)) {
			/* the producer finished before we looked: one last look */
			if (evs_consumer__peek(st->c, &rec) == -EAGAIN)
				return NULL;
			continue;
		}
		st->sleeps++;
		err = evs_consumer__wait(st->c, wake_ms());
		if (err == -ETIMEDOUT && evs_consumer__peek(st->c, &rec) == 0) {
			snprintf(st->error, sizeof(st->error),
				 "lost wakeup: a record was pending while the consumer slept %d ms", wake_ms());
			return NULL;
		}
		if (err && err != -ETIMEDOUT) {
			snprintf(st->error, sizeof(st->error), "wait: %s", evs_strerror(err));
			return NULL;
		}
	}
}

static uint64_t stress_events(void)
{
	const char *s = getenv("EVS_STRESS_EVENTS");

	return s ? strtoull(s, NULL, 10) : 10000000ull;
}

/* mode bit 0: huge pages; bit 1: the fenced wakeup (no membarrier) */
static void run_stress(int mode)
{
	bool huge = mode & 1, fenced = mode & 2;
	EVS_OPTS(evs_producer_opts, o, .ring_bytes = huge ? (2u << 20) : (256u << 10),
		 .max_events = 4096, .hugepages = huge ? EVS_HUGEPAGES_ON : EVS_HUGEPAGES_OFF);
	struct stress st = { .events = stress_events() };
	struct evs_stream_stats ss = { .sz = sizeof(ss) };
	pthread_t pt, ct;

	if (evs_hugepages_off("stress hugepages", huge))
		return;
	if (fenced)
		setenv("EVSTREAM_MEMBARRIER", "off", 1);
	st.p = evs_producer__new(NULL, 1, &o);
	if (!st.p && huge && evs_hugepages_short("stress hugepages", errno, 1))
		return;
	ck_assert_msg(st.p, "%s", evs_errmsg());
	st.c = evs_consumer__connect(NULL, 0, NULL);
	ck_assert_ptr_nonnull(st.c);
	ck_assert_int_eq(pthread_create(&ct, NULL, consumer_main, &st), 0);
	ck_assert_int_eq(pthread_create(&pt, NULL, producer_main, &st), 0);
	pthread_join(pt, NULL);
	pthread_join(ct, NULL);
	ck_assert_msg(!st.error[0], "%s", st.error);

	ck_assert_int_eq(evs_producer__stats(st.p, 0, &ss), 0);
	printf("stress %s/%s: %llu events, %llu delivered (%llu MiB), %llu dropped, "
	       "%llu consumer sleeps, %llu wakeups, %llu stalls\n", evs_mode_name(huge),
	       fenced ? "fence" : "membarrier",
	       (unsigned long long)st.events, (unsigned long long)st.delivered,
	       (unsigned long long)(st.bytes >> 20), (unsigned long long)ss.dropped,
	       (unsigned long long)st.sleeps, (unsigned long long)ss.wakeups,
	       (unsigned long long)st.stalls);
	ck_assert_uint_eq(ss.produced, st.events);
	ck_assert_uint_eq(ss.produced, st.delivered + ss.dropped);
	ck_assert_uint_eq(ss.committed, st.delivered);
	ck_assert_uint_eq(ss.dropped, st.dropped);
	ck_assert_uint_eq(ss.dropped, ss.dropped_events[EVS_DROP_RING_FULL]);
	/* the gaps in the sequence are exactly the drops (incl. any at the end) */
	ck_assert_uint_eq(st.gaps + (st.events - 1 - st.last_seq), ss.dropped);
	ck_assert_uint_eq(ss.released, st.delivered);
	/* at most one eventfd write per arming (+1: a stream starts armed);
	 * a consumer that keeps up does not arm at all */
	{
		struct evs_tuning cs;

		ck_assert_int_eq(evs__consumer_tuning(st.c, &cs), 0);
		if (fenced)
			ck_assert_uint_eq(cs.membarrier, 0);
		else if (syscall(__NR_membarrier, MEMBARRIER_CMD_QUERY, 0, 0) & MEMBARRIER_CMD_GLOBAL_EXPEDITED)
			ck_assert_uint_eq(cs.membarrier, 1);
		ck_assert_uint_le(ss.wakeups, cs.arms + 1);
		ck_assert_uint_ge(cs.arms, 1);
		ck_assert_uint_le(cs.arms, 2 * st.sleeps + 1);
	}
	ck_assert_uint_gt(st.sleeps, 0);
	evs_consumer__free(st.c);
	evs_producer__free(st.p);
}

START_TEST(test_stress_two_threads_exact_accounting)
{
	run_stress(_i);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("stress");
	TCase *tc = evs_tcase("stress");

	tcase_set_timeout(tc, 600);
	tcase_add_loop_test(tc, test_stress_two_threads_exact_accounting, 0, 2 * EVS_MODES);
	suite_add_tcase(s, tc);
	return evs_run_suite(s);
}

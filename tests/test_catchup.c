/* SPDX-License-Identifier: MIT */
/*
 * The consumer's catch-up pause (transport/consumer.c): after a look at the
 * producer's position that found records, the consumer that has read them
 * all waits EVSTREAM_CATCHUP_NS before it looks again. These tests pin down
 * when it pauses, that a pause never hides a record that is there when it
 * ends, and that the wakeup protocol around it stays exact. How much it
 * gains is evs-bench's to say, not a test's.
 */
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

#include "helpers.h"
#include "consumer.h"
#include "evstream-private/introspect.h"

struct pair {
	struct evs_producer *p;
	struct evs_consumer *c;
	int fd; /* the consumer's wakeup fd */
};

static void pair_open(struct pair *pr)
{
	EVS_OPTS(evs_producer_opts, o, .ring_bytes = 1u << 20, .max_events = 1024,
		 .hugepages = EVS_HUGEPAGES_OFF);

	pr->p = evs_producer__new(NULL, 1, &o);
	ck_assert_msg(pr->p, "producer: %s", evs_errmsg());
	pr->c = evs_consumer__connect(NULL, 0, NULL);
	ck_assert_msg(pr->c, "consumer: %s", evs_errmsg());
	pr->fd = evs_consumer__fd(pr->c);
}

static void pair_close(struct pair *pr)
{
	evs_consumer__free(pr->c);
	evs_producer__free(pr->p);
}

static struct evs_tuning tuning_of(const struct evs_consumer *c)
{
	struct evs_tuning t;

	ck_assert_int_eq(evs__consumer_tuning(c, &t), 0);
	return t;
}

static uint64_t pauses(const struct evs_consumer *c)
{
	return tuning_of(c).catchup_pauses;
}

static void emit(struct pair *pr, uint64_t v)
{
	ck_assert_int_eq(evs_producer__emit(pr->p, 0, 1, &v, sizeof(v)), 0);
}

/* Peek the next record, check it is v, release it. */
static void read_expect(struct pair *pr, uint64_t v)
{
	struct evs_record rec;
	uint64_t got;

	ck_assert_int_eq(evs_consumer__peek(pr->c, &rec), 0);
	ck_assert_uint_eq(rec.hdr.data_size, sizeof(got));
	memcpy(&got, rec.data, sizeof(got));
	ck_assert_uint_eq(got, v);
	ck_assert_int_eq(evs_consumer__release(pr->c), 0);
}

static void peek_empty(struct pair *pr)
{
	struct evs_record rec;

	ck_assert_int_eq(evs_consumer__peek(pr->c, &rec), -EAGAIN);
}

/* A record that comes after the reader found the ring empty this many
 * times: a stream sparser than the reader's looks when looks >=
 * EVS_CATCHUP_QUIET_LOOKS. */
static void read_after_looks(struct pair *pr, uint64_t v, int looks)
{
	for (int k = 0; k < looks; k++)
		peek_empty(pr);
	emit(pr, v);
	read_expect(pr, v);
}

START_TEST(test_catchup_default_and_environment)
{
	struct pair pr;

	unsetenv("EVSTREAM_CATCHUP_NS");
	pair_open(&pr);
	ck_assert_uint_eq(tuning_of(pr.c).catchup_ns, 2000);
	evs_consumer__free(pr.c);

	setenv("EVSTREAM_CATCHUP_NS", "250", 1);
	pr.c = evs_consumer__connect(NULL, 0, NULL);
	ck_assert_msg(pr.c, "consumer: %s", evs_errmsg());
	ck_assert_uint_eq(tuning_of(pr.c).catchup_ns, 250);
	evs_consumer__free(pr.c);

	setenv("EVSTREAM_CATCHUP_NS", "0", 1);
	pr.c = evs_consumer__connect(NULL, 0, NULL);
	ck_assert_msg(pr.c, "consumer: %s", evs_errmsg());
	ck_assert_uint_eq(tuning_of(pr.c).catchup_ns, 0);
	pair_close(&pr);
}
END_TEST

/* A bad value is refused by name, with what is allowed. */
static const char *const bad_values[] = { "soon", "-1", "1000001", "1us", "" };

START_TEST(test_catchup_bad_value_refused_by_name)
{
	EVS_OPTS(evs_producer_opts, o, .ring_bytes = 1u << 20, .max_events = 1024,
		 .hugepages = EVS_HUGEPAGES_OFF);
	struct evs_producer *p = evs_producer__new(NULL, 1, &o);
	struct evs_consumer *c;

	ck_assert_msg(p, "producer: %s", evs_errmsg());
	setenv("EVSTREAM_CATCHUP_NS", bad_values[_i], 1);
	c = evs_consumer__connect(NULL, 0, NULL);
	ck_assert_msg(!c, "EVSTREAM_CATCHUP_NS='%s' was taken", bad_values[_i]);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_msg(strstr(evs_errmsg(), "EVSTREAM_CATCHUP_NS"), "message: %s", evs_errmsg());
	ck_assert_msg(strstr(evs_errmsg(), "nanoseconds"), "message: %s", evs_errmsg());
	/* the refused connect claimed nothing */
	unsetenv("EVSTREAM_CATCHUP_NS");
	c = evs_consumer__connect(NULL, 0, NULL);
	ck_assert_msg(c, "consumer after a refused one: %s", evs_errmsg());
	evs_consumer__free(c);
	evs_producer__free(p);
}
END_TEST

/* It pauses only when records came faster than it looked (found after
 * fewer than EVS_CATCHUP_QUIET_LOOKS empty looks), once per spell. */
START_TEST(test_catchup_pauses_when_records_come_faster_than_looks)
{
	struct pair pr;

	unsetenv("EVSTREAM_CATCHUP_NS");
	pair_open(&pr);
	peek_empty(&pr);
	emit(&pr, 1);
	read_expect(&pr, 1);      /* the first records after idling ... */
	peek_empty(&pr);          /* ... are not followed by a pause */
	ck_assert_uint_eq(pauses(pr.c), 0);

	emit(&pr, 2);
	emit(&pr, 3);
	read_expect(&pr, 2);      /* found after one empty look: following */
	read_expect(&pr, 3);      /* known: no look */
	ck_assert_uint_eq(pauses(pr.c), 0);
	peek_empty(&pr);          /* caught up: pause, then look */
	ck_assert_uint_eq(pauses(pr.c), 1);
	peek_empty(&pr);          /* that look found nothing: look at once */
	peek_empty(&pr);
	ck_assert_uint_eq(pauses(pr.c), 1);
	pair_close(&pr);
}
END_TEST

/* A sparse stream, whose reader looks many times between records, is
 * never slowed: only a record found within fewer empty looks is. */
START_TEST(test_catchup_sparse_stream_never_pauses)
{
	struct pair pr;
	uint64_t v;

	unsetenv("EVSTREAM_CATCHUP_NS");
	pair_open(&pr);
	for (v = 1; v <= 20; v++)
		read_after_looks(&pr, v, EVS_CATCHUP_QUIET_LOOKS);
	ck_assert_uint_eq(pauses(pr.c), 0);
	/* one empty look fewer: records came faster than it looked */
	read_after_looks(&pr, v, EVS_CATCHUP_QUIET_LOOKS - 1);
	peek_empty(&pr);
	ck_assert_uint_eq(pauses(pr.c), 1);
	pair_close(&pr);
}
END_TEST

/* Records that fill EVS_CATCHUP_MIN_BYTES: a busy producer's spell. */
#define SPELL (EVS_CATCHUP_MIN_BYTES / 72 + 1) /* 8-byte payloads: 72-byte records */

static void emit_spell(struct pair *pr, uint64_t first)
{
	for (uint64_t v = first; v < first + SPELL; v++)
		emit(pr, v);
}

/* A record that is there when the pause ends is returned by that same
 * peek (or peek_next): the pause delays a look, it never answers empty. */
START_TEST(test_catchup_pause_never_hides_a_record)
{
	struct pair pr;
	struct evs_record rec;
	uint64_t v = 0, got;

	unsetenv("EVSTREAM_CATCHUP_NS");
	pair_open(&pr);
	emit(&pr, v);
	read_expect(&pr, v++);    /* after idling: not following */
	for (int spell = 0; spell < 10; spell++) {
		emit_spell(&pr, v);
		/* the first look finds a spell at once: following; each
		 * later one pauses first and finds a whole spell */
		for (uint64_t k = 0; k < SPELL; k++)
			read_expect(&pr, v++);
	}
	ck_assert_uint_eq(pauses(pr.c), 9);

	/* peek_next looks past the records it holds */
	emit_spell(&pr, v);
	for (uint64_t k = 0; k < SPELL; k++) {
		ck_assert_int_eq(k ? evs_consumer__peek_next(pr.c, &rec) :
				     evs_consumer__peek(pr.c, &rec), 0);
		memcpy(&got, rec.data, sizeof(got));
		ck_assert_uint_eq(got, v + k);
	}
	ck_assert_uint_eq(pauses(pr.c), 10);
	emit_spell(&pr, v + SPELL);
	ck_assert_int_eq(evs_consumer__peek_next(pr.c, &rec), 0);
	memcpy(&got, rec.data, sizeof(got));
	ck_assert_uint_eq(got, v + SPELL);
	ck_assert_uint_eq(pauses(pr.c), 11);
	for (uint64_t k = 1; k < SPELL; k++)
		ck_assert_int_eq(evs_consumer__peek_next(pr.c, &rec), 0);
	ck_assert_int_eq(evs_consumer__peek_next(pr.c, &rec), -EAGAIN);
	ck_assert_uint_eq(pauses(pr.c), 12);
	for (uint64_t k = 0; k < 2 * SPELL; k++)
		ck_assert_int_eq(evs_consumer__release(pr.c), 0);
	pair_close(&pr);
}
END_TEST

/* A pause that finds less than a busy spell (records 1 us apart, a 2 us
 * pause) ends the pausing: the records after it are not delayed. */
START_TEST(test_catchup_stops_when_a_pause_finds_little)
{
	struct pair pr;

	unsetenv("EVSTREAM_CATCHUP_NS");
	pair_open(&pr);
	emit(&pr, 1);
	read_expect(&pr, 1);
	emit(&pr, 2);
	read_expect(&pr, 2);      /* found at once: following */
	emit(&pr, 3);
	read_expect(&pr, 3);      /* paused, found one record: stop */
	ck_assert_uint_eq(pauses(pr.c), 1);
	for (uint64_t v = 4; v < 24; v++)
		read_after_looks(&pr, v, EVS_CATCHUP_QUIET_LOOKS);
	peek_empty(&pr);
	ck_assert_uint_eq(pauses(pr.c), 1);
	pair_close(&pr);
}
END_TEST

START_TEST(test_catchup_off_never_pauses)
{
	struct pair pr;

	setenv("EVSTREAM_CATCHUP_NS", "0", 1);
	pair_open(&pr);
	for (uint64_t v = 1; v <= 10; v++) {
		emit(&pr, v);
		read_expect(&pr, v);
		peek_empty(&pr);
	}
	ck_assert_uint_eq(pauses(pr.c), 0);
	pair_close(&pr);
}
END_TEST

static bool fd_readable(int fd)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };

	return poll(&pfd, 1, 0) == 1;
}

/* prepare_wait finds nothing and arms (having paused want_pauses times
 * in all, armed want_arms times): the fd is not readable until record v
 * comes, and is then; v is read. */
static void arm_then_woken_by(struct pair *pr, uint64_t v, uint64_t want_pauses, uint64_t want_arms)
{
	ck_assert_int_eq(evs_consumer__prepare_wait(pr->c), 0);
	ck_assert_uint_eq(pauses(pr->c), want_pauses);
	ck_assert_uint_eq(tuning_of(pr->c).arms, want_arms);
	ck_assert(!fd_readable(pr->fd));
	emit(pr, v);
	ck_assert(fd_readable(pr->fd));
	read_expect(pr, v);
}

/* prepare_wait arms only when the ring is empty, and the fd is then
 * readable exactly when records come. */
START_TEST(test_catchup_prepare_wait_stays_exact)
{
	struct pair pr;

	unsetenv("EVSTREAM_CATCHUP_NS");
	pair_open(&pr);
	emit(&pr, 1);
	emit(&pr, 2);
	read_expect(&pr, 1);
	/* a record we know of: nothing to wait for, no arm */
	ck_assert_int_eq(evs_consumer__prepare_wait(pr.c), -EAGAIN);
	read_expect(&pr, 2);
	/* caught up after records: look at once, find 3, do not arm */
	emit(&pr, 3);
	ck_assert_int_eq(evs_consumer__prepare_wait(pr.c), -EAGAIN);
	read_expect(&pr, 3);
	/* 3 was found at once (records came faster than we looked), so
	 * this look pauses first; it finds nothing and arms */
	arm_then_woken_by(&pr, 4, 1, 1);
	/* the first record after a sleep is not followed by a pause */
	peek_empty(&pr);
	ck_assert_uint_eq(pauses(pr.c), 1);
	pair_close(&pr);
}
END_TEST

/* After reading a busy producer's records, prepare_wait (which the
 * debug-stream API calls after every read) pauses before it looks, as
 * peek does; a record that is there when the pause ends keeps it from
 * arming, and with none it arms and the fd stays exact. */
START_TEST(test_catchup_prepare_wait_pauses_when_following)
{
	struct pair pr;

	unsetenv("EVSTREAM_CATCHUP_NS");
	pair_open(&pr);
	emit(&pr, 1);
	read_expect(&pr, 1);      /* after idling: not following */
	ck_assert_int_eq(evs_consumer__prepare_wait(pr.c), 0); /* empty: armed */
	ck_assert_uint_eq(pauses(pr.c), 0);
	ck_assert_uint_eq(tuning_of(pr.c).arms, 1);
	emit(&pr, 2);
	emit(&pr, 3);
	read_expect(&pr, 2);      /* the first look after a sleep: not following */
	read_expect(&pr, 3);
	emit(&pr, 4);
	emit(&pr, 5);
	/* what we knew of is read; the look finds 4 and 5 at once, so the
	 * next catch-up is one that follows a busy producer */
	ck_assert_int_eq(evs_consumer__prepare_wait(pr.c), -EAGAIN);
	ck_assert_uint_eq(pauses(pr.c), 0);
	read_expect(&pr, 4);
	read_expect(&pr, 5);
	emit(&pr, 6);
	/* following: pause, then look; 6 is there, so no arm */
	ck_assert_int_eq(evs_consumer__prepare_wait(pr.c), -EAGAIN);
	ck_assert_uint_eq(pauses(pr.c), 1);
	ck_assert_uint_eq(tuning_of(pr.c).arms, 1);
	read_expect(&pr, 6);
	/* that pause found less than a spell: the next look is at once,
	 * finds nothing, and arms */
	arm_then_woken_by(&pr, 7, 1, 2);
	pair_close(&pr);
}
END_TEST

/* Two threads: with pauses in the hand-over, every record arrives once, in
 * order, and a consumer that sleeps between spells is woken for the last.
 * The producer emits spells of SPELL_RECORDS until told to stop; the
 * consumer stops it once it has read TWO_THREADS_MIN records and paused,
 * or TWO_THREADS_MAX records (a pause needs the two threads to run at
 * once, which a loaded machine may not give a short run). */
#define SPELL_RECORDS 4096
#define TWO_THREADS_MIN 200000
#define TWO_THREADS_MAX 4000000

struct spell_ctx {
	struct evs_producer *p;
	atomic_bool stop;
	atomic_bool done;
	uint64_t sent; /* written before done */
};

static void *spell_producer(void *arg)
{
	struct spell_ctx *x = arg;
	uint64_t v = 0;

	while (!atomic_load_explicit(&x->stop, memory_order_relaxed)) {
		for (int k = 0; k < SPELL_RECORDS; k++, v++)
			while (evs_producer__emit(x->p, 0, 1, &v, sizeof(v)) == -ENOBUFS)
				;
		usleep(200); /* let the consumer sleep between spells */
	}
	x->sent = v;
	/* release: every record and sent before done; pairs with the
	 * consumer's acquire load of done */
	atomic_store_explicit(&x->done, true, memory_order_release);
	return NULL;
}

START_TEST(test_catchup_two_threads_in_order_and_woken)
{
	struct spell_ctx x = { 0 };
	struct pair pr;
	pthread_t t;
	uint64_t want = 0;
	bool stopping = false;

	unsetenv("EVSTREAM_CATCHUP_NS");
	pair_open(&pr);
	x.p = pr.p;
	ck_assert_int_eq(pthread_create(&t, NULL, spell_producer, &x), 0);
	for (;;) {
		struct evs_record rec;
		uint64_t got;
		int err;

		if (!stopping && want >= TWO_THREADS_MIN &&
		    (pauses(pr.c) > 0 || want >= TWO_THREADS_MAX)) {
			atomic_store_explicit(&x.stop, true, memory_order_relaxed);
			stopping = true;
		}
		err = evs_consumer__peek(pr.c, &rec);
		if (err == -EAGAIN) {
			/* acquire: pairs with the producer's release of done;
			 * an empty look after it means everything was read, a
			 * record is held and read at the next turn */
			if (stopping && atomic_load_explicit(&x.done, memory_order_acquire)) {
				if (evs_consumer__peek(pr.c, &rec) == -EAGAIN)
					break;
				continue;
			}
			/* no timeout while records still come: a lost wakeup
			 * hangs here, and the test's deadline fails it */
			err = evs_consumer__wait(pr.c, stopping ? 10 : -1);
			EVS_CHECK(err == 0 || (stopping && err == -ETIMEDOUT), "wait: %d", err);
			continue;
		}
		EVS_CHECK(err == 0, "peek: %d", err);
		memcpy(&got, rec.data, sizeof(got));
		EVS_CHECK(got == want, "got %" PRIu64 ", want %" PRIu64, got, want);
		evs_consumer__release(pr.c);
		want++;
	}
	pthread_join(t, NULL);
	ck_assert_uint_eq(want, x.sent);
	ck_assert_msg(pauses(pr.c) > 0, "no pause in %" PRIu64 " records", want);
	pair_close(&pr);
}
END_TEST

static Suite *catchup_suite(void)
{
	Suite *s = suite_create("catchup");
	TCase *tc = evs_tcase("catchup");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_catchup_default_and_environment);
	tcase_add_loop_test(tc, test_catchup_bad_value_refused_by_name, 0,
			    (int)(sizeof(bad_values) / sizeof(bad_values[0])));
	tcase_add_test(tc, test_catchup_pauses_when_records_come_faster_than_looks);
	tcase_add_test(tc, test_catchup_sparse_stream_never_pauses);
	tcase_add_test(tc, test_catchup_pause_never_hides_a_record);
	tcase_add_test(tc, test_catchup_stops_when_a_pause_finds_little);
	tcase_add_test(tc, test_catchup_off_never_pauses);
	tcase_add_test(tc, test_catchup_prepare_wait_stays_exact);
	tcase_add_test(tc, test_catchup_prepare_wait_pauses_when_following);
	tcase_add_test(tc, test_catchup_two_threads_in_order_and_woken);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return evs_run_suite(catchup_suite());
}

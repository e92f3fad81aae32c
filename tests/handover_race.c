/* SPDX-License-Identifier: MIT */
/*
 * One interleaving of a consumer's handover with an emit in flight, which
 * tests/handover_race.py (gdb) makes happen on every run:
 *
 *  1. consumer A reads each record as it comes, so the producer last
 *     looked at A's position a ring ago, and the emit that finds its
 *     cached room used up stops in stream_emit_full() (gdb holds it);
 *  2. A leaves with everything read; B connects, and its handover stops
 *     when it begins to walk the records from the position the producer
 *     last accepted (gdb holds it);
 *  3. the producer goes on: it accepts A's position and writes its record
 *     over the ring below it, over the records the handover walks;
 *  4. the handover goes on.
 *
 * Every record committed must reach A or B. Exit 0 when it did, 1 when
 * one was lost, 2 when the interleaving did not happen.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "evstream/evstream.h"

static struct evs_producer *producer;
static struct evs_consumer *b;
static atomic_int go, emitted, stop;

/* One emit of 8 bytes each time main says so. */
static void *produce(void *arg)
{
	(void)arg;
	for (int i = 1; !atomic_load(&stop); i++) {
		uint64_t v = (uint64_t)i;

		while (atomic_load(&go) < i && !atomic_load(&stop))
			usleep(100);
		if (atomic_load(&stop))
			break;
		if (evs_producer__emit(producer, 0, 1, &v, sizeof(v)))
			fprintf(stderr, "handover_race: emit %d dropped: %s\n", i, evs_errmsg());
		atomic_store(&emitted, i);
	}
	return NULL;
}

static void *connect_b(void *arg)
{
	(void)arg;
	b = evs_consumer__connect(NULL, 0, NULL);
	return NULL;
}

static int drain(struct evs_consumer *c)
{
	struct evs_record r;
	int n = 0;

	while (evs_consumer__peek(c, &r) == 0) {
		evs_consumer__release(c);
		n++;
	}
	return n;
}

/* Wait up to ms for emitted to reach n. */
static bool emitted_by(int n, int ms)
{
	for (int t = 0; t < ms && atomic_load(&emitted) < n; t++)
		usleep(1000);
	return atomic_load(&emitted) >= n;
}

int main(void)
{
	EVS_OPTS(evs_producer_opts, o, .ring_bytes = 4096, .max_events = 1 << 20,
		 .hugepages = EVS_HUGEPAGES_OFF);
	struct evs_stream_stats st = { .sz = sizeof(st) };
	struct evs_consumer *a;
	pthread_t tp, tb;
	int got = 0, i, held;

	producer = evs_producer__new(NULL, 1, &o);
	a = producer ? evs_consumer__connect(NULL, 0, NULL) : NULL;
	if (!a) {
		fprintf(stderr, "handover_race: %s\n", evs_errmsg());
		return 2;
	}
	pthread_create(&tp, NULL, produce, NULL);
	/* a ring holds 56 records of 72 bytes: the 57th emit looks at A's
	 * position again; a lap more is room enough to see it held */
	for (i = 1; i <= 200; i++) {
		atomic_store(&go, i);
		if (!emitted_by(i, 2000))
			break;
		got += drain(a);
	}
	held = i;
	if (held > 200) {
		fprintf(stderr, "handover_race: no emit was held (is gdb driving this?)\n");
		atomic_store(&stop, 1);
		pthread_join(tp, NULL);
		return 2;
	}
	printf("emit %d held; A read %d records and leaves; B connects\n", held, got);
	fflush(stdout);
	evs_consumer__free(a);
	pthread_create(&tb, NULL, connect_b, NULL);
	pthread_join(tb, NULL);
	if (!b) {
		fprintf(stderr, "handover_race: B: %s\n", evs_errmsg());
		return 2;
	}
	if (!emitted_by(held, 10000)) {
		fprintf(stderr, "handover_race: the held emit never ended\n");
		return 2;
	}
	got += drain(b);
	evs_consumer__stats(b, &st);
	printf("committed %llu, A and B read %d: %s\n", (unsigned long long)st.committed, got,
	       (uint64_t)got == st.committed ? "nothing lost" : "a committed record was lost");
	atomic_store(&stop, 1);
	pthread_join(tp, NULL);
	evs_consumer__free(b);
	evs_producer__free(producer);
	return (uint64_t)got == st.committed ? 0 : 1;
}

/* SPDX-License-Identifier: MIT */
/*
 * What one 64-byte event costs each side in CPU time, with no other core in
 * the way: the cost the runtime pays per event, apart from what moving the
 * lines to the other core adds (the throughput part measures that).
 *
 * One thread on the producer's CPU alternates: commit BATCH records into a
 * 2 MiB ring (timed), then read and release them all (timed). The ring and
 * the records stay in this core's L2, so the figure is the library's own
 * path: the calls, the checks, the header, the positions. The bare ring of
 * bare.c, moving the same records the same way, is measured next to it,
 * also with one TSC read per record: the floor of a timestamped record.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bare.h"
#include "bench.h"
#include "evstream/evstream.h"

#define COST_RING   (2u << 20)
#define COST_BATCH  4096     /* 4096 records of 128 bytes: a quarter of the ring */
#define COST_SIZE   64

static volatile uint64_t sink;

/* The fastest pass of BATCH records, per side, over every call: the cost
 * with nothing else on the CPU (the host's interruptions only ever add). */
struct cost {
	double prod_ns, cons_ns;
	bool ok;
};

static void best_of(struct cost *b, uint64_t t0, uint64_t t1, uint64_t t2)
{
	double p = (double)(t1 - t0) / COST_BATCH, c = (double)(t2 - t1) / COST_BATCH;

	b->prod_ns = p < b->prod_ns ? p : b->prod_ns;
	b->cons_ns = c < b->cons_ns ? c : b->cons_ns;
}

static void cost_evstream(struct cost *b, const uint8_t *src, int passes, bool timestamps)
{
	EVS_OPTS(evs_producer_opts, po, .ring_bytes = COST_RING, .max_events = COST_RING / 64,
		 .hugepages = EVS_HUGEPAGES_OFF, .no_timestamps = !timestamps);
	struct evs_producer *p = evs_producer__new(NULL, 1, &po);
	struct evs_consumer *c = p ? evs_consumer__connect(NULL, 0, NULL) : NULL;
	struct evs_record rec;

	if (!c) {
		warn("SKIP per-event cost: %s", evs_errmsg());
		evs_producer__free(p);
		return;
	}
	for (int k = 0; k < passes; k++) {
		uint64_t t0 = cli_now_ns(), t1, t2;

		for (int i = 0; i < COST_BATCH; i++) {
			void *d = evs_producer__reserve(p, 0, 1, COST_SIZE);

			if (!d) {
				warn("per-event cost: reserve: %s", strerror(errno));
				goto out;
			}
			memcpy(d, src, COST_SIZE);
			evs_producer__commit(p, 0);
		}
		t1 = cli_now_ns();
		for (int i = 0; i < COST_BATCH; i++) {
			if (evs_consumer__peek(c, &rec)) {
				warn("per-event cost: peek found the ring empty");
				goto out;
			}
			sink += touch(rec.data, rec.hdr.data_size);
			evs_consumer__release(c);
		}
		t2 = cli_now_ns();
		best_of(b, t0, t1, t2);
	}
	b->ok = true;
out:
	evs_consumer__free(c);
	evs_producer__free(p);
}

static __attribute__((always_inline)) inline void cost_bare_pass(struct bare_ring *ring,
								  struct bare_side *prod,
								  const uint8_t *src, uint64_t *n,
								  bool stamp)
{
	/* a batch is a quarter of the ring: never full, never empty */
	for (int i = 0; i < COST_BATCH; i++)
		bare_push_stamped(ring, prod, src, COST_SIZE, (*n)++, stamp);
}

static void cost_bare(struct cost *b, const uint8_t *src, int passes, bool stamp)
{
	struct bare_ring ring = { .cap = COST_RING };
	struct bare_side prod = { 0 }, cons = { 0 };
	size_t area = COST_RING + bare_rec_len(COST_SIZE);
	uint64_t n = 0;

	ring.area = bench_area(area);
	if (!ring.area)
		return;
	for (int k = 0; k < passes; k++) {
		uint64_t t0 = cli_now_ns(), t1, t2;

		if (stamp)
			cost_bare_pass(&ring, &prod, src, &n, true);
		else
			cost_bare_pass(&ring, &prod, src, &n, false);
		t1 = cli_now_ns();
		for (int i = 0; i < COST_BATCH; i++) {
			const uint8_t *r = bare_peek(&ring, &cons);
			/* volatile, not synchronisation (this thread wrote the
			 * header): both halves are in this one function, and the
			 * size must be a load from the header, as bare.c's
			 * consumer makes, never the push pass's constant */
			uint64_t size = *(const volatile uint64_t *)r;

			sink += touch(r + 64, size);
			bare_release(&ring, &cons, size);
		}
		t2 = cli_now_ns();
		best_of(b, t0, t1, t2);
	}
	bench_area_free(ring.area, area);
	b->ok = true;
}

static void cost_report(const struct cost *e, const struct cost *b, const struct cost *bts,
			bool timestamps, int passes)
{
	rep_obj_begin();
	rep_int("payload", COST_SIZE);
	rep_int("timestamps", timestamps);
	rep_int("ring_bytes", COST_RING);
	rep_int("passes", (uint64_t)passes);
	rep_num("producer_ns", e->ok ? e->prod_ns : NAN);
	rep_num("consumer_ns", e->ok ? e->cons_ns : NAN);
	rep_num("bare_producer_ns", b->ok ? b->prod_ns : NAN);
	rep_num("bare_consumer_ns", b->ok ? b->cons_ns : NAN);
	/* the bare ring with one TSC read per record: the timestamp's floor */
	rep_num("bare_ts_producer_ns", bts->ok ? bts->prod_ns : NAN);
	rep_num("x_bare_producer", e->ok && b->ok ? ratio(e->prod_ns, b->prod_ns) : NAN);
	rep_num("x_bare_consumer", e->ok && b->ok ? ratio(e->cons_ns, b->cons_ns) : NAN);
	rep_obj_end();
}

static void cost_say(const char *what, const struct cost *e, const struct cost *b)
{
	if (e->ok)
		say("%-34s %8.2f ns %8.2f ns   (x bare %.2f / %.2f)\n", what, e->prod_ns, e->cons_ns,
		    ratio(e->prod_ns, b->prod_ns), ratio(e->cons_ns, b->cons_ns));
}

void cost_run(void)
{
	uint8_t src[COST_SIZE];
	int passes = bopt.quick ? 200 : 1000;
	struct cost e = { INFINITY, INFINITY, false }, b = e, bts = e, ets = e;

	memset(src, 0xa5, sizeof(src));
	progress("per-event cost");
	/* halves interleaved, so that all see the same states of the host */
	for (int half = 0; half < 2; half++) {
		cost_bare(&b, src, passes / 2, false);
		cost_bare(&bts, src, passes / 2, true);
		cost_evstream(&e, src, passes / 2, false);
		cost_evstream(&ets, src, passes / 2, true);
	}
	progress_done();
	/* with timestamps too: the default, whose clock read (an rdtsc) is a
	 * share of the producer's time that differs most between hosts */
	say("\n== CPU time per 64-byte event, one core, ring in its L2 (best of %d passes of %d)\n",
	    passes, COST_BATCH);
	say("%-34s %10s %10s\n", "", "producer", "consumer");
	if (b.ok)
		say("%-34s %8.2f ns %8.2f ns\n", "  limit: bare SPSC ring", b.prod_ns, b.cons_ns);
	if (bts.ok)
		say("%-34s %8.2f ns\n", "  limit: bare ring + TSC read", bts.prod_ns);
	cost_say("  reserve/commit, peek, no-ts", &e, &b);
	cost_say("  reserve/commit, peek (default)", &ets, &b);
	rep_section("cost");
	cost_report(&e, &b, &bts, false, passes);
	cost_report(&ets, &b, &bts, true, passes);
	rep_section_end();
}

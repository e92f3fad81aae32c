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
 * bare.c, moving the same records the same way, is measured next to it.
 */
#include <errno.h>
#include <math.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "evstream/evstream.h"

#define COST_RING   (2u << 20)
#define COST_BATCH  4096     /* 4096 records of 128 bytes: a quarter of the ring */
#define COST_SIZE   64

static volatile uint64_t sink;

struct cost {
	double prod_ns, cons_ns;
	bool ok;
};

/* The fastest of several passes of BATCH records: the cost with nothing
 * else on the CPU (the host's interruptions only ever add to it). */
struct pass_best {
	double prod, cons;
};

static void best_of(struct pass_best *b, uint64_t t0, uint64_t t1, uint64_t t2)
{
	double p = (double)(t1 - t0) / COST_BATCH, c = (double)(t2 - t1) / COST_BATCH;

	b->prod = p < b->prod ? p : b->prod;
	b->cons = c < b->cons ? c : b->cons;
}

static struct cost cost_evstream(const uint8_t *src, int passes)
{
	EVS_OPTS(evs_producer_opts, po, .ring_bytes = COST_RING, .max_events = COST_RING / 64,
		 .hugepages = EVS_HUGEPAGES_OFF, .no_timestamps = true);
	struct pass_best b = { 1e9, 1e9 };
	struct cost out = { 0 };
	struct evs_producer *p = evs_producer__new(NULL, 1, &po);
	struct evs_consumer *c = p ? evs_consumer__connect(NULL, 0, NULL) : NULL;
	struct evs_record rec;

	if (!c) {
		warn("SKIP per-event cost: %s", evs_errmsg());
		evs_producer__free(p);
		return out;
	}
	for (int k = 0; k < passes; k++) {
		uint64_t t0 = bench_now(), t1, t2;

		for (int i = 0; i < COST_BATCH; i++) {
			void *d = evs_producer__reserve(p, 0, 1, COST_SIZE);

			if (!d) {
				warn("per-event cost: reserve: %s", strerror(errno));
				goto out;
			}
			memcpy(d, src, COST_SIZE);
			evs_producer__commit(p, 0);
		}
		t1 = bench_now();
		for (int i = 0; i < COST_BATCH; i++) {
			if (evs_consumer__peek(c, &rec)) {
				warn("per-event cost: peek found the ring empty");
				goto out;
			}
			sink += touch(rec.data, rec.hdr.data_size);
			evs_consumer__release(c);
		}
		t2 = bench_now();
		best_of(&b, t0, t1, t2);
	}
	out = (struct cost){ b.prod, b.cons, true };
out:
	evs_consumer__free(c);
	evs_producer__free(p);
	return out;
}

/* bare.c's ring, one thread: the same records, nothing but positions. */
static struct cost cost_bare(const uint8_t *src, int passes)
{
	uint8_t *ring = aligned_alloc(4096, COST_RING);
	struct pass_best b = { 1e9, 1e9 };
	uint64_t len = 64 + COST_SIZE, ppos = 0, cpos = 0, n = 0;
	/* the positions the other side would read, as in bare.c */
	static _Atomic uint64_t prod_pos __attribute__((aligned(128)));
	static _Atomic uint64_t cons_pos __attribute__((aligned(128)));

	if (!ring)
		return (struct cost){ 0 };
	memset(ring, 0, COST_RING);
	atomic_store(&prod_pos, 0);
	atomic_store(&cons_pos, 0);
	for (int k = 0; k < passes; k++) {
		uint64_t t0 = bench_now(), t1, t2;

		for (int i = 0; i < COST_BATCH; i++) {
			uint64_t *h = (uint64_t *)(ring + ppos % COST_RING);

			if (ppos + len - atomic_load_explicit(&cons_pos, memory_order_relaxed) > COST_RING)
				break; /* cannot happen: a batch is a quarter of the ring */
			memcpy(h + 8, src, COST_SIZE);
			h[0] = COST_SIZE;
			h[1] = 1;
			h[2] = n++;
			ppos += len;
			atomic_store_explicit(&prod_pos, ppos, memory_order_release);
		}
		t1 = bench_now();
		for (int i = 0; i < COST_BATCH; i++) {
			const uint8_t *r = ring + cpos % COST_RING;
			uint64_t size;

			if (cpos == atomic_load_explicit(&prod_pos, memory_order_acquire))
				break;
			size = *(const volatile uint64_t *)r;
			sink += touch(r + 64, size);
			cpos += 64 + ((size + 7) & ~(uint64_t)7);
			atomic_store_explicit(&cons_pos, cpos, memory_order_release);
		}
		t2 = bench_now();
		best_of(&b, t0, t1, t2);
	}
	free(ring);
	return (struct cost){ b.prod, b.cons, true };
}

void cost_run(void)
{
	uint8_t src[COST_SIZE];
	int passes = bopt.quick ? 200 : 1000;
	struct cost e, b;

	cpu_set_t was;
	bool restore = sched_getaffinity(0, sizeof(was), &was) == 0;

	memset(src, 0xa5, sizeof(src));
	if (bench_pin(BENCH_CPU_PRODUCER))
		warn("per-event cost: cannot pin to CPU %d; figures may move", BENCH_CPU_PRODUCER);
	progress("per-event cost");
	/* interleaved, so that both see the same state of the host */
	b = cost_bare(src, passes / 2);
	e = cost_evstream(src, passes / 2);
	{
		struct cost b2 = cost_bare(src, passes / 2), e2 = cost_evstream(src, passes / 2);

		if (b2.ok && b2.prod_ns < b.prod_ns)
			b.prod_ns = b2.prod_ns;
		if (b2.ok && b2.cons_ns < b.cons_ns)
			b.cons_ns = b2.cons_ns;
		if (e2.ok && e.ok && e2.prod_ns < e.prod_ns)
			e.prod_ns = e2.prod_ns;
		if (e2.ok && e.ok && e2.cons_ns < e.cons_ns)
			e.cons_ns = e2.cons_ns;
	}
	progress_done();
	if (restore)
		sched_setaffinity(0, sizeof(was), &was);
	say("\n== CPU time per 64-byte event, one core, ring in its L2 (best of %d passes of %d)\n",
	    passes, COST_BATCH);
	say("%-34s %10s %10s\n", "", "producer", "consumer");
	if (b.ok)
		say("%-34s %8.2f ns %8.2f ns\n", "  limit: bare SPSC ring", b.prod_ns, b.cons_ns);
	if (e.ok)
		say("%-34s %8.2f ns %8.2f ns   (x bare %.2f / %.2f)\n",
		    "  zero-copy reserve/commit, peek", e.prod_ns, e.cons_ns,
		    ratio(e.prod_ns, b.prod_ns), ratio(e.cons_ns, b.cons_ns));
	rep_section("cost");
	rep_obj_begin();
	rep_int("payload", COST_SIZE);
	rep_int("ring_bytes", COST_RING);
	rep_int("passes", (uint64_t)passes);
	rep_num("producer_ns", e.ok ? e.prod_ns : NAN);
	rep_num("consumer_ns", e.ok ? e.cons_ns : NAN);
	rep_num("bare_producer_ns", b.ok ? b.prod_ns : NAN);
	rep_num("bare_consumer_ns", b.ok ? b.cons_ns : NAN);
	rep_num("x_bare_producer", e.ok ? ratio(e.prod_ns, b.prod_ns) : NAN);
	rep_num("x_bare_consumer", e.ok ? ratio(e.cons_ns, b.cons_ns) : NAN);
	rep_obj_end();
	rep_section_end();
}

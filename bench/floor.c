/* SPDX-License-Identifier: MIT */
/*
 * The least a timestamped message can do between the two CPUs, run at the
 * busy-poll case's offered rate and count, right before it: the floor
 * under its percentiles, the tail included, in the same round.
 *
 * Each message is one cache line of its own: the producer reads the clock,
 * stores the time, then the sequence number with release; the consumer
 * polls the next slot's line and reads the clock when the number appears.
 * No shared index, no header, no checks: one line crosses per message.
 * Both sides read the TSC where there is one (the producer's read not
 * ordered, as evstream's is not; the consumer's after an lfence, so it
 * cannot be taken before the number was seen), and the difference is
 * converted with a rate measured against cli_now_ns(); elsewhere both read
 * cli_now_ns().
 * A thread that is not running when its message is due (the host took the
 * vCPU) delays it exactly as it delays evstream's record, so the tail of
 * this figure is the machine's, not a transport's.
 */
#include "bench.h"

/* bench_stamp() after the loads before it (the sample's end) */
static inline uint64_t stamp_after_load(void)
{
#if BENCH_HAVE_TSC
	_mm_lfence();
#endif
	return bench_stamp();
}

#define FLOOR_SLOTS 65536u /* 4 MiB: a consumer away for 65 ms at 1 M/s */

struct floor_slot {
	_Atomic uint64_t seq; /* n + 1 once message n is in; the release is the last store */
	uint64_t ts;
} __attribute__((aligned(64)));

/* Ways of sending the message other than the floor's, for the probe
 * (evs-bench --only oneway): each takes one thing away or changes it. */
struct floor_way {
	const char *name;
	bool no_pause;    /* the consumer polls without cpu_relax() */
	bool one_line;    /* every message in slot 0 instead of a new line each */
	bool stamp_after; /* the producer reads the clock after its store */
};

static const struct floor_way floor_default = { .name = "one-line message" };

static struct {
	struct floor_slot *slot;
	uint64_t n, interval_ns;
	double ns_per_stamp;
	struct floor_way way;
	uint64_t *sent_at; /* stamp_after: the producer's stamps, by message */
	uint64_t *seen_at; /* stamp_after: the consumer's */
	_Atomic uint64_t consumed __attribute__((aligned(128))); /* every 1024 messages */
	struct hist h;
} fl;

static void *floor_producer(void *arg)
{
	uint64_t t0 = cli_now_ns() + 1000000;
	const struct floor_way w = fl.way;

	(void)arg;
	for (uint64_t i = 0; i < fl.n; i++) {
		struct floor_slot *s = &fl.slot[w.one_line ? 0 : i % FLOOR_SLOTS];

		bench_spin_until(t0 + i * fl.interval_ns);
		/* never overwrite a slot the consumer has not passed;
		 * acquire pairs with the release of consumed in floor_consumer */
		while (i - smp_load_acquire(&fl.consumed) >=
		       (w.one_line ? 1 : FLOOR_SLOTS))
			cpu_relax();
		if (w.stamp_after) {
			/* pairs with smp_load_acquire(&s->seq) in floor_consumer(),
			 * but publishes nothing: no ts this way, and sent_at is
			 * read after the join. Release all the same: the same
			 * store as the default way's */
			smp_store_release(&s->seq, i + 1);
			fl.sent_at[i] = bench_stamp();
			continue;
		}
		s->ts = bench_stamp();
		/* release: ts is visible before seq; pairs with the consumer's acquire */
		smp_store_release(&s->seq, i + 1);
	}
	return NULL;
}

static void *floor_consumer(void *arg)
{
	const struct floor_way w = fl.way;

	(void)arg;
	for (uint64_t i = 0; i < fl.n; i++) {
		struct floor_slot *s = &fl.slot[w.one_line ? 0 : i % FLOOR_SLOTS];
		uint64_t now, d;

		/* acquire pairs with the producer's release of seq: ts is in */
		while (smp_load_acquire(&s->seq) != i + 1)
			if (!w.no_pause)
				cpu_relax();
		now = stamp_after_load();
		if (w.stamp_after) {
			fl.seen_at[i] = now;
		} else {
			d = now > s->ts ? now - s->ts : 0;
			hist_add(&fl.h, (uint64_t)((double)d * fl.ns_per_stamp + 0.5));
		}
		if (w.one_line || (i & 1023) == 1023)
			/* release: the slots before i are read; pairs with the
			 * producer's acquire of consumed */
			smp_store_release(&fl.consumed, i + 1);
	}
	return NULL;
}

/* Nanoseconds per unit of bench_stamp(), over 20 ms. */
static double stamp_rate(void)
{
	uint64_t t0, c0, t1, c1;

	if (!BENCH_HAVE_TSC)
		return 1.0;
	t0 = cli_now_ns();
	c0 = bench_stamp();
	bench_spin_until(t0 + 20000000);
	t1 = cli_now_ns();
	c1 = bench_stamp();
	return c1 > c0 ? (double)(t1 - t0) / (double)(c1 - c0) : 1.0;
}

/* n messages at rate the way w; their latencies go to fl.h. -1 when there
 * is no memory for them. */
static int floor_send(const struct floor_way *w, double rate, uint64_t n)
{
	size_t bytes = FLOOR_SLOTS * sizeof(struct floor_slot);

	hist_init(&fl.h);
	fl.slot = bench_area(bytes);
	fl.sent_at = w->stamp_after ? calloc(n, sizeof(uint64_t)) : NULL;
	fl.seen_at = w->stamp_after ? calloc(n, sizeof(uint64_t)) : NULL;
	if (!fl.slot || (w->stamp_after && (!fl.sent_at || !fl.seen_at))) {
		free(fl.sent_at);
		free(fl.seen_at);
		if (fl.slot)
			bench_area_free(fl.slot, bytes);
		return -1;
	}
	if (!fl.ns_per_stamp)
		fl.ns_per_stamp = stamp_rate();
	fl.way = *w;
	fl.n = n;
	fl.interval_ns = (uint64_t)(1e9 / rate);
	/* relaxed: before the threads start; pthread_create() orders it */
	WRITE_ONCE(&fl.consumed, 0);
	bench_pair(floor_producer, NULL, floor_consumer, NULL);
	for (uint64_t i = 0; w->stamp_after && i < n; i++) {
		uint64_t d = fl.seen_at[i] > fl.sent_at[i] ? fl.seen_at[i] - fl.sent_at[i] : 0;

		hist_add(&fl.h, (uint64_t)((double)d * fl.ns_per_stamp + 0.5));
	}
	free(fl.sent_at);
	free(fl.seen_at);
	bench_area_free(fl.slot, bytes);
	return 0;
}

int limit_line_message(double rate, uint64_t n, struct lat *out, struct hist *all)
{
	int err = floor_send(&floor_default, rate, n);

	lat_from_hist(out, &fl.h); /* no samples on failure: NAN figures */
	if (!err)
		hist_merge(all, &fl.h);
	return err;
}

/*
 * What the one-line message costs, taken apart (evs-bench --only oneway):
 * at 10 k/s, in alternating rounds, the cache line's one-way time, the
 * message as the floor sends it, and the message without cpu_relax() in
 * the polling loop, in one line reused for all, and stamped after the
 * store. A probe for the results page's account of the busy-poll
 * latency, not a target: its p50s next to the line's.
 */
void oneway_probe_run(void)
{
	static const struct floor_way ways[] = {
		{ .name = "one-line message" },
		{ .name = "  without pause in the poll loop", .no_pause = true },
		{ .name = "  one line reused", .one_line = true },
		{ .name = "  stamped after the store", .stamp_after = true },
	};
	enum { NWAYS = sizeof(ways) / sizeof(ways[0]) };
	const double rate = 10000;
	const uint64_t n = (uint64_t)(rate * (bopt.quick ? 0.4 : 4.0));
	double p50[NWAYS][MAX_ROUNDS], line[MAX_ROUNDS];

	say("\n== the one-line message at 10 k/s, taken apart (%d round(s) of %llu messages; p50 ns,\n"
	    "   and x the cache line's one-way time measured right before, median of the rounds)\n",
	    bopt.rounds, (unsigned long long)n);
	for (int r = 0; r < bopt.rounds; r++) {
		struct lat l;

		progress("one-way probe round %d of %d", r + 1, bopt.rounds);
		limit_line_oneway(&l);
		line[r] = l.p50;
		for (int k = 0; k < NWAYS; k++) {
			if (floor_send(&ways[k], rate, n)) {
				warn("one-way probe: no memory for the messages");
				return;
			}
			lat_from_hist(&l, &fl.h);
			p50[k][r] = l.p50;
		}
	}
	rep_section("oneway_probe");
	say("   %-34s p50 %.0f ns (rounds", "cache line one-way", median(line, bopt.rounds));
	for (int r = 0; r < bopt.rounds; r++)
		say(" %.0f", line[r]);
	say(")\n");
	for (int k = 0; k < NWAYS; k++) {
		double x[MAX_ROUNDS];

		for (int r = 0; r < bopt.rounds; r++)
			x[r] = p50[k][r] / line[r];
		say("   %-34s p50 %.0f ns (rounds", ways[k].name, median(p50[k], bopt.rounds));
		for (int r = 0; r < bopt.rounds; r++)
			say(" %.0f", p50[k][r]);
		say("), %.2fx the line\n", median(x, bopt.rounds));
		rep_obj_begin();
		rep_str("way", ways[k].name[0] == ' ' ? ways[k].name + 2 : ways[k].name);
		rep_num("p50_ns", median(p50[k], bopt.rounds));
		rep_num("line_oneway_ns", median(line, bopt.rounds));
		rep_num("p50_x_line", median(x, bopt.rounds));
		rep_obj_end();
	}
	rep_section_end();
}

/* SPDX-License-Identifier: MIT */
/*
 * evs-bench-drops: what one dropped event costs the producer, without any
 * tracer and with the evs-drops BPF program attached to evstream:drop (the
 * probe semaphore armed, a uprobe hit per batch of EVS__DROP_BATCH drops).
 *
 *   evs-bench-drops [--json] [--events N]
 *
 * Exit 77 (after printing the figure without BPF) when BPF is unusable.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "jsonl.h"
#include "evstream/evstream.h"
#include "drops_loader.h"
#include "evstream-private/introspect.h"

#define CHUNK (256 * 1024) /* drops per timed chunk: 256 batches */
#define HITS 20000   /* drop+flush pairs: one probe hit each */
#define ROUNDS 5     /* phases without and with the program, alternated */

static char payload[BENCH_DROP_PAYLOAD];

/*
 * Drops on a full ring, timed in chunks of CHUNK. The phases without and
 * with the program alternate over ROUNDS, and each side's figures come
 * from all of its chunks: the host speeds these vCPUs up and slows them
 * down by 2x within minutes, and one phase each, one after the other,
 * compared a fast state with a slow one. The best chunk is the cost
 * without preemption by the other programs on the machine; the median
 * says how noisy it was. A chunk spans many batches, so the best chunk
 * still pays its share of probe hits.
 */
struct side {
	double *chunk;     /* ns per drop of every chunk timed */
	long nchunks;
	double hit_ns;     /* sum over rounds of ns per drop+flush pair */
	double best, median;
};

/* Drops per timed chunk of a round of n: CHUNK or so, all n when fewer. */
static long chunk_of(long n)
{
	return n / CHUNK > 0 ? n / (n / CHUNK) : n;
}

static void time_drops(struct evs_producer *p, long n, struct side *sd)
{
	long per = chunk_of(n);
	long chunks = n / per;

	for (long c = 0; c < chunks; c++) {
		double t0 = (double)cli_now_ns();

		for (long i = 0; i < per; i++)
			evs_producer__emit(p, 0, 1, payload, sizeof(payload));
		if (sd)
			sd->chunk[sd->nchunks++] = ((double)cli_now_ns() - t0) / (double)per;
	}
	evs_producer__flush(p, 0);
}

/* Each drop reported on its own (flush after every drop): ns per pair. */
static void time_hits(struct evs_producer *p, struct side *sd)
{
	double t0 = (double)cli_now_ns();

	for (int i = 0; i < HITS; i++) {
		evs_producer__emit(p, 0, 1, payload, sizeof(payload));
		evs_producer__flush(p, 0);
	}
	sd->hit_ns += ((double)cli_now_ns() - t0) / HITS;
}

static void side_sum_up(struct side *sd)
{
	double worst;

	min_max(sd->chunk, (int)sd->nchunks, &sd->best, &worst);
	sd->median = median(sd->chunk, (int)sd->nchunks);
}

/*
 * One round with the program: attach, time, count, detach. Returns 0, or
 * 77 with reason set when BPF cannot be used. *expect and *counted add up
 * the drops the stream saw and those the program counted while attached.
 */
static int bpf_round(struct evs_producer *p, const char *pin, long n, struct side *sd,
		     unsigned long long *expect, unsigned long long *counted,
		     char *reason, size_t rlen)
{
	/* this process only: the loader finds the library it has mapped */
	struct evs_drops_opts o = { .sz = sizeof(o), .pin_dir = pin, .pid = getpid() };
	struct evs_stream_stats st = { .sz = sizeof(st) };
	struct evs_drop_val v;
	struct evs_drops *d = evs_drops__open(&o);
	uint64_t before;

	if (!d) {
		snprintf(reason, rlen, "%s", evs_drops__errmsg());
		/* open may have made the directory and pinned maps before failing */
		evs_drops__unpin(pin);
		return 77;
	}
	evs_producer__stats(p, 0, &st);
	before = st.dropped;
	time_drops(p, n, sd);
	time_hits(p, sd);
	evs_producer__stats(p, 0, &st);
	*expect += st.dropped - before;
	if (evs_drops__lookup(d, getpid(), 0, &v) == 0)
		*counted += v.events;
	evs_drops__free(d);
	evs_drops__unpin(pin);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "events", required_argument, NULL, 'n' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	/* the stream of evs-bench's ring_full case (bench.h) */
	EVS_OPTS(evs_producer_opts, po, .ring_bytes = BENCH_DROP_RING, .hugepages = EVS_HUGEPAGES_OFF);
	long n = 10 * 1000 * 1000;
	int json = 0, c, rc = 0;
	struct side no_bpf = { 0 }, bpf = { 0 };
	char pin[64], reason[1100] = "";
	uint64_t events;
	unsigned long long counted = 0, expect = 0;
	struct evs_producer *p;
	struct evs_consumer *cons;
	long per_round;
	int rounds = ROUNDS;

	while ((c = getopt_long(argc, argv, "jn:h", lopts, NULL)) != -1) {
		switch (c) {
		case 'j': json = 1; break;
		case 'n':
			if (cli_parse_u64("--events", optarg, 1, 100000000000ull, 0, &events))
				return 2;
			n = (long)events;
			break;
		default:
			fprintf(stderr, "usage: evs-bench-drops [--json] [--events N]\n");
			return c == 'h' ? 0 : 2;
		}
	}
	/* measured as evs-bench measures its own loops: on the producer's CPU,
	 * at nice -20 */
	bench_raise_priority();
	if (bench_pin(BENCH_CPU_PRODUCER))
		warn("cannot pin to CPU %d: figures may move", BENCH_CPU_PRODUCER);
	snprintf(pin, sizeof(pin), "/sys/fs/bpf/evstream-bench-%d", (int)getpid());
	/* in-process only: no socket, never meets another producer */
	p = evs_producer__new(NULL, 1, &po);
	if (!p)
		return fprintf(stderr, "evs-bench-drops: producer: %s\n", evs_errmsg()), 1;
	cons = evs_consumer__connect(NULL, 0, NULL);
	if (!cons)
		return fprintf(stderr, "evs-bench-drops: consumer: %s\n", evs_errmsg()), 1;
	/* fill the ring; the consumer never reads: every emit from here drops */
	while (evs_producer__emit(p, 0, 1, payload, sizeof(payload)) == 0)
		;
	time_drops(p, n / 10 + 1, NULL);   /* warm up */

	per_round = n / rounds > 0 ? n / rounds : 1;
	for (int k = 0; k < 2; k++) {
		struct side *sd = k ? &bpf : &no_bpf;

		sd->chunk = calloc((size_t)rounds * (per_round / CHUNK + 1), sizeof(*sd->chunk));
		if (!sd->chunk) {
			fprintf(stderr, "evs-bench-drops: out of memory\n");
			rc = 1;
		}
	}
	if (rc == 0 && evs_drops__check_env(pin)) {
		snprintf(reason, sizeof(reason), "%s", evs_drops__errmsg());
		rc = 77;
	}
	for (int r = 0; r < rounds && rc != 1; r++) {
		time_drops(p, per_round, &no_bpf);
		time_hits(p, &no_bpf);
		if (rc == 0)
			rc = bpf_round(p, pin, per_round, &bpf, &expect, &counted,
				       reason, sizeof(reason));
	}
	if (rc == 1)
		return 1;
	side_sum_up(&no_bpf);
	if (rc == 0)
		side_sum_up(&bpf);
	no_bpf.hit_ns /= rounds;
	bpf.hit_ns /= rounds;
	evs_consumer__free(cons);
	evs_producer__free(p);
	free(no_bpf.chunk);
	free(bpf.chunk);

	if (json) {
		printf("{\"bench\":\"drop_cost\",\"events\":%ld,\"chunk\":%ld,\"batch\":%u,"
		       "\"rounds\":%d,\"ns_per_drop_no_bpf\":%.2f,\"ns_per_drop_no_bpf_median\":%.2f",
		       n, chunk_of(per_round), EVS__DROP_BATCH, rounds, no_bpf.best, no_bpf.median);
		if (rc == 0)
			printf(",\"bpf\":true,\"ns_per_drop_bpf\":%.2f,\"ns_per_drop_bpf_median\":%.2f,"
			       "\"ns_added_by_bpf\":%.2f,\"ns_per_probe_hit\":%.0f,"
			       "\"bpf_counted\":%llu,\"bpf_expected\":%llu,\"target_ns\":10",
			       bpf.best, bpf.median, bpf.best - no_bpf.best, bpf.hit_ns - no_bpf.hit_ns,
			       counted, expect);
		else
		{
			printf(",\"bpf\":false,\"reason\":");
			json_put_str(stdout, reason);
		}
		printf("}\n");
	} else {
		printf("drop cost: %ld drops per case in %d rounds that alternate without and with\n"
		       "the program, timed in chunks of %ld, %zu-byte events, batch %u\n",
		       n, rounds, chunk_of(per_round), sizeof(payload), EVS__DROP_BATCH);
		printf("                            best chunk   median chunk\n");
		printf("  without BPF:              %7.2f ns     %7.2f ns per dropped event\n",
		       no_bpf.best, no_bpf.median);
		if (rc == 0) {
			printf("  with evs-drops attached:  %7.2f ns     %7.2f ns per dropped event "
			       "(target <= 10)\n", bpf.best, bpf.median);
			printf("  added by the BPF program: %7.2f ns per dropped event\n",
			       bpf.best - no_bpf.best);
			printf("  one probe hit (uprobe + BPF program): %.0f ns\n",
			       bpf.hit_ns - no_bpf.hit_ns);
			/* the timed drops and those of the probe-hit timing */
			printf("  counted by BPF: %llu of the %llu drops while it was attached%s\n",
			       counted, expect, counted == expect ? " (exact)" : " (MISMATCH)");
		}
	}
	if (rc == 77)
		fprintf(stderr, "evs-bench-drops: no figure with BPF: %s\n", reason);
	else if (counted != expect)
		rc = 1;
	return rc;
}

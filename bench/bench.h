/* SPDX-License-Identifier: MIT */
/* Shared pieces of evs-bench: clock, pinning, histograms, results. */
#ifndef EVS_BENCH_H
#define EVS_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "atomics.h"
/* cli_now_ns(): every timestamp in the benchmark, like the producer's
 * header timestamp, is CLOCK_MONOTONIC through the vDSO */
#include "cli.h"

#define BENCH_CPU_PRODUCER 0
#define BENCH_CPU_CONSUMER 1
#define NPAYLOADS 6

extern const size_t bench_payloads[NPAYLOADS];

/*
 * The stream of evs-bench's drop cases (drop_rate.c) and of evs-bench-drops
 * (drop_cost.c), the same in both so that their full-ring figures compare:
 * 64-byte events like every other small-event figure; default options, so
 * timestamps on (a drop never reads the clock, only commit does); a 1 MiB
 * ring of 4 KiB pages, filled until emit fails (its size no longer matters
 * once it is full).
 */
#define BENCH_DROP_PAYLOAD 64
#define BENCH_DROP_RING (1u << 20)

/*
 * Spin loops do not use PAUSE: in a KVM guest, pause-loop exiting turns a
 * PAUSE-heavy loop into VM exits and lets the host deschedule the vCPU,
 * which measured p50 busy-poll latency at 4x and p90 at milliseconds
 * (docs/benchmarks.md). A compiler barrier keeps the loop honest.
 */
static inline void cpu_relax(void)
{
	/* barrier(), as an asm: gcc 12 lays out the spin loops around an
	 * atomic_signal_fence() differently (lt_consumer(), tp_consumer()
	 * move blocks), and the loops measured stay as they were */
	__asm__ __volatile__("" ::: "memory");
}

/* One load per cache line of a payload: a consumer really pulls it over. */
static inline uint64_t touch(const void *data, size_t n)
{
	const uint8_t *b = data;
	uint64_t s = 0;

	/* volatile: one load per line, none merged or left out; not
	 * synchronisation (the caller's acquire ordered the payload).
	 * READ_ONCE_PLAIN() would say it, but gcc 12 then allocates the
	 * registers of the loops it is inlined in differently (cost_bare(),
	 * tp_read()), and those are measured */
	for (size_t i = 0; i + 8 <= n; i += 64)
		s += *(const volatile uint64_t *)(b + i);
	return s;
}

/* Pin the calling thread to one CPU; 0 or -errno. */
int bench_pin(int cpu);
/* nice -20 for the calling thread (and those it creates after) and its
 * autogroup; warns when refused. */
void bench_raise_priority(void);
/* Run a(arg_a) on the producer CPU and b(arg_b) on the consumer CPU, each
 * in its own pinned thread, and wait for both. */
/* Twice around core 0's ring before a timed run, on this thread: a
 * ring's memory is committed as it first fills and the consumer's mapping
 * faults in at first read, once per ring; the figures are of the ring
 * after that. */
struct evs_producer;
struct evs_consumer;
void bench_prime(struct evs_producer *p, struct evs_consumer *c, const void *src, size_t size);
void bench_pair(void *(*a)(void *), void *arg_a, void *(*b)(void *), void *arg_b);
/*
 * Anonymous memory in 4 KiB pages, faulted in; NULL (said) when it cannot
 * be had. The limits' areas (memcpy, bare ring): with transparent huge
 * pages "always" they would get huge pages, while a "normal" evstream ring
 * (a memfd) has 4 KiB ones.
 */
void *bench_area(size_t len);
void bench_area_free(void *p, size_t len);
/* The cheapest time a record or message can carry: the TSC, unordered and
 * unconverted (bare.h's timestamped ring, floor.c, the TSC read of the
 * limits); cli_now_ns() where there is no TSC. */
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#define BENCH_HAVE_TSC 1
static inline uint64_t bench_stamp(void)
{
	return __rdtsc();
}
#else
#define BENCH_HAVE_TSC 0
static inline uint64_t bench_stamp(void)
{
	return cli_now_ns();
}
#endif

/* Busy-wait until cli_now_ns() >= t. */
void bench_spin_until(uint64_t t);

/*
 * Log-linear histogram of nanosecond values: exact below 2^HIST_SUB, then
 * 2^HIST_SUB linear buckets per power of two, so a reported percentile is
 * within 1/2^(HIST_SUB+1) (1.6%) of the true sample. Fixed size, whatever
 * the number of samples.
 */
#define HIST_SUB 5
#define HIST_BUCKETS ((64 - HIST_SUB + 1) << HIST_SUB)
struct hist {
	uint64_t count;
	uint64_t min, max;
	double sum;
	uint64_t b[HIST_BUCKETS];
};
void hist_init(struct hist *h);
void hist_add(struct hist *h, uint64_t v);
/* Adds the samples of from to into. */
void hist_merge(struct hist *into, const struct hist *from);

/* Options shared by all parts. */
struct bench_opts {
	bool quick;
	bool json;
	double secs;           /* measured time per throughput point */
	uint64_t ring_bytes;
	const char *drops_json; /* output of evs-bench-drops --json to fold in */
	const char *plot_dir;   /* write gnuplot data files here */
	const char *only;       /* run only this part */
	const char *variant;    /* throughput: only variants containing this */
	long payload;           /* throughput: only this payload size, -1 all */
	int rounds;             /* rounds per throughput payload and per latency case, 1 to MAX_ROUNDS */
	double window;          /* drop-free: seconds per trial */
	uint64_t catchup_ns;    /* the consumers' catch-up pause, read off one at start */
};
#define MAX_ROUNDS 9
extern struct bench_opts bopt;

/* Figures measured in this run, referred to by the ratios. */
struct tput {
	double ev_s, gb_s;
	bool ok;
};
struct lat {
	double p50, p90, p99, p999, max, mean;
	uint64_t n;
};
void lat_from_hist(struct lat *l, const struct hist *h);
/* A throughput figure from events/s and the payload size. */
struct tput tput_of(double ev_s, size_t size);


/* Results kept for the targets summary. */
/* Its median ratio to the pipe, or to memcpy, within rounds; NAN if not run. */
enum tput_base { VS_PIPE, VS_MEMCPY, VS_BARE };
/* A path's paired ratio (median over the rounds) to a base: NAN if not run. */
double tput_ratio(const char *variant, size_t payload, enum tput_base base);
/* A latency case of this run: the medians of its ratios within each round. */
struct lat_case {
	char name[64];
	double p50_x_limit, p999_x_limit_p50;
	/* busy-poll only (NAN otherwise): the case x the one-line message at
	 * its rate, and the message itself x the limit's p50 */
	double p50_x_floor, p999_x_floor;
	double floor_p50_x_limit, floor_p999_x_limit_p50;
};
const struct lat_case *lat_find(const char *name);
double drops_bpf_ns(void); /* ns per drop with the eBPF program, NAN if unknown */

void limits_run(void);
/* Measured again right next to the figure they divide, because the host
 * moves the vCPUs: the cache line one-way time here jumps between ~45 and
 * ~210 ns from one minute to the next. */
struct tput limit_memcpy(size_t size);
/* The same with evs__ring_copy(), which streams from EVS__RING_COPY_STREAMING
 * bytes on: context for the x memcpy ratios of large payloads. */
struct tput limit_ring_copy(size_t size);
void limit_line_oneway(struct lat *out);
void limit_efd_wake(struct lat *out, bool use_poll);
/* The least timestamped message (one cache line, floor.c) at this offered
 * rate, n of them; its samples are also added to *all. -1 when its memory
 * cannot be had. */
int limit_line_message(double rate, uint64_t n, struct lat *out, struct hist *all);
void oneway_probe_run(void); /* evs-bench --only oneway (floor.c) */
struct tput alt_measure(bool sock, size_t size, const uint8_t *src);
/* The bare ring (bare.c); stamped: a TSC read per record and the reader
 * paced as evstream's default consumer. */
struct tput bare_measure(size_t size, const uint8_t *src, bool stamped);
void tput_run(void);
void cost_run(void);
void latency_run(void);
void drops_run(void);
void drops_bpf_fold(void);
/* LTTng-UST next to evstream's default 64-byte path (lttng.c) */
void lttng_run(void);
void dropfree_run(void);
/* Stops LTTng's peer process and its session daemon, if they run. */
void lttng_done(void);
/* evstream default 64 B events/s / LTTng-UST's, in rounds; NAN if not measured */
double lttng_ratio(void);

/* Report: human lines on stdout, or one JSON document with --json. */
void rep_begin(void);                          /* the document's opening brace */
void rep_finish(void);                         /* ... and its end */
void rep_section(const char *name);           /* starts a JSON array */
void rep_section_end(void);
void rep_obj_begin(void);
void rep_obj_end(void);
void rep_str(const char *k, const char *v);
void rep_num(const char *k, double v);
void rep_int(const char *k, uint64_t v);
void rep_raw(const char *k, const char *json);
void rep_lat(const char *k, const struct lat *l);
/* Human-readable line: on stdout, or on stderr with --json (the JSON
 * document has stdout). */
void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* A progress line on stderr when it is a terminal, overwritten by the
 * next; progress_done() ends it. */
void progress(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void progress_done(void);
/* Loud warning, always on stderr. */
void warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* A gnuplot data file in --plot-dir, its first line header; NULL without
 * --plot-dir (or when it cannot be written, said loudly). */
FILE *plot_open(const char *file, const char *header);
double ratio(double a, double b);
/* The median of n values; NAN for none. */
double median(const double *v, int n);
/* The lowest and highest of n values, NANs left out; NAN when none is left. */
void min_max(const double *v, int n, double *lo, double *hi);

/*
 * A timed run between a producer and a consumer thread: the producer ticks
 * the phase (0 warm-up, 1 measuring, 2 stop) by its clock, the consumer
 * notes its received count and time at each phase change it sees. The rate
 * is what the consumer received while measuring.
 */
struct run {
	_Atomic int phase __attribute__((aligned(128)));
	_Atomic uint64_t sent_total __attribute__((aligned(128)));
	_Atomic int done;
	uint64_t t_warm, t_stop;           /* producer side */
	int seen;                          /* consumer side */
	uint64_t c1, c2, t1, t2;
};

/* A warm-up of a quarter of --secs, then --secs measured. */
static inline void run_start(struct run *r)
{
	uint64_t t = cli_now_ns();

	r->t_warm = t + (uint64_t)(bopt.secs / 4 * 1e9);
	r->t_stop = r->t_warm + (uint64_t)(bopt.secs * 1e9);
}

/* Producer: returns true when it must stop. */
static inline bool run_tick(struct run *r)
{
	uint64_t t = cli_now_ns();

	/* relaxed: the phase only tells the consumer when to note its
	 * count and time; nothing is read through it */
	if (t >= r->t_stop) {
		WRITE_ONCE(&r->phase, 2);
		return true;
	}
	if (t >= r->t_warm && READ_ONCE(&r->phase) == 0)
		WRITE_ONCE(&r->phase, 1);
	return false;
}

static inline void run_finish(struct run *r, uint64_t sent)
{
	/* relaxed: the release of done below carries it */
	WRITE_ONCE(&r->sent_total, sent);
	/* pairs with smp_load_acquire(&r->done) in run_drained(): sent_total
	 * is in before done is seen */
	smp_store_release(&r->done, 1);
}

/* Consumer: after each received event (or batch), with the running count. */
static inline void run_mark(struct run *r, uint64_t count)
{
	/* relaxed: as in run_tick() */
	int ph = READ_ONCE(&r->phase);

	if (__builtin_expect(ph != r->seen, 0)) {
		if (r->seen == 0) {
			r->c1 = count;
			r->t1 = cli_now_ns();
		}
		if (ph == 2) {
			r->c2 = count;
			r->t2 = cli_now_ns();
		}
		r->seen = ph;
	}
}

/* Consumer: the producer has stopped and everything it sent is received. */
static inline bool run_drained(const struct run *r, uint64_t got)
{
	/* pairs with smp_store_release(&r->done) in run_finish(): the producer's
	 * sent_total is the final count; relaxed read of it, ordered by that */
	return smp_load_acquire(&r->done) && got >= READ_ONCE(&r->sent_total);
}

static inline double run_rate(const struct run *r)
{
	if (r->t2 <= r->t1 || r->c2 <= r->c1)
		return 0;
	return (double)(r->c2 - r->c1) / ((double)(r->t2 - r->t1) / 1e9);
}

#endif

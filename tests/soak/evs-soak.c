/* SPDX-License-Identifier: MIT */
/*
 * evs-soak: N streams at full rate for a bounded time while their consumer
 * processes are stalled, stopped, killed and reconnected at random, with
 * exact accounting.
 *
 *   evs-soak [--streams 8] [--seconds 60] [--seed S] [--ring BYTES (K, M, G)]
 *            [--deny-commit]
 *
 * Processes: this supervisor (single-threaded) forks one producer process
 * (one emitting thread per stream) and one consumer process per stream.
 * Every 10 ms the supervisor may SIGKILL a consumer (restarted 0-200 ms
 * later), or SIGSTOP it for 10-300 ms; consumers also stall themselves.
 *
 * Checked throughout: each producer thread, every 64 Ki emits, compares the
 * stream's shared counters with its own tally of emit results (produced ==
 * committed + dropped, committed == its successful emits, released <=
 * committed, committed - released <= max_events); each consumer checks
 * every record (sequence increasing, payload intact). At the end the
 * producer stops, every stream is drained by a fresh consumer, and
 * produced == delivered + dropped must hold exactly per stream, event by
 * event: the producer marks each dropped sequence number in one bitmap,
 * consumers mark each one they receive in another (before releasing it, so
 * a consumer killed at any instruction loses no mark; a record it read but
 * did not release comes again and is marked again). The two bitmaps must
 * be disjoint and together cover [0, produced) exactly.
 * Exit status 0 only if every check held.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "../deny_syscall.h"
#include "cli.h"
#include "evstream/evstream.h"

#define MAX_STREAMS 64
#define MAX_PAYLOAD 512
#define CHECK_EVERY 65536

/* One bit per sequence number, shared by every process of the run. */
struct seqmap {
	_Atomic uint64_t *w;
	uint64_t nbits;
};

struct stream_board {
	struct seqmap dropped;    /* written by the producer thread only */
	struct seqmap delivered;  /* written by this stream's consumers */
	/* producer thread */
	_Atomic uint64_t calls, ok, dropped_by[EVS_DROP_CAUSE_COUNT];
	/* consumers, across sessions */
	_Atomic uint64_t verified, sessions, self_stalls;
	/* supervisor */
	uint64_t kills, stops, delivered_events;
};

struct board {
	_Atomic int stop_emit;      /* supervisor -> producer: stop emitting */
	_Atomic int emit_stopped;   /* producer -> supervisor */
	_Atomic int finish;         /* supervisor -> producer: drained, exit */
	_Atomic int producer_ready;
	_Atomic uint64_t errors;
	char first_error[256];
	struct stream_board s[MAX_STREAMS];
};

static struct board *B;
static char name[64];
static unsigned int nstreams = 8;
static uint64_t ring_bytes = 1 << 20;
static const uint64_t max_events = 1 << 20;
static bool deny_commit;

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fail(const char *fmt, ...)
{
	va_list ap;

	if (atomic_fetch_add(&B->errors, 1) == 0) {
		va_start(ap, fmt);
		vsnprintf(B->first_error, sizeof(B->first_error), fmt, ap);
		va_end(ap);
	}
}

static void seqmap_set(struct seqmap *m, uint64_t seq)
{
	/* relaxed: read by the supervisor after the writers have stopped */
	atomic_fetch_or_explicit(&m->w[seq / 64], 1ull << (seq % 64), memory_order_relaxed);
}

static size_t size_of_seq(uint64_t seq)
{
	return (size_t)((seq * 37) % MAX_PAYLOAD);
}

static uint8_t byte_of(uint64_t seq, size_t i)
{
	return (uint8_t)(seq * 131 + i * 7 + 3);
}

/* ------------------------------------------------------------ producer */

struct emitter {
	struct evs_producer *p;
	unsigned int core;
};

/* The drop causes a soak can meet: the ring full (consumers stopped or
 * slow), nobody connected (between a kill and the restart), and the ring's
 * memory not committed (the machine short of memory). Records always fit. */
static const enum evs_drop_cause soak_causes[] = {
	EVS_DROP_RING_FULL, EVS_DROP_NO_CONSUMER, EVS_DROP_NO_MEMORY,
};
#define NCAUSES (sizeof(soak_causes) / sizeof(soak_causes[0]))

/* The cause of a failed emit, by what it returned; -1 for none of them. */
static int cause_of(int err)
{
	switch (err) {
	case -ENOBUFS: return EVS_DROP_RING_FULL;
	case -ENOTCONN: return EVS_DROP_NO_CONSUMER;
	case -ENOMEM: return EVS_DROP_NO_MEMORY;
	default: return -1;
	}
}

/* The shared counters agree with what emit returned; then the emit
 * results are published for the supervisor. */
static void checkpoint(struct evs_producer *p, unsigned int core, struct stream_board *sb,
		       uint64_t calls, uint64_t ok, const uint64_t *by_cause)
{
	struct evs_stream_stats st = { .sz = sizeof(st) };
	uint64_t dropped = 0;
	bool differ = false;

	evs_producer__stats(p, core, &st);
	for (int c = 0; c < EVS_DROP_CAUSE_COUNT; c++) {
		dropped += by_cause[c];
		differ |= st.dropped_events[c] != by_cause[c];
	}
	if (st.produced != calls || st.committed != ok || st.dropped != dropped || differ)
		fail("core %u: shared counters produced %llu committed %llu dropped %llu, "
		     "emit results %llu calls %llu ok %llu dropped (or a cause differs)", core,
		     (unsigned long long)st.produced, (unsigned long long)st.committed,
		     (unsigned long long)st.dropped, (unsigned long long)calls,
		     (unsigned long long)ok, (unsigned long long)dropped);
	atomic_store(&sb->calls, calls);
	atomic_store(&sb->ok, ok);
	for (int c = 0; c < EVS_DROP_CAUSE_COUNT; c++)
		atomic_store(&sb->dropped_by[c], by_cause[c]);
}

static void *emit_main(void *arg)
{
	struct emitter *e = arg;
	struct stream_board *sb = &B->s[e->core];
	uint8_t buf[MAX_PAYLOAD];
	uint64_t calls = 0, ok = 0, by_cause[EVS_DROP_CAUSE_COUNT] = { 0 };

	while (!atomic_load_explicit(&B->stop_emit, memory_order_relaxed) &&
	       calls < sb->dropped.nbits) {
		/* the header's seq is this call's index: every call counts */
		size_t size = size_of_seq(calls);
		int err, cause;

		for (size_t i = 0; i < size; i++)
			buf[i] = byte_of(calls, i);
		err = evs_producer__emit(e->p, e->core, 1, buf, size);
		cause = err ? cause_of(err) : -1;
		calls++;
		if (err == 0)
			ok++;
		else if (cause >= 0)
			by_cause[cause]++;
		else
			fail("core %u: emit gave %s", e->core, evs_strerror(err));
		if (err)
			seqmap_set(&sb->dropped, calls - 1);
		if (calls % CHECK_EVERY == 0)
			checkpoint(e->p, e->core, sb, calls, ok, by_cause);
	}
	checkpoint(e->p, e->core, sb, calls, ok, by_cause);
	return NULL;
}

static int producer_main(void)
{
	EVS_OPTS(evs_producer_opts, o, .ring_bytes = ring_bytes, .max_events = max_events,
		 .no_timestamps = 1);
	struct emitter e[MAX_STREAMS];
	pthread_t th[MAX_STREAMS];
	struct evs_producer *p;

	p = evs_producer__new(name, nstreams, &o);
	if (!p) {
		fail("producer: %s", evs_errmsg());
		return 1;
	}
	/* --deny-commit: from here on the emitting threads' commits fail */
	if (deny_commit && evs_deny_syscall(__NR_fallocate, ENOMEM)) {
		fail("producer: denying fallocate: %s", strerror(errno));
		return 1;
	}
	atomic_store(&B->producer_ready, 1);
	for (unsigned int i = 0; i < nstreams; i++) {
		e[i] = (struct emitter){ .p = p, .core = i };
		pthread_create(&th[i], NULL, emit_main, &e[i]);
	}
	for (unsigned int i = 0; i < nstreams; i++)
		pthread_join(th[i], NULL);
	atomic_store(&B->emit_stopped, 1);
	/* stay alive (streams open, not closed) until drained */
	while (!atomic_load(&B->finish))
		usleep(1000);
	evs_producer__free(p);
	return 0;
}

/* ------------------------------------------------------------ consumers */

struct session {
	struct stream_board *sb;
	unsigned int core;
	uint64_t last;        /* last seq + 1 seen, 0: none */
};

static int check_record(void *ctx, const struct evs_record *r)
{
	struct session *s = ctx;
	const uint8_t *d = r->data;

	if (r->hdr.seq + 1 <= s->last)
		fail("core %u: seq %llu after %llu", s->core, (unsigned long long)r->hdr.seq,
		     (unsigned long long)s->last - 1);
	if (r->hdr.data_size != size_of_seq(r->hdr.seq)) {
		fail("core %u: seq %llu has %llu bytes", s->core, (unsigned long long)r->hdr.seq,
		     (unsigned long long)r->hdr.data_size);
	} else {
		for (size_t i = 0; i < r->hdr.data_size; i++)
			if (d[i] != byte_of(r->hdr.seq, i)) {
				fail("core %u: seq %llu torn at byte %zu", s->core,
				     (unsigned long long)r->hdr.seq, i);
				break;
			}
	}
	s->last = r->hdr.seq + 1;
	/* marked before the release that follows this callback */
	if (r->hdr.seq < s->sb->delivered.nbits)
		seqmap_set(&s->sb->delivered, r->hdr.seq);
	else
		fail("core %u: seq %llu beyond the run's range", s->core,
		     (unsigned long long)r->hdr.seq);
	return 0;
}

static void consumer_main(unsigned int core, unsigned int seed)
{
	struct session s = { .sb = &B->s[core], .core = core };
	struct evs_consumer *c = cli_connect(name, core, 5, true);
	int n;

	if (!c) {
		fail("consumer %u: %s", core, evs_errmsg());
		_exit(1);
	}
	atomic_fetch_add(&s.sb->sessions, 1);
	/* records the last session had not released come again: the order
	 * is checked within a session */
	for (;;) {
		n = evs_consumer__consume(c, check_record, &s, 256);
		if (n > 0) {
			atomic_fetch_add(&s.sb->verified, (uint64_t)n);
			/* now and then fall behind for a while */
			if (rand_r(&seed) % 2000 == 0) {
				atomic_fetch_add(&s.sb->self_stalls, 1);
				usleep(1000 * (1 + rand_r(&seed) % 100));
			}
			continue;
		}
		if (n == -EPIPE)
			break;
		if (n < 0) {
			fail("consumer %u: %s", core, evs_strerror(n));
			break;
		}
		n = evs_consumer__wait(c, 100);
		if (n && n != -ETIMEDOUT && n != -EPIPE)
			fail("consumer %u: wait: %s", core, evs_strerror(n));
	}
	evs_consumer__free(c);
	_exit(0);
}

static pid_t spawn_consumer(unsigned int core, unsigned int seed)
{
	pid_t pid = fork();

	if (pid == 0)
		consumer_main(core, seed);
	return pid;
}

/* ------------------------------------------------------------ supervisor */

struct slot {
	pid_t pid;            /* 0: none */
	uint64_t respawn_at;  /* when pid == 0 */
	uint64_t cont_at;     /* stopped until, 0: running */
};

/* Event by event: every sequence number below produced is either dropped
 * or delivered, never both, and none beyond. */
static void check_seqmaps(unsigned int core, struct stream_board *sb, uint64_t produced)
{
	uint64_t words = (produced + 63) / 64, lost = 0, both = 0, beyond = 0, delivered = 0;

	for (uint64_t i = 0; i < sb->dropped.nbits / 64; i++) {
		uint64_t d = sb->dropped.w[i], c = sb->delivered.w[i];
		uint64_t valid = i < produced / 64 ? ~0ull :
				 i < words ? (1ull << (produced % 64)) - 1 : 0;

		if (i >= words && !d && !c)
			break;
		both += (uint64_t)__builtin_popcountll(d & c);
		lost += (uint64_t)__builtin_popcountll(~(d | c) & valid);
		beyond += (uint64_t)__builtin_popcountll((d | c) & ~valid);
		delivered += (uint64_t)__builtin_popcountll(c & valid);
	}
	sb->delivered_events = delivered;
	if (lost || both || beyond)
		fail("core %u: %llu events neither delivered nor dropped, %llu both, %llu beyond produced",
		     core, (unsigned long long)lost, (unsigned long long)both,
		     (unsigned long long)beyond);
}

static void drain_and_check(double secs, uint64_t t_run_ns, unsigned long seed)
{
	uint64_t tot_prod = 0, tot_del = 0, tot_drop = 0, tot_kills = 0, tot_stops = 0;
	uint64_t tot_sessions = 0, tot_stalls = 0, tot_by[EVS_DROP_CAUSE_COUNT] = { 0 };

	printf("\n%-4s %12s %12s", "core", "produced", "delivered");
	for (size_t k = 0; k < NCAUSES; k++)
		printf(" %12s", evs_drop_cause_name(soak_causes[k]));
	printf(" %12s %6s %6s %8s %6s\n", "verified", "kills", "stops", "sessions", "stalls");
	for (unsigned int i = 0; i < nstreams; i++) {
		struct stream_board *sb = &B->s[i];
		struct evs_stream_stats st = { .sz = sizeof(st) };
		struct session s = { .sb = sb, .core = i };
		struct evs_consumer *c = cli_connect(name, i, 5, true);
		bool differ = false;
		int n;

		if (!c) {
			fail("final consumer %u: %s", i, evs_errmsg());
			continue;
		}
		while ((n = evs_consumer__consume(c, check_record, &s, 0)) > 0)
			atomic_fetch_add(&sb->verified, (uint64_t)n);
		if (n != 0)
			fail("final drain %u: %s", i, evs_strerror(n));
		evs_consumer__stats(c, &st);
		check_seqmaps(i, sb, st.produced);
		/* the exact accounting: every event offered is delivered or dropped */
		if (st.produced != sb->delivered_events + st.dropped ||
		    st.committed != sb->delivered_events)
			fail("core %u: produced %llu != delivered %llu + dropped %llu", i,
			     (unsigned long long)st.produced, (unsigned long long)sb->delivered_events,
			     (unsigned long long)st.dropped);
		for (int k = 0; k < EVS_DROP_CAUSE_COUNT; k++) {
			differ |= st.dropped_events[k] != sb->dropped_by[k];
			tot_by[k] += st.dropped_events[k];
		}
		if (st.produced != sb->calls || st.committed != sb->ok || differ)
			fail("core %u: stream counters differ from the emit results", i);
		printf("%-4u %12llu %12llu", i, (unsigned long long)st.produced,
		       (unsigned long long)sb->delivered_events);
		for (size_t k = 0; k < NCAUSES; k++)
			printf(" %12llu", (unsigned long long)st.dropped_events[soak_causes[k]]);
		printf(" %12llu %6llu %6llu %8llu %6llu\n", (unsigned long long)sb->verified,
		       (unsigned long long)sb->kills, (unsigned long long)sb->stops,
		       (unsigned long long)sb->sessions, (unsigned long long)sb->self_stalls);
		tot_prod += st.produced;
		tot_del += sb->delivered_events;
		tot_drop += st.dropped;
		tot_kills += sb->kills;
		tot_stops += sb->stops;
		tot_sessions += sb->sessions;
		tot_stalls += sb->self_stalls;
		evs_consumer__free(c);
	}
	printf("%-4s %12llu %12llu", "all", (unsigned long long)tot_prod,
	       (unsigned long long)tot_del);
	for (size_t k = 0; k < NCAUSES; k++)
		printf(" %12llu", (unsigned long long)tot_by[soak_causes[k]]);
	printf(" %12s %6llu %6llu %8llu %6llu\n", "", (unsigned long long)tot_kills,
	       (unsigned long long)tot_stops, (unsigned long long)tot_sessions,
	       (unsigned long long)tot_stalls);
	printf("\nsoak: %u streams, %.0f s, seed %lu: %.2f M events/s offered, %.2f M/s delivered, "
	       "%.1f%% dropped; accounting %s (%llu errors)\n", nstreams, secs, seed,
	       tot_prod / (t_run_ns / 1e9) / 1e6, tot_del / (t_run_ns / 1e9) / 1e6,
	       tot_prod ? 100.0 * (double)tot_drop / (double)tot_prod : 0.0,
	       B->errors ? "BROKEN" : "exact", (unsigned long long)B->errors);
}

static void usage(FILE *f)
{
	fprintf(f,
"usage: evs-soak [--streams N] [--seconds S] [--seed S] [--ring BYTES]\n"
"Runs N streams at full rate while their consumers are stalled, stopped,\n"
"killed and reconnected at random, and checks the accounting exactly.\n"
"  -n, --streams N   streams, 1 to %d (default 8)\n"
"  -t, --seconds S   seconds of the run, 0.01 to 86400 (default 60)\n"
"  -s, --seed S      seed of the random schedule (default: the clock)\n"
"  -r, --ring BYTES  ring size per stream, K, M, G suffixes (default 1M)\n"
"  -d, --deny-commit the rings cannot grow past what was committed when\n"
"                    they were made (fallocate() fails): drops as no_memory\n"
"Exit status: 0 when every check held, 1 when one failed, 2 bad usage.\n", MAX_STREAMS);
}

/*
 * The producer the run will make, made once and freed before the run: a
 * ring size the library refuses (beyond its bound, which depends on the
 * machine's memory) fails before anything else, with the library's
 * reason. In a child of its own, so that the supervisor, which forks the
 * consumers, never held a producer (nor its threads and locks).
 */
static int check_ring(const char *arg)
{
	EVS_OPTS(evs_producer_opts, o, .ring_bytes = ring_bytes, .max_events = max_events,
		 .no_timestamps = 1);
	int status;
	pid_t pid = fork();

	if (pid == 0) {
		struct evs_producer *p = evs_producer__new(NULL, nstreams, &o);

		if (!p) {
			fprintf(stderr, "evs-soak: --ring '%s' with %u streams: %s\n", arg, nstreams,
				evs_errmsg());
			_exit(2);
		}
		evs_producer__free(p);
		_exit(0);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return -errno;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -EINVAL;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "streams", required_argument, NULL, 'n' },
		{ "seconds", required_argument, NULL, 't' },
		{ "seed", required_argument, NULL, 's' },
		{ "ring", required_argument, NULL, 'r' },
		{ "deny-commit", no_argument, NULL, 'd' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct slot slots[MAX_STREAMS] = { { 0 } };
	const char *ring_arg = "1M";
	double secs = 60;
	unsigned long seed = (unsigned long)cli_now_ns();
	unsigned int rs;
	uint64_t t0, t_end, t_run;
	pid_t prod;
	uint64_t v;
	int opt, status;

	while ((opt = getopt_long(argc, argv, "n:t:s:r:dh", lo, NULL)) != -1) {
		switch (opt) {
		case 'n':
			if (cli_parse_u64("--streams", optarg, 1, MAX_STREAMS, 0, &v))
				return 2;
			nstreams = (unsigned int)v;
			break;
		case 't':
			/* the sequence maps grow with the time: a day still fits the
			 * address space at 64 streams */
			if (cli_parse_double("--seconds", optarg, 0.01, 86400, "seconds", &secs))
				return 2;
			break;
		case 's':
			if (cli_parse_u64("--seed", optarg, 0, ULONG_MAX, 0, &v))
				return 2;
			seed = (unsigned long)v;
			break;
		case 'r':
			/* a page at least: the library's smallest ring */
			if (cli_parse_u64("--ring", optarg, 4096, UINT64_MAX, CLI_SIZE, &ring_bytes))
				return 2;
			ring_arg = optarg;
			break;
		case 'd':
			deny_commit = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "evs-soak: unexpected argument '%s': it takes options only\n", argv[optind]);
		usage(stderr);
		return 2;
	}
	if (check_ring(ring_arg))
		return 2;
	rs = (unsigned int)seed;
	snprintf(name, sizeof(name), "soak-%d", (int)getpid());
	B = mmap(NULL, sizeof(*B), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (B == MAP_FAILED)
		return 1;
	/* far more sequence numbers than a stream can offer in the time (the
	 * producer stops at the end of the map); pages are touched as used */
	for (unsigned int i = 0; i < nstreams; i++) {
		uint64_t nbits = ((uint64_t)(secs + 1) << 26) & ~63ull;
		struct seqmap *maps[2] = { &B->s[i].dropped, &B->s[i].delivered };

		for (int k = 0; k < 2; k++) {
			maps[k]->nbits = nbits;
			maps[k]->w = mmap(NULL, nbits / 8, PROT_READ | PROT_WRITE,
					  MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
			if (maps[k]->w == MAP_FAILED) {
				perror("evs-soak: sequence maps");
				return 1;
			}
		}
	}
	signal(SIGPIPE, SIG_IGN);
	/* line by line, so that what was printed survives a kill from outside */
	setvbuf(stdout, NULL, _IOLBF, 0);

	prod = fork();
	if (prod == 0)
		_exit(producer_main());
	while (!atomic_load(&B->producer_ready) && !B->errors)
		usleep(1000);
	if (!atomic_load(&B->producer_ready)) {
		/* no run without its producer */
		waitpid(prod, &status, 0);
		printf("soak: FAILED: %s\n", B->first_error);
		return 1;
	}
	printf("soak: %u streams at full rate for %.0f s, ring %llu bytes, seed %lu, producer pid %d\n",
	       nstreams, secs, (unsigned long long)ring_bytes, seed, (int)prod);
	fflush(stdout);

	t0 = cli_now_ns();
	t_end = t0 + (uint64_t)(secs * 1e9);
	for (unsigned int i = 0; i < nstreams; i++)
		slots[i].pid = spawn_consumer(i, rand_r(&rs));
	while (cli_now_ns() < t_end && !B->errors) {
		uint64_t t = cli_now_ns();

		for (unsigned int i = 0; i < nstreams; i++) {
			struct slot *sl = &slots[i];
			unsigned int dice = (unsigned int)rand_r(&rs) % 1000;

			if (!sl->pid) {
				if (t >= sl->respawn_at)
					sl->pid = spawn_consumer(i, rand_r(&rs));
				continue;
			}
			if (sl->cont_at) {
				if (t >= sl->cont_at) {
					kill(sl->pid, SIGCONT);
					sl->cont_at = 0;
				}
				continue;
			}
			if (dice < 8) { /* about once a second per stream */
				kill(sl->pid, SIGKILL);
				waitpid(sl->pid, &status, 0);
				sl->pid = 0;
				sl->respawn_at = t + (uint64_t)(rand_r(&rs) % 200) * 1000000;
				B->s[i].kills++;
			} else if (dice < 12) {
				kill(sl->pid, SIGSTOP);
				sl->cont_at = t + (uint64_t)(10 + rand_r(&rs) % 290) * 1000000;
				B->s[i].stops++;
			}
		}
		/* a consumer that exited on its own is a failure it reported */
		for (unsigned int i = 0; i < nstreams; i++)
			if (slots[i].pid && waitpid(slots[i].pid, &status, WNOHANG) == slots[i].pid) {
				if (!WIFEXITED(status) || WEXITSTATUS(status))
					fail("consumer %u exited (status 0x%x)", i, status);
				slots[i].pid = 0;
				slots[i].respawn_at = t;
			}
		usleep(10000);
	}
	atomic_store(&B->stop_emit, 1);
	printf("soak: stopping the producer, then draining every stream\n");
	while (!atomic_load(&B->emit_stopped) && waitpid(prod, &status, WNOHANG) == 0)
		usleep(1000);
	t_run = cli_now_ns() - t0;
	for (unsigned int i = 0; i < nstreams; i++)
		if (slots[i].pid) {
			kill(slots[i].pid, SIGKILL);
			waitpid(slots[i].pid, &status, 0);
		}
	drain_and_check(secs, t_run, seed);
	atomic_store(&B->finish, 1);
	waitpid(prod, &status, 0);
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		fail("producer exited with status 0x%x", status);
	if (B->errors) {
		printf("soak: FAILED: %s\n", B->first_error);
		return 1;
	}
	return 0;
}

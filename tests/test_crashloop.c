/* SPDX-License-Identifier: MIT */
/*
 * Crash-kill loops: a peer process SIGKILLed at a random point, many times.
 *
 *  - producer killed: the consumer (this process) drains every record whose
 *    commit returned, in sequence, with intact bytes, never a torn record,
 *    and then gets -EPIPE ("producer gone") within its 1 s wait;
 *  - consumer killed: the producer (this process) keeps emitting without
 *    ever blocking, sees the consumer leave, and the next consumer process
 *    connects and receives fresh events.
 *
 * After each loop nothing may be left behind in this process: open fds,
 * mappings, and huge pages (HugePages_Free back to where it was).
 * Each loop runs in both memory modes (0: normal pages, 1: huge pages).
 * EVS_CRASHLOOP_ITERS overrides the iteration count (default 200; keep it
 * above 4 * MAPS_SLACK so that a mapping leaked per iteration shows).
 */
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <time.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "helpers.h"

#define RING_NORMAL (64 * 1024)
#define MAX_PAYLOAD 1024
#define IN_FLIGHT   24       /* records the producer keeps in flight at most */
#define GONE_MS     1000     /* documented bound for "producer gone" */
#define WARMUP      5
#define MAPS_SLACK  8        /* mappings the sanitizers may add, once */

static int iterations(void)
{
	const char *e = getenv("EVS_CRASHLOOP_ITERS");
	int n = e ? atoi(e) : 0;

	return n > 0 ? n : 200;
}

/* ------------------------------------------------------------ leak probes */

static int count_dir(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *e;
	int n = 0;

	ck_assert_ptr_nonnull(d);
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n - 1; /* the DIR's own fd */
}

static int count_lines(const char *path, const char *needle)
{
	FILE *f = fopen(path, "r");
	char line[512];
	int n = 0;

	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof(line), f))
		n += !needle || strstr(line, needle);
	fclose(f);
	return n;
}

struct footprint {
	int fds;
	int maps;
	int evs_maps;
	long huge_free;
};

static struct footprint footprint(void)
{
	return (struct footprint){
		.fds = count_dir("/proc/self/fd"),
		.maps = count_lines("/proc/self/maps", NULL),
		.evs_maps = count_lines("/proc/self/maps", "memfd:evstream"),
		.huge_free = evs_hugepages_free(),
	};
}

/* Other processes on this machine that have evstream memory mapped (they
 * may hold huge pages the pool counter is short of). */
static int others_with_evstream_maps(void)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	char path[64];
	int n = 0;

	if (!d)
		return 0;
	while ((e = readdir(d))) {
		int pid = atoi(e->d_name);
		FILE *f;
		char line[512];

		if (pid <= 0 || pid == getpid())
			continue;
		snprintf(path, sizeof(path), "/proc/%d/maps", pid);
		f = fopen(path, "r");
		if (!f)
			continue;
		while (fgets(line, sizeof(line), f))
			if (strstr(line, "memfd:evstream")) {
				n++;
				break;
			}
		fclose(f);
	}
	closedir(d);
	return n;
}

/* Killed children release their huge pages asynchronously: wait up to
 * 10 s for the pool to be back. A pool still short while other processes
 * hold evstream memory (others testing on this machine) is theirs, not a
 * leak of this loop: our fds and mappings are checked exactly above. */
static void check_no_leaks(const struct footprint *before, const char *what)
{
	struct footprint now = footprint();

	for (int i = 0; i < 1000 && now.huge_free < before->huge_free; i++) {
		usleep(10000);
		now.huge_free = evs_hugepages_free();
	}
	if (now.huge_free < before->huge_free && others_with_evstream_maps() > 0) {
		printf("%s: HugePages_Free %ld, %ld before, with other evstream processes "
		       "running: not counted as a leak\n", what, now.huge_free, before->huge_free);
		now.huge_free = before->huge_free;
	}
	ck_assert_msg(now.fds == before->fds, "%s: %d fds open, %d before", what, now.fds, before->fds);
	ck_assert_msg(now.evs_maps == 0, "%s: %d evstream mappings left", what, now.evs_maps);
	/* sanitizer runtimes map a little per new thread; a leak per
	 * iteration would be hundreds */
	ck_assert_msg(now.maps <= before->maps + MAPS_SLACK, "%s: %d mappings, %d before", what,
		      now.maps, before->maps);
	ck_assert_msg(now.huge_free >= before->huge_free, "%s: HugePages_Free %ld, %ld before",
		      what, now.huge_free, before->huge_free);
}

/* ------------------------------------------------------------ helpers */

static size_t size_of_seq(uint64_t seq)
{
	return (size_t)((seq * 37) % MAX_PAYLOAD);
}

static uint8_t byte_of(uint64_t seq, size_t i)
{
	return (uint8_t)(seq * 31 + i * 7 + 1);
}

static bool record_intact(const struct evs_record *r)
{
	const uint8_t *d = r->data;

	if (r->hdr.type != 1 || r->hdr.data_size != size_of_seq(r->hdr.seq))
		return false;
	for (size_t i = 0; i < r->hdr.data_size; i++)
		if (d[i] != byte_of(r->hdr.seq, i))
			return false;
	return true;
}

/* The consumer-killed loop keys its pattern by size: tags and drops take
 * sequence numbers the emitter does not track. */
static bool record_intact_by_size(const struct evs_record *r)
{
	const uint8_t *d = r->data;

	if (r->hdr.type != 1 || r->hdr.data_size >= MAX_PAYLOAD)
		return false;
	for (size_t i = 0; i < r->hdr.data_size; i++)
		if (d[i] != byte_of(r->hdr.data_size, i))
			return false;
	return true;
}

static struct evs_producer *make_producer(const char *name, int mode)
{
	EVS_OPTS(evs_producer_opts, o, .ring_bytes = mode ? 0 : RING_NORMAL, .max_events = 1 << 20,
		 .hugepages = mode ? EVS_HUGEPAGES_ON : EVS_HUGEPAGES_OFF);

	if (mode)
		o.ring_bytes = 2u << 20;
	return evs_producer__new(name, 1, &o);
}

/* Huge pages for this mode, or a loud skip reason when the machine is
 * short of them (any other failure fails). A named producer with
 * a consumer is made and freed once first, so that what stays cached after
 * the first use (the server thread's stack and malloc arena) is part of the
 * footprint the loop is compared with. */
static bool mode_available(int mode)
{
	struct evs_producer *p;
	struct evs_consumer *c;

	if (evs_hugepages_off("crashloop hugepages", mode))
		return false;
	p = make_producer(evs_test_name("warm"), mode);
	if (!p && mode && evs_hugepages_short("crashloop hugepages", errno, 1))
		return false;
	ck_assert_msg(p, "producer: %s", evs_errmsg());
	c = evs_consumer__connect(evs_test_name("warm"), 0, NULL);
	ck_assert_msg(c, "consumer: %s", evs_errmsg());
	evs_consumer__free(c);
	evs_producer__free(p);
	return true;
}

static void kill_and_reap(pid_t pid)
{
	int status;

	kill(pid, SIGKILL);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
}

/* ------------------------------------------------- producer killed */

/* The producer process: emits pattern records, half of them through
 * reserve + byte-by-byte fill + commit so that kills land between reserve
 * and commit too; *done counts the commits that returned. */
static void producer_child(const char *name, int mode, int ready_fd, _Atomic uint64_t *done)
{
	struct evs_stream_stats st = { .sz = sizeof(st) };
	struct evs_producer *p = make_producer(name, mode);
	uint8_t buf[MAX_PAYLOAD];
	char c = 'r';

	if (!p || write(ready_fd, &c, 1) != 1)
		_exit(2);
	/* emit only once the consumer is there: no no_consumer gaps */
	if (!evs_wait_connected(p, 0, 1, 10000))
		_exit(5);
	for (uint64_t seq = 0;; seq++) {
		size_t size = size_of_seq(seq);
		int err;

		/* keep the ring from filling: a drop would leave a gap */
		do
			evs_producer__stats(p, 0, &st);
		while (st.committed - st.released >= IN_FLIGHT);
		if (seq & 1) {
			uint8_t *d = evs_producer__reserve(p, 0, 1, size);

			if (!d)
				_exit(3);
			for (size_t i = 0; i < size; i++)
				d[i] = byte_of(seq, i);
			err = evs_producer__commit(p, 0);
		} else {
			for (size_t i = 0; i < size; i++)
				buf[i] = byte_of(seq, i);
			err = evs_producer__emit(p, 0, 1, buf, size);
		}
		if (err)
			_exit(4);
		atomic_store_explicit(done, seq + 1, memory_order_release);
	}
}

struct drain {
	uint64_t next_seq;
	bool bad;
	uint64_t bad_seq;
};

static int drain_fn(void *ctx, const struct evs_record *r)
{
	struct drain *d = ctx;

	if (r->hdr.seq != d->next_seq || !record_intact(r)) {
		if (!d->bad)
			d->bad_seq = r->hdr.seq;
		d->bad = true;
	}
	d->next_seq = r->hdr.seq + 1;
	return 0;
}

static void producer_killed_once(const char *name, int mode, unsigned int *seed,
				 _Atomic uint64_t *done, uint64_t *worst_gone_ns, uint64_t *total)
{
	struct evs_consumer *c = NULL;
	struct drain d = { 0 };
	int pfd[2], err, status;
	uint64_t t_kill, t_gone;
	char ch;
	pid_t pid;

	atomic_store(done, 0);
	ck_assert_int_eq(pipe2(pfd, O_CLOEXEC), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		close(pfd[0]);
		producer_child(name, mode, pfd[1], done);
		_exit(1);
	}
	close(pfd[1]);
	ck_assert_msg(read(pfd[0], &ch, 1) == 1, "producer child failed to start");
	close(pfd[0]);
	c = evs_consumer__connect(name, 0, NULL);
	ck_assert_msg(c, "connect: %s", evs_errmsg());

	/* let it run for a random while, consuming, then kill it anywhere */
	{
		uint64_t until = evs_test_now_ns() + (uint64_t)(rand_r(seed) % 3000) * 1000;

		while (evs_test_now_ns() < until) {
			err = evs_consumer__consume(c, drain_fn, &d, 0);
			ck_assert_msg(err >= 0, "consume: %s", evs_strerror(err));
		}
	}
	t_kill = evs_test_now_ns();
	kill(pid, SIGKILL);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFSIGNALED(status), "producer child exited early (status %d)",
		      WEXITSTATUS(status));

	/* drain what is left, then "producer gone" within the bound */
	for (;;) {
		err = evs_consumer__consume(c, drain_fn, &d, 0);
		if (err > 0)
			continue;
		if (err == -EPIPE)
			break;
		ck_assert_msg(err == 0, "consume: %s", evs_strerror(err));
		err = evs_consumer__wait(c, GONE_MS);
		ck_assert_msg(err == 0 || err == -EPIPE,
			      "after the producer died: wait gave %s, not -EPIPE", evs_strerror(err));
	}
	t_gone = evs_test_now_ns();
	if (t_gone - t_kill > *worst_gone_ns)
		*worst_gone_ns = t_gone - t_kill;
	ck_assert_int_eq(evs_consumer__peek(c, &(struct evs_record){ 0 }), -EPIPE);

	ck_assert_msg(!d.bad, "torn or out-of-order record at seq %llu",
		      (unsigned long long)d.bad_seq);
	/* every commit that returned was delivered; at most one more (killed
	 * after publishing, before counting) */
	{
		uint64_t committed = atomic_load(done);

		ck_assert_msg(d.next_seq >= committed && d.next_seq <= committed + 1,
			      "delivered %llu records, %llu commits returned",
			      (unsigned long long)d.next_seq, (unsigned long long)committed);
	}
	*total += d.next_seq;
	evs_consumer__free(c);
}

START_TEST(test_producer_killed_consumer_drains_everything_then_sees_gone)
{
	int mode = _i, n = iterations();
	unsigned int seed = (unsigned int)evs_test_now_ns();
	_Atomic uint64_t *done;
	struct footprint before;
	uint64_t worst = 0, total = 0;
	char name[96];

	if (!mode_available(mode))
		return;
	snprintf(name, sizeof(name), "%s-%d", evs_test_name("pkill"), mode);
	done = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ck_assert_ptr_ne(done, MAP_FAILED);
	/* a few rounds first: lazily grown allocator regions are not leaks */
	for (int i = 0; i < WARMUP; i++)
		producer_killed_once(name, mode, &seed, done, &worst, &total);
	before = footprint();
	printf("producer-killed %s: %d iterations, seed %u\n", evs_mode_name(mode), n, seed);
	for (int i = 0; i < n; i++)
		producer_killed_once(name, mode, &seed, done, &worst, &total);
	munmap(done, 4096);
	printf("producer-killed %s: %llu records verified, slowest 'producer gone' after %.1f ms\n",
	       evs_mode_name(mode), (unsigned long long)total, worst / 1e6);
	check_no_leaks(&before, "producer-killed loop");
}
END_TEST

/* ------------------------------------------------- consumer killed */

#define TYPE_TAG 2

/* The consumer process: connects (retrying while the previous consumer's
 * hang-up is being processed), waits for the tag of its iteration and
 * reports it, then consumes or stalls until it is killed. */
static void consumer_child(const char *name, uint32_t iter, bool stall, int fd)
{
	struct evs_consumer *c = NULL;
	struct evs_record r;
	bool tagged = false;
	char ch = 'c';

	for (int i = 0; i < 2000 && !c; i++) {
		c = evs_consumer__connect(name, 0, NULL);
		if (!c && errno != EBUSY)
			_exit(2);
		if (!c)
			usleep(500);
	}
	if (!c || write(fd, &ch, 1) != 1)
		_exit(3);
	for (;;) {
		int err = evs_consumer__peek(c, &r);

		if (err == -EAGAIN) {
			if (tagged && stall)
				pause();
			evs_consumer__wait(c, 100);
			continue;
		}
		if (err)
			_exit(4);
		if (r.hdr.type == TYPE_TAG && r.hdr.data_size == sizeof(iter) &&
		    !memcmp(r.data, &iter, sizeof(iter)) && !tagged) {
			ch = 'g';
			if (write(fd, &ch, 1) != 1)
				_exit(5);
			tagged = true;
		} else if (r.hdr.type != TYPE_TAG && !record_intact_by_size(&r)) {
			_exit(6);
		}
		evs_consumer__release(c);
		if (tagged && stall)
			pause();
	}
}

struct emitter {
	struct evs_producer *p;
	uint64_t calls;
	uint8_t buf[MAX_PAYLOAD];
};

/* One emit; it must return at once with a defined status. */
static int emit_one(struct emitter *e)
{
	size_t size = size_of_seq(e->calls++);
	int err;

	for (size_t i = 0; i < size; i++)
		e->buf[i] = byte_of(size, i);
	err = evs_producer__emit(e->p, 0, 1, e->buf, size);
	ck_assert_msg(err == 0 || err == -ENOBUFS || err == -ENOTCONN, "emit: %s",
		      evs_strerror(err));
	return err;
}

/* Emit until the child writes `want` on fd (bounded), returning true if it did. */
static bool emit_until(struct emitter *e, int fd, char want, int timeout_ms)
{
	uint64_t until = evs_test_now_ns() + (uint64_t)timeout_ms * 1000000;
	char ch;

	while (evs_test_now_ns() < until) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };

		emit_one(e);
		if (poll(&pfd, 1, 0) == 1) {
			if (read(fd, &ch, 1) != 1)
				return false;
			if (ch == want)
				return true;
		}
	}
	return false;
}

static bool connected(struct evs_producer *p)
{
	struct evs_stream_stats st = { .sz = sizeof(st) };

	ck_assert_int_eq(evs_producer__stats(p, 0, &st), 0);
	return st.connected;
}

static void consumer_killed_once(struct emitter *e, const char *name, uint32_t iter,
				 unsigned int *seed, uint64_t *worst_notice_ns)
{
	bool stall = rand_r(seed) % 4 == 0;
	int pfd[2];
	pid_t pid;

	/* the next consumer receives keys to everything: be sure the producer
	 * has seen the last one leave */
	ck_assert_int_eq(pipe2(pfd, O_CLOEXEC), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		close(pfd[0]);
		consumer_child(name, iter, stall, pfd[1]);
		_exit(1);
	}
	close(pfd[1]);
	ck_assert_msg(emit_until(e, pfd[0], 'c', 5000), "consumer %u did not connect", iter);
	/* the tag must get through: retry while the ring is full */
	{
		uint64_t until = evs_test_now_ns() + 2000000000ull;
		int err;

		do
			err = evs_producer__emit(e->p, 0, TYPE_TAG, &iter, sizeof(iter));
		while (err == -ENOBUFS && evs_test_now_ns() < until);
		ck_assert_msg(err == 0, "tag %u: %s", iter, evs_strerror(err));
	}
	ck_assert_msg(emit_until(e, pfd[0], 'g', 2000),
		      "new consumer %u did not receive a fresh event", iter);
	/* run on for a random while, then kill it wherever it is */
	{
		uint64_t until = evs_test_now_ns() + (uint64_t)(rand_r(seed) % 2000) * 1000;

		while (evs_test_now_ns() < until)
			emit_one(e);
	}
	kill_and_reap(pid);
	close(pfd[0]);
	/* the producer notices, and keeps emitting meanwhile (the test case's
	 * timeout bounds the wait; the time is only reported) */
	{
		uint64_t t0 = evs_test_now_ns(), t;

		while (connected(e->p))
			emit_one(e);
		t = evs_test_now_ns() - t0;
		if (t > *worst_notice_ns)
			*worst_notice_ns = t;
		ck_assert_int_eq(emit_one(e), -ENOTCONN);
	}
}

START_TEST(test_consumer_killed_producer_never_blocks_and_serves_next)
{
	int mode = _i, n = iterations();
	unsigned int seed = (unsigned int)evs_test_now_ns();
	struct evs_stream_stats st = { .sz = sizeof(st) };
	struct footprint before;
	struct emitter *e;
	uint64_t worst = 0, dropped;
	char name[96];

	if (!mode_available(mode))
		return;
	snprintf(name, sizeof(name), "%s-%d", evs_test_name("ckill"), mode);
	e = calloc(1, sizeof(*e));
	ck_assert_ptr_nonnull(e);
	/* a few rounds with a producer of its own first: lazily grown
	 * allocator regions are not leaks */
	e->p = make_producer(name, mode);
	ck_assert_msg(e->p, "producer: %s", evs_errmsg());
	for (int i = 0; i < WARMUP; i++)
		consumer_killed_once(e, name, (uint32_t)i, &seed, &worst);
	evs_producer__free(e->p);
	memset(e, 0, sizeof(*e));
	before = footprint();
	e->p = make_producer(name, mode);
	ck_assert_msg(e->p, "producer: %s", evs_errmsg());
	printf("consumer-killed %s: %d iterations, seed %u\n", evs_mode_name(mode), n, seed);
	for (int i = 0; i < n; i++)
		consumer_killed_once(e, name, (uint32_t)i, &seed, &worst);

	/* exact accounting over the whole loop: every emit is counted once */
	ck_assert_int_eq(evs_producer__stats(e->p, 0, &st), 0);
	dropped = st.dropped_events[EVS_DROP_RING_FULL] + st.dropped_events[EVS_DROP_NO_CONSUMER];
	ck_assert_uint_eq(st.produced, st.committed + st.dropped);
	ck_assert_uint_eq(st.dropped, dropped);
	printf("consumer-killed %s: %llu emits (%llu committed, %llu dropped), slowest notice %.1f ms\n",
	       evs_mode_name(mode), (unsigned long long)st.produced,
	       (unsigned long long)st.committed, (unsigned long long)st.dropped, worst / 1e6);
	evs_producer__free(e->p);
	free(e);
	check_no_leaks(&before, "consumer-killed loop");
}
END_TEST

static Suite *crashloop_suite(void)
{
	Suite *s = suite_create("crashloop");
	TCase *tc = evs_tcase("kill");

	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, test_producer_killed_consumer_drains_everything_then_sees_gone, 0,
			    EVS_MODES);
	tcase_add_loop_test(tc, test_consumer_killed_producer_never_blocks_and_serves_next, 0,
			    EVS_MODES);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	/* a killed peer must never take this process down with SIGPIPE */
	signal(SIGPIPE, SIG_IGN);
	return evs_run_suite(crashloop_suite());
}

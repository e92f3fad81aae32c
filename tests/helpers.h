/* SPDX-License-Identifier: MIT */
/* Shared helpers of the Check suites. */
#ifndef EVS_TEST_HELPERS_H
#define EVS_TEST_HELPERS_H

#include <check.h>
#include <stdbool.h>
#include <time.h>
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <pthread.h>

#include "evstream/evstream.h"
#include "evstream/tensor.h"
#include "nrt/ndebug_stream.h"

/*
 * What a test holds, released by the teardown of every test case made with
 * evs_tcase() even when an assertion ended the test midway. Under
 * CK_FORK=no (valgrind) the tests share one process: a consumer left
 * attached by a failed test would make every later test of that core fail
 * ("core 0 already has a consumer"), and memcheck would report its memory.
 * The library's constructors and destructors are wrapped (macros below),
 * so that every test registers what it makes without saying so; a test
 * that frees something itself takes it off the list.
 */
#define EVS_HELD_MAX 512
enum { EVS_HELD_PRODUCER, EVS_HELD_CONSUMER, EVS_HELD_NRT_FD };
static struct {
	pthread_mutex_t lock;
	struct { int kind; void *obj; int fd; } e[EVS_HELD_MAX];
} evs_held = { .lock = PTHREAD_MUTEX_INITIALIZER };

static inline void evs_held_add(int kind, void *obj, int fd)
{
	int err = errno; /* tests look at the constructor's errno */

	pthread_mutex_lock(&evs_held.lock);
	for (int i = 0; i < EVS_HELD_MAX; i++)
		if (evs_held.e[i].fd == 0) {
			evs_held.e[i].kind = kind;
			evs_held.e[i].obj = obj;
			evs_held.e[i].fd = fd + 1; /* 0: free slot */
			break;
		}
	pthread_mutex_unlock(&evs_held.lock);
	errno = err;
}

static inline void evs_held_drop(int kind, void *obj, int fd)
{
	pthread_mutex_lock(&evs_held.lock);
	for (int i = 0; i < EVS_HELD_MAX; i++)
		if (evs_held.e[i].kind == kind && evs_held.e[i].fd > 0 &&
		    (obj ? evs_held.e[i].obj == obj : evs_held.e[i].fd == fd + 1)) {
			evs_held.e[i].obj = NULL;
			evs_held.e[i].fd = 0;
			break;
		}
	pthread_mutex_unlock(&evs_held.lock);
}

static inline struct evs_producer *evs_held_producer(struct evs_producer *p)
{
	if (p)
		evs_held_add(EVS_HELD_PRODUCER, p, 0);
	return p;
}

static inline struct evs_consumer *evs_held_consumer(struct evs_consumer *c)
{
	if (c)
		evs_held_add(EVS_HELD_CONSUMER, c, 0);
	return c;
}

static inline void evs_held_free_producer(struct evs_producer *p)
{
	if (p)
		evs_held_drop(EVS_HELD_PRODUCER, p, 0);
	evs_producer__free(p);
}

static inline void evs_held_free_consumer(struct evs_consumer *c)
{
	if (c)
		evs_held_drop(EVS_HELD_CONSUMER, c, 0);
	evs_consumer__free(c);
}

static inline NRT_STATUS evs_held_nrt_connect(int core, int *fd)
{
	NRT_STATUS st = nrt_debug_client_connect(core, fd);

	if (st == NRT_SUCCESS && fd)
		evs_held_add(EVS_HELD_NRT_FD, NULL, *fd);
	return st;
}

static inline void evs_held_nrt_close(int fd)
{
	evs_held_drop(EVS_HELD_NRT_FD, NULL, fd);
	nrt_debug_client_connect_close(fd);
}

/* The teardown: consumers (and debug-stream connections) first, then the
 * producers they were attached to. */
static inline void evs_held_release(void)
{
	for (int pass = 0; pass < 2; pass++)
		for (int i = 0; i < EVS_HELD_MAX; i++) {
			int kind = evs_held.e[i].kind, fd = evs_held.e[i].fd - 1;
			void *obj = evs_held.e[i].obj;

			if (evs_held.e[i].fd <= 0 || (kind == EVS_HELD_PRODUCER) != (pass == 1))
				continue;
			evs_held.e[i].obj = NULL;
			evs_held.e[i].fd = 0;
			if (kind == EVS_HELD_PRODUCER)
				evs_producer__free(obj);
			else if (kind == EVS_HELD_CONSUMER)
				evs_consumer__free(obj);
			else
				nrt_debug_client_connect_close(fd);
		}
}

#define evs_producer__new(...) evs_held_producer(evs_producer__new(__VA_ARGS__))
#define evs_producer__free(p) evs_held_free_producer(p)
#define evs_consumer__connect(...) evs_held_consumer(evs_consumer__connect(__VA_ARGS__))
#define evs_consumer__free(c) evs_held_free_consumer(c)
#define nrt_debug_client_connect(core, fd) evs_held_nrt_connect(core, fd)
#define nrt_debug_client_connect_close(fd) evs_held_nrt_close(fd)

/* A test case whose teardown releases what its tests hold (added first, so
 * that it runs after the case's own teardowns, which may free theirs). */
static inline TCase *evs_tcase(const char *name)
{
	TCase *tc = tcase_create(name);

	tcase_add_checked_fixture(tc, NULL, evs_held_release);
	return tc;
}

/*
 * An assertion for loops of thousands: ck_assert() marks the point through
 * a pipe to the runner on every call, which made such loops take seconds
 * (and hit their deadlines) on a loaded machine. This costs nothing while
 * the condition holds.
 */
#define EVS_CHECK(cond, ...)                                            \
	do {                                                            \
		if (!(cond))                                            \
			ck_abort_msg("Assertion '" #cond "' failed: " __VA_ARGS__); \
	} while (0)

/* Skip loudly: the reason goes to the log and counts in the summary. */
#define EVS_SKIP(...)                                                   \
	do {                                                            \
		printf("SKIP %s: ", __func__);                          \
		printf(__VA_ARGS__);                                    \
		printf("\n");                                           \
		fflush(stdout);                                         \
		return;                                                 \
	} while (0)

/* Memory modes for loop tests: _i == 0 normal pages, 1 huge pages. */
#define EVS_MODES 2
static inline const char *evs_mode_name(int mode)
{
	return mode ? "hugepages" : "normal";
}

/* The number on the line "key: N" of a /proc file such as /proc/meminfo
 * or /proc/self/status (key with its colon), or -1. */
static inline long evs_proc_number(const char *path, const char *key)
{
	FILE *f = fopen(path, "r");
	size_t klen = strlen(key);
	char line[256];
	long v = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, klen) && sscanf(line + klen, " %ld", &v) == 1)
			break;
	fclose(f);
	return v;
}

static inline long evs_hugepages_free(void)
{
	return evs_proc_number("/proc/meminfo", "HugePages_Free:");
}

/* EVSTREAM_HUGEPAGES as the suite started (tests set and unset it). */
static int evs_hugepages_env_off;
__attribute__((constructor)) static void evs_hugepages_env_read(void)
{
	const char *v = getenv("EVSTREAM_HUGEPAGES");

	evs_hugepages_env_off = v && !strcasecmp(v, "off");
}

/* EVSTREAM_HUGEPAGES=off stands for a machine without huge pages: true,
 * after a loud SKIP line naming `what`, for the huge-page variant of a test
 * (mode 1), which would skip there too. */
static inline bool evs_hugepages_off(const char *what, int mode)
{
	if (!mode || !evs_hugepages_env_off)
		return false;
	printf("SKIP %s: EVSTREAM_HUGEPAGES=off (a machine without huge pages)\n", what);
	fflush(stdout);
	return true;
}

/* A producer asked for huge pages (EVS_HUGEPAGES_ON) and gave NULL with
 * errno err. True, after a loud SKIP line naming `what`, when the machine is
 * really short of them: no hugetlb, the pool ran out (ENOMEM, ENOSPC), or
 * fewer than `need` 2 MiB pages are free. Any other failure fails the test
 * here: it is a bug, not a missing facility. */
static inline bool evs_hugepages_short(const char *what, int err, long need)
{
	long free_pages = evs_hugepages_free();

	if (free_pages >= need && err != ENOMEM && err != ENOSPC)
		ck_abort_msg("%s: huge-page producer failed with %ld of %ld huge pages free: %s",
			     what, free_pages, need, evs_errmsg());
	printf("SKIP %s: huge pages short: %s; HugePages_Free=%ld, %ld needed\n", what,
	       evs_errmsg(), free_pages, need);
	fflush(stdout);
	return true;
}

/* Wait until the producer sees `want` consumers (1 or 0) on core, for at
 * most ms milliseconds (ms < 0: no limit here, the test case's timeout
 * bounds the wait). False when the time ran out. */
static inline bool evs_wait_connected(struct evs_producer *p, unsigned int core, uint32_t want,
				      int ms)
{
	struct evs_stream_stats st = { .sz = sizeof(st) };

	for (long i = 0; ms < 0 || i < ms * 10L; i++) {
		if (evs_producer__stats(p, core, &st) == 0 && st.connected == want)
			return true;
		usleep(100);
	}
	return false;
}

/* A producer name unique to this process and call site. */
static inline const char *evs_test_name(const char *tag)
{
	static __thread char buf[64];

	snprintf(buf, sizeof(buf), "t-%s-%d", tag, (int)getpid());
	return buf;
}

/* Private runtime directory, so tests never meet a real producer. */
static inline const char *evs_test_runtime_dir(void)
{
	static char dir[64];

	if (!dir[0]) {
		snprintf(dir, sizeof(dir), "/tmp/evs-test-%d", (int)getpid());
		setenv("EVSTREAM_RUNTIME_DIR", dir, 1);
	}
	return dir;
}

static inline int evs_rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb; (void)flag; (void)ftw;
	return remove(path) ? -1 : 0;
}

static inline int evs_run_suite(Suite *s)
{
	SRunner *sr = srunner_create(s);
	const char *dir = evs_test_runtime_dir();
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	/* the private directory and whatever a failed test left in it; the
	 * walk does not follow symlinks out of it */
	if (nftw(dir, evs_rm_entry, 16, FTW_DEPTH | FTW_PHYS) && errno != ENOENT) {
		printf("cleanup: cannot remove %s: %s\n", dir, strerror(errno));
		failed++;
	}
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

/* CLOCK_MONOTONIC in nanoseconds. */
static inline uint64_t evs_test_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#endif

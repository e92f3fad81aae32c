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
#include <unistd.h>

#include "evstream/evstream.h"
#include "evstream/tensor.h"

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

static inline long evs_hugepages_free(void)
{
	FILE *f = fopen("/proc/meminfo", "r");
	char line[256];
	long v = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "HugePages_Free: %ld", &v) == 1)
			break;
	fclose(f);
	return v;
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

#endif

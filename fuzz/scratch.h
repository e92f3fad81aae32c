/* SPDX-License-Identifier: MIT */
/*
 * A fuzz target's scratch directory: /dev/shm/<prefix><pid>, made at
 * start, removed at exit; what a run that crashed (or was stopped) left is
 * removed by the next one, its process being gone. Files are made and
 * removed at every input, so it lives in memory. Header only: each target
 * is one translation unit (fuzz/fuzz.mk).
 */
#ifndef EVS_FUZZ_SCRATCH_H
#define EVS_FUZZ_SCRATCH_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#define SCRATCH_DIR "/dev/shm"

static char scratch[64];       /* SCRATCH_DIR/<prefix><pid> */
static int scratch_fd = -1;    /* a descriptor of it */

static int scratch_rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

/* Removes path and everything below it; 0 or -1. */
static int scratch_rm(const char *path)
{
	return nftw(path, scratch_rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void scratch_cleanup(void)
{
	scratch_rm(scratch);
}

/* Makes this process's scratch directory (aborts when it cannot). */
static void scratch_init(const char *prefix)
{
	DIR *d = opendir(SCRATCH_DIR);
	struct dirent *e;

	while (d && (e = readdir(d))) {
		char path[sizeof(scratch)];
		long pid;

		if (strncmp(e->d_name, prefix, strlen(prefix)))
			continue;
		pid = strtol(e->d_name + strlen(prefix), NULL, 10);
		if (pid > 0 && kill((pid_t)pid, 0) && errno == ESRCH &&
		    snprintf(path, sizeof(path), SCRATCH_DIR "/%s", e->d_name) < (int)sizeof(path))
			scratch_rm(path);
	}
	if (d)
		closedir(d);
	snprintf(scratch, sizeof(scratch), SCRATCH_DIR "/%s%d", prefix, (int)getpid());
	if (mkdir(scratch, 0700))
		abort();
	scratch_fd = open(scratch, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (scratch_fd < 0)
		abort();
	atexit(scratch_cleanup);
}

#endif

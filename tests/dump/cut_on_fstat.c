/* SPDX-License-Identifier: MIT */
/*
 * LD_PRELOAD for tests/dump/convert_cut.sh: fstat() of a file named
 * *.evsraw (or only of the one named by $EVS_CUT_ONLY) returns its size,
 * then the file is cut to half of it, as if its owner truncated it between
 * the converter's look at its size and its reading of the records. Once a
 * file: a later fstat() sees what is left.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

int fstat(int fd, struct stat *st)
{
	static int (*real_fstat)(int, struct stat *);
	char link[64], path[4096];
	ssize_t n;
	int rc;

	if (!real_fstat)
		real_fstat = (int (*)(int, struct stat *))dlsym(RTLD_NEXT, "fstat");
	rc = real_fstat(fd, st);
	if (rc || !S_ISREG(st->st_mode))
		return rc;
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, path, sizeof(path) - 1);
	if (n > 7 && !memcmp(path + n - 7, ".evsraw", 7)) {
		static char last[4096]; /* the files come one after another */
		const char *only = getenv("EVS_CUT_ONLY"), *base;

		path[n] = '\0';
		base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
		if ((only && strcmp(base, only)) || !strcmp(path, last))
			return rc;
		memcpy(last, path, (size_t)n + 1);
		if (truncate(path, st->st_size / 2))
			perror("cut_on_fstat: truncate");
	}
	return rc;
}

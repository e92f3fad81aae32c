/* SPDX-License-Identifier: MIT */
/*
 * The double getter tools/jsonl.h lacks, for the same flat one-line
 * objects and with the same contract as json_get_u64(). Its place is next
 * to the others in tools/jsonl.c, which keeps its key lookup static.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

int json_get_double(const char *line, const char *key, double *v)
{
	char pat[64];
	const char *p;
	char *end;

	/* as jsonl.c's lookup: an escaped quote in a string is \", so
	 * "key": cannot match inside one */
	snprintf(pat, sizeof(pat), "\"%s\":", key);
	p = strstr(line, pat);
	if (!p)
		return -ENOENT;
	p += strlen(pat);
	if (*p != '-' && (*p < '0' || *p > '9'))
		return -EINVAL;
	errno = 0;
	*v = strtod(p, &end);
	return errno || end == p || isnan(*v) ? -EINVAL : 0;
}

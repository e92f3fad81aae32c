/* SPDX-License-Identifier: MIT */
/* Numbers from the environment, checked, with errors that name the bad
 * value and what is allowed. Used by the transport's limits (config.c)
 * and by the runtime's variables (runtime/env.c). */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>

#include "envnum.h"
#include "errors.h"

/* A decimal count, with K/M/G/T (binary) suffixes; -EINVAL, -ERANGE. */
static int parse_u64(const char *s, uint64_t *out)
{
	unsigned long long v;
	char *end;
	int shift = 0;
	bool too_big;

	if (!s || !*s || *s == '-' || *s == '+' || *s == ' ')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (end == s)
		return -EINVAL;
	too_big = errno == ERANGE; /* digits, more than a uint64: said once the rest is read */
	if (*end) {
		switch (*end) {
		case 'k': case 'K': shift = 10; break;
		case 'm': case 'M': shift = 20; break;
		case 'g': case 'G': shift = 30; break;
		case 't': case 'T': shift = 40; break;
		default: return -EINVAL;
		}
		end++;
		if (*end == 'i' || *end == 'I')
			end++;
		if (*end == 'b' || *end == 'B')
			end++;
		if (*end)
			return -EINVAL;
	}
	if (too_big || (shift && v > (ULLONG_MAX >> shift)))
		return -ERANGE;
	*out = (uint64_t)v << shift;
	return 0;
}

int evs_env_u64(const char *var, uint64_t min, uint64_t max, const char *what, uint64_t *out)
{
	const char *s = getenv(var);
	uint64_t v;
	int err;

	if (!s)
		return 0;
	err = parse_u64(s, &v);
	if (err == -ERANGE)
		v = UINT64_MAX; /* out of range below, as any number too big */
	else if (err)
		return evs_fail(EINVAL, "%s='%s' is not a number: allowed is %s from %llu to %llu "
				"(suffixes K, M, G, T)", var, s, what,
				(unsigned long long)min, (unsigned long long)max);
	if (v < min || v > max)
		return evs_fail(EINVAL, "%s=%s is out of range: allowed is %s from %llu to %llu",
				var, s, what, (unsigned long long)min, (unsigned long long)max);
	*out = v;
	return 1;
}

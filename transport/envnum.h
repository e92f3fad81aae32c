/* SPDX-License-Identifier: MIT */
/* Numbers from the environment, checked (envnum.c). */
#ifndef EVS_ENVNUM_H
#define EVS_ENVNUM_H

#include <stdint.h>

/* A number from the environment variable var, min to max (decimal, with
 * K/M/G/T binary suffixes): 1 and *out when set, 0 when not, -EINVAL with
 * a sentence naming it and what (a byte count, an event count...) is
 * allowed. */
int evs_env_u64(const char *var, uint64_t min, uint64_t max, const char *what, uint64_t *out);

#endif

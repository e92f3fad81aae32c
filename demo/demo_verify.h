/* SPDX-License-Identifier: MIT */
#ifndef EVS_TOOLS_DEMO_VERIFY_H
#define EVS_TOOLS_DEMO_VERIFY_H

#include <stdbool.h>
#include <stdint.h>

/* 0 when the dump in dir matches what evs-demo emitted; 1 otherwise. */
int demo_verify(const char *dir, int pattern, uint64_t seed, bool allow_missing);

#endif

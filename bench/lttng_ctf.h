/* SPDX-License-Identifier: MIT */
/* Counting the events of an LTTng-UST trace (lttng_ctf.c). */
#ifndef EVS_BENCH_LTTNG_CTF_H
#define EVS_BENCH_LTTNG_CTF_H

#include <stddef.h>
#include <stdint.h>

/*
 * The events named `event` in the CTF trace under dir (every stream of
 * every buffer directory below it), read as LTTng-UST 2.13 writes them:
 * the layout is checked against the trace's own metadata, and every
 * packet must end exactly where its header says. 0, or -1 with why.
 */
int lt_ctf_count(const char *dir, const char *event, uint64_t *events, char *why, size_t len);

#endif

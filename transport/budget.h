/* SPDX-License-Identifier: MIT */
/* Whether this process can afford a producer's rings (budget.c). */
#ifndef EVS_BUDGET_H
#define EVS_BUDGET_H

#include <stdbool.h>

#include "config.h"

/*
 * Before any ring memory is taken: decide whether ncores rings of
 * cfg->ring_bytes come from huge pages (cfg->hugepages: auto takes them
 * when the pool has them all free), and check the whole, not one ring at a
 * time, against what the process may use: the memory cgroup's limit,
 * available memory, RLIMIT_AS. 0, or -ENOMEM / -ENOSPC with a sentence
 * naming the total, the limit and where it comes from.
 */
int evs_budget_check(const struct evs_config *cfg, unsigned int ncores, bool *hugetlb);

#endif

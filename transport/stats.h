/* SPDX-License-Identifier: MIT */
/* Stream statistics from the shared pages, for either side (stats.c). */
#ifndef EVS_STATS_H
#define EVS_STATS_H

#include "evstream/evstream.h"
#include "layout.h"

/* 0 when the caller's struct holds at least every field of 1.0, else
 * -EINVAL with the reason for evs_errmsg(). */
int evs_stats_check(const struct evs_stream_stats *st);
/* Everything the shared pages say (the fields only one side knows are 0). */
void evs_stats_from_shm(const struct evs_shm_prod *prod, const struct evs_shm_cons *cons,
			struct evs_stream_stats *st);
/* Hand out as much of full as the caller's struct holds. */
void evs_stats_copy_out(struct evs_stream_stats *st, const struct evs_stream_stats *full);

#endif

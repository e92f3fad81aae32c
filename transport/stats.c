/* SPDX-License-Identifier: MIT */
/* Stream statistics, read from the shared pages, for either side. */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "atomics.h"
#include "errors.h"
#include "stats.h"

_Static_assert(EVS_DROP_CAUSE_COUNT <= 4, "the shared page counts four causes");

int evs_stats_check(const struct evs_stream_stats *st)
{
	size_t least = offsetof(struct evs_stream_stats, core) + sizeof(st->core);

	if (!st)
		return evs_fail(EINVAL, "stats: the struct evs_stream_stats is NULL");
	if (st->sz < least)
		return evs_fail(EINVAL, "stats: sz=%zu is too small: set it to sizeof(struct "
				"evs_stream_stats) (%zu in this library; at least %zu)",
				st->sz, sizeof(*st), least);
	return 0;
}

void evs_stats_from_shm(const struct evs_shm_prod *prod, const struct evs_shm_cons *cons,
			struct evs_stream_stats *st)
{
	uint64_t dropped = 0;

	memset(st, 0, sizeof(*st));
	st->sz = sizeof(*st);
	st->committed = READ_ONCE(&prod->committed);
	for (int i = 0; i < EVS_DROP_CAUSE_COUNT; i++) {
		st->dropped_events[i] = READ_ONCE(&prod->dropped_events[i]);
		st->dropped_bytes[i] = READ_ONCE(&prod->dropped_bytes[i]);
		dropped += st->dropped_events[i];
	}
	st->dropped = dropped;
	/* committed counts published records only, so this is what a
	 * reader can account for */
	st->produced = st->committed + dropped;
	st->released = READ_ONCE(&cons->released);
	st->wakeups = READ_ONCE(&prod->wakeups);
	st->ring_bytes = prod->ring_bytes;
	st->max_events = prod->max_events;
	st->page_size = prod->page_size;
	st->hugepages = !!(prod->flags & EVS_SHM_F_HUGETLB);
	st->core = prod->core;
	st->producer_closed = !!(READ_ONCE(&prod->state) & EVS_STATE_CLOSED);
}

void evs_stats_copy_out(struct evs_stream_stats *st, const struct evs_stream_stats *full)
{
	size_t sz = st->sz < sizeof(*full) ? st->sz : sizeof(*full);

	memcpy(st, full, sz);
	st->sz = sz;
}

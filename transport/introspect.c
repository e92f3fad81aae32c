/* SPDX-License-Identifier: MIT */
/* Not API: a stream's tuning for evstream's own tests and benchmark
 * (introspect.h). */
#include <errno.h>
#include <string.h>

#include "consumer.h"
#include "evstream-private/introspect.h"
#include "probes.h"
#include "producer.h"
#include "ringcopy.h"

_Static_assert(EVS__RING_COPY_STREAMING == EVS_RING_COPY_STREAMING, "one threshold");
_Static_assert(EVS__DROP_BATCH == EVS_DROP_BATCH, "one batch");
_Static_assert(EVS__CATCHUP_QUIET_LOOKS == EVS_CATCHUP_QUIET_LOOKS, "one rule");
_Static_assert(EVS__CATCHUP_MIN_BYTES == EVS_CATCHUP_MIN_BYTES, "one rule");

EVS_API int evs__producer_tuning(const struct evs_producer *p, unsigned int core,
				 struct evs_tuning *t)
{
	const struct evs_stream *s;

	if (!p || core >= p->ncores || !t)
		return -EINVAL;
	s = &p->streams[core];
	memset(t, 0, sizeof(*t));
	t->membarrier = READ_ONCE(&s->active) && !READ_ONCE(&s->fence);
	t->tsc_timestamps = s->timestamps && evs_clock_uses_tsc(&s->clock);
	return 0;
}

EVS_API int evs__consumer_tuning(const struct evs_consumer *c, struct evs_tuning *t)
{
	if (!c || !t)
		return -EINVAL;
	memset(t, 0, sizeof(*t));
	t->membarrier = c->membarrier;
	t->arms = c->arms;
	t->catchup_ns = c->catchup_ns;
	t->catchup_pauses = c->catchup_pauses;
	return 0;
}

EVS_API void evs__ring_copy(void *dst, const void *src, size_t n)
{
	ring_copy(dst, src, n);
}

/* SPDX-License-Identifier: MIT */
/*
 * A stream's leases: the records it holds of its consumer's window, one
 * slot each by ticket, in ring order.
 *
 * Every record handed out stays in the ring (the library's window:
 * peek_next hands out, release gives back the oldest) until its Event's
 * lease has ended and no buffer export of it is alive (event.c says when).
 * Records go back in ring order: a lease that ends early waits for the
 * older ones.
 *
 * The consumer calls of a stream that a subscription's thread reads
 * ("threaded") are made here, under the stream's mutex, which is never
 * held while calling into Python.
 */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "lease.h"

#define WINDOW EVSPY_WINDOW

void evspy_lease_free_consumer(StreamObject *s)
{
	if (!s->c)
		return;
	evs_consumer__free(s->c);
	s->c = NULL;
	if (s->epfd >= 0)
		close(s->epfd);
	s->epfd = -1;
	s->fd = -1;
}

void evspy_lease_maybe_free(StreamObject *s)
{
	if (s->closed && s->head == s->tail && !s->waiting)
		evspy_lease_free_consumer(s);
}

int evspy_lease_grow(StreamObject *s)
{
	uint64_t cap = s->slot_cap * 2;
	struct evspy_slot *to;

	if (s->tail - s->head >= WINDOW)
		return -ENOBUFS;
	to = calloc(cap, sizeof(*to));
	if (!to)
		return -ENOMEM;
	for (uint64_t t = s->head; t != s->tail; t++)
		to[t & (cap - 1)] = *slot_at(s, t);
	free(s->slots);
	s->slots = to;
	s->slot_cap = cap;
	return 0;
}

int evspy_lease_prepare_wait(StreamObject *s)
{
	int r;

	stream_lock(s);
	r = evs_consumer__prepare_wait(s->c);
	stream_unlock(s);
	return r;
}

PyObject **evspy_lease_events(StreamObject *s, uint64_t *n)
{
	PyObject **evs = PyMem_Malloc((size_t)(s->tail - s->head + 1) * sizeof(*evs));

	*n = 0;
	if (!evs)
		return NULL;
	stream_lock(s);
	for (uint64_t t = s->head; t != s->tail; t++) {
		PyObject *e = slot_at(s, t)->event;

		if (e) {
			Py_INCREF(e);
			evs[(*n)++] = e;
		}
	}
	stream_unlock(s);
	return evs;
}

/* SPDX-License-Identifier: MIT */
/*
 * A stream's leases: the records it holds of its consumer's window, one
 * slot each by ticket, in ring order (lease.c says more). What every event
 * passes through is inline here: as calls into lease.c they cost an
 * iteration step 19 of its 411 instructions (callgrind).
 */
#ifndef EVSPY_LEASE_H
#define EVSPY_LEASE_H

#include "evspy.h"

/* A threaded stream's consumer and slots are touched under its mutex. */
static inline void stream_lock(StreamObject *s)
{
	if (s->threaded)
		pthread_mutex_lock(&s->lock);
}

static inline void stream_unlock(StreamObject *s)
{
	if (s->threaded)
		pthread_mutex_unlock(&s->lock);
}

static inline struct evspy_slot *slot_at(StreamObject *s, uint64_t ticket)
{
	return &s->slots[ticket & (s->slot_cap - 1)];
}

/* Room for one more slot when every slot is taken: the ring doubles, up to
 * the window (-ENOBUFS past it; -ENOMEM). Locked. */
int evspy_lease_grow(StreamObject *s);
/* Arm the consumer's wakeup (evs_consumer__prepare_wait), under the lock. */
int evspy_lease_prepare_wait(StreamObject *s);
/* A new reference to each Event alive that holds a record, n of them, in a
 * PyMem array (NULL and n 0 without memory). */
PyObject **evspy_lease_events(StreamObject *s, uint64_t *n);
/* A closed stream lets its consumer go once nothing is held and no read
 * is waiting on its fds (that read frees it when it wakes). */
void evspy_lease_maybe_free(StreamObject *s);
void evspy_lease_free_consumer(StreamObject *s);

/* The record handed out after the last one (peek_next), into a new slot.
 * 0, or the library's -EAGAIN, -EPIPE, -EBADMSG; -ENOBUFS: window full. */
static inline int evspy_lease_take(StreamObject *s, struct evs_record *rec, uint64_t *ticket)
{
	int r = 0;

	stream_lock(s);
	if (s->tail - s->head >= s->slot_cap)
		r = evspy_lease_grow(s);
	if (r == 0)
#if EVSPY_HAVE_PEEK_NEXT
		r = evs_consumer__peek_next(s->c, rec);
#else
		r = evs_consumer__peek(s->c, rec);
#endif
	if (r == 0) {
		struct evspy_slot *slot = slot_at(s, s->tail);

		slot->event = NULL;
		slot->done = false;
		*ticket = s->tail++;
	}
	stream_unlock(s);
	return r;
}

/* The Event (borrowed) that holds the record of ticket. */
static inline void evspy_lease_attach(StreamObject *s, uint64_t ticket, PyObject *ev)
{
	stream_lock(s);
	slot_at(s, ticket)->event = ev;
	stream_unlock(s);
}

/* A record whose lease ended with no view alive: give back, oldest first,
 * every record whose lease has ended. */
static inline void evspy_lease_done(StreamObject *s, uint64_t ticket)
{
	struct evspy_slot *slot;

	if (!s->c)
		return;
	stream_lock(s);
	slot = slot_at(s, ticket);
	slot->event = NULL;
	slot->done = true;
	while (s->head != s->tail && slot_at(s, s->head)->done) {
		evs_consumer__release(s->c);
		s->head++;
	}
	stream_unlock(s);
	evspy_lease_maybe_free(s);
}

#endif

/* SPDX-License-Identifier: MIT */
/*
 * The server's connections that were accepted and whose hello has not come
 * yet (pending.c): each with its own deadline, in the order accepted, at
 * most EVS_PENDING_MAX of them. The server thread polls them with every
 * other socket it watches, so no client's silence holds it; see
 * "Deadlines" in docs/architecture.md.
 */
#ifndef EVS_PENDING_H
#define EVS_PENDING_H

#include <stdbool.h>
#include <stdint.h>

/* Connections waiting for their hello at once, at most: each holds one of
 * the producer's descriptors (docs/api.md counts them). */
#define EVS_PENDING_MAX 8
/* A hello must come within this long of the accept. */
#define EVS_HELLO_TIMEOUT_MS 1000

struct evs_pending {
	unsigned int n;
	struct {
		int fd;
		int64_t deadline_ms;  /* monotonic (evs_monotonic_ms()) */
	} slot[EVS_PENDING_MAX];      /* [0]: the one accepted first */
};

static inline bool evs_pending_full(const struct evs_pending *t)
{
	return t->n == EVS_PENDING_MAX;
}

/* Appends fd, accepted last (at now_ms, monotonic: its deadline is
 * EVS_HELLO_TIMEOUT_MS later); the table must not be full. */
void evs_pending_add(struct evs_pending *t, int fd, int64_t now_ms);
/* Removes entry i (0: the oldest) and returns its fd; the later ones move
 * down by one, keeping their order. */
int evs_pending_take(struct evs_pending *t, unsigned int i);
/* A poll() timeout in ms until the nearest deadline after now_ms: -1 with
 * nothing pending, 0 when one has passed. */
int evs_pending_timeout(const struct evs_pending *t, int64_t now_ms);
/* The fd of the entry accepted first when its deadline is at or before
 * now_ms (then the earliest expired), removed from the table; -1 when
 * there is none. */
int evs_pending_take_expired(struct evs_pending *t, int64_t now_ms);

#endif

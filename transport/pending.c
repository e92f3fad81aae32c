/* SPDX-License-Identifier: MIT */
/* The server's connections waiting for their hello (pending.h). Used by
 * the server thread only. */
#include <limits.h>
#include <string.h>

#include "pending.h"

void evs_pending_add(struct evs_pending *t, int fd, int64_t now_ms)
{
	t->slot[t->n].fd = fd;
	t->slot[t->n].deadline_ms = now_ms + EVS_HELLO_TIMEOUT_MS;
	t->n++;
}

int evs_pending_take(struct evs_pending *t, unsigned int i)
{
	int fd = t->slot[i].fd;

	memmove(&t->slot[i], &t->slot[i + 1], (t->n - i - 1) * sizeof(t->slot[0]));
	t->n--;
	return fd;
}

/* Entries are in the order accepted, each with the same time to wait, on
 * a clock that never goes back: the first one's deadline is the nearest. */
int evs_pending_timeout(const struct evs_pending *t, int64_t now_ms)
{
	int64_t left;

	if (!t->n)
		return -1;
	left = t->slot[0].deadline_ms - now_ms;
	return left < 0 ? 0 : left > INT_MAX ? INT_MAX : (int)left;
}

int evs_pending_take_expired(struct evs_pending *t, int64_t now_ms)
{
	return t->n && t->slot[0].deadline_ms <= now_ms ? evs_pending_take(t, 0) : -1;
}

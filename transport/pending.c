/* SPDX-License-Identifier: MIT */
/* The server's connections waiting for their hello (pending.h). Used by
 * the server thread only. */
#include <limits.h>
#include <string.h>

#include "pending.h"

void evs_pending_add(struct evs_pending *t, int fd, int64_t deadline_ms)
{
	t->slot[t->n].fd = fd;
	t->slot[t->n].deadline_ms = deadline_ms;
	t->n++;
}

int evs_pending_take(struct evs_pending *t, unsigned int i)
{
	int fd = t->slot[i].fd;

	memmove(&t->slot[i], &t->slot[i + 1], (t->n - i - 1) * sizeof(t->slot[0]));
	t->n--;
	return fd;
}

int evs_pending_timeout(const struct evs_pending *t, int64_t now_ms)
{
	int64_t left = -1;

	for (unsigned int i = 0; i < t->n; i++) {
		int64_t d = t->slot[i].deadline_ms - now_ms;

		if (d < 0)
			d = 0;
		if (left < 0 || d < left)
			left = d;
	}
	return left > INT_MAX ? INT_MAX : (int)left;
}

int evs_pending_take_expired(struct evs_pending *t, int64_t now_ms)
{
	for (unsigned int i = 0; i < t->n; i++)
		if (t->slot[i].deadline_ms <= now_ms)
			return evs_pending_take(t, i);
	return -1;
}

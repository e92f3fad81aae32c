/* SPDX-License-Identifier: MIT */
/*
 * The eventfd, written and drained without ever waiting.
 *
 * O_NONBLOCK belongs to the open file description, which SCM_RIGHTS shares
 * with the consumer process: a consumer could clear it and fill the counter
 * so that a write would wait. Putting the flag back before each use (one
 * fcntl, on the wake path only) closes that unless the consumer flips it
 * back concurrently, which takes a deliberately hostile process of the same
 * uid or allowed group (see docs/reliability.md).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/eventfd.h>

#include "wakeup.h"

static void keep_nonblocking(int efd)
{
	int fl = fcntl(efd, F_GETFL);

	if (fl >= 0 && !(fl & O_NONBLOCK))
		fcntl(efd, F_SETFL, fl | O_NONBLOCK);
}

bool evs_efd_kick(int efd)
{
	keep_nonblocking(efd);
	return eventfd_write(efd, 1) == 0;
}

void evs_efd_drain(int efd)
{
	eventfd_t v;

	keep_nonblocking(efd);
	while (eventfd_read(efd, &v) == 0)
		;
}

int evs_efd_check(int fd, char *what, size_t len)
{
	char path[32];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = readlink(path, what, len - 1);
	if (n < 0) {
		int err = errno;

		snprintf(what, len, "%s", strerror(err));
		return -err;
	}
	what[n] = '\0';
	return strcmp(what, "anon_inode:[eventfd]") ? -EPROTO : 0;
}

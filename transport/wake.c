/* SPDX-License-Identifier: MIT */
/*
 * The wakeup channel of a stream: a Unix socket pair, not an eventfd.
 *
 * An eventfd's O_NONBLOCK lives in its open file description, which
 * SCM_RIGHTS shares with the consumer: a consumer could clear it and fill
 * the counter, and the producer's next eventfd write would block. With a
 * socket pair the producer keeps the kick end to itself and hands out only
 * the wait end; every send and recv here says MSG_DONTWAIT, which holds per
 * call whatever anyone sets on the file. A full queue only means a kick is
 * already pending. When the producer's end closes (free or death), the wait
 * end reads EOF: a sleeping consumer wakes and learns that the producer
 * has gone.
 */
#include <errno.h>
#include <sys/socket.h>

#include "internal.h"

int evs_wake_pair(int *kick_fd, int *wait_fd)
{
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) < 0)
		return -errno;
	/* nothing ever flows from the consumer to the producer */
	shutdown(sv[0], SHUT_RD);
	*kick_fd = sv[0];
	*wait_fd = sv[1];
	return 0;
}

bool evs_wake_kick(int kick_fd)
{
	char one = 1;

	return send(kick_fd, &one, 1, MSG_DONTWAIT | MSG_NOSIGNAL) == 1;
}

int evs_wake_drain(int wait_fd)
{
	char buf[64];
	int got = 0;

	for (;;) {
		ssize_t n = recv(wait_fd, buf, sizeof(buf), MSG_DONTWAIT);

		if (n > 0) {
			got = 1;
			continue;
		}
		if (n == 0)
			return got ? got : -EPIPE; /* the producer's end is closed */
		return got;
	}
}

/* SPDX-License-Identifier: MIT */
/*
 * The stream's eventfd, written and read without ever waiting, by the
 * producer and the consumer alike: nothing else in the library reads or
 * writes it.
 *
 * O_NONBLOCK belongs to the open file description, which SCM_RIGHTS shares
 * with every consumer process the stream ever had; any of them may have
 * kept a copy and clear the flag at any moment, and a hostile producer
 * hands out a blocking one. So no call here trusts the flag:
 *  - a read asks per call not to wait, preadv2(RWF_NOWAIT): an eventfd
 *    honours it, and a zero count is EAGAIN whatever the flag says
 *    (measured on Linux 6.18). Where the kernel says EOPNOTSUPP (an eventfd
 *    without read_iter), drain_flagged() does what it can.
 *  - a write has no per-call flag: an eventfd has no write_iter, and
 *    pwritev2(RWF_NOWAIT) is EOPNOTSUPP (Linux 6.18). See evs_efd_kick().
 * All of it is on the wake path (at most once per consumer sleep), never
 * on the producer's per-record path.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <sys/uio.h>

#include "atomics.h"
#include "wakeup.h"

/* A read with RWF_NOWAIT said EOPNOTSUPP: a property of the kernel, and
 * the fd was checked to be an eventfd, so ask once per process. The build
 * variant of such a kernel starts with it set (tests/variants.sh, oldefd). */
#ifdef EVS_EFD_NO_NOWAIT_READS
static _Atomic bool no_nowait_reads = true;
#else
static _Atomic bool no_nowait_reads;
#endif

static void keep_nonblocking(int efd)
{
	int fl = fcntl(efd, F_GETFL);

	if (fl >= 0 && !(fl & O_NONBLOCK))
		fcntl(efd, F_SETFL, fl | O_NONBLOCK);
}

/* Older kernels: the flag put back, and a count seen before the read. The
 * read then waits only if another holder clears the flag after our fcntl
 * and takes the count after our poll, both within these few microseconds,
 * and only until the next write (a kick). */
static bool drain_flagged(int efd)
{
	struct pollfd pfd = { .fd = efd, .events = POLLIN };
	eventfd_t v;

	keep_nonblocking(efd);
	return poll(&pfd, 1, 0) == 1 && (pfd.revents & POLLIN) && eventfd_read(efd, &v) == 0;
}

bool evs_efd_drain(int efd)
{
	eventfd_t v;
	struct iovec iov = { .iov_base = &v, .iov_len = sizeof(v) };
	ssize_t n;

	/* relaxed: a hint; with either answer the read does not wait */
	if (!READ_ONCE(&no_nowait_reads)) {
		n = preadv2(efd, &iov, 1, -1, RWF_NOWAIT);
		if (n >= 0 || (errno != EOPNOTSUPP && errno != ENOSYS))
			return n == (ssize_t)sizeof(v);
		WRITE_ONCE(&no_nowait_reads, true);
	}
	return drain_flagged(efd);
}

/*
 * A write waits only when the count would pass 0xfffffffffffffffe, and
 * poll() says POLLOUT exactly when 1 more fits; the flag is put back too.
 * What remains: another holder that clears O_NONBLOCK after our fcntl
 * *and* fills the counter after our poll, both within the microseconds
 * before our write, makes that write wait until someone reads the count.
 * The window is what is bounded, not that wait: nothing can be set up
 * ahead of time (a full counter fails the poll: no write, and the fd is
 * readable anyway; a cleared flag is put back), so it takes a race
 * against two of our system calls, once per consumer sleep. A producer's
 * write caught that way goes on when the stream's consumer drains the
 * full, hence readable, count at its next wake; a consumer that is
 * itself that holder, or that holder against a consumer's own kick
 * (consumer_take_arm_back()), can keep it waiting (docs/reliability.md,
 * "The eventfd").
 */
bool evs_efd_kick(int efd)
{
	struct pollfd pfd = { .fd = efd, .events = POLLOUT };

	keep_nonblocking(efd);
	if (poll(&pfd, 1, 0) != 1 || !(pfd.revents & POLLOUT))
		return false;
	return eventfd_write(efd, 1) == 0;
}

/* The eventfd's EFD_SEMAPHORE flag, from /proc/self/fdinfo (Linux 6.4
 * on; an older kernel does not say, and false is all one can answer). */
static bool efd_is_semaphore(int fd)
{
	char path[40], line[128];
	bool sem = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = fopen(path, "re");
	if (!f)
		return false;
	while (fgets(line, sizeof(line), f)) {
		unsigned int v;

		if (sscanf(line, "eventfd-semaphore: %u", &v) == 1) {
			sem = v != 0;
			break;
		}
	}
	fclose(f);
	return sem;
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
	if (strcmp(what, "anon_inode:[eventfd]") != 0)
		return -EPROTO;
	if (efd_is_semaphore(fd)) {
		/* one read takes 1 from its count: it would stay readable */
		snprintf(what, len, "a semaphore eventfd");
		return -EPROTO;
	}
	return 0;
}

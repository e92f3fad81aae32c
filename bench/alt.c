/* SPDX-License-Identifier: MIT */
/*
 * The alternatives: a pipe and a Unix stream socket carrying the same events
 * (64-byte header + payload, one writev() per event, as a producer that
 * emits events one at a time would). The reader is generous to them: it
 * reads as much as is there into a large buffer and counts whole events.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "bench.h"

#define ALT_READ_BYTES (1u << 20)

struct alt {
	int wfd, rfd;
	size_t size;
	const uint8_t *src;
	uint8_t *buf;    /* the reader's, ALT_READ_BYTES */
	struct run run;
};

static void *alt_writer(void *arg)
{
	struct alt *a = arg;
	uint8_t hdr[64] = { 0 };
	struct iovec iov[2] = { { hdr, 64 }, { (void *)a->src, a->size } };
	uint64_t n = 0;

	for (;;) {
		size_t left = 64 + a->size, done = 0;

		memcpy(hdr, &a->size, sizeof(a->size));
		memcpy(hdr + 16, &n, sizeof(n));
		while (done < left) {
			struct iovec v[2];
			int cnt = 0;

			/* resume a partial write where it stopped */
			for (int i = 0, skip = (int)done; i < 2; i++) {
				size_t l = iov[i].iov_len;

				if ((size_t)skip >= l) {
					skip -= (int)l;
					continue;
				}
				v[cnt].iov_base = (uint8_t *)iov[i].iov_base + skip;
				v[cnt].iov_len = l - (size_t)skip;
				skip = 0;
				cnt++;
			}
			ssize_t w = writev(a->wfd, v, cnt);

			if (w < 0) {
				if (errno == EINTR)
					continue;
				warn("alternative writer: %s", strerror(errno));
				goto out;
			}
			done += (size_t)w;
		}
		n++;
		if ((n & 15) == 0 && run_tick(&a->run))
			break;
	}
out:
	run_finish(&a->run, n);
	close(a->wfd);
	return NULL;
}

static void *alt_reader(void *arg)
{
	struct alt *a = arg;
	uint64_t bytes = 0, rec = 64 + a->size;

	for (;;) {
		ssize_t r = read(a->rfd, a->buf, ALT_READ_BYTES);

		if (r <= 0) {
			if (r < 0 && errno == EINTR)
				continue;
			break;
		}
		bytes += (uint64_t)r;
		run_mark(&a->run, bytes / rec);
	}
	run_mark(&a->run, bytes / rec);
	close(a->rfd);
	return NULL;
}

/* src: the payload source, the one the evstream paths copy from */
struct tput alt_measure(bool sock, size_t size, const uint8_t *src)
{
	struct alt a = { .size = size, .src = src, .buf = malloc(ALT_READ_BYTES) };
	struct tput t = { 0 };
	int fds[2];

	if (!a.buf) {
		warn("alternative: out of memory");
		return t;
	}
	if (sock) {
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) < 0)
			goto out;
		a.rfd = fds[0];
		a.wfd = fds[1];
	} else {
		if (pipe2(fds, O_CLOEXEC) < 0)
			goto out;
		/* the largest pipe an unprivileged user gets by default */
		fcntl(fds[1], F_SETPIPE_SZ, 1 << 20);
		a.rfd = fds[0];
		a.wfd = fds[1];
	}
	run_start(&a.run);
	bench_pair(alt_writer, &a, alt_reader, &a);
	t = tput_of(run_rate(&a.run), size);
out:
	free(a.buf);
	return t;
}

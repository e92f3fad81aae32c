/* SPDX-License-Identifier: MIT */
/* A consumer in another process: check the runtime directory and the
 * producer's socket and credentials, say hello, and receive the stream's
 * memfds and eventfd (handshake.h), all within one deadline. What comes is
 * checked before anything uses it: the welcome here, the memfds when they
 * are mapped (attach.c). */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "client.h"
#include "clock.h"
#include "config.h"
#include "errors.h"
#include "layout.h"
#include "membarrier.h"
#include "rundir.h"
#include "wakeup.h"

static void close_fds(int *fds, int n)
{
	for (int i = 0; i < n; i++)
		if (fds[i] >= 0)
			close(fds[i]);
}

/* Receives the welcome and up to 3 descriptors; extra ones are closed.
 * -ECONNRESET: the producer hung up before any byte of it (it died or
 * closed mid-handshake); -EPROTO: what came is not a whole welcome. */
static int recv_welcome(int sock, struct evs_welcome *w, int *fds, int *nfds, int timeout_ms)
{
	char cbuf[CMSG_SPACE(8 * sizeof(int))];
	struct iovec iov = { .iov_base = w, .iov_len = sizeof(*w) };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1,
			      .msg_control = cbuf, .msg_controllen = sizeof(cbuf) };
	struct pollfd pfd = { .fd = sock, .events = POLLIN };
	struct cmsghdr *cm;
	ssize_t n;

	*nfds = 0;
	n = poll(&pfd, 1, timeout_ms);
	if (n == 0)
		return -ETIMEDOUT;
	if (n < 0)
		return -errno;
	n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
	if (n < 0)
		return -errno; /* ECONNRESET too: the producer died mid-handshake */
	for (cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm)) {
		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		int cnt = (int)((cm->cmsg_len - CMSG_LEN(0)) / sizeof(int));
		int got[8];

		memcpy(got, CMSG_DATA(cm), cnt * sizeof(int));
		for (int i = 0; i < cnt; i++) {
			if (*nfds < EVS_WELCOME_NFDS)
				fds[(*nfds)++] = got[i];
			else
				close(got[i]);
		}
	}
	if (n == 0 && !*nfds)
		return -ECONNRESET;
	if (n != (ssize_t)sizeof(*w) || (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) ||
	    w->magic != EVS_WELCOME_MAGIC)
		return -EPROTO;
	return 0;
}

/* A pause before the next try, longer each time (200 us to 10 ms, never
 * past the deadline): false when the deadline has passed, or a signal
 * handler cut the pause short (errno EINTR). */
static bool try_again(long *pause_us, int64_t deadline)
{
	int64_t left = deadline - evs_monotonic_ms();
	struct timespec ts;

	errno = 0;
	if (left <= 0)
		return false;
	if (*pause_us > left * 1000)
		*pause_us = (long)left * 1000;
	ts = (struct timespec){ .tv_nsec = *pause_us * 1000 };
	if (nanosleep(&ts, NULL) < 0)
		return false;
	if (*pause_us < 10000)
		*pause_us *= 2;
	return true;
}

/*
 * A producer that is stopped (SIGSTOP, a debugger) accepts nothing, and
 * once its listen queue is full a blocking connect() waits for ever. The
 * socket is non-blocking, so a full queue is EAGAIN at once: try again,
 * more slowly each time, until the deadline. -EINTR when a signal handler
 * cut a pause short: the caller decides whether to go on.
 */
static int connect_until(int sock, const struct sockaddr_un *sa, int64_t deadline)
{
	long pause_us = 200;

	for (;;) {
		if (connect(sock, (const struct sockaddr *)sa, sizeof(*sa)) == 0)
			return 0;
		if (errno != EAGAIN)
			return -errno;
		if (!try_again(&pause_us, deadline))
			return errno == EINTR ? -EINTR : -ETIMEDOUT;
	}
}

/* The producer is who the directory says it should be: its uid or root.
 * Checked before we say anything, so a relay learns nothing from us. */
static int check_peer(int sock, const struct evs_rundir *d, const char *name, const char *file)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);

	if (getsockopt(sock, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
		return evs_fail(errno, "producer '%s': reading its credentials: %s", name,
				strerror(errno));
	if (cred.uid != d->peer_uid && cred.uid != 0)
		return evs_fail(EPERM, "%s/%s is served by uid %u (pid %d): refused, expected uid %u or "
				"root", d->path, file, (unsigned)cred.uid, (int)cred.pid,
				(unsigned)d->peer_uid);
	return 0;
}

/* The server refused every try with "too many connections waiting for
 * their hello" until the deadline. */
static int refused_too_long(const char *name, int timeout)
{
	return evs_fail(EAGAIN, "producer '%s' kept closing this consumer's connections before "
			"reading their hello, for %d ms: too many connections were waiting to say "
			"theirs (something connects and says nothing?)", name, timeout);
}

int evs_client_handshake(const char *name, unsigned int core, const struct evs_consumer_opts *opts,
			 struct evs_welcome *welcome, int fds[EVS_WELCOME_NFDS], int *sockp)
{
	struct sockaddr_un sa;
	struct evs_rundir dir;
	char file[EVS_RUNFILE_MAX], what[128];
	struct evs_hello h = { .magic = EVS_HELLO_MAGIC, .abi_major = EVS_ABI_MAJOR,
			       .abi_minor = EVS_ABI_MINOR, .core = core,
			       .flags = evs_membarrier_usable() ? EVS_HELLO_F_MEMBARRIER : 0 };
	struct evs_welcome w = { 0 };
	int nfds = 0, sock = -1;
	int timeout = OPTS_GET(opts, timeout_ms, 0) > 0 ? opts->timeout_ms : 2000;
	int64_t deadline = evs_monotonic_ms() + timeout;
	long pause_us = 200;
	bool refused = false; /* once for too many waiting: said if time runs out */
	int err;

	err = evs_rundir_open(&dir, OPTS_GET(opts, runtime_dir, NULL), name);
	if (err)
		return err;
	evs_runfile(file, name, ".sock");
	err = evs_rundir_check_socket(&dir, name, file);
	if (err)
		goto err_close;
again:
	sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (sock < 0) {
		err = -errno;
		goto err_close;
	}
	evs_rundir_sockaddr(&dir, file, &sa);
	err = connect_until(sock, &sa, deadline);
	if (err == -ENOENT || err == -ECONNREFUSED) {
		evs_fail(ENOENT, "no producer named '%s' (no one listens on %s/%s)", name, dir.path, file);
		err = -ENOENT;
		goto err_close;
	} else if (err == -ETIMEDOUT && refused) {
		err = refused_too_long(name, timeout);
		goto err_close;
	} else if (err == -ETIMEDOUT) {
		evs_fail(ETIMEDOUT, "producer '%s' accepts no connection: the listen queue of %s/%s stayed "
			 "full for %d ms (is the producer stopped, e.g. in a debugger?)", name, dir.path,
			 file, timeout);
		goto err_close;
	} else if (err) {
		evs_fail(-err, "connecting to producer '%s' at %s/%s: %s", name, dir.path, file,
			 evs_strerror(err));
		goto err_close;
	}
	err = check_peer(sock, &dir, name, file);
	if (err)
		goto err_close;
	/* a server that refuses us (credentials) may answer and hang up before
	 * reading the hello: its answer is still ours to read */
	if (send(sock, &h, sizeof(h), MSG_NOSIGNAL) != (ssize_t)sizeof(h)) {
		int serr = errno;

		if (recv_welcome(sock, &w, fds, &nfds, 0) || !w.status) {
			close_fds(fds, nfds);
			nfds = 0;
			err = evs_fail(ECONNRESET, "producer '%s' hung up during the handshake "
				       "(sending the hello: %s)", name, strerror(serr));
			goto err_close;
		}
	} else {
		int64_t left = deadline - evs_monotonic_ms();

		err = recv_welcome(sock, &w, fds, &nfds, left > 0 ? (int)left : 0);
	}
	if (err == -ECONNRESET) {
		evs_fail(ECONNRESET, "producer '%s' hung up during the handshake, before its welcome "
			 "(it exited, crashed or closed the stream)", name);
		goto err_close;
	} else if (err == -EPROTO) {
		evs_fail(EPROTO, "producer '%s' sent a malformed welcome (not one whole %zu-byte "
			 "message with the evstream magic)", name, sizeof(w));
		goto err_close;
	} else if (err == -ETIMEDOUT && refused) {
		err = refused_too_long(name, timeout);
		goto err_close;
	} else if (err == -ETIMEDOUT) {
		evs_fail(ETIMEDOUT, "producer '%s' sent no welcome within %d ms", name, timeout);
		goto err_close;
	} else if (err) {
		evs_fail(-err, "handshake with producer '%s': %s", name, evs_strerror(err));
		goto err_close;
	}
	if (w.status) {
		err = w.status < 0 && w.status > -4096 ? w.status : -EPROTO;
		if (err == -EINVAL)
			evs_fail(EINVAL, "core %u is out of range: producer '%s' has cores 0 to %u",
				 core, name, w.ncores ? w.ncores - 1 : 0);
		else if (err == -EBUSY)
			evs_fail(EBUSY, "core %u of producer '%s' already has a consumer", core, name);
		else if (err == -EACCES)
			evs_fail(EACCES, "producer '%s' refused this uid/gid", name);
		else if (err == -EAGAIN && try_again(&pause_us, deadline)) {
			/* the server made room for newer connections while our
			 * hello was on its way (many connects at once, or silent
			 * ones): a new connection, as for a full listen queue */
			refused = true;
			close_fds(fds, nfds);
			nfds = 0;
			close(sock);
			goto again;
		} else if (err == -EAGAIN)
			err = refused_too_long(name, timeout);
		else if (err == -EPROTONOSUPPORT)
			evs_fail(EPROTONOSUPPORT, "producer '%s' refused this consumer's shared-memory "
				 "ABI %u (of another major than its own): run the same evstream release on "
				 "both sides", name, EVS_ABI_MAJOR);
		else
			evs_fail(-err, "producer '%s' refused: %s", name, evs_strerror(err));
		goto err_close;
	}
	if (nfds != EVS_WELCOME_NFDS || w.core != core) {
		err = evs_fail(EPROTO, "producer '%s' sent a malformed welcome", name);
		goto err_close;
	}
	/* the wake path reads and writes it as an eventfd, never waiting
	 * (wakeup.c); anything else is refused by name */
	err = evs_efd_check(fds[EVS_WELCOME_EVENT_FD], what, sizeof(what));
	if (err == -EPROTO) {
		evs_fail(EPROTO, "producer '%s' sent %s as the stream's eventfd: refused, an eventfd "
			 "without EFD_SEMAPHORE was expected", name, what);
		goto err_close;
	} else if (err) {
		evs_fail(-err, "producer '%s': checking the stream's eventfd through /proc/self/fd: %s "
			 "(is /proc mounted?)", name, what);
		goto err_close;
	}
	evs_rundir_close(&dir);
	*welcome = w;
	*sockp = sock;
	return 0;

err_close:
	close_fds(fds, nfds);
	if (sock >= 0)
		close(sock);
	evs_rundir_close(&dir);
	return err;
}

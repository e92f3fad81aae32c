/* SPDX-License-Identifier: MIT */
/*
 * The producer's socket server: one thread that accepts consumers of other
 * processes, checks their credentials, hands them the stream's memfds and
 * eventfd with SCM_RIGHTS, and notices when they hang up. It never touches
 * the rings' hot fields; the producer threads never wait for it.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "attach.h"
#include "clock.h"
#include "errors.h"
#include "handshake.h"
#include "pending.h"
#include "producer.h"
#include "rundir.h"
#include "server.h"

struct evs_server {
	struct evs_producer *p;
	int lfd;
	int stop_efd;
	pthread_t thread;
	uid_t uid;
	bool allow_group;
	gid_t gid;
	struct evs_rundir dir;
	int lock_fd;              /* <name>.lock, flock()ed: the name is ours */
	bool bound;               /* sock_dev/sock_ino name the socket file we made */
	dev_t sock_dev;
	ino_t sock_ino;
	char sock_file[EVS_RUNFILE_MAX];
	char lock_file[EVS_RUNFILE_MAX];
	struct evs_pending pending; /* accepted, hello not yet come (server thread) */
};

static bool same_file(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

/* The pid a running producer wrote into its lock file, or 0. For the
 * message only: the lock, not this number, decides. */
static int lock_holder(int fd)
{
	char buf[16];
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);

	if (n <= 0)
		return 0;
	buf[n] = '\0';
	return atoi(buf);
}

static void note_pid(int fd)
{
	char pid[16];
	int n = snprintf(pid, sizeof(pid), "%d\n", (int)getpid());

	if (ftruncate(fd, 0) < 0 || pwrite(fd, pid, (size_t)n, 0) < 0)
		return; /* the pid is only for other producers' messages */
}

/*
 * One name, one producer: <name>.lock, held with flock() for the
 * producer's lifetime (the kernel lets go of it when the process dies).
 * A producer that exits removes the file while it still holds it; one that
 * opened the file just before may then lock a file no longer in the
 * directory, so the path must still name the file locked, or we start
 * again with the new one.
 */
static int claim_name(struct evs_server *srv, const char *name)
{
	struct stat fst, pst;
	int fd, holder, err;

	for (int tries = 0; tries < 100; tries++) {
		fd = openat(srv->dir.fd, srv->lock_file, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK |
			    O_CLOEXEC, 0600);
		if (fd < 0)
			return evs_fail(errno, "lock file %s/%s: %s", srv->dir.path, srv->lock_file,
					strerror(errno));
		if (fstat(fd, &fst) < 0 || !S_ISREG(fst.st_mode)) {
			err = evs_fail(EPERM, "lock file %s/%s is not a regular file", srv->dir.path,
				       srv->lock_file);
			goto err_close;
		}
		if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
			if (errno != EWOULDBLOCK) {
				err = evs_fail(errno, "lock file %s/%s: %s", srv->dir.path,
					       srv->lock_file, strerror(errno));
				goto err_close;
			}
			holder = lock_holder(fd);
			if (holder > 0)
				err = evs_fail(EADDRINUSE, "a producer named '%s' is already running "
					       "(pid %d holds %s/%s)", name, holder, srv->dir.path,
					       srv->lock_file);
			else
				err = evs_fail(EADDRINUSE, "a producer named '%s' is already running "
					       "(it holds %s/%s)", name, srv->dir.path, srv->lock_file);
			goto err_close;
		}
		if (fstatat(srv->dir.fd, srv->lock_file, &pst, AT_SYMLINK_NOFOLLOW) == 0 &&
		    same_file(&fst, &pst)) {
			note_pid(fd);
			srv->lock_fd = fd;
			return 0;
		}
		close(fd);
	}
	return evs_fail(EAGAIN, "lock file %s/%s was replaced 100 times while being locked",
			srv->dir.path, srv->lock_file);

err_close:
	close(fd);
	return err;
}

static const char *file_kind(mode_t mode)
{
	return S_ISLNK(mode) ? "a symbolic link" : S_ISDIR(mode) ? "a directory" :
	       S_ISREG(mode) ? "a regular file" : S_ISFIFO(mode) ? "a FIFO" : "a device or other file";
}

/* Holding the name: a socket file already there was left by a producer
 * that died, unless something answers on it (a producer of an evstream
 * that took no lock). Never waits: a full listen queue is an answer.
 * Anything else in its place is not ours to remove (and connect() would
 * follow a link): refused, saying what it is. */
static int remove_stale_socket(struct evs_server *srv, const char *name)
{
	struct sockaddr_un sa;
	struct stat st;
	int fd, err;

	if (fstatat(srv->dir.fd, srv->sock_file, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : evs_fail(errno, "socket %s/%s: %s", srv->dir.path,
						      srv->sock_file, strerror(errno));
	if (!S_ISSOCK(st.st_mode))
		return evs_fail(EADDRINUSE, "%s/%s is %s, not a producer's socket: the place of "
				"producer '%s' is taken; evstream does not remove it (remove it, or "
				"name the producer otherwise)", srv->dir.path, srv->sock_file,
				file_kind(st.st_mode), name);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	evs_rundir_sockaddr(&srv->dir, srv->sock_file, &sa);
	err = connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 ? 0 : errno;
	close(fd);
	if (err == ENOENT)
		return 0;
	if (err == 0 || err == EAGAIN)
		return evs_fail(EADDRINUSE, "a producer named '%s' is already running: something "
				"listens on %s/%s without holding %s", name, srv->dir.path,
				srv->sock_file, srv->lock_file);
	unlinkat(srv->dir.fd, srv->sock_file, 0);
	return 0;
}

/* Gives up the name: the socket file only if it is still the one we bound
 * (a file someone else put there is theirs), then the lock file, removed
 * while held (see claim_name()). */
static void release_name(struct evs_server *srv)
{
	struct stat st, lst;

	if (srv->bound && fstatat(srv->dir.fd, srv->sock_file, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    st.st_dev == srv->sock_dev && st.st_ino == srv->sock_ino)
		unlinkat(srv->dir.fd, srv->sock_file, 0);
	if (srv->lock_fd >= 0) {
		if (fstat(srv->lock_fd, &lst) == 0 &&
		    fstatat(srv->dir.fd, srv->lock_file, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    same_file(&st, &lst))
			unlinkat(srv->dir.fd, srv->lock_file, 0);
		close(srv->lock_fd);
	}
	evs_rundir_close(&srv->dir);
}

static int send_welcome(int fd, const struct evs_welcome *w, const int *fds, int nfds)
{
	char cbuf[CMSG_SPACE(EVS_WELCOME_NFDS * sizeof(int))];
	struct iovec iov = { .iov_base = (void *)w, .iov_len = sizeof(*w) };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct cmsghdr *cm;

	if (nfds) {
		memset(cbuf, 0, sizeof(cbuf));
		msg.msg_control = cbuf;
		msg.msg_controllen = CMSG_SPACE(nfds * sizeof(int));
		cm = CMSG_FIRSTHDR(&msg);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(nfds * sizeof(int));
		memcpy(CMSG_DATA(cm), fds, nfds * sizeof(int));
	}
	/* never waits: a client that does not read cannot hold the server */
	if (sendmsg(fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT) != (ssize_t)sizeof(*w))
		return -errno ? -errno : -EIO;
	return 0;
}

#ifndef SO_PEERGROUPS
#define SO_PEERGROUPS 59 /* Linux 4.13 */
#endif

/* The peer was in group gid when it connected, as its primary group or a
 * supplementary one: a consumer accepts our directory by either
 * (rundir.c), so the server does too. */
static bool peer_in_group(int fd, gid_t primary, gid_t gid)
{
	gid_t small[64], *list = small;
	socklen_t len = sizeof(small);
	bool found = primary == gid;

	if (!found && getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, list, &len) < 0) {
		/* ERANGE: len says how much it needs */
		list = errno == ERANGE ? malloc(len) : NULL;
		if (list && getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, list, &len) < 0)
			len = 0;
		if (!list)
			len = 0;
	}
	for (size_t i = 0; !found && i < len / sizeof(gid_t); i++)
		found = list[i] == gid;
	if (list != small)
		free(list);
	return found;
}

static bool peer_allowed(const struct evs_server *srv, int fd)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
		return false;
	return cred.uid == srv->uid || (srv->allow_group && peer_in_group(fd, cred.gid, srv->gid));
}

/* Answers a connection with a refusal (status -errno) and closes it. */
static void turn_away(const struct evs_server *srv, int fd, int status)
{
	struct evs_welcome w = { .magic = EVS_WELCOME_MAGIC, .ncores = srv->p->ncores,
				 .status = status };

	send_welcome(fd, &w, NULL, 0);
	close(fd);
}

/* Reads the hello of a connection that poll() found readable (never
 * waits: the hello is there, or the client hung up or sent less); answers
 * it; on success the stream is live for that client. */
static void serve_client(struct evs_server *srv, int fd)
{
	struct evs_producer *p = srv->p;
	struct evs_welcome w = { .magic = EVS_WELCOME_MAGIC, .ncores = p->ncores };
	struct evs_hello h;
	struct evs_stream *s;
	ssize_t n;
	int active;

	memset(&h, 0, sizeof(h));
	n = recv(fd, &h, sizeof(h), MSG_DONTWAIT);
	if (n != (ssize_t)sizeof(h) || h.magic != EVS_HELLO_MAGIC) {
		w.status = -EPROTO;
		goto refuse;
	}
	if (h.abi_major != EVS_ABI_MAJOR) {
		w.status = -EPROTONOSUPPORT;
		goto refuse;
	}
	if (h.core >= p->ncores) {
		w.status = -EINVAL;
		goto refuse;
	}
	s = &p->streams[h.core];
	if (evs_stream_claim(s)) {
		w.status = -EBUSY;
		goto refuse;
	}
	w.flags = s->backing.hugetlb ? EVS_SHM_F_HUGETLB : 0;
	active = evs_stream_activate(s, h.flags & EVS_HELLO_F_MEMBARRIER);
	if (active < 0) {
		evs_stream_release_claim(s);
		w.status = active;
		goto refuse;
	}
	if (active)
		w.flags |= EVS_WELCOME_F_MEMBARRIER;
	w.core = h.core;
	w.ring_bytes = s->backing.ring_bytes;
	w.max_events = p->cfg.max_events;
	w.page_size = s->backing.page_size;
	{
		int fds[EVS_WELCOME_NFDS] = {
			[EVS_WELCOME_CTL_FD] = s->backing.ctl_ro_fd,
			[EVS_WELCOME_CONS_FD] = s->backing.cons_fd,
			[EVS_WELCOME_DATA_FD] = s->backing.data_ro_fd,
			[EVS_WELCOME_EVENT_FD] = s->efd,
		};

		if (send_welcome(fd, &w, fds, EVS_WELCOME_NFDS)) {
			evs_stream_release_claim(s);
			goto drop;
		}
	}
	s->conn_fd = fd;
	return;
refuse:
	send_welcome(fd, &w, NULL, 0);
drop:
	close(fd);
}

/* The connection waiting longest for its hello leaves the table to make
 * room: answered if its hello came meanwhile, else refused with -EAGAIN
 * ("too many connections waiting for their hello"). An honest client says
 * hello right after it connects, so the one waiting longest is the likely
 * silent one, and a flood of them costs at most EVS_PENDING_MAX
 * descriptors. */
static void make_room(struct evs_server *srv)
{
	int fd = evs_pending_take(&srv->pending, 0);
	struct pollfd pfd = { .fd = fd, .events = POLLIN };

	if (poll(&pfd, 1, 0) == 1)
		serve_client(srv, fd);
	else
		turn_away(srv, fd, -EAGAIN);
}

/* A new connection, with room for it in the table: its credentials are
 * checked at once; then it waits in the table, polled with everything
 * else, until its hello comes or its deadline passes. */
static void accepted(struct evs_server *srv, int fd)
{
	if (!peer_allowed(srv, fd)) {
		turn_away(srv, fd, -EACCES);
		return;
	}
	evs_pending_add(&srv->pending, fd, evs_monotonic_ms());
}

/* Anything readable on a consumer's socket means it left (EOF) or broke
 * the protocol (it sends nothing after its hello): both end the session. */
static void consumer_left(struct evs_stream *s)
{
	evs_stream_release_claim(s);
	close(s->conn_fd);
	s->conn_fd = -1;
}

/*
 * One poll() over the stop eventfd, the listening socket, every connected
 * consumer's socket (hang-ups) and every connection waiting for its hello,
 * with a timeout until the nearest hello deadline. No step waits on one
 * client: hellos are read when they have come, welcomes are sent without
 * waiting, and a connection whose deadline passed is closed unanswered.
 */
static void *server_main(void *arg)
{
	struct evs_server *srv = arg;
	struct evs_producer *p = srv->p;
	struct evs_pending *pend = &srv->pending;
	struct pollfd *pfd;
	unsigned int *core_of;
	int fd;

	pfd = calloc(p->ncores + 2 + EVS_PENDING_MAX, sizeof(*pfd));
	core_of = calloc(p->ncores + 2, sizeof(*core_of));
	if (!pfd || !core_of)
		goto out;
	for (;;) {
		nfds_t n = 2, first_pending;

		pfd[0] = (struct pollfd){ .fd = srv->stop_efd, .events = POLLIN };
		pfd[1] = (struct pollfd){ .fd = srv->lfd, .events = POLLIN };
		for (unsigned int i = 0; i < p->ncores; i++) {
			if (p->streams[i].conn_fd < 0)
				continue;
			pfd[n] = (struct pollfd){ .fd = p->streams[i].conn_fd, .events = POLLIN };
			core_of[n++] = i;
		}
		first_pending = n;
		for (unsigned int i = 0; i < pend->n; i++)
			pfd[n++] = (struct pollfd){ .fd = pend->slot[i].fd, .events = POLLIN };
		if (poll(pfd, n, evs_pending_timeout(pend, evs_monotonic_ms())) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (pfd[0].revents)
			break;
		for (nfds_t i = 2; i < first_pending; i++)
			if (pfd[i].revents)
				consumer_left(&p->streams[core_of[i]]);
		/* from the last, so that taking one leaves the earlier in place */
		for (nfds_t i = n; i-- > first_pending;)
			if (pfd[i].revents)
				serve_client(srv, evs_pending_take(pend, (unsigned int)(i - first_pending)));
		while ((fd = evs_pending_take_expired(pend, evs_monotonic_ms())) >= 0)
			close(fd);
		if (pfd[1].revents & POLLIN) {
			/* room first: the descriptors held for hellos never
			 * pass the cap, not even for an instant */
			if (evs_pending_full(pend))
				make_room(srv);
			fd = accept4(srv->lfd, NULL, NULL, SOCK_CLOEXEC);
			if (fd >= 0)
				accepted(srv, fd);
		}
	}
out:
	while (pend->n)
		close(evs_pending_take(pend, 0));
	free(pfd);
	free(core_of);
	return NULL;
}

/* Bound, but not yet listening: give it its mode and group, and note
 * which file it is. */
static int setup_socket_file(struct evs_server *srv)
{
	struct stat st;

	if (fchmodat(srv->dir.fd, srv->sock_file, srv->allow_group ? 0660 : 0600, 0) < 0 ||
	    (srv->allow_group &&
	     fchownat(srv->dir.fd, srv->sock_file, (uid_t)-1, srv->gid, AT_SYMLINK_NOFOLLOW) < 0) ||
	    fstatat(srv->dir.fd, srv->sock_file, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return -errno;
	srv->sock_dev = st.st_dev;
	srv->sock_ino = st.st_ino;
	return 0;
}

int evs_server_start(struct evs_producer *p, const struct evs_producer_opts *opts)
{
	struct sockaddr_un sa;
	struct evs_server *srv;
	int err;

	srv = calloc(1, sizeof(*srv));
	if (!srv)
		return -ENOMEM;
	srv->p = p;
	srv->lfd = srv->stop_efd = srv->lock_fd = -1;
	srv->dir.fd = -1;
	srv->uid = geteuid();
	srv->allow_group = OPTS_GET(opts, allow_group, 0);
	srv->gid = OPTS_GET(opts, allow_gid, 0);
	evs_runfile(srv->sock_file, p->name, ".sock");
	evs_runfile(srv->lock_file, p->name, ".lock");

	err = evs_rundir_make(&srv->dir, OPTS_GET(opts, runtime_dir, NULL), srv->allow_group,
			      srv->gid);
	if (err)
		goto err_free;
	err = claim_name(srv, p->name);
	if (err)
		goto err_free;
	err = remove_stale_socket(srv, p->name);
	if (err)
		goto err_free;
	srv->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (srv->lfd < 0) {
		err = -errno;
		goto err_free;
	}
	evs_rundir_sockaddr(&srv->dir, srv->sock_file, &sa);
	if (bind(srv->lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		err = evs_fail(errno, "socket %s/%s: %s", srv->dir.path, srv->sock_file, strerror(errno));
		goto err_free;
	}
	srv->bound = true;
	if ((err = setup_socket_file(srv)) || listen(srv->lfd, 16) < 0) {
		err = err ? err : -errno;
		evs_fail(-err, "socket %s/%s: %s", srv->dir.path, srv->sock_file, strerror(-err));
		goto err_free;
	}
	srv->stop_efd = eventfd(0, EFD_CLOEXEC);
	if (srv->stop_efd < 0) {
		err = -errno;
		goto err_free;
	}
	p->server = srv;
	err = pthread_create(&srv->thread, NULL, server_main, srv);
	if (err) {
		p->server = NULL;
		err = -err;
		goto err_free;
	}
	return 0;

err_free:
	if (srv->lfd >= 0)
		close(srv->lfd);
	release_name(srv);
	if (srv->stop_efd >= 0)
		close(srv->stop_efd);
	free(srv);
	return err;
}

void evs_server_stop(struct evs_producer *p)
{
	struct evs_server *srv = p->server;

	eventfd_write(srv->stop_efd, 1);
	pthread_join(srv->thread, NULL);
	release_name(srv);
	close(srv->lfd);
	close(srv->stop_efd);
	free(srv);
	p->server = NULL;
}

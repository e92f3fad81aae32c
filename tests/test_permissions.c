/* SPDX-License-Identifier: MIT */
/*
 * Who can reach a producer, and whom a consumer believes. The socket is
 * 0600 in a 0700 directory (0660 / 0750 with a configured group); a process
 * of another uid cannot connect, neither through the file system nor, with
 * the directory opened up, past the server's SO_PEERCRED check; a member of
 * the configured group can. The memfds have no name in any file system and
 * cannot be opened through /proc by another uid; a consumer's view of the
 * ring is read-only. A consumer refuses a runtime directory, a socket file
 * or a peer that another uid planted, and a producer refuses a symbolic
 * link in place of its directory.
 *
 * The other-uid tests drop privileges in a forked child and need root;
 * they skip with the reason otherwise.
 */
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>

#include "helpers.h"
#include "consumer.h"
#include "handshake.h"
#include "producer.h"

#define NOBODY    65534
#define OTHER_UID 65533  /* a second unprivileged uid */
#define TEST_GID  4242   /* a group nobody else uses */

struct perm {
	char dir[96];
	char sock[192];
	const char *name;
	struct evs_producer *p;
};

static void perm_open(struct perm *t, const char *tag, bool group)
{
	EVS_OPTS(evs_producer_opts, o, .ring_bytes = 4096, .hugepages = EVS_HUGEPAGES_OFF);

	snprintf(t->dir, sizeof(t->dir), "/tmp/evs-perm-%d-%s", (int)getpid(), tag);
	t->name = evs_test_name(tag);
	snprintf(t->sock, sizeof(t->sock), "%s/%s.sock", t->dir, t->name);
	o.runtime_dir = t->dir;
	o.allow_group = group;
	o.allow_gid = TEST_GID;
	t->p = evs_producer__new(t->name, 1, &o);
	ck_assert_msg(t->p, "producer: %s", evs_errmsg());
}

static void perm_close(struct perm *t)
{
	evs_producer__free(t->p);
	rmdir(t->dir);
}

static struct evs_consumer *connect_in(const struct perm *t)
{
	EVS_OPTS(evs_consumer_opts, o, .runtime_dir = t->dir);

	return evs_consumer__connect(t->name, 0, &o);
}

/* Runs a consumer as uid NOBODY with primary group `gid` and, unless 0,
 * the supplementary group `extra` in a child; returns 0 if it connected
 * and received an event, else the errno of the failure. */
static int connect_as_groups(const struct perm *t, gid_t gid, gid_t extra)
{
	int up[2], go[2], status;
	pid_t pid;
	char ch;

	ck_assert_int_eq(pipe2(up, O_CLOEXEC), 0);
	ck_assert_int_eq(pipe2(go, O_CLOEXEC), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct evs_consumer *c;
		struct evs_record r;
		int err = 0;

		alarm(10);
		close(up[0]);
		close(go[1]);
		if (setgroups(extra ? 1 : 0, &extra) || setgid(gid) || setuid(NOBODY))
			_exit(120);
		c = connect_in(t);
		if (!c)
			_exit(errno & 0x7f);
		/* connected: the parent emits once it hears from us */
		if (write(up[1], "c", 1) != 1 || read(go[0], &ch, 1) != 1)
			_exit(121);
		err = evs_consumer__wait(c, 5000);
		if (!err)
			err = evs_consumer__peek(c, &r);
		evs_consumer__free(c);
		_exit(err ? 122 : 0);
	}
	close(up[1]);
	close(go[0]);
	/* a byte: the child is attached, emit for it; EOF: it gave up */
	if (read(up[0], &ch, 1) == 1) {
		ck_assert(evs_wait_connected(t->p, 0, 1, 5000));
		ck_assert_int_eq(evs_producer__emit(t->p, 0, 1, "hi", 2), 0);
		ck_assert_int_eq(write(go[1], "g", 1), 1);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	close(up[0]);
	close(go[1]);
	ck_assert_msg(WIFEXITED(status), "consumer child died of signal %d", WTERMSIG(status));
	ck_assert_msg(WEXITSTATUS(status) < 120, "consumer child failed (%d)", WEXITSTATUS(status));
	return WEXITSTATUS(status);
}

static int connect_as(const struct perm *t, gid_t gid)
{
	return connect_as_groups(t, gid, 0);
}

#define NEED_ROOT()                                                          \
	do {                                                                 \
		if (geteuid() != 0)                                          \
			EVS_SKIP("needs root to run a child as another uid"); \
	} while (0)

START_TEST(test_socket_is_0600_in_a_0700_directory)
{
	struct perm t;
	struct stat st;

	perm_open(&t, "mode", false);
	ck_assert_int_eq(stat(t.dir, &st), 0);
	ck_assert_uint_eq(st.st_mode & 07777, 0700);
	ck_assert_uint_eq(st.st_uid, geteuid());
	ck_assert_int_eq(stat(t.sock, &st), 0);
	ck_assert(S_ISSOCK(st.st_mode));
	ck_assert_uint_eq(st.st_mode & 07777, 0600);
	ck_assert_uint_eq(st.st_uid, geteuid());
	perm_close(&t);
}
END_TEST

START_TEST(test_allow_group_makes_socket_0660_of_that_group)
{
	struct perm t;
	struct stat st;

	/* the producer gives both to TEST_GID, which only root may */
	if (geteuid() != 0)
		EVS_SKIP("needs root to give the socket and its directory group %d", TEST_GID);
	perm_open(&t, "grpmode", true);
	ck_assert_int_eq(stat(t.sock, &st), 0);
	ck_assert_uint_eq(st.st_mode & 07777, 0660);
	ck_assert_uint_eq(st.st_gid, TEST_GID);
	ck_assert_int_eq(stat(t.dir, &st), 0);
	ck_assert_uint_eq(st.st_gid, TEST_GID);
	ck_assert_uint_eq(st.st_mode & 07777, 0750);
	perm_close(&t);
}
END_TEST

START_TEST(test_other_uid_cannot_connect)
{
	struct perm t;
	int err;

	NEED_ROOT();
	perm_open(&t, "otheruid", false);
	err = connect_as(&t, NOBODY);
	ck_assert_msg(err == EACCES || err == EPERM, "another uid connected (%d)", err);
	perm_close(&t);
}
END_TEST

/* With the file system opened up, the server's own credential check is
 * what refuses the other uid. */
START_TEST(test_other_uid_is_refused_by_peer_credentials)
{
	struct perm t;
	int err;

	NEED_ROOT();
	perm_open(&t, "peercred", false);
	ck_assert_int_eq(chmod(t.dir, 0711), 0);
	ck_assert_int_eq(chmod(t.sock, 0666), 0);
	err = connect_as(&t, NOBODY);
	ck_assert_msg(err == EACCES, "another uid was not refused by the server (%d)", err);
	perm_close(&t);
}
END_TEST

START_TEST(test_member_of_allowed_group_can_connect)
{
	struct perm t;

	NEED_ROOT();
	perm_open(&t, "grpok", true);
	ck_assert_int_eq(connect_as(&t, TEST_GID), 0);
	perm_close(&t);
}
END_TEST

/* A member by a supplementary group is one too: the consumer trusts the
 * directory for it (rundir.c), and the server must let it in. */
START_TEST(test_supplementary_member_of_allowed_group_can_connect)
{
	struct perm t;

	NEED_ROOT();
	perm_open(&t, "grpsupp", true);
	ck_assert_int_eq(connect_as_groups(&t, NOBODY, TEST_GID), 0);
	perm_close(&t);
}
END_TEST

START_TEST(test_other_group_is_refused_when_a_group_is_allowed)
{
	struct perm t;
	int err;

	NEED_ROOT();
	perm_open(&t, "grpno", true);
	err = connect_as(&t, TEST_GID + 1);
	ck_assert_msg(err == EACCES || err == EPERM, "a non-member connected (%d)", err);
	perm_close(&t);
}
END_TEST

/* The memfds are anonymous: /proc shows "/memfd:NAME (deleted)", and no
 * such path exists; nothing is in /dev/shm. */
START_TEST(test_memfds_have_no_name_in_any_file_system)
{
	struct perm t;
	const struct evs_backing *b;
	char link[64], target[PATH_MAX];
	int fds[5];

	perm_open(&t, "noname", false);
	b = &t.p->streams[0].backing;
	fds[0] = b->ctl_fd;
	fds[1] = b->ctl_ro_fd;
	fds[2] = b->cons_fd;
	fds[3] = b->data_fd;
	fds[4] = b->data_ro_fd;
	for (int i = 0; i < 5; i++) {
		ssize_t n;
		struct stat st;

		snprintf(link, sizeof(link), "/proc/self/fd/%d", fds[i]);
		n = readlink(link, target, sizeof(target) - 1);
		ck_assert_int_gt(n, 0);
		target[n] = '\0';
		ck_assert_msg(!strncmp(target, "/memfd:", 7), "fd %d is %s", fds[i], target);
		*strstr(target, " (deleted)") = '\0';
		ck_assert_int_ne(stat(target, &st), 0);
		ck_assert_int_eq(fstat(fds[i], &st), 0);
		ck_assert_uint_eq(st.st_nlink, 0);
	}
	perm_close(&t);
}
END_TEST

START_TEST(test_other_uid_cannot_open_memfds_through_proc)
{
	struct perm t;
	int status, ctl;
	pid_t pid, parent = getpid();

	NEED_ROOT();
	perm_open(&t, "procfd", false);
	ctl = t.p->streams[0].backing.ctl_fd;
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		char path[64];
		int fd;

		if (setgroups(0, NULL) || setgid(NOBODY) || setuid(NOBODY))
			_exit(120);
		snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)parent, ctl);
		fd = open(path, O_RDWR);
		_exit(fd >= 0 ? 0 : errno & 0x7f);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status));
	ck_assert_msg(WEXITSTATUS(status) == EACCES || WEXITSTATUS(status) == EPERM,
		      "another uid opened the control memfd through /proc (%d)", WEXITSTATUS(status));
	perm_close(&t);
}
END_TEST

/* A consumer of another uid holding the read-only descriptors it was
 * handed cannot open them again read-write through /proc/self/fd (a
 * memfd is made with mode 0777; the producer leaves it 0400): it could
 * otherwise write records into the ring, punch holes in it, or rewrite
 * the producer's page and lock every later consumer out. */
START_TEST(test_other_uid_cannot_reopen_its_read_only_files_writable)
{
	struct perm t;
	const struct evs_backing *b;
	int status;
	pid_t pid;

	NEED_ROOT();
	perm_open(&t, "reopen", true);
	b = &t.p->streams[0].backing;
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		const int ro[] = { b->ctl_ro_fd, b->data_ro_fd };

		if (setgroups(0, NULL) || setgid(TEST_GID) || setuid(NOBODY))
			_exit(120);
		for (int i = 0; i < 2; i++) {
			char path[64];
			int fd;

			snprintf(path, sizeof(path), "/proc/self/fd/%d", ro[i]);
			fd = open(path, O_RDWR);
			if (fd >= 0)
				_exit(100 + i); /* writable: the test fails */
			if (errno != EACCES)
				_exit(110 + i);
		}
		_exit(0);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status));
	ck_assert_msg(WEXITSTATUS(status) != 100,
		      "another uid reopened the control file it was given read-write");
	ck_assert_msg(WEXITSTATUS(status) != 101,
		      "another uid reopened the ring it was given read-write");
	ck_assert_msg(WEXITSTATUS(status) == 0, "child exit %d", WEXITSTATUS(status));
	perm_close(&t);
}
END_TEST

/* mprotect(PROT_WRITE) on a consumer's mapping of the producer's page
 * (page0) or of the ring fails: it only ever had read-only files of them. */
static void assert_consumer_view_read_only(const char *tag, bool page0)
{
	struct perm t;
	struct evs_consumer *c;

	perm_open(&t, tag, false);
	c = connect_in(&t);
	ck_assert_msg(c, "consumer: %s", evs_errmsg());
	ck_assert_int_ne(mprotect(page0 ? (void *)c->prod : (void *)c->data, 4096,
				  PROT_READ | PROT_WRITE), 0);
	ck_assert_int_eq(errno, EACCES);
	/* its own page stays writable */
	WRITE_ONCE(&c->cons->released, c->cons->released);
	evs_consumer__free(c);
	perm_close(&t);
}

/* The consumer's view of the producer's page is read-only for good: the
 * control file it is given is read-only, its own page is another file. */
START_TEST(test_consumer_control_page_cannot_be_made_writable)
{
	assert_consumer_view_read_only("roctl", true);
}
END_TEST

START_TEST(test_consumer_ring_view_cannot_be_made_writable)
{
	assert_consumer_view_read_only("rodata", false);
}
END_TEST

/* ------------------------------------------- planted by another uid */

/* A scratch directory for one test, removed with all it holds (by the
 * teardown, planted_release(), when the test failed first). */
static char scratch_dir[64];

static void scratch(char *buf, size_t len, const char *tag)
{
	snprintf(buf, len, "/tmp/evs-plant-%d-%s", (int)getpid(), tag);
	ck_assert_int_eq(mkdir(buf, 0755), 0);
	snprintf(scratch_dir, sizeof(scratch_dir), "%s", buf);
}

static void scratch_remove(const char *dir)
{
	scratch_dir[0] = '\0';
	ck_assert_int_eq(nftw(dir, evs_rm_entry, 16, FTW_DEPTH | FTW_PHYS), 0);
}

/* A directory as another uid would have made it. */
static void plant_dir(const char *path, uid_t uid, mode_t mode)
{
	ck_assert_int_eq(mkdir(path, mode), 0);
	ck_assert_int_eq(chown(path, uid, uid), 0);
	ck_assert_int_eq(chmod(path, mode), 0);
}

/* Answers one hello on fd with the descriptors of producer p. */
static void relay_serve(int fd, const struct evs_producer *p)
{
	const struct evs_stream *s = &p->streams[0];
	struct evs_welcome w = { .magic = EVS_WELCOME_MAGIC, .ncores = 1,
				 .ring_bytes = s->backing.ring_bytes, .max_events = p->cfg.max_events,
				 .page_size = s->backing.page_size };
	int fds[EVS_WELCOME_NFDS] = {
		[EVS_WELCOME_CTL_FD] = s->backing.ctl_fd,
		[EVS_WELCOME_CONS_FD] = s->backing.cons_fd,
		[EVS_WELCOME_DATA_FD] = s->backing.data_ro_fd,
		[EVS_WELCOME_EVENT_FD] = s->efd,
	};
	char cbuf[CMSG_SPACE(sizeof(fds))] = { 0 };
	struct iovec iov = { .iov_base = &w, .iov_len = sizeof(w) };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			      .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);
	struct evs_hello h;

	if (recv(fd, &h, sizeof(h), 0) != sizeof(h))
		return;
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(fds));
	memcpy(CMSG_DATA(cm), fds, sizeof(fds));
	sendmsg(fd, &msg, MSG_NOSIGNAL);
	/* until the consumer hangs up */
	recv(fd, &h, 1, 0);
}

/*
 * What another user can leave for our consumers: a process of uid `uid`
 * listening on `sock` that answers every hello with the memory of a
 * producer of its own, which it can read and write. With bind_first the
 * socket is bound before the uid changes (in a directory only root may
 * write) and listened on after, so that it is served by uid all the same.
 */
static pid_t relay_pid; /* until stop_relay() */

static pid_t start_relay(const char *sock, uid_t uid, bool bind_first)
{
	int ready[2];
	ssize_t n;
	pid_t pid;
	char ch;

	ck_assert_int_eq(pipe2(ready, O_CLOEXEC), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		EVS_OPTS(evs_producer_opts, o, .ring_bytes = 4096, .hugepages = EVS_HUGEPAGES_OFF);
		struct sockaddr_un sa = { .sun_family = AF_UNIX };
		struct evs_producer *p;
		int lfd, fd;

		alarm(20); /* never outlive a broken test */
		close(ready[0]);
		snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock);
		lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (lfd < 0 || (bind_first && bind(lfd, (struct sockaddr *)&sa, sizeof(sa))))
			_exit(120);
		if (uid && (setgroups(0, NULL) || setgid(uid) || setuid(uid)))
			_exit(121);
		if ((!bind_first && bind(lfd, (struct sockaddr *)&sa, sizeof(sa))) || listen(lfd, 4))
			_exit(122);
		p = evs_producer__new(NULL, 1, &o);
		if (!p || write(ready[1], "r", 1) != 1)
			_exit(123);
		while ((fd = accept(lfd, NULL, NULL)) >= 0) {
			relay_serve(fd, p);
			close(fd);
		}
		_exit(0);
	}
	relay_pid = pid;
	close(ready[1]);
	n = read(ready[0], &ch, 1);
	close(ready[0]);
	ck_assert_msg(n == 1, "the relay did not start");
	return pid;
}

static void stop_relay(pid_t pid)
{
	int status;

	relay_pid = 0;
	kill(pid, SIGKILL);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
}

/* Teardown: the relay and scratch directory of a test that failed before
 * it stopped and removed them. */
static void planted_release(void)
{
	if (relay_pid > 0) {
		kill(relay_pid, SIGKILL);
		waitpid(relay_pid, NULL, 0);
		relay_pid = 0;
	}
	if (scratch_dir[0]) {
		nftw(scratch_dir, evs_rm_entry, 16, FTW_DEPTH | FTW_PHYS);
		scratch_dir[0] = '\0';
	}
}

/* Connects to name from a child process (a producer of this process would
 * be found without the socket); the consumer must be refused with EPERM
 * and a message containing `why`. */
static void assert_refused(const char *name, const char *dir, const char *why)
{
	char msg[512] = "";
	int out[2], status;
	ssize_t n;
	pid_t pid;

	ck_assert_int_eq(pipe2(out, O_CLOEXEC), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		EVS_OPTS(evs_consumer_opts, o, .runtime_dir = dir);
		struct evs_consumer *c;

		alarm(10);
		close(out[0]);
		c = evs_consumer__connect(name, 0, dir ? &o : NULL);
		if (c)
			_exit(0);
		n = write(out[1], evs_errmsg(), strlen(evs_errmsg()));
		_exit(n < 0 ? 120 : errno & 0x7f);
	}
	close(out[1]);
	n = read(out[0], msg, sizeof(msg) - 1);
	msg[n > 0 ? n : 0] = '\0';
	close(out[0]);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status), "consumer child died of signal %d", WTERMSIG(status));
	ck_assert_msg(WEXITSTATUS(status), "the consumer connected to what another uid planted");
	ck_assert_msg(WEXITSTATUS(status) == EPERM, "exit %d (%s), expected EPERM",
		      WEXITSTATUS(status), msg);
	ck_assert_msg(strstr(msg, why), "message '%s' does not say '%s'", msg, why);
	printf("refused: %s\n", msg);
}

/* The default directory ($XDG_RUNTIME_DIR/evstream here, /tmp/evstream-UID
 * without it) as another uid left it: its own directory with a relay in
 * it, planted as the default directory itself or, with via_link, as a
 * directory `theirs` beside it that a link of that uid in its place leads
 * to. A consumer of the default directory must be refused, saying why. */
static void assert_default_dir_refused(const char *tag, bool via_link, const char *why)
{
	char base[64], dir[96], link[96], sock[192];
	const char *name = evs_test_name(tag);
	pid_t relay;

	scratch(base, sizeof(base), tag);
	snprintf(dir, sizeof(dir), "%s/%s", base, via_link ? "theirs" : "evstream");
	snprintf(link, sizeof(link), "%s/evstream", base);
	snprintf(sock, sizeof(sock), "%s/%s.sock", dir, name);
	plant_dir(dir, NOBODY, 0700);
	if (via_link) {
		ck_assert_int_eq(symlink(dir, link), 0);
		ck_assert_int_eq(lchown(link, NOBODY, NOBODY), 0);
	}
	relay = start_relay(sock, NOBODY, false);
	unsetenv("EVSTREAM_RUNTIME_DIR");
	setenv("XDG_RUNTIME_DIR", base, 1);
	assert_refused(name, NULL, why);
	stop_relay(relay);
	scratch_remove(base);
}

/* The default directory made first by another uid, with a relay in it. */
START_TEST(test_consumer_refuses_runtime_directory_of_another_uid)
{
	NEED_ROOT();
	assert_default_dir_refused("planted", false, "is owned by uid 65534");
}
END_TEST

/* The default directory is a link another uid planted, to a directory of
 * its own with a relay in it. */
START_TEST(test_consumer_refuses_runtime_directory_that_is_a_symlink)
{
	NEED_ROOT();
	assert_default_dir_refused("link", true, "is a symbolic link");
}
END_TEST

/* Our own directory, but the socket in it is served by another uid: its
 * credentials give it away. */
START_TEST(test_consumer_refuses_socket_served_by_another_uid)
{
	char base[64], sock[160];
	const char *name = evs_test_name("relay");
	pid_t relay;

	NEED_ROOT();
	scratch(base, sizeof(base), "relay");
	ck_assert_int_eq(chmod(base, 0700), 0);
	snprintf(sock, sizeof(sock), "%s/%s.sock", base, name);
	relay = start_relay(sock, NOBODY, true);
	assert_refused(name, base, "is served by uid 65534");
	stop_relay(relay);
	scratch_remove(base);
}
END_TEST

/* A socket file of another uid in our directory is not our producer's. */
START_TEST(test_consumer_refuses_socket_file_of_another_uid)
{
	struct perm t;

	NEED_ROOT();
	perm_open(&t, "sockowner", false);
	ck_assert_int_eq(lchown(t.sock, NOBODY, NOBODY), 0);
	assert_refused(t.name, t.dir, "is owned by uid 65534");
	perm_close(&t);
}
END_TEST

/* Anyone who can write the directory could have put the socket there. */
START_TEST(test_consumer_refuses_runtime_directory_writable_by_others)
{
	struct perm t;

	perm_open(&t, "openmode", false);
	ck_assert_int_eq(chmod(t.dir, 01777), 0);
	assert_refused(t.name, t.dir, "has mode 1777");
	ck_assert_int_eq(chmod(t.dir, 0700), 0);
	perm_close(&t);
}
END_TEST

/* A root producer does not follow a link planted in place of its
 * directory, though it leads to a directory of root's: not either when
 * the link is named with a slash or "/." after it, which would make the
 * kernel follow it (then it truncated and unlinked files of root's there:
 * a lock file of its name, and anything not a socket at its socket's). */
START_TEST(test_producer_refuses_runtime_directory_that_is_a_symlink)
{
	static const char *const spelled[] = { "", "/", "//", "/.", "/./", "/.//." };
	EVS_OPTS(evs_producer_opts, o, .ring_bytes = 4096, .hugepages = EVS_HUGEPAGES_OFF);
	char base[64], target[96], link[96], as_named[112], sock[192], lock[192];
	const char *name = evs_test_name("plink");
	struct evs_producer *p;
	struct stat st;

	NEED_ROOT();
	scratch(base, sizeof(base), "plink");
	snprintf(target, sizeof(target), "%s/elsewhere", base);
	snprintf(link, sizeof(link), "%s/evstream", base);
	snprintf(sock, sizeof(sock), "%s/%s.sock", target, name);
	snprintf(lock, sizeof(lock), "%s/%s.lock", target, name);
	ck_assert_int_eq(mkdir(target, 0700), 0);
	ck_assert_int_eq(symlink(target, link), 0);
	ck_assert_int_eq(lchown(link, NOBODY, NOBODY), 0);
	for (size_t i = 0; i < sizeof(spelled) / sizeof(spelled[0]); i++) {
		int fd = open(lock, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

		ck_assert_int_ge(fd, 0);
		ck_assert_int_eq(write(fd, "root's", 6), 6);
		close(fd);
		snprintf(as_named, sizeof(as_named), "%s%s", link, spelled[i]);
		o.runtime_dir = as_named;
		p = evs_producer__new(name, 1, &o);
		ck_assert_msg(!p, "the producer followed the planted link named '%s'", as_named);
		ck_assert_int_eq(errno, EPERM);
		ck_assert_msg(strstr(evs_errmsg(), "is a symbolic link"), "'%s': %s", as_named,
			      evs_errmsg());
		ck_assert_int_ne(stat(sock, &st), 0);
		ck_assert_msg(stat(lock, &st) == 0 && st.st_size == 6,
			      "'%s': root's file %s was truncated or removed", as_named, lock);
		printf("refused: %s\n", evs_errmsg());
	}
	scratch_remove(base);
}
END_TEST

/* A consumer given a link to a directory of its own, with a slash after
 * it, refuses the link as it does without the slash. */
START_TEST(test_consumer_refuses_symlink_named_with_a_slash)
{
	struct perm t;
	char link[160], as_named[176];

	perm_open(&t, "cslash", false);
	snprintf(link, sizeof(link), "%s.link", t.dir);
	ck_assert_int_eq(symlink(t.dir, link), 0);
	snprintf(as_named, sizeof(as_named), "%s/", link);
	assert_refused(t.name, as_named, "is a symbolic link");
	unlink(link);
	perm_close(&t);
}
END_TEST

/* Something other than a socket where a producer's socket goes, in its
 * own directory: a directory, a regular file, a FIFO, a link that leads
 * nowhere. The producer is refused saying what is there, and leaves it:
 * it once removed a file there as a dead producer's socket, and was
 * refused by bind() with "Address already in use" for the others. */
START_TEST(test_producer_leaves_what_is_not_a_socket_in_its_place)
{
	static const char *const kinds[] = { "a directory", "a regular file", "a FIFO",
					     "a symbolic link" };
	EVS_OPTS(evs_producer_opts, o, .ring_bytes = 4096, .hugepages = EVS_HUGEPAGES_OFF);
	const char *name = evs_test_name("notsock");
	char base[64], sock[160], why[64];
	struct stat st;

	scratch(base, sizeof(base), "notsock");
	ck_assert_int_eq(chmod(base, 0700), 0);
	snprintf(sock, sizeof(sock), "%s/%s.sock", base, name);
	o.runtime_dir = base;
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		int made = i == 0 ? mkdir(sock, 0700) :
			   i == 1 ? close(open(sock, O_CREAT | O_WRONLY | O_CLOEXEC, 0600)) :
			   i == 2 ? mkfifo(sock, 0600) : symlink("/nonexistent/evs.sock", sock);

		ck_assert_int_eq(made, 0);
		ck_assert_ptr_null(evs_producer__new(name, 1, &o));
		ck_assert_int_eq(errno, EADDRINUSE);
		snprintf(why, sizeof(why), "is %s, not a producer's socket", kinds[i]);
		ck_assert_msg(strstr(evs_errmsg(), why), "message: %s", evs_errmsg());
		ck_assert_msg(lstat(sock, &st) == 0, "%s at the socket's place was removed", kinds[i]);
		ck_assert_int_eq(i == 0 ? rmdir(sock) : unlink(sock), 0);
		printf("refused: %s\n", evs_errmsg());
	}
	scratch_remove(base);
}
END_TEST

/* A directory group members could write is not a place for a socket. */
START_TEST(test_producer_refuses_group_writable_runtime_directory)
{
	EVS_OPTS(evs_producer_opts, o, .ring_bytes = 4096, .hugepages = EVS_HUGEPAGES_OFF);
	char base[64];

	scratch(base, sizeof(base), "gw");
	ck_assert_int_eq(chmod(base, 0770), 0);
	o.runtime_dir = base;
	ck_assert_ptr_null(evs_producer__new(evs_test_name("gw"), 1, &o));
	ck_assert_int_eq(errno, EPERM);
	ck_assert_msg(strstr(evs_errmsg(), "has mode 0770"), "message: %s", evs_errmsg());
	scratch_remove(base);
}
END_TEST

/* The group rule: a producer of another uid with allow_group, in a
 * directory named explicitly and shared with a group of the consumer's,
 * is reached, and its events received. */
START_TEST(test_group_member_reaches_another_uids_producer_in_its_directory)
{
	char base[64], dir[96];
	const char *name = evs_test_name("grpuid");
	int ready[2], go[2], status;
	pid_t prod, cons;
	char ch;

	NEED_ROOT();
	scratch(base, sizeof(base), "grpuid");
	snprintf(dir, sizeof(dir), "%s/run", base);
	plant_dir(dir, NOBODY, 0700);
	ck_assert_int_eq(pipe2(ready, O_CLOEXEC), 0);
	ck_assert_int_eq(pipe2(go, O_CLOEXEC), 0);
	prod = fork();
	ck_assert_int_ge(prod, 0);
	if (prod == 0) {
		EVS_OPTS(evs_producer_opts, o, .ring_bytes = 4096, .hugepages = EVS_HUGEPAGES_OFF,
			 .runtime_dir = dir, .allow_group = 1, .allow_gid = TEST_GID);
		struct evs_producer *p;

		alarm(20);
		close(ready[0]);
		close(go[1]);
		if (setgroups(0, NULL) || setgid(TEST_GID) || setuid(NOBODY))
			_exit(120);
		p = evs_producer__new(name, 1, &o);
		if (!p || write(ready[1], "r", 1) != 1)
			_exit(121);
		if (!evs_wait_connected(p, 0, 1, 5000) || evs_producer__emit(p, 0, 1, "hi", 2))
			_exit(122);
		if (read(go[0], &ch, 1) < 0)
			_exit(123);
		evs_producer__free(p);
		_exit(0);
	}
	close(ready[1]);
	close(go[0]);
	ck_assert_msg(read(ready[0], &ch, 1) == 1, "producer of uid %d did not start", NOBODY);
	cons = fork();
	ck_assert_int_ge(cons, 0);
	if (cons == 0) {
		EVS_OPTS(evs_consumer_opts, o, .runtime_dir = dir);
		struct evs_consumer *c;
		struct evs_record r;

		alarm(20);
		if (setgroups(0, NULL) || setgid(TEST_GID) || setuid(OTHER_UID))
			_exit(120);
		c = evs_consumer__connect(name, 0, &o);
		if (!c) {
			printf("group member: %s\n", evs_errmsg());
			_exit(errno & 0x7f);
		}
		if (evs_consumer__wait(c, 5000) || evs_consumer__peek(c, &r) || r.hdr.data_size != 2)
			_exit(121);
		_exit(0);
	}
	ck_assert_int_eq(waitpid(cons, &status, 0), cons);
	close(go[1]);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "the group member did not receive the event (status %d)", status);
	ck_assert_int_eq(waitpid(prod, &status, 0), prod);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "producer (status %d)", status);
	close(ready[0]);
	scratch_remove(base);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("permissions");
	TCase *tc = evs_tcase("permissions");

	tcase_add_checked_fixture(tc, NULL, planted_release);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_socket_is_0600_in_a_0700_directory);
	tcase_add_test(tc, test_allow_group_makes_socket_0660_of_that_group);
	tcase_add_test(tc, test_other_uid_cannot_connect);
	tcase_add_test(tc, test_other_uid_is_refused_by_peer_credentials);
	tcase_add_test(tc, test_member_of_allowed_group_can_connect);
	tcase_add_test(tc, test_supplementary_member_of_allowed_group_can_connect);
	tcase_add_test(tc, test_other_group_is_refused_when_a_group_is_allowed);
	tcase_add_test(tc, test_memfds_have_no_name_in_any_file_system);
	tcase_add_test(tc, test_other_uid_cannot_open_memfds_through_proc);
	tcase_add_test(tc, test_consumer_ring_view_cannot_be_made_writable);
	tcase_add_test(tc, test_other_uid_cannot_reopen_its_read_only_files_writable);
	tcase_add_test(tc, test_consumer_control_page_cannot_be_made_writable);
	tcase_add_test(tc, test_consumer_refuses_runtime_directory_of_another_uid);
	tcase_add_test(tc, test_consumer_refuses_runtime_directory_that_is_a_symlink);
	tcase_add_test(tc, test_consumer_refuses_socket_served_by_another_uid);
	tcase_add_test(tc, test_consumer_refuses_socket_file_of_another_uid);
	tcase_add_test(tc, test_consumer_refuses_runtime_directory_writable_by_others);
	tcase_add_test(tc, test_producer_refuses_runtime_directory_that_is_a_symlink);
	tcase_add_test(tc, test_consumer_refuses_symlink_named_with_a_slash);
	tcase_add_test(tc, test_producer_leaves_what_is_not_a_socket_in_its_place);
	tcase_add_test(tc, test_producer_refuses_group_writable_runtime_directory);
	tcase_add_test(tc, test_group_member_reaches_another_uids_producer_in_its_directory);
	suite_add_tcase(s, tc);
	return evs_run_suite(s);
}

/* SPDX-License-Identifier: MIT */
/*
 * Who can reach a producer. The socket is 0600 in a 0700 directory (0660 /
 * 0750 with a configured group); a process of another uid cannot connect,
 * neither through the file system nor, with the directory opened up, past
 * the server's SO_PEERCRED check; a member of the configured group can. The
 * memfds have no name in any file system and cannot be opened through
 * /proc by another uid; a consumer's view of the ring is read-only.
 *
 * The other-uid tests drop privileges in a forked child and need root;
 * they skip with the reason otherwise.
 */
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "helpers.h"
#include "consumer.h"
#include "producer.h"

#define NOBODY    65534
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

/* Runs a consumer as uid NOBODY with gid `gid` in a child; returns 0 if it
 * connected and received an event, else the errno of the failure. */
static int connect_as(const struct perm *t, gid_t gid)
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
		if (setgroups(0, NULL) || setgid(gid) || setuid(NOBODY))
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
	int fds[3];

	perm_open(&t, "noname", false);
	b = &t.p->streams[0].backing;
	fds[0] = b->ctl_fd;
	fds[1] = b->data_fd;
	fds[2] = b->data_ro_fd;
	for (int i = 0; i < 3; i++) {
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

/* A consumer cannot make its view of the ring writable: it only ever had
 * a read-only file. */
START_TEST(test_consumer_ring_view_cannot_be_made_writable)
{
	struct perm t;
	struct evs_consumer *c;

	perm_open(&t, "rodata", false);
	c = connect_in(&t);
	ck_assert_msg(c, "consumer: %s", evs_errmsg());
	ck_assert_int_ne(mprotect((void *)c->data, 4096, PROT_READ | PROT_WRITE), 0);
	ck_assert_int_eq(errno, EACCES);
	evs_consumer__free(c);
	perm_close(&t);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("permissions");
	TCase *tc = evs_tcase("permissions");

	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_socket_is_0600_in_a_0700_directory);
	tcase_add_test(tc, test_allow_group_makes_socket_0660_of_that_group);
	tcase_add_test(tc, test_other_uid_cannot_connect);
	tcase_add_test(tc, test_other_uid_is_refused_by_peer_credentials);
	tcase_add_test(tc, test_member_of_allowed_group_can_connect);
	tcase_add_test(tc, test_other_group_is_refused_when_a_group_is_allowed);
	tcase_add_test(tc, test_memfds_have_no_name_in_any_file_system);
	tcase_add_test(tc, test_other_uid_cannot_open_memfds_through_proc);
	tcase_add_test(tc, test_consumer_ring_view_cannot_be_made_writable);
	suite_add_tcase(s, tc);
	return evs_run_suite(s);
}

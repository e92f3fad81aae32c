/* SPDX-License-Identifier: MIT */
/*
 * The runtime directory, trusted before anything in it is used: opened
 * once without following a symbolic link at its end, checked through that
 * descriptor (who owns it, who may write it), and from then on every
 * socket and lock file in it is reached through the descriptor
 * (/proc/self/fd/N/FILE), so that nobody can swap a path component between
 * the check and the use. Both sides check: the producer before it puts its
 * socket there, a consumer before it believes a socket there is the
 * producer's (the peer's credentials are client.c's).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "errors.h"
#include "rundir.h"

#define PROC_FD "/proc/self/fd/"

/* fd digits (10) and a '/': every path we build fits in sun_path */
_Static_assert(sizeof(PROC_FD) + 11 + EVS_RUNFILE_MAX <= EVS_RUNDIR_MAX,
	       "/proc/self/fd/N/<name>.sock must fit in sun_path");

static bool in_our_groups(gid_t gid)
{
	bool found = gid == getegid();
	gid_t *list;
	int n = getgroups(0, NULL);

	if (found || n <= 0)
		return found;
	list = calloc((size_t)n, sizeof(*list));
	if (!list)
		return false;
	n = getgroups(n, list);
	for (int i = 0; i < n && !found; i++)
		found = list[i] == gid;
	free(list);
	return found;
}

/* "dir/", "dir//" and "dir/." name dir but make the kernel follow a link
 * there (path resolution follows a link that is not the last component):
 * they are cut back to "dir", whose link O_NOFOLLOW then refuses. */
static void rundir_trim(char *path)
{
	size_t n = strlen(path);

	for (;;) {
		if (n > 1 && path[n - 1] == '/')
			n--;
		else if (n > 2 && path[n - 1] == '.' && path[n - 2] == '/')
			n -= 2;
		else
			break;
		path[n] = '\0';
	}
}

/* Opens d->path without following a link at its end (a link planted in a
 * shared directory such as /tmp could lead anywhere) and stats it. On
 * failure d->fd is -1: callers test that, so that *st is only ever read
 * after a successful fstat(). */
static int rundir_open_nofollow(struct evs_rundir *d, struct stat *st)
{
	char target[EVS_RUNDIR_MAX], self[sizeof(PROC_FD) + 11];
	ssize_t n;
	int err;

	d->fd = open(d->path, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (d->fd < 0) {
		err = errno;
		if (err == ENOENT)
			return evs_fail(ENOENT, "runtime directory '%s' does not exist", d->path);
		if (err != ENOTDIR && err != ELOOP)
			return evs_fail(err, "runtime directory '%s': %s", d->path, strerror(err));
		n = readlink(d->path, target, sizeof(target) - 1);
		if (n < 0)
			return evs_fail(ENOTDIR, "runtime directory '%s' is not a directory", d->path);
		target[n] = '\0';
		return evs_fail(EPERM, "runtime directory '%s' is a symbolic link (to '%s'): refused, "
				"anyone could have planted it; name the directory itself", d->path, target);
	}
	snprintf(self, sizeof(self), PROC_FD "%d", d->fd);
	if (fstat(d->fd, st) < 0 || access(self, F_OK) < 0) {
		err = evs_fail(errno, "runtime directory '%s' through %s: %s (is /proc mounted?)",
			       d->path, self, strerror(errno));
		goto err_close;
	}
	return 0;

err_close:
	evs_rundir_close(d);
	return err;
}

int evs_rundir_make(struct evs_rundir *d, const char *opt_dir, bool group, gid_t gid)
{
	char self[sizeof(PROC_FD) + 11];
	uid_t me = geteuid();
	struct stat st = { 0 };
	int err;

	d->fd = -1;
	err = evs_runtime_dir(opt_dir, d->path, sizeof(d->path));
	if (err)
		return err;
	rundir_trim(d->path);
	/* mkdir() does not follow a link at the end of the path: a planted one
	 * leaves it at EEXIST and is refused when opened */
	if (mkdir(d->path, group ? 0750 : 0700) < 0 && errno != EEXIST)
		return evs_fail(errno, "cannot create runtime directory '%s': %s", d->path,
				strerror(errno));
	err = rundir_open_nofollow(d, &st);
	if (d->fd < 0)
		return err;
	/* someone else's directory could hold a socket in our name */
	if (st.st_uid != me) {
		err = evs_fail(EPERM, "runtime directory '%s' is owned by uid %u: a producer of uid %u "
			       "needs its own (another user may have created this one)", d->path,
			       (unsigned)st.st_uid, (unsigned)me);
		goto err_close;
	}
	if (st.st_mode & 022) {
		err = evs_fail(EPERM, "runtime directory '%s' has mode %04o: it must not be writable by "
			       "group or others (they could replace the socket)", d->path,
			       (unsigned)(st.st_mode & 07777));
		goto err_close;
	}
	if (group && fchownat(d->fd, "", (uid_t)-1, gid, AT_EMPTY_PATH) == 0) {
		snprintf(self, sizeof(self), PROC_FD "%d", d->fd);
		chmod(self, 0750);
	}
	d->peer_uid = me;
	return 0;

err_close:
	evs_rundir_close(d);
	return err;
}

int evs_rundir_open(struct evs_rundir *d, const char *opt_dir, const char *name)
{
	uid_t me = geteuid();
	struct stat st = { 0 };
	int err;

	d->fd = -1;
	err = evs_runtime_dir(opt_dir, d->path, sizeof(d->path));
	if (err)
		return err;
	rundir_trim(d->path);
	err = rundir_open_nofollow(d, &st);
	if (d->fd < 0 && err == -ENOENT)
		return evs_fail(ENOENT, "no producer named '%s' (runtime directory '%s' does not exist)",
				name, d->path);
	if (d->fd < 0)
		return err;
	if (st.st_mode & 022) {
		err = evs_fail(EPERM, "runtime directory '%s' has mode %04o: refused, group or others "
			       "can write it and could have put any socket there", d->path,
			       (unsigned)(st.st_mode & 07777));
		goto err_close;
	}
	if (st.st_uid == me || st.st_uid == 0) {
		d->peer_uid = me;
	} else if (evs_runtime_dir_explicit(opt_dir) && in_our_groups(st.st_gid)) {
		/* a producer of another uid that shares its directory with a
		 * group of ours (allow_group): its owner is who we expect */
		d->peer_uid = st.st_uid;
	} else {
		err = evs_fail(EPERM, "runtime directory '%s' is owned by uid %u: refused, expected uid %u "
			       "(this process) or root; another uid's directory is trusted only when "
			       "named explicitly (runtime_dir or EVSTREAM_RUNTIME_DIR) and its group "
			       "is one of this process's",
			       d->path, (unsigned)st.st_uid, (unsigned)me);
		goto err_close;
	}
	return 0;

err_close:
	evs_rundir_close(d);
	return err;
}

void evs_rundir_close(struct evs_rundir *d)
{
	if (d->fd >= 0)
		close(d->fd);
	d->fd = -1;
}

void evs_runfile(char *buf, const char *name, const char *suffix)
{
	snprintf(buf, EVS_RUNFILE_MAX, "%s%s", name, suffix);
}

void evs_rundir_sockaddr(const struct evs_rundir *d, const char *file, struct sockaddr_un *sa)
{
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	snprintf(sa->sun_path, sizeof(sa->sun_path), PROC_FD "%d/%s", d->fd, file);
}

int evs_rundir_check_socket(const struct evs_rundir *d, const char *name, const char *file)
{
	struct stat st;

	if (fstatat(d->fd, file, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		if (errno == ENOENT)
			return evs_fail(ENOENT, "no producer named '%s' (no socket %s/%s)", name, d->path,
					file);
		return evs_fail(errno, "socket %s/%s: %s", d->path, file, strerror(errno));
	}
	/* connect() would follow a link */
	if (S_ISLNK(st.st_mode))
		return evs_fail(EPERM, "%s/%s is a symbolic link, not a producer's socket: refused",
				d->path, file);
	if (!S_ISSOCK(st.st_mode))
		return evs_fail(ENOENT, "no producer named '%s' (%s/%s is not a socket)", name, d->path,
				file);
	if (st.st_uid != d->peer_uid && st.st_uid != 0)
		return evs_fail(EPERM, "socket %s/%s is owned by uid %u: refused, expected uid %u or root",
				d->path, file, (unsigned)st.st_uid, (unsigned)d->peer_uid);
	return 0;
}

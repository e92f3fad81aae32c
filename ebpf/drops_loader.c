/* SPDX-License-Identifier: MIT */
/*
 * Loading and attaching the drop-counting program; reading and unpinning
 * its maps. See drops_loader.h for the owner/reader rule.
 */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/capability.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "drops_loader.h"
#include "drops.skel.h"

#ifndef BPF_FS_MAGIC
#define BPF_FS_MAGIC 0xcafe4a11
#endif
#ifndef CAP_PERFMON
#define CAP_PERFMON 38
#endif
#ifndef CAP_BPF
#define CAP_BPF 39
#endif
#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

struct evs_drops {
	struct drops_bpf *skel;   /* NULL in no_attach mode */
	struct bpf_link *link;    /* set when this handle is the owner */
	int map_fd;
	int owner_fd;
	__u32 map_id;             /* the drops map's, to tell whether its pin is still it */
	pid_t owner_pid;
	pid_t target_pid;         /* 0: every process that maps binary */
	int target_fd;            /* pidfd of target_pid, -1: none */
	int scope_given;          /* binary or pid asked for, not defaulted */
	char pin_dir[PATH_MAX];
	char binary[PATH_MAX];
};

static __thread char errbuf[2048];
static char libbpf_last[512];
static int verbose;

const char *evs_drops__errmsg(void)
{
	return errbuf;
}

void evs_drops__set_verbose(int on)
{
	verbose = on;
}

static int fail(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(errbuf, sizeof(errbuf), fmt, ap);
	va_end(ap);
	return -err;
}

/* libbpf talks a lot on failure; keep its last warning for our message */
static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	size_t n;

	if (verbose)
		return vfprintf(stderr, fmt, ap);
	if (level > LIBBPF_WARN)
		return 0;
	vsnprintf(libbpf_last, sizeof(libbpf_last), fmt, ap);
	n = strlen(libbpf_last);
	while (n && libbpf_last[n - 1] == '\n')
		libbpf_last[--n] = 0;
	return 0;
}

static int has_caps(void)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[2];

	memset(data, 0, sizeof(data));
	if (syscall(SYS_capget, &hdr, data))
		return geteuid() == 0;
#define HAS(c) (data[(c) / 32].effective & (1u << ((c) % 32)))
	return HAS(CAP_SYS_ADMIN) || (HAS(CAP_BPF) && HAS(CAP_PERFMON));
#undef HAS
}

/* The pin directory as an absolute path without trailing slashes: a
 * background owner leaves for /, and a relative name would then point
 * elsewhere; "dir/" would make lstat() follow a link at dir. */
static int absolute_dir(const char *dir, char *out, size_t len)
{
	char cwd[PATH_MAX];
	size_t n;

	if (!dir)
		dir = EVS_DROPS_PIN_DIR;
	if (!*dir)
		return fail(EINVAL, "the pin directory is an empty name (give one such as "
			    EVS_DROPS_PIN_DIR ")");
	if (*dir == '/')
		n = (size_t)snprintf(out, len, "%s", dir);
	else if (getcwd(cwd, sizeof(cwd)))
		n = (size_t)snprintf(out, len, "%s/%s", strcmp(cwd, "/") ? cwd : "", dir);
	else
		return fail(errno, "%s is relative and the current directory is unknown (%s): "
			    "give an absolute --pin-dir", dir, strerror(errno));
	if (n >= len)
		return fail(ENAMETOOLONG, "pin directory name too long: %s", dir);
	while (n > 1 && out[n - 1] == '/')
		out[--n] = 0;
	return 0;
}

int evs_drops__check_env(const char *pin_dir)
{
	char path[PATH_MAX];
	struct statfs sf;
	int err;

	err = absolute_dir(pin_dir, path, sizeof(path));
	if (err)
		return err;
	if (!has_caps())
		return fail(EPERM, "loading BPF programs needs root, or CAP_BPF and CAP_PERFMON "
			    "(try: sudo evs-drops)");
	if (access("/sys/kernel/btf/vmlinux", R_OK))
		return fail(ENOTSUP, "this kernel has no BTF (/sys/kernel/btf/vmlinux is missing; "
			    "it needs CONFIG_DEBUG_INFO_BTF=y): the CO-RE program cannot be relocated");
	/* the nearest existing directory on the way to pin_dir must be bpffs */
	while (statfs(path, &sf)) {
		char *slash = strrchr(path, '/');

		if (errno != ENOENT || !slash || slash == path)
			return fail(errno, "cannot look at %s: %s", path, strerror(errno));
		*slash = 0;
	}
	if ((unsigned long)sf.f_type != BPF_FS_MAGIC)
		return fail(ENODEV, "%s is not on a bpf filesystem, so maps cannot be pinned there: "
			    "mount it with `mount -t bpf bpf /sys/fs/bpf` (or give --pin-dir "
			    "under a mounted one)", path);
	return 0;
}

/*
 * /sys/fs/bpf is writable by every user (mode 1777): anyone may make the
 * pin directory, or a link there, before root does, and then swap what is
 * pinned in it. So the directory and each one above it must belong to
 * root or to us, and none may be writable by others unless sticky. The
 * directory itself must not be a link either: --detach would empty the
 * target and fail to remove the link.
 */
static int check_pin_dir(const char *dir)
{
	char path[PATH_MAX], target[PATH_MAX];
	struct stat st;
	ssize_t n;

	snprintf(path, sizeof(path), "%s", dir);
	for (int top = 1;; top = 0) {
		char *slash;

		if (lstat(path, &st) == 0) {
			if (top && S_ISLNK(st.st_mode)) {
				n = readlink(path, target, sizeof(target) - 1);
				target[n > 0 ? n : 0] = 0;
				return fail(ELOOP, "%s is a symbolic link (to %s), not a directory: "
					    "evs-drops pins only into a real directory, whose pins "
					    "it can trust; remove the link (rm %s) or give the "
					    "directory itself as --pin-dir", path, target, path);
			}
			if (top && !S_ISDIR(st.st_mode))
				return fail(ENOTDIR, "%s is not a directory but a pinned BPF object: "
					    "give another --pin-dir", path);
			if (st.st_uid != 0 && st.st_uid != geteuid())
				return fail(EPERM, "%s belongs to uid %u, not to root: another user "
					    "may have made it to tamper with the pins; look at it, "
					    "remove it (rm -r %s) and run evs-drops again",
					    path, (unsigned)st.st_uid, path);
			/* a link's own mode is always 0777 and means nothing */
			if (!S_ISLNK(st.st_mode) && (st.st_mode & (S_IWGRP | S_IWOTH)) &&
			    !(st.st_mode & S_ISVTX))
				return fail(EPERM, "%s is writable by other users (mode %04o): they "
					    "could swap the pins in it; chmod go-w %s, or give "
					    "another --pin-dir", path, (unsigned)(st.st_mode & 07777),
					    path);
		} else if (errno != ENOENT) {
			return fail(errno, "cannot look at %s: %s", path, strerror(errno));
		}
		slash = strrchr(path, '/');
		if (!slash || slash == path)
			return 0;
		*slash = 0;
	}
}

/* What the kernel says of a pinned object (/proc/self/fdinfo). */
struct pin_info {
	char kind[16];    /* "map", "program", "link" or "" */
	unsigned int map_type, key_size, value_size, max_entries, map_id;
};

static void fd_pin_info(int fd, struct pin_info *pi)
{
	char path[64], line[128];
	FILE *f;

	memset(pi, 0, sizeof(*pi));
	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = fopen(path, "r");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "map_type: %u", &pi->map_type) == 1)
			snprintf(pi->kind, sizeof(pi->kind), "map");
		else if (!strncmp(line, "prog_type:", 10))
			snprintf(pi->kind, sizeof(pi->kind), "program");
		else if (!strncmp(line, "link_type:", 10))
			snprintf(pi->kind, sizeof(pi->kind), "link");
		sscanf(line, "key_size: %u", &pi->key_size);
		sscanf(line, "value_size: %u", &pi->value_size);
		sscanf(line, "max_entries: %u", &pi->max_entries);
		sscanf(line, "map_id: %u", &pi->map_id);
	}
	fclose(f);
}

/* The maps as drops.bpf.c declares them. libbpf reuses a pinned map that
 * agrees in type and sizes only, and the readers here copy entries of
 * these sizes: anything else at these paths is refused by name. */
struct pin_layout {
	const char *name;
	unsigned int map_type, key_size, value_size, max_entries;
};

static const struct pin_layout pin_layouts[] = {
	{ EVS_DROPS_MAP, BPF_MAP_TYPE_HASH, sizeof(struct evs_drop_key),
	  sizeof(struct evs_drop_val), EVS_DROPS_MAX_ENTRIES },
	{ EVS_DROPS_OWNER_MAP, BPF_MAP_TYPE_HASH, sizeof(__u32),
	  sizeof(struct evs_drops_owner), 1 },
};

/* drops_owner before it named the binary: same pid and start time first */
static const struct pin_layout owner_layout_before = {
	EVS_DROPS_OWNER_MAP, BPF_MAP_TYPE_HASH, sizeof(__u32), 16, 1
};
_Static_assert(offsetof(struct evs_drops_owner, binary) == 16, "owner prefix");

static int pin_matches(const struct pin_info *pi, const struct pin_layout *l)
{
	return !strcmp(pi->kind, "map") && pi->map_type == l->map_type &&
	       pi->key_size == l->key_size && pi->value_size == l->value_size &&
	       pi->max_entries == l->max_entries;
}

/* 0 when nothing is pinned at dir/l->name or a map of layout l is: then
 * *fdp is its fd (opened), else -1. Else -errno and a message naming it. */
static int check_pin(const char *dir, const struct pin_layout *l, int *fdp)
{
	char path[PATH_MAX + 32];
	struct pin_info pi;
	struct stat st;
	int fd;

	*fdp = -1;
	snprintf(path, sizeof(path), "%s/%s", dir, l->name);
	if (lstat(path, &st))
		return errno == ENOENT ? 0 : fail(errno, "cannot look at %s: %s", path,
						  strerror(errno));
	if (S_ISDIR(st.st_mode) || S_ISLNK(st.st_mode))
		return fail(EEXIST, "%s is a %s, not a pinned map: evs-drops did not make it; "
			    "remove it (rm -r %s) or give another --pin-dir", path,
			    S_ISDIR(st.st_mode) ? "directory" : "symbolic link", path);
	fd = bpf_obj_get(path);
	if (fd < 0)
		return fail(errno, "cannot open the pin %s: %s", path, strerror(errno));
	fd_pin_info(fd, &pi);
	if (pin_matches(&pi, l)) {
		*fdp = fd;
		return 0;
	}
	close(fd);
	if (strcmp(pi.kind, "map"))
		return fail(EEXIST, "%s is a pinned BPF %s, not a map: evs-drops did not pin it; "
			    "remove it (rm %s) or give another --pin-dir", path,
			    pi.kind[0] ? pi.kind : "object", path);
	return fail(EEXIST, "%s is a BPF map of type %s with %u-byte keys and %u-byte values "
		    "(%u entries), where evs-drops keeps a %s map with %u-byte keys and %u-byte "
		    "values (%u entries): another version of evs-drops or another tool left it. "
		    "`evs-drops --detach -d %s` removes it (and its counts), or give another "
		    "--pin-dir", path, libbpf_bpf_map_type_str(pi.map_type) ?: "?", pi.key_size,
		    pi.value_size, pi.max_entries, libbpf_bpf_map_type_str(l->map_type),
		    l->key_size, l->value_size, l->max_entries, dir);
}

/* The pin directory and both pins, before anything is read or reused. */
static int check_pins(const char *dir)
{
	int err = check_pin_dir(dir);

	for (size_t i = 0; !err && i < sizeof(pin_layouts) / sizeof(pin_layouts[0]); i++) {
		int fd;

		err = check_pin(dir, &pin_layouts[i], &fd);
		if (fd >= 0)
			close(fd);
	}
	return err;
}

static int file_exists(const char *p)
{
	return access(p, R_OK) == 0;
}

/* Debian's multiarch library directory of the architecture built for */
#if defined(__x86_64__)
#define MULTIARCH_LIBDIR "/usr/lib/x86_64-linux-gnu/"
#elif defined(__aarch64__)
#define MULTIARCH_LIBDIR "/usr/lib/aarch64-linux-gnu/"
#else
#define MULTIARCH_LIBDIR "/usr/lib/"
#endif

/* The library to attach to when none is given: the one built next to the
 * running program, else an installed one. */
static int default_binary(char *buf, size_t len)
{
	static const char *const rel[] = {
		"libevstream.so",            /* build/evs-drops next to build/libevstream.so */
		"../libevstream.so",         /* build/tests, build/bench */
		"../lib/libevstream.so.1",   /* installed: PREFIX/bin, PREFIX/lib */
	};
	static const char *const abs[] = {
		"/usr/local/lib/libevstream.so.1",
		MULTIARCH_LIBDIR "libevstream.so.1",
		"/usr/lib/libevstream.so.1",
	};
	char exe[PATH_MAX], cand[PATH_MAX + 64];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	if (n > 0) {
		char *slash;

		exe[n] = 0;
		slash = strrchr(exe, '/');
		if (slash)
			*slash = 0;
		for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
			snprintf(cand, sizeof(cand), "%s/%s", exe, rel[i]);
			if (file_exists(cand) && realpath(cand, buf) && strlen(buf) < len)
				return 0;
		}
	}
	for (size_t i = 0; i < sizeof(abs) / sizeof(abs[0]); i++)
		if (file_exists(abs[i]) && realpath(abs[i], buf) && strlen(buf) < len)
			return 0;
	return fail(ENOENT, "no libevstream.so found next to this program or in /usr/local/lib, "
		    "/usr/lib: give one with --binary");
}

/* The libevstream.so a running process has mapped. */
static int binary_of_pid(pid_t pid, char *buf, size_t len)
{
	char path[64], line[PATH_MAX + 128];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return fail(errno, "process %d: %s", (int)pid, strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		char *p = strchr(line, '/');

		if (!p || !strstr(p, "/libevstream.so"))
			continue;
		p[strcspn(p, "\n")] = 0;
		snprintf(buf, len, "%s", p);
		fclose(f);
		return 0;
	}
	fclose(f);
	return fail(ENOENT, "process %d has no libevstream.so mapped (give the program with "
		    "--binary if it links libevstream statically)", (int)pid);
}

/* The last ')' of /proc/PID/stat, read into buf: the fields after comm
 * (which may hold spaces and parentheses) follow it, " S ppid pgrp session
 * ...". NULL with errno set (ENOENT: no such process) when it cannot be read. */
static char *proc_stat(pid_t pid, char *buf, size_t len)
{
	char path[64], *p;
	size_t n;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return NULL;
	n = fread(buf, 1, len - 1, f);
	fclose(f);
	buf[n] = 0;
	p = strrchr(buf, ')');
	if (!p)
		errno = EINVAL;
	return p;
}

static unsigned long long proc_start_time(pid_t pid)
{
	char buf[1024], *p = proc_stat(pid, buf, sizeof(buf));

	/* field 3 follows ") "; starttime is field 22 */
	for (int field = 2; field < 22 && p; field++)
		p = strchr(p + 1, ' ');
	return p ? strtoull(p + 1, NULL, 10) : 0;
}

static int owner_alive(const struct evs_drops_owner *o)
{
	/* 0 and what is negative as a pid_t name groups or every process to
	 * kill(); a start time that cannot be read proves nothing */
	if (!o->pid || o->pid > INT_MAX || !o->start_time ||
	    (kill((pid_t)o->pid, 0) && errno == ESRCH))
		return 0;
	return proc_start_time((pid_t)o->pid) == o->start_time;
}

/* 1: we own the probe now; 0: a live owner exists (in *cur). */
static int owner_claim(const struct evs_drops *d, struct evs_drops_owner *cur)
{
	struct evs_drops_owner me;
	__u32 key = 0;
	int fd = d->owner_fd;

	memset(&me, 0, sizeof(me));
	me.pid = (__u32)getpid();
	me.target_pid = (__u32)d->target_pid;
	me.start_time = proc_start_time(getpid());
	snprintf(me.binary, sizeof(me.binary), "%s", d->binary);
	for (int tries = 0; tries < 8; tries++) {
		if (bpf_map_update_elem(fd, &key, &me, BPF_NOEXIST) == 0) {
			*cur = me;
			return 1;
		}
		if (bpf_map_lookup_elem(fd, &key, cur))
			continue;      /* deleted meanwhile: try again */
		if (owner_alive(cur))
			return 0;
		/* its owner died (its links went with it): take over */
		bpf_map_delete_elem(fd, &key);
	}
	return -EBUSY;
}

static void owner_release(int fd)
{
	struct evs_drops_owner cur;
	__u32 key = 0;

	if (bpf_map_lookup_elem(fd, &key, &cur) == 0 && cur.pid == (__u32)getpid())
		bpf_map_delete_elem(fd, &key);
}

/* A pidfd turns readable when its process exits (a zombie has exited too)
 * and never names another process that gets the pid later. */
static void target_watch(struct evs_drops *d)
{
	if (d->target_fd >= 0)
		close(d->target_fd);
	d->target_fd = d->target_pid ? (int)syscall(SYS_pidfd_open, d->target_pid, 0) : -1;
}

/* Without a pidfd (kernels before 5.3, valgrind): gone when /proc has no
 * such process or only its zombie. */
static int proc_exited(pid_t pid)
{
	char buf[512], *p = proc_stat(pid, buf, sizeof(buf));

	if (!p)
		return errno == ENOENT;
	return p[1] && (p[2] == 'Z' || p[2] == 'X');
}

int evs_drops__owner_in_background(const struct evs_drops *d)
{
	char buf[1024], *p = d && d->owner_pid ? proc_stat(d->owner_pid, buf, sizeof(buf)) : NULL;
	long sid = 0;

	/* " state ppid pgrp session" */
	return p && sscanf(p + 1, " %*c %*d %*d %ld", &sid) == 1 && sid == d->owner_pid;
}

static int target_gone(const struct evs_drops *d)
{
	struct pollfd p = { .fd = d->target_fd, .events = POLLIN };

	if (!d->target_pid)
		return 0;
	if (d->target_fd < 0)
		return proc_exited(d->target_pid);
	return poll(&p, 1, 0) > 0;
}

/* Nothing is left to count: a probe kept for the dead process, and its
 * owner entry, would claim counting that no longer happens and turn away
 * the next --pid. The counts stay pinned. */
static int target_exited(struct evs_drops *d)
{
	if (d->link) {
		bpf_link__destroy(d->link);
		d->link = NULL;
		owner_release(d->owner_fd);
	}
	d->owner_pid = 0;
	return fail(ESRCH, "process %d exited: nothing is left to count; its counts stay "
		    "pinned in %s (evs-drops --detach removes them)", (int)d->target_pid,
		    d->pin_dir);
}

static void describe_scope(char *buf, size_t len, const char *binary, pid_t pid)
{
	if (pid)
		snprintf(buf, len, "%s in process %d", binary, (int)pid);
	else
		snprintf(buf, len, "%s", binary);
}

/* A reader reports what the owner attached to. Asked for another file or
 * process, it would show counts that are not of those: refused. */
static int follow_owner(struct evs_drops *d, const struct evs_drops_owner *o)
{
	char mine[PATH_MAX + 32], theirs[PATH_MAX + 32];

	if (d->scope_given && (strcmp(d->binary, o->binary) || d->target_pid != (pid_t)o->target_pid)) {
		describe_scope(mine, sizeof(mine), d->binary, d->target_pid);
		describe_scope(theirs, sizeof(theirs), o->binary, (pid_t)o->target_pid);
		return fail(EBUSY, "evs-drops pid %d already counts drops of %s into %s, not of %s; "
			    "read its counts without --binary and --pid, stop it with "
			    "`evs-drops --detach -d %s`, or count into another --pin-dir",
			    (int)o->pid, theirs, d->pin_dir, mine, d->pin_dir);
	}
	d->owner_pid = (pid_t)o->pid;
	d->target_pid = (pid_t)o->target_pid;
	target_watch(d);
	snprintf(d->binary, sizeof(d->binary), "%s", o->binary);
	return 0;
}

static int open_pinned(struct evs_drops *d)
{
	struct evs_drops_owner cur;
	char path[PATH_MAX + 32];
	struct pin_info pi;
	__u32 key = 0;
	int err;

	err = check_pin(d->pin_dir, &pin_layouts[0], &d->map_fd);
	if (!err)
		err = check_pin(d->pin_dir, &pin_layouts[1], &d->owner_fd);
	if (err)
		return err;
	snprintf(path, sizeof(path), "%s/%s", d->pin_dir, EVS_DROPS_MAP);
	if (d->map_fd < 0)
		return fail(ENOENT, "nothing pinned at %s: start evs-drops first", path);
	fd_pin_info(d->map_fd, &pi);
	d->map_id = pi.map_id;
	if (d->owner_fd >= 0 && bpf_map_lookup_elem(d->owner_fd, &key, &cur) == 0 &&
	    owner_alive(&cur))
		return follow_owner(d, &cur);
	return 0;
}

/* Become the owner and attach, unless a live owner counts already. */
static int claim_and_attach(struct evs_drops *d)
{
	struct evs_drops_owner cur;
	int err, own;

	own = owner_claim(d, &cur);
	if (own < 0)
		return fail(-own, "could not settle who attaches the probe (owner map keeps changing)");
	if (!own)  /* another process counts into these maps already */
		return follow_owner(d, &cur);

	libbpf_last[0] = 0;
	d->link = bpf_program__attach_usdt(d->skel->progs.evs_drop,
					   d->target_pid ? d->target_pid : -1, d->binary,
					   "evstream", "drop", NULL);
	if (!d->link) {
		err = errno;
		owner_release(d->owner_fd);
		d->owner_pid = 0;
		return fail(err, "attaching to evstream:drop in %s: %s (%s)", d->binary,
			    strerror(err), libbpf_last);
	}
	d->owner_pid = getpid();
	return 0;
}

static int load_and_attach(struct evs_drops *d)
{
	LIBBPF_OPTS(bpf_object_open_opts, oo, .pin_root_path = d->pin_dir);
	struct pin_info pi;
	int err;

	/* libbpf would reuse, or fail on, whatever it finds: look first */
	err = check_pins(d->pin_dir);
	if (err)
		return err;
	libbpf_last[0] = 0;
	d->skel = drops_bpf__open_opts(&oo);
	if (!d->skel)
		return fail(errno, "opening the BPF object: %s", libbpf_last);
	err = drops_bpf__load(d->skel);
	if (err)
		return fail(-err, "loading the BPF program failed: %s", libbpf_last);
	d->map_fd = bpf_map__fd(d->skel->maps.drops);
	d->owner_fd = bpf_map__fd(d->skel->maps.drops_owner);
	fd_pin_info(d->map_fd, &pi);
	d->map_id = pi.map_id;
	return claim_and_attach(d);
}

int evs_drops__refresh(struct evs_drops *d)
{
	struct evs_drops_owner cur;
	char path[PATH_MAX + 32];
	struct pin_info pi = { .map_id = 0 };
	__u32 key = 0;
	int fd;

	if (!d)
		return -EINVAL;
	if (d->link)
		return target_gone(d) ? target_exited(d) : 0;
	/* --detach unpinned them: counting into them again would be invisible */
	snprintf(path, sizeof(path), "%s/%s", d->pin_dir, EVS_DROPS_MAP);
	fd = bpf_obj_get(path);
	if (fd >= 0) {
		fd_pin_info(fd, &pi);
		close(fd);
	}
	if (pi.map_id != d->map_id)
		return fail(ESTALE, "the maps at %s were removed or replaced (evs-drops --detach?): "
			    "this evs-drops stops; start it again to count anew", d->pin_dir);
	if (target_gone(d))
		return target_exited(d);
	if (d->owner_fd >= 0 && bpf_map_lookup_elem(d->owner_fd, &key, &cur) == 0 &&
	    owner_alive(&cur)) {
		d->owner_pid = (pid_t)cur.pid;
		return 0;
	}
	d->owner_pid = 0;
	/* the owner exited: its links closed; take over, as a new evs-drops would */
	return d->skel ? claim_and_attach(d) : 0;
}

struct evs_drops *evs_drops__open(const struct evs_drops_opts *opts)
{
	const char *pin_dir = opts ? opts->pin_dir : NULL;
	pid_t pid = opts ? opts->pid : 0;
	int no_attach = opts ? opts->no_attach : 0;
	struct evs_stapsdt_note note;
	struct evs_drops *d;
	int err;

	errbuf[0] = 0;
	libbpf_set_print(libbpf_print);
	d = calloc(1, sizeof(*d));
	if (!d) {
		err = -ENOMEM;
		goto err_out;
	}
	d->map_fd = d->owner_fd = d->target_fd = -1;
	d->target_pid = pid;
	target_watch(d);
	d->scope_given = opts && (opts->binary || opts->pid);
	err = absolute_dir(pin_dir, d->pin_dir, sizeof(d->pin_dir) - 32);
	if (!err)
		err = evs_drops__check_env(d->pin_dir);
	if (err)
		goto err_free;
	if (no_attach) {
		d->scope_given = 0;
		err = open_pinned(d);
		if (err)
			goto err_free;
		return d;
	}

	if (opts && opts->binary) {
		if (!realpath(opts->binary, d->binary)) {
			err = fail(errno, "%s: %s", opts->binary, strerror(errno));
			goto err_free;
		}
	} else if (pid) {
		err = binary_of_pid(pid, d->binary, sizeof(d->binary));
	} else {
		err = default_binary(d->binary, sizeof(d->binary));
	}
	if (err)
		goto err_free;
	err = evs_stapsdt_find(d->binary, "evstream", "drop", &note);
	if (err == -ENOENT) {
		err = fail(ENOENT, "%s has no USDT probe evstream:drop: it was built without "
			   "<sys/sdt.h> (install systemtap-sdt-dev and rebuild libevstream)",
			   d->binary);
		goto err_free;
	} else if (err) {
		err = fail(-err, "cannot read ELF notes of %s: %s", d->binary, strerror(-err));
		goto err_free;
	}

	if (mkdir(d->pin_dir, 0700) && errno != EEXIST) {
		err = fail(errno, "creating %s: %s", d->pin_dir, strerror(errno));
		goto err_free;
	}
	err = load_and_attach(d);
	if (err)
		goto err_free;
	return d;

err_free:
	evs_drops__free(d);
err_out:
	errno = -err;
	return NULL;
}

void evs_drops__free(struct evs_drops *d)
{
	if (!d)
		return;
	if (d->link) {
		bpf_link__destroy(d->link);
		owner_release(d->owner_fd);
	}
	if (d->skel) {
		drops_bpf__destroy(d->skel);
	} else {
		if (d->map_fd >= 0)
			close(d->map_fd);
		if (d->owner_fd >= 0)
			close(d->owner_fd);
	}
	if (d->target_fd >= 0)
		close(d->target_fd);
	free(d);
}

int evs_drops__is_owner(const struct evs_drops *d)
{
	return d && d->link;
}

pid_t evs_drops__owner_pid(const struct evs_drops *d)
{
	return d ? d->owner_pid : 0;
}

const char *evs_drops__binary(const struct evs_drops *d)
{
	return d ? d->binary : "";
}

const char *evs_drops__pin_dir(const struct evs_drops *d)
{
	return d ? d->pin_dir : "";
}

int evs_drops__for_each(const struct evs_drops *d, evs_drops_fn fn, void *ctx)
{
	struct evs_drop_key key, next;
	struct evs_drop_val val;
	void *prev = NULL;
	int n = 0;

	if (!d || d->map_fd < 0)
		return -EINVAL;
	while (bpf_map_get_next_key(d->map_fd, prev, &next) == 0) {
		key = next;
		prev = &key;
		/* deleted between the two calls: skip it */
		if (bpf_map_lookup_elem(d->map_fd, &key, &val))
			continue;
		n++;
		if (fn && fn(ctx, &key, &val))
			break;
	}
	return n;
}

int evs_drops__lookup(const struct evs_drops *d, pid_t pid, unsigned int core,
		      struct evs_drop_val *v)
{
	struct evs_drop_key key = { .pid = (__u32)pid, .core = core };

	if (!d || d->map_fd < 0)
		return -EINVAL;
	return bpf_map_lookup_elem(d->map_fd, &key, v) ? -errno : 0;
}

/* The live owner's pid once it is stopped; 0 when none was running. */
static pid_t stop_owner(const char *pin_dir)
{
	pid_t stopped = 0;
	struct evs_drops_owner cur;
	__u32 key = 0;
	int fd;

	/* only a map of our layout names a pid to signal, or one of the
	 * layout before (pid and start time, no binary: an owner started by
	 * an older evs-drops is stopped too); another is removed unread */
	memset(&cur, 0, sizeof(cur));
	if ((check_pin(pin_dir, &pin_layouts[1], &fd) || fd < 0) &&
	    (check_pin(pin_dir, &owner_layout_before, &fd) || fd < 0))
		return 0;
	if (bpf_map_lookup_elem(fd, &key, &cur) == 0 && cur.pid != (__u32)getpid() &&
	    owner_alive(&cur)) {
		/* its links close with it, which detaches the probe */
		kill((pid_t)cur.pid, SIGTERM);
		for (int i = 0; i < 300 && owner_alive(&cur); i++) {
			struct timespec ts = { 0, 10 * 1000 * 1000 };

			nanosleep(&ts, NULL);
		}
		if (owner_alive(&cur))
			kill((pid_t)cur.pid, SIGKILL);
		stopped = (pid_t)cur.pid;
	}
	close(fd);
	return stopped;
}

int evs_drops__unpin(const char *dir)
{
	return evs_drops__unpin_report(dir, NULL);
}

int evs_drops__unpin_report(const char *dir, struct evs_drops_unpinned *r)
{
	struct evs_drops_unpinned none;
	char pin_dir[PATH_MAX], path[PATH_MAX + 32];
	struct stat st;
	int err;

	if (!r)
		r = &none;
	memset(r, 0, sizeof(*r));
	errbuf[0] = 0;
	err = absolute_dir(dir, pin_dir, sizeof(pin_dir));
	if (err)
		return err;
	if (lstat(pin_dir, &st))
		return errno == ENOENT ? 0 : fail(errno, "%s: %s", pin_dir, strerror(errno));
	err = check_pin_dir(pin_dir);
	if (err)
		return err;
	r->stopped = stop_owner(pin_dir);
	for (size_t i = 0; i < sizeof(pin_layouts) / sizeof(pin_layouts[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", pin_dir, pin_layouts[i].name);
		if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode))
			return fail(EISDIR, "%s is a directory, not a pin of evs-drops: left in "
				    "place (rmdir %s if it is not needed)", path, path);
		if (unlink(path) == 0)
			r->pins++;
		else if (errno != ENOENT)
			return fail(errno, "unpinning %s: %s", path, strerror(errno));
	}
	if (rmdir(pin_dir)) {
		if (errno == ENOTEMPTY || errno == EEXIST)
			return fail(ENOTEMPTY, "%s holds pins evs-drops did not make; left in place",
				    pin_dir);
		return fail(errno, "removing %s: %s", pin_dir, strerror(errno));
	}
	return 0;
}

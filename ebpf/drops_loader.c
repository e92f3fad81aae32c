/* SPDX-License-Identifier: MIT */
/*
 * Loading and attaching the drop-counting program; reading and unpinning
 * its maps. See drops_loader.h for the owner/reader rule.
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
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

struct evs_drops {
	struct drops_bpf *skel;   /* NULL in no_attach mode */
	struct bpf_link *link;    /* set when this handle is the owner */
	int map_fd;
	int owner_fd;
	pid_t owner_pid;
	char pin_dir[PATH_MAX];
	char binary[PATH_MAX];
};

static __thread char errbuf[1024];
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

int evs_drops__check_env(const char *pin_dir)
{
	char path[PATH_MAX];
	struct statfs sf;

	if (!pin_dir)
		pin_dir = EVS_DROPS_PIN_DIR;
	if (!has_caps())
		return fail(EPERM, "loading BPF programs needs root, or CAP_BPF and CAP_PERFMON "
			    "(try: sudo evs-drops)");
	if (access("/sys/kernel/btf/vmlinux", R_OK))
		return fail(ENOTSUP, "this kernel has no BTF (/sys/kernel/btf/vmlinux is missing; "
			    "it needs CONFIG_DEBUG_INFO_BTF=y): the CO-RE program cannot be relocated");
	/* the nearest existing directory on the way to pin_dir must be bpffs */
	snprintf(path, sizeof(path), "%s", pin_dir);
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

static unsigned long long proc_start_time(pid_t pid)
{
	char path[64], buf[1024];
	unsigned long long t = 0;
	FILE *f;
	char *p;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	/* comm may hold spaces and parentheses: fields start after the last ')' */
	p = strrchr(buf, ')');
	if (!p)
		return 0;
	/* field 3 follows ") "; starttime is field 22 */
	for (int field = 2; field < 22 && p; field++)
		p = strchr(p + 1, ' ');
	if (p)
		t = strtoull(p + 1, NULL, 10);
	return t;
}

static int owner_alive(const struct evs_drops_owner *o)
{
	if (!o->pid || (kill((pid_t)o->pid, 0) && errno == ESRCH))
		return 0;
	return proc_start_time((pid_t)o->pid) == o->start_time;
}

/* 1: we own the probe now; 0: a live owner exists (its pid in *pid). */
static int owner_claim(int fd, pid_t *pid)
{
	struct evs_drops_owner me = { .pid = (__u32)getpid() }, cur;
	__u32 key = 0;

	me.start_time = proc_start_time(getpid());
	for (int tries = 0; tries < 8; tries++) {
		if (bpf_map_update_elem(fd, &key, &me, BPF_NOEXIST) == 0) {
			*pid = getpid();
			return 1;
		}
		if (bpf_map_lookup_elem(fd, &key, &cur))
			continue;      /* deleted meanwhile: try again */
		if (owner_alive(&cur)) {
			*pid = (pid_t)cur.pid;
			return 0;
		}
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

static int open_pinned(struct evs_drops *d)
{
	char path[PATH_MAX + 32];
	struct evs_drops_owner cur;
	__u32 key = 0;

	snprintf(path, sizeof(path), "%s/%s", d->pin_dir, EVS_DROPS_MAP);
	d->map_fd = bpf_obj_get(path);
	if (d->map_fd < 0)
		return fail(errno, "nothing pinned at %s (%s): start evs-drops first", path,
			    strerror(errno));
	snprintf(path, sizeof(path), "%s/%s", d->pin_dir, EVS_DROPS_OWNER_MAP);
	d->owner_fd = bpf_obj_get(path);
	if (d->owner_fd >= 0 && bpf_map_lookup_elem(d->owner_fd, &key, &cur) == 0 &&
	    owner_alive(&cur))
		d->owner_pid = (pid_t)cur.pid;
	return 0;
}

static int load_and_attach(struct evs_drops *d, pid_t pid)
{
	LIBBPF_OPTS(bpf_object_open_opts, oo, .pin_root_path = d->pin_dir);
	int err, own;

	libbpf_last[0] = 0;
	d->skel = drops_bpf__open_opts(&oo);
	if (!d->skel)
		return fail(errno, "opening the BPF object: %s", libbpf_last);
	err = drops_bpf__load(d->skel);
	if (err)
		return fail(-err, "loading the BPF program failed: %s%s", libbpf_last,
			    strstr(libbpf_last, "reuse") ?
			    " (maps of another layout are pinned there: evs-drops --detach)" : "");
	d->map_fd = bpf_map__fd(d->skel->maps.drops);
	d->owner_fd = bpf_map__fd(d->skel->maps.drops_owner);

	own = owner_claim(d->owner_fd, &d->owner_pid);
	if (own < 0)
		return fail(-own, "could not settle who attaches the probe (owner map keeps changing)");
	if (!own)
		return 0;   /* another process counts into these maps already */

	d->link = bpf_program__attach_usdt(d->skel->progs.evs_drop, pid ? pid : -1, d->binary,
					   "evstream", "drop", NULL);
	if (!d->link) {
		err = errno;
		owner_release(d->owner_fd);
		d->owner_pid = 0;
		return fail(err, "attaching to evstream:drop in %s: %s (%s)", d->binary,
			    strerror(err), libbpf_last);
	}
	return 0;
}

struct evs_drops *evs_drops__open(const struct evs_drops_opts *opts)
{
	const char *pin_dir = opts && opts->pin_dir ? opts->pin_dir : EVS_DROPS_PIN_DIR;
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
	d->map_fd = d->owner_fd = -1;
	if (strlen(pin_dir) >= sizeof(d->pin_dir) - 32) {
		err = fail(ENAMETOOLONG, "pin directory name too long");
		goto err_free;
	}
	strcpy(d->pin_dir, pin_dir);
	err = evs_drops__check_env(d->pin_dir);
	if (err)
		goto err_free;
	if (no_attach) {
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
	err = load_and_attach(d, pid);
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

static void stop_owner(const char *pin_dir)
{
	char path[PATH_MAX + 32];
	struct evs_drops_owner cur;
	__u32 key = 0;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", pin_dir, EVS_DROPS_OWNER_MAP);
	fd = bpf_obj_get(path);
	if (fd < 0)
		return;
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
	}
	close(fd);
}

int evs_drops__unpin(const char *pin_dir)
{
	static const char *const pins[] = { EVS_DROPS_MAP, EVS_DROPS_OWNER_MAP };
	char path[PATH_MAX + 32];
	struct stat st;

	errbuf[0] = 0;
	if (!pin_dir)
		pin_dir = EVS_DROPS_PIN_DIR;
	if (stat(pin_dir, &st))
		return errno == ENOENT ? 0 : fail(errno, "%s: %s", pin_dir, strerror(errno));
	stop_owner(pin_dir);
	for (size_t i = 0; i < sizeof(pins) / sizeof(pins[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", pin_dir, pins[i]);
		if (unlink(path) && errno != ENOENT)
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

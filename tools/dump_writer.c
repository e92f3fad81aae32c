/* SPDX-License-Identifier: MIT */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/uio.h>

#include "dump_writer.h"
#include "jsonl.h"
#include "npy.h"
#include "preview.h"
#include "evstream/tensor.h"

#define INDEX_NAME "index.jsonl"
/* Disk space kept allocated ahead of the index (beyond its end, so readers
 * do not see it): when the disk fills, tensors fail but the index, which
 * says what failed, goes on. Checked every RESERVE_EVERY events. */
#define INDEX_RESERVE (4ull << 20)
#define RESERVE_EVERY 256
#define COPY_BUF (1u << 20)     /* a tensor copied by hand, in pieces */

/* Keeps disk space allocated ahead of the index (called every few events). */
static void index_reserve(struct dump_writer *w)
{
	if (w->index_fd < 0 || w->index_reserved - w->index_size >= INDEX_RESERVE / 2)
		return;
	/* EOPNOTSUPP or a full disk: carry on without */
	if (fallocate(w->index_fd, FALLOC_FL_KEEP_SIZE, (off_t)w->index_size, (off_t)INDEX_RESERVE) == 0)
		w->index_reserved = w->index_size + INDEX_RESERVE;
}

/* ------------------------------------------------------------ directories */

/*
 * Whose directory evs-dump may write into (docs/dump.md, "The output
 * directory"): ours or root's, and writable by nobody else unless the
 * sticky bit is set (then others may add names, never remove or rename
 * ours: and no name is ever followed or reused, below). 0, or -EPERM after
 * saying why.
 */
static int dir_refused(const struct stat *st, const char *what, const char *shown)
{
	uid_t me = geteuid();

	if (st->st_uid != me && st->st_uid != 0) {
		fprintf(stderr, "evs-dump: %s '%s' is owned by uid %u: refused, evs-dump (uid %u) writes only "
			"into a directory of its own or root's (its owner could plant links or swap files "
			"in it); choose another\n", what, shown, (unsigned)st->st_uid, (unsigned)me);
		return -EPERM;
	}
	if ((st->st_mode & 022) && !(st->st_mode & S_ISVTX)) {
		fprintf(stderr, "evs-dump: %s '%s' has mode %04o: refused, group or others can write it "
			"(and plant links in it) and it has no sticky bit; chmod go-w it, or choose "
			"another\n", what, shown, (unsigned)(st->st_mode & 07777));
		return -EPERM;
	}
	return 0;
}

/* When name in dirfd is a symbolic link, says so (as what 'shown[/file]')
 * and returns true. errno is not kept. */
static bool said_link(int dirfd, const char *name, const char *what, const char *shown,
		      const char *file)
{
	char target[PATH_MAX];
	ssize_t n = readlinkat(dirfd, name, target, sizeof(target) - 1);

	if (n < 0)
		return false;
	target[n] = '\0';
	fprintf(stderr, "evs-dump: %s%s'%s%s%s' is a symbolic link (to '%s'): refused, evs-dump never "
		"writes through a link (whoever can write its directory could have planted it)%s\n",
		what, *what ? " " : "", shown, file ? "/" : "", file ? file : "", target,
		!strcmp(what, "output directory") ? "; name the directory itself" : "");
	return true;
}

/* name in the directory parent: made (0755) when missing, then opened
 * without following a link (O_PATH) and checked (dir_refused). The
 * descriptor, or -errno after saying why. */
static int dir_open_checked(int parent, const char *name, const char *what, const char *shown,
			    bool *created)
{
	struct stat st;
	int fd, err;

	*created = mkdirat(parent, name, 0755) == 0;
	if (!*created && errno != EEXIST) {
		err = errno;
		fprintf(stderr, "evs-dump: cannot create %s '%s': %s\n", what, shown, strerror(err));
		return -err;
	}
	fd = openat(parent, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		err = errno;
		/* O_DIRECTORY with O_NOFOLLOW: ENOTDIR (or ELOOP) for a link */
		if ((err == ENOTDIR || err == ELOOP) && said_link(parent, name, what, shown, NULL))
			err = ELOOP;
		else
			fprintf(stderr, "evs-dump: cannot open %s '%s': %s\n", what, shown, strerror(err));
		goto fail;
	}
	if (fstat(fd, &st) < 0) {
		err = errno;
		fprintf(stderr, "evs-dump: cannot open %s '%s': %s\n", what, shown, strerror(err));
		close(fd);
		goto fail;
	}
	err = -dir_refused(&st, what, shown);
	if (err) {
		close(fd);
		goto fail;
	}
	return fd;
fail:
	/* what we made and could not use is no longer known to be ours */
	*created = false;
	return -err;
}

int dump_dir_open(struct dump_dir *d, int atfd, const char *path, const char *shown)
{
	char buf[4096], *p, *slash;
	size_t n = strlen(path);
	int cur, fd, err;

	d->fd = d->parentfd = -1;
	d->created = false;
	if (n == 0 || n >= sizeof(buf)) {
		err = n ? ENAMETOOLONG : ENOENT;
		fprintf(stderr, "evs-dump: cannot create output directory '%s': %s\n", shown, strerror(err));
		return -err;
	}
	memcpy(buf, path, n + 1);
	/* "dump/" is "dump": a slash after a link would make the kernel follow it */
	while (n > 1 && buf[n - 1] == '/')
		buf[--n] = '\0';
	p = buf;
	if (*p == '/') {
		cur = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
		while (*p == '/')
			p++;
	} else {
		cur = atfd == AT_FDCWD ? open(".", O_PATH | O_DIRECTORY | O_CLOEXEC)
				       : fcntl(atfd, F_DUPFD_CLOEXEC, 0);
	}
	if (cur < 0)
		goto fail;
	/* the components above the last, made when missing. From the working
	 * directory, links there are followed (as the runtime directory's
	 * are): whoever chose the path chose them, and what is written is
	 * checked at the last one. Below a directory already checked (atfd:
	 * --kafka's <host>/<producer>, names from the messages), each is
	 * checked as the last one is: others may add names to a sticky one */
	while ((slash = strchr(p, '/'))) {
		*slash = '\0';
		if (atfd != AT_FDCWD) {
			bool made;

			fd = dir_open_checked(cur, p, "output directory", shown, &made);
			if (fd < 0) {
				close(cur);
				return fd;
			}
		} else {
			fd = openat(cur, p, O_PATH | O_DIRECTORY | O_CLOEXEC);
			if (fd < 0 && errno == ENOENT) {
				if (mkdirat(cur, p, 0755) < 0 && errno != EEXIST)
					goto fail;
				fd = openat(cur, p, O_PATH | O_DIRECTORY | O_CLOEXEC);
			}
		}
		if (fd < 0)
			goto fail;
		close(cur);
		cur = fd;
		for (p = slash + 1; *p == '/'; p++)
			;
	}
	if (!*p)
		p = (char *)"."; /* the path was "/" */
	fd = dir_open_checked(cur, p, "output directory", shown, &d->created);
	if (fd < 0) {
		close(cur);
		return fd;
	}
	d->fd = fd;
	d->parentfd = cur;
	/* at most NAME_MAX: the kernel took it */
	n = strnlen(p, sizeof(d->leaf) - 1);
	memcpy(d->leaf, p, n);
	d->leaf[n] = '\0';
	return 0;
fail:
	err = errno;
	fprintf(stderr, "evs-dump: cannot create output directory '%s': %s\n", shown, strerror(err));
	if (cur >= 0)
		close(cur);
	return -err;
}

void dump_dir_close(struct dump_dir *d, bool remove_if_created)
{
	if (d->fd >= 0)
		close(d->fd);
	/* only if empty; and by the name in the parent we made it in */
	if (remove_if_created && d->created && d->parentfd >= 0)
		unlinkat(d->parentfd, d->leaf, AT_REMOVEDIR);
	if (d->parentfd >= 0)
		close(d->parentfd);
	d->fd = d->parentfd = -1;
	d->created = false;
}

/* A file that must be new in dirfd: O_EXCL (which also refuses a link of
 * that name, dangling or not) and O_NOFOLLOW. The descriptor or -1. */
static int create_new(int dirfd, const char *name)
{
	return openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
}

int dump_dir_check_empty(const struct dump_dir *d, const char *shown)
{
	int fd = openat(d->fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *dir = fd >= 0 ? fdopendir(fd) : NULL;
	char first[256] = "";
	const char *dump = NULL;  /* what only a dump writes */
	uint64_t n = 0;
	struct dirent *e;
	int err;

	if (!dir) {
		err = errno;
		if (fd >= 0)
			close(fd);
		fprintf(stderr, "evs-dump: cannot read output directory '%s': %s\n", shown, strerror(err));
		return -err;
	}
	while ((e = readdir(dir))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (!n++)
			snprintf(first, sizeof(first), "%s", e->d_name);
		if (!strcmp(e->d_name, INDEX_NAME))
			dump = INDEX_NAME;
		else if (!dump && !strcmp(e->d_name, "summary.json"))
			dump = "summary.json";
	}
	closedir(dir);
	if (!n)
		return 0;
	if (dump)
		fprintf(stderr, "evs-dump: output directory '%s' already holds a dump (%s): refused, "
			"a dump goes only into a new or empty directory, so that two dumps are never "
			"mixed; remove it or choose another output directory\n",
			shown, dump);
	else
		fprintf(stderr, "evs-dump: output directory '%s' is not empty (it holds '%s'%s): refused, "
			"a dump goes only into a new or empty directory, never mixed with what is there "
			"(what an interrupted dump left, or anything else); remove it or choose another "
			"output directory\n", shown, first, n > 1 ? " and more" : "");
	return -EEXIST;
}

int dump_writer_open(struct dump_writer *w, const char *dir, enum dump_mode mode)
{
	return dump_writer_openat(w, AT_FDCWD, dir, dir, mode);
}

int dump_writer_openat(struct dump_writer *w, int atfd, const char *dir, const char *shown,
		       enum dump_mode mode)
{
	int err, fd;

	w->mode = mode;
	w->out.fd = w->out.parentfd = -1;
	w->index_fd = -1;
	snprintf(w->dir, sizeof(w->dir), "%s", shown);
	/* first: its failure then leaves nothing made behind */
	w->line = fmemopen(w->line_buf, sizeof(w->line_buf), "w");
	if (!w->line) {
		err = errno;
		fprintf(stderr, "evs-dump: '%s': %s\n", shown, strerror(err));
		return -err;
	}
	err = dump_dir_open(&w->out, atfd, dir, shown);
	if (!err) {
		/* never mix two dumps, nor a dump and anything else */
		err = dump_dir_check_empty(&w->out, shown);
		if (err)
			dump_dir_close(&w->out, true);
	}
	if (err) {
		fclose(w->line);
		w->line = NULL;
		return err;
	}
	/* creating the index is the writability check: fail before connecting;
	 * an index made since the check above is another dump's */
	fd = create_new(w->out.fd, INDEX_NAME);
	if (fd < 0) {
		err = errno;
		if (err != EEXIST)
			fprintf(stderr, "evs-dump: cannot write to output directory '%s': %s\n", shown,
				strerror(err));
		else if (!said_link(w->out.fd, INDEX_NAME, "", w->dir, INDEX_NAME))
			fprintf(stderr, "evs-dump: '%s' already holds a dump (" INDEX_NAME "): remove it "
				"or choose another output directory\n", shown);
		/* nothing of ours in it: a directory open made goes too */
		dump_dir_close(&w->out, true);
		fclose(w->line);
		w->line = NULL;
		return -err;
	}
	w->index_fd = fd;
	index_reserve(w);
	return 0;
}

/* Give back the space reserved past the end of the index: tmpfs and XFS
 * free it for a hole punched past the end, ext4 ignores such a hole but
 * frees blocks past the end on a truncate to the same size. */
static void index_unreserve(struct dump_writer *w)
{
	if (w->index_reserved > w->index_size) {
		/* EOPNOTSUPP: then the truncate does it, or nothing was held */
		fallocate(w->index_fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)w->index_size,
			  (off_t)(w->index_reserved - w->index_size));
		if (ftruncate(w->index_fd, (off_t)w->index_size))
			fprintf(stderr, "evs-dump: cannot give back the space reserved for %s/" INDEX_NAME
				": %s\n", w->dir, strerror(errno));
	}
	w->index_reserved = 0;
}

/* NULL and errno: ENOMEM, or ERANGE for a core beyond the library's limit
 * (a raw file's header is not trusted to be sane). */
static struct dump_core *core_slot(struct dump_writer *w, unsigned int core)
{
	if (core >= DUMP_MAX_CORES) {
		errno = ERANGE;
		return NULL;
	}
	if (core >= w->ncores) {
		unsigned int n = core + 1 > w->ncores * 2 ? core + 1 : w->ncores * 2;
		struct dump_core *c = realloc(w->cores, n * sizeof(*c));

		if (!c) {
			errno = ENOMEM;
			return NULL;
		}
		memset(c + w->ncores, 0, (n - w->ncores) * sizeof(*c));
		for (unsigned int i = w->ncores; i < n; i++)
			c[i].dirfd = c[i].rawfd = -1;
		w->cores = c;
		w->ncores = n;
	}
	return &w->cores[core];
}

static int write_iov(int fd, struct iovec *iov, int n)
{
	while (n > 0) {
		ssize_t k = writev(fd, iov, n > IOV_MAX ? IOV_MAX : n);

		if (k < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (k == 0)
			return -EIO;
		/* a short write: step over what went out */
		while (n > 0 && (size_t)k >= iov->iov_len) {
			k -= (ssize_t)iov->iov_len;
			iov++;
			n--;
		}
		if (n > 0) {
			iov->iov_base = (char *)iov->iov_base + k;
			iov->iov_len -= (size_t)k;
		}
	}
	return 0;
}

int dump_writer_add_core(struct dump_writer *w, unsigned int core)
{
	struct dump_core *c = core_slot(w, core);
	char name[32], shown[sizeof(w->dir) + sizeof(name)];
	int err;

	if (!c)
		return -errno;
	if (c->used)
		return 0;
	if (w->mode == DUMP_NPY) {
		snprintf(name, sizeof(name), "c%u", core);
		snprintf(shown, sizeof(shown), "%s/%s", w->dir, name);
		/* made, or one already there checked like the output directory */
		err = dir_open_checked(w->out.fd, name, "core directory", shown, &c->made_dir);
		if (err < 0)
			return err;
		c->dirfd = err;
		c->file_dir_len = (unsigned int)snprintf(c->file, sizeof(c->file), "c%u/", core);
	} else if (w->mode == DUMP_RAW) {
		struct dump_raw_hdr h = { .version = 1, .core = core };
		struct iovec iov = { &h, sizeof(h) };

		memcpy(h.magic, DUMP_RAW_MAGIC, sizeof(h.magic));
		snprintf(name, sizeof(name), "core%u.evsraw", core);
		/* a new file, never one already there (nor where a link leads) */
		c->rawfd = create_new(w->out.fd, name);
		if (c->rawfd < 0) {
			err = errno;
			if (err != EEXIST)
				goto fail;
			if (!said_link(w->out.fd, name, "", w->dir, name))
				fprintf(stderr, "evs-dump: %s/%s already exists: refused, a dump never "
					"overwrites a file; remove it or choose another output directory\n",
					w->dir, name);
			return -EEXIST;
		}
		err = -write_iov(c->rawfd, &iov, 1);
		if (err) {
			/* not left behind: a retry would find it there */
			close(c->rawfd);
			c->rawfd = -1;
			unlinkat(w->out.fd, name, 0);
			goto fail;
		}
		c->raw_off = sizeof(h);
		snprintf(c->file, sizeof(c->file), "%s", name);
	}
	c->used = true;
	return 0;
fail:
	fprintf(stderr, "evs-dump: cannot create %s/%s: %s\n", w->dir, name, strerror(err));
	return -err;
}

static void count_failure(struct dump_writer *w, struct dump_core *c, const char *what, int err)
{
	c->failed++;
	w->failed++;
	if (!w->first_errno)
		w->first_errno = -err;
	if (!w->reported) {
		w->reported = true;
		if (w->clear_status)
			w->clear_status(w->ctx);
		fprintf(stderr, "evs-dump: cannot write %s/%s: %s (further failures are counted)\n",
			w->dir, what, strerror(-err));
	}
}

/* len bytes from src into fd, at fd's position: in the kernel where it can
 * (no copy through this process), else through a bounded buffer. 0, -errno,
 * or -ENODATA when src ends first. */
static int copy_from(const struct dump_src *src, int fd, uint64_t len)
{
	loff_t off = (loff_t)src->off;
	char *buf = NULL;
	int err = 0;

	while (len) {
		size_t part = len < (1u << 30) ? (size_t)len : (1u << 30);
		ssize_t k = copy_file_range(src->fd, &off, fd, NULL, part, 0);

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0 && (errno == EXDEV || errno == EINVAL || errno == ENOSYS || errno == EOPNOTSUPP))
			break; /* not between these two: by hand */
		if (k < 0)
			return -errno;
		if (k == 0)
			return -ENODATA;
		len -= (uint64_t)k;
	}
	if (len && !(buf = malloc(COPY_BUF)))
		return -ENOMEM;
	while (len && !err) {
		ssize_t k = pread(src->fd, buf, len < COPY_BUF ? (size_t)len : COPY_BUF, off);
		struct iovec iov;

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			err = k < 0 ? -errno : -ENODATA;
			break;
		}
		iov = (struct iovec){ buf, (size_t)k };
		err = write_iov(fd, &iov, 1);
		off += k;
		len -= (uint64_t)k;
	}
	free(buf);
	return err;
}

/* Complete files only: the name appears (rename) after the last byte is
 * written and the file is closed, so a full disk leaves no file that looks
 * valid, only a removed temporary. The name goes to c->file, after "c<N>/". */
static int write_npy(struct dump_core *c, uint64_t seq, const struct evs_tensor_info *ev,
		     const char *descr, const struct dump_src *src)
{
	char hdr[NPY_HEADER_MAX], tmp[32], *name = c->file + c->file_dir_len;
	struct iovec iov[2];
	int hlen, fd, err, n;

	n = snprintf(name, sizeof(c->file) - c->file_dir_len, "%012" PRIu64 ".npy", seq);
	/* ".<name>.tmp" */
	tmp[0] = '.';
	memcpy(tmp + 1, name, (size_t)n);
	memcpy(tmp + 1 + n, ".tmp", 5);
	hlen = npy_header(hdr, sizeof(hdr), descr, ev->ndim, ev->shape);
	if (hlen < 0)
		return hlen;
	fd = create_tmp_at(c->dirfd, tmp);
	if (fd < 0)
		return -errno;
	iov[0] = (struct iovec){ hdr, (size_t)hlen };
	if (src) {
		err = write_iov(fd, iov, 1);
		if (!err)
			err = copy_from(src, fd, ev->bytes);
	} else {
		/* straight from the ring: the only copy is the kernel's */
		iov[1] = (struct iovec){ (void *)ev->data, ev->bytes };
		err = write_iov(fd, iov, ev->bytes ? 2 : 1);
	}
	if (close(fd) < 0 && !err)
		err = -errno;
	if (!err && renameat(c->dirfd, tmp, c->dirfd, name) < 0)
		err = -errno;
	if (err)
		unlinkat(c->dirfd, tmp, 0);
	return err;
}

static int write_raw(struct dump_core *c, const struct evs_event_header *h, const void *payload,
		     uint64_t *off)
{
	static const char zeros[8];
	uint64_t pad = (8 - h->data_size % 8) % 8;
	struct iovec iov[3] = { { (void *)h, sizeof(*h) }, { (void *)payload, h->data_size },
				{ (void *)zeros, pad } };
	int err;

	*off = c->raw_off;
	err = write_iov(c->rawfd, iov, 3);
	if (err) {
		/* cut a torn record so the file stays a sequence of whole ones */
		if (ftruncate(c->rawfd, (off_t)c->raw_off) == 0)
			lseek(c->rawfd, (off_t)c->raw_off, SEEK_SET);
		return err;
	}
	c->raw_off += sizeof(*h) + h->data_size + pad;
	return 0;
}

/* Builds the index line of an event in w->line_buf; its length, or -EOVERFLOW
 * (not seen: the buffer holds the longest line). */
static int index_line(struct dump_writer *w, unsigned int core, const struct evs_event_header *h,
		      uint64_t gap, const struct evs_tensor_info *ev, const char *descr, const char *file,
		      uint64_t raw_off, int werr, const char *note)
{
	FILE *f = w->line;
	long len;

	rewind(f);
	fprintf(f, "{\"seq\":%" PRIu64 ",\"core\":%u,\"ts_ns\":%" PRIu64 ",\"gap\":%" PRIu64,
		h->seq, core, h->timestamp_ns, gap);
	if (!ev) {
		fprintf(f, ",\"kind\":\"bad\",\"type\":%u,\"size\":%" PRIu64 ",\"file\":",
			h->type, h->data_size);
		if (file)
			json_put_str(f, file);
		else
			fputs("null", f);
		if (file)
			fprintf(f, ",\"offset\":%" PRIu64, raw_off);
		if (werr)
			fprintf(f, ",\"error\":\"%s\"", strerror(-werr));
		fputs("}\n", f);
		goto out;
	}
	fprintf(f, ",\"kind\":\"%s\",\"pipe\":%u", ev->is_print ? "print" : "tensor", ev->pipe);
	if (ev->is_print) {
		fprintf(f, ",\"dtype\":null,\"shape\":null,\"bytes\":0");
	} else {
		fprintf(f, ",\"dtype\":");
		json_put_str(f, ev->dtype);
		fprintf(f, ",\"npy_dtype\":");
		json_put_str(f, descr);
		fprintf(f, ",\"shape\":[");
		for (uint32_t i = 0; i < ev->ndim; i++)
			fprintf(f, i ? ",%" PRIu64 : "%" PRIu64, ev->shape[i]);
		fprintf(f, "],\"bytes\":%" PRIu64, ev->bytes);
	}
	fprintf(f, ",\"file\":");
	if (file)
		json_put_str(f, file);
	else
		fputs("null", f);
	if (w->mode == DUMP_RAW && file)
		fprintf(f, ",\"offset\":%" PRIu64, raw_off);
	if (werr)
		fprintf(f, ",\"error\":\"%s\"", strerror(-werr));
	if (note)
		fprintf(f, ",\"note\":\"%s\"", note);
	fprintf(f, ",\"prefix\":");
	json_put_str(f, ev->prefix);
	fputs("}\n", f);
out:
	fflush(f);
	len = ftell(f);
	if (len <= 0 || (size_t)len >= sizeof(w->line_buf) - 1)
		return -EOVERFLOW;
	return (int)len;
}

/* A line of the index could not be written: the dump stops there, since
 * what it writes next would be unaccounted for. Said once, kept in
 * index_errno for the summary and the exit status. */
static int index_failed(struct dump_writer *w, int err)
{
	w->unindexed++;
	if (!w->index_errno) {
		w->index_errno = err;
		if (w->clear_status)
			w->clear_status(w->ctx);
		fprintf(stderr, "evs-dump: cannot write %s/" INDEX_NAME ": %s; the dump stops at the "
			"first event it could not index\n", w->dir, strerror(err));
	}
	return -err;
}

/*
 * One whole line with one write(): a reader (or a dumper killed at any
 * point) sees whole lines, and at worst a torn last one. A line the disk
 * cut short is taken back, so that the index ends on a whole line.
 */
static int index_put(struct dump_writer *w, int len)
{
	ssize_t n;

	if (len < 0)
		return index_failed(w, -len);
	do
		n = write(w->index_fd, w->line_buf, (size_t)len);
	while (n < 0 && errno == EINTR);
	if (n == len) {
		w->index_size += (uint64_t)len;
		return 0;
	}
	if (n > 0 && ftruncate(w->index_fd, (off_t)w->index_size) == 0)
		lseek(w->index_fd, (off_t)w->index_size, SEEK_SET);
	/* a short write: the disk filled within the line */
	return index_failed(w, n < 0 ? errno : ENOSPC);
}

#define NOTE_UNFIT "empty tensor whose shape NumPy cannot represent: no .npy"

static int record(struct dump_writer *w, unsigned int core, const struct evs_event_header *h,
		  const void *payload, const struct dump_src *src)
{
	struct dump_core *c = core_slot(w, core);
	struct evs_tensor_info ev;
	char dbuf[NPY_DESCR_MAX];
	const char *fname = NULL, *descr = NULL, *note = NULL;
	uint64_t gap, raw_off = 0;
	bool bad;
	int err = 0;

	if (!c)
		return -errno;
	if (w->index_errno)
		return -w->index_errno;
	if (!c->used && (err = dump_writer_add_core(w, core)))
		return err;
	/* .npy files are named by seq, and the index names each seq once:
	 * a record at or below the last one taken would replace a file that
	 * a line describes, and take back the gaps counted since */
	if (c->events && h->seq <= dump_core_last_seq(c)) {
		c->skipped++;
		w->skipped++;
		return DUMP_SKIPPED;
	}
	/* seq counts every emit, dropped ones too: a jump is what was lost */
	gap = h->seq >= c->next_seq ? h->seq - c->next_seq : 0;
	if (h->seq >= c->base) {
		uint64_t from = c->next_seq > c->base ? c->next_seq : c->base;

		c->base_gaps += h->seq > from ? h->seq - from : 0;
	}
	c->next_seq = h->seq + 1;
	c->gaps += gap;
	c->events++;
	if (++w->events % RESERVE_EVERY == 0)
		index_reserve(w);

	bad = h->type != EVS_EVENT_TENSOR_READ || evs_tensor_parse(payload, h->data_size, &ev);
	if (bad) {
		/* its fields contradict each other: neither printed nor made a
		 * .npy; a raw dump keeps its record, as it keeps every one */
		c->bad++;
		w->bad++;
		if (w->mode == DUMP_RAW) {
			err = write_raw(c, h, payload, &raw_off);
			if (err)
				count_failure(w, c, c->file, err);
			else
				fname = c->file;
		}
		err = index_put(w, index_line(w, core, h, gap, NULL, NULL, fname, raw_off, err, NULL));
		goto indexed;
	}
	if (!ev.is_print) {
		/* cannot fail: a parsed tensor has an element size */
		(void)npy_descr(ev.dtype, ev.elem_size, dbuf);
		descr = dbuf;
	}
	if (w->print) {
		if (w->clear_status)
			w->clear_status(w->ctx);
		preview_print(ev.pipe == 2 ? stderr : stdout, &ev);
	}
	if (w->mode == DUMP_NPY && !ev.is_print && !npy_shape_fits(ev.elem_size, ev.ndim, ev.shape)) {
		/* a file NumPy cannot load would help no one: the line says it all */
		note = NOTE_UNFIT;
		c->unfit++;
		w->unfit++;
	} else if (w->mode == DUMP_NPY && !ev.is_print) {
		err = write_npy(c, h->seq, &ev, descr, src);
	} else if (w->mode == DUMP_RAW) {
		err = write_raw(c, h, payload, &raw_off);
	}
	if (err)
		count_failure(w, c, c->file, err);
	else if ((w->mode == DUMP_NPY && !ev.is_print && !note) || w->mode == DUMP_RAW)
		fname = c->file;

	err = index_put(w, index_line(w, core, h, gap, &ev, descr, fname, raw_off, err, note));
indexed:
	if (err) {
		/* no file without its line */
		if (fname && w->mode == DUMP_NPY) {
			unlinkat(c->dirfd, c->file + c->file_dir_len, 0);
		} else if (fname && w->mode == DUMP_RAW && ftruncate(c->rawfd, (off_t)raw_off) == 0) {
			lseek(c->rawfd, (off_t)raw_off, SEEK_SET);
			c->raw_off = raw_off;
		}
		return err;
	}
	if (fname && !bad && !ev.is_print) {
		c->tensors++;
		c->bytes += ev.bytes;
		w->bytes += ev.bytes;
	}
	return 0;
}

int dump_writer_record(struct dump_writer *w, unsigned int core, const struct evs_event_header *h,
		       const void *payload)
{
	return record(w, core, h, payload, NULL);
}

int dump_writer_record_from(struct dump_writer *w, unsigned int core, const struct evs_event_header *h,
			    const void *fixed, const struct dump_src *src)
{
	/* the tensor bytes are written, never read here: not printed, and
	 * no raw record to keep */
	if (w->mode != DUMP_NPY || w->print || !src)
		return -EINVAL;
	return record(w, core, h, fixed, src);
}

int dump_writer_flush(struct dump_writer *w)
{
	return -w->index_errno;
}

int dump_writer_close_index(struct dump_writer *w)
{
	int err = 0;

	if (w->index_fd < 0)
		return 0;
	index_unreserve(w);
	if (close(w->index_fd) < 0 && !w->index_errno) {
		err = -errno;
		w->index_errno = errno;
		fprintf(stderr, "evs-dump: cannot write %s/" INDEX_NAME ": %s\n", w->dir, strerror(errno));
	}
	w->index_fd = -1;
	if (w->line)
		fclose(w->line);
	w->line = NULL;
	return err ? err : -w->index_errno;
}

static int writer_close(struct dump_writer *w, bool remove_dir)
{
	int err = dump_writer_close_index(w);

	for (unsigned int i = 0; i < w->ncores; i++) {
		if (w->cores[i].dirfd >= 0)
			close(w->cores[i].dirfd);
		if (w->cores[i].rawfd >= 0 && close(w->cores[i].rawfd) < 0 && !err)
			err = -errno;
	}
	free(w->cores);
	w->cores = NULL;
	w->ncores = 0;
	dump_dir_close(&w->out, remove_dir);
	return err;
}

/* Nothing was dumped (setup failed): take back what open and add_core
 * made, so that the directory is not taken for a dump next time. */
void dump_writer_abort(struct dump_writer *w)
{
	char name[64];

	if (w->index_fd >= 0) {
		dump_writer_close_index(w);
		unlinkat(w->out.fd, INDEX_NAME, 0);
	}
	for (unsigned int i = 0; i < w->ncores; i++) {
		if (!w->cores[i].used)
			continue;
		if (w->mode == DUMP_NPY && w->cores[i].made_dir) {
			snprintf(name, sizeof(name), "c%u", i);
			unlinkat(w->out.fd, name, AT_REMOVEDIR); /* only if empty */
		} else if (w->mode == DUMP_RAW) {
			snprintf(name, sizeof(name), "core%u.evsraw", i);
			unlinkat(w->out.fd, name, 0);
		}
	}
	/* and the output directory, if open made it */
	writer_close(w, true);
}

int dump_writer_close(struct dump_writer *w)
{
	return writer_close(w, false);
}

/* SPDX-License-Identifier: MIT */
/* Raw per-core files back into .npy files: the same writer as live dumps,
 * fed from each file instead of a ring. The files are read, not mapped: a
 * mapping of a file that its owner truncates while it is converted ends
 * its reader with SIGBUS; read() just returns less. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "dump.h"
#include "dump_writer.h"

/* The last sequence number converted for each core: .npy files are named
 * by it, so a record that repeats one (or goes back, as two files of one
 * core can) would replace a file whose index line is already written. */
struct conv_seq {
	uint64_t last[DUMP_MAX_CORES];
	bool any[DUMP_MAX_CORES];
};

/* A window over one raw file: buf[start, end) holds the file's bytes from
 * offset pos on. It grows to the largest record, which the caller bounds
 * by the file's size. */
struct raw_window {
	int fd;
	uint8_t *buf;
	size_t cap, start, end;
	uint64_t pos;
};

#define RAW_WINDOW_MIN (1u << 20)

/* At least n bytes from pos at buf + start, reading ahead as room allows;
 * how many are there, fewer only where the file ends. -errno on a failed
 * read or allocation. */
static int64_t raw_window_fill(struct raw_window *r, size_t n)
{
	if (r->end - r->start >= n)
		return (int64_t)n;
	if (r->start) {
		memmove(r->buf, r->buf + r->start, r->end - r->start);
		r->end -= r->start;
		r->start = 0;
	}
	if (n > r->cap) {
		size_t cap = n > 2 * r->cap ? n : 2 * r->cap;
		uint8_t *b = realloc(r->buf, cap < RAW_WINDOW_MIN ? RAW_WINDOW_MIN : cap);

		if (!b)
			return -ENOMEM;
		r->buf = b;
		r->cap = cap < RAW_WINDOW_MIN ? RAW_WINDOW_MIN : cap;
	}
	while (r->end < n) {
		ssize_t k = read(r->fd, r->buf + r->end, r->cap - r->end);

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -errno;
		if (k == 0)
			break;
		r->end += (size_t)k;
	}
	return (int64_t)(r->end < n ? r->end : n);
}

static void raw_window_consume(struct raw_window *r, size_t n)
{
	r->start += n;
	r->pos += n;
}

/* A read that came back short of what the file's size promised: -errno */
static int raw_window_short(const struct raw_window *r, const char *path, int64_t got, uint64_t size,
			    uint64_t records)
{
	if (got < 0) {
		fprintf(stderr, "evs-dump: %s: reading at offset %" PRIu64 ": %s\n", path, r->pos,
			strerror((int)-got));
		return (int)got;
	}
	/* its owner cut it (or is rewriting it) while it was converted */
	fprintf(stderr, "evs-dump: %s: ends at offset %" PRIu64 ", short of the %" PRIu64 " bytes it had when "
		"conversion began: cut while being converted; the %" PRIu64 " records before that offset were "
		"read, the rest are lost\n", path, r->pos + (uint64_t)got, size, records);
	return -EIO;
}

static int convert_file(struct dump_writer *w, struct conv_seq *seqs, int rawfd, const char *rawdir,
			const char *name)
{
	char path[4096];
	struct dump_raw_hdr fh;
	struct stat st;
	struct raw_window r = { .fd = -1 };
	uint64_t off, records = 0, skipped = 0, skip_seq = 0, skip_off = 0, skip_last = 0;
	int64_t got;
	size_t want;
	int fd, err = 0;

	snprintf(path, sizeof(path), "%s/%s", rawdir, name);
	/* the file itself, not where a link named like it leads (another
	 * user's raw directory could hold one to a file only we may read);
	 * O_NONBLOCK: a FIFO of that name does not hang the open */
	fd = openat(rawfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0) {
		err = -errno;
		if (errno == ELOOP)
			fprintf(stderr, "evs-dump: %s: a symbolic link, not a raw dump: refused\n", path);
		else
			fprintf(stderr, "evs-dump: %s: %s\n", path, strerror(errno));
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		fprintf(stderr, "evs-dump: %s: not a regular file, not a raw dump: refused\n", path);
		err = -EBADMSG;
		goto out;
	}
	if ((uint64_t)st.st_size < sizeof(fh)) {
		fprintf(stderr, "evs-dump: %s: not a raw dump (too short)\n", path);
		err = -EBADMSG;
		goto out;
	}
	r.fd = fd;
	want = sizeof(fh);
	if ((got = raw_window_fill(&r, want)) < (int64_t)want) {
		err = raw_window_short(&r, path, got, (uint64_t)st.st_size, records);
		goto out;
	}
	memcpy(&fh, r.buf, sizeof(fh));
	raw_window_consume(&r, sizeof(fh));
	if (memcmp(fh.magic, DUMP_RAW_MAGIC, sizeof(fh.magic)) || fh.version != 1) {
		fprintf(stderr, "evs-dump: %s: not a raw dump (bad magic or version)\n", path);
		err = -EBADMSG;
		goto out;
	}
	if (fh.core >= DUMP_MAX_CORES) {
		fprintf(stderr, "evs-dump: %s: not a raw dump (core %" PRIu32 " in its header; cores are 0 to %u)\n",
			path, fh.core, DUMP_MAX_CORES - 1);
		err = -EBADMSG;
		goto out;
	}
	for (off = sizeof(fh); off < (uint64_t)st.st_size;) {
		struct evs_event_header h;
		uint64_t left = (uint64_t)st.st_size - off, len;

		if (left < sizeof(h))
			break;
		want = sizeof(h);
		if ((got = raw_window_fill(&r, want)) < (int64_t)want) {
			err = raw_window_short(&r, path, got, (uint64_t)st.st_size, records);
			break;
		}
		memcpy(&h, r.buf + r.start, sizeof(h));
		if (h.data_size > left - sizeof(h))
			break;
		len = sizeof(h) + ((h.data_size + 7) & ~7ull);
		/* the padding too, where the file has it: bounded by its size */
		want = (size_t)(len < left ? len : left);
		if ((got = raw_window_fill(&r, want)) < (int64_t)want) {
			err = raw_window_short(&r, path, got, (uint64_t)st.st_size, records);
			break;
		}
		if (seqs->any[fh.core] && h.seq <= seqs->last[fh.core]) {
			/* as the Kafka reader does with duplicates: skipped, counted */
			if (!skipped++) {
				skip_seq = h.seq;
				skip_off = off;
				skip_last = seqs->last[fh.core];
			}
		} else {
			seqs->any[fh.core] = true;
			seqs->last[fh.core] = h.seq;
			err = dump_writer_record(w, fh.core, &h, r.buf + r.start + sizeof(h));
			if (err)
				break;
		}
		raw_window_consume(&r, want);
		off += want;
		records++;
	}
	if (skipped)
		fprintf(stderr, "evs-dump: %s: %" PRIu64 " records skipped: sequence number %" PRIu64 " at offset %"
			PRIu64 " is at or below %" PRIu64 ", already converted for core %" PRIu32 " (a core's "
			"records are converted once, in order)\n", path, skipped, skip_seq, skip_off, skip_last,
			fh.core);
	if (!err && off < (uint64_t)st.st_size)
		fprintf(stderr, "evs-dump: %s: %" PRIu64 " bytes at the end are not a whole record (ignored)\n",
			path, (uint64_t)st.st_size - off);
out:
	free(r.buf);
	if (fd >= 0)
		close(fd);
	return err;
}

int dump_convert(const char *rawdir, const char *outdir, bool summary)
{
	struct dump_writer w = { .print = false };
	struct conv_seq seqs = { 0 };  /* 36 KiB */
	struct dirent **names = NULL;
	int n = 0, err = 0, files = 0, rawfd, rc;

	rawfd = open(rawdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (rawfd >= 0)
		n = scandirat(rawfd, ".", &names, NULL, alphasort);
	if (rawfd < 0 || n < 0) {
		fprintf(stderr, "evs-dump: cannot read '%s': %s\n", rawdir, strerror(errno));
		if (rawfd >= 0)
			close(rawfd);
		return 2;
	}
	if (dump_writer_open(&w, outdir, DUMP_NPY)) {
		rc = 2;
		goto out;
	}
	for (int i = 0; i < n && !err; i++) {
		size_t len = strlen(names[i]->d_name);

		if (strncmp(names[i]->d_name, "core", 4) || len < 7 ||
		    strcmp(names[i]->d_name + len - 7, ".evsraw"))
			continue;
		err = convert_file(&w, &seqs, rawfd, rawdir, names[i]->d_name);
		files++;
	}
	if (!files) {
		fprintf(stderr, "evs-dump: no core<N>.evsraw files in '%s'\n", rawdir);
		err = -ENOENT;
	}
	if (summary)
		fprintf(stderr, "evs-dump: converted %d raw files: %" PRIu64 " events, %" PRIu64
			" tensor bytes into %s\n", files, w.events, w.bytes, outdir);
	if (w.bad)
		fprintf(stderr, "evs-dump: %" PRIu64 " malformed events were indexed as \"bad\"\n", w.bad);
	if (summary && w.unfit)
		fprintf(stderr, "evs-dump: %" PRIu64 " empty tensors have shapes NumPy cannot represent: "
			"indexed with their shape, no .npy written\n", w.unfit);
	if (w.failed) {
		fprintf(stderr, "evs-dump: %" PRIu64 " events could not be written (%s)\n", w.failed,
			strerror(w.first_errno));
		err = err ? err : -EIO;
	}
	if (dump_writer_close(&w) && !err)
		err = -EIO;
	rc = err ? 1 : 0;
out:
	for (int i = 0; i < n; i++)
		free(names[i]);
	free(names);
	close(rawfd);
	return rc;
}

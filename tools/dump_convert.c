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

#include "cli.h"
#include "dump.h"
#include "dump_writer.h"
#include "jsonl.h"

/* The status line of a conversion (--progress, or stderr a terminal):
 * the file, how far into it, what was converted, every half second. */
struct conv_status {
	bool on, shown;
	int file, files;
	uint64_t t0, last;
};

#define STATUS_NS 500000000ull

static void status_clear(void *ctx)
{
	struct conv_status *cs = ctx;

	if (cs->shown) {
		fputs("\r\033[K", stderr);
		cs->shown = false;
	}
}

static void status_line(struct conv_status *cs, const struct dump_writer *w, const char *name, uint64_t done,
			uint64_t size)
{
	uint64_t now;

	if (!cs->on || (now = cli_now_ns()) - cs->last < STATUS_NS)
		return;
	cs->last = now;
	fprintf(stderr, "\r\033[K%6.1fs  %s (file %d of %d)  %3.0f%% of %.1f MB  %" PRIu64 " events, %.1f MB "
		"of tensors written", (double)(now - cs->t0) / 1e9, name, cs->file, cs->files,
		size ? 100.0 * (double)done / (double)size : 100.0, (double)size / 1e6, w->events,
		(double)w->bytes / 1e6);
	cs->shown = true;
}

/*
 * A window over one raw file: buf[start, end) holds the file's bytes from
 * offset pos on. A record up to RAW_WINDOW bytes is read into it whole;
 * of a longer one only its header and the tensor's fixed description are,
 * and its tensor bytes go from file to file (dump_writer_record_from()):
 * what this holds never follows what a header claims.
 */
#define RAW_WINDOW (1u << 20)

struct raw_window {
	int fd;
	uint8_t *buf;
	size_t start, end;
	uint64_t pos;
};

/* At least n (<= RAW_WINDOW) bytes from pos at buf + start, reading ahead
 * as room allows; how many are there, fewer only where the file ends.
 * -errno on a failed read. */
static int64_t raw_window_fill(struct raw_window *r, size_t n)
{
	if (r->end - r->start >= n)
		return (int64_t)n;
	if (r->start) {
		memmove(r->buf, r->buf + r->start, r->end - r->start);
		r->end -= r->start;
		r->start = 0;
	}
	while (r->end < n) {
		ssize_t k = read(r->fd, r->buf + r->end, RAW_WINDOW - r->end);

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

/* Steps over n bytes from pos, read or not. */
static int raw_window_skip(struct raw_window *r, uint64_t n)
{
	if (n <= r->end - r->start) {
		r->start += (size_t)n;
	} else {
		if (lseek(r->fd, (off_t)(r->pos + n), SEEK_SET) < 0)
			return -errno;
		r->start = r->end = 0;
	}
	r->pos += n;
	return 0;
}

/* The file is shorter than when its conversion began, at the record at
 * r->pos: said, -EIO; or a read failed: said, that -errno. */
static int raw_cut(const struct raw_window *r, const char *path, int64_t err, uint64_t size,
		   uint64_t records)
{
	struct stat now;

	if (err < 0) {
		fprintf(stderr, "evs-dump: %s: reading at offset %" PRIu64 ": %s\n", path, r->pos,
			strerror((int)-err));
		return (int)err;
	}
	/* its owner cut it (or is rewriting it) while it was converted */
	if (fstat(r->fd, &now) == 0 && (uint64_t)now.st_size < size)
		fprintf(stderr, "evs-dump: %s: %" PRIu64 " bytes now, %" PRIu64 " when conversion began: cut "
			"while being converted; the %" PRIu64 " records before offset %" PRIu64 " were taken, "
			"the rest are lost\n", path, (uint64_t)now.st_size, size, records, r->pos);
	else
		fprintf(stderr, "evs-dump: %s: the record at offset %" PRIu64 " could not be read whole "
			"(the file changed while being converted); the %" PRIu64 " records before it were "
			"taken, the rest are lost\n", path, r->pos, records);
	return -EIO;
}

/* A file converted in part (cut, unreadable past a point), or not at all
 * (refused, or unreadable before its first record): said; the others
 * still are. */
#define FILE_NOT_WHOLE 1
#define FILE_NOT_CONVERTED 2

/* One raw file into w: 0, FILE_NOT_WHOLE, FILE_NOT_CONVERTED, or -errno
 * when the dump writer failed in a way that stops the conversion (said). */
static int convert_file(struct dump_writer *w, struct conv_status *cs, int rawfd, const char *rawdir,
			const char *name)
{
	char path[4096];
	struct dump_raw_hdr fh;
	struct stat st;
	struct raw_window r = { .fd = -1 };
	uint64_t off, size, records = 0, skipped = 0, skip_seq = 0, skip_off = 0, skip_last = 0, failed = 0;
	int64_t got;
	int fd, err = 0;
	bool cut = false, unread = false;

	/* what is said about a file starts on a line of its own */
	status_clear(cs);
	snprintf(path, sizeof(path), "%s/%s", rawdir, name);
	/* the file itself, not where a link named like it leads (another
	 * user's raw directory could hold one to a file only we may read);
	 * O_NONBLOCK: a FIFO of that name does not hang the open */
	fd = openat(rawfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0) {
		if (errno == ELOOP)
			fprintf(stderr, "evs-dump: %s: a symbolic link, not a raw dump: refused\n", path);
		else
			fprintf(stderr, "evs-dump: %s: %s\n", path, strerror(errno));
		goto not_converted;
	}
	if (!S_ISREG(st.st_mode)) {
		fprintf(stderr, "evs-dump: %s: not a regular file, not a raw dump: refused\n", path);
		goto not_converted;
	}
	size = (uint64_t)st.st_size;
	if (size < sizeof(fh)) {
		fprintf(stderr, "evs-dump: %s: not a raw dump (too short)\n", path);
		goto not_converted;
	}
	r.fd = fd;
	r.buf = malloc(RAW_WINDOW);
	if (!r.buf) {
		fprintf(stderr, "evs-dump: %s: no memory to read it through\n", path);
		goto not_converted;
	}
	if ((got = raw_window_fill(&r, sizeof(fh))) < (int64_t)sizeof(fh)) {
		raw_cut(&r, path, got, size, records);
		goto not_converted;
	}
	memcpy(&fh, r.buf, sizeof(fh));
	raw_window_skip(&r, sizeof(fh));
	if (memcmp(fh.magic, DUMP_RAW_MAGIC, sizeof(fh.magic)) || fh.version != 1) {
		fprintf(stderr, "evs-dump: %s: not a raw dump (bad magic or version)\n", path);
		goto not_converted;
	}
	if (fh.core >= DUMP_MAX_CORES) {
		fprintf(stderr, "evs-dump: %s: not a raw dump (core %" PRIu32 " in its header; cores are 0 to %u)\n",
			path, fh.core, DUMP_MAX_CORES - 1);
		goto not_converted;
	}
	status_line(cs, w, name, sizeof(fh), size);
	for (off = sizeof(fh); off < size;) {
		struct evs_event_header h;
		uint64_t left = size - off, len;
		size_t want;
		bool whole;

		if (left < sizeof(h))
			break;
		if ((got = raw_window_fill(&r, sizeof(h))) < (int64_t)sizeof(h)) {
			cut = true;
			break;
		}
		memcpy(&h, r.buf + r.start, sizeof(h));
		if (h.data_size > left - sizeof(h))
			break;
		len = sizeof(h) + ((h.data_size + 7) & ~7ull);
		/* the padding too, where the file has it: bounded by its size */
		if (len > left)
			len = left;
		whole = len <= RAW_WINDOW;
		want = whole ? (size_t)len
			     : sizeof(h) + EVS_TENSOR_FIXED_BYTES; /* data_size > RAW_WINDOW - 64 */
		if ((got = raw_window_fill(&r, want)) < (int64_t)want) {
			cut = true;
			break;
		}
		failed = w->failed;
		{
			const uint8_t *payload = r.buf + r.start + sizeof(h);
			struct dump_src src = { .fd = fd, .off = off + sizeof(h) + EVS_TENSOR_FIXED_BYTES };

			err = whole ? dump_writer_record(w, fh.core, &h, payload)
				    : dump_writer_record_from(w, fh.core, &h, payload, &src);
		}
		if (err == DUMP_SKIPPED) {
			/* at or below a seq the writer took for the core (a
			 * repeat, or a second file of that core): counted
			 * there, said below with where the first one was */
			if (!skipped++) {
				skip_seq = h.seq;
				skip_off = off;
				skip_last = dump_core_last_seq(&w->cores[fh.core]);
			}
			err = 0;
		} else if (err) {
			break;
		}
		if ((err = raw_window_skip(&r, len))) {
			status_clear(cs);
			fprintf(stderr, "evs-dump: %s: seeking to offset %" PRIu64 ": %s; the records after it "
				"are not converted\n", path, off + len, strerror(-err));
			err = 0;
			unread = true;
			break;
		}
		off += len;
		records++;
		/* a clock read beside a file made per record: nothing */
		status_line(cs, w, name, off, size);
		if (!whole && w->failed > failed) {
			/* its bytes were copied from the file: were they all there? */
			struct stat now;

			if (fstat(fd, &now) == 0 && (uint64_t)now.st_size < off) {
				r.pos -= len;
				got = 0;
				records--;
				cut = true;
				break;
			}
		}
	}
	status_clear(cs);
	if (skipped)
		fprintf(stderr, "evs-dump: %s: %" PRIu64 " records skipped: sequence number %" PRIu64 " at offset %"
			PRIu64 " is at or below %" PRIu64 ", already converted for core %" PRIu32 " (a core's "
			"records are converted once, in order)\n", path, skipped, skip_seq, skip_off, skip_last,
			fh.core);
	if (cut)
		raw_cut(&r, path, got, size, records);
	if (cut || unread)
		goto not_whole;
	if (!err && off < size)
		fprintf(stderr, "evs-dump: %s: %" PRIu64 " bytes at the end are not a whole record (ignored)\n",
			path, size - off);
	goto out;
not_whole:
	err = FILE_NOT_WHOLE;
	goto out;
not_converted:
	err = FILE_NOT_CONVERTED;
out:
	free(r.buf);
	if (fd >= 0)
		close(fd);
	return err;
}

static bool is_raw_name(const char *name)
{
	size_t len = strlen(name);

	return !strncmp(name, "core", 4) && len >= 7 && !strcmp(name + len - 7, ".evsraw");
}

/*
 * summary.json of a conversion, as a live dump's (evs-dump.c) says what
 * was written, so that a converted dump is not taken for one cut short.
 * Raw files do not name their producer or hold its counters (what it
 * offered and dropped): "producer" is null and those fields are absent,
 * as in a dump read from Kafka.
 */
struct conv_summary {
	const struct dump_writer *w;
	const char *rawdir;
	double secs;
	int files, not_converted, not_whole;
};

static void fill_summary(FILE *f, void *ctx)
{
	const struct conv_summary *cs = ctx;
	const struct dump_writer *w = cs->w;
	bool first = true;

	fprintf(f, "{\"producer\":null,\"converted_from\":");
	json_put_str(f, cs->rawdir);
	fprintf(f, ",\"raw_files\":%d,\"raw_files_not_converted\":%d,\"raw_files_in_part\":%d"
		",\"seconds\":%.3f,\"events\":%" PRIu64 ",\"bytes\":%" PRIu64 ",\"failed\":%" PRIu64
		",\"bad\":%" PRIu64 ",\"unrepresentable\":%" PRIu64 ",\"skipped\":%" PRIu64 ",\"index_error\":",
		cs->files, cs->not_converted, cs->not_whole, cs->secs, w->events, w->bytes, w->failed, w->bad,
		w->unfit, w->skipped);
	if (w->index_errno)
		json_put_str(f, strerror(w->index_errno));
	else
		fputs("null", f);
	fprintf(f, ",\"unindexed\":%" PRIu64 ",\"cores\":[", w->unindexed);
	for (unsigned int i = 0; i < w->ncores; i++) {
		const struct dump_core *c = &w->cores[i];

		if (!c->used)
			continue;
		fprintf(f, "%s{\"core\":%u,\"events\":%" PRIu64 ",\"tensors\":%" PRIu64 ",\"bytes\":%" PRIu64
			",\"gaps\":%" PRIu64 ",\"failed\":%" PRIu64 ",\"bad\":%" PRIu64
			",\"unrepresentable\":%" PRIu64 ",\"skipped\":%" PRIu64 "}", first ? "" : ",", i, c->events,
			c->tensors, c->bytes, c->gaps, c->failed, c->bad, c->unfit, c->skipped);
		first = false;
	}
	fprintf(f, "]}\n");
}

/* "1 of the 2 raw files was <what> (said above)" */
static void say_files(int some, int files, const char *what)
{
	if (files == 1)
		fprintf(stderr, "evs-dump: the raw file was %s (said above)\n", what);
	else
		fprintf(stderr, "evs-dump: %d of the %d raw files %s %s (said above)\n", some, files,
			some == 1 ? "was" : "were", what);
}

int dump_convert(const char *rawdir, const char *outdir, bool summary, bool progress)
{
	struct conv_status cs = { .on = progress, .t0 = cli_now_ns() };
	struct dump_writer w = { .print = false, .clear_status = status_clear, .ctx = &cs };
	struct dirent **names = NULL;
	int n = 0, err = 0, files = 0, not_whole = 0, not_converted = 0, rawfd, rc;

	rawfd = open(rawdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (rawfd >= 0)
		n = scandirat(rawfd, ".", &names, NULL, alphasort);
	if (rawfd < 0 || n < 0) {
		fprintf(stderr, "evs-dump: cannot read '%s': %s\n", rawdir, strerror(errno));
		if (rawfd >= 0)
			close(rawfd);
		return 2;
	}
	for (int i = 0; i < n; i++)
		cs.files += is_raw_name(names[i]->d_name);
	/* said before the output exists: an empty dump left behind would
	 * make a run on the directory once it holds raw files refuse it */
	if (!cs.files) {
		fprintf(stderr, "evs-dump: no core<N>.evsraw files in '%s': nothing to convert, nothing "
			"written\n", rawdir);
		rc = 2;
		goto out;
	}
	if (dump_writer_open(&w, outdir, DUMP_NPY)) {
		rc = 2;
		goto out;
	}
	for (int i = 0; i < n && !err; i++) {
		if (!is_raw_name(names[i]->d_name))
			continue;
		cs.file = ++files;
		cs.last = 0; /* each file shown as it begins */
		err = convert_file(&w, &cs, rawfd, rawdir, names[i]->d_name);
		/* said; the other files are converted all the same */
		if (err == FILE_NOT_WHOLE || err == FILE_NOT_CONVERTED) {
			not_whole += err == FILE_NOT_WHOLE;
			not_converted += err == FILE_NOT_CONVERTED;
			err = 0;
		}
	}
	status_clear(&cs);
	if (summary) {
		if (not_converted == files)
			fprintf(stderr, "evs-dump: converted none of the %d raw %s: nothing written\n", files,
				files == 1 ? "file" : "files");
		else if (not_converted)
			fprintf(stderr, "evs-dump: converted %d of the %d raw files: %" PRIu64 " events, %" PRIu64
				" tensor bytes into %s\n", files - not_converted, files, w.events, w.bytes, outdir);
		else
			fprintf(stderr, "evs-dump: converted %d raw %s: %" PRIu64 " events, %" PRIu64
				" tensor bytes into %s\n", files, files == 1 ? "file" : "files", w.events, w.bytes,
				outdir);
	}
	if (not_converted)
		say_files(not_converted, files, "not converted");
	if (not_whole)
		say_files(not_whole, files, "converted only in part");
	if (not_converted || not_whole)
		err = err ? err : -EBADMSG;
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
	if (not_converted == files) {
		/* nothing was taken from any file: no empty dump left behind
		 * for a run on the files put right to refuse */
		dump_writer_abort(&w);
	} else {
		struct conv_summary sum = { .w = &w, .rawdir = rawdir, .files = files,
					    .not_converted = not_converted, .not_whole = not_whole,
					    .secs = (double)(cli_now_ns() - cs.t0) / 1e9 };
		int e;

		/* the index first: its reserve, given back, makes room for the summary */
		if (dump_writer_close_index(&w) && !err)
			err = -EIO;
		if ((e = json_file_whole(w.out.fd, "summary.json", fill_summary, &sum))) {
			fprintf(stderr, "evs-dump: cannot write %s/summary.json: %s (none was left)\n", w.dir,
				strerror(-e));
			err = err ? err : e;
		}
		if (dump_writer_close(&w) && !err)
			err = -EIO;
	}
	rc = err ? 1 : 0;
out:
	for (int i = 0; i < n; i++)
		free(names[i]);
	free(names);
	close(rawfd);
	return rc;
}

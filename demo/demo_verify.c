/* SPDX-License-Identifier: MIT */
/*
 * `evs-demo --verify DIR`: every index line of a dump against what evs-demo
 * emitted for that core and sequence number: kind, prefix, pipe, dtype,
 * shape, size, gap, and each .npy file's header and bytes. Also: no
 * temporary or stray .npy files are left in the core directories.
 *
 * A dump cut short (no summary.json, or a torn last index line) is said so
 * in one line; its complete lines are checked as usual, and files of
 * events past the last line of their core, and temporaries, were in flight
 * when the dumper stopped: counted in that line, not as problems (the
 * rule of demo/verify_dump.py).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "demo_gen.h"
#include "demo_verify.h"
#include "jsonl.h"
#include "npy.h"

#define MAX_CORES 4096
#define REPORT_MAX 10

struct verify {
	const char *dir;
	uint64_t lines, tensors, prints, bytes, files, gaps, missing, bad;
	uint64_t next_seq[MAX_CORES];
	uint64_t last_ts[MAX_CORES];
};

static void fail(struct verify *v, uint64_t line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void fail(struct verify *v, uint64_t line, const char *fmt, ...)
{
	va_list ap;

	if (v->bad++ >= REPORT_MAX)
		return;
	fprintf(stderr, "verify: index line %" PRIu64 ": ", line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static char *escaped(const char *s, char *buf, size_t len)
{
	FILE *f = fmemopen(buf, len, "w");

	if (!f)
		return NULL;
	json_put_str(f, s);
	fclose(f);
	/* without the quotes, as json_get_str returns it */
	size_t n = strlen(buf);
	if (n >= 2) {
		memmove(buf, buf + 1, n - 2);
		buf[n - 2] = '\0';
	}
	return buf;
}

static int read_file(const char *path, uint8_t **data, size_t *len)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t got = 0;

	if (fd < 0 || fstat(fd, &st) < 0) {
		if (fd >= 0)
			close(fd);
		return -errno;
	}
	*data = malloc((size_t)st.st_size + 1);
	if (!*data) {
		close(fd);
		return -ENOMEM;
	}
	while (got < (size_t)st.st_size) {
		ssize_t n = read(fd, *data + got, (size_t)st.st_size - got);

		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	*len = got;
	return 0;
}

static void check_file(struct verify *v, uint64_t ln, const char *file, const struct demo_event *e)
{
	char path[4096], descr[NPY_DESCR_MAX];
	struct npy_info info;
	uint8_t *data = NULL, *want;
	size_t len = 0;
	int err;

	snprintf(path, sizeof(path), "%s/%s", v->dir, file);
	err = read_file(path, &data, &len);
	if (err) {
		fail(v, ln, "%s: %s", file, strerror(-err));
		return;
	}
	v->files++;
	npy_descr(e->dtype, e->esz, descr);
	if (npy_parse(data, len, &info)) {
		fail(v, ln, "%s: not a .npy version 1.0 file", file);
	} else if (strcmp(info.descr, descr) || info.fortran_order || info.ndim != e->ndim ||
		   memcmp(info.shape, e->shape, e->ndim * sizeof(uint64_t))) {
		fail(v, ln, "%s: header says %s ndim %u, expected %s ndim %u", file, info.descr,
		     info.ndim, descr, e->ndim);
	} else if (len != info.data_offset + e->bytes) {
		fail(v, ln, "%s: %zu data bytes, expected %" PRIu64, file, len - info.data_offset, e->bytes);
	} else {
		want = malloc(e->bytes + 1);
		if (!want) {
			fail(v, ln, "out of memory");
		} else {
			demo_fill(e, want);
			if (memcmp(want, data + info.data_offset, e->bytes))
				fail(v, ln, "%s: contents differ from what core/seq emitted", file);
			free(want);
		}
	}
	free(data);
}

static void check_line(struct verify *v, uint64_t ln, const char *line, int pattern, uint64_t seed,
		       bool allow_missing)
{
	uint64_t seq, core, gap, bytes, pipe, shape[8], ts;
	char kind[16], dtype[32], prefix[1200], want[1200], file[256];
	struct demo_event e;
	uint32_t ndim = 0;

	if (json_get_u64(line, "seq", &seq) || json_get_u64(line, "core", &core) ||
	    json_get_u64(line, "gap", &gap) || json_get_str(line, "kind", kind, sizeof(kind)) ||
	    core >= MAX_CORES) {
		fail(v, ln, "malformed line: %.80s", line);
		return;
	}
	if (seq < v->next_seq[core] || gap != seq - v->next_seq[core])
		fail(v, ln, "core %" PRIu64 " seq %" PRIu64 ": gap %" PRIu64 " does not follow seq %" PRIu64,
		     core, seq, gap, v->next_seq[core] - 1);
	v->next_seq[core] = seq + 1;
	v->gaps += gap;
	if (!json_get_u64(line, "ts_ns", &ts)) {
		/* CLOCK_MONOTONIC at commit, one producer thread per core */
		if (ts < v->last_ts[core])
			fail(v, ln, "core %" PRIu64 " seq %" PRIu64 ": timestamp goes backwards", core, seq);
		v->last_ts[core] = ts;
	}

	demo_event_make(pattern, seed, (unsigned int)core, seq, &e);
	if (json_get_str(line, "prefix", prefix, sizeof(prefix)) ||
	    strcmp(prefix, escaped(e.prefix, want, sizeof(want)))) {
		fail(v, ln, "core %" PRIu64 " seq %" PRIu64 ": prefix differs (expected \"%s\")", core, seq, want);
		return;
	}
	if (json_get_u64(line, "pipe", &pipe) || pipe != e.pipe)
		fail(v, ln, "core %" PRIu64 " seq %" PRIu64 ": pipe differs", core, seq);
	if (e.is_print) {
		if (strcmp(kind, "print"))
			fail(v, ln, "core %" PRIu64 " seq %" PRIu64 ": expected a print, got %s", core, seq, kind);
		v->prints++;
		return;
	}
	if (strcmp(kind, "tensor") || json_get_str(line, "dtype", dtype, sizeof(dtype)) ||
	    strcmp(dtype, e.dtype) || json_get_u64_array(line, "shape", shape, 8, &ndim) ||
	    ndim != e.ndim || memcmp(shape, e.shape, ndim * sizeof(uint64_t)) ||
	    json_get_u64(line, "bytes", &bytes) || bytes != e.bytes) {
		fail(v, ln, "core %" PRIu64 " seq %" PRIu64 ": expected %s tensor of %u dims, %" PRIu64
		     " bytes", core, seq, e.dtype, e.ndim, e.bytes);
		return;
	}
	v->tensors++;
	v->bytes += e.bytes;
	if (json_is_null(line, "file") == 1) {
		v->missing++;
		if (!allow_missing)
			fail(v, ln, "core %" PRIu64 " seq %" PRIu64 ": no file written", core, seq);
		return;
	}
	if (json_get_str(line, "file", file, sizeof(file)) || strstr(file, ".."))
		fail(v, ln, "bad file name");
	else
		check_file(v, ln, file, &e);
}

/* The .npy files in c<N>/ within the index's range of their core (whose
 * seq is below the next one the index expects); in *late, those past it and
 * temporaries. */
static uint64_t count_npy(struct verify *v, uint64_t *late)
{
	DIR *top = opendir(v->dir), *sub;
	struct dirent *de, *fe;
	uint64_t n = 0;
	char path[4096];

	*late = 0;
	if (!top)
		return 0;
	while ((de = readdir(top))) {
		unsigned long core;
		char *end;

		if (de->d_name[0] != 'c' || de->d_name[1] < '0' || de->d_name[1] > '9')
			continue;
		core = strtoul(de->d_name + 1, &end, 10);
		if (*end || core >= MAX_CORES)
			continue;
		snprintf(path, sizeof(path), "%s/%s", v->dir, de->d_name);
		sub = opendir(path);
		if (!sub)
			continue;
		while ((fe = readdir(sub))) {
			size_t len = strlen(fe->d_name);

			if (len > 4 && !strcmp(fe->d_name + len - 4, ".tmp"))
				(*late)++;
			else if (len > 4 && !strcmp(fe->d_name + len - 4, ".npy") &&
				 strtoull(fe->d_name, NULL, 10) < v->next_seq[core])
				n++;
			else if (len > 4 && !strcmp(fe->d_name + len - 4, ".npy"))
				(*late)++;
		}
		closedir(sub);
	}
	closedir(top);
	return n;
}

int demo_verify(const char *dir, int pattern, uint64_t seed, bool allow_missing)
{
	struct verify *v = calloc(1, sizeof(*v));
	char path[4096], *line = NULL;
	size_t cap = 0;
	uint64_t npy, late;
	ssize_t len;
	bool torn = false, cut;
	FILE *f;
	int rc;

	if (!v)
		return 1;
	v->dir = dir;
	snprintf(path, sizeof(path), "%s/index.jsonl", dir);
	f = fopen(path, "r");
	if (!f) {
		fprintf(stderr, "verify: %s: %s\n", path, strerror(errno));
		free(v);
		return 1;
	}
	while ((len = getline(&line, &cap, f)) > 0) {
		/* only the last line can lack its newline */
		if (line[len - 1] != '\n') {
			torn = true;
			break;
		}
		check_line(v, ++v->lines, line, pattern, seed, allow_missing);
	}
	free(line);
	fclose(f);
	snprintf(path, sizeof(path), "%s/summary.json", dir);
	cut = torn || access(path, F_OK);

	npy = count_npy(v, &late);
	if (cut)
		printf("verify: the dump was cut short (%s%s%s): %" PRIu64 " complete lines checked; %" PRIu64
		       " files of events past the last line of their core or temporaries\n",
		       torn ? "index.jsonl ends with a torn line" : "", torn && access(path, F_OK) ? "; " : "",
		       access(path, F_OK) ? "no summary.json" : "", v->lines, late);
	else if (late)
		fail(v, 0, "%" PRIu64 " temporaries or .npy files past the index's last line in %s", late, dir);
	if (npy != v->files)
		fail(v, 0, "%" PRIu64 " .npy files in %s but the index names %" PRIu64, npy, dir, v->files);
	if (!v->lines && !cut)
		fail(v, 0, "the index is empty");
	if (v->bad > REPORT_MAX)
		fprintf(stderr, "verify: ... %" PRIu64 " more problems\n", v->bad - REPORT_MAX);
	printf("verify: %" PRIu64 " index lines: %" PRIu64 " tensors (%.1f MB, %" PRIu64 " files checked"
	       " byte for byte) and %" PRIu64 " prints; %" PRIu64 " events lost in gaps; %s\n",
	       v->lines, v->tensors, (double)v->bytes / 1e6, v->files, v->prints, v->gaps,
	       v->bad ? "MISMATCHES" : "all match what evs-demo emitted");
	if (v->missing)
		printf("verify: %" PRIu64 " tensors were indexed without a file\n", v->missing);
	rc = v->bad ? 1 : 0;
	free(v);
	return rc;
}

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
 *
 * A whole dump's drops are then accounted against its summary.json, the
 * producer's counters: for each core, the drops the index shows as gaps
 * plus those after its last line (which no later line can show) make the
 * producer's count; the events after the last line are said, and a count
 * that cannot add up is a problem.
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
#include "evstream/evstream.h"
#include "jsonl.h"
#include "npy.h"

#define MAX_CORES 4096
#define REPORT_MAX 10

struct verify {
	const char *dir;
	uint64_t lines, tensors, prints, bytes, files, gaps, missing, bad;
	uint64_t next_seq[MAX_CORES];
	uint64_t last_ts[MAX_CORES];
	uint64_t core_lines[MAX_CORES], core_gaps[MAX_CORES];
	/* summary.json: what the producer had offered when the dump connected
	 * to the core (UINT64_MAX: not known); of the lines from there on, how
	 * many, and the seqs missing between them */
	uint64_t base[MAX_CORES], base_lines[MAX_CORES], base_gaps[MAX_CORES];
	uint64_t tail_dropped;  /* after the last line of their core */
	bool accounted;         /* summary.json has the producer's counters */
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
	uint64_t seq, core, gap, bytes, pipe, shape[8], ts, prev;
	char kind[16], dtype[32], prefix[1200], want[1200], file[256];
	struct demo_event e;
	uint32_t ndim = 0;

	if (json_get_u64(line, "seq", &seq) || json_get_u64(line, "core", &core) ||
	    json_get_u64(line, "gap", &gap) || json_get_str(line, "kind", kind, sizeof(kind)) ||
	    core >= MAX_CORES) {
		fail(v, ln, "malformed line: %.80s", line);
		return;
	}
	prev = v->next_seq[core];
	if (seq < v->next_seq[core] || gap != seq - v->next_seq[core])
		fail(v, ln, "core %" PRIu64 " seq %" PRIu64 ": gap %" PRIu64 " does not follow seq %" PRIu64,
		     core, seq, gap, v->next_seq[core] - 1);
	v->next_seq[core] = seq + 1;
	v->gaps += gap;
	v->core_lines[core]++;
	v->core_gaps[core] += gap;
	if (seq >= v->base[core]) {
		uint64_t from = prev > v->base[core] ? prev : v->base[core];

		v->base_lines[core]++;
		v->base_gaps[core] += seq > from ? seq - from : 0;
	}
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

/* A whole dump's summary.json, read whole; NULL (and nothing said) when
 * there is none. */
static char *summary_cores(const char *path, char **cores)
{
	uint8_t *data = NULL;
	size_t len = 0;

	if (read_file(path, &data, &len))
		return NULL;
	data[len] = '\0';
	*cores = strstr((char *)data, "\"cores\":[");
	return (char *)data;
}

/* The next object of the "cores" array at *p, '\0'-terminated in place
 * (they are flat: no brace in them, not even in a string); NULL at the end. */
static char *next_core(char **p)
{
	char *obj = *p ? strchr(*p, '{') : NULL, *end = obj ? strchr(obj, '}') : NULL;

	if (!end)
		return NULL;
	*end++ = '\0';
	*p = *end == ',' ? end : NULL;
	return obj;
}

/* Before the index is read: where each core's accounting starts. */
static void read_bases(struct verify *v, const char *path)
{
	char *cores, *data = summary_cores(path, &cores), *obj;
	uint64_t core, base;

	for (unsigned int i = 0; i < MAX_CORES; i++)
		v->base[i] = UINT64_MAX;
	if (!data)
		return;
	while ((obj = next_core(&cores)))
		if (!json_get_u64(obj, "core", &core) && core < MAX_CORES &&
		    !json_get_u64(obj, "produced_before", &base))
			v->base[core] = base;
	free(data);
}

/*
 * One core of summary.json (an object of its "cores" array) against the
 * index. From the moment the dump connected (produced_before,
 * dropped_before), every event the producer offered is a line, a seq
 * missing between lines (dropped), or after the last line (dropped, or
 * committed and not read because the dump stopped first). Below that,
 * a missing seq may be another consumer's: not accounted.
 */
static void account_core(struct verify *v, const char *obj)
{
	uint64_t core, events, gaps, produced, dropped, base, base_dropped;
	uint64_t from, tail, since, tail_dropped, skipped;

	if (json_get_u64(obj, "core", &core) || core >= MAX_CORES || json_get_u64(obj, "events", &events) ||
	    json_get_u64(obj, "gaps", &gaps)) {
		fail(v, 0, "summary.json: a core without its counts: %.80s", obj);
		return;
	}
	if (events != v->core_lines[core] || gaps != v->core_gaps[core]) {
		fail(v, 0, "core %" PRIu64 ": summary.json says %" PRIu64 " events and %" PRIu64 " in gaps, "
		     "the index has %" PRIu64 " and %" PRIu64, core, events, gaps, v->core_lines[core],
		     v->core_gaps[core]);
		return;
	}
	/* records the dump skipped, their seq at or below one it had taken:
	 * no seq stands for them, so the sum below would not miss them, but
	 * evs-demo never repeats a seq nor goes back */
	if (!json_get_u64(obj, "skipped", &skipped) && skipped) {
		fail(v, 0, "core %" PRIu64 ": summary.json says %" PRIu64 " records were skipped for a sequence "
		     "number at or below one already dumped, and evs-demo numbers each event once, in order",
		     core, skipped);
		return;
	}
	/* a dump read from Kafka, converted from raw files (which do not hold
	 * them) or written by an older evs-dump has no such counters */
	if (json_get_u64(obj, "produced_before", &base) || json_get_u64(obj, "dropped_before", &base_dropped) ||
	    json_get_u64(obj, "produced", &produced) || json_get_u64(obj, "dropped", &dropped)) {
		v->accounted = false;
		return;
	}
	from = v->next_seq[core] > base ? v->next_seq[core] : base;
	since = dropped - base_dropped;
	if (produced < from || dropped < base_dropped || since < v->base_gaps[core] ||
	    produced - base < v->base_lines[core] + since) {
		fail(v, 0, "core %" PRIu64 ": since the dump connected the producer offered %" PRIu64
		     " events and dropped %" PRIu64 ", but the index has %" PRIu64 " lines and %" PRIu64
		     " missing between them up to seq %" PRIu64, core, produced - base, since,
		     v->base_lines[core], v->base_gaps[core], from);
		return;
	}
	tail = produced - from;
	tail_dropped = since - v->base_gaps[core];
	v->tail_dropped += tail_dropped;
	if (!tail)
		return;
	printf("verify: core %" PRIu64 ": %" PRIu64 " events after its last index line (", core, tail);
	if (v->next_seq[core])
		printf("seq %" PRIu64 ")", v->next_seq[core] - 1);
	else
		printf("it has none)");
	printf(": %" PRIu64 " dropped", tail_dropped);
	if (tail_dropped)
		printf(" (the producer counted %" PRIu64 " drops since the dump connected, %" PRIu64
		       " of them shown as gaps)", since, v->base_gaps[core]);
	if (tail > tail_dropped)
		printf(", %" PRIu64 " committed and not read (the dump stopped before them)",
		       tail - tail_dropped);
	putchar('\n');
}

/* summary.json's "cores", each against the index (account_core). */
static void account(struct verify *v, const char *path)
{
	char *cores, *data = summary_cores(path, &cores), *obj;

	if (!data || !cores) {
		fail(v, 0, "%s: %s", path, data ? "no \"cores\"" : strerror(errno));
		free(data);
		return;
	}
	v->accounted = true;
	while (v->accounted && (obj = next_core(&cores)))
		account_core(v, obj);
	free(data);
	if (!v->accounted)
		printf("verify: %s has no producer counters from when the dump connected (a dump read "
		       "from Kafka, converted from raw files by evs-dump --convert, or written by an older "
		       "evs-dump): drops after a core's last index line are not accounted\n", path);
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
	snprintf(path, sizeof(path), "%s/summary.json", dir);
	read_bases(v, path);
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
	if (!cut)
		account(v, path);
	if (!v->lines && !cut)
		fail(v, 0, "the index is empty");
	if (v->bad > REPORT_MAX)
		fprintf(stderr, "verify: ... %" PRIu64 " more problems\n", v->bad - REPORT_MAX);
	printf("verify: %" PRIu64 " index lines: %" PRIu64 " tensors (%.1f MB, %" PRIu64 " files checked"
	       " byte for byte) and %" PRIu64 " prints; %" PRIu64 " events lost in gaps", v->lines,
	       v->tensors, (double)v->bytes / 1e6, v->files, v->prints, v->gaps);
	if (v->accounted)
		printf(" and %" PRIu64 " dropped after the last line of their core, as the producer "
		       "counted", v->tail_dropped);
	printf("; %s\n", v->bad ? "MISMATCHES" : "all match what evs-demo emitted");
	if (v->missing)
		printf("verify: %" PRIu64 " tensors were indexed without a file\n", v->missing);
	rc = v->bad ? 1 : 0;
	free(v);
	return rc;
}

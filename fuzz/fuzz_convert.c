/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: evs-dump --convert (tools/dump_convert.c) fed raw
 * files it did not write, as a raw directory from another machine or
 * another user could hold.
 *
 * The input is a selector byte, then one raw file, or two (selector bit 0:
 * a u16 length of the first, its bytes, the rest is the second), named
 * core<N>.evsraw with N from the selector. The header, record sizes,
 * tensor payloads (dtype, ndim, shape, sizes) and cuts are all the
 * input's. dump_convert() runs on them as evs-dump --convert calls it,
 * into a fresh output directory, removed after each input.
 *
 * Then: the exit status is 0 or 1 (2 is for directories we made sound);
 * nothing was written beside the output directory and the raw files are
 * as written; the output directory holds index.jsonl, summary.json (one
 * JSON object counting the index's lines) and c<N>/ with <seq>.npy files
 * only (no temporary left), or is gone when no file was converted; every .npy is NumPy 1.0 whose
 * data size is its shape times its element size; every index line is one
 * whole JSON object (strict: UTF-8, escapes), each .npy is named by
 * exactly one line whose dtype and shape are those of the file; and the
 * converter's heap never held more than a bound the input's size sets,
 * whatever size a header claims. In /dev/shm, a directory per process;
 * what a crashed run left is removed by the next one.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sanitizer/allocator_interface.h>
#include <sys/stat.h>

#include "dump.h"
#include "jsonl.h"
#include "npy.h"
#include "scratch.h"

static char rawdir[80], outdir[80];
static FILE *devnull;

/* ------------------------------------------------------------ heap bound */

/* Live heap bytes while the converter runs (ASan's hooks): a header's
 * claimed size must never become an allocation. */
static volatile bool counting;
static size_t live, peak;

static void on_malloc(const volatile void *p, size_t n)
{
	(void)p;
	if (!counting)
		return;
	live += n;
	if (live > peak)
		peak = live;
}

static void on_free(const volatile void *p)
{
	size_t n;

	if (!counting || !p || !__sanitizer_get_ownership((const void *)p))
		return;
	n = __sanitizer_get_allocated_size((const void *)p);
	live = n < live ? live - n : 0;
}

/* ------------------------------------------------------------ setup */

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	scratch_init("evs-fuzz-convert.");
	snprintf(rawdir, sizeof(rawdir), "%s/raw", scratch);
	snprintf(outdir, sizeof(outdir), "%s/out", scratch);
	devnull = fopen("/dev/null", "w");
	if (mkdir(rawdir, 0700) || !devnull)
		abort();
	__sanitizer_install_malloc_and_free_hooks(on_malloc, on_free);
	return 0;
}

static void die(const char *what, const char *name)
{
	fprintf(stderr, "fuzz_convert: %s: %s\n", name, what);
	abort();
}

/* The whole of a file of dirfd (at most max bytes), NULL-terminated in a
 * malloc'd buffer; NULL if it is longer. */
static char *slurp(int dirfd, const char *name, size_t max, size_t *len)
{
	int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	char *buf;

	if (fd < 0 || fstat(fd, &st) || !S_ISREG(st.st_mode))
		die("cannot be read as a regular file", name);
	if ((uint64_t)st.st_size > max) {
		close(fd);
		return NULL;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (!buf || read(fd, buf, (size_t)st.st_size) != st.st_size)
		die("short read", name);
	buf[st.st_size] = '\0';
	*len = (size_t)st.st_size;
	close(fd);
	return buf;
}

/* ------------------------------------------------------------ strict JSON */

static const char *js_value(const char *s, const char *end, int depth);

static const char *js_ws(const char *s, const char *end)
{
	while (s < end && (*s == ' ' || *s == '\t'))
		s++;
	return s;
}

/* Length of the valid UTF-8 sequence at s (RFC 3629), or 0. */
static int js_utf8(const unsigned char *s, const unsigned char *end)
{
	unsigned int c = s[0], n, cp;

	if (c >= 0xc2 && c <= 0xdf)
		n = 2, cp = c & 0x1f;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3, cp = c & 0x0f;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4, cp = c & 0x07;
	else
		return 0;
	if ((size_t)(end - s) < n)
		return 0;
	for (unsigned int i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10ffff ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return (int)n;
}

static const char *js_string(const char *s, const char *end)
{
	if (s >= end || *s != '"')
		return NULL;
	for (s++; s < end && *s != '"';) {
		unsigned char c = (unsigned char)*s;

		if (c < 0x20)
			return NULL;
		if (c == '\\') {
			if (++s >= end)
				return NULL;
			if (*s == 'u') {
				for (int i = 1; i <= 4; i++)
					if (s + i >= end || !strchr("0123456789abcdefABCDEF", s[i]) || !s[i])
						return NULL;
				s += 5;
			} else if (*s && strchr("\"\\/bfnrt", *s)) {
				s++;
			} else {
				return NULL;
			}
		} else if (c >= 0x80) {
			int n = js_utf8((const unsigned char *)s, (const unsigned char *)end);

			if (!n)
				return NULL;
			s += n;
		} else {
			s++;
		}
	}
	return s < end ? s + 1 : NULL;
}

static const char *js_number(const char *s, const char *end)
{
	const char *d;

	if (s < end && *s == '-')
		s++;
	if (s < end && *s == '0')
		s++;
	else if (s < end && *s >= '1' && *s <= '9')
		while (s < end && *s >= '0' && *s <= '9')
			s++;
	else
		return NULL;
	if (s < end && *s == '.') {
		for (d = ++s; s < end && *s >= '0' && *s <= '9'; s++)
			;
		if (s == d)
			return NULL;
	}
	if (s < end && (*s == 'e' || *s == 'E')) {
		if (++s < end && (*s == '+' || *s == '-'))
			s++;
		for (d = s; s < end && *s >= '0' && *s <= '9'; s++)
			;
		if (s == d)
			return NULL;
	}
	return s;
}

static const char *js_list(const char *s, const char *end, int depth, char close, bool keys)
{
	s = js_ws(s + 1, end);
	if (s < end && *s == close)
		return s + 1;
	for (;;) {
		if (keys) {
			s = js_string(js_ws(s, end), end);
			if (!s || (s = js_ws(s, end)) >= end || *s != ':')
				return NULL;
			s++;
		}
		s = js_value(s, end, depth + 1);
		if (!s || (s = js_ws(s, end)) >= end)
			return NULL;
		if (*s == close)
			return s + 1;
		if (*s != ',')
			return NULL;
		s++;
	}
}

static const char *js_value(const char *s, const char *end, int depth)
{
	static const char *const lits[] = { "true", "false", "null" };

	s = js_ws(s, end);
	if (s >= end || depth > 8)
		return NULL;
	if (*s == '{')
		return js_list(s, end, depth, '}', true);
	if (*s == '[')
		return js_list(s, end, depth, ']', false);
	if (*s == '"')
		return js_string(s, end);
	for (int i = 0; i < 3; i++)
		if ((size_t)(end - s) >= strlen(lits[i]) && !memcmp(s, lits[i], strlen(lits[i])))
			return s + strlen(lits[i]);
	return js_number(s, end);
}

/* ------------------------------------------------------------ the output */

struct npy_seen {
	char name[48];         /* c<N>/<seq>.npy */
	char descr[NPY_DESCR_MAX];
	uint32_t ndim;
	uint64_t shape[NPY_MAX_NDIM];
	int lines;             /* index lines naming it */
};

#define MAX_NPY 4096
static struct npy_seen npys[MAX_NPY];
static unsigned int nnpy;

/* Bytes per element of a descr the writer uses: the table's, or |V<n>. */
static uint64_t descr_size(const char *descr)
{
	char *end;
	unsigned long v;

	for (unsigned int i = 0; i < npy_ndtypes; i++)
		if (!strcmp(descr, npy_dtypes[i].descr))
			return (uint64_t)(descr[2] - '0');
	if (strncmp(descr, "|V", 2) || descr[2] < '1' || descr[2] > '9')
		return 0;
	errno = 0;
	v = strtoul(descr + 2, &end, 10);
	return errno || *end || v > UINT32_MAX ? 0 : v;
}

/* A .npy the converter wrote: version 1.0, a dict we read back, and data
 * exactly its shape times its element size. */
static void check_npy(int cdirfd, const char *cdir, const char *name)
{
	struct npy_seen *n;
	struct npy_info info;
	uint64_t esz, bytes;
	size_t len;
	char *buf;

	if (nnpy == MAX_NPY)
		die("more .npy files than the target keeps", name);
	n = &npys[nnpy++];
	memset(n, 0, sizeof(*n));
	snprintf(n->name, sizeof(n->name), "%s/%s", cdir, name);
	/* a file the converter wrote holds at most what the input did */
	buf = slurp(cdirfd, name, 1 << 20, &len);
	if (!buf)
		die(".npy larger than any input", n->name);
	if (npy_parse(buf, len, &info) || info.fortran_order)
		die("not a NumPy 1.0 file", n->name);
	esz = descr_size(info.descr);
	if (!esz)
		die("unknown descr", n->name);
	bytes = esz;
	for (uint32_t i = 0; i < info.ndim; i++)
		if (info.shape[i] == 0)
			bytes = 0;
		else if (bytes && __builtin_mul_overflow(bytes, info.shape[i], &bytes))
			die("shape overflows", n->name);
	if (info.data_offset + bytes != len || info.data_offset % NPY_ALIGN)
		die("data size is not the header's", n->name);
	snprintf(n->descr, sizeof(n->descr), "%s", info.descr);
	n->ndim = info.ndim;
	memcpy(n->shape, info.shape, sizeof(n->shape));
	free(buf);
}

/* c<N>: decimal, no leading zero, within the library's cores. */
static bool core_dir_name(const char *s)
{
	char *end;
	unsigned long v;

	if (s[0] != 'c' || s[1] < '0' || s[1] > '9' || (s[1] == '0' && s[2]))
		return false;
	v = strtoul(s + 1, &end, 10);
	return !*end && v < 4096;
}

/* <seq>.npy with at least 12 digits */
static bool npy_name(const char *s)
{
	size_t n = strlen(s), d = strspn(s, "0123456789");

	return d >= 12 && d <= 20 && n == d + 4 && !strcmp(s + d, ".npy");
}

static void check_core_dir(int outfd, const char *cdir)
{
	int fd = openat(outfd, cdir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *e;

	if (!d)
		die("core directory cannot be opened", cdir);
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (!npy_name(e->d_name))
			die("not a <seq>.npy in a core directory", e->d_name);
		check_npy(dirfd(d), cdir, e->d_name);
	}
	closedir(d);
}

static void check_line(char *line, char *end)
{
	char file[256], descr[NPY_DESCR_MAX];
	uint64_t shape[NPY_MAX_NDIM + 1];
	uint32_t ndim;
	struct npy_seen *n = NULL;
	const char *e = js_value(line, end, 0);

	*end = '\0';
	if (!e || js_ws(e, end) != end || *js_ws(line, end) != '{')
		die("not one JSON object", line);
	/* lines of prints, bad records and unrepresentable shapes name none */
	if (json_get_str(line, "file", file, sizeof(file)))
		return;
	for (unsigned int i = 0; i < nnpy && !n; i++)
		if (!strcmp(npys[i].name, file))
			n = &npys[i];
	if (!n)
		die("index line names a .npy that is not there", line);
	if (n->lines++)
		die("a second index line names this .npy", line);
	if (json_get_str(line, "npy_dtype", descr, sizeof(descr)) || strcmp(descr, n->descr) ||
	    json_get_u64_array(line, "shape", shape, NPY_MAX_NDIM + 1, &ndim) || ndim != n->ndim ||
	    memcmp(shape, n->shape, ndim * sizeof(shape[0])))
		die("index line's dtype or shape is not its .npy's", line);
}

/* The index's lines, each checked; their count. */
static uint64_t check_index(int outfd)
{
	size_t len;
	char *buf = slurp(outfd, "index.jsonl", 64 << 20, &len), *p, *nl;
	uint64_t lines = 0;

	if (!buf)
		die("index larger than any input makes", "index.jsonl");
	if (len && buf[len - 1] != '\n')
		die("does not end on a whole line", "index.jsonl");
	for (p = buf; p < buf + len; p = nl + 1) {
		nl = memchr(p, '\n', (size_t)(buf + len - p));
		check_line(p, nl);
		lines++;
	}
	free(buf);
	for (unsigned int i = 0; i < nnpy; i++)
		if (!npys[i].lines)
			die("no index line names it", npys[i].name);
	return lines;
}

/* summary.json: one strict JSON object on a line, whose events are the
 * index's lines and those it could not write. */
static void check_summary(int outfd, uint64_t lines)
{
	size_t len;
	char *buf = slurp(outfd, "summary.json", 1 << 20, &len);
	const char *e;
	uint64_t events, unindexed;

	if (!buf)
		die("larger than any input makes", "summary.json");
	if (!len || buf[len - 1] != '\n')
		die("does not end on a whole line", "summary.json");
	e = js_value(buf, buf + len - 1, 0);
	if (!e || js_ws(e, buf + len - 1) != buf + len - 1 || *js_ws(buf, buf + len) != '{')
		die("not one JSON object", "summary.json");
	if (json_get_u64(buf, "events", &events) || json_get_u64(buf, "unindexed", &unindexed) ||
	    events != lines + unindexed)
		die("its events are not the index's lines", "summary.json");
	free(buf);
}

static void check_out(void)
{
	int fd = openat(scratch_fd, "out", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *d;
	struct dirent *e;
	bool index = false, summary = false;

	if (fd < 0 && errno == ENOENT)
		return;
	d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d)
		die("cannot be opened", outdir);
	nnpy = 0;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (!strcmp(e->d_name, "index.jsonl"))
			index = true;
		else if (!strcmp(e->d_name, "summary.json"))
			summary = true;
		else if (core_dir_name(e->d_name))
			check_core_dir(dirfd(d), e->d_name);
		else
			die("written into the output directory", e->d_name);
	}
	/* dump_convert() returned: the summary is there with the index */
	if (index != summary)
		die(index ? "an index without summary.json" : "summary.json without an index", outdir);
	if (index)
		check_summary(dirfd(d), check_index(dirfd(d)));
	else if (nnpy)
		die("files without an index", outdir);
	closedir(d);
}

/* Only raw/ and out/ beside each other, and the raw files as written. */
static void check_base(const char *const names[2], const uint8_t *const data[2],
		       const size_t lens[2], int nfiles)
{
	int fd = openat(scratch_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fdopendir(fd);
	struct dirent *e;
	int rawfd = openat(scratch_fd, "raw", O_RDONLY | O_DIRECTORY | O_CLOEXEC), n = 0;

	if (!d || rawfd < 0)
		abort();
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && strcmp(e->d_name, "out") &&
		    strcmp(e->d_name, "raw"))
			die("written outside the output directory", e->d_name);
	closedir(d);
	d = fdopendir(rawfd);
	while (d && (e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			n++;
	if (!d || n != nfiles)
		die("a file was added to or removed from the raw directory", rawdir);
	for (int i = 0; i < nfiles; i++) {
		size_t len;
		char *buf = slurp(dirfd(d), names[i], lens[i], &len);

		if (!buf || len != lens[i] || (len && memcmp(buf, data[i], len)))
			die("raw file changed", names[i]);
		free(buf);
		if (unlinkat(dirfd(d), names[i], 0))
			abort();
	}
	closedir(d);
}

static void put_file(const char *name, const uint8_t *p, size_t n)
{
	int fd = openat(scratch_fd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);

	if (fd < 0 || (n && write(fd, p, n) != (ssize_t)n) || close(fd))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *buf, size_t len)
{
	const uint8_t *data[2], *end = buf + len;
	char names[2][40], paths[2][48];
	const char *fnames[2] = { names[0], names[1] };
	size_t lens[2];
	unsigned int sel, n0;
	int nfiles, rc;
	FILE *err = stderr;

	if (len < 1)
		return 0;
	sel = buf[0];
	nfiles = 1 + (sel & 1);
	n0 = sel >> 1 & 7;
	snprintf(names[0], sizeof(names[0]), "core%u.evsraw", n0);
	snprintf(names[1], sizeof(names[1]), "core%u.evsraw", n0 + 1 + (sel >> 4 & 7));
	data[0] = buf + 1;
	if (nfiles == 2) {
		size_t first = len >= 3 ? (size_t)buf[1] | (size_t)buf[2] << 8 : 0;

		data[0] = len >= 3 ? buf + 3 : end;
		lens[0] = first < (size_t)(end - data[0]) ? first : (size_t)(end - data[0]);
		data[1] = data[0] + lens[0];
		lens[1] = (size_t)(end - data[1]);
	} else {
		lens[0] = len - 1;
	}
	for (int i = 0; i < nfiles; i++) {
		snprintf(paths[i], sizeof(paths[i]), "raw/%s", names[i]);
		put_file(paths[i], data[i], lens[i]);
	}

	/* its messages are for people: FUZZ_CONVERT_VERBOSE=1 fuzz_convert FILE */
	if (!getenv("FUZZ_CONVERT_VERBOSE"))
		stderr = devnull;
	live = peak = 0;
	counting = true;
	rc = dump_convert(rawdir, outdir, sel & 0x80, sel & 0x40);
	counting = false;
	stderr = err;
	if (rc != 0 && rc != 1) {
		fprintf(stderr, "fuzz_convert: exit status %d\n", rc);
		abort();
	}
	/* bookkeeping (the cores' table, about 600 KiB for core 4095, and
	 * its growth; directory listings), never what a header claims */
	if (peak > (4u << 20) + 2 * len) {
		fprintf(stderr, "fuzz_convert: the converter held %zu heap bytes for a %zu-byte input\n",
			peak, len);
		abort();
	}
	check_out();
	check_base(fnames, data, lens, nfiles);
	/* gone when no file was converted at all: dump_convert() took it back */
	if (scratch_rm(outdir) && errno != ENOENT)
		abort();
	return 0;
}

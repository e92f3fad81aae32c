/* SPDX-License-Identifier: MIT */
/* The pieces of evs-dump that need no process: the .npy 1.0 header (byte
 * for byte), dtype mapping, the payload reader and the device-print look. */
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "deny_syscall.h"
#include "helpers.h"
#include "dump_writer.h"
#include "jsonl.h"
#include "npy.h"
#include "preview.h"
#include "evstream/tensor.h"
#include "nrt/ndebug_stream.h"

/* What np.save() of np.zeros((2, 3), np.float32) writes (NumPy 1.24). */
static const char numpy_2x3_f4[] =
	"\x93NUMPY\x01\x00\x76\x00{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"
	"                                                          \n";

/* The preamble, the dict literal, pad spaces and the newline. */
static size_t expected(char *buf, const char *dict, size_t pad)
{
	size_t n = strlen(dict), hlen = n + pad + 1;

	memcpy(buf, "\x93NUMPY\x01\x00", 8);
	buf[8] = (char)(hlen & 0xff);
	buf[9] = (char)(hlen >> 8);
	memcpy(buf + 10, dict, n);
	memset(buf + 10 + n, ' ', pad);
	buf[10 + n + pad] = '\n';
	return 10 + hlen;
}

START_TEST(test_npy_header_matches_numpy_save_byte_for_byte)
{
	char buf[NPY_HEADER_MAX];
	uint64_t shape[] = { 2, 3 };
	int n = npy_header(buf, sizeof(buf), "<f4", 2, shape);

	ck_assert_int_eq(n, (int)sizeof(numpy_2x3_f4) - 1);
	ck_assert_int_eq(n, 128);
	ck_assert_mem_eq(buf, numpy_2x3_f4, (size_t)n);
}
END_TEST

START_TEST(test_npy_header_scalar_1d_8d_empty_byte_for_byte)
{
	static const struct {
		const char *descr; uint32_t ndim; uint64_t shape[8]; const char *dict; size_t pad;
	} cases[] = {
		{ "<f8", 0, { 0 }, "{'descr': '<f8', 'fortran_order': False, 'shape': (), }", 62 },
		{ "|b1", 1, { 5 }, "{'descr': '|b1', 'fortran_order': False, 'shape': (5,), }", 60 },
		{ "<u2", 8, { 2, 3, 2, 3, 2, 3, 2, 3 },
		  "{'descr': '<u2', 'fortran_order': False, 'shape': (2, 3, 2, 3, 2, 3, 2, 3), }", 40 },
		{ "<i8", 3, { 2, 0, 3 }, "{'descr': '<i8', 'fortran_order': False, 'shape': (2, 0, 3), }", 55 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char buf[NPY_HEADER_MAX], want[NPY_HEADER_MAX];
		size_t wn = expected(want, cases[i].dict, cases[i].pad);
		int n = npy_header(buf, sizeof(buf), cases[i].descr, cases[i].ndim, cases[i].shape);

		ck_assert_int_eq(n, (int)wn);
		ck_assert_mem_eq(buf, want, wn);
	}
}
END_TEST

START_TEST(test_npy_header_aligns_data_to_64_for_any_shape)
{
	uint64_t shape[8];
	char buf[NPY_HEADER_MAX];
	struct npy_info info;

	for (uint32_t ndim = 0; ndim <= 8; ndim++) {
		for (uint64_t big = 0; big < 3; big++) {
			for (uint32_t i = 0; i < ndim; i++)
				shape[i] = big == 2 ? UINT64_MAX - i : big ? 1000000007ull * (i + 1) : i;
			int n = npy_header(buf, sizeof(buf), "<f4", ndim, shape);

			ck_assert_int_gt(n, 0);
			ck_assert_int_eq(n % 64, 0);
			ck_assert_int_eq(buf[n - 1], '\n');
			ck_assert_int_eq(npy_parse(buf, (size_t)n, &info), 0);
			ck_assert_uint_eq(info.ndim, ndim);
			ck_assert_mem_eq(info.shape, shape, ndim * sizeof(uint64_t));
			ck_assert_str_eq(info.descr, "<f4");
			ck_assert_uint_eq(info.data_offset, (size_t)n);
		}
	}
}
END_TEST

START_TEST(test_npy_header_refuses_a_small_buffer)
{
	char buf[100];
	uint64_t shape[] = { 2, 3 };

	ck_assert_int_eq(npy_header(buf, sizeof(buf), "<f4", 2, shape), -ENOSPC);
	ck_assert_int_eq(npy_header(buf, sizeof(buf), "<f4", 9, shape), -EINVAL);
}
END_TEST

START_TEST(test_npy_descr_maps_every_dtype)
{
	static const char *map[][2] = {
		{ "float64", "<f8" }, { "float32", "<f4" }, { "float16", "<f2" }, { "bfloat16", "<u2" },
		{ "int64", "<i8" },   { "int32", "<i4" },   { "int16", "<i2" },   { "int8", "|i1" },
		{ "uint64", "<u8" },  { "uint32", "<u4" },  { "uint16", "<u2" },  { "uint8", "|u1" },
		{ "bool", "|b1" },
	};
	char d[NPY_DESCR_MAX];

	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++) {
		ck_assert_int_eq(npy_descr(map[i][0], 0, d), 0);
		ck_assert_str_eq(d, map[i][1]);
	}
	ck_assert_int_eq(npy_descr("fp8_e4m3", 1, d), 0);
	ck_assert_str_eq(d, "|V1");
	ck_assert_int_eq(npy_descr("fp8_e4m3", 0, d), -EINVAL);
}
END_TEST

/* The tools' dtype table and the library agree: every name has the
 * library's element size, and its descr says that size ("<f4": 4). */
START_TEST(test_npy_dtype_table_agrees_with_the_library)
{
	ck_assert_uint_eq(npy_ndtypes, 13);
	for (unsigned int i = 0; i < npy_ndtypes; i++) {
		const struct npy_dtype *t = &npy_dtypes[i];
		uint32_t size = evs_dtype_size(t->name);

		ck_assert_msg(size != 0, "%s: unknown to the library", t->name);
		ck_assert_uint_eq((uint32_t)(t->descr[2] - '0'), size);
		ck_assert_ptr_eq(npy_dtype_find(t->name), t);
		ck_assert_int_ne(t->kind, NPY_KIND_OTHER);
	}
	ck_assert_ptr_null(npy_dtype_find("fp8_e4m3"));
	ck_assert_ptr_null(npy_dtype_find(""));
}
END_TEST

START_TEST(test_npy_parse_rejects_malformed_headers)
{
	char buf[256];
	struct npy_info info;

	memcpy(buf, numpy_2x3_f4, 128);
	ck_assert_int_eq(npy_parse(buf, 128, &info), 0);
	ck_assert_int_eq(npy_parse(buf, 127, &info), -EBADMSG);   /* cut short */
	buf[6] = 2;                                              /* version 2.0 */
	ck_assert_int_eq(npy_parse(buf, 128, &info), -EBADMSG);
	memcpy(buf, numpy_2x3_f4, 128);
	buf[127] = ' ';                                          /* no newline */
	ck_assert_int_eq(npy_parse(buf, 128, &info), -EBADMSG);
	memcpy(buf, numpy_2x3_f4, 128);
	buf[0] = 'X';                                            /* bad magic */
	ck_assert_int_eq(npy_parse(buf, 128, &info), -EBADMSG);
}
END_TEST

/* A payload as emit_tensor lays it out, with or without the ndim record. */
static void payload(ndebug_stream_payload_debug_tensor_read_t *pl, const char *dtype, uint32_t ndim,
		    const uint64_t *shape, uint64_t bytes, bool ext)
{
	memset(pl, 0, sizeof(*pl));
	strcpy(pl->prefix, "x =");
	pl->pipe = 2;
	strcpy(pl->tensor_dtype, dtype);
	for (uint32_t i = 0; i < ndim; i++)
		pl->tensor_shape[i] = shape[i];
	pl->tensor_data_size = bytes;
	if (ext) {
		struct evs_tensor_ext e = { .magic = EVS_TENSOR_EXT_MAGIC, .ndim = (uint8_t)ndim,
					    .elem_size = evs_dtype_size(dtype) };

		memcpy(pl->reserved0, &e, sizeof(e));
	}
}

START_TEST(test_evs_tensor_parse_uses_the_recorded_ndim)
{
	uint8_t buf[2048];
	ndebug_stream_payload_debug_tensor_read_t *pl = (void *)buf;
	uint64_t empty[] = { 2, 0, 3 }, one[] = { 1 };
	struct evs_tensor_info ev;

	payload(pl, "float32", 3, empty, 0, true);
	ck_assert_int_eq(evs_tensor_parse(buf, 1024, &ev), 0);
	ck_assert_uint_eq(ev.ndim, 3);
	ck_assert_uint_eq(ev.shape[2], 3);
	ck_assert_uint_eq(ev.numel, 0);
	ck_assert(!ev.is_print);
	ck_assert_uint_eq(ev.pipe, 2);

	payload(pl, "int8", 0, NULL, 1, true);                 /* a scalar */
	ck_assert_int_eq(evs_tensor_parse(buf, 1025, &ev), 0);
	ck_assert_uint_eq(ev.ndim, 0);
	ck_assert_uint_eq(ev.numel, 1);

	payload(pl, "int8", 1, one, 1, false);                 /* no record: inferred */
	ck_assert_int_eq(evs_tensor_parse(buf, 1025, &ev), 0);
	ck_assert_uint_eq(ev.ndim, 1);
}
END_TEST

START_TEST(test_evs_tensor_parse_rejects_inconsistent_payloads)
{
	uint8_t buf[2048];
	ndebug_stream_payload_debug_tensor_read_t *pl = (void *)buf;
	uint64_t shape[] = { 4 };
	struct evs_tensor_info ev;

	payload(pl, "float32", 1, shape, 16, true);
	ck_assert_int_eq(evs_tensor_parse(buf, 1024 + 16, &ev), 0);
	ck_assert_int_eq(evs_tensor_parse(buf, 1024 + 15, &ev), -EBADMSG); /* past the record */
	ck_assert_int_eq(evs_tensor_parse(buf, 1000, &ev), -EBADMSG);      /* no fixed part */
	payload(pl, "float32", 1, shape, 12, true);                          /* 4 x 4 != 12 */
	ck_assert_int_eq(evs_tensor_parse(buf, 1024 + 16, &ev), -EBADMSG);
	payload(pl, "float32", 1, shape, 16, true);
	buf[EVS_TENSOR_EXT_OFFSET + 2] = 9;                                  /* ndim 9 */
	ck_assert_int_eq(evs_tensor_parse(buf, 1024 + 16, &ev), -EBADMSG);
	payload(pl, "mystery", 1, shape, 16, false);                         /* no size */
	ck_assert_int_eq(evs_tensor_parse(buf, 1024 + 16, &ev), -EBADMSG);
	payload(pl, "", 0, NULL, 0, false);                                  /* a print */
	ck_assert_int_eq(evs_tensor_parse(buf, 1024, &ev), 0);
	ck_assert(ev.is_print);
}
END_TEST

/* The element size recorded in the evstream extension, whatever the dtype. */
static void set_elem_size(ndebug_stream_payload_debug_tensor_read_t *pl, uint32_t esz)
{
	struct evs_tensor_ext e;

	memcpy(&e, pl->reserved0, sizeof(e));
	e.elem_size = esz;
	memcpy(pl->reserved0, &e, sizeof(e));
}

/* Written by hand past emit_tensor: a size that contradicts a known dtype
 * makes the payload malformed, whatever the data size says. */
START_TEST(test_evs_tensor_parse_refuses_an_elem_size_that_contradicts_the_dtype)
{
	uint8_t buf[2048];
	ndebug_stream_payload_debug_tensor_read_t *pl = (void *)buf;
	uint64_t shape[] = { 2 };
	struct evs_tensor_info ev;

	payload(pl, "float32", 1, shape, 16, true);
	set_elem_size(pl, 8);
	ck_assert_int_eq(evs_tensor_parse(buf, 1024 + 16, &ev), -EBADMSG);
	payload(pl, "int8", 1, shape, 6, true);
	set_elem_size(pl, 3);
	ck_assert_int_eq(evs_tensor_parse(buf, 1024 + 6, &ev), -EBADMSG);
	/* 0 is the dtype's own size */
	payload(pl, "float32", 1, shape, 8, true);
	set_elem_size(pl, 0);
	ck_assert_int_eq(evs_tensor_parse(buf, 1024 + 8, &ev), 0);
	ck_assert_uint_eq(ev.elem_size, 4);
	/* an unknown dtype brings its own */
	payload(pl, "mytype", 1, shape, 6, true);
	set_elem_size(pl, 3);
	ck_assert_int_eq(evs_tensor_parse(buf, 1024 + 6, &ev), 0);
	ck_assert_uint_eq(ev.elem_size, 3);
}
END_TEST

START_TEST(test_evs_tensor_parse_takes_an_empty_tensor_of_any_shape)
{
	uint8_t buf[2048];
	ndebug_stream_payload_debug_tensor_read_t *pl = (void *)buf;
	uint64_t big3[] = { 1ull << 33, 1ull << 33, 0 }, max2[] = { 0, UINT64_MAX };
	uint64_t full3[] = { 1ull << 33, 1ull << 33, 2 };
	struct evs_tensor_info ev;

	payload(pl, "float32", 3, big3, 0, true);
	ck_assert_int_eq(evs_tensor_parse(buf, 1024, &ev), 0);
	ck_assert_uint_eq(ev.numel, 0);
	ck_assert_uint_eq(ev.shape[1], 1ull << 33);
	payload(pl, "int8", 2, max2, 0, true);
	ck_assert_int_eq(evs_tensor_parse(buf, 1024, &ev), 0);
	ck_assert_uint_eq(ev.shape[1], UINT64_MAX);
	/* not empty: the element count overflows */
	payload(pl, "int8", 3, full3, 0, true);
	ck_assert_int_eq(evs_tensor_parse(buf, 1024, &ev), -EBADMSG);
}
END_TEST

/* What NumPy 1.24 loads (checked against np.load of such headers): the
 * element size times the non-zero sizes must fit an int64. */
START_TEST(test_npy_shape_fits_where_numpy_loads)
{
	static const struct {
		uint32_t esz, ndim;
		uint64_t shape[3];
		bool fits;
	} cases[] = {
		{ 1, 2, { 0, INT64_MAX }, true },
		{ 8, 2, { 0, INT64_MAX }, false },
		{ 1, 2, { 0, 1ull << 62 }, true },
		{ 4, 2, { 0, 1ull << 62 }, false },
		{ 4, 3, { 1ull << 33, 1ull << 33, 0 }, false },
		{ 1, 2, { 0, UINT64_MAX }, false },
		{ 1, 3, { 0, 1ull << 31, 1ull << 31 }, true },
		{ 8, 3, { 0, 1ull << 31, 1ull << 31 }, false },
		{ 1, 3, { 0, 1ull << 31, 1ull << 32 }, false },
		{ 1, 3, { 0, 1ull << 61, 2 }, true },
		{ 1, 3, { 0, 1ull << 62, 2 }, false },
		{ 2, 0, { 0 }, true },
		{ 4, 2, { 32, 64 }, true },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		ck_assert_msg(npy_shape_fits(cases[i].esz, cases[i].ndim, cases[i].shape) == cases[i].fits,
			      "case %zu: expected %s", i, cases[i].fits ? "fits" : "does not fit");
}
END_TEST

/* The index line of (core 0, seq) in dir, or "" (lines are short here). */
static void index_line_of(const char *dir, uint64_t seq, char *line, size_t len)
{
	char path[512];
	FILE *f;
	uint64_t v;

	snprintf(path, sizeof(path), "%s/index.jsonl", dir);
	f = fopen(path, "r");
	ck_assert_ptr_nonnull(f);
	line[0] = '\0';
	while (fgets(line, (int)len, f))
		if (!json_get_u64(line, "seq", &v) && v == seq)
			break;
	fclose(f);
}

/*
 * The writer evs-dump runs, fed by hand: tensors that contradict themselves
 * are indexed as "bad" with no file and no preview; an empty tensor whose
 * shape NumPy cannot represent is indexed with its shape, a note and no
 * file; the others get their .npy.
 */
/*
 * .npy files are named by sequence number: a record whose seq repeats one
 * already taken for its core, or goes back below it, is skipped
 * (DUMP_SKIPPED, counted, no line, no file), so that the file an index
 * line names keeps what the line says. The last seq taken may be the
 * largest: nothing comes after it (no wrap to 0).
 */
START_TEST(test_dump_writer_skips_a_repeated_or_earlier_seq)
{
	static char base[] = "/tmp/evs-npytest-XXXXXX";
	char dir[512], path[600], line[2048];
	uint8_t buf[2048] = { 0 }, got[256];
	ndebug_stream_payload_debug_tensor_read_t *pl = (void *)buf;
	struct dump_writer w = { .print = false };
	struct evs_event_header h = { .type = EVS_EVENT_TENSOR_READ };
	uint64_t two[] = { 2 }, three[] = { 3 }, lines = 0;
	struct npy_info info;
	FILE *f;
	int fd;

	ck_assert_ptr_nonnull(mkdtemp(base));
	snprintf(dir, sizeof(dir), "%s/d", base);
	ck_assert_int_eq(dump_writer_open(&w, dir, DUMP_NPY), 0);
	payload(pl, "float32", 1, two, 8, true);
	h.data_size = 1024 + 8;
	ck_assert_int_eq(dump_writer_record(&w, 0, &h, buf), 0);
	/* seq 0 again, another dtype and shape */
	payload(pl, "int32", 1, three, 12, true);
	h.data_size = 1024 + 12;
	ck_assert_int_eq(dump_writer_record(&w, 0, &h, buf), DUMP_SKIPPED);
	h.seq = 5;
	ck_assert_int_eq(dump_writer_record(&w, 0, &h, buf), 0);
	h.seq = 3;   /* back */
	ck_assert_int_eq(dump_writer_record(&w, 0, &h, buf), DUMP_SKIPPED);
	h.seq = 0;   /* another core has its own */
	ck_assert_int_eq(dump_writer_record(&w, 1, &h, buf), 0);
	h.seq = UINT64_MAX;
	ck_assert_int_eq(dump_writer_record(&w, 0, &h, buf), 0);
	h.seq = 6;
	ck_assert_int_eq(dump_writer_record(&w, 0, &h, buf), DUMP_SKIPPED);
	ck_assert_uint_eq(w.skipped, 3);
	ck_assert_uint_eq(w.cores[0].skipped, 3);
	ck_assert_uint_eq(w.cores[1].skipped, 0);
	ck_assert_uint_eq(w.events, 4);
	ck_assert_uint_eq(w.cores[0].events, 3);
	ck_assert_uint_eq(w.cores[0].gaps, 5 - 1 + UINT64_MAX - 6);
	ck_assert_int_eq(dump_writer_close(&w), 0);

	/* c0/000000000000.npy holds the first record, float32 (2,) */
	snprintf(path, sizeof(path), "%s/c0/000000000000.npy", dir);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pread(fd, got, sizeof(got), 0), 128 + 8);
	close(fd);
	ck_assert_int_eq(npy_parse(got, 128, &info), 0);
	ck_assert_str_eq(info.descr, "<f4");
	ck_assert_uint_eq(info.ndim, 1);
	ck_assert_uint_eq(info.shape[0], 2);
	snprintf(path, sizeof(path), "%s/c0/000000000003.npy", dir);
	ck_assert_int_ne(access(path, F_OK), 0);
	snprintf(path, sizeof(path), "%s/c0/000000000006.npy", dir);
	ck_assert_int_ne(access(path, F_OK), 0);
	/* one line per record taken */
	snprintf(path, sizeof(path), "%s/index.jsonl", dir);
	f = fopen(path, "r");
	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof(line), f))
		lines++;
	fclose(f);
	ck_assert_uint_eq(lines, 4);
	index_line_of(dir, 0, line, sizeof(line));
	ck_assert_msg(strstr(line, "\"dtype\":\"float32\"") && strstr(line, "\"shape\":[2]"), "%s", line);
	nftw(base, evs_rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}
END_TEST

/* --kafka makes <host>/<producer> below its checked top directory, which
 * others may add names to when it is sticky: a <host> planted there as a
 * link is refused, never followed (the writer made <producer> and its
 * files through it before). */
START_TEST(test_dump_writer_below_a_directory_follows_no_planted_link)
{
	static char base[] = "/tmp/evs-plantkafka-XXXXXX";
	char top[512], away[512], link[600], made[700];
	struct dump_writer w = { .print = false };
	struct stat st;
	int topfd;

	ck_assert_ptr_nonnull(mkdtemp(base));
	snprintf(top, sizeof(top), "%s/top", base);
	snprintf(away, sizeof(away), "%s/away", base);
	ck_assert_int_eq(mkdir(top, 0755), 0);
	ck_assert_int_eq(mkdir(away, 0755), 0);
	snprintf(link, sizeof(link), "%s/host", top);
	ck_assert_int_eq(symlink(away, link), 0);
	topfd = open(top, O_PATH | O_DIRECTORY | O_CLOEXEC);
	ck_assert_int_ge(topfd, 0);
	ck_assert_int_lt(dump_writer_openat(&w, topfd, "host/prod", "top/host/prod", DUMP_NPY), 0);
	snprintf(made, sizeof(made), "%s/prod", away);
	ck_assert_msg(stat(made, &st) != 0, "the writer made %s through the planted link", made);
	/* a real <host> works */
	ck_assert_int_eq(unlink(link), 0);
	ck_assert_int_eq(dump_writer_openat(&w, topfd, "host/prod", "top/host/prod", DUMP_NPY), 0);
	dump_writer_abort(&w);
	close(topfd);
	ck_assert_int_eq(nftw(base, evs_rm_entry, 16, FTW_DEPTH | FTW_PHYS), 0);
}
END_TEST

/* The writer's side of the test below, in a process of its own (a seccomp
 * filter lasts for good, and CK_FORK=no runs every test in one process):
 * two tensors from fd, the second past the end of a file cut short. The
 * exit status says which step failed. */
static int record_from_child(const char *dir, int fd, bool by_hand, uint64_t n)
{
	uint8_t fixed[1024];
	ndebug_stream_payload_debug_tensor_read_t *pl = (void *)fixed;
	struct dump_writer w = { .print = false };
	struct evs_event_header h = { .type = EVS_EVENT_TENSOR_READ, .data_size = 1024 + n * 4 };
	struct dump_src src = { .fd = fd, .off = 7 };

	/* a kernel without copy_file_range: copied by hand */
	if (by_hand && evs_deny_syscall(__NR_copy_file_range, ENOSYS))
		return 2;
	if (dump_writer_open(&w, dir, DUMP_NPY))
		return 3;
	payload(pl, "float32", 1, &n, n * 4, true);
	if (dump_writer_record_from(&w, 0, &h, fixed, &src))
		return 4;
	if (ftruncate(fd, (off_t)(7 + n * 2)))
		return 5;
	h.seq = 1;
	if (dump_writer_record_from(&w, 0, &h, fixed, &src) || w.failed != 1 || w.first_errno != ENODATA)
		return 6;
	if (dump_writer_close(&w))
		return 7;
	/* not in NPY mode, or printing: refused, the bytes are never read */
	w = (struct dump_writer){ .print = true };
	return dump_writer_record_from(&w, 0, &h, fixed, &src) == -EINVAL ? 0 : 8;
}

/* A tensor whose bytes are in a file (evs-dump --convert's long records):
 * the .npy holds them, copied by the kernel or (_i == 1) by hand; a file
 * that ends early fails that write (counted, no .npy left). */
START_TEST(test_dump_writer_record_from_copies_the_tensor_from_a_file)
{
	char base[] = "/tmp/evs-npytest-XXXXXX", dir[512], path[600];
	uint64_t n = (3 << 20) / 4;
	uint8_t *data = malloc(n * 4), *got = malloc(n * 4);
	struct npy_info info;
	int fd, out, status;
	pid_t pid;

	ck_assert_ptr_nonnull(data);
	ck_assert_ptr_nonnull(got);
	for (size_t i = 0; i < n * 4; i++)
		data[i] = (uint8_t)(i * 7 + (i >> 12));
	ck_assert_ptr_nonnull(mkdtemp(base));
	snprintf(path, sizeof(path), "%s/src", base);
	fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, "0123456", 7), 7); /* the tensor from an odd offset */
	ck_assert_int_eq(write(fd, data, n * 4), (ssize_t)(n * 4));
	snprintf(dir, sizeof(dir), "%s/d", base);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		int rc = record_from_child(dir, fd, _i == 1, n);

		free(data);
		free(got);
		_exit(rc);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the writer's side: status %#x", status);

	snprintf(path, sizeof(path), "%s/c0/000000000000.npy", dir);
	out = open(path, O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(out, 0);
	ck_assert_int_eq(pread(out, got, 128, 0), 128);
	ck_assert_int_eq(npy_parse(got, 128, &info), 0);
	ck_assert_str_eq(info.descr, "<f4");
	ck_assert_uint_eq(info.shape[0], n);
	ck_assert_int_eq(pread(out, got, n * 4, (off_t)info.data_offset), (ssize_t)(n * 4));
	ck_assert_int_eq(pread(out, got, 1, (off_t)(info.data_offset + n * 4)), 0);
	ck_assert_mem_eq(got, data, n * 4);
	close(out);
	snprintf(path, sizeof(path), "%s/c0/000000000001.npy", dir);
	ck_assert_int_ne(access(path, F_OK), 0);
	close(fd);
	free(data);
	free(got);
	ck_assert_int_eq(nftw(base, evs_rm_entry, 16, FTW_DEPTH | FTW_PHYS), 0);
}
END_TEST

START_TEST(test_dump_writer_keeps_contradictions_and_unloadable_shapes_out_of_npy_files)
{
	static char base[] = "/tmp/evs-npytest-XXXXXX";
	char dir[512], line[2048], path[600];
	uint8_t buf[2048] = { 0 };
	ndebug_stream_payload_debug_tensor_read_t *pl = (void *)buf;
	struct dump_writer w = { .print = false };
	struct evs_event_header h = { .type = EVS_EVENT_TENSOR_READ };
	uint64_t two[] = { 2 }, big3[] = { 1ull << 33, 1ull << 33, 0 }, i8max[] = { 0, INT64_MAX };
	struct stat st;

	ck_assert_ptr_nonnull(mkdtemp(base));
	snprintf(dir, sizeof(dir), "%s/d", base);
	ck_assert_int_eq(dump_writer_open(&w, dir, DUMP_NPY), 0);
	payload(pl, "float32", 1, two, 16, true);
	set_elem_size(pl, 8);
	h.data_size = 1024 + 16;
	ck_assert_int_eq(dump_writer_record(&w, 0, &h, buf), 0);
	payload(pl, "int8", 1, two, 6, true);
	set_elem_size(pl, 3);
	h.seq = 1;
	h.data_size = 1024 + 6;
	ck_assert_int_eq(dump_writer_record(&w, 0, &h, buf), 0);
	payload(pl, "float32", 3, big3, 0, true);
	h.seq = 2;
	h.data_size = 1024;
	ck_assert_int_eq(dump_writer_record(&w, 0, &h, buf), 0);
	payload(pl, "int8", 2, i8max, 0, true);
	h.seq = 3;
	ck_assert_int_eq(dump_writer_record(&w, 0, &h, buf), 0);
	payload(pl, "float32", 1, two, 8, true);
	h.seq = 4;
	h.data_size = 1024 + 8;
	ck_assert_int_eq(dump_writer_record(&w, 0, &h, buf), 0);
	ck_assert_uint_eq(w.bad, 2);
	ck_assert_uint_eq(w.unfit, 1);
	ck_assert_int_eq(dump_writer_close(&w), 0);

	for (uint64_t seq = 0; seq < 2; seq++) {
		index_line_of(dir, seq, line, sizeof(line));
		ck_assert_msg(strstr(line, "\"kind\":\"bad\"") && strstr(line, "\"file\":null"), "%s", line);
	}
	index_line_of(dir, 2, line, sizeof(line));
	ck_assert_msg(strstr(line, "\"shape\":[8589934592,8589934592,0]") && strstr(line, "\"file\":null") &&
		      strstr(line, "\"note\":\"empty tensor whose shape NumPy cannot represent"), "%s", line);
	for (uint64_t seq = 0; seq < 5; seq++) {
		snprintf(path, sizeof(path), "%s/c0/%012" PRIu64 ".npy", dir, seq);
		ck_assert_msg((stat(path, &st) == 0) == (seq >= 3), "%s: %s", path,
			      seq >= 3 ? "missing" : "written");
	}
	nftw(base, evs_rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}
END_TEST

static char *preview_of(const struct evs_tensor_info *ev, char *buf, size_t len)
{
	FILE *f = fmemopen(buf, len, "w");

	preview_print(f, ev);
	fclose(f);
	return buf;
}

START_TEST(test_preview_prints_like_numpy)
{
	float m[] = { 1, 2.5f, -3, 4 };
	int8_t b[] = { 1, 0 };
	struct evs_tensor_info ev = { .prefix = "w =", .dtype = "float32", .elem_size = 4, .ndim = 2,
				   .shape = { 2, 2 }, .numel = 4, .bytes = 16, .data = m };
	char out[256];

	ck_assert_str_eq(preview_of(&ev, out, sizeof(out)), "w = [[ 1. 2.5]\n [-3.  4.]]\n");
	ev = (struct evs_tensor_info){ .prefix = "m:", .dtype = "bool", .elem_size = 1, .ndim = 1,
				    .shape = { 2 }, .numel = 2, .bytes = 2, .data = b };
	ck_assert_str_eq(preview_of(&ev, out, sizeof(out)), "m: [ True False]\n");
	ev = (struct evs_tensor_info){ .prefix = "step 3 done\n", .is_print = true };
	ck_assert_str_eq(preview_of(&ev, out, sizeof(out)), "step 3 done\n");
	/* what the producer wrote reaches the terminal without its control
	 * characters: an OSC title sequence, a carriage return, a C1 CSI in
	 * UTF-8, DEL; newline, tab and other UTF-8 (U+2192) as they are */
	ev = (struct evs_tensor_info){ .prefix = "a\x1b]0;owned\x07" "b\rc\xc2\x9b" "2Jd\x7f\te \xe2\x86\x92\nf\n",
				    .is_print = true };
	ck_assert_str_eq(preview_of(&ev, out, sizeof(out)),
			 "a\\x1b]0;owned\\x07b\\x0dc\\x9b" "2Jd\\x7f\te \xe2\x86\x92\nf\n");
}
END_TEST

START_TEST(test_json_put_str_keeps_the_index_valid_utf8)
{
	char out[256];
	FILE *f = fmemopen(out, sizeof(out), "w");

	/* quote, backslash, newline, control, valid UTF-8 (U+2192), a stray
	 * continuation byte, a truncated sequence, an overlong form, bytes
	 * that start no sequence (0xf5..0xff) before continuation bytes */
	json_put_str(f, "a\"b\\c\n\x01 \xe2\x86\x92 \x80 \xe2\x86 \xc0\xaf \xff\xa7\xa7 \xf8\x88\x80");
	fclose(f);
	ck_assert_str_eq(out, "\"a\\\"b\\\\c\\n\\u0001 \xe2\x86\x92 \\u0080 \\u00e2\\u0086 "
			      "\\u00c0\\u00af \\u00ff\\u00a7\\u00a7 \\u00f8\\u0088\\u0080\"");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("dump_npy");
	TCase *tc = evs_tcase("npy");

	tcase_add_test(tc, test_npy_header_matches_numpy_save_byte_for_byte);
	tcase_add_test(tc, test_npy_header_scalar_1d_8d_empty_byte_for_byte);
	tcase_add_test(tc, test_npy_header_aligns_data_to_64_for_any_shape);
	tcase_add_test(tc, test_npy_header_refuses_a_small_buffer);
	tcase_add_test(tc, test_npy_descr_maps_every_dtype);
	tcase_add_test(tc, test_npy_dtype_table_agrees_with_the_library);
	tcase_add_test(tc, test_npy_parse_rejects_malformed_headers);
	tcase_add_test(tc, test_evs_tensor_parse_uses_the_recorded_ndim);
	tcase_add_test(tc, test_evs_tensor_parse_rejects_inconsistent_payloads);
	tcase_add_test(tc, test_evs_tensor_parse_refuses_an_elem_size_that_contradicts_the_dtype);
	tcase_add_test(tc, test_evs_tensor_parse_takes_an_empty_tensor_of_any_shape);
	tcase_add_test(tc, test_npy_shape_fits_where_numpy_loads);
	tcase_add_test(tc, test_dump_writer_below_a_directory_follows_no_planted_link);
	tcase_add_test(tc, test_dump_writer_keeps_contradictions_and_unloadable_shapes_out_of_npy_files);
	tcase_add_test(tc, test_dump_writer_skips_a_repeated_or_earlier_seq);
	tcase_add_loop_test(tc, test_dump_writer_record_from_copies_the_tensor_from_a_file, 0, 2);
	tcase_add_test(tc, test_preview_prints_like_numpy);
	tcase_add_test(tc, test_json_put_str_keeps_the_index_valid_utf8);
	suite_add_tcase(s, tc);
	return evs_run_suite(s);
}

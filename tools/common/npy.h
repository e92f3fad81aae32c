/* SPDX-License-Identifier: MIT */
/*
 * The NumPy .npy format, version 1.0: a 10-byte preamble (magic, version,
 * header length), a Python dict literal padded with spaces and ended by a
 * newline so that the data starts on a 64-byte boundary, then the data.
 */
#ifndef EVS_TOOLS_NPY_H
#define EVS_TOOLS_NPY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define NPY_MAGIC      "\x93NUMPY"
#define NPY_MAGIC_LEN  6
#define NPY_PREAMBLE   10       /* magic, major, minor, uint16 header length */
#define NPY_ALIGN      64
#define NPY_MAX_NDIM   8
#define NPY_HEADER_MAX 512      /* 8 dims of 20 digits fit with room to spare */
#define NPY_DESCR_MAX  16

/* How an element of a dtype reads, for previews and generators. */
enum npy_kind {
	NPY_KIND_OTHER = 0, /* not in the table: opaque bytes */
	NPY_KIND_FLOAT,     /* IEEE 754 binary16/32/64 by size */
	NPY_KIND_BFLOAT16,  /* the top half of a float32; stored as "<u2" */
	NPY_KIND_INT,
	NPY_KIND_UINT,
	NPY_KIND_BOOL,
};

/* The tools' one table of evstream dtypes; element sizes are the
 * library's (evs_dtype_size()). */
struct npy_dtype {
	const char *name;   /* evstream dtype: "float32" */
	const char *descr;  /* NumPy type string: "<f4" */
	enum npy_kind kind;
};
extern const struct npy_dtype npy_dtypes[];
extern const unsigned int npy_ndtypes;

/* The table's entry for dtype, or NULL. */
const struct npy_dtype *npy_dtype_find(const char *dtype);

/*
 * The descr (NumPy type string) for an evstream dtype: "<f4", "|b1", ...
 * bfloat16 has no NumPy type and is stored as "<u2" (its raw bits). An
 * unknown dtype with a known element size becomes the opaque "|V<size>".
 * Returns 0, or -EINVAL when neither is known.
 */
int npy_descr(const char *dtype, uint32_t elem_size, char descr[NPY_DESCR_MAX]);

/*
 * Whether NumPy (1.24) can hold an array of this shape: it multiplies the
 * element size by every non-zero size, checking for overflow of its intp
 * (int64). evstream takes an empty tensor (a 0 among its sizes) of any
 * shape, so an empty tensor may have no NumPy array: {0, 2^64-1} (a size
 * beyond intp), {2^33, 2^33, 0}, or float32 {0, 2^62}. Non-empty tensors
 * always fit (their bytes are in memory).
 */
bool npy_shape_fits(uint32_t elem_size, uint32_t ndim, const uint64_t *shape);

/* Writes the complete header (preamble + dict) into buf, returns its length
 * (a multiple of 64), or -ENOSPC if len is too small. */
int npy_header(char *buf, size_t len, const char *descr, uint32_t ndim, const uint64_t *shape);

struct npy_info {
	char descr[NPY_DESCR_MAX];
	int fortran_order;
	uint32_t ndim;
	uint64_t shape[NPY_MAX_NDIM];
	size_t data_offset;          /* header length */
};

/* Parses a version 1.0 header from the first len bytes of a file: 0, or
 * -EBADMSG when it is not one this module would write (or NumPy read). */
int npy_parse(const void *buf, size_t len, struct npy_info *info);

#endif

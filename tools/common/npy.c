/* SPDX-License-Identifier: MIT */
/* Writing and reading .npy version 1.0 headers (see npy.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "npy.h"

const struct npy_dtype npy_dtypes[] = {
	{ "float64", "<f8", NPY_KIND_FLOAT }, { "float32", "<f4", NPY_KIND_FLOAT },
	{ "float16", "<f2", NPY_KIND_FLOAT },
	{ "bfloat16", "<u2", NPY_KIND_BFLOAT16 }, /* no NumPy type: the raw bits */
	{ "int64", "<i8", NPY_KIND_INT },   { "int32", "<i4", NPY_KIND_INT },
	{ "int16", "<i2", NPY_KIND_INT },   { "int8", "|i1", NPY_KIND_INT },
	{ "uint64", "<u8", NPY_KIND_UINT }, { "uint32", "<u4", NPY_KIND_UINT },
	{ "uint16", "<u2", NPY_KIND_UINT }, { "uint8", "|u1", NPY_KIND_UINT },
	{ "bool", "|b1", NPY_KIND_BOOL },
};
const unsigned int npy_ndtypes = sizeof(npy_dtypes) / sizeof(npy_dtypes[0]);

const struct npy_dtype *npy_dtype_find(const char *dtype)
{
	for (unsigned int i = 0; i < npy_ndtypes; i++)
		if (!strcmp(dtype, npy_dtypes[i].name))
			return &npy_dtypes[i];
	return NULL;
}

int npy_descr(const char *dtype, uint32_t elem_size, char descr[NPY_DESCR_MAX])
{
	const struct npy_dtype *t = npy_dtype_find(dtype);

	if (t) {
		snprintf(descr, NPY_DESCR_MAX, "%s", t->descr);
		return 0;
	}
	if (!elem_size)
		return -EINVAL;
	snprintf(descr, NPY_DESCR_MAX, "|V%u", elem_size);
	return 0;
}

bool npy_shape_fits(uint32_t elem_size, uint32_t ndim, const uint64_t *shape)
{
	uint64_t bytes = elem_size;

	for (uint32_t i = 0; i < ndim; i++) {
		if (shape[i] == 0)
			continue; /* NumPy skips them too: its product stays the element size */
		if (__builtin_mul_overflow(bytes, shape[i], &bytes) || bytes > INT64_MAX)
			return false;
	}
	return true;
}

int npy_header(char *buf, size_t len, const char *descr, uint32_t ndim, const uint64_t *shape)
{
	char dict[NPY_HEADER_MAX];
	size_t n, total, pad;
	int w;

	if (ndim > NPY_MAX_NDIM)
		return -EINVAL;
	/* the dict as NumPy writes it: sorted keys, Python reprs, a trailing ", " */
	w = snprintf(dict, sizeof(dict), "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
	n = (size_t)w;
	for (uint32_t i = 0; i < ndim; i++)
		n += (size_t)snprintf(dict + n, sizeof(dict) - n, i ? ", %" PRIu64 : "%" PRIu64, shape[i]);
	/* a 1-tuple needs its comma: (5,) */
	n += (size_t)snprintf(dict + n, sizeof(dict) - n, ndim == 1 ? ",), }" : "), }");
	/* the newline ends the header; spaces before it align the data to 64 */
	total = NPY_PREAMBLE + n + 1;
	pad = (NPY_ALIGN - total % NPY_ALIGN) % NPY_ALIGN;
	total += pad;
	if (total > len || total - NPY_PREAMBLE > 0xffff)
		return -ENOSPC;
	memcpy(buf, NPY_MAGIC, NPY_MAGIC_LEN);
	buf[6] = 1; /* major */
	buf[7] = 0; /* minor */
	buf[8] = (char)((total - NPY_PREAMBLE) & 0xff);
	buf[9] = (char)((total - NPY_PREAMBLE) >> 8);
	memcpy(buf + NPY_PREAMBLE, dict, n);
	memset(buf + NPY_PREAMBLE + n, ' ', pad);
	buf[total - 1] = '\n';
	return (int)total;
}

static const char *skip_ws(const char *s, const char *end)
{
	while (s < end && *s == ' ')
		s++;
	return s;
}

static const char *expect(const char *s, const char *end, const char *lit)
{
	size_t n = strlen(lit);

	s = skip_ws(s, end);
	if ((size_t)(end - s) < n || memcmp(s, lit, n))
		return NULL;
	return s + n;
}

/* Accepts the dict in the order and spelling npy_header() and NumPy write. */
int npy_parse(const void *data, size_t len, struct npy_info *info)
{
	const unsigned char *b = data;
	const char *s, *end, *q;
	size_t hlen;

	memset(info, 0, sizeof(*info));
	if (len < NPY_PREAMBLE || memcmp(b, NPY_MAGIC, NPY_MAGIC_LEN) || b[6] != 1 || b[7] != 0)
		return -EBADMSG;
	hlen = (size_t)b[8] | (size_t)b[9] << 8;
	if (NPY_PREAMBLE + hlen > len || (NPY_PREAMBLE + hlen) % 16 || hlen < 2 ||
	    b[NPY_PREAMBLE + hlen - 1] != '\n')
		return -EBADMSG;
	s = (const char *)b + NPY_PREAMBLE;
	end = s + hlen - 1;
	if (!(s = expect(s, end, "{'descr': '")))
		return -EBADMSG;
	q = memchr(s, '\'', (size_t)(end - s));
	if (!q || q - s >= NPY_DESCR_MAX || q == s)
		return -EBADMSG;
	memcpy(info->descr, s, (size_t)(q - s));
	s = q + 1;
	if (!(s = expect(s, end, ", 'fortran_order': ")))
		return -EBADMSG;
	if ((q = expect(s, end, "False")))
		info->fortran_order = 0;
	else if ((q = expect(s, end, "True")))
		info->fortran_order = 1;
	else
		return -EBADMSG;
	if (!(s = expect(q, end, ", 'shape': (")))
		return -EBADMSG;
	for (;;) {
		char *e;
		unsigned long long v;

		s = skip_ws(s, end);
		if (s < end && *s == ')')
			break;
		if (s >= end || *s < '0' || *s > '9' || info->ndim == NPY_MAX_NDIM)
			return -EBADMSG;
		errno = 0;
		v = strtoull(s, &e, 10);
		if (errno || e > end)
			return -EBADMSG;
		info->shape[info->ndim++] = v;
		s = skip_ws(e, end);
		if (s < end && *s == ',')
			s++;
		else if (s >= end || *s != ')')
			return -EBADMSG;
	}
	if (!(s = expect(s + 1, end, ",")) || !(s = expect(s, end, "}")))
		return -EBADMSG;
	if (skip_ws(s, end) != end)
		return -EBADMSG;
	info->data_offset = NPY_PREAMBLE + hlen;
	return 0;
}

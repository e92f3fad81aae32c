/* SPDX-License-Identifier: MIT */
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "npy.h"
#include "preview.h"

/* Tensors with at most this many elements are printed in full. */
#define PREVIEW_FULL_MAX 64

/*
 * Text the producer wrote (a prefix, a print, a dtype's name), as the
 * terminal or log it goes to should show it: control characters other
 * than newline and tab (escape sequences, a carriage return that would
 * draw over the line, C1 controls as UTF-8) as \xHH of their code, as
 * `python3 -m evstream tail` shows them; the index keeps the exact bytes.
 */
static void put_shown(FILE *f, const char *text)
{
	const unsigned char *s = (const unsigned char *)text;

	for (; *s; s++) {
		if ((*s < 0x20 && *s != '\n' && *s != '\t') || *s == 0x7f)
			fprintf(f, "\\x%02x", *s);
		else if (*s == 0xc2 && s[1] >= 0x80 && s[1] <= 0x9f)
			fprintf(f, "\\x%02x", *++s);
		else
			fputc(*s, f);
	}
}

static float half_to_float(uint16_t h)
{
	int e = (h >> 10) & 0x1f, m = h & 0x3ff;
	float v;

	if (e == 0)
		v = ldexpf((float)m, -24);
	else if (e == 31)
		v = m ? NAN : INFINITY;
	else
		v = ldexpf((float)(m | 0x400), e - 25);
	return (h & 0x8000) ? -v : v;
}

static float bf16_to_float(uint16_t b)
{
	uint32_t u = (uint32_t)b << 16;
	float f;

	memcpy(&f, &u, sizeof(f));
	return f;
}

static int fmt_float(char *buf, size_t len, double v)
{
	int n;

	if (isnan(v))
		return snprintf(buf, len, "nan");
	if (isinf(v))
		return snprintf(buf, len, v < 0 ? "-inf" : "inf");
	n = snprintf(buf, len, "%.8g", v);
	/* NumPy marks whole floats with a trailing dot: "2." */
	if (n > 0 && (size_t)n + 1 < len && !strpbrk(buf, ".e"))
		buf[n++] = '.', buf[n] = '\0';
	return n;
}

/* One element of a dtype of kind k as NumPy prints it ("1.5", "-2.",
 * "True", "7"); the kind is looked up once per tensor. */
static int preview_element(char *buf, size_t len, enum npy_kind k, uint32_t esz, const void *p)
{
	union { uint8_t u8; uint16_t u16; uint32_t u32; uint64_t u64; float f; double d; } v;

	memcpy(&v, p, esz <= sizeof(v) ? esz : sizeof(v));
	switch (k) {
	case NPY_KIND_FLOAT:
		return fmt_float(buf, len, esz == 8 ? v.d : esz == 4 ? v.f : half_to_float(v.u16));
	case NPY_KIND_BFLOAT16:
		return fmt_float(buf, len, bf16_to_float(v.u16));
	case NPY_KIND_BOOL:
		return snprintf(buf, len, v.u8 ? "True" : "False");
	case NPY_KIND_INT: {
		int64_t s = esz == 1 ? (int8_t)v.u8 : esz == 2 ? (int16_t)v.u16 :
			    esz == 4 ? (int32_t)v.u32 : (int64_t)v.u64;
		return snprintf(buf, len, "%" PRId64, s);
	}
	case NPY_KIND_UINT: {
		uint64_t u = esz == 1 ? v.u8 : esz == 2 ? v.u16 : esz == 4 ? v.u32 : v.u64;
		return snprintf(buf, len, "%" PRIu64, u);
	}
	default: { /* unknown dtype: the bytes */
		int n = snprintf(buf, len, "0x");

		for (uint32_t i = 0; i < esz && i < 8 && (size_t)n + 3 < len; i++)
			n += snprintf(buf + n, len - (size_t)n, "%02x", ((const uint8_t *)p)[i]);
		return n;
	}
	}
}

#define ELEM_W 32

/* Nested rows as NumPy prints them: values right-aligned to one width,
 * rows of a block on new lines indented by their depth, blocks of 3-D and
 * up separated by blank lines. */
static void print_nested(FILE *f, const struct evs_tensor_info *ev, char (*s)[ELEM_W], int width,
			 uint32_t depth, uint64_t *at)
{
	fputc('[', f);
	for (uint64_t i = 0; i < ev->shape[depth]; i++) {
		if (i) {
			if (depth + 1 == ev->ndim) {
				fputc(' ', f);
			} else {
				for (uint32_t k = depth + 1; k < ev->ndim; k++)
					fputc('\n', f);
				for (uint32_t k = 0; k <= depth; k++)
					fputc(' ', f);
			}
		}
		if (depth + 1 == ev->ndim)
			fprintf(f, "%*s", width, s[(*at)++]);
		else
			print_nested(f, ev, s, width, depth + 1, at);
	}
	fputc(']', f);
}

static void print_tensor(FILE *f, const struct evs_tensor_info *ev)
{
	const uint8_t *d = ev->data;
	const struct npy_dtype *t = npy_dtype_find(ev->dtype);
	enum npy_kind k = t ? t->kind : NPY_KIND_OTHER;
	char s[PREVIEW_FULL_MAX][ELEM_W];
	int width = 0;

	if (ev->numel == 0) {
		fprintf(f, "[]");
		goto shape;
	}
	if (ev->numel > PREVIEW_FULL_MAX) {
		/* flat: the first and the last three, like NumPy's summary */
		fputc('[', f);
		for (uint64_t i = 0; i < 3; i++) {
			preview_element(s[0], ELEM_W, k, ev->elem_size, d + i * ev->elem_size);
			fprintf(f, "%s ", s[0]);
		}
		fprintf(f, "...");
		for (uint64_t i = ev->numel - 3; i < ev->numel; i++) {
			preview_element(s[0], ELEM_W, k, ev->elem_size, d + i * ev->elem_size);
			fprintf(f, " %s", s[0]);
		}
		fputc(']', f);
		goto shape;
	}
	for (uint64_t i = 0; i < ev->numel; i++) {
		int n = preview_element(s[i], ELEM_W, k, ev->elem_size, d + i * ev->elem_size);

		if (n > width)
			width = n;
	}
	if (ev->ndim == 0) {
		fputs(s[0], f);
	} else {
		uint64_t at = 0;

		print_nested(f, ev, s, width, 0, &at);
	}
	if (k != NPY_KIND_BFLOAT16)
		return;
shape:
	fputs(" (", f);
	put_shown(f, ev->dtype);
	fputs(", shape (", f);
	for (uint32_t i = 0; i < ev->ndim; i++)
		fprintf(f, i ? ", %" PRIu64 : "%" PRIu64, ev->shape[i]);
	fprintf(f, ev->ndim == 1 ? ",))" : "))");
}

void preview_print(FILE *f, const struct evs_tensor_info *ev)
{
	size_t n = strlen(ev->prefix);

	put_shown(f, ev->prefix);
	if (!ev->is_print) {
		if (n && ev->prefix[n - 1] != ' ' && ev->prefix[n - 1] != '\n')
			fputc(' ', f);
		print_tensor(f, ev);
		fputc('\n', f);
	} else if (!n || ev->prefix[n - 1] != '\n') {
		fputc('\n', f);
	}
}

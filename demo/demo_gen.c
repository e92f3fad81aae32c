/* SPDX-License-Identifier: MIT */
#include <stdio.h>
#include <string.h>

#include "demo_gen.h"
#include "evstream/evstream.h"
#include "evstream/tensor.h"
#include "npy.h"

static uint64_t mix(uint64_t x)
{
	/* splitmix64 finaliser */
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* Every dtype of the tools' table (npy.c); their sizes are the library's
 * (evs_dtype_size), so the demo cannot disagree with it. */
#define NDTYPES npy_ndtypes

/* What a model step prints: name, dtype (an index into npy_dtypes:
 * 0 float64, 1 float32, 2 float16, 3 bfloat16, 4..7 int64..int8,
 * 8..11 uint64..uint8, 12 bool), shape, view. */
static const struct {
	const char *name; int dtype; uint32_t ndim; uint64_t shape[3]; int view;
} mixed[] = {
	{ "loss",        1, 0, { 0 },          DEMO_CONTIG },
	{ "grad_norm",   1, 1, { 8 },          DEMO_CONTIG },
	{ "logits",      1, 2, { 4, 32 },      DEMO_CONTIG },
	{ "w_tile",      3, 2, { 64, 64 },     DEMO_CONTIG },
	{ "act",         2, 3, { 4, 16, 64 },  DEMO_CONTIG },
	{ "attn.T",      1, 2, { 32, 64 },     DEMO_TRANSPOSED },
	{ "kv[..., ::2]", 1, 2, { 16, 64 },    DEMO_STEP2 },
	{ "tokens",      5, 2, { 2, 128 },     DEMO_CONTIG },
	{ "positions",   4, 1, { 128 },        DEMO_CONTIG },
	{ "mask",        12, 2, { 8, 8 },      DEMO_CONTIG },
	{ "q_weight",    7, 2, { 32, 128 },    DEMO_CONTIG },
	{ "hidden",      3, 3, { 2, 64, 256 }, DEMO_CONTIG },
	{ "rows[::-1]",  10, 2, { 16, 16 },    DEMO_REVERSED },
	{ "scale",       0, 1, { 4 },          DEMO_CONTIG },
	{ "counts",      9, 2, { 3, 5 },       DEMO_CONTIG },
	{ "hist",        8, 1, { 10 },         DEMO_CONTIG },
	{ "q8",          11, 3, { 2, 3, 4 },   DEMO_CONTIG },
	{ "idx",         6, 1, { 5 },          DEMO_CONTIG },
};
#define NMIXED (sizeof(mixed) / sizeof(mixed[0]))

/* DEMO_ALL: dtype x (ndim 0 contiguous, ndim 1..8 contiguous and a view),
 * then an empty tensor of each dtype in two shapes, then two prints. */
#define ALL_DENSE (NDTYPES * 17)
#define ALL_EMPTY (NDTYPES * 2)
#define ALL_CASES (ALL_DENSE + ALL_EMPTY + 2)

int demo_pattern_parse(const char *s)
{
	if (!strcmp(s, "mixed"))
		return DEMO_MIXED;
	if (!strcmp(s, "all"))
		return DEMO_ALL;
	return -1;
}

static void set_dtype(struct demo_event *e, int i)
{
	snprintf(e->dtype, sizeof(e->dtype), "%s", npy_dtypes[i].name);
	e->esz = evs_dtype_size(npy_dtypes[i].name);
	e->kind = npy_dtypes[i].kind;
}

static void finish(struct demo_event *e)
{
	e->numel = 1;
	for (uint32_t i = 0; i < e->ndim; i++)
		e->numel *= e->shape[i];
	e->bytes = e->numel * e->esz;
	/* a view needs the axes it works on */
	if (e->view == DEMO_TRANSPOSED && e->ndim < 2)
		e->view = DEMO_STEP2;
	if (e->ndim == 0 || e->numel == 0)
		e->view = DEMO_CONTIG;
}

static void make_all(unsigned int core, uint64_t seq, struct demo_event *e)
{
	uint64_t c = seq % ALL_CASES;

	if (c < ALL_DENSE) {
		int d = (int)(c / 17), k = (int)(c % 17);

		set_dtype(e, d);
		e->ndim = k == 0 ? 0 : (uint32_t)(k + 1) / 2;
		for (uint32_t i = 0; i < e->ndim; i++)
			e->shape[i] = 2 + (i + e->ndim) % 2;
		e->view = k == 0 || (k % 2) ? DEMO_CONTIG : 1 + (d + (int)e->ndim) % 3;
		snprintf(e->prefix, sizeof(e->prefix), "nc%u #%llu %s %uD%s =", core,
			 (unsigned long long)seq, e->dtype, e->ndim, e->view ? " view" : "");
	} else if (c < ALL_DENSE + ALL_EMPTY) {
		int d = (int)((c - ALL_DENSE) / 2);

		set_dtype(e, d);
		if ((c - ALL_DENSE) % 2) {
			e->ndim = 3;
			e->shape[0] = 2, e->shape[1] = 0, e->shape[2] = 3;
		} else {
			e->ndim = 1;
			e->shape[0] = 0;
		}
		snprintf(e->prefix, sizeof(e->prefix), "nc%u #%llu empty %s =", core,
			 (unsigned long long)seq, e->dtype);
	} else {
		e->is_print = true;
		e->pipe = c == ALL_CASES - 1 ? 2 : 1;
		snprintf(e->prefix, sizeof(e->prefix), "nc%u #%llu: plain print on %s \"quoted\"\\\n",
			 core, (unsigned long long)seq, e->pipe == 2 ? "stderr" : "stdout");
	}
}

static void make_mixed(unsigned int core, uint64_t seq, uint64_t h, struct demo_event *e)
{
	int m;

	if (seq % 10 == 9) {
		e->is_print = true;
		if (seq % 5000 == 4999) {
			e->pipe = 2;
			snprintf(e->prefix, sizeof(e->prefix), "nc%u step %llu: warning: loss scale reduced\n",
				 core, (unsigned long long)(seq / 10));
		} else {
			snprintf(e->prefix, sizeof(e->prefix), "nc%u step %llu: done\n", core,
				 (unsigned long long)(seq / 10));
		}
		return;
	}
	m = (int)(h % NMIXED);
	set_dtype(e, mixed[m].dtype);
	e->ndim = mixed[m].ndim;
	memcpy(e->shape, mixed[m].shape, sizeof(mixed[m].shape));
	e->view = mixed[m].view;
	snprintf(e->prefix, sizeof(e->prefix), "nc%u step %llu: %s =", core,
		 (unsigned long long)(seq / 10), mixed[m].name);
}

void demo_event_make(int pattern, uint64_t seed, unsigned int core, uint64_t seq,
		     struct demo_event *e)
{
	uint64_t h = mix(seed ^ mix(((uint64_t)core << 48) ^ seq));

	memset(e, 0, sizeof(*e));
	e->pipe = 1;
	e->key = h;
	if (pattern == DEMO_ALL)
		make_all(core, seq, e);
	else
		make_mixed(core, seq, h, e);
	if (!e->is_print)
		finish(e);
}

/* n/64 with |n| <= 1000 is exact in every float type but bfloat16 */
static uint16_t half_bits(int n)
{
	uint16_t sign = n < 0 ? 0x8000 : 0;
	unsigned int a = (unsigned int)(n < 0 ? -n : n), e = 0;

	if (!a)
		return sign;
	while ((a >> (e + 1)) != 0)
		e++;
	return (uint16_t)(sign | (e + 9) << 10 | ((a << (10 - e)) & 0x3ff));
}

static void element(const struct demo_event *e, uint64_t i, uint8_t *dst)
{
	uint64_t h = mix(e->key + i);
	int n = (int)(h % 2001) - 1000;
	float f = (float)n / 64;
	double d = (double)n / 64;
	uint32_t u;
	uint16_t s;

	switch (e->kind) {
	case NPY_KIND_FLOAT:
		if (e->esz == 8)
			memcpy(dst, &d, 8);
		else if (e->esz == 4)
			memcpy(dst, &f, 4);
		else
			s = half_bits(n), memcpy(dst, &s, 2);
		return;
	case NPY_KIND_BFLOAT16: /* the top half of the float32 */
		memcpy(&u, &f, 4);
		s = (uint16_t)(u >> 16);
		memcpy(dst, &s, 2);
		return;
	case NPY_KIND_BOOL:
		*dst = h & 1;
		return;
	default:
		memcpy(dst, &h, e->esz); /* integers: the low bytes, any value */
	}
}

void demo_fill(const struct demo_event *e, void *dst)
{
	for (uint64_t i = 0; i < e->numel; i++)
		element(e, i, (uint8_t *)dst + i * e->esz);
}

/* Byte strides of the view and the offset of element [0, ..., 0]. */
static size_t view_layout(const struct demo_event *e, int64_t *st, int64_t *origin)
{
	int64_t esz = e->esz, n = (int64_t)e->ndim;
	size_t size = e->bytes;

	*origin = 0;
	switch (e->view) {
	case DEMO_TRANSPOSED:
		st[0] = esz;
		for (int64_t i = 1; i < n; i++)
			st[i] = st[i - 1] * (int64_t)e->shape[i - 1];
		break;
	case DEMO_STEP2:
		st[n - 1] = 2 * esz;
		for (int64_t i = n - 2; i >= 0; i--)
			st[i] = st[i + 1] * (int64_t)e->shape[i + 1];
		size = e->bytes * 2;
		break;
	default:
		st[n - 1] = esz;
		for (int64_t i = n - 2; i >= 0; i--)
			st[i] = st[i + 1] * (int64_t)e->shape[i + 1];
		if (e->view == DEMO_REVERSED) {
			*origin = st[0] * (int64_t)(e->shape[0] - 1);
			st[0] = -st[0];
		}
	}
	return size;
}

size_t demo_view_size(const struct demo_event *e)
{
	int64_t st[8], origin;

	if (e->view == DEMO_CONTIG)
		return e->bytes;
	return view_layout(e, st, &origin);
}

const void *demo_view_make(const struct demo_event *e, void *base, int64_t strides[8])
{
	uint64_t idx[8] = { 0 };
	int64_t origin;
	size_t size;
	uint8_t *b = base;

	if (e->view == DEMO_CONTIG) {
		demo_fill(e, base);
		return base;
	}
	size = view_layout(e, strides, &origin);
	memset(b, 0xa5, size); /* junk a wrong gather would pick up */
	for (uint64_t i = 0; i < e->numel; i++) {
		int64_t off = origin;

		for (uint32_t k = 0; k < e->ndim; k++)
			off += (int64_t)idx[k] * strides[k];
		element(e, i, b + off);
		for (int k = (int)e->ndim - 1; k >= 0; k--) {
			if (++idx[k] < e->shape[k])
				break;
			idx[k] = 0;
		}
	}
	return b + origin;
}

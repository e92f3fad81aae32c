/* SPDX-License-Identifier: MIT */
/*
 * The simulated runtime's events, a pure function of (pattern, seed, core,
 * sequence number): evs-demo emits them and `evs-demo --verify` regenerates
 * them to check a dump byte for byte.
 */
#ifndef EVS_TOOLS_DEMO_GEN_H
#define EVS_TOOLS_DEMO_GEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum demo_pattern {
	DEMO_MIXED = 0, /* realistic: activations, weights, masks, losses, prints */
	DEMO_ALL,       /* every dtype x ndim 0..8 x (contiguous, view), empty tensors, prints */
};

enum demo_view {
	DEMO_CONTIG = 0,
	DEMO_TRANSPOSED, /* Fortran order: the transpose of a C-contiguous array */
	DEMO_STEP2,      /* every other element of the last axis (x[..., ::2]) */
	DEMO_REVERSED,   /* first axis reversed (x[::-1]): a negative stride */
};

struct demo_event {
	bool is_print;
	char prefix[128];
	uint32_t pipe;
	char dtype[16];
	uint32_t esz;
	int kind;              /* enum npy_kind */
	uint32_t ndim;
	uint64_t shape[8];
	int view;
	uint64_t numel, bytes;
	uint64_t key;          /* seeds the element values */
};

int demo_pattern_parse(const char *s);
void demo_event_make(int pattern, uint64_t seed, unsigned int core, uint64_t seq,
		     struct demo_event *e);
/* The tensor in C order, as a dump must hold it (e->bytes bytes). */
void demo_fill(const struct demo_event *e, void *dst);

/* The strided view the producer hands to evs_producer__emit_tensor(): the
 * backing buffer's size, then the view into it (junk between elements). */
size_t demo_view_size(const struct demo_event *e);
const void *demo_view_make(const struct demo_event *e, void *base, int64_t strides[8]);

#endif

/* SPDX-License-Identifier: MIT */
/*
 * Copying payloads into the ring (ringcopy.c): memcpy() below
 * EVS_RING_COPY_STREAMING bytes; from there on, non-temporal stores that
 * leave the producer's caches alone (it will not read the payload again;
 * the consumer reads it on another core). Inline for the small ones.
 */
#ifndef EVS_RINGCOPY_H
#define EVS_RINGCOPY_H

#include <stddef.h>
#include <string.h>

#include "atomics.h"

/* From here on streaming wins; below it loses (docs/design-notes.md,
 * "Streaming stores"). */
#define EVS_RING_COPY_STREAMING (64 * 1024)

#if defined(__x86_64__)
void evs_ring_copy_streaming(void *dst, const void *src, size_t n);
#endif

static __always_inline void ring_copy(void *dst, const void *src, size_t n)
{
#if defined(__x86_64__)
	if (unlikely(n >= EVS_RING_COPY_STREAMING)) {
		evs_ring_copy_streaming(dst, src, n);
		return;
	}
#endif
	/* memcpy from NULL is undefined even for 0 bytes */
	if (n)
		memcpy(dst, src, n);
}

#endif

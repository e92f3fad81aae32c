/* SPDX-License-Identifier: MIT */
/* Copying payloads into the ring (ringcopy.c): inline for the small ones. */
#ifndef EVS_RINGCOPY_H
#define EVS_RINGCOPY_H

#include <string.h>

#include "internal.h"

#if defined(__x86_64__)
EVS_HIDDEN void evs_ring_copy_streaming(void *dst, const void *src, size_t n);
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

/* SPDX-License-Identifier: MIT */
/*
 * Copying a payload into the ring. Small payloads go through memcpy();
 * large ones bypass the producer's caches with non-temporal stores: the
 * producer never reads them again, and the consumer reads them on another
 * core, so a line read for ownership would only have to be pulled out of
 * the producer's cache again. Hand-written because glibc's memcpy() streams
 * only above a per-process threshold a library cannot set. Why from
 * 64 KiB, and the measurements: docs/design-notes.md, "Streaming stores".
 */
#include <string.h>

#include "layout.h"
#include "ringcopy.h"

#if defined(__x86_64__)
#include <emmintrin.h>

/* Four 16-byte streaming stores per cache line (SSE2 is in every x86-64),
 * after a head copied normally up to the first line boundary. */
void evs_ring_copy_streaming(void *dst, const void *src, size_t n)
{
	uint8_t *d = dst;
	const uint8_t *s = src;
	size_t head = (size_t)(-(uintptr_t)d & (EVS_CACHELINE - 1));

	memcpy(d, s, head);
	d += head;
	s += head;
	n -= head;
	for (; n >= EVS_CACHELINE; n -= EVS_CACHELINE, d += EVS_CACHELINE, s += EVS_CACHELINE) {
		__m128i a = _mm_loadu_si128((const __m128i *)s);
		__m128i b = _mm_loadu_si128((const __m128i *)(s + 16));
		__m128i c = _mm_loadu_si128((const __m128i *)(s + 32));
		__m128i e = _mm_loadu_si128((const __m128i *)(s + 48));

		_mm_stream_si128((__m128i *)d, a);
		_mm_stream_si128((__m128i *)(d + 16), b);
		_mm_stream_si128((__m128i *)(d + 32), c);
		_mm_stream_si128((__m128i *)(d + 48), e);
	}
	memcpy(d, s, n);
	/* streaming stores are not ordered by the release store that will
	 * publish the record (smp_store_release(&prod->prod_pos) in
	 * stream_publish(), producer.c), nor therefore by its acquire in
	 * consumer_fill(): this fence keeps them before it */
	nt_store_fence();
}
#endif

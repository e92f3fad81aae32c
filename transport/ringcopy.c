/* SPDX-License-Identifier: MIT */
/*
 * Copying a payload into the ring. Small payloads go through memcpy();
 * large ones bypass the producer's caches with non-temporal stores: the
 * producer never reads them again, and the consumer reads them on another
 * core. With memcpy() every line of a large payload is first read into the
 * producer's cache (for ownership), then pulled out of it by the consumer.
 * Measured on the 2-vCPU machines against the same build without streaming
 * (docs/benchmarks.md): 1 MiB zero-copy events 0.69-0.77x -> 0.84-1.03x a
 * memcpy's bandwidth, 64 KiB ones +5 %; streaming 1 KiB copies made those
 * events 4x slower, hence the threshold.
 *
 * Hand-written, not glibc's memcpy(): glibc switches to non-temporal stores
 * only above x86_non_temporal_threshold, three quarters of the shared cache
 * (24 MiB with a 32 MiB L3), and that is set once per process from
 * GLIBC_TUNABLES, which a library cannot change for its own copies.
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
	 * producer.c, whose acquire in the consumer they must not pass) */
	nt_store_fence();
}
#endif

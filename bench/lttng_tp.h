/* SPDX-License-Identifier: MIT */
/*
 * The LTTng-UST tracepoint provider of evs-bench: one event carrying the
 * same 64 bytes as an evstream record of the benchmark. A fixed-size
 * array of bytes, so that the probe copies it the way evstream's emit
 * does and nothing else (no length to record, no text check).
 *
 * bench/lttng_tp.c makes the probes (a shared object linked with
 * liblttng-ust, loaded when the peer starts); bench/lttng_peer.c holds
 * the call site. Compiled with -Ibench: lttng/tracepoint-event.h includes
 * this file again by the name below.
 */
#undef LTTNG_UST_TRACEPOINT_PROVIDER
#define LTTNG_UST_TRACEPOINT_PROVIDER evs_bench

#undef LTTNG_UST_TRACEPOINT_INCLUDE
#define LTTNG_UST_TRACEPOINT_INCLUDE "lttng_tp.h"

#if !defined(EVS_BENCH_LTTNG_TP_H) || defined(LTTNG_UST_TRACEPOINT_HEADER_MULTI_READ)
#define EVS_BENCH_LTTNG_TP_H

#include <stdint.h>
#include <lttng/tracepoint.h>

LTTNG_UST_TRACEPOINT_EVENT(evs_bench, event64,
	LTTNG_UST_TP_ARGS(const uint8_t *, payload),
	LTTNG_UST_TP_FIELDS(
		lttng_ust_field_array(uint8_t, payload, payload, 64)
	)
)

#endif

#include <lttng/tracepoint-event.h>

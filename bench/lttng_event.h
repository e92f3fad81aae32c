/* SPDX-License-Identifier: MIT */
/* The event evstream and LTTng-UST both carry in evs-bench. */
#ifndef EVS_BENCH_LTTNG_EVENT_H
#define EVS_BENCH_LTTNG_EVENT_H

/* Both sides carry the same 64-byte payloads. */
#define LT_PAYLOAD 64
/* The provider and event of bench/lttng_tp.h, as `lttng enable-event` names them. */
#define LT_EVENT "evs_bench:event64"

#endif

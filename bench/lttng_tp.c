/* SPDX-License-Identifier: MIT */
/* The probes of bench/lttng_tp.h: build/evs-bench-lttng-tp.so. */
#define LTTNG_UST_TRACEPOINT_CREATE_PROBES
#include "lttng_tp.h"

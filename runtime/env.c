/* SPDX-License-Identifier: MIT */
/* The runtime's environment: NEURON_RT_DEBUG_STREAM_BUFFER_SIZE (env.h). */
#include "env.h"
#include "envnum.h"
#include "layout.h"
#include "evstream/tensor.h"

_Static_assert(EVS_RUNTIME_EVENT_BYTES == EVS_RECORD_HDR + EVS_TENSOR_FIXED_BYTES,
	       "a default ring is sized for tensor-read records");

int evs_runtime_buffer_events(uint64_t max, uint64_t *events)
{
	return evs_env_u64(EVS_RUNTIME_BUFFER_SIZE_VAR, 1, max, "an event count", events);
}

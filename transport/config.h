/* SPDX-License-Identifier: MIT */
/* Limits and names from options and the environment (config.c). */
#ifndef EVS_CONFIG_H
#define EVS_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "evstream/evstream.h"
#include "clock.h"

#define EVS_NAME_MAX 64

/* The options struct sz rule: accept smaller (older) structs; a larger one
 * only if the bytes this library does not know are zero. */
bool evs_opts_valid(const void *opts, size_t user_sz, size_t known_sz);
#define OPTS_VALID(o, type) evs_opts_valid((o), (o) ? (o)->sz : 0, sizeof(struct type))
#define OPTS_HAS(o, field) \
	((o) && (o)->sz >= offsetof(__typeof__(*(o)), field) + sizeof((o)->field))
#define OPTS_GET(o, field, def) (OPTS_HAS(o, field) ? (o)->field : (def))

struct evs_config {
	uint64_t ring_bytes;   /* requested, before rounding to the page size */
	uint64_t max_events;
	int hugepages;         /* EVS_HUGEPAGES_AUTO / ON / OFF */
	enum evs_clock_mode clock; /* EVSTREAM_TSC */
	bool note_ring;        /* sized by EVSTREAM_RING_BYTES: say if it holds fewer events */
	bool events_named;     /* ... than the event limit the user named */
};

int evs_config_resolve(const struct evs_producer_opts *opts, struct evs_config *cfg);
/* Once the streams are made: a stderr line when the ring as made (ring_bytes,
 * rounded to the page size) holds fewer tensor-read events than the limit. */
void evs_config_note_ring(const struct evs_config *cfg, uint64_t ring_bytes);
int evs_runtime_dir(const char *opt_dir, char *buf, size_t len);
int evs_check_name(const char *name);
/* EVSTREAM_MEMBARRIER: *use false for off; -EINVAL naming a bad value. */
int evs_env_membarrier(bool *use);
/* EVSTREAM_CATCHUP_NS: how long a consumer that caught up with a busy
 * producer stays off its lines (consumer.c); -EINVAL naming a bad value. */
int evs_env_catchup_ns(uint64_t *ns);
bool evs_runtime_dir_explicit(const char *opt_dir);

#endif

/* SPDX-License-Identifier: MIT */
/* Limits and names from options and the environment, with errors that name
 * the bad value and what is allowed. */
#include <errno.h>
#include <stdbool.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "atomics.h"
#include "config.h"
#include "env.h"
#include "envnum.h"
#include "errors.h"
#include "layout.h"

#define MIN_RING_BYTES 4096ULL
#define MAX_EVENTS_CAP (1ULL << 32)

static uint64_t phys_mem_bytes(void)
{
	long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);

	return pages > 0 && psz > 0 ? (uint64_t)pages * (uint64_t)psz : (1ULL << 40);
}

/* EVSTREAM_MEMBARRIER: auto (default: where the kernel allows it) or off
 * (a fence per commit instead of membarrier() wakeups). */
int evs_env_membarrier(bool *use)
{
	const char *v = getenv("EVSTREAM_MEMBARRIER");

	*use = true;
	if (!v || !strcasecmp(v, "auto"))
		return 0;
	if (!strcasecmp(v, "off")) {
		*use = false;
		return 0;
	}
	return evs_fail(EINVAL, "EVSTREAM_MEMBARRIER='%s' is not allowed: use auto or off", v);
}

/* EVSTREAM_CATCHUP_NS: 0 (never wait) to 1 ms; the default is what
 * evs-bench found to lift the hand-over (docs/design-notes.md). */
#define CATCHUP_NS_DEFAULT 2000u
#define CATCHUP_NS_MAX     1000000u

int evs_env_catchup_ns(uint64_t *ns)
{
	int err = evs_env_u64("EVSTREAM_CATCHUP_NS", 0, CATCHUP_NS_MAX, "nanoseconds", ns);

	if (err == 0)
		*ns = CATCHUP_NS_DEFAULT;
	return err < 0 ? err : 0;
}

/* EVSTREAM_TSC: auto (default) or off. */
static int clock_mode_from_env(enum evs_clock_mode *mode)
{
	const char *v = getenv("EVSTREAM_TSC");

	*mode = EVS_CLOCK_AUTO;
	if (!v || !strcasecmp(v, "auto"))
		return 0;
	if (!strcasecmp(v, "off")) {
		*mode = EVS_CLOCK_GETTIME;
		return 0;
	}
	return evs_fail(EINVAL, "EVSTREAM_TSC='%s' is not allowed: use auto or off", v);
}

/* A ring the user sized by bytes that holds fewer of the runtime's events
 * than its event limit: the bytes run out first. Said once per process,
 * naming both variables, since that is what the user may not expect; with
 * the ring's size as made (rounded up to the page size, 2 MiB with huge
 * pages), which is what holds the events. */
void evs_config_note_ring(const struct evs_config *cfg, uint64_t ring_bytes)
{
	static _Atomic bool said;
	const char *ring_env = getenv("EVSTREAM_RING_BYTES");

	if (!cfg->note_ring || !ring_env || ring_bytes / EVS_RUNTIME_EVENT_BYTES >= cfg->max_events)
		return;
	/* once per process, whichever thread makes a ring first: the xchg
	 * pairs with itself in another thread; the first to set it says it */
	if (xchg(&said, true))
		return;
	fprintf(stderr, "evstream: EVSTREAM_RING_BYTES=%s (a ring of %llu bytes, rounded up to the "
		"page size) holds %llu tensor-read events of %llu bytes, fewer than %s%llu events%s: "
		"the bytes run out first (events beyond them drop as ring_full)\n", ring_env,
		(unsigned long long)ring_bytes,
		(unsigned long long)(ring_bytes / EVS_RUNTIME_EVENT_BYTES),
		(unsigned long long)EVS_RUNTIME_EVENT_BYTES,
		cfg->events_named ? EVS_RUNTIME_BUFFER_SIZE_VAR "=" : "the ",
		(unsigned long long)cfg->max_events,
		cfg->events_named ? "" : " of " EVS_RUNTIME_BUFFER_SIZE_VAR "'s default");
}

static int hugepages_from_env(int *mode)
{
	const char *hp = getenv("EVSTREAM_HUGEPAGES");

	if (!hp)
		return 0;
	if (!strcasecmp(hp, "auto"))
		*mode = EVS_HUGEPAGES_AUTO;
	else if (!strcasecmp(hp, "on"))
		*mode = EVS_HUGEPAGES_ON;
	else if (!strcasecmp(hp, "off"))
		*mode = EVS_HUGEPAGES_OFF;
	else
		return evs_fail(EINVAL, "EVSTREAM_HUGEPAGES='%s' is not allowed: use auto, on or off", hp);
	return 0;
}

/*
 * Limits of the producer's streams: options first, then the environment,
 * then the defaults. The event limit defaults to the runtime's (64K
 * events); the byte size to what holds that many of the runtime's
 * smallest tensor-read events, so that the event count is real unless the
 * user sized the ring in bytes.
 */
int evs_config_resolve(const struct evs_producer_opts *opts, struct evs_config *cfg)
{
	uint64_t mem = phys_mem_bytes();
	uint64_t max_ring = mem / 2;
	/* every unconsumed event needs at least a 64-byte record header */
	uint64_t max_events = mem / 2 / EVS_RECORD_HDR;
	bool ring_set = false, events_set;
	int err;

	if (max_events > MAX_EVENTS_CAP)
		max_events = MAX_EVENTS_CAP;
	cfg->max_events = EVS_RUNTIME_BUFFER_EVENTS;
	cfg->hugepages = EVS_HUGEPAGES_AUTO;
	cfg->note_ring = cfg->events_named = false;

	err = evs_env_u64("EVSTREAM_RING_BYTES", MIN_RING_BYTES, max_ring, "a byte count",
			  &cfg->ring_bytes);
	if (err < 0)
		return err;
	ring_set = err > 0;
	err = evs_runtime_buffer_events(max_events, &cfg->max_events);
	if (err < 0)
		return err;
	events_set = err > 0;
	err = clock_mode_from_env(&cfg->clock);
	if (err < 0)
		return err;
	err = hugepages_from_env(&cfg->hugepages);
	if (err < 0)
		return err;

	/* explicit options win over the environment */
	if (OPTS_GET(opts, max_events, 0)) {
		cfg->max_events = opts->max_events;
		if (cfg->max_events > max_events)
			return evs_fail(EINVAL, "max_events=%llu is out of range: allowed is 1 to %llu",
					(unsigned long long)cfg->max_events, (unsigned long long)max_events);
	}
	if (OPTS_GET(opts, ring_bytes, 0)) {
		cfg->ring_bytes = opts->ring_bytes;
		if (cfg->ring_bytes < MIN_RING_BYTES || cfg->ring_bytes > max_ring)
			return evs_fail(EINVAL, "ring_bytes=%llu is out of range: allowed is %llu to %llu",
					(unsigned long long)cfg->ring_bytes, MIN_RING_BYTES,
					(unsigned long long)max_ring);
	} else if (!ring_set) {
		if (cfg->max_events > max_ring / EVS_RUNTIME_EVENT_BYTES)
			return evs_fail(EINVAL, "%llu events of %llu bytes need more than %llu bytes per "
					"stream (half of this machine's memory): ask for fewer events (%s, "
					"max_events) or set EVSTREAM_RING_BYTES",
					(unsigned long long)cfg->max_events,
					(unsigned long long)EVS_RUNTIME_EVENT_BYTES,
					(unsigned long long)max_ring, EVS_RUNTIME_BUFFER_SIZE_VAR);
		cfg->ring_bytes = cfg->max_events * EVS_RUNTIME_EVENT_BYTES;
		if (cfg->ring_bytes < MIN_RING_BYTES)
			cfg->ring_bytes = MIN_RING_BYTES;
	} else {
		/* said once the ring is made: evs_config_note_ring() */
		cfg->note_ring = true;
		cfg->events_named = events_set || OPTS_GET(opts, max_events, 0);
	}
	if (OPTS_GET(opts, hugepages, 0)) {
		int h = opts->hugepages;

		if (h != EVS_HUGEPAGES_AUTO && h != EVS_HUGEPAGES_ON && h != EVS_HUGEPAGES_OFF)
			return evs_fail(EINVAL, "hugepages=%d is not allowed: use EVS_HUGEPAGES_AUTO, _ON or _OFF", h);
		cfg->hugepages = h;
	}
	return 0;
}

int evs_check_name(const char *name)
{
	size_t n = strlen(name);

	if (n == 0 || n > EVS_NAME_MAX || name[0] == '.')
		goto bad;
	for (size_t i = 0; i < n; i++) {
		char ch = name[i];

		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
		      ch == '-' || ch == '_' || ch == '.'))
			goto bad;
	}
	return 0;
bad:
	return evs_fail(EINVAL, "producer name '%s' is not allowed: use 1 to %d of [A-Za-z0-9._-], "
			"not starting with '.'", name, EVS_NAME_MAX);
}

/* opts dir, then $EVSTREAM_RUNTIME_DIR, $XDG_RUNTIME_DIR/evstream, /tmp/evstream-UID */
int evs_runtime_dir(const char *opt_dir, char *buf, size_t len)
{
	const char *env;
	int n;

	if (opt_dir && *opt_dir)
		n = snprintf(buf, len, "%s", opt_dir);
	else if ((env = getenv("EVSTREAM_RUNTIME_DIR")) && *env)
		n = snprintf(buf, len, "%s", env);
	else if ((env = getenv("XDG_RUNTIME_DIR")) && *env)
		n = snprintf(buf, len, "%s/evstream", env);
	else
		n = snprintf(buf, len, "/tmp/evstream-%u", (unsigned)geteuid());
	if (n < 0 || (size_t)n >= len)
		return evs_fail(ENAMETOOLONG, "runtime directory name is too long (at most %zu bytes)", len - 1);
	return 0;
}

/* Named by the caller or the user rather than derived from who we are: the
 * one case where a consumer may trust a directory of another uid. */
bool evs_runtime_dir_explicit(const char *opt_dir)
{
	const char *env = getenv("EVSTREAM_RUNTIME_DIR");

	return (opt_dir && *opt_dir) || (env && *env);
}

bool evs_opts_valid(const void *opts, size_t user_sz, size_t known_sz)
{
	const unsigned char *b = opts;

	if (!opts)
		return true;
	if (user_sz < sizeof(size_t))
		return false;
	for (size_t i = known_sz; i < user_sz; i++)
		if (b[i])
			return false;
	return true;
}

/* SPDX-License-Identifier: MIT */
/*
 * USDT probes (provider "evstream"), each guarded by its own semaphore.
 *
 * A tracer that attaches (bpftrace, evs-drops, perf) increments the
 * semaphore through the kernel's uprobe reference counter; while it is 0 the
 * probe costs one load and one predictable branch, and its arguments are
 * not even computed. The semaphores live in .probes, as <sys/sdt.h> expects,
 * and are hidden: tracers find them through the .note.stapsdt notes.
 *
 * Probes (see docs/drop-stats.md):
 *   drop(core, events, bytes, cause, total, first)  a batch of drops
 *   connect(core, name)      a consumer attached to stream core
 *   disconnect(core, name)   it went away
 *   wakeup(core, wakeups)    the producer wrote the consumer's eventfd
 *
 * Built without <sys/sdt.h> (or with -DEVS_NO_PROBES) the probes vanish.
 */
#ifndef EVS_PROBES_H
#define EVS_PROBES_H

#if !defined(EVS_NO_PROBES) && defined(__has_include)
#if __has_include(<sys/sdt.h>)
#define EVS_HAVE_PROBES 1
#endif
#endif

#ifdef EVS_HAVE_PROBES
#define _SDT_HAS_SEMAPHORES 1
#include <sys/sdt.h>

#include "atomics.h"

#define EVS_PROBE_SEMA(name) evstream_##name##_semaphore
#define EVS_PROBE_DEFINE(name) \
	unsigned short EVS_PROBE_SEMA(name) __attribute__((section(".probes"), used))
#define EVS_PROBE_DECLARE(name) \
	extern unsigned short EVS_PROBE_SEMA(name) __attribute__((visibility("hidden")))
/* relaxed: the kernel changes it at attach/detach; a stale read only
 * moves the first or last reported batch by one call */
#define EVS_PROBE_ENABLED(name) \
	unlikely(READ_ONCE_PLAIN(&EVS_PROBE_SEMA(name)))
#define EVS_PROBE2(name, a, b) STAP_PROBE2(evstream, name, a, b)
#define EVS_PROBE6(name, a, b, c, d, e, f) STAP_PROBE6(evstream, name, a, b, c, d, e, f)
#else
#define EVS_PROBE_DEFINE(name) extern int evs_probe_unused_##name
#define EVS_PROBE_DECLARE(name) extern int evs_probe_unused_##name
#define EVS_PROBE_ENABLED(name) 0
#define EVS_PROBE2(name, a, b) do { (void)(a); (void)(b); } while (0)
#define EVS_PROBE6(name, a, b, c, d, e, f) do { } while (0)
#endif

EVS_PROBE_DECLARE(drop);
EVS_PROBE_DECLARE(connect);
EVS_PROBE_DECLARE(disconnect);
EVS_PROBE_DECLARE(wakeup);

/* Drops are reported in batches of at most this many events: a hit uprobe
 * costs 1.1-1.3 us on a tsc host and ~7 us on a kvm-clock one, which over a
 * batch is 0.3 and 1.7 ns a drop (docs/design-notes.md, "Drop batching"). */
#define EVS_DROP_BATCH 4096u

#endif

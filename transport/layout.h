/* SPDX-License-Identifier: MIT */
/*
 * The shared-memory ABI of one stream (version EVS_ABI_MAJOR.EVS_ABI_MINOR).
 * See docs/architecture.md for the full description.
 *
 *  control memfd (4 KiB)                          data memfd (ring_bytes)
 *  +--------------------------------------+        +----------------------+
 *  | page 0: written by the producer only |        | records, 8-aligned:  |
 *  |   line 0  identity (magic, version,  |        | [64 B header|payload]|
 *  |           sizes, core, flags)        |        | ...                  |
 *  |   line 1  prod_pos, committed        |        +----------------------+
 *  |                                      |   mapped twice back to back in
 *  |   line 2+ drop counters, wakeups,    |   each process, so a record that
 *  |           closed                     |   runs past the end continues in
 *  +--------------------------------------+   the second copy: every payload
 *  consumer memfd (4 KiB)                      is contiguous.
 *  +--------------------------------------+
 *  | page 1: written by the consumer      |   Consumers get the control and
 *  |   line 0  cons_pos, released         |   data memfds read-only, the
 *  |   line 2  wait (consumer sets, the   |   consumer memfd read-write; each
 *  |           producer takes)            |   process maps page 1 right after
 *  +--------------------------------------+   page 0.
 *
 * Each connection gets a new consumer memfd (attach.c), holding where the
 * consumer starts. Positions are free-running 64-bit byte counts; offset =
 * pos % ring_bytes. A reader treats everything the other side wrote as
 * untrusted.
 */
#ifndef EVS_LAYOUT_H
#define EVS_LAYOUT_H

#include <stdint.h>
#include <stddef.h>
#include <stdatomic.h>

#define EVS_SHM_MAGIC      0x314d52545356452eULL /* ".EVSTRM1" little-endian */
#define EVS_ABI_MAJOR      2 /* 2: the consumer's page in a memfd of its own */
#define EVS_ABI_MINOR      1 /* 1: a record header's bytes 32..39 hold its position */
#define EVS_CTL_PAGE       4096u
#define EVS_CTL_BYTES      (2 * EVS_CTL_PAGE) /* both pages, as mapped */
#define EVS_CACHELINE      64
#define EVS_RECORD_ALIGN   8u
#define EVS_RECORD_HDR     64u
/* Where in its header the producer writes a record's position: for its
 * own check of a position a consumer leaves (attach.c); readers ignore it */
#define EVS_RECORD_POS_AT  32u

#define EVS_SHM_F_HUGETLB  0x1u

/* prod.state bits */
#define EVS_STATE_CLOSED   0x1u

/* cons.wait values */
#define EVS_WAIT_AWAKE     0u
#define EVS_WAIT_ARMED     1u

struct evs_shm_prod {
	/* line 0: written once before the stream is shared */
	uint64_t magic;
	uint16_t abi_major;
	uint16_t abi_minor;
	uint32_t hdr_bytes;        /* EVS_CTL_BYTES */
	uint64_t ring_bytes;       /* data area size, a multiple of page_size */
	uint64_t max_events;
	uint64_t page_size;
	uint32_t core;
	uint32_t flags;            /* EVS_SHM_F_* */
	uint32_t producer_pid;
	uint8_t pad0[EVS_CACHELINE - 52];

	/* line 1: hot, producer-written on every commit */
	_Atomic uint64_t prod_pos;
	_Atomic uint64_t committed;
	uint8_t pad1[EVS_CACHELINE - 16];

	/* line 2..: slow counters, producer-written on drops and wakeups */
	_Atomic uint64_t dropped_events[4];
	_Atomic uint64_t dropped_bytes[4];
	_Atomic uint64_t wakeups;
	_Atomic uint32_t state;    /* EVS_STATE_* */
	uint32_t pad2;
};

struct evs_shm_cons {
	/* line 0: consumer-written on every release */
	_Atomic uint64_t cons_pos;
	_Atomic uint64_t released;
	/* the producer reads wait at every commit: not in the 128-byte block
	 * of the line the consumer writes at every release, which a CPU's
	 * adjacent-line prefetch would then pull over with it */
	uint8_t pad0[2 * EVS_CACHELINE - 16];
	/* line 2: the consumer arms it before sleeping, the producer takes it */
	_Atomic uint32_t wait;
	uint8_t pad1[EVS_CACHELINE - 4];
};

_Static_assert(offsetof(struct evs_shm_prod, prod_pos) == 64, "prod line 1");
_Static_assert(offsetof(struct evs_shm_prod, dropped_events) == 128, "prod line 2");
_Static_assert(sizeof(struct evs_shm_prod) <= EVS_CTL_PAGE, "prod page");
_Static_assert(offsetof(struct evs_shm_cons, wait) == 128, "cons line 2, its own 128-byte block");
_Static_assert(sizeof(struct evs_shm_cons) <= EVS_CTL_PAGE, "cons page");

static inline uint64_t evs_record_len(uint64_t data_size)
{
	return EVS_RECORD_HDR + ((data_size + EVS_RECORD_ALIGN - 1) & ~(uint64_t)(EVS_RECORD_ALIGN - 1));
}

#endif

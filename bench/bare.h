/* SPDX-License-Identifier: MIT */
/*
 * The bare SPSC ring: the limit of the design, with nothing but what moving
 * a record needs. Records are evstream's (a 64-byte header and the payload,
 * 8-aligned) in an area with a record's worth of slack past its end, so
 * that none wraps. Each side keeps a running offset and a cached copy of
 * the other side's position, as evstream does, and publishes its own
 * position after every record. bare.c runs it on two CPUs, cost.c on one.
 *
 * Its timestamped form stores one raw TSC read per record in the header:
 * the least a producer of timestamped records costs, which cost.c times
 * next to evstream's default producer (one clock read per record), and
 * which bare.c runs on two CPUs with evstream's catch-up pause in the
 * reader (bare_peek_paced()): the most a ring can do that hands over
 * timestamped records the way evstream's default does.
 */
#ifndef EVS_BENCH_BARE_H
#define EVS_BENCH_BARE_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "atomics.h"
#include "bench.h"
#include "evstream/evstream.h"
#include "evstream-private/introspect.h"

struct bare_ring {
	uint8_t *area;
	uint64_t cap;
	_Atomic uint64_t prod_pos __attribute__((aligned(128)));
	_Atomic uint64_t cons_pos __attribute__((aligned(128)));
};

struct bare_side {
	uint64_t pos, off, other; /* own position, its offset, the other's last seen */
};

static inline uint64_t bare_rec_len(uint64_t size)
{
	return 64 + ((size + 7) & ~(uint64_t)7);
}

/* Producer: false when the ring is full. A constant stamp: the compiler
 * leaves the clock read out of the untimestamped ring altogether. */
static __attribute__((always_inline)) inline bool
bare_push_stamped(struct bare_ring *b, struct bare_side *p, const void *src, uint64_t size,
		  uint64_t seq, bool stamp)
{
	uint64_t len = bare_rec_len(size);
	uint64_t *h;

	if (p->pos + len - p->other > b->cap) {
		/* pairs with smp_store_release(&b->cons_pos) in bare_release():
		 * the consumer is done reading the records below it */
		p->other = smp_load_acquire(&b->cons_pos);
		if (p->pos + len - p->other > b->cap)
			return false;
	}
	h = (uint64_t *)(b->area + p->off);
	evs__ring_copy(h + 8, src, size); /* evstream's copy: the same bytes the same way */
	h[0] = size;
	h[1] = 1;
	h[2] = seq;
	if (stamp)
		h[3] = bench_stamp();
	p->pos += len;
	p->off += len;
	if (p->off >= b->cap)
		p->off -= b->cap;
	/* pairs with smp_load_acquire(&b->prod_pos) in bare_peek(): the
	 * record is complete before its end is visible */
	smp_store_release(&b->prod_pos, p->pos);
	return true;
}

static inline bool bare_push(struct bare_ring *b, struct bare_side *p, const void *src,
			     uint64_t size, uint64_t seq)
{
	return bare_push_stamped(b, p, src, size, seq, false);
}

/* Consumer: the next record's header, or NULL when the ring is empty. */
static inline const uint8_t *bare_peek(struct bare_ring *b, struct bare_side *c)
{
	if (c->pos == c->other) {
		/* pairs with smp_store_release(&b->prod_pos) in
		 * bare_push_stamped(): records below it are complete */
		c->other = smp_load_acquire(&b->prod_pos);
		if (c->pos == c->other)
			return NULL;
	}
	return b->area + c->off;
}

/*
 * The consumer's catch-up pause of evstream (transport/consumer.c) on the
 * bare ring, for the timestamped limit: when a look found records after
 * fewer than EVS__CATCHUP_QUIET_LOOKS empty ones (records come faster
 * than it looks), the next look waits pause_ns first, touching no shared
 * memory; a look that finds nothing, or less than EVS__CATCHUP_MIN_BYTES
 * after a pause, ends the spell.
 */
struct bare_pace {
	uint64_t pause_ns;
	bool following;
	int quiet_looks;
};

static inline const uint8_t *bare_peek_paced(struct bare_ring *b, struct bare_side *c,
					     struct bare_pace *pc)
{
	bool paused = pc->following;
	const uint8_t *r;

	if (c->pos != c->other)
		return b->area + c->off;
	if (paused)
		bench_spin_until(cli_now_ns() + pc->pause_ns);
	r = bare_peek(b, c);
	if (!r) {
		pc->following = false;
		if (pc->quiet_looks < EVS__CATCHUP_QUIET_LOOKS)
			pc->quiet_looks++;
		return NULL;
	}
	pc->following = paused ? c->other - c->pos >= EVS__CATCHUP_MIN_BYTES
			       : pc->quiet_looks < EVS__CATCHUP_QUIET_LOOKS;
	pc->quiet_looks = 0;
	return r;
}

static inline void bare_release(struct bare_ring *b, struct bare_side *c, uint64_t size)
{
	uint64_t len = bare_rec_len(size);

	c->pos += len;
	c->off += len;
	if (c->off >= b->cap)
		c->off -= b->cap;
	/* pairs with smp_load_acquire(&b->cons_pos) in bare_push_stamped():
	 * we are done reading the records below cons_pos */
	smp_store_release(&b->cons_pos, c->pos);
}

#endif

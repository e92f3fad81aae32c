/* SPDX-License-Identifier: MIT */
/*
 * The consumer's private state. The hot part is read and written by the
 * consumer thread in consumer.c; attach.c fills it in when it attaches
 * (maps and checks the shared memory) and tears it down.
 */
#ifndef EVS_CONSUMER_H
#define EVS_CONSUMER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "layout.h"
#include "shm.h"

struct evs_stream;

/* Records found after fewer empty looks than this come faster than the
 * consumer looks: it pauses before its next look (consumer.c). */
#define EVS_CATCHUP_QUIET_LOOKS 8
/* A look after a pause that finds fewer bytes than this says the producer
 * is not that busy (at 1 M/s, a 2 us pause finds two records): no more
 * pauses until records come faster than the consumer looks again. */
#define EVS_CATCHUP_MIN_BYTES 2048
/* How long prepare_wait waits for a kick the producer has taken the word
 * for but not yet written (consumer_await_kick()): its eventfd write,
 * normally microseconds; longer only when the producer is preempted. */
#define EVS_KICK_LANDING_MS 1

struct evs_consumer {
	/* Hot. */
	uint64_t cons_pos;
	uint64_t cons_off;
	uint64_t prod_cache;
	uint64_t released;
	uint64_t cap;
	uint64_t peek_len;        /* length of the oldest handed-out record (held >= 1) */
	uint64_t held;            /* records handed out and not released */
	uint64_t read_pos;        /* after the last handed-out record, while held > 1 */
	uint64_t read_off;        /* read_pos % cap */
	const uint8_t *data;
	const struct evs_shm_prod *prod;
	struct evs_shm_cons *cons;
	int broken;               /* sticky -EBADMSG */
	/* Records came faster than we looked: the next look that would find
	 * the ring empty waits catchup_ns first (consumer.c, consumer_catch_up()). */
	bool following;
	uint32_t quiet_looks;     /* empty looks since records were found, at most
				   * EVS_CATCHUP_QUIET_LOOKS */
	uint64_t catchup_ns;      /* 0: never wait */
	uint64_t catchup_pauses;
	/* Lengths of the held records after the oldest, oldest first
	 * (evs_consumer__peek_next()); a ring of held_cap entries. */
	uint64_t *held_len;
	size_t held_head, held_cap;

	/* Wakeup protocol state; see evs_consumer__prepare_wait(). */
	bool armed;
	bool kick_pending;
	bool kick_awaited;         /* waited once for that kick to land */
	int kick_landing_ms;       /* how long, at most (EVS_KICK_LANDING_MS) */
	bool gone;                /* the producer socket hung up */
	bool membarrier;          /* arm with membarrier() instead of a fence */
	uint64_t arms;
	uint64_t empty_peeks;

	int efd;
	int sock;                 /* -1 in process */
	int wait_fd;              /* what evs_consumer__fd() hands out: efd in
				   * process, else an epoll set of efd and sock */
	unsigned int core;
	struct evs_map map;
	struct evs_stream *local; /* in-process producer stream, under the registry lock */
	/* What made the stream broken, given to evs_errmsg() by every call
	 * that answers -EBADMSG (the message is per thread, the verdict not). */
	char broken_why[192];
};

/* Right after attaching: make the fd readable if records are already
 * there (consumer.c). */
void evs_consumer_arm_at_start(struct evs_consumer *c);
/* The debug-stream API's read: the oldest record's header to hdr (64
 * bytes) and its payload to memory from alloc(), released (consumer.c). */
int evs_consumer_take(struct evs_consumer *c, void *hdr, void **payload, void *(*alloc)(size_t));

#endif

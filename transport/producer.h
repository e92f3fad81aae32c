/* SPDX-License-Identifier: MIT */
/*
 * The producer's private state: one struct evs_stream per core, in the
 * producer's own memory (the shared part is in layout.h). Written by the
 * core's producer thread (producer.c, drop.c), made and freed by
 * lifecycle.c, attached to consumers by attach.c and server.c.
 */
#ifndef EVS_PRODUCER_H
#define EVS_PRODUCER_H

#include <stdbool.h>
#include <stdint.h>
#include <stdatomic.h>
#include <sys/types.h>

#include "evstream/evstream.h"
#include "atomics.h"
#include "clock.h"
#include "config.h"
#include "layout.h"
#include "shm.h"

/* Deferred records that share one clock read at most (producer.c). */
#define EVS_UNSTAMPED_MAX 64

struct evs_consumer;
struct evs_server;

struct evs_stream {
	/* Hot fields, touched by the producer thread only. */
	uint64_t prod_pos;        /* private copy of prod->prod_pos */
	uint64_t prod_off;        /* prod_pos % cap */
	uint64_t room_end;        /* records may end up to here (position) */
	uint64_t events_end;      /* committed may grow up to here */
	/* The consumer's words as last accepted (clamped), written by the
	 * producer thread only; atomic because attaching the next consumer
	 * reads them from another thread (attach.c). */
	_Atomic uint64_t cons_cache;
	_Atomic uint64_t released_cache;
	/* The last look that found the ring full: for a record of full_len
	 * bytes, with the consumer's words as read then (raw). While they
	 * stay so, a record as long or longer is full too (producer.c,
	 * stream_still_full()); full_len 0: no such look. */
	uint64_t full_len;
	uint64_t full_cons;
	uint64_t full_released;
	uint64_t committed;
	uint64_t produced;
	uint64_t cap;
	uint64_t max_events;
	uint8_t *data;
	struct evs_shm_prod *prod;
	struct evs_shm_cons *cons;
	uint64_t resv_len;        /* record length of the open reservation, 0: none */
	uint64_t resv_size;
	uint32_t resv_type;
	bool timestamps;
	/* Deferred records sealed since the last clock read, waiting for
	 * the timestamp their publication gives them (producer.c). */
	uint64_t unstamped;
	struct evs_clock clock;   /* the timestamps' (clock.h) */
	uint64_t commit_end;      /* ring bytes with memory committed, from 0 */
	uint64_t commit_retry_ns; /* a failed commit: no new try before (monotonic), else 0 */
	int efd;
	/* 1: full fence after publishing; 0: the consumer uses membarrier().
	 * Set by whoever attaches a consumer, before active. */
	_Atomic int fence;

	/* Set by whoever attaches a consumer; read by the producer on emit. */
	_Atomic int active __attribute__((aligned(EVS_CACHELINE)));
	_Atomic int claimed;      /* one consumer per stream */

	/* Drop accounting: producer thread only; see drop.c. */
	uint64_t dropped_events[EVS_DROP_CAUSE_COUNT] __attribute__((aligned(EVS_CACHELINE)));
	uint64_t dropped_bytes[EVS_DROP_CAUSE_COUNT];
	uint64_t wakeups;
	/* Drop run and the batch of it not yet reported to the drop
	 * tracepoint; see drop.c. */
	uint64_t burst_events;    /* drops since the last accepted event */
	int burst_cause;          /* cause of the batch; it has one */
	uint64_t batch_events0;   /* dropped_events[burst_cause] at the batch's start */
	uint64_t batch_bytes0;    /* dropped_bytes[burst_cause] at the batch's start */
	/* Where the unstamped deferred records' headers are: kept, not found
	 * by walking the records, whose sizes would make a chain of loads. */
	uint64_t unstamped_off[EVS_UNSTAMPED_MAX];

	/* Cold. */
	unsigned int core;
	struct evs_backing backing;
	struct evs_map map;
	int conn_fd;                   /* remote consumer's socket (server thread) */
	struct evs_consumer *local;    /* in-process consumer, under the registry lock */
	struct evs_producer *owner;
} __attribute__((aligned(EVS_CACHELINE)));

struct evs_producer {
	char *name;                /* NULL: in-process only */
	unsigned int ncores;
	struct evs_stream *streams;
	struct evs_config cfg;
	struct evs_server *server;
	bool membarrier;           /* registered for MEMBARRIER_CMD_GLOBAL_EXPEDITED */
	pid_t pid;                 /* creator: a forked child must not use it */
	struct evs_producer *next; /* registry */
};

/* -EINVAL, and for evs_errmsg() why p and core name no stream (p NULL,
 * or core out of range). */
int evs_producer_refuse_core(const struct evs_producer *p, unsigned int core);
/* Make every committed record of the stream visible (and wake if armed). */
void evs_stream_publish(struct evs_stream *s);
/* Recompute the fast path's bounds (room_end, events_end). */
void evs_stream_set_limits(struct evs_stream *s);

#endif

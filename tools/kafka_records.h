/* SPDX-License-Identifier: MIT */
/*
 * evs-dump --kafka's records: each message read is checked, put together
 * with the other chunks of its record and written with the dump writer,
 * one dump directory per host and producer (OUT/<host>/<producer>/). No
 * Kafka client here: the consumer loop (kafka_dump.c) hands messages in
 * and stores the offsets this says may be stored.
 */
#ifndef EVS_TOOLS_KAFKA_RECORDS_H
#define EVS_TOOLS_KAFKA_RECORDS_H

#include <stdbool.h>
#include <stdint.h>

#include <librdkafka/rdkafka.h>

#include "dump_writer.h"
#include "kafka_msg.h"

/* One host/producer/core. */
struct kcore {
	/* duplicates (a seq at or below one already taken) are skipped and
	 * counted by the writer: its core's skipped */
	int32_t partition;     /* where its records come from */
	/* a record being put together from its chunks */
	uint8_t *buf;
	uint64_t cap;          /* bytes allocated: grown as chunks arrive */
	uint64_t total, got, seq;
	uint32_t next_chunk, nchunks;
};

struct source {
	struct source *next;
	char host[KMSG_NAME_MAX + 1], producer[KMSG_NAME_MAX + 1];
	struct dump_writer w;
	bool open;             /* the writer is open */
	bool broken;           /* its directory could not be made: records counted failed */
	struct kcore *cores[DUMP_MAX_CORES];
};

struct kpart {
	bool assigned, eof, seen;
	int64_t first_offset, last_offset;
	uint64_t messages, skipped;
	unsigned int open;     /* records of this partition half reassembled */
	bool released;         /* open fell to 0 at another partition's message */
};

struct krec {
	/* set before the first message */
	const char *out;       /* the top directory as given, for messages */
	int outfd;             /* the top directory (dump_dir_open) */
	enum dump_mode mode;
	bool print;
	uint64_t max_events;   /* 0: no limit */
	void (*clear_status)(void *ctx);  /* before anything is said */
	void *ctx;
	/* what was read */
	struct source *sources;
	struct kpart *parts;
	int nparts;
	uint64_t events, messages, torn, orphans, malformed, unfinished, refused;
	uint64_t last_activity;
	bool released;         /* some partition's is set (krec_released) */
	bool stop;             /* max_events reached, or a write error */
	int werr;              /* a write error that stops the run */
};

/* A partition's counts (made on first use); NULL for a number out of range. */
struct kpart *krec_part(struct krec *r, int32_t p);

/* One message read without error, and its headers (NULL when it has
 * none): counted against its partition, its record checked, put together
 * and written (or counted as not written). true when its offset may be
 * stored: no record of its partition is half reassembled. */
bool krec_message(struct krec *r, const rd_kafka_message_t *m, const rd_kafka_headers_t *hdrs);

/* After krec_message: a partition other than the message's whose offsets
 * may now be stored up to its last_offset, since the half-reassembled
 * record that held them back was dropped (its chunks went on in another
 * partition); -1 when there is none. Each is returned once. */
int32_t krec_released(struct krec *r);

/* A partition handed over: its half-reassembled records are left to the
 * next reader (not counted: their offsets were not stored). */
void krec_drop_partition(struct krec *r, int32_t partition);

/* The end of the run: records still arriving in chunks are counted
 * unfinished and dropped. */
void krec_finish(struct krec *r);

/* Closes every open writer and frees all; nonzero when a close failed. */
int krec_free(struct krec *r);

#endif

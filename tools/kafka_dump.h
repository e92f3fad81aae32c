/* SPDX-License-Identifier: MIT */
/*
 * evs-dump --kafka: read what evs-forward published to a topic, as a member
 * of a consumer group, and write the dump format of docs/dump.md with one
 * directory per host and producer (OUT/<host>/<producer>/, holding
 * index.jsonl and c<core>/ as a dump from shared memory does).
 */
#ifndef EVS_TOOLS_KAFKA_DUMP_H
#define EVS_TOOLS_KAFKA_DUMP_H

#include <stdbool.h>
#include <stdint.h>

#include "dump_writer.h"

struct kafka_dump_opts {
	const char *brokers;
	const char *topic;
	const char *group;        /* NULL: "evs-dump" */
	const char *out;          /* NULL: "dump" */
	char *const *props;       /* -X key=value */
	unsigned int nprops;
	enum dump_mode mode;
	bool print, progress, summary;
	uint64_t max_events;      /* 0: no limit */
	double seconds;           /* 0: no limit */
	double until_idle;        /* 0: never; else stop when every assigned
	                           * partition is read to its end and nothing
	                           * came for this long */
	double timeout;           /* give up when no broker answers at start */
};

/* Runs the reader; returns evs-dump's exit status (docs/kafka.md). */
int kafka_dump_main(const struct kafka_dump_opts *o);

#endif

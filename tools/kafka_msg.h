/* SPDX-License-Identifier: MIT */
/*
 * How an evstream record travels as a Kafka record (docs/kafka.md), shared
 * by evs-forward (writing) and evs-dump --kafka (reading):
 *
 *   key     "<host>/<producer>/<core>": one core's records share a key, so
 *           they go to one partition, in order
 *   value   the record as it is in the ring: the 64-byte struct
 *           evs_event_header, then data_size payload bytes
 *   headers evs.seq, evs.type (decimal), evs.dtype, evs.shape ("[32,64]";
 *           neither on a print or a non-tensor record), and on a record
 *           split in chunks evs.chunk "INDEX/COUNT"
 *
 * A record whose Kafka message would exceed the producer's
 * message.max.bytes is split into chunks: chunk i holds bytes
 * [i * size, (i + 1) * size) of the value above, all under the same key with
 * the same evs.seq, so they reach one partition in order.
 */
#ifndef EVS_TOOLS_KAFKA_MSG_H
#define EVS_TOOLS_KAFKA_MSG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <librdkafka/rdkafka.h>

#include "evstream/evstream.h"
#include "evstream/tensor.h"

#define KMSG_SEQ   "evs.seq"
#define KMSG_TYPE  "evs.type"
#define KMSG_DTYPE "evs.dtype"
#define KMSG_SHAPE "evs.shape"
#define KMSG_CHUNK "evs.chunk"

/* host and producer names: as evstream's producer names, 1 to 64 of
 * [A-Za-z0-9._-], not starting with '.' (they become directory names) */
#define KMSG_NAME_MAX 64
#define KMSG_KEY_MAX  (2 * KMSG_NAME_MAX + 16)

/* Room kept in a chunk's Kafka message for the key, the headers and the
 * record's own framing (librdkafka counts them against message.max.bytes). */
#define KMSG_CHUNK_OVERHEAD 1024u
/* The smallest message.max.bytes evs-forward takes: chunks of 3 KiB. */
#define KMSG_MIN_MESSAGE_MAX 4096u
/* A reader refuses to reassemble a record larger than this. */
#define KMSG_RECORD_MAX (4ull << 30)

struct kmsg_source {
	char host[KMSG_NAME_MAX + 1];
	char producer[KMSG_NAME_MAX + 1];
	unsigned int core;
};

/* What the reader needs from a message's headers. */
struct kmsg_meta {
	uint64_t seq;
	uint32_t chunk, nchunks;   /* 0, 1 when not chunked */
};

/* The header values of one record (strings for rd_kafka_produceva). */
struct kmsg_hdrs {
	char seq[24], type[12], dtype[16], shape[8 * 21 + 3], chunk[24];
	bool tensor;               /* dtype and shape apply */
};

/* 1 if s (n bytes) is a valid host or producer name. */
bool kmsg_name_ok(const char *s, size_t n);

/* Writes the key into buf (KMSG_KEY_MAX); its length, or -EINVAL. */
int kmsg_key(char *buf, const char *host, const char *producer, unsigned int core);

/* The source a key names; -EBADMSG when it is not a key evs-forward writes. */
int kmsg_parse_key(const void *key, size_t len, struct kmsg_source *src);

/* The headers for a record: seq and type, dtype and shape when the payload
 * is a tensor-read event (parsed and checked as evs-dump does). */
void kmsg_hdrs_fill(struct kmsg_hdrs *h, const struct evs_event_header *eh, const void *payload);

/* evs.seq and evs.chunk from a message's headers (NULL: it has none);
 * -EBADMSG when missing or malformed (a chunk index beyond its count, a
 * count of 0). */
int kmsg_meta_parse(const rd_kafka_headers_t *hdrs, struct kmsg_meta *meta);

/* Applies -X "key=value" settings in order; 0, or -EINVAL after saying
 * which one librdkafka refused and why. */
int kmsg_conf_apply(rd_kafka_conf_t *conf, char *const *props, unsigned int n);

/* Sets a property evstream chooses (before -X, which may override it);
 * a refusal is a bug: said, -EINVAL. */
int kmsg_conf_set(rd_kafka_conf_t *conf, const char *key, const char *val);

/* librdkafka's log lines, from rd_kafka_poll() (log.queue): warnings and
 * errors, prefixed with the program's name; connection failures are left
 * to the error callback, which says them once a second at most. */
void kmsg_log_cb(const rd_kafka_t *rk, int level, const char *fac, const char *buf);

/* Says a client error (a broker down, all brokers down, ...) at most once a
 * second, with a count of those held back. */
void kmsg_error_note(rd_kafka_resp_err_t err, const char *reason);

/* Bytes of the record per chunk for a producer's message.max.bytes and
 * this key; records up to this size go whole. */
size_t kmsg_chunk_size(size_t message_max, size_t keylen);

#endif

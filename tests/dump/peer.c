/* SPDX-License-Identifier: MIT */
/*
 * dump-peer: producers the end-to-end tests of evs-dump need and evs-demo
 * is not, each a mode:
 *
 *   dump-peer NAME contradict
 *       one core; once a consumer is there, payloads that contradict
 *       themselves, written by hand past emit_tensor (which refuses them):
 *       float32 with elem_size 8, int8 with elem_size 3; then empty tensors
 *       of extreme shapes through emit_tensor, some of which NumPy cannot
 *       represent; then a good tensor. Exits, closing its stream, once
 *       the consumer has taken them all.
 *   dump-peer NAME corrupt [N]
 *       one core; once a consumer is there, N good float32 tensors
 *       (default 0; "before =", shape (2,), both elements the tensor's
 *       index), then one record whose header, written over by hand after
 *       it was sealed and before it was published, claims more payload
 *       than the ring holds: the stream is corrupt from there on. Exits
 *       once the consumer has left.
 *   dump-peer NAME first-connect N
 *       two cores; as soon as core 0 has a consumer, N events on core 0,
 *       then exits at once: a dumper still connecting core 1 finds no
 *       producer there.
 *   dump-peer NAME dup-seq
 *       one core; once a consumer is there, five tensors whose sequence
 *       numbers, written over by hand after sealing and before publishing
 *       for two of them, go 0, 0 (again), 2, 1 (back), 4: "first =" float32
 *       [1.5, 2.5], "again =" int32 [7, 8, 9], "third =" float32 [3, 3],
 *       "back =" int8 [-1, -2], "last =" float32 [5, 5]. Exits, closing its
 *       stream, once the consumer has taken them all.
 *
 * Exit status 0 when every emit went as planned, 1 otherwise, 2 on bad use.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "evstream/evstream.h"
#include "evstream/tensor.h"
#include "nrt/ndebug_stream.h"

typedef ndebug_stream_payload_debug_tensor_read_t payload_t;

/* A tensor payload as emit_tensor lays it out, but with the element size
 * (in the evstream extension) and data size given, whatever the dtype,
 * reserved and not committed; NULL (errno) when there is no room. */
static payload_t *reserve_by_hand(struct evs_producer *p, const char *prefix, const char *dtype,
				  uint32_t elem_size, uint64_t n, const void *data, uint64_t bytes)
{
	struct evs_tensor_ext ext = { .magic = EVS_TENSOR_EXT_MAGIC, .ndim = 1, .elem_size = elem_size };
	payload_t *pl = evs_producer__reserve(p, 0, EVS_EVENT_TENSOR_READ, sizeof(*pl) + bytes);

	if (!pl)
		return NULL;
	memset(pl, 0, sizeof(*pl));
	snprintf(pl->prefix, sizeof(pl->prefix), "%s", prefix);
	snprintf(pl->tensor_dtype, sizeof(pl->tensor_dtype), "%s", dtype);
	pl->pipe = 1;
	pl->tensor_shape[0] = n;
	pl->tensor_data_size = bytes;
	memcpy(pl->reserved0, &ext, sizeof(ext));
	memcpy(pl->tensor_data, data, bytes);
	return pl;
}

static int emit_by_hand(struct evs_producer *p, const char *prefix, const char *dtype,
			uint32_t elem_size, uint64_t n, const void *data, uint64_t bytes)
{
	if (!reserve_by_hand(p, prefix, dtype, elem_size, n, data, bytes))
		return -errno;
	return evs_producer__commit(p, 0);
}

/* The same, published with sequence number seq whatever the producer
 * counted: the header, sealed at the deferred commit, is written over
 * before the record is published, as any producer can. */
static int emit_with_seq(struct evs_producer *p, const char *prefix, const char *dtype,
			 uint32_t elem_size, uint64_t n, const void *data, uint64_t bytes, uint64_t seq)
{
	payload_t *pl = reserve_by_hand(p, prefix, dtype, elem_size, n, data, bytes);
	struct evs_event_header *h;

	if (!pl)
		return -errno;
	if (evs_producer__commit_deferred(p, 0))
		return -1;
	/* the record's header lies right before its payload in the ring */
	h = (struct evs_event_header *)((uint8_t *)pl - sizeof(*h));
	h->seq = seq;
	return evs_producer__publish(p, 0);
}

static int emit_f32(struct evs_producer *p, const char *prefix, float v0, float v1)
{
	const float v[2] = { v0, v1 };
	const uint64_t shape[1] = { 2 };
	struct evs_tensor t = { .prefix = prefix, .pipe = 1, .dtype = "float32", .ndim = 1,
				.shape = shape, .data = v };

	return evs_producer__emit_tensor(p, 0, &t);
}

/* seqs 0, 0 again (another dtype and shape), 2, 1 (back), 4 */
static int dup_seq(struct evs_producer *p)
{
	static const int32_t i32[3] = { 7, 8, 9 };
	static const int8_t i8[2] = { -1, -2 };
	int err = 0;

	err |= emit_f32(p, "first =", 1.5f, 2.5f);
	err |= emit_with_seq(p, "again =", "int32", 4, 3, i32, sizeof(i32), 0);
	err |= emit_f32(p, "third =", 3, 3);
	err |= emit_with_seq(p, "back =", "int8", 1, 2, i8, sizeof(i8), 1);
	err |= emit_f32(p, "last =", 5, 5);
	return err ? 1 : 0;
}

static int emit_empty(struct evs_producer *p, const char *prefix, const char *dtype, uint32_t ndim,
		      const uint64_t *shape)
{
	struct evs_tensor t = { .prefix = prefix, .pipe = 1, .dtype = dtype, .ndim = ndim,
				.shape = shape };

	return evs_producer__emit_tensor(p, 0, &t);
}

static int contradict(struct evs_producer *p)
{
	static const double two[2] = { 1.5, -2.25 };
	static const char six[6] = "abcdef";
	static const float good[4] = { 1, 2, 3, 4 };
	const uint64_t s_i8[2] = { 0, INT64_MAX }, s_big3[3] = { 1ull << 33, 1ull << 33, 0 };
	const uint64_t s_u64[2] = { 0, UINT64_MAX }, s_31[3] = { 0, 1u << 31, 1u << 31 };
	const uint64_t s_good[2] = { 2, 2 };
	struct evs_tensor t = { .prefix = "good =", .pipe = 1, .dtype = "float32", .ndim = 2,
				.shape = s_good, .data = good };
	int err = 0;

	/* two float64 values that would read as four wrong float32 ones */
	err |= emit_by_hand(p, "f32 as 8 bytes =", "float32", 8, 2, two, sizeof(two));
	/* 3-byte int8 elements: a preview would read past what it copied */
	err |= emit_by_hand(p, "i8 as 3 bytes =", "int8", 3, 2, six, sizeof(six));
	/* empty, each of any shape: loadable by NumPy, or not (no .npy) */
	err |= emit_empty(p, "i8 (0, 2^63-1) =", "int8", 2, s_i8);
	err |= emit_empty(p, "f32 (0, 2^63-1) =", "float32", 2, s_i8);
	err |= emit_empty(p, "f32 (2^33, 2^33, 0) =", "float32", 3, s_big3);
	err |= emit_empty(p, "i8 (0, 2^64-1) =", "int8", 2, s_u64);
	err |= emit_empty(p, "u8 (0, 2^31, 2^31) =", "uint8", 3, s_31);
	err |= evs_producer__emit_tensor(p, 0, &t);
	return err ? 1 : 0;
}

static int corrupt(struct evs_producer *p, uint64_t n)
{
	const uint64_t shape[1] = { 2 };
	struct evs_event_header *h;
	uint8_t *payload;

	/* what a consumer must still be handed before the corrupt record */
	for (uint64_t i = 0; i < n; i++) {
		const float v[2] = { (float)i, (float)i };
		struct evs_tensor t = { .prefix = "before =", .pipe = 1, .dtype = "float32",
					.ndim = 1, .shape = shape, .data = v };

		if (evs_producer__emit_tensor(p, 0, &t))
			return 1;
	}
	payload = evs_producer__reserve(p, 0, 2, 16);
	if (!payload)
		return 1;
	memset(payload, 0, 16);
	if (evs_producer__commit_deferred(p, 0))
		return 1;
	/* the record's header lies right before its payload in the ring */
	h = (struct evs_event_header *)(payload - sizeof(*h));
	h->data_size = 1ull << 40;
	return evs_producer__publish(p, 0) ? 1 : 0;
}

static int first_connect(struct evs_producer *p, uint64_t n)
{
	struct evs_tensor t = { .prefix = "step", .pipe = 1 }; /* a device print */

	for (uint64_t v = 0; v < n; v++)
		if (evs_producer__emit_tensor(p, 0, &t))
			return 1;
	return 0;
}

int main(int argc, char **argv)
{
	const char *name = argc > 2 ? argv[1] : NULL, *mode = argc > 2 ? argv[2] : "";
	unsigned int ncores = strcmp(mode, "first-connect") ? 1 : 2;
	struct evs_producer *p;
	uint64_t n = 0, deadline;
	int rc;

	if (!strcmp(mode, "first-connect") && argc == 4) {
		if (cli_parse_u64("N", argv[3], 1, 1000000, 0, &n))
			return 2;
	} else if (!strcmp(mode, "corrupt") && argc == 4) {
		if (cli_parse_u64("N", argv[3], 0, 1000, 0, &n))
			return 2;
	} else if ((strcmp(mode, "contradict") && strcmp(mode, "corrupt") && strcmp(mode, "dup-seq")) ||
		   argc != 3) {
		fprintf(stderr, "usage: dump-peer NAME contradict | dump-peer NAME corrupt [N] | "
			"dump-peer NAME first-connect N | dump-peer NAME dup-seq\n");
		return 2;
	}
	p = evs_producer__new(name, ncores, NULL);
	if (!p) {
		fprintf(stderr, "dump-peer: %s\n", evs_errmsg());
		return 1;
	}
	/* core 0's consumer, looked for without sleeping: first-connect exits
	 * while the dumper is still busy with it */
	deadline = cli_now_ns() + 10 * 1000000000ull;
	for (;;) {
		struct evs_stream_stats st = { .sz = sizeof(st) };

		if (!evs_producer__stats(p, 0, &st) && st.connected)
			break;
		if (cli_now_ns() > deadline) {
			fprintf(stderr, "dump-peer: no consumer on core 0 within 10 s\n");
			evs_producer__free(p);
			return 1;
		}
		if (ncores == 1)
			usleep(1000);
	}
	if (!strcmp(mode, "corrupt")) {
		rc = corrupt(p, n);
		/* until the consumer gives the stream up and leaves */
		for (;;) {
			struct evs_stream_stats st = { .sz = sizeof(st) };

			if (evs_producer__stats(p, 0, &st) || !st.connected ||
			    cli_now_ns() > deadline)
				break;
			usleep(1000);
		}
		evs_producer__free(p);
		return rc;
	}
	rc = n ? first_connect(p, n) : !strcmp(mode, "dup-seq") ? dup_seq(p) : contradict(p);
	/* contradict, dup-seq: the dumper takes their records only once it
	 * has connected every core, so it is past discovery when they are gone */
	while (!n && cli_now_ns() < deadline) {
		struct evs_stream_stats st = { .sz = sizeof(st) };

		if (evs_producer__stats(p, 0, &st) || st.released == st.committed)
			break;
		usleep(1000);
	}
	evs_producer__free(p);
	return rc;
}

/* SPDX-License-Identifier: MIT */
/*
 * The Kafka benchmark's two sources of the same records (bench/kafka_bench.sh):
 *
 *   kafka-gen produce NAME SIZE COUNT   a producer NAME with one core that
 *       emits COUNT events of SIZE payload bytes as fast as the ring takes
 *       them (a full ring is tried again 0.5 ms later: the reader,
 *       evs-forward, is what is measured), once a consumer is attached (up
 *       to 10 s)
 *   kafka-gen file SIZE COUNT KEY        the same records on stdout for
 *       kcat -P: KEY, KDELIM, the 64-byte header and payload, DELIM (KEY
 *       "-": the records alone, back to back; one is a file that
 *       kcat -P FILE sends as one message)
 *   kafka-gen tensors NAME SIZE COUNT   COUNT float32 tensors of SIZE bytes,
 *       shape [SIZE / 4096, 1024], element i of tensor k being
 *       (i * 2654435761 + k) mod 65536 (tests/kafka/big_tensor.sh checks it)
 *
 * Payloads are letters, so the delimiters below never occur in them.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "evstream/evstream.h"
#include "evstream/tensor.h"

#define KDELIM "\x1f"
#define DELIM  "\x1e--evs--\x1e"

static void fill(char *p, uint64_t size)
{
	for (uint64_t i = 0; i < size; i++)
		p[i] = (char)('a' + i % 26);
}

static int produce(const char *name, uint64_t size, uint64_t count)
{
	struct evs_producer *p = evs_producer__new(name, 1, NULL);
	struct evs_stream_stats st = { .sz = sizeof(st) };
	unsigned int n = 0;
	char *buf = malloc(size ? size : 1);
	uint64_t retries = 0;

	if (!p || !buf) {
		fprintf(stderr, "kafka-gen: producer '%s': %s\n", name, evs_errmsg());
		return 1;
	}
	fill(buf, size);
	if (cli_wait_consumers(p, 1, 10, NULL, &n)) {
		fprintf(stderr, "kafka-gen: no consumer within 10 s\n");
		evs_producer__free(p);
		return 1;
	}
	for (uint64_t i = 0; i < count; i++) {
		int err;

		/* a full ring: sleep a little rather than spin, the reader
		 * and the brokers need the CPUs */
		while ((err = evs_producer__emit(p, 0, EVS_EVENT_TENSOR_READ, buf, size)) == -ENOBUFS) {
			struct timespec ts = { 0, 500000 };

			retries++;
			nanosleep(&ts, NULL);
		}
		if (err) {
			fprintf(stderr, "kafka-gen: emit: %s\n", evs_strerror(err));
			break;
		}
	}
	evs_producer__stats(p, 0, &st);
	fprintf(stderr, "kafka-gen: %" PRIu64 " events of %" PRIu64 " bytes committed; %" PRIu64
		" tries met a full ring\n", st.committed, size, retries);
	free(buf);
	evs_producer__free(p);
	return 0;
}

static int tensors(const char *name, uint64_t size, uint64_t count)
{
	struct evs_producer *p = evs_producer__new(name, 1, NULL);
	uint64_t shape[2] = { size / 4096, 1024 }, n = shape[0] * shape[1];
	float *x = malloc(n * sizeof(float) + 1);
	unsigned int connected = 0;

	if (!p || !x) {
		fprintf(stderr, "kafka-gen: producer '%s': %s\n", name, evs_errmsg());
		return 1;
	}
	if (cli_wait_consumers(p, 1, 10, NULL, &connected)) {
		fprintf(stderr, "kafka-gen: no consumer within 10 s\n");
		evs_producer__free(p);
		return 1;
	}
	for (uint64_t k = 0; k < count; k++) {
		struct evs_tensor t = { .prefix = "big =", .pipe = 1, .dtype = "float32", .ndim = 2,
					.shape = shape, .data = x };
		int err;

		for (uint64_t i = 0; i < n; i++)
			x[i] = (float)((i * 2654435761ull + k) % 65536);
		while ((err = evs_producer__emit_tensor(p, 0, &t)) == -ENOBUFS) {
			struct timespec ts = { 0, 500000 };

			nanosleep(&ts, NULL);
		}
		if (err) {
			fprintf(stderr, "kafka-gen: emit_tensor: %s\n", evs_strerror(err));
			break;
		}
	}
	free(x);
	evs_producer__free(p);
	return 0;
}

static int file(uint64_t size, uint64_t count, const char *key)
{
	struct evs_event_header h = { .data_size = size, .type = EVS_EVENT_TENSOR_READ };
	char *buf = malloc(size ? size : 1);

	if (!buf)
		return 1;
	fill(buf, size);
	for (uint64_t i = 0; i < count; i++) {
		bool bare = !strcmp(key, "-");

		h.seq = i;
		if (!bare) {
			fputs(key, stdout);
			fputs(KDELIM, stdout);
		}
		fwrite(&h, sizeof(h), 1, stdout);
		fwrite(buf, 1, size, stdout);
		if (!bare)
			fputs(DELIM, stdout);
	}
	free(buf);
	return fflush(stdout) ? 1 : 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc == 5 ? argv[1] : "";
	bool file_mode = !strcmp(mode, "file");
	uint64_t size, count;

	if (!file_mode && strcmp(mode, "produce") && strcmp(mode, "tensors")) {
		fprintf(stderr, "usage: kafka-gen produce NAME SIZE COUNT | kafka-gen tensors NAME SIZE COUNT |\n"
				"       kafka-gen file SIZE COUNT KEY\n");
		return 2;
	}
	if (cli_parse_u64("SIZE", argv[file_mode ? 2 : 3], 0, 1ull << 30, CLI_SIZE, &size) ||
	    cli_parse_u64("COUNT", argv[file_mode ? 3 : 4], 1, UINT64_MAX, 0, &count))
		return 2;
	if (file_mode)
		return file(size, count, argv[4]);
	return mode[0] == 'p' ? produce(argv[2], size, count) : tensors(argv[2], size, count);
}

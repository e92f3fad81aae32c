/* SPDX-License-Identifier: MIT */
/*
 * The smallest complete use of evstream, as two processes:
 *
 *   evs-example produce NAME [EVENTS]   a runtime: emits tensor reads on 2 cores
 *   evs-example consume NAME [EVENTS]   a debugger: prints them as they arrive
 *
 * `make example` runs both. The consumer uses the native API on core 0 and
 * the reference debug-stream API (EVSTREAM_PRODUCER=NAME) on core 1.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "evstream/evstream.h"
#include "nrt/ndebug_stream.h"

#define NCORES 2

static int produce(const char *name, int events)
{
	struct evs_producer *p = evs_producer__new(name, NCORES, NULL);
	struct evs_stream_stats st = { .sz = sizeof(st) };
	float w[4][3];

	if (!p) {
		fprintf(stderr, "evs-example: %s\n", evs_errmsg());
		return 1;
	}
	/* events are only kept once a consumer is connected: wait for both */
	for (unsigned int core = 0; core < NCORES; core++)
		do {
			usleep(10000);
			evs_producer__stats(p, core, &st);
		} while (!st.connected);

	for (int i = 0; i < events; i++) {
		unsigned int core = (unsigned int)i % NCORES;
		uint64_t shape[2] = { 3, 4 };
		int64_t strides[2] = { 4, 3 * 4 }; /* w transposed: a strided view */
		char prefix[64];
		struct evs_tensor t = { .prefix = prefix, .pipe = 1, .dtype = "float32", .ndim = 2,
					.shape = shape, .strides = strides, .data = w };

		for (int r = 0; r < 4; r++)
			for (int c = 0; c < 3; c++)
				w[r][c] = (float)i + (float)(r * 3 + c) / 10.0f;
		snprintf(prefix, sizeof(prefix), "layer%d.weight.T", i);
		int err = evs_producer__emit_tensor(p, core, &t);

		if (err)
			fprintf(stderr, "evs-example: event %d on core %u dropped: %s\n", i, core,
				evs_strerror(err));
		usleep(100000);
	}
	evs_producer__free(p); /* consumers drain, then see the end */
	return 0;
}

static void print_tensor(unsigned int core, uint64_t seq, const ndebug_stream_payload_debug_tensor_read_t *t)
{
	const float *v = (const float *)t->tensor_data;
	uint64_t n = t->tensor_data_size / sizeof(float);

	printf("core %u seq %-3llu %-18s %s[%llu,%llu] = [", core, (unsigned long long)seq,
	       t->prefix, t->tensor_dtype, (unsigned long long)t->tensor_shape[0],
	       (unsigned long long)t->tensor_shape[1]);
	for (uint64_t i = 0; i < n && i < 4; i++)
		printf("%s%.1f", i ? ", " : "", v[i]);
	printf("%s]\n", n > 4 ? ", ..." : "");
	fflush(stdout);
}

static int consume(const char *name)
{
	struct evs_consumer *c;
	struct evs_record rec;
	int nrt_fd, ended = 0;
	NRT_STATUS s;

	c = evs_consumer__connect(name, 0, NULL);
	if (!c) {
		fprintf(stderr, "evs-example: %s\n", evs_errmsg());
		return 1;
	}
	setenv("EVSTREAM_PRODUCER", name, 1);
	s = nrt_debug_client_connect(1, &nrt_fd);
	if (s != NRT_SUCCESS) {
		fprintf(stderr, "evs-example: nrt_debug_client_connect: status %d\n", s);
		return 1;
	}
	while (ended < 2) {
		struct pollfd pfd[3] = {
			{ .fd = evs_consumer__fd(c), .events = POLLIN },
			{ .fd = evs_consumer__hup_fd(c), .events = POLLIN },
			{ .fd = nrt_fd, .events = POLLIN },
		};
		ndebug_stream_event_header_t h;
		void *payload;
		int err;

		ended = 0;
		/* core 0, native: zero-copy peek, then release */
		while ((err = evs_consumer__peek(c, &rec)) == 0) {
			print_tensor(0, rec.hdr.seq, rec.data);
			evs_consumer__release(c);
		}
		if (err == -EPIPE)
			ended++;
		else if (err == -EAGAIN && evs_consumer__prepare_wait(c) == -EAGAIN)
			continue;
		/* core 1, the reference API: one malloc'd event at a time */
		while ((s = nrt_debug_client_read_one_event(nrt_fd, &h, &payload)) == NRT_SUCCESS) {
			memcpy(&rec.hdr, &h, sizeof(h));
			print_tensor(1, rec.hdr.seq, payload);
			free(payload);
		}
		if (s == NRT_CLOSED)
			ended++;
		if (ended < 2 && poll(pfd, 3, 1000) < 0)
			break;
	}
	printf("producer finished; every committed event was read\n");
	nrt_debug_client_connect_close(nrt_fd);
	evs_consumer__free(c);
	return 0;
}

int main(int argc, char **argv)
{
	char *end = NULL;
	long events = argc > 3 ? strtol(argv[3], &end, 10) : 20;

	if (argc < 3 || (strcmp(argv[1], "produce") && strcmp(argv[1], "consume"))) {
		fprintf(stderr, "usage: evs-example produce|consume NAME [EVENTS]\n");
		return 2;
	}
	if (end && (end == argv[3] || *end || events <= 0 || events > 1000000)) {
		fprintf(stderr, "evs-example: EVENTS '%s' is not allowed: use 1 to 1000000\n", argv[3]);
		return 2;
	}
	return strcmp(argv[1], "produce") ? consume(argv[2]) : produce(argv[2], events);
}

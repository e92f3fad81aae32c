/* SPDX-License-Identifier: MIT */
/*
 * The smallest complete use of evstream, as two processes:
 *
 *   evs-example produce NAME [EVENTS]   a runtime: emits tensor reads on 2 cores
 *   evs-example consume NAME [EVENTS]   a debugger: prints them as they arrive,
 *                                       and checks that EVENTS arrived
 *
 * `make example` runs both. The consumer uses the native API on core 0 and
 * the reference debug-stream API (EVSTREAM_PRODUCER=NAME) on core 1. Either
 * may start first: each waits up to WAIT_S seconds for the other. Plain
 * API only: nothing here comes from evstream's own tools.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "evstream/evstream.h"
#include "evstream/tensor.h"
#include "nrt/ndebug_stream.h"

#define NCORES 2
#define WAIT_S 10

/* Events are only kept once a consumer is connected: wait for one on
 * every core, for up to WAIT_S seconds. The number connected. */
static unsigned int wait_for_consumers(struct evs_producer *p)
{
	unsigned int connected = 0;

	for (int tick = 0; tick < WAIT_S * 10 && connected < NCORES; tick++) {
		connected = 0;
		for (unsigned int core = 0; core < NCORES; core++) {
			struct evs_stream_stats st = { .sz = sizeof(st) };

			if (evs_producer__stats(p, core, &st) == 0 && st.connected)
				connected++;
		}
		if (connected < NCORES)
			usleep(100000);
	}
	return connected;
}

/* The producer may start after us: try again while there is none. */
static struct evs_consumer *connect_when_there(const char *name, unsigned int core)
{
	struct evs_consumer *c = NULL;

	for (int tick = 0; tick < WAIT_S * 10; tick++) {
		c = evs_consumer__connect(name, core, NULL);
		if (c || errno != ENOENT)
			break;
		usleep(100000);
	}
	return c;
}

static int produce(const char *name, int events)
{
	struct evs_producer *p = evs_producer__new(name, NCORES, NULL);
	unsigned int connected;
	float w[4][3];

	if (!p) {
		fprintf(stderr, "evs-example: %s\n", evs_errmsg());
		return 1;
	}
	connected = wait_for_consumers(p);
	if (connected < NCORES) {
		fprintf(stderr, "evs-example: only %u of %u cores of '%s' have a consumer after %d s "
			"(is 'evs-example consume %s' running?)\n", connected, NCORES, name, WAIT_S, name);
		evs_producer__free(p);
		return 1;
	}

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

/* events: how many must arrive (0: any number). */
static int consume(const char *name, long events)
{
	struct evs_consumer *c;
	struct evs_record rec;
	int nrt_fd, ended = 0;
	long got = 0;
	NRT_STATUS s;

	/* the producer may not be up yet */
	c = connect_when_there(name, 0);
	if (!c) {
		fprintf(stderr, "evs-example: no producer '%s' after %d s: %s\n", name, WAIT_S,
			*evs_errmsg() ? evs_errmsg() : strerror(errno));
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
			got++;
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
			got++;
		}
		if (s == NRT_CLOSED)
			ended++;
		if (ended < 2 && poll(pfd, 3, 1000) < 0)
			break;
	}
	nrt_debug_client_connect_close(nrt_fd);
	evs_consumer__free(c);
	if (events && got != events) {
		fprintf(stderr, "evs-example: producer finished; %ld events read, %ld expected\n", got, events);
		return 1;
	}
	printf("producer finished; every committed event was read (%ld)\n", got);
	return 0;
}

int main(int argc, char **argv)
{
	char *end = NULL;
	long events = argc > 3 ? strtol(argv[3], &end, 10) : 0;

	if (argc < 3 || (strcmp(argv[1], "produce") && strcmp(argv[1], "consume"))) {
		fprintf(stderr, "usage: evs-example produce|consume NAME [EVENTS]\n");
		return 2;
	}
	if (end && (end == argv[3] || *end || events <= 0 || events > 1000000)) {
		fprintf(stderr, "evs-example: EVENTS '%s' is not allowed: use 1 to 1000000\n", argv[3]);
		return 2;
	}
	if (!strcmp(argv[1], "consume"))
		return consume(argv[2], events);
	return produce(argv[2], events ? (int)events : 20);
}

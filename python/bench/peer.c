/* SPDX-License-Identifier: MIT */
/*
 * The C side of the Python benchmark (python/bench/bench_py.py):
 *
 *   evs-pybench-peer produce NAME raw|tensor SIZE SECONDS
 *       a producer flat out: SIZE-byte raw events (type 2), or float32
 *       tensor reads of SIZE bytes, for SECONDS once a consumer is there;
 *       then it closes its stream (the consumer drains and sees the end)
 *   evs-pybench-peer paced NAME SIZE SECONDS RATE
 *       SIZE-byte raw events offered at RATE a second for SECONDS once a
 *       consumer is there, then the end; prints one JSON line
 *       {"emitted":..,"dropped":..}; a default stream (65536 events): a
 *       reader that loses nothing at RATE keeps up with a live producer
 *   evs-pybench-peer pipe SIZE SECONDS
 *       the same SIZE-byte events on stdout, a 64-byte header each, one
 *       write() per event (as a producer emitting one at a time would), flat
 *       out for SECONDS, then EOF: what the Python pipe reader reads
 *   evs-pybench-peer consume NAME
 *       the C consumer the Python one is measured against: peek, parse the
 *       tensor payload (evs_tensor_parse), release; prints one JSON line
 *       {"events":..,"bytes":..,"seconds":..} from the first event to the end
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <evstream/evstream.h>
#include <evstream/tensor.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int wait_for_consumer(struct evs_producer *p)
{
	struct evs_stream_stats st = { .sz = sizeof(st) };
	double t0 = now();

	while (!(evs_producer__stats(p, 0, &st) == 0 && st.connected)) {
		if (now() - t0 > 30) {
			fprintf(stderr, "peer: no consumer within 30 s\n");
			return -1;
		}
		usleep(1000);
	}
	return 0;
}

static int produce(const char *name, const char *kind, size_t size, double secs)
{
	EVS_OPTS(evs_producer_opts, o, .ring_bytes = 64ull << 20, .max_events = 1 << 20);
	struct evs_producer *p = evs_producer__new(name, 1, &o);
	struct evs_stream_stats st = { .sz = sizeof(st) };
	bool tensor = !strcmp(kind, "tensor");
	uint64_t shape[1] = { size / 4 }, n = 0;
	struct evs_tensor t = { .prefix = "bench", .pipe = 1, .dtype = "float32", .ndim = 1,
				.shape = shape };
	char *buf = calloc(1, size ? size : 1);
	double end;

	if (!p || !buf) {
		fprintf(stderr, "peer: cannot create producer '%s': %s\n", name, evs_errmsg());
		return 2;
	}
	t.data = buf;
	if (wait_for_consumer(p))
		return 2;
	end = now() + secs;
	for (;;) {
		for (int i = 0; i < 64; i++)
			tensor ? evs_producer__emit_tensor(p, 0, &t) : evs_producer__emit(p, 0, 2, buf, size);
		n += 64;
		if (now() >= end)
			break;
	}
	evs_producer__stats(p, 0, &st);
	fprintf(stderr, "peer: %" PRIu64 " emitted, %" PRIu64 " committed\n", n, st.committed);
	evs_producer__free(p);
	free(buf);
	return 0;
}

static int paced(const char *name, size_t size, double secs, const char *rate_arg)
{
	char *end;
	double rate = strtod(rate_arg, &end);
	struct evs_producer *p;
	char *buf;
	uint64_t n = 0, dropped = 0;
	double t0;

	if (end == rate_arg || *end || !(rate > 0 && rate < 1e12)) {
		fprintf(stderr, "peer: rate '%s' is not allowed: a number of events a second, above 0\n",
			rate_arg);
		return 2;
	}
	/* the defaults, what a runtime gets: 65536 events */
	p = evs_producer__new(name, 1, NULL);
	buf = calloc(1, size ? size : 1);
	if (!p || !buf) {
		fprintf(stderr, "peer: cannot create producer '%s': %s\n", name, evs_errmsg());
		return 2;
	}
	if (wait_for_consumer(p))
		return 2;
	t0 = now();
	for (;;) {
		double t = now() - t0;
		uint64_t due = (uint64_t)(t * rate);

		if (t >= secs)
			break;
		/* what is due, in one go: the clock read stays off the per-event cost */
		for (; n < due; n++)
			dropped += evs_producer__emit(p, 0, 2, buf, size) != 0;
	}
	printf("{\"emitted\": %" PRIu64 ", \"dropped\": %" PRIu64 "}\n", n, dropped);
	fflush(stdout);
	evs_producer__free(p);
	free(buf);
	return 0;
}

static int consume(const char *name)
{
	struct evs_consumer *c = NULL;
	struct evs_record rec;
	uint64_t events = 0, bytes = 0;
	double t0 = 0, t1 = now();
	int r;

	while (!c) {
		c = evs_consumer__connect(name, 0, NULL);
		if (!c && (errno != ENOENT || now() - t1 > 30)) {
			fprintf(stderr, "peer: cannot connect to '%s': %s\n", name, evs_errmsg());
			return 2;
		}
		if (!c)
			usleep(1000);
	}
	for (;;) {
		r = evs_consumer__peek(c, &rec);
		if (r == 0) {
			struct evs_tensor_info info;

			if (!events)
				t0 = now();
			if (rec.hdr.type == EVS_EVENT_TENSOR_READ &&
			    evs_tensor_parse(rec.data, rec.hdr.data_size, &info) == 0)
				bytes += info.bytes;
			else
				bytes += rec.hdr.data_size;
			events++;
			evs_consumer__release(c);
			continue;
		}
		if (r == -EAGAIN) {
			r = evs_consumer__wait(c, -1);
			if (r == 0)
				continue;
		}
		break;
	}
	t1 = now();
	printf("{\"events\": %" PRIu64 ", \"bytes\": %" PRIu64 ", \"seconds\": %.6f}\n", events, bytes,
	       events ? t1 - t0 : 0.0);
	evs_consumer__free(c);
	return r == -EPIPE ? 0 : 1;
}

static int pipe_write(size_t size, double secs)
{
	size_t len = 64 + size;
	uint8_t *buf = calloc(1, len);
	uint64_t n = 0;
	double end = now() + secs;

	if (!buf)
		return 2;
	memcpy(buf, &(uint64_t){ size }, 8);
	memcpy(buf + 8, &(uint32_t){ 2 }, 4);
	for (;;) {
		for (int i = 0; i < 64; i++, n++) {
			size_t done = 0;

			memcpy(buf + 16, &n, 8);
			while (done < len) {
				ssize_t w = write(STDOUT_FILENO, buf + done, len - done);

				if (w < 0 && errno == EINTR)
					continue;
				if (w < 0)
					return errno == EPIPE ? 0 : 1;
				done += (size_t)w;
			}
		}
		if (now() >= end)
			break;
	}
	free(buf);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "pipe"))
		return pipe_write(strtoull(argv[2], NULL, 0), atof(argv[3]));
	if (argc == 6 && !strcmp(argv[1], "produce"))
		return produce(argv[2], argv[3], strtoull(argv[4], NULL, 0), atof(argv[5]));
	if (argc == 3 && !strcmp(argv[1], "consume"))
		return consume(argv[2]);
	if (argc == 6 && !strcmp(argv[1], "paced"))
		return paced(argv[2], strtoull(argv[3], NULL, 0), atof(argv[4]), argv[5]);
	fprintf(stderr, "usage: %s produce NAME raw|tensor SIZE SECONDS | paced NAME SIZE SECONDS RATE | "
		"pipe SIZE SECONDS | consume NAME\n", argv[0]);
	return 2;
}

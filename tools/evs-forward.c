/* SPDX-License-Identifier: MIT */
/*
 * evs-forward: connect to every core of a running producer, like evs-dump,
 * and publish each record to Apache Kafka (librdkafka): key
 * "<host>/<producer>/<core>", value the record as in the ring, headers
 * seq, type, dtype and shape (tools/kafka_msg.h, docs/kafka.md).
 *
 * It never slows the runtime. Each record is copied into librdkafka's queue
 * and released from the ring at once; that queue is bounded, and when it is
 * full the forwarder stops taking records (without releasing the one it
 * holds) until delivery reports make room. The rings then fill and the
 * runtime drops and counts, as with any slow consumer. Every record taken
 * ends in exactly one delivery report (acknowledged, or lost with its
 * cause). A stop (signal, --seconds) starts --flush-timeout: the rings are
 * taken until then at most, let go of (their counters kept for the table)
 * as soon as taking ends, and what Kafka has not acknowledged by then is
 * purged and counted lost ("shutdown").
 *
 * One thread (tools/common/follow.h): the streams' eventfds and producer
 * sockets, a signalfd, two timerfds and a pipe that librdkafka writes when
 * delivery reports wait sit in one epoll set.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <malloc.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/signalfd.h>

#include <librdkafka/rdkafka.h>

#include "cli.h"
#include "follow.h"
#include "kafka_msg.h"
#include "evstream/evstream.h"

#define BATCH 256              /* records per stream per turn */
#define TICK_NS 500000000ll    /* status line */
#define SMALL_COPY (64 * 1024) /* up to here a message is built on the stack */
#define MAX_PROPS 128

enum { TOK_DR = FOLLOW_TOK_USER }; /* delivery reports wait */

/* Why a record taken from the ring was not acknowledged. */
enum lost_cause {
	LOST_TIMEOUT,   /* message.timeout.ms passed without an acknowledgement */
	LOST_TOO_LARGE, /* the cluster refused its size */
	LOST_SHUTDOWN,  /* not acknowledged by the end of --flush-timeout (purged) */
	LOST_FATAL,     /* the idempotent producer hit a fatal error */
	LOST_ERROR,     /* any other error (authorization, unknown topic, ...) */
	LOST_COUNT
};
static const char *const lost_names[LOST_COUNT] = { "timeout", "too_large", "shutdown", "fatal", "error" };

/* A record that travels as several messages (chunks); tracked until each
 * chunk queued has its delivery report. */
struct chunked {
	struct fcore *s;
	struct chunked *prev, *next;
	uint64_t bytes;          /* the record: 64-byte header + payload */
	uint32_t n, queued, acked, failed;
	int cause;               /* of the first failure */
	bool abandoned;          /* no further chunk will be queued */
};

/* A core's forwarding; its stream is the follow_stream of the same index. */
struct fcore {
	struct follow_stream *st;
	char key[KMSG_KEY_MAX];
	size_t keylen;
	uint64_t taken, taken_bytes;  /* handed to librdkafka and released from the ring */
	uint64_t acked, acked_bytes;
	uint64_t lost[LOST_COUNT], lost_bytes;
	struct chunked *partial; /* the head record, some of its chunks queued */
	uint64_t released0;      /* records released before we attached */
	struct evs_stream_stats end; /* the ring's counters when we let go of it */
};

struct fwd {
	struct follow fl;        /* the producer's streams */
	const char *brokers, *topic, *host;
	rd_kafka_t *rk;
	rd_kafka_topic_t *rkt;
	int partitions;
	size_t chunk_size;
	struct fcore *s;         /* FOLLOW_MAX_CORES of them, fl.n used */
	int dr_pipe[2];
	bool blocked, fatal, final;
	uint64_t flush_ns;       /* --flush-timeout */
	uint64_t flush_deadline; /* from the stop: taking and acknowledgements end (0: no stop yet) */
	bool progress, summary, status_shown;
	uint64_t t0, last_t, last_acked, last_bytes;
	uint64_t t_first_take, t_last_ack;
	bool acked_now;          /* an acknowledgement came in the last serve() */
	uint64_t blocked_turns;  /* times the queue was full */
	struct chunked chunks;   /* list head: every chunked record in flight */
	char first_err[LOST_COUNT][160];
};

static void usage(FILE *f)
{
	fprintf(f,
"usage: evs-forward --brokers HOST:PORT[,...] --topic T [options] [PRODUCER]\n"
"Publishes every event of a running producer (default evs-demo) to Kafka.\n"
"  -B, --brokers LIST    bootstrap servers, host:port[,host:port...]\n"
"  -T, --topic T         topic to publish to\n"
"  -c, --cores LIST      cores to forward, e.g. 0,2-3 (default all)\n"
"  -X key=value          a librdkafka setting (acks, linger.ms, compression.codec,\n"
"                        security.protocol, message.max.bytes, ...); repeatable\n"
"  -H, --host NAME       host part of the record keys (default: this host's name)\n"
"  -t, --seconds S       stop after S seconds (then take what is in the rings)\n"
"  -w, --wait S          wait up to S seconds for the producer to appear\n"
"      --timeout S       give up when no broker answers within S seconds at\n"
"                        start (default 10)\n"
"      --flush-timeout S from a stop (or the producer's end), wait up to S seconds\n"
"                        for the rings to be taken and acknowledged; the rest\n"
"                        is left in the rings or counted lost (default 30)\n"
"      --json FILE       write the final table as JSON to FILE\n"
"  -p, --progress        live status line even when stderr is not a terminal\n"
"  -s, --summary         table at the end even when stderr is not a terminal\n"
"  -q, --quiet           neither status line nor table\n"
"SIGINT, SIGTERM, SIGHUP: take what is in the rings, publish it, wait for the\n"
"acknowledgements (--flush-timeout from the signal), end (a second signal: end\n"
"now, counting the rest lost).\n"
"Exit status: 0 every event taken was acknowledged; 1 events were lost (or a\n"
"stream broke); 2 bad usage or setup (Kafka unreachable, no producer);\n"
"3 the producer died (its rings were drained first).\n");
}

/* ------------------------------------------------------------ accounting */

static int cause_of(struct fwd *f, rd_kafka_resp_err_t err)
{
	int c;

	switch (err) {
	case RD_KAFKA_RESP_ERR__MSG_TIMED_OUT:
	case RD_KAFKA_RESP_ERR__TIMED_OUT_QUEUE:
		c = LOST_TIMEOUT;
		break;
	case RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE:
	case RD_KAFKA_RESP_ERR_RECORD_LIST_TOO_LARGE:
		c = LOST_TOO_LARGE;
		break;
	case RD_KAFKA_RESP_ERR__PURGE_QUEUE:
	case RD_KAFKA_RESP_ERR__PURGE_INFLIGHT:
		c = LOST_SHUTDOWN;
		break;
	case RD_KAFKA_RESP_ERR__FATAL:
		c = LOST_FATAL;
		break;
	default:
		c = LOST_ERROR;
	}
	if (!f->first_err[c][0])
		snprintf(f->first_err[c], sizeof(f->first_err[c]), "%s", rd_kafka_err2str(err));
	return c;
}

static uint64_t lost_total(const struct fcore *s)
{
	uint64_t n = 0;

	for (int k = 0; k < LOST_COUNT; k++)
		n += s->lost[k];
	return n;
}

static uint64_t in_flight(const struct fcore *s)
{
	return s->taken - s->acked - lost_total(s);
}

/* Every chunk queued has its report: the record is acknowledged or lost. */
static void chunked_settle(struct fwd *f, struct chunked *c)
{
	struct fcore *s = c->s;

	if (c->acked + c->failed < c->queued || (c->queued < c->n && !c->abandoned))
		return;
	if (!c->failed && c->queued == c->n) {
		s->acked++;
		s->acked_bytes += c->bytes;
		f->acked_now = true;
	} else {
		/* some chunk never made it: a reader sees a torn record and
		 * drops it, so the whole record is lost */
		s->lost[c->failed ? c->cause : LOST_SHUTDOWN]++;
		s->lost_bytes += c->bytes;
	}
	c->prev->next = c->next;
	c->next->prev = c->prev;
	free(c);
}

static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
	struct fwd *f = opaque;
	uintptr_t tag = (uintptr_t)m->_private;

	(void)rk;
	if (f->final)
		return; /* counted already, at the end */
	if (tag & 1) {
		struct chunked *c = (struct chunked *)(tag & ~(uintptr_t)1);

		if (m->err) {
			if (!c->failed++)
				c->cause = cause_of(f, m->err);
		} else {
			c->acked++;
		}
		chunked_settle(f, c);
	} else {
		struct fcore *s = (struct fcore *)tag;

		if (m->err) {
			s->lost[cause_of(f, m->err)]++;
			s->lost_bytes += m->len;
		} else {
			s->acked++;
			s->acked_bytes += m->len;
			f->acked_now = true;
		}
	}
}

/* Delivery reports, errors and log lines, waiting up to ms; the time of
 * the last acknowledgement is read once per call, not per report. */
static void serve(struct fwd *f, int ms)
{
	rd_kafka_poll(f->rk, ms);
	if (f->acked_now) {
		f->t_last_ack = cli_now_ns();
		f->acked_now = false;
	}
}

static void on_error(rd_kafka_t *rk, int err, const char *reason, void *opaque)
{
	struct fwd *f = opaque;

	(void)rk;
	if (err == RD_KAFKA_RESP_ERR__FATAL) {
		char why[256];

		rd_kafka_fatal_error(f->rk, why, sizeof(why));
		fprintf(stderr, "evs-forward: kafka: fatal error, forwarding stops: %s\n", why);
		f->fatal = true;
		return;
	}
	kmsg_error_note((rd_kafka_resp_err_t)err, reason);
}

/* ------------------------------------------------------------ sending */

/* Bytes [off, off + len) of the record as it travels: header, then payload. */
static void record_slice(char *dst, const struct evs_record *rec, uint64_t off, size_t len)
{
	if (off < sizeof(rec->hdr)) {
		size_t k = sizeof(rec->hdr) - off < len ? sizeof(rec->hdr) - off : len;

		memcpy(dst, (const char *)&rec->hdr + off, k);
		dst += k;
		off += k;
		len -= k;
	}
	if (len)
		memcpy(dst, (const char *)rec->data + (off - sizeof(rec->hdr)), len);
}

/* Queues one message; librdkafka's error code (QUEUE_FULL: try later). */
static rd_kafka_resp_err_t produce(struct fwd *f, struct fcore *s, const struct kmsg_hdrs *h,
				   const struct evs_record *rec, uint64_t off, size_t len, void *opaque)
{
	char small[SMALL_COPY];
	char *buf = small;
	rd_kafka_vu_t vu[10];
	rd_kafka_error_t *e;
	rd_kafka_resp_err_t err;
	size_t n = 0;
	int flags = RD_KAFKA_MSG_F_COPY;

	/* small: built here and copied by librdkafka with the message (one
	 * allocation); large: built in a buffer librdkafka frees when done */
	if (len > sizeof(small)) {
		buf = malloc(len);
		if (!buf)
			return RD_KAFKA_RESP_ERR__QUEUE_FULL; /* memory is short: as a full queue */
		flags = RD_KAFKA_MSG_F_FREE;
	}
	record_slice(buf, rec, off, len);
	vu[n].vtype = RD_KAFKA_VTYPE_RKT;
	vu[n++].u.rkt = f->rkt;
	vu[n].vtype = RD_KAFKA_VTYPE_KEY;
	vu[n].u.mem.ptr = s->key;
	vu[n++].u.mem.size = s->keylen;
	vu[n].vtype = RD_KAFKA_VTYPE_VALUE;
	vu[n].u.mem.ptr = buf;
	vu[n++].u.mem.size = len;
	vu[n].vtype = RD_KAFKA_VTYPE_MSGFLAGS;
	vu[n++].u.i = flags;
	vu[n].vtype = RD_KAFKA_VTYPE_OPAQUE;
	vu[n++].u.ptr = opaque;
#define HEADER(NAME, VAL)                                        \
	do {                                                     \
		vu[n].vtype = RD_KAFKA_VTYPE_HEADER;             \
		vu[n].u.header.name = NAME;                      \
		vu[n].u.header.val = VAL;                        \
		vu[n++].u.header.size = (ssize_t)strlen(VAL);    \
	} while (0)
	HEADER(KMSG_SEQ, h->seq);
	HEADER(KMSG_TYPE, h->type);
	if (h->tensor) {
		HEADER(KMSG_DTYPE, h->dtype);
		HEADER(KMSG_SHAPE, h->shape);
	}
	if (h->chunk[0])
		HEADER(KMSG_CHUNK, h->chunk);
#undef HEADER
	e = rd_kafka_produceva(f->rk, vu, n);
	if (!e)
		return RD_KAFKA_RESP_ERR_NO_ERROR;
	err = rd_kafka_error_code(e);
	rd_kafka_error_destroy(e);
	if (buf != small)
		free(buf); /* not taken: still ours */
	return err;
}

/*
 * Queue the head record of s, whole or as chunks. 0: queued, release it;
 * -ENOBUFS: librdkafka's queue is full, keep it and come back (the chunks
 * queued so far stay queued); -EIO: refused, counted lost, release it.
 */
static int send_record(struct fwd *f, struct fcore *s, const struct evs_record *rec)
{
	uint64_t total = sizeof(rec->hdr) + rec->hdr.data_size;
	struct kmsg_hdrs h;
	struct chunked *c = s->partial;
	int err;

	kmsg_hdrs_fill(&h, &rec->hdr, rec->data);
	if (total <= f->chunk_size) {
		err = produce(f, s, &h, rec, 0, (size_t)total, s);
		if (err == RD_KAFKA_RESP_ERR__QUEUE_FULL)
			return -ENOBUFS;
		s->taken++;
		s->taken_bytes += total;
		if (err) {
			s->lost[cause_of(f, err)]++;
			s->lost_bytes += total;
			return -EIO;
		}
		return 0;
	}
	if (!c) {
		c = calloc(1, sizeof(*c));
		if (!c)
			return -ENOBUFS;
		c->s = s;
		c->bytes = total;
		c->n = (uint32_t)((total + f->chunk_size - 1) / f->chunk_size);
		c->next = &f->chunks;
		c->prev = f->chunks.prev;
		c->prev->next = c;
		f->chunks.prev = c;
		s->partial = c;
	}
	while (c->queued < c->n) {
		uint64_t off = (uint64_t)c->queued * f->chunk_size;
		size_t len = total - off < f->chunk_size ? (size_t)(total - off) : f->chunk_size;

		snprintf(h.chunk, sizeof(h.chunk), "%" PRIu32 "/%" PRIu32, c->queued, c->n);
		err = produce(f, s, &h, rec, off, len, (char *)c + 1);
		if (err == RD_KAFKA_RESP_ERR__QUEUE_FULL)
			return -ENOBUFS;
		if (err) {
			if (!c->failed++)
				c->cause = cause_of(f, err);
			c->abandoned = true;
			break;
		}
		c->queued++;
	}
	s->partial = NULL;
	s->taken++;
	s->taken_bytes += total;
	err = c->queued == c->n ? 0 : -EIO;
	chunked_settle(f, c); /* may free c */
	return err;
}

/* ------------------------------------------------------------ status */

static void status_clear(struct fwd *f)
{
	if (f->status_shown) {
		fputs("\r\033[K", stderr);
		f->status_shown = false;
	}
}

static void status_clear_cb(void *f)
{
	status_clear(f);
}

static uint64_t ring_drops(const struct fcore *s)
{
	struct evs_stream_stats st = { .sz = sizeof(st) };

	if (!s->st->c)
		return s->end.dropped; /* let go of */
	return evs_consumer__stats(s->st->c, &st) ? 0 : st.dropped;
}

static void totals(const struct fwd *f, uint64_t *taken, uint64_t *acked, uint64_t *bytes,
		   uint64_t *lost, uint64_t *flight, uint64_t *drops)
{
	*taken = *acked = *bytes = *lost = *flight = *drops = 0;
	for (unsigned int i = 0; i < f->fl.n; i++) {
		*taken += f->s[i].taken;
		*acked += f->s[i].acked;
		*bytes += f->s[i].acked_bytes;
		*lost += lost_total(&f->s[i]);
		*flight += in_flight(&f->s[i]);
		*drops += ring_drops(&f->s[i]);
	}
}

static void status_line(struct fwd *f)
{
	uint64_t t = cli_now_ns(), taken, acked, bytes, lost, flight, drops;
	double dt = (double)(t - f->last_t) / 1e9;

	totals(f, &taken, &acked, &bytes, &lost, &flight, &drops);
	fprintf(stderr, "\r\033[K%6.1fs %9.0f ev/s %8.1f MB/s acked  %" PRIu64 " taken, %" PRIu64
		" acked, %" PRIu64 " in flight, %" PRIu64 " lost, %" PRIu64 " dropped in the rings%s",
		(double)(t - f->t0) / 1e9, dt > 0 ? (double)(acked - f->last_acked) / dt : 0,
		dt > 0 ? (double)(bytes - f->last_bytes) / dt / 1e6 : 0, taken, acked, flight, lost, drops,
		f->blocked ? "  (Kafka queue full)" : "");
	f->last_t = t;
	f->last_acked = acked;
	f->last_bytes = bytes;
	f->status_shown = true;
}

static void write_table(struct fwd *f, FILE *out, bool json)
{
	uint64_t taken, acked, bytes, lost, flight, drops;
	double secs = (double)(cli_now_ns() - f->t0) / 1e9;
	double rate_s = f->t_last_ack > f->t_first_take ? (double)(f->t_last_ack - f->t_first_take) / 1e9 : 0;

	totals(f, &taken, &acked, &bytes, &lost, &flight, &drops);
	if (json) {
		fprintf(out, "{\"producer\":\"%s\",\"host\":\"%s\",\"topic\":\"%s\",\"partitions\":%d,"
			"\"chunk_size\":%zu,\"seconds\":%.3f,\"rate_seconds\":%.6f,\"taken\":%" PRIu64
			",\"acked\":%" PRIu64 ",\"acked_bytes\":%" PRIu64 ",\"lost\":%" PRIu64
			",\"in_flight\":%" PRIu64 ",\"queue_full\":%" PRIu64 ",\"cores\":[",
			f->fl.name, f->host, f->topic, f->partitions, f->chunk_size, secs, rate_s, taken, acked,
			bytes, lost, flight, f->blocked_turns);
	} else {
		fprintf(out, "evs-forward: %" PRIu64 " events, %.1f MB acknowledged in %.2f s (%.0f ev/s, "
			"%.1f MB/s) by topic '%s'\n",
			acked, (double)bytes / 1e6, secs, rate_s > 0 ? (double)acked / rate_s : 0,
			rate_s > 0 ? (double)bytes / rate_s / 1e6 : 0, f->topic);
		fprintf(out, "  core     taken        bytes     acked  in_flight");
		for (int k = 0; k < LOST_COUNT; k++)
			fprintf(out, "  %s", lost_names[k]);
		fprintf(out, "  left");
		for (int k = 0; k < EVS_DROP_CAUSE_COUNT; k++)
			fprintf(out, "  %s", evs_drop_cause_name(k));
		fputc('\n', out);
	}
	for (unsigned int i = 0; i < f->fl.n; i++) {
		struct fcore *s = &f->s[i];
		/* the ring as we let go of it (let_go()): what the producer
		 * commits after that is the next consumer's */
		const struct evs_stream_stats st = s->end;
		/* committed to the ring and released by no one: what a stop
		 * left behind */
		uint64_t left = st.committed - st.released;

		if (json) {
			fprintf(out, "%s{\"core\":%u,\"key\":\"%s\",\"produced\":%" PRIu64 ",\"committed\":%" PRIu64
				",\"released_before\":%" PRIu64 ",\"taken\":%" PRIu64 ",\"taken_bytes\":%" PRIu64 ",\"acked\":%" PRIu64
				",\"acked_bytes\":%" PRIu64 ",\"in_flight\":%" PRIu64 ",\"lost\":%" PRIu64
				",\"lost_bytes\":%" PRIu64,
				i ? "," : "", s->st->core, s->key, st.produced, st.committed, s->released0, s->taken,
				s->taken_bytes,
				s->acked, s->acked_bytes, in_flight(s), lost_total(s), s->lost_bytes);
			for (int k = 0; k < LOST_COUNT; k++)
				fprintf(out, ",\"lost_%s\":%" PRIu64, lost_names[k], s->lost[k]);
			fprintf(out, ",\"left\":%" PRIu64, left);
			for (int k = 0; k < EVS_DROP_CAUSE_COUNT; k++)
				fprintf(out, ",\"%s\":%" PRIu64, evs_drop_cause_name(k), st.dropped_events[k]);
			fprintf(out, ",\"producer_died\":%s}", s->st->died ? "true" : "false");
		} else {
			fprintf(out, "  %4u %9" PRIu64 " %12" PRIu64 " %9" PRIu64 " %10" PRIu64, s->st->core,
				s->taken, s->taken_bytes, s->acked, in_flight(s));
			/* each count under its name */
			for (int k = 0; k < LOST_COUNT; k++)
				fprintf(out, " %*" PRIu64, (int)strlen(lost_names[k]) + 1, s->lost[k]);
			fprintf(out, " %5" PRIu64, left);
			for (int k = 0; k < EVS_DROP_CAUSE_COUNT; k++)
				fprintf(out, " %*" PRIu64, (int)strlen(evs_drop_cause_name(k)) + 1,
					st.dropped_events[k]);
			fputc('\n', out);
		}
	}
	if (json) {
		fprintf(out, "],\"errors\":{");
		for (int k = 0, first = 1; k < LOST_COUNT; k++) {
			if (!f->first_err[k][0])
				continue;
			fprintf(out, "%s\"%s\":\"%s\"", first ? "" : ",", lost_names[k], f->first_err[k]);
			first = 0;
		}
		fprintf(out, "}}\n");
	} else {
		for (int k = 0; k < LOST_COUNT; k++)
			if (f->first_err[k][0])
				fprintf(out, "  lost as %s: %s\n", lost_names[k], f->first_err[k]);
	}
}

/* ------------------------------------------------------------ streams */

/*
 * Take up to BATCH records of a stream into Kafka's queue. Returns true
 * when the stream may still hold records (come back without sleeping).
 */
static bool stream_forward(struct fwd *f, struct fcore *s)
{
	struct follow_stream *st = s->st;

	for (size_t budget = BATCH; budget; budget--) {
		struct evs_record rec;
		int err;

		if (!follow_quota(&f->fl, st, 1))
			return false;
		err = evs_consumer__peek(st->c, &rec);
		if (err == -EAGAIN) {
			if (follow_empty(&f->fl, st))
				continue;
			return false;
		}
		if (err) {
			follow_end(&f->fl, st, err);
			return false;
		}
		if (!f->t_first_take)
			f->t_first_take = cli_now_ns();
		err = send_record(f, s, &rec);
		if (err == -ENOBUFS) {
			/* keep the record; the ring fills behind it and the
			 * runtime drops, not waits */
			f->blocked = true;
			f->blocked_turns++;
			return false;
		}
		evs_consumer__release(st->c);
		follow_took(&f->fl, st, 1);
		if (f->fatal)
			return false;
	}
	return true;
}

static void on_token(void *ctx, uint64_t tok)
{
	struct fwd *f = ctx;

	if (tok == FOLLOW_TOK_TICK && f->progress) {
		status_line(f);
	} else if (tok == TOK_DR) {
		follow_ack(f->dr_pipe[0]);
		f->blocked = false;
	}
}

/* A stop was asked (signal, --seconds): the flush timeout runs from now,
 * for taking what the rings hold as for the acknowledgements. */
static bool flush_due(struct fwd *f)
{
	uint64_t t = cli_now_ns();

	if (!f->fl.draining)
		return false;
	if (!f->flush_deadline)
		f->flush_deadline = t + f->flush_ns;
	return t >= f->flush_deadline;
}

static int run(struct fwd *f)
{
	struct follow *fl = &f->fl;

	while (fl->live && !fl->stop_now && !f->fatal) {
		bool busy = false;
		int n, timeout;

		/* Kafka's queue has stayed full since the stop: what was not
		 * taken stays in the rings (left), what is queued is purged */
		if (flush_due(f))
			break;
		serve(f, 0); /* delivery reports: may make room */
		if (f->blocked && rd_kafka_outq_len(f->rk) == 0)
			f->blocked = false;
		for (unsigned int i = 0; i < fl->n && !f->blocked && !fl->stop_now && !f->fatal; i++)
			if (!fl->s[i].done && fl->s[i].runnable)
				busy |= stream_forward(f, &f->s[i]);
		if (fl->stop_now || f->fatal || (fl->draining && follow_drained(fl)))
			break;
		/* a full queue: wait for delivery reports (the pipe), and try
		 * again now and then even without them */
		timeout = f->blocked ? 10 : busy ? 0 : -1;
		if (timeout < 0 && f->flush_deadline)
			timeout = 10; /* draining: the deadline is looked at */
		n = follow_poll(fl, timeout, on_token, f);
		if (n < 0)
			return n;
		flush_due(f); /* a stop now starts the flush timeout */
		if (f->blocked && n == 0)
			f->blocked = false;
	}
	return 0;
}

static void lost_by_cause(const struct fwd *f, uint64_t *n)
{
	memset(n, 0, LOST_COUNT * sizeof(*n));
	for (unsigned int i = 0; i < f->fl.n; i++)
		for (int k = 0; k < LOST_COUNT; k++)
			n[k] += f->s[i].lost[k];
}

/*
 * Nothing more is taken: a head record with some chunks queued is given
 * up (its other chunks will not follow), the rings' counters are kept for
 * the table, and the streams are let go of at once, before Kafka is waited
 * for: the producer sees no consumer from here on, and what its rings hold
 * (left) waits there for the next one. Every record taken was released
 * when it was queued, so nothing of ours is in a ring any more.
 */
static uint64_t let_go(struct fwd *f)
{
	uint64_t left = 0;

	for (unsigned int i = 0; i < f->fl.n; i++) {
		struct fcore *s = &f->s[i];
		struct chunked *c = s->partial;

		if (c) {
			s->partial = NULL;
			c->abandoned = true;
			s->taken++;
			s->taken_bytes += c->bytes;
			evs_consumer__release(s->st->c);
			chunked_settle(f, c);
		}
		s->end = (struct evs_stream_stats){ .sz = sizeof(s->end) };
		if (!evs_consumer__stats(s->st->c, &s->end))
			left += s->end.committed - s->end.released;
	}
	follow_detach(&f->fl);
	return left;
}

/* Nothing more will be queued: wait for the reports until the flush
 * deadline, purge what is late, and count anything still unreported as
 * lost at shutdown. */
static void finish(struct fwd *f)
{
	uint64_t taken, acked, bytes, lost, flight, drops;
	uint64_t before[LOST_COUNT], after[LOST_COUNT], purged = 0;
	struct signalfd_siginfo si;
	uint64_t left = let_go(f), t = cli_now_ns();

	/* from the stop, or from now when the producer ended */
	if (!f->flush_deadline)
		f->flush_deadline = t + f->flush_ns;
	totals(f, &taken, &acked, &bytes, &lost, &flight, &drops);
	if (f->summary && f->fl.draining) {
		status_clear(f);
		fprintf(stderr, "evs-forward: stopped taking: %" PRIu64 " events left in the rings for a later "
			"consumer", left);
		if (flight && !f->fl.stop_now && t < f->flush_deadline)
			fprintf(stderr, "; waiting up to %.1f s for Kafka to acknowledge %" PRIu64,
				(double)(f->flush_deadline - t) / 1e9, flight);
		fputc('\n', stderr);
	}
	for (;;) {
		t = cli_now_ns();
		totals(f, &taken, &acked, &bytes, &lost, &flight, &drops);
		if (!flight || t >= f->flush_deadline || f->fl.stop_now)
			break;
		serve(f, 100);
		if (read(f->fl.sfd, &si, sizeof(si)) == sizeof(si))
			f->fl.stop_now = true;
		if (f->progress && t - f->last_t >= (uint64_t)TICK_NS)
			status_line(f);
	}
	lost_by_cause(f, before);
	if (flight) {
		rd_kafka_purge(f->rk, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
		/* purged messages get their reports promptly */
		for (int i = 0; i < 50; i++) {
			serve(f, 20);
			totals(f, &taken, &acked, &bytes, &lost, &flight, &drops);
			if (!flight)
				break;
		}
	}
	/* whatever is still unreported is counted now; later reports are
	 * ignored (final) */
	f->final = true;
	for (unsigned int i = 0; i < f->fl.n; i++) {
		struct fcore *s = &f->s[i];
		uint64_t rest = in_flight(s);

		s->lost[LOST_SHUTDOWN] += rest;
		s->lost_bytes = s->taken_bytes - s->acked_bytes;
	}
	while (f->chunks.next != &f->chunks) {
		struct chunked *c = f->chunks.next;

		f->chunks.next = c->next;
		free(c);
	}
	f->chunks.prev = &f->chunks;
	/* said once the purge's reports are in, in the table's words: a
	 * record sent in chunks counts under the cause of its first failed
	 * chunk, which may have failed before the purge */
	lost_by_cause(f, after);
	for (int k = 0; k < LOST_COUNT; k++)
		purged += after[k] - before[k];
	if (purged) {
		bool other = purged != after[LOST_SHUTDOWN] - before[LOST_SHUTDOWN];

		status_clear(f);
		fprintf(stderr, "evs-forward: %" PRIu64 " events not acknowledged %s: purged and counted lost ",
			purged, f->fl.stop_now ? "when asked to stop at once" : "within the flush timeout");
		if (!other) {
			fputs("(shutdown)\n", stderr);
		} else {
			for (int k = 0, first = 1; k < LOST_COUNT; k++) {
				if (after[k] == before[k])
					continue;
				fprintf(stderr, "%s%" PRIu64 " %s", first ? "as " : ", ", after[k] - before[k], lost_names[k]);
				first = 0;
			}
			fputs(" (a record sent in chunks counts under the cause of its first failed chunk)\n", stderr);
		}
	}
}

/* ------------------------------------------------------------ setup */

/* Each stream connected: its record key, and what was taken before. */
static int add_core(void *ctx, struct follow_stream *st)
{
	struct fwd *f = ctx;
	struct fcore *s = &f->s[st - f->fl.s];
	struct evs_stream_stats stats = { .sz = sizeof(stats) };
	int len;

	*s = (struct fcore){ .st = st };
	/* by an earlier consumer: committed = released0 + taken + left */
	if (!evs_consumer__stats(st->c, &stats))
		s->released0 = stats.released;
	len = kmsg_key(s->key, f->host, f->fl.name, st->core);
	if (len < 0) {
		fprintf(stderr, "evs-forward: core %u: no record key for host '%s', producer '%s': %s\n",
			st->core, f->host, f->fl.name, strerror(-len));
		return len;
	}
	s->keylen = (size_t)len;
	return 0;
}

/*
 * Kafka must answer before any ring is touched: ask for the topic's
 * metadata until timeout_s. 0, or -errno after saying, by name, what is
 * unreachable or missing.
 */
static int kafka_check(struct fwd *f, double timeout_s)
{
	uint64_t deadline = cli_now_ns() + (uint64_t)(timeout_s * 1e9);
	rd_kafka_resp_err_t err, terr = RD_KAFKA_RESP_ERR_NO_ERROR;
	struct signalfd_siginfo si;

	for (;;) {
		const struct rd_kafka_metadata *md = NULL;
		uint64_t now = cli_now_ns();
		int ms = now < deadline ? (int)((deadline - now) / 1000000) : 0;

		err = rd_kafka_metadata(f->rk, 0, f->rkt, &md, ms < 500 ? (ms < 1 ? 1 : ms) : 500);
		if (!err) {
			terr = md->topic_cnt == 1 ? md->topics[0].err : RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC;
			if (!terr)
				f->partitions = md->topics[0].partition_cnt;
			rd_kafka_metadata_destroy(md);
			if (!terr && f->partitions > 0)
				return 0;
		}
		rd_kafka_poll(f->rk, 0);
		if (read(f->fl.sfd, &si, sizeof(si)) == sizeof(si)) {
			fprintf(stderr, "evs-forward: signal while waiting for Kafka at '%s'; nothing was "
				"forwarded\n", f->brokers);
			return -EINTR;
		}
		if (cli_now_ns() >= deadline)
			break;
		usleep(100000); /* no broker yet, or the topic is being created */
	}
	if (err)
		fprintf(stderr, "evs-forward: Kafka at '%s' is unreachable: no broker answered within "
			"%.3g s (%s); nothing was forwarded\n", f->brokers, timeout_s, rd_kafka_err2str(err));
	else
		fprintf(stderr, "evs-forward: topic '%s' is not available at '%s' after %.3g s: %s "
			"(create it, or let the cluster create topics on first use)\n", f->topic, f->brokers,
			timeout_s, rd_kafka_err2str(terr));
	return -EHOSTUNREACH;
}

static int kafka_open(struct fwd *f, char *const *props, unsigned int nprops)
{
	rd_kafka_conf_t *conf = rd_kafka_conf_new();
	char errstr[512], val[32];
	size_t len = sizeof(val);
	unsigned long mmb, qkb;

	/* ours first: -X may override any of them */
	if (kmsg_conf_set(conf, "bootstrap.servers", f->brokers) ||
	    kmsg_conf_set(conf, "client.id", "evs-forward") ||
	    /* retries never write a record twice */
	    kmsg_conf_set(conf, "enable.idempotence", "true") ||
	    /* a bounded queue: when Kafka is slow, the rings drop, not memory grows */
	    kmsg_conf_set(conf, "queue.buffering.max.kbytes", "65536") ||
	    kmsg_conf_set(conf, "queue.buffering.max.messages", "100000") ||
	    kmsg_conf_set(conf, "log.queue", "true") ||
	    kmsg_conf_apply(conf, props, nprops)) {
		rd_kafka_conf_destroy(conf);
		return -EINVAL;
	}
	if (rd_kafka_conf_get(conf, "message.max.bytes", val, &len) != RD_KAFKA_CONF_OK)
		snprintf(val, sizeof(val), "1000000");
	mmb = strtoul(val, NULL, 10);
	len = sizeof(val);
	if (rd_kafka_conf_get(conf, "queue.buffering.max.kbytes", val, &len) != RD_KAFKA_CONF_OK)
		snprintf(val, sizeof(val), "65536");
	qkb = strtoul(val, NULL, 10);
	if (mmb < KMSG_MIN_MESSAGE_MAX || mmb > qkb * 1024) {
		/* a message larger than the whole queue would wait forever */
		fprintf(stderr, "evs-forward: message.max.bytes %lu is %s; allowed is %u to "
			"queue.buffering.max.kbytes (%lu) * 1024\n", mmb,
			mmb < KMSG_MIN_MESSAGE_MAX ? "too small to carry records" : "larger than the queue",
			KMSG_MIN_MESSAGE_MAX, qkb);
		rd_kafka_conf_destroy(conf);
		return -EINVAL;
	}
	f->chunk_size = kmsg_chunk_size(mmb, KMSG_KEY_MAX);
	rd_kafka_conf_set_opaque(conf, f);
	rd_kafka_conf_set_dr_msg_cb(conf, on_delivery);
	rd_kafka_conf_set_error_cb(conf, on_error);
	rd_kafka_conf_set_log_cb(conf, kmsg_log_cb);
	f->rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
	if (!f->rk) {
		fprintf(stderr, "evs-forward: cannot create the Kafka producer: %s\n", errstr);
		rd_kafka_conf_destroy(conf);
		return -EINVAL;
	}
	/* log lines come through rd_kafka_poll(), on this thread */
	rd_kafka_set_log_queue(f->rk, NULL);
	f->rkt = rd_kafka_topic_new(f->rk, f->topic, NULL);
	if (!f->rkt) {
		fprintf(stderr, "evs-forward: topic '%s': %s\n", f->topic, rd_kafka_err2str(rd_kafka_last_error()));
		return -EINVAL;
	}
	/* a byte in the pipe when delivery reports wait on an empty queue */
	rd_kafka_queue_t *q = rd_kafka_queue_get_main(f->rk);

	rd_kafka_queue_io_event_enable(q, f->dr_pipe[1], "1", 1);
	rd_kafka_queue_destroy(q);
	return 0;
}

/* --json FILE, opened before anything is forwarded, so that a path that
 * cannot be written is refused then, not found out at the end; neither
 * truncated nor written to until then. The descriptor (*created when it
 * is new), or -1 after saying why. */
static int json_open(const char *path, bool *created)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);

	*created = fd >= 0;
	if (fd < 0 && errno == EEXIST)
		fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		fprintf(stderr, "evs-forward: --json '%s': cannot write it: %s\n", path, strerror(errno));
	return fd;
}

/* The final table into the file json_open() opened; closes fd. */
static int save_json(struct fwd *f, int fd, const char *path)
{
	FILE *out = ftruncate(fd, 0) ? NULL : fdopen(fd, "w");
	int err = 0;

	if (!out) {
		err = errno;
		close(fd);
		fprintf(stderr, "evs-forward: cannot write %s: %s\n", path, strerror(err));
		return -err;
	}
	write_table(f, out, true);
	if (fflush(out) || ferror(out))
		err = errno ? errno : EIO;
	if (fclose(out) && !err)
		err = errno;
	if (err)
		fprintf(stderr, "evs-forward: cannot write %s: %s\n", path, strerror(err));
	return -err;
}

int main(int argc, char **argv)
{
	enum { OPT_TIMEOUT = 256, OPT_FLUSH, OPT_JSON };
	static const struct option opts[] = {
		{ "brokers", required_argument, NULL, 'B' },
		{ "topic", required_argument, NULL, 'T' },
		{ "cores", required_argument, NULL, 'c' },
		{ "host", required_argument, NULL, 'H' },
		{ "seconds", required_argument, NULL, 't' },
		{ "wait", required_argument, NULL, 'w' },
		{ "timeout", required_argument, NULL, OPT_TIMEOUT },
		{ "flush-timeout", required_argument, NULL, OPT_FLUSH },
		{ "json", required_argument, NULL, OPT_JSON },
		{ "progress", no_argument, NULL, 'p' },
		{ "summary", no_argument, NULL, 's' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	static unsigned char core_set[FOLLOW_MAX_CORES];
	static char *props[MAX_PROPS];
	static char hostbuf[256];
	struct fwd f = { .fl = { .name = "evs-demo", .doing = "forwarding", .done = "forwarded", .took = "taken" },
			 .dr_pipe = { -1, -1 } };
	const char *json = NULL;
	int json_fd = -1;
	unsigned int nprops = 0;
	bool all_cores = true, quiet = false, tty = isatty(STDERR_FILENO), json_created = false;
	double seconds = 0, wait_s = 0, timeout_s = 10, flush_s = 30;
	int opt, err, rc = 0;

	f.chunks.next = f.chunks.prev = &f.chunks;
	f.progress = f.summary = tty;
	while ((opt = getopt_long(argc, argv, "B:T:c:X:H:t:w:psqh", opts, NULL)) != -1) {
		switch (opt) {
		case 'B': f.brokers = optarg; break;
		case 'T': f.topic = optarg; break;
		case 'c':
			if (follow_parse_cores(optarg, core_set))
				return 2;
			all_cores = false;
			break;
		case 'X':
			if (nprops == MAX_PROPS) {
				fprintf(stderr, "evs-forward: more than %d -X settings\n", MAX_PROPS);
				return 2;
			}
			props[nprops++] = optarg;
			break;
		case 'H': f.host = optarg; break;
		case 't':
			if (cli_parse_double("--seconds", optarg, CLI_SECONDS_MIN, CLI_SECONDS_MAX, "seconds", &seconds))
				return 2;
			break;
		case 'w':
			if (cli_parse_double("--wait", optarg, 0, CLI_SECONDS_MAX, "seconds", &wait_s))
				return 2;
			break;
		case OPT_TIMEOUT:
			if (cli_parse_double("--timeout", optarg, 0.1, 3600, "seconds", &timeout_s))
				return 2;
			break;
		case OPT_FLUSH:
			if (cli_parse_double("--flush-timeout", optarg, 0, 3600, "seconds", &flush_s))
				return 2;
			break;
		case OPT_JSON: json = optarg; break;
		case 'p': f.progress = f.summary = true; break;
		case 's': f.summary = true; break;
		case 'q': quiet = true; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (quiet)
		f.progress = f.summary = false;
	if (optind < argc)
		f.fl.name = argv[optind++];
	if (optind < argc) {
		fprintf(stderr, "evs-forward: unexpected argument '%s': it takes one PRODUCER at most\n",
			argv[optind]);
		usage(stderr);
		return 2;
	}
	if (!f.brokers || !f.topic) {
		fprintf(stderr, "evs-forward: %s is required (the Kafka cluster and the topic to publish to)\n",
			!f.brokers ? "--brokers" : "--topic");
		return 2;
	}
	/* librdkafka would wait its whole timeout for no broker at all */
	if (!*f.brokers || !*f.topic) {
		fprintf(stderr, "evs-forward: %s '' is empty: allowed is %s\n",
			!*f.brokers ? "--brokers" : "--topic",
			!*f.brokers ? "host:port[,host:port...]" : "a topic name");
		return 2;
	}
	if (!f.host) {
		if (gethostname(hostbuf, sizeof(hostbuf) - 1) < 0)
			snprintf(hostbuf, sizeof(hostbuf), "localhost");
		f.host = hostbuf;
	}
	if (!kmsg_name_ok(f.host, strlen(f.host)) || !kmsg_name_ok(f.fl.name, strlen(f.fl.name))) {
		fprintf(stderr, "evs-forward: %s '%s' cannot be part of a record key: use 1 to %d of "
			"[A-Za-z0-9._-], not starting with '.'%s\n",
			kmsg_name_ok(f.host, strlen(f.host)) ? "producer" : "host name",
			kmsg_name_ok(f.host, strlen(f.host)) ? f.fl.name : f.host, KMSG_NAME_MAX,
			kmsg_name_ok(f.host, strlen(f.host)) ? "" : " (choose one with --host)");
		return 2;
	}

	if (json && (json_fd = json_open(json, &json_created)) < 0)
		return 2;

	/* every message is allocated by librdkafka and freed at its delivery
	 * report, up to the queue's bound at a time: keep the freed memory
	 * for the next ones rather than give it back and fault it in again */
	mallopt(M_TRIM_THRESHOLD, 128 << 20);
	mallopt(M_MMAP_THRESHOLD, 4 << 20);
	f.fl.clear_status = status_clear_cb;
	f.fl.ctx = &f;
	/* before librdkafka starts its threads: they inherit the blocked
	 * signals, which then reach only the signalfd */
	if (follow_open(&f.fl)) {
		rc = 2;
		goto out;
	}
	f.s = calloc(FOLLOW_MAX_CORES, sizeof(*f.s));
	if (!f.s || pipe2(f.dr_pipe, O_NONBLOCK | O_CLOEXEC) < 0 || follow_add_fd(&f.fl, f.dr_pipe[0], TOK_DR)) {
		perror("evs-forward: setting up epoll");
		rc = 2;
		goto out;
	}
	if (kafka_open(&f, props, nprops) || kafka_check(&f, timeout_s)) {
		rc = 2;
		goto out;
	}
	if (f.summary)
		fprintf(stderr, "evs-forward: topic '%s' at '%s': %d partitions; keys %s/%s/<core>; records "
			"over %zu bytes go in chunks\n", f.topic, f.brokers, f.partitions, f.host, f.fl.name,
			f.chunk_size);
	if (follow_connect(&f.fl, core_set, all_cores, wait_s, add_core, &f) ||
	    follow_arm(&f.fl, TICK_NS, seconds)) {
		rc = 2;
		goto out;
	}
	f.t0 = f.last_t = cli_now_ns();
	f.flush_ns = (uint64_t)(flush_s * 1e9);

	err = run(&f);
	if (err) {
		fprintf(stderr, "evs-forward: epoll: %s\n", strerror(-err));
		rc = 2;
	}
	finish(&f);
	status_clear(&f);
	if (f.summary)
		write_table(&f, stderr, false);
	if (json_fd >= 0) {
		if (save_json(&f, json_fd, json))
			rc = rc ? rc : 1;
		json_fd = -1;
	}
	{
		uint64_t lost = 0;

		for (unsigned int i = 0; i < f.fl.n; i++)
			lost += lost_total(&f.s[i]);
		if (follow_any_broken(&f.fl) && !rc)
			rc = 1;
		if (lost) {
			fprintf(stderr, "evs-forward: %" PRIu64 " events were taken from the rings but not "
				"acknowledged by Kafka (counted lost, by cause, in the table)\n", lost);
			rc = rc ? rc : 1;
		}
		if (f.fatal)
			rc = rc ? rc : 1;
		if (follow_report_end(&f.fl, f.summary))
			rc = rc ? rc : 3; /* the producer died */
	}
out:
	if (f.rkt)
		rd_kafka_topic_destroy(f.rkt);
	if (f.rk) {
		f.final = true;
		rd_kafka_destroy(f.rk);
	}
	/* the streams were let go of in finish(), once taking ended; here
	 * only those of a setup that failed, and the descriptors */
	follow_close(&f.fl);
	/* setup failed before there was a table: a file made for it goes */
	if (json_fd >= 0) {
		close(json_fd);
		if (json_created)
			unlink(json);
	}
	for (int i = 0; i < 2; i++)
		if (f.dr_pipe[i] >= 0)
			close(f.dr_pipe[i]);
	free(f.s);
	return rc;
}

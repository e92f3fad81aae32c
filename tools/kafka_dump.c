/* SPDX-License-Identifier: MIT */
/*
 * evs-dump --kafka: a member of a Kafka consumer group reading the records
 * evs-forward published (tools/kafka_msg.h) and writing them with the
 * dump writer, one dump directory per host and producer. This is the
 * consumer: the group, offsets, the summary; each message's record is
 * checked and written by kafka_records.c (untrusted input, as shared
 * memory is).
 *
 * Offsets: a message's offset is stored once its record is written or
 * refused, and not while a record of its partition is half reassembled;
 * stored offsets are committed every 2 s, when a partition is read to its
 * end, before a partition is handed over and at the end. A reader that
 * stops or loses a partition leaves it to the next one from the first
 * chunk of a half-read record.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include <librdkafka/rdkafka.h>

#include "cli.h"
#include "jsonl.h"
#include "kafka_dump.h"
#include "kafka_msg.h"
#include "kafka_records.h"

#define TICK_NS 500000000ull
#define COMMIT_NS 2000000000ull  /* offsets committed at least this often */
#define POLL_MS 100

struct reader {
	const struct kafka_dump_opts *o;
	const char *group, *out;
	rd_kafka_t *rk;
	struct krec rec;         /* the records read, the sources written */
	unsigned int assigned;
	bool cooperative;
	struct dump_dir outdir;  /* the top directory, checked (dump_dir_open) */
	uint64_t t0, last_t, last_events, last_bytes, last_commit;
	bool stored;           /* offsets stored since the last commit */
	bool status_shown, fatal;
	bool joined;           /* the group gave this reader its first assignment */
};

static volatile sig_atomic_t signals;

static void on_signal(int sig)
{
	(void)sig;
	signals++;
}

static void status_clear(void *ctx)
{
	struct reader *r = ctx;

	if (r->status_shown) {
		fputs("\r\033[K", stderr);
		r->status_shown = false;
	}
}

static uint64_t total_bytes(const struct reader *r)
{
	uint64_t n = 0;

	for (const struct source *s = r->rec.sources; s; s = s->next)
		n += s->w.bytes;
	return n;
}

static uint64_t total_dups(const struct reader *r)
{
	uint64_t n = 0;

	/* skipped by each writer: at or below a seq already taken */
	for (const struct source *s = r->rec.sources; s; s = s->next)
		n += s->w.skipped;
	return n;
}

/* Everything of the partition read up to offset (included) is taken. */
static void store_offset(struct reader *r, int32_t partition, int64_t offset)
{
	rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);

	rd_kafka_topic_partition_list_add(l, r->o->topic, partition)->offset = offset + 1;
	rd_kafka_offsets_store(r->rk, l);
	r->stored = true;
	rd_kafka_topic_partition_list_destroy(l);
}

static void handle_message(struct reader *r, const rd_kafka_message_t *m)
{
	struct kpart *p = krec_part(&r->rec, m->partition);
	rd_kafka_headers_t *hdrs;

	if (m->err) {
		if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
			if (p)
				p->eof = true;
			/* caught up: have the group know it now, not at the
			 * next periodic commit (a rebalance may come first) */
			rd_kafka_commit(r->rk, NULL, 1);
			return;
		}
		status_clear(r);
		kmsg_error_note(m->err, rd_kafka_message_errstr(m));
		return;
	}
	/* none: NULL, and the record is malformed */
	if (rd_kafka_message_headers(m, &hdrs))
		hdrs = NULL;
	if (krec_message(&r->rec, m, hdrs))
		store_offset(r, m->partition, m->offset);
	for (int32_t q; (q = krec_released(&r->rec)) >= 0;)
		store_offset(r, q, r->rec.parts[q].last_offset);
}

/* ------------------------------------------------------------ group */

static void say_partitions(struct reader *r, const char *what, const rd_kafka_topic_partition_list_t *l)
{
	status_clear(r);
	fprintf(stderr, "evs-dump: %s partitions", what);
	for (int i = 0; i < l->cnt; i++)
		fprintf(stderr, "%s%" PRId32, i ? "," : " ", l->elems[i].partition);
	if (!l->cnt)
		fprintf(stderr, " (none)");
	fprintf(stderr, " of topic '%s' (group '%s')\n", r->o->topic, r->group);
}

static void on_rebalance(rd_kafka_t *rk, rd_kafka_resp_err_t err, rd_kafka_topic_partition_list_t *l,
			 void *opaque)
{
	struct reader *r = opaque;

	r->rec.last_activity = cli_now_ns();
	if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
		r->joined = true;
		for (int i = 0; i < l->cnt; i++) {
			struct kpart *p = krec_part(&r->rec, l->elems[i].partition);

			if (p && !p->assigned) {
				p->assigned = true;
				p->eof = false;
				r->assigned++;
			}
		}
		say_partitions(r, r->cooperative ? "also assigned" : "assigned", l);
		if (r->cooperative)
			rd_kafka_error_destroy(rd_kafka_incremental_assign(rk, l));
		else
			rd_kafka_assign(rk, l);
		return;
	}
	/* revoked: commit what was written, so that the next owner starts
	 * right after it; half-reassembled records are left to it */
	rd_kafka_commit(rk, NULL, 0);
	for (int i = 0; i < l->cnt; i++) {
		int32_t pid = l->elems[i].partition;
		struct kpart *p = krec_part(&r->rec, pid);

		krec_drop_partition(&r->rec, pid);
		if (p && p->assigned) {
			p->assigned = false;
			r->assigned--;
		}
	}
	if (!r->rec.stop)
		say_partitions(r, "handing over", l);
	if (r->cooperative)
		rd_kafka_error_destroy(rd_kafka_incremental_unassign(rk, l));
	else
		rd_kafka_assign(rk, NULL);
}

static void on_error(rd_kafka_t *rk, int err, const char *reason, void *opaque)
{
	struct reader *r = opaque;

	(void)rk;
	status_clear(r);
	if (err == RD_KAFKA_RESP_ERR__FATAL) {
		fprintf(stderr, "evs-dump: kafka: fatal error: %s\n", reason);
		r->fatal = r->rec.stop = true;
		return;
	}
	kmsg_error_note((rd_kafka_resp_err_t)err, reason);
}

/* ------------------------------------------------------------ output */

static void status_line(struct reader *r)
{
	uint64_t t = cli_now_ns(), bytes = total_bytes(r);
	double dt = (double)(t - r->last_t) / 1e9;

	fprintf(stderr, "\r\033[K%6.1fs %9.0f ev/s %8.1f MB/s  written %.1f MB in %" PRIu64
		" events from %" PRIu64 " messages, %u partitions",
		(double)(t - r->t0) / 1e9, dt > 0 ? (double)(r->rec.events - r->last_events) / dt : 0,
		dt > 0 ? (double)(bytes - r->last_bytes) / dt / 1e6 : 0, (double)bytes / 1e6, r->rec.events,
		r->rec.messages, r->assigned);
	r->last_t = t;
	r->last_events = r->rec.events;
	r->last_bytes = bytes;
	r->status_shown = true;
}

static void write_source_json(FILE *f, const struct reader *r, const struct source *s)
{
	fprintf(f, "{\"host\":");
	json_put_str(f, s->host);
	fprintf(f, ",\"producer\":");
	json_put_str(f, s->producer);
	fprintf(f, ",\"topic\":");
	json_put_str(f, r->o->topic);
	fprintf(f, ",\"events\":%" PRIu64 ",\"bytes\":%" PRIu64 ",\"failed\":%" PRIu64 ",\"bad\":%" PRIu64
		",\"cores\":[", s->w.events, s->w.bytes, s->w.failed, s->w.bad);
	for (unsigned int c = 0, first = 1; c < DUMP_MAX_CORES; c++) {
		const struct kcore *k = s->cores[c];
		const struct dump_core *d = c < s->w.ncores ? &s->w.cores[c] : NULL;

		if (!k)
			continue;
		fprintf(f, "%s{\"core\":%u,\"partition\":%" PRId32 ",\"events\":%" PRIu64 ",\"tensors\":%" PRIu64
			",\"bytes\":%" PRIu64 ",\"gaps\":%" PRIu64 ",\"duplicates\":%" PRIu64 ",\"failed\":%" PRIu64
			",\"bad\":%" PRIu64 "}",
			first ? "" : ",", c, k->partition, d ? d->events : 0, d ? d->tensors : 0, d ? d->bytes : 0,
			d ? d->gaps : 0, d ? d->skipped : 0, d ? d->failed : 0, d ? d->bad : 0);
		first = 0;
	}
	fprintf(f, "]}");
}

static void write_summary(struct reader *r, FILE *f, bool json)
{
	double secs = (double)(cli_now_ns() - r->t0) / 1e9;
	uint64_t bytes = total_bytes(r), dups = total_dups(r);

	if (json) {
		fprintf(f, "{\"kafka\":{\"brokers\":");
		json_put_str(f, r->o->brokers);
		fprintf(f, ",\"topic\":");
		json_put_str(f, r->o->topic);
		fprintf(f, ",\"group\":");
		json_put_str(f, r->group);
		fprintf(f, "},\"seconds\":%.3f,\"messages\":%" PRIu64 ",\"events\":%" PRIu64 ",\"bytes\":%" PRIu64
			",\"duplicates\":%" PRIu64 ",\"torn\":%" PRIu64 ",\"orphan_chunks\":%" PRIu64
			",\"unfinished\":%" PRIu64 ",\"malformed\":%" PRIu64 ",\"refused\":%" PRIu64 ",\"partitions\":[",
			secs, r->rec.messages, r->rec.events, bytes, dups, r->rec.torn, r->rec.orphans, r->rec.unfinished, r->rec.malformed,
			r->rec.refused);
		for (int p = 0, first = 1; p < r->rec.nparts; p++) {
			const struct kpart *kp = &r->rec.parts[p];

			if (!kp->seen)
				continue;
			fprintf(f, "%s{\"partition\":%d,\"messages\":%" PRIu64 ",\"first_offset\":%" PRId64
				",\"last_offset\":%" PRId64 ",\"skipped_offsets\":%" PRIu64 "}",
				first ? "" : ",", p, kp->messages, kp->first_offset, kp->last_offset, kp->skipped);
			first = 0;
		}
		fprintf(f, "],\"sources\":[");
		for (const struct source *s = r->rec.sources; s; s = s->next) {
			write_source_json(f, r, s);
			if (s->next)
				fputc(',', f);
		}
		fprintf(f, "]}\n");
		return;
	}
	fprintf(f, "evs-dump: %" PRIu64 " events, %.1f MB in %.2f s (%.0f ev/s, %.1f MB/s) from topic '%s' "
		"to %s\n", r->rec.events, (double)bytes / 1e6, secs, secs > 0 ? (double)r->rec.events / secs : 0,
		secs > 0 ? (double)bytes / secs / 1e6 : 0, r->o->topic, r->out);
	fprintf(f, "  host/producer                             core  partition    events   tensors        "
		"bytes    gaps  duplicates  failed\n");
	for (const struct source *s = r->rec.sources; s; s = s->next) {
		char name[2 * KMSG_NAME_MAX + 2];

		snprintf(name, sizeof(name), "%s/%s", s->host, s->producer);
		for (unsigned int c = 0; c < DUMP_MAX_CORES; c++) {
			const struct kcore *k = s->cores[c];
			const struct dump_core *d = c < s->w.ncores ? &s->w.cores[c] : NULL;

			if (!k)
				continue;
			fprintf(f, "  %-40s %5u %10" PRId32 " %9" PRIu64 " %9" PRIu64 " %12" PRIu64 " %7" PRIu64
				" %11" PRIu64 " %7" PRIu64 "\n", name, c, k->partition, d ? d->events : 0,
				d ? d->tensors : 0, d ? d->bytes : 0, d ? d->gaps : 0, d ? d->skipped : 0,
				d ? d->failed : 0);
		}
	}
	fprintf(f, "evs-dump: read partitions");
	for (int p = 0, first = 1; p < r->rec.nparts; p++) {
		if (!r->rec.parts[p].seen)
			continue;
		fprintf(f, "%s%d (offsets %" PRId64 "-%" PRId64 ")", first ? " " : ", ", p,
			r->rec.parts[p].first_offset, r->rec.parts[p].last_offset);
		first = 0;
	}
	if (!r->rec.messages)
		fprintf(f, " none");
	fputc('\n', f);
}

struct source_summary {
	struct reader *r;
	struct source *s;
};

static void fill_source_summary(FILE *f, void *ctx)
{
	struct source_summary *ss = ctx;

	write_source_json(f, ss->r, ss->s);
	fputc('\n', f);
}

/* summary.json of one source, beside its index: whole or absent. */
static int save_source_summary(struct reader *r, struct source *s)
{
	struct source_summary ss = { r, s };
	int err = json_file_whole(s->w.out.fd, "summary.json", fill_source_summary, &ss);

	if (err)
		fprintf(stderr, "evs-dump: cannot write %s/summary.json: %s\n", s->w.dir, strerror(-err));
	return err;
}

static void fill_summary(FILE *f, void *r)
{
	write_summary(r, f, true);
}

static int save_summary(struct reader *r)
{
	int err = json_file_whole(r->outdir.fd, "summary.json", fill_summary, r);

	if (err)
		fprintf(stderr, "evs-dump: cannot write %s/summary.json: %s\n", r->out, strerror(-err));
	return err;
}

/* ------------------------------------------------------------ setup */

/* The top directory: made if missing, checked like every output directory
 * (dump_dir_open: no link, ours or root's, not writable by others unless
 * sticky), refused unless empty (a dump, or what a killed reader left,
 * which has no summary.json: that is written, whole, at the end), and
 * checked writable now. */
static int out_open(struct reader *r)
{
	int fd, err;

	err = dump_dir_open(&r->outdir, AT_FDCWD, r->out, r->out);
	if (err)
		return err;
	err = dump_dir_check_empty(&r->outdir, r->out);
	if (err) {
		dump_dir_close(&r->outdir, true);
		return err;
	}
	/* writable? (the summary itself appears only whole, at the end) */
	fd = create_tmp_at(r->outdir.fd, ".summary.json.tmp");
	if (fd < 0)
		goto fail;
	close(fd);
	unlinkat(r->outdir.fd, ".summary.json.tmp", 0);
	return 0;
fail:
	err = errno;
	fprintf(stderr, "evs-dump: cannot write to output directory '%s': %s\n", r->out, strerror(err));
	dump_dir_close(&r->outdir, true);
	return -err;
}

/* Nothing was read: take back what out_open made. */
static void out_abort(struct reader *r)
{
	dump_dir_close(&r->outdir, true);
}

/* A broker must answer and the topic exist before anything is written. */
static int kafka_check(struct reader *r)
{
	uint64_t deadline = cli_now_ns() + (uint64_t)(r->o->timeout * 1e9);
	rd_kafka_resp_err_t err, terr = RD_KAFKA_RESP_ERR_NO_ERROR;
	rd_kafka_topic_t *rkt = rd_kafka_topic_new(r->rk, r->o->topic, NULL);

	if (!rkt)
		return -EINVAL;
	for (;;) {
		const struct rd_kafka_metadata *md = NULL;

		err = rd_kafka_metadata(r->rk, 0, rkt, &md, 500);
		if (!err) {
			terr = md->topic_cnt == 1 ? md->topics[0].err : RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC;
			rd_kafka_metadata_destroy(md);
			if (!terr)
				break;
		}
		if (signals || cli_now_ns() >= deadline)
			break;
		usleep(100000);
	}
	rd_kafka_topic_destroy(rkt);
	if (signals) {
		fprintf(stderr, "evs-dump: signal while waiting for Kafka at '%s'; nothing was dumped\n",
			r->o->brokers);
		return -EINTR;
	}
	if (err) {
		fprintf(stderr, "evs-dump: Kafka at '%s' is unreachable: no broker answered within %.3g s (%s); "
			"nothing was dumped\n", r->o->brokers, r->o->timeout, rd_kafka_err2str(err));
		return -EHOSTUNREACH;
	}
	if (terr) {
		fprintf(stderr, "evs-dump: topic '%s' is not available at '%s': %s\n", r->o->topic,
			r->o->brokers, rd_kafka_err2str(terr));
		return -ENOENT;
	}
	return 0;
}

static int kafka_open(struct reader *r)
{
	rd_kafka_conf_t *conf = rd_kafka_conf_new();
	char errstr[512];

	if (kmsg_conf_set(conf, "bootstrap.servers", r->o->brokers) ||
	    kmsg_conf_set(conf, "group.id", r->group) ||
	    kmsg_conf_set(conf, "client.id", "evs-dump") ||
	    /* a new group reads the topic from its start */
	    kmsg_conf_set(conf, "auto.offset.reset", "earliest") ||
	    /* offsets are stored once their records are written, and
	     * committed by this reader when it knows it is a good moment */
	    kmsg_conf_set(conf, "enable.auto.offset.store", "false") ||
	    kmsg_conf_set(conf, "enable.auto.commit", "false") ||
	    kmsg_conf_set(conf, "enable.partition.eof", "true") ||
	    kmsg_conf_set(conf, "log.queue", "true") ||
	    kmsg_conf_apply(conf, r->o->props, r->o->nprops)) {
		rd_kafka_conf_destroy(conf);
		return -EINVAL;
	}
	rd_kafka_conf_set_opaque(conf, r);
	rd_kafka_conf_set_rebalance_cb(conf, on_rebalance);
	rd_kafka_conf_set_error_cb(conf, on_error);
	rd_kafka_conf_set_log_cb(conf, kmsg_log_cb);
	r->rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof(errstr));
	if (!r->rk) {
		fprintf(stderr, "evs-dump: cannot create the Kafka consumer: %s\n", errstr);
		rd_kafka_conf_destroy(conf);
		return -EINVAL;
	}
	rd_kafka_set_log_queue(r->rk, NULL);
	/* one queue for messages, rebalances, errors and logs */
	rd_kafka_poll_set_consumer(r->rk);
	r->cooperative = !strcmp(rd_kafka_rebalance_protocol(r->rk), "COOPERATIVE");
	return 0;
}

static bool idle(struct reader *r, uint64_t now)
{
	/* joining a group takes seconds: that is not idleness */
	if (!r->o->until_idle || !r->joined || now - r->rec.last_activity < (uint64_t)(r->o->until_idle * 1e9))
		return false;
	for (int p = 0; p < r->rec.nparts; p++)
		if (r->rec.parts[p].assigned && !r->rec.parts[p].eof)
			return false;
	return true;
}

int kafka_dump_main(const struct kafka_dump_opts *o)
{
	struct reader r = { .o = o, .group = o->group ? o->group : "evs-dump", .out = o->out ? o->out : "dump",
			    .outdir = { .fd = -1, .parentfd = -1 } };
	struct sigaction sa = { .sa_handler = on_signal };
	rd_kafka_topic_partition_list_t *topics;
	rd_kafka_resp_err_t err;
	uint64_t deadline;
	int rc = 0;

	/* librdkafka's threads block every signal: they reach this thread */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	if (out_open(&r))
		return 2;
	r.rec = (struct krec){ .out = r.out, .outfd = r.outdir.fd, .mode = o->mode, .print = o->print,
			       .max_events = o->max_events, .clear_status = status_clear, .ctx = &r };
	if (kafka_open(&r) || kafka_check(&r)) {
		if (r.rk)
			rd_kafka_destroy(r.rk);
		out_abort(&r);
		return 2;
	}
	topics = rd_kafka_topic_partition_list_new(1);
	rd_kafka_topic_partition_list_add(topics, o->topic, RD_KAFKA_PARTITION_UA);
	err = rd_kafka_subscribe(r.rk, topics);
	rd_kafka_topic_partition_list_destroy(topics);
	if (err) {
		fprintf(stderr, "evs-dump: cannot subscribe to topic '%s': %s\n", o->topic, rd_kafka_err2str(err));
		rd_kafka_destroy(r.rk);
		out_abort(&r);
		return 2;
	}
	r.t0 = r.last_t = r.rec.last_activity = cli_now_ns();
	deadline = o->seconds > 0 ? r.t0 + (uint64_t)(o->seconds * 1e9) : UINT64_MAX;

	while (!r.rec.stop && !signals) {
		rd_kafka_message_t *m = rd_kafka_consumer_poll(r.rk, POLL_MS);
		uint64_t now;

		if (m) {
			handle_message(&r, m);
			rd_kafka_message_destroy(m);
		}
		now = cli_now_ns();
		if (now >= deadline || idle(&r, now))
			break;
		if (now - r.last_commit >= COMMIT_NS && r.stored) {
			rd_kafka_commit(r.rk, NULL, 1);
			r.last_commit = now;
			r.stored = false;
		}
		if (now - r.last_t >= TICK_NS) {
			for (struct source *s = r.rec.sources; s; s = s->next)
				if (s->open)
					dump_writer_flush(&s->w);
			if (o->progress)
				status_line(&r);
			else
				r.last_t = now;
		}
	}
	/* half-reassembled records: their offsets were not committed, the
	 * group reads them again */
	krec_finish(&r.rec);
	r.rec.stop = true;
	err = rd_kafka_commit(r.rk, NULL, 0);
	if (err && err != RD_KAFKA_RESP_ERR__NO_OFFSET) {
		status_clear(&r);
		fprintf(stderr, "evs-dump: kafka: could not commit the offsets read (%s): the group's next "
			"reader reads the last records again (duplicates are skipped within one dump)\n",
			rd_kafka_err2str(err));
	}
	/* leaves the group (a last commit on the way out) */
	rd_kafka_consumer_close(r.rk);
	rd_kafka_destroy(r.rk);
	status_clear(&r);
	fflush(stdout);

	for (struct source *s = r.rec.sources; s; s = s->next) {
		if (!s->open)
			continue;
		if (dump_writer_close_index(&s->w) || save_source_summary(&r, s))
			rc = 1;
		if (s->w.failed) {
			fprintf(stderr, "evs-dump: %s: %" PRIu64 " events could not be written (%s); no partial "
				"files were left\n", s->w.dir, s->w.failed, strerror(s->w.first_errno));
			rc = 1;
		}
		if (s->w.index_errno) {
			fprintf(stderr, "evs-dump: %s/index.jsonl is incomplete (%s)\n", s->w.dir,
				strerror(s->w.index_errno));
			rc = 1;
		}
		if (s->w.bad) {
			fprintf(stderr, "evs-dump: %s: %" PRIu64 " malformed events were indexed as \"bad\"\n",
				s->w.dir, s->w.bad);
			rc = 1;
		}
	}
	if (save_summary(&r))
		rc = 1;
	if (o->summary)
		write_summary(&r, stderr, false);
	if (r.rec.torn || r.rec.orphans || r.rec.malformed || r.rec.refused) {
		fprintf(stderr, "evs-dump: not written: %" PRIu64 " torn records (chunks missing or out of order), %"
			PRIu64 " chunks without their record's start, %" PRIu64 " malformed messages, %" PRIu64
			" records with no place to go\n", r.rec.torn, r.rec.orphans, r.rec.malformed, r.rec.refused);
		rc = 1;
	}
	if (r.rec.unfinished && o->summary)
		fprintf(stderr, "evs-dump: %" PRIu64 " records were still arriving in chunks at the end: left to "
			"the group's next reader\n", r.rec.unfinished);
	if (r.rec.werr || r.fatal)
		rc = 1;
	if (krec_free(&r.rec) && !rc)
		rc = 1;
	dump_dir_close(&r.outdir, false);
	return rc;
}

/* SPDX-License-Identifier: MIT */
/*
 * evs-dump --kafka's records (kafka_records.h): what a message holds is
 * untrusted like shared memory is: keys are checked before they name a
 * directory, every record's header is checked against its message, and a
 * record split in chunks is written only when every chunk arrived in order
 * (otherwise it is counted torn, never written in part). Within one
 * reader, a sequence number at or below one already written is a
 * duplicate: the dump writer skips and counts it, as for every dump.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "kafka_records.h"

struct kpart *krec_part(struct krec *r, int32_t p)
{
	if (p < 0 || p >= 1 << 20)
		return NULL;
	if (p >= r->nparts) {
		int n = p + 1 > r->nparts * 2 ? p + 1 : r->nparts * 2;
		struct kpart *np = realloc(r->parts, (size_t)n * sizeof(*np));

		if (!np)
			return NULL;
		memset(np + r->nparts, 0, (size_t)(n - r->nparts) * sizeof(*np));
		r->parts = np;
		r->nparts = n;
	}
	return &r->parts[p];
}

/* ------------------------------------------------------------ sources */

static struct source *source_get(struct krec *r, const struct kmsg_source *k)
{
	struct source *s;
	char dir[4096], rel[sizeof(s->host) + sizeof(s->producer) + 1];

	for (s = r->sources; s; s = s->next)
		if (!strcmp(s->host, k->host) && !strcmp(s->producer, k->producer))
			return s;
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	memcpy(s->host, k->host, sizeof(s->host));
	memcpy(s->producer, k->producer, sizeof(s->producer));
	s->w.print = r->print;
	s->w.clear_status = r->clear_status;
	s->w.ctx = r->ctx;
	/* both names were checked: [A-Za-z0-9._-], not starting with '.';
	 * made and opened from the top directory's descriptor */
	snprintf(rel, sizeof(rel), "%s/%s", s->host, s->producer);
	snprintf(dir, sizeof(dir), "%s/%s", r->out, rel);
	if (!strcmp(s->host, "summary.json")) {
		/* the reader's own OUT/summary.json, written at the end: a
		 * host's directory of that name would keep it out */
		s->broken = true;
	} else if (dump_writer_openat(&s->w, r->outfd, rel, dir, r->mode)) {
		s->broken = true;
	} else {
		s->open = true;
	}
	s->next = r->sources;
	r->sources = s;
	return s;
}

static struct kcore *kcore_get(struct source *s, unsigned int core)
{
	if (!s->cores[core])
		s->cores[core] = calloc(1, sizeof(struct kcore));
	return s->cores[core];
}

static void assembly_drop(struct krec *r, struct kcore *k)
{
	struct kpart *p = krec_part(r, k->partition);

	free(k->buf);
	k->buf = NULL;
	if (p && p->open && !--p->open)
		p->released = r->released = true;
}

/* ------------------------------------------------------------ records */

/* A whole record: checked against its message, then written unless it is
 * a duplicate (the writer's check). */
static void deliver(struct krec *r, struct source *s, unsigned int core, const uint8_t *value,
		    uint64_t len, uint64_t seq)
{
	struct evs_event_header h;
	int err;

	if (len < sizeof(h)) {
		r->malformed++;
		return;
	}
	memcpy(&h, value, sizeof(h));
	if (h.data_size != len - sizeof(h) || h.seq != seq) {
		r->malformed++;
		return;
	}
	if (!s->open) {
		r->refused++;
		return;
	}
	err = dump_writer_record(&s->w, core, &h, value + sizeof(h));
	if (err == DUMP_SKIPPED)
		return; /* a duplicate: counted in the core's skipped */
	r->events++;
	if (err) {
		r->clear_status(r->ctx);
		fprintf(stderr, "evs-dump: %s/%s core %u: %s\n", s->host, s->producer, core, strerror(-err));
		r->werr = err;
		r->stop = true;
	}
	if (r->max_events && r->events >= r->max_events)
		r->stop = true;
}

static void take_record(struct krec *r, const rd_kafka_message_t *m, const rd_kafka_headers_t *hdrs)
{
	struct kmsg_source src;
	struct kmsg_meta meta;
	struct evs_event_header h;
	struct source *s;
	struct kcore *k;
	struct kpart *p;

	if (kmsg_parse_key(m->key, m->key_len, &src) || kmsg_meta_parse(hdrs, &meta)) {
		r->malformed++;
		return;
	}
	s = source_get(r, &src);
	k = s ? kcore_get(s, src.core) : NULL;
	if (!k) {
		r->refused++;
		return;
	}
	if (k->buf && (meta.nchunks == 1 || meta.chunk == 0 || m->partition != k->partition)) {
		/* a record began before the last one was whole, or its
		 * chunks come from two partitions (one record's are in one:
		 * its partition's offsets wait for it) */
		assembly_drop(r, k);
		r->torn++;
	}
	k->partition = m->partition;
	if (meta.nchunks == 1) {
		deliver(r, s, src.core, m->payload, m->len, meta.seq);
		return;
	}
	if (meta.chunk == 0) {
		/* the first chunk starts with the record's header: its size */
		if (m->len < sizeof(h)) {
			r->malformed++;
			return;
		}
		memcpy(&h, m->payload, sizeof(h));
		if (h.seq != meta.seq || h.data_size > KMSG_RECORD_MAX ||
		    sizeof(h) + h.data_size <= m->len ||
		    (sizeof(h) + h.data_size + m->len - 1) / m->len != meta.nchunks) {
			r->malformed++;
			return;
		}
		k->total = sizeof(h) + h.data_size;
		/* the header's size is a claim: hold only what came, room
		 * for about as much again */
		k->cap = 2 * m->len < k->total ? 2 * m->len : k->total;
		k->buf = malloc(k->cap);
		if (!k->buf) {
			r->refused++;
			return;
		}
		memcpy(k->buf, m->payload, m->len);
		k->got = m->len;
		k->seq = meta.seq;
		k->next_chunk = 1;
		k->nchunks = meta.nchunks;
		p = krec_part(r, m->partition);
		if (p)
			p->open++;
		return;
	}
	if (!k->buf) {
		/* its first chunk was never read (or came out of order) */
		r->orphans++;
		return;
	}
	/* evs-forward never writes an empty chunk (nor one past the size) */
	if (meta.seq != k->seq || meta.chunk != k->next_chunk || meta.nchunks != k->nchunks ||
	    m->len == 0 || m->len > k->total - k->got) {
		assembly_drop(r, k);
		r->torn++;
		r->orphans++;
		return;
	}
	if (k->got + m->len > k->cap) {
		uint64_t cap = k->cap * 2 < k->total ? k->cap * 2 : k->total;
		uint8_t *nb;

		if (cap < k->got + m->len)
			cap = k->got + m->len;
		nb = realloc(k->buf, cap);
		if (!nb) {
			assembly_drop(r, k);
			r->refused++;
			return;
		}
		k->buf = nb;
		k->cap = cap;
	}
	memcpy(k->buf + k->got, m->payload, m->len);
	k->got += m->len;
	if (++k->next_chunk < k->nchunks)
		return;
	if (k->got == k->total)
		deliver(r, s, src.core, k->buf, k->total, k->seq);
	else
		r->torn++;
	assembly_drop(r, k);
}

bool krec_message(struct krec *r, const rd_kafka_message_t *m, const rd_kafka_headers_t *hdrs)
{
	struct kpart *p = krec_part(r, m->partition);

	if (!p)
		return false;
	r->messages++;
	r->last_activity = cli_now_ns();
	p->eof = false;
	p->messages++;
	if (!p->seen) {
		p->seen = true;
		p->first_offset = m->offset;
	} else if (m->offset > p->last_offset + 1) {
		/* gone before this reader came (retention), or read by
		 * another member meanwhile */
		p->skipped += (uint64_t)(m->offset - p->last_offset - 1);
	}
	p->last_offset = m->offset;
	take_record(r, m, hdrs);
	/* its own offset is stored by the caller, with this answer */
	p->released = false;
	/* not past the first chunk of a record still being put together */
	return !p->open;
}

int32_t krec_released(struct krec *r)
{
	/* rare (a record torn across partitions): no walk per message */
	if (!r->released)
		return -1;
	for (int32_t i = 0; i < r->nparts; i++)
		if (r->parts[i].released) {
			r->parts[i].released = false;
			if (!r->parts[i].open)
				return i;
		}
	r->released = false;
	return -1;
}

void krec_drop_partition(struct krec *r, int32_t partition)
{
	for (struct source *s = r->sources; s; s = s->next)
		for (unsigned int c = 0; c < DUMP_MAX_CORES; c++)
			if (s->cores[c] && s->cores[c]->buf && s->cores[c]->partition == partition)
				assembly_drop(r, s->cores[c]);
	/* not this reader's to store any more */
	if (partition >= 0 && partition < r->nparts)
		r->parts[partition].released = false;
}

void krec_finish(struct krec *r)
{
	for (struct source *s = r->sources; s; s = s->next)
		for (unsigned int c = 0; c < DUMP_MAX_CORES; c++)
			if (s->cores[c] && s->cores[c]->buf) {
				assembly_drop(r, s->cores[c]);
				r->unfinished++;
			}
	/* an unfinished record is the next reader's to read whole */
	for (int32_t i = 0; i < r->nparts; i++)
		r->parts[i].released = false;
}

int krec_free(struct krec *r)
{
	int rc = 0;

	while (r->sources) {
		struct source *s = r->sources;

		r->sources = s->next;
		if (s->open && dump_writer_close(&s->w))
			rc = 1;
		for (unsigned int c = 0; c < DUMP_MAX_CORES; c++)
			free(s->cores[c]);
		free(s);
	}
	free(r->parts);
	r->parts = NULL;
	r->nparts = 0;
	return rc;
}

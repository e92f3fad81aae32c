/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: evs-dump --kafka's records (tools/kafka_records.c) fed
 * arbitrary Kafka messages, as anyone allowed to write to the topic could
 * put there.
 *
 * The input is a sequence of messages, each with a key, up to 7 headers
 * (evs.seq, evs.type, evs.dtype, evs.shape, evs.chunk or any name, any
 * value or none), a value, a partition and an offset; or a partition
 * handed over. So chunks of one record across messages and partitions,
 * duplicates, chunks out of order, headers that contradict their value and
 * sizes no message holds are all reachable. They go through krec_message()
 * exactly as the consumer loop hands them in, writing into a fresh output
 * directory in all three dump modes, which is removed after each input.
 *
 * After every message, each partition's count of half-reassembled records
 * is the number of cores reassembling one from it (the offsets the reader
 * stores depend on it), and a reassembly holds at most twice the bytes
 * that arrived for it, whatever size its header claims (run.sh's memory
 * limit also stops any single allocation past 1 GiB). At the end every
 * count is zero and the output directory is the only thing written (in
 * /dev/shm, a directory per process: files are made and removed at every
 * input, and what a crashed run left is removed by the next one).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "kafka_records.h"
#include "scratch.h"

#define FZ_MESSAGES 64
#define FZ_HEADERS 7


/* canned keys: a mutation need not find a valid one byte by byte */
static const char *const keys[] = { "h/p/0", "h/p/1", "h/q/4095", "h2.x/p_-/7" };
static const char *const names[] = { KMSG_SEQ, KMSG_TYPE, KMSG_DTYPE, KMSG_SHAPE, KMSG_CHUNK };

struct fz_in {
	const uint8_t *p, *end;
};

static size_t fz_take(struct fz_in *in, size_t want)
{
	size_t have = (size_t)(in->end - in->p);

	return want < have ? want : have;
}

static unsigned int fz_u8(struct fz_in *in)
{
	return in->p < in->end ? *in->p++ : 0;
}

static unsigned int fz_u16(struct fz_in *in)
{
	unsigned int v = fz_u8(in);

	return v | fz_u8(in) << 8;
}

static void no_status(void *ctx)
{
	(void)ctx;
}

static void remove_out(void)
{
	char path[sizeof(scratch) + 4];

	snprintf(path, sizeof(path), "%s/out", scratch);
	if (scratch_rm(path))
		abort();
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	scratch_init("evs-fuzz-kafka.");
	return 0;
}

/* Each partition's open count matches the cores reassembling from it. */
static void check_open(const struct krec *r)
{
	for (int p = 0; p < r->nparts; p++) {
		unsigned int n = 0;

		for (const struct source *s = r->sources; s; s = s->next)
			for (unsigned int c = 0; c < DUMP_MAX_CORES; c++)
				if (s->cores[c] && s->cores[c]->buf && s->cores[c]->partition == p)
					n++;
		if (r->parts[p].open != n) {
			fprintf(stderr, "partition %d: open %u, reassembling %u\n", p, r->parts[p].open, n);
			abort();
		}
	}
}

/* A reassembly holds what came for it, not what its header claims. */
static void check_held(const struct krec *r)
{
	for (const struct source *s = r->sources; s; s = s->next)
		for (unsigned int c = 0; c < DUMP_MAX_CORES; c++) {
			const struct kcore *k = s->cores[c];

			if (k && k->buf && (k->got > k->cap || k->cap > 2 * k->got)) {
				fprintf(stderr, "core %u: %lu bytes held for %lu arrived\n", c,
					(unsigned long)k->cap, (unsigned long)k->got);
				abort();
			}
		}
}

/* Only the output directory was written beside it, and nothing in it
 * takes the name of the summary the reader writes there at the end. */
static void check_base(void)
{
	int fd = openat(scratch_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fdopendir(fd);
	struct dirent *e;
	struct stat st;

	if (!d)
		abort();
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && strcmp(e->d_name, "out")) {
			fprintf(stderr, "written outside the output directory: %s\n", e->d_name);
			abort();
		}
	closedir(d);
	if (!fstatat(scratch_fd, "out/summary.json", &st, AT_SYMLINK_NOFOLLOW)) {
		fprintf(stderr, "out/summary.json was made by a record\n");
		abort();
	}
}

static void one_message(struct krec *r, struct fz_in *in, unsigned int kind)
{
	rd_kafka_message_t m = { 0 };
	rd_kafka_headers_t *hdrs;
	char keybuf[256];
	unsigned int kb, nh;
	size_t n;

	/* key: canned (bit 7) or raw bytes */
	kb = fz_u8(in);
	if (kb & 0x80) {
		m.key = (void *)keys[kb & 3];
		m.key_len = strlen(keys[kb & 3]);
	} else {
		n = fz_take(in, kb);
		memcpy(keybuf, in->p, n);
		in->p += n;
		m.key = n ? keybuf : NULL;
		m.key_len = n;
	}
	/* headers: none at all (bit 3), or up to 7 */
	nh = fz_u8(in);
	hdrs = nh & 8 ? NULL : rd_kafka_headers_new(FZ_HEADERS);
	for (unsigned int i = 0; i < (nh & 7); i++) {
		unsigned int sel = fz_u8(in), vlen = fz_u8(in);
		char name[16];
		const char *hn;

		if ((sel & 7) < 5) {
			hn = names[sel & 7];
		} else {
			n = fz_take(in, sel >> 4);
			memcpy(name, in->p, n);
			name[n] = '\0';
			in->p += n;
			hn = name;
		}
		n = fz_take(in, vlen);
		if (hdrs)
			rd_kafka_header_add(hdrs, hn, -1, sel & 8 ? NULL : in->p, sel & 8 ? 0 : (ssize_t)n);
		in->p += n;
	}
	/* the value, in place in the input (as a consumer's is in its buffer) */
	n = fz_take(in, fz_u16(in));
	m.payload = n ? (void *)in->p : NULL;
	m.len = n;
	in->p += n;
	/* partitions -2 to 5 (a number out of range is ignored), offsets as
	 * the broker numbers them: from 0, and back when a partition is read
	 * again */
	m.partition = (int32_t)(kind >> 2 & 7) - 2;
	m.offset = (int64_t)fz_u16(in);
	krec_message(r, &m, hdrs);
	if (hdrs)
		rd_kafka_headers_destroy(hdrs);
}

int LLVMFuzzerTestOneInput(const uint8_t *buf, size_t len)
{
	struct fz_in in = { buf, buf + len };
	struct krec r = { .out = "out", .clear_status = no_status };
	struct dump_dir out = { .fd = -1, .parentfd = -1 };
	unsigned int flags = fz_u8(&in);

	if (dump_dir_open(&out, scratch_fd, "out", "out"))
		abort();
	r.outfd = out.fd;
	r.mode = (enum dump_mode)(flags % 3);
	r.max_events = flags >> 4;
	for (int i = 0; i < FZ_MESSAGES && in.p < in.end && !r.stop; i++) {
		unsigned int kind = fz_u8(&in);

		if ((kind & 3) == 3)
			krec_drop_partition(&r, (int32_t)(kind >> 2 & 7) - 2);
		else
			one_message(&r, &in, kind);
		check_open(&r);
		check_held(&r);
	}
	krec_finish(&r);
	/* to check what a seed does: FUZZ_KAFKA_VERBOSE=1 fuzz_kafka SEED */
	if (getenv("FUZZ_KAFKA_VERBOSE"))
		fprintf(stderr, "messages %lu events %lu torn %lu orphans %lu malformed %lu unfinished %lu "
			"refused %lu\n", (unsigned long)r.messages, (unsigned long)r.events, (unsigned long)r.torn,
			(unsigned long)r.orphans, (unsigned long)r.malformed, (unsigned long)r.unfinished,
			(unsigned long)r.refused);
	for (int p = 0; p < r.nparts; p++)
		if (r.parts[p].open)
			abort();
	for (struct source *s = r.sources; s; s = s->next)
		if (s->open)
			dump_writer_close_index(&s->w);
	krec_free(&r);
	dump_dir_close(&out, false);
	check_base();
	remove_out();
	return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * Where evs-dump puts events: one .npy file per tensor (written under a
 * temporary name and renamed when complete), or one append-only raw file
 * per core; and one JSON line per event in index.jsonl. See docs/dump.md.
 */
#ifndef EVS_TOOLS_DUMP_WRITER_H
#define EVS_TOOLS_DUMP_WRITER_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "evstream/evstream.h"
#include "evstream/tensor.h"

/* Cores are numbered 0 to DUMP_MAX_CORES - 1 (the library's limit). */
#define DUMP_MAX_CORES 4096

enum dump_mode {
	DUMP_NPY = 0,     /* one .npy per tensor event */
	DUMP_RAW,         /* records appended to core<N>.evsraw */
	DUMP_INDEX_ONLY,  /* the index and the prints, no data */
};

/* Raw file: this 64-byte header, then records exactly as in the ring: the
 * 64-byte struct evs_event_header, data_size payload bytes, zeros to the
 * next multiple of 8. */
#define DUMP_RAW_MAGIC "EVSRAW01"
struct dump_raw_hdr {
	char magic[8];
	uint32_t version;      /* 1 */
	uint32_t core;
	uint8_t reserved[48];  /* 0 */
};
_Static_assert(sizeof(struct dump_raw_hdr) == 64, "raw header");

struct dump_core {
	bool used;
	bool made_dir;         /* add_core made c<N>/ (abort removes only that) */
	int dirfd;             /* c<N>/ for .npy files (O_PATH) */
	int rawfd;
	/* the file named in index lines, relative to the output directory:
	 * "core<N>.evsraw", or "c<N>/" with each .npy name written after it */
	char file[48];
	unsigned int file_dir_len;
	uint64_t raw_off;
	uint64_t next_seq;     /* after the last event taken (dump_core_last_seq()) */
	uint64_t events;       /* events read (index lines) */
	/* records not taken: their sequence number was at or below the last
	 * one taken (dump_writer_record(), DUMP_SKIPPED) */
	uint64_t skipped;
	uint64_t tensors;      /* tensor files written */
	uint64_t bytes;        /* tensor bytes written */
	uint64_t gaps;         /* events lost, from sequence gaps */
	/* what the producer had offered (and dropped) when the core was
	 * connected: seqs below base were never this dump's to read (dropped,
	 * or another consumer's); of the lines from base on, the seqs missing
	 * between them (drops while connected) */
	uint64_t base, base_dropped;
	uint64_t base_gaps;
	uint64_t failed;       /* events that could not be written */
	uint64_t bad;          /* malformed payloads */
	uint64_t unfit;        /* empty tensors NumPy cannot represent: no .npy */
};

/*
 * A directory evs-dump writes into, opened by dump_dir_open() and checked
 * (docs/dump.md, "The output directory"): everything in it is then reached
 * through fd with *at() calls, never by its path again.
 */
struct dump_dir {
	int fd;                /* O_PATH | O_DIRECTORY, its last component not followed; -1 */
	int parentfd;          /* the directory it is in (to remove it by name), -1 */
	char leaf[256];        /* its name there */
	bool created;          /* dump_dir_open made it */
};

/* The sequence number of the core's last event taken (events > 0): the
 * one before next_seq, also when that one was UINT64_MAX. */
static inline uint64_t dump_core_last_seq(const struct dump_core *c)
{
	return c->next_seq - 1;
}

struct dump_writer {
	enum dump_mode mode;
	bool print;            /* prefixes (+ preview) to stdout (pipe 1) / stderr (2) */
	struct dump_dir out;   /* the output directory (out.fd: every file's dirfd) */
	char dir[4096];        /* its path as the user gave it, for messages */
	int index_fd;          /* -1 when closed */
	FILE *line;            /* the index line being built (a memory stream) */
	char line_buf[8192];   /* holds the longest line: 511 prefix bytes escaped, 8 sizes */
	/* clears a live status line before anything is printed: stdout and
	 * stderr share the terminal */
	void (*clear_status)(void *ctx);
	void *ctx;
	unsigned int ncores;   /* slots in cores[] */
	struct dump_core *cores;
	uint64_t events, bytes, failed, bad, unfit, skipped;
	int first_errno;       /* of the first failed write */
	int index_errno;       /* a line of the index could not be written: the dump stops */
	uint64_t unindexed;    /* events read whose line is not in the index */
	uint64_t index_size;   /* bytes of whole lines in the index */
	uint64_t index_reserved; /* its disk space is allocated up to here */
	bool reported;         /* the first failure was reported */
};

/*
 * Opens the directory path (relative to atfd: AT_FDCWD or a directory),
 * making it and the missing components above it (0755). Its last
 * component is made with mkdirat() and opened O_PATH | O_NOFOLLOW, so a
 * symbolic link there is refused; then it must be owned by this uid or
 * root, and not writable by group or others unless it has the sticky bit.
 * A trailing slash is dropped (it would make the kernel follow a link).
 * 0, or -errno after saying why, naming the directory as shown.
 */
int dump_dir_open(struct dump_dir *d, int atfd, const char *path, const char *shown);
/*
 * A dump goes only into a new or empty directory (docs/dump.md, "Output"):
 * 0 when the open directory d holds nothing; -EEXIST after saying what it
 * holds (naming it as shown), or -errno when it cannot be read.
 */
int dump_dir_check_empty(const struct dump_dir *d, const char *shown);
/* Closes it; with remove_if_created, removes it (if empty) when open made it. */
void dump_dir_close(struct dump_dir *d, bool remove_if_created);

/* Opens dir (dump_dir_open), refuses it unless empty (dump_dir_check_empty)
 * and creates index.jsonl in it (a new file: one made meanwhile, or a link
 * of that name, is refused). 0 or
 * -errno, after printing a sentence about what failed. The openat form
 * takes dir relative to atfd and names it as shown in messages. */
int dump_writer_open(struct dump_writer *w, const char *dir, enum dump_mode mode);
int dump_writer_openat(struct dump_writer *w, int atfd, const char *dir, const char *shown,
		       enum dump_mode mode);

/* Prepares output for a core: its directory c<N>/ (made, or one already
 * there checked like the output directory; never a link), or its raw file
 * (a new file: one already there, or a link, is refused). 0 or -errno
 * (-ERANGE for a core number of DUMP_MAX_CORES or more). */
int dump_writer_add_core(struct dump_writer *w, unsigned int core);

/*
 * One record of a core: parse, print, write, index. The payload is written
 * from where it is (the ring) with one writev. 0 even when the write failed
 * (it is counted in failed and reported once); -errno for failures that
 * make going on pointless: above all an index line that could not be
 * written (said once, kept in index_errno; the event's file is taken back,
 * so that no file lacks its line).
 *
 * A core's records are taken once, in order of sequence number: a record
 * whose seq is at or below the last one taken for its core (a producer
 * that repeats or goes back, a raw file converted twice, Kafka's
 * redeliveries) is neither written nor indexed, since its .npy would
 * replace one that an index line already describes. It is counted in
 * skipped (the core's and the writer's) and DUMP_SKIPPED is returned; the
 * caller says it, where it knows more (the file, the offset).
 */
#define DUMP_SKIPPED 1
int dump_writer_record(struct dump_writer *w, unsigned int core, const struct evs_event_header *h,
		       const void *payload);

/* Where a record's tensor bytes are when they are not in memory after its
 * fixed payload: a file, from offset off (evs-dump --convert). */
struct dump_src {
	int fd;
	uint64_t off;
};

/*
 * The same, for a writer in DUMP_NPY mode that does not print (-EINVAL
 * otherwise): fixed holds the payload's first EVS_TENSOR_FIXED_BYTES only
 * (h->data_size is still the whole payload's), and the tensor bytes are
 * copied from src into the .npy file by the kernel (copy_file_range), or
 * through a bounded buffer: memory does not grow with them. A source that
 * ends early fails that write with -ENODATA (counted like any).
 */
int dump_writer_record_from(struct dump_writer *w, unsigned int core, const struct evs_event_header *h,
			    const void *fixed, const struct dump_src *src);

/* Each line is written as it comes: nothing to flush. 0, or -index_errno
 * once a line could not be written (kept for callers that flush on a tick). */
int dump_writer_flush(struct dump_writer *w);
/* Closes the index, giving back the disk space reserved past its end. */
int dump_writer_close_index(struct dump_writer *w);
int dump_writer_close(struct dump_writer *w);
/* Setup failed before any event: remove what open and add_core created. */
void dump_writer_abort(struct dump_writer *w);

#endif

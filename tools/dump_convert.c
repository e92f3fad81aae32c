/* SPDX-License-Identifier: MIT */
/* Raw per-core files back into .npy files: the same writer as live dumps,
 * fed from a read-only mapping of each file instead of a ring. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "dump.h"
#include "dump_writer.h"

/* The last sequence number converted for each core: .npy files are named
 * by it, so a record that repeats one (or goes back, as two files of one
 * core can) would replace a file whose index line is already written. */
struct conv_seq {
	uint64_t last[DUMP_MAX_CORES];
	bool any[DUMP_MAX_CORES];
};

static int convert_file(struct dump_writer *w, struct conv_seq *seqs, int rawfd, const char *rawdir,
			const char *name)
{
	char path[4096];
	struct dump_raw_hdr fh;
	struct stat st;
	const uint8_t *m;
	uint64_t off, skipped = 0, skip_seq = 0, skip_off = 0, skip_last = 0;
	int fd, err = 0;

	snprintf(path, sizeof(path), "%s/%s", rawdir, name);
	/* the file itself, not where a link named like it leads (another
	 * user's raw directory could hold one to a file only we may read);
	 * O_NONBLOCK: a FIFO of that name does not hang the open */
	fd = openat(rawfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0) {
		err = -errno;
		if (errno == ELOOP)
			fprintf(stderr, "evs-dump: %s: a symbolic link, not a raw dump: refused\n", path);
		else
			fprintf(stderr, "evs-dump: %s: %s\n", path, strerror(errno));
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		fprintf(stderr, "evs-dump: %s: not a regular file, not a raw dump: refused\n", path);
		err = -EBADMSG;
		goto out;
	}
	if ((uint64_t)st.st_size < sizeof(fh)) {
		fprintf(stderr, "evs-dump: %s: not a raw dump (too short)\n", path);
		err = -EBADMSG;
		goto out;
	}
	m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (m == MAP_FAILED) {
		err = -errno;
		fprintf(stderr, "evs-dump: %s: %s\n", path, strerror(errno));
		goto out;
	}
	memcpy(&fh, m, sizeof(fh));
	if (memcmp(fh.magic, DUMP_RAW_MAGIC, sizeof(fh.magic)) || fh.version != 1) {
		fprintf(stderr, "evs-dump: %s: not a raw dump (bad magic or version)\n", path);
		err = -EBADMSG;
		goto unmap;
	}
	if (fh.core >= DUMP_MAX_CORES) {
		fprintf(stderr, "evs-dump: %s: not a raw dump (core %" PRIu32 " in its header; cores are 0 to %u)\n",
			path, fh.core, DUMP_MAX_CORES - 1);
		err = -EBADMSG;
		goto unmap;
	}
	for (off = sizeof(fh); off < (uint64_t)st.st_size;) {
		struct evs_event_header h;
		uint64_t left = (uint64_t)st.st_size - off, len;

		if (left < sizeof(h))
			break;
		memcpy(&h, m + off, sizeof(h));
		if (h.data_size > left - sizeof(h))
			break;
		len = sizeof(h) + ((h.data_size + 7) & ~7ull);
		if (seqs->any[fh.core] && h.seq <= seqs->last[fh.core]) {
			/* as the Kafka reader does with duplicates: skipped, counted */
			if (!skipped++) {
				skip_seq = h.seq;
				skip_off = off;
				skip_last = seqs->last[fh.core];
			}
		} else {
			seqs->any[fh.core] = true;
			seqs->last[fh.core] = h.seq;
			err = dump_writer_record(w, fh.core, &h, m + off + sizeof(h));
			if (err)
				break;
		}
		off += len < left ? len : left;
	}
	if (skipped)
		fprintf(stderr, "evs-dump: %s: %" PRIu64 " records skipped: sequence number %" PRIu64 " at offset %"
			PRIu64 " is at or below %" PRIu64 ", already converted for core %" PRIu32 " (a core's "
			"records are converted once, in order)\n", path, skipped, skip_seq, skip_off, skip_last,
			fh.core);
	if (!err && off < (uint64_t)st.st_size)
		fprintf(stderr, "evs-dump: %s: %" PRIu64 " bytes at the end are not a whole record (ignored)\n",
			path, (uint64_t)st.st_size - off);
unmap:
	munmap((void *)m, (size_t)st.st_size);
out:
	if (fd >= 0)
		close(fd);
	return err;
}

int dump_convert(const char *rawdir, const char *outdir, bool summary)
{
	struct dump_writer w = { .print = false };
	struct conv_seq seqs = { 0 };  /* 36 KiB */
	struct dirent **names = NULL;
	int n = 0, err = 0, files = 0, rawfd, rc;

	rawfd = open(rawdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (rawfd >= 0)
		n = scandirat(rawfd, ".", &names, NULL, alphasort);
	if (rawfd < 0 || n < 0) {
		fprintf(stderr, "evs-dump: cannot read '%s': %s\n", rawdir, strerror(errno));
		if (rawfd >= 0)
			close(rawfd);
		return 2;
	}
	if (dump_writer_open(&w, outdir, DUMP_NPY)) {
		rc = 2;
		goto out;
	}
	for (int i = 0; i < n && !err; i++) {
		size_t len = strlen(names[i]->d_name);

		if (strncmp(names[i]->d_name, "core", 4) || len < 7 ||
		    strcmp(names[i]->d_name + len - 7, ".evsraw"))
			continue;
		err = convert_file(&w, &seqs, rawfd, rawdir, names[i]->d_name);
		files++;
	}
	if (!files) {
		fprintf(stderr, "evs-dump: no core<N>.evsraw files in '%s'\n", rawdir);
		err = -ENOENT;
	}
	if (summary)
		fprintf(stderr, "evs-dump: converted %d raw files: %" PRIu64 " events, %" PRIu64
			" tensor bytes into %s\n", files, w.events, w.bytes, outdir);
	if (w.bad)
		fprintf(stderr, "evs-dump: %" PRIu64 " malformed events were indexed as \"bad\"\n", w.bad);
	if (summary && w.unfit)
		fprintf(stderr, "evs-dump: %" PRIu64 " empty tensors have shapes NumPy cannot represent: "
			"indexed with their shape, no .npy written\n", w.unfit);
	if (w.failed) {
		fprintf(stderr, "evs-dump: %" PRIu64 " events could not be written (%s)\n", w.failed,
			strerror(w.first_errno));
		err = err ? err : -EIO;
	}
	if (dump_writer_close(&w) && !err)
		err = -EIO;
	rc = err ? 1 : 0;
out:
	for (int i = 0; i < n; i++)
		free(names[i]);
	free(names);
	close(rawfd);
	return rc;
}

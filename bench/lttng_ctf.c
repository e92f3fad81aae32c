/* SPDX-License-Identifier: MIT */
/*
 * Counting the events of the peer's trace. babeltrace2 decodes about
 * 0.7 M events/s here, so a second of LTTng-UST at ~10 M events/s would
 * take longer to read than to record; this walks the packets instead. It
 * understands one layout, the one LTTng-UST 2.13 writes for the benchmark's
 * channel: the metadata must say so word for word, and every packet must
 * end exactly where its context says, so a layout it does not know is an
 * error, not a wrong count (bench/smoke.sh checks the count against
 * babeltrace2 when that is installed).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "lttng_ctf.h"
#include "lttng_event.h"

#define CTF_MAGIC 0xC1FC1FC1u
#define CTF_META_MAGIC 0x75D11D57u
/* packet header (magic, uuid, stream_id, stream_instance_id), then the
 * context: timestamp_begin, timestamp_end, content_size, packet_size,
 * packet_seq_num, events_discarded, cpu_id */
#define PKT_CONTENT_SIZE 48
#define PKT_PACKET_SIZE 56
#define PKT_EVENTS 84

/* The metadata LTTng-UST 2.13 writes, whitespace removed, that the walk
 * below relies on. */
static const char *const meta_needed[] = {
	"byte_order=le;",
	"typealiasinteger{size=8;align=8;signed=false;}:=uint8_t;",
	"typealiasinteger{size=16;align=8;signed=false;}:=uint16_t;",
	"typealiasinteger{size=32;align=8;signed=false;}:=uint32_t;",
	"typealiasinteger{size=64;align=8;signed=false;}:=uint64_t;",
	"typealiasinteger{size=64;align=8;signed=false;}:=unsignedlong;",
	"typealiasinteger{size=5;align=1;signed=false;}:=uint5_t;",
	"packet.header:=struct{uint32_tmagic;uint8_tuuid[16];uint32_tstream_id;"
	"uint64_tstream_instance_id;};",
	"typealiasinteger{size=27;align=1;signed=false;map=clock.monotonic.value;}"
	":=uint27_clock_monotonic_t;",
	"typealiasinteger{size=32;align=8;signed=false;map=clock.monotonic.value;}"
	":=uint32_clock_monotonic_t;",
	"typealiasinteger{size=64;align=8;signed=false;map=clock.monotonic.value;}"
	":=uint64_clock_monotonic_t;",
	"structpacket_context{uint64_clock_monotonic_ttimestamp_begin;"
	"uint64_clock_monotonic_ttimestamp_end;uint64_tcontent_size;uint64_tpacket_size;"
	"uint64_tpacket_seq_num;unsignedlongevents_discarded;uint32_tcpu_id;};",
	"structevent_header_compact{enum:uint5_t{compact=0...30,extended=31}id;"
	"variant<id>{struct{uint27_clock_monotonic_ttimestamp;}compact;"
	"struct{uint32_tid;uint64_clock_monotonic_ttimestamp;}extended;}v;}align(8);",
	"structevent_header_large{enum:uint16_t{compact=0...65534,extended=65535}id;"
	"variant<id>{struct{uint32_clock_monotonic_ttimestamp;}compact;"
	"struct{uint32_tid;uint64_clock_monotonic_ttimestamp;}extended;}v;}align(8);",
};

/* The stream class, with either event header; the events' only field. */
#define STREAM_LARGE "stream{id=0;event.header:=structevent_header_large;" \
		     "packet.context:=structpacket_context;};"
#define STREAM_COMPACT "stream{id=0;event.header:=structevent_header_compact;" \
		       "packet.context:=structpacket_context;};"
#define EVENT_FIELDS "fields:=struct{integer{size=8;align=8;signed=0;encoding=none;base=10;}" \
		     "_payload[64];};};"

struct layout {
	bool large;       /* event_header_large, else compact */
	uint32_t id;      /* the event's id */
};

static uint16_t le16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)le16(p) | (uint32_t)le16(p + 2) << 16;
}

static uint64_t le64(const uint8_t *p)
{
	return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32;
}

static int fail(char *why, size_t len, const char *fmt, const char *path, const char *what)
{
	snprintf(why, len, fmt, path, what);
	return -1;
}

/* The whole file in memory (NUL-terminated); NULL with errno. */
static uint8_t *slurp(const char *path, size_t *n)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	uint8_t *b = NULL;

	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) == 0 && (b = malloc((size_t)st.st_size + 1))) {
		ssize_t r = read(fd, b, (size_t)st.st_size);

		if (r != st.st_size) {
			free(b);
			b = NULL;
			errno = r < 0 ? errno : EIO;
		} else {
			b[r] = 0;
			*n = (size_t)r;
		}
	}
	close(fd);
	return b;
}

/* The metadata's text, whitespace removed: the packets' contents one after
 * the other (a header of 37 bytes each), or the file as it is when it is
 * plain text. */
static char *meta_text(const char *path, char *why, size_t len)
{
	size_t n, off = 0, k = 0;
	uint8_t *b = slurp(path, &n);
	char *t;

	if (!b) {
		fail(why, len, "%s: %s", path, strerror(errno));
		return NULL;
	}
	t = malloc(n + 1);
	if (!t) {
		free(b);
		fail(why, len, "%s: %s", path, strerror(ENOMEM));
		return NULL;
	}
	while (off < n) {
		size_t start = off, end = n;

		if (n - off >= 37 && le32(b + off) == CTF_META_MAGIC) {
			uint32_t content = le32(b + off + 24), packet = le32(b + off + 28);

			if (content % 8 || packet % 8 || content < 37 * 8 || content > packet ||
			    packet / 8 > n - off) {
				free(b);
				free(t);
				fail(why, len, "%s: %s", path, "a metadata packet is malformed");
				return NULL;
			}
			start = off + 37;
			end = off + content / 8;
			off += packet / 8;
		} else {
			off = n;
		}
		for (size_t i = start; i < end; i++)
			if (b[i] != ' ' && b[i] != '\t' && b[i] != '\n' && b[i] != '\r' && b[i])
				t[k++] = (char)b[i];
	}
	t[k] = 0;
	free(b);
	return t;
}

static int read_layout(const char *path, const char *event, struct layout *l, char *why, size_t len)
{
	char *t = meta_text(path, why, len), key[160], *e;
	int ret = -1;
	unsigned long id;

	if (!t)
		return -1;
	for (size_t i = 0; i < sizeof(meta_needed) / sizeof(meta_needed[0]); i++)
		if (!strstr(t, meta_needed[i])) {
			fail(why, len, "%s: not the layout of LTTng-UST 2.13: no '%s'", path, meta_needed[i]);
			goto out;
		}
	l->large = strstr(t, STREAM_LARGE) != NULL;
	if (!l->large && !strstr(t, STREAM_COMPACT)) {
		fail(why, len, "%s: %s", path, "the stream class is not the one expected (contexts added?)");
		goto out;
	}
	/* one event class, ours, with its one 64-byte field */
	snprintf(key, sizeof(key), "event{name=\"%s\";id=", event);
	e = strstr(t, key);
	if (!e || strstr(e + 1, "event{") || strstr(t, "event{") != e) {
		fail(why, len, "%s: not one event class '%s'", path, event);
		goto out;
	}
	e += strlen(key);
	errno = 0;
	id = strtoul(e, &e, 10);
	if (errno || *e != ';' || id > UINT32_MAX || !strstr(e, EVENT_FIELDS)) {
		fail(why, len, "%s: the fields of '%s' are not one 64-byte array", path, event);
		goto out;
	}
	l->id = (uint32_t)id;
	ret = 0;
out:
	free(t);
	return ret;
}

/* The events of one stream file, packet by packet. */
static int count_stream(const char *path, const struct layout *l, uint64_t *events, char *why,
			size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	const uint8_t *p;
	size_t size, off = 0;
	int ret = -1;

	if (fd < 0 || fstat(fd, &st) < 0) {
		fail(why, len, "%s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	size = (size_t)st.st_size;
	if (!size) {
		close(fd);
		return 0;
	}
	p = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		return fail(why, len, "%s: mmap: %s", path, strerror(errno));
	madvise((void *)p, size, MADV_SEQUENTIAL);
	while (off < size) {
		uint64_t content, packet;
		size_t end, e;

		if (size - off < PKT_EVENTS || le32(p + off) != CTF_MAGIC) {
			fail(why, len, "%s: %s", path, "no packet where one should begin");
			goto out;
		}
		content = le64(p + off + PKT_CONTENT_SIZE);
		packet = le64(p + off + PKT_PACKET_SIZE);
		if (content % 8 || packet % 8 || content > packet || content / 8 < PKT_EVENTS ||
		    packet / 8 > size - off) {
			fail(why, len, "%s: %s", path, "a packet's sizes are not possible");
			goto out;
		}
		end = off + content / 8;
		for (e = off + PKT_EVENTS; e < end;) {
			uint32_t id;

			/* ids up to 65534 (large) or 30 (compact) in the header,
			 * else the extended header holds a 32-bit one */
			if (l->large) {
				if (end - e < 6)
					break;
				id = le16(p + e);
				if (id == 65535) {
					if (end - e < 14)
						break;
					id = le32(p + e + 2);
					e += 14;
				} else {
					e += 6;
				}
			} else {
				id = p[e] & 31;
				if (id == 31) {
					if (end - e < 13)
						break;
					id = le32(p + e + 1);
					e += 13;
				} else {
					e += 4;
				}
			}
			if (id != l->id) {
				fail(why, len, "%s: %s", path, "an event of another class");
				goto out;
			}
			e += LT_PAYLOAD;
			if (e > end)
				break;
			(*events)++;
		}
		if (e != end) {
			fail(why, len, "%s: %s", path, "a packet's events do not end where it says");
			goto out;
		}
		off += packet / 8;
	}
	ret = 0;
out:
	munmap((void *)p, size);
	return ret;
}

/* Every stream of the buffer directory that holds this metadata. */
static int count_dir(const char *meta, const char *event, uint64_t *events, char *why, size_t len)
{
	char dir[PATH_MAX], path[PATH_MAX + 256];
	struct layout l;
	struct dirent *de;
	DIR *d;
	int ret = 0;

	snprintf(dir, sizeof(dir), "%s", meta);
	*strrchr(dir, '/') = 0;
	if (read_layout(meta, event, &l, why, len))
		return -1;
	d = opendir(dir);
	if (!d)
		return fail(why, len, "%s: %s", dir, strerror(errno));
	while (!ret && (de = readdir(d))) {
		struct stat st;

		if (de->d_name[0] == '.' || !strcmp(de->d_name, "metadata"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		/* index/ holds the packet indexes, not events */
		if (lstat(path, &st) || !S_ISREG(st.st_mode))
			continue;
		ret = count_stream(path, &l, events, why, len);
	}
	closedir(d);
	return ret;
}

static struct {
	const char *event;
	uint64_t events;
	int dirs;
	char *why;
	size_t len;
} walk;

static int walk_one(const char *path, const struct stat *st, int type, struct FTW *f)
{
	(void)st;
	if (type != FTW_F || strcmp(path + f->base, "metadata"))
		return 0;
	walk.dirs++;
	return count_dir(path, walk.event, &walk.events, walk.why, walk.len) ? 1 : 0;
}

int lt_ctf_count(const char *dir, const char *event, uint64_t *events, char *why, size_t len)
{
	int r;

	walk.event = event;
	walk.events = 0;
	walk.dirs = 0;
	walk.why = why;
	walk.len = len;
	r = nftw(dir, walk_one, 16, FTW_PHYS);
	if (r < 0)
		return fail(why, len, "%s: %s", dir, strerror(errno));
	if (r > 0)
		return -1;
	if (!walk.dirs)
		return fail(why, len, "%s: %s", dir, "no trace (no metadata file) below it");
	*events = walk.events;
	return 0;
}

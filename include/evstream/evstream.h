/* SPDX-License-Identifier: MIT */
/*
 * evstream: per-core lock-free shared-memory event streams.
 *
 * A producer owns one single-producer/single-consumer ring per logical core.
 * A consumer attaches to one core's ring, in the same process or in another
 * one, and sleeps on an eventfd when the ring is empty.
 *
 * Error rule (the whole API): functions returning int return 0 (or a count)
 * on success and a negative errno on failure; constructors return NULL and
 * set errno. evs_strerror() names the errno; evs_errmsg() holds a sentence
 * about the last failure of this thread: the bad argument, option or
 * environment value and what is allowed, the misuse, or what made a stream
 * corrupt. A dropped event is no failure of the call: it is counted, its
 * cause is the return value, and it leaves evs_errmsg() as it was.
 *
 * Threading: one thread at a time per stream on each side. Different streams
 * may be used from different threads concurrently.
 */
#ifndef EVSTREAM_EVSTREAM_H
#define EVSTREAM_EVSTREAM_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#define EVS_API __attribute__((visibility("default")))

#define EVSTREAM_VERSION_MAJOR 1
#define EVSTREAM_VERSION_MINOR 0
#define EVSTREAM_VERSION_PATCH 0

/* Every record starts with this 64-byte header; it is byte-for-byte the
 * reference API's ndebug_stream_event_header_t, with its reserved bytes used
 * as documented in docs/architecture.md. */
struct evs_event_header {
	uint64_t data_size;     /* payload bytes following the header */
	uint32_t type;          /* event type, the producer's; to the debug-stream API 0 is
				 * INVALID and 1 a tensor read */
	uint32_t flags;         /* reserved, 0 */
	uint64_t seq;           /* per-stream sequence: counts every emit, dropped ones too */
	uint64_t timestamp_ns;  /* CLOCK_MONOTONIC at commit (deferred: at publication) */
	uint8_t reserved[32];
};

/* Why an event was dropped; the newest event is always the one dropped.
 * The count sizes arrays in struct evs_stream_stats and reaches the
 * shared page, eBPF and Python: docs/architecture.md, "Adding a drop cause". */
enum evs_drop_cause {
	EVS_DROP_RING_FULL = 0,   /* byte capacity or event limit reached */
	EVS_DROP_TOO_BIG = 1,     /* record larger than the whole ring */
	EVS_DROP_NO_CONSUMER = 2, /* nobody connected to the stream */
	EVS_DROP_NO_MEMORY = 3,   /* the ring's memory could not be committed */
	EVS_DROP_CAUSE_COUNT
};

enum evs_hugepages {
	EVS_HUGEPAGES_DEFAULT = 0, /* EVSTREAM_HUGEPAGES, else auto */
	EVS_HUGEPAGES_AUTO,        /* huge pages when free and granted, else normal pages */
	EVS_HUGEPAGES_ON,          /* huge pages or fail */
	EVS_HUGEPAGES_OFF,         /* normal pages */
};

/*
 * Extensible option structs: the first field is the struct size. Declare
 * them with EVS_OPTS(), which zero-fills and sets sz, so that a program built
 * against an older header keeps working with a newer library.
 */
#ifndef __cplusplus
#define EVS_OPTS(TYPE, NAME, ...)                                    \
	struct TYPE NAME = ({                                        \
		memset(&NAME, 0, sizeof(struct TYPE));               \
		(struct TYPE){ .sz = sizeof(struct TYPE), __VA_ARGS__ }; \
	})
#else
/* C++ (g++ and clang++, C++17 on; fields in declaration order, as C++20
 * asks): aggregate initialisation zeroes the fields not named, which
 * -Wextra would otherwise report for every option left out. */
#define EVS_OPTS(TYPE, NAME, ...)                                               \
	struct TYPE NAME = ({                                                   \
		_Pragma("GCC diagnostic push")                                  \
		_Pragma("GCC diagnostic ignored \"-Wmissing-field-initializers\"") \
		struct TYPE evs_opts_ = { .sz = sizeof(struct TYPE), __VA_ARGS__ }; \
		_Pragma("GCC diagnostic pop")                                   \
		evs_opts_;                                                      \
	})
#endif

struct evs_producer_opts {
	size_t sz;
	uint64_t ring_bytes;  /* 0: EVSTREAM_RING_BYTES, else max_events tensor-read
	                       * events of 1088 bytes (docs/api.md) */
	uint64_t max_events;  /* 0: NEURON_RT_DEBUG_STREAM_BUFFER_SIZE, else 65536 */
	int hugepages;        /* enum evs_hugepages */
	int allow_group;      /* 1: members of allow_gid may connect too (socket 0660) */
	gid_t allow_gid;
	const char *runtime_dir; /* socket directory; NULL: see docs/api.md */
	int no_timestamps;    /* 1: leave timestamp_ns 0 (saves a clock read per event) */
};

struct evs_consumer_opts {
	size_t sz;
	const char *runtime_dir;   /* NULL: as for the producer */
	int timeout_ms;            /* the whole connect, to the welcome; 0: 2000 ms */
};

struct evs_producer;
struct evs_consumer;

/* ---------------------------------------------------------------- producer */

/*
 * Create a producer with ncores streams. With a name, consumers in other
 * processes of the same uid can connect through a Unix socket in the runtime
 * directory, served by one background thread; with name NULL the producer is
 * reachable only from this process. The rings are mapped here; their pages
 * are committed as each ring first fills. NULL + errno on failure
 * (evs_errmsg() says why).
 */
EVS_API struct evs_producer *evs_producer__new(const char *name, unsigned int ncores,
					       const struct evs_producer_opts *opts);
/* Marks every stream closed, wakes sleeping consumers, frees everything. */
EVS_API void evs_producer__free(struct evs_producer *p);
EVS_API unsigned int evs_producer__ncores(const struct evs_producer *p);

/*
 * Copy one event into core's ring. 0 when committed; when dropped (and
 * counted): -ENOBUFS ring full, -EMSGSIZE larger than the ring, -ENOTCONN no
 * consumer, -ENOMEM the ring's memory could not be committed. Bad
 * arguments: -EINVAL / -ERANGE (not counted as events).
 */
EVS_API int evs_producer__emit(struct evs_producer *p, unsigned int core, uint32_t type,
			       const void *data, size_t size);

/*
 * Zero-copy: reserve size payload bytes in core's ring, fill them, then
 * commit (publish) or discard (forget) them. One reservation per stream at a
 * time. NULL + errno on drop (ENOBUFS, EMSGSIZE, ENOTCONN, ENOMEM: counted as
 * for emit) or misuse (EINVAL, EBUSY).
 */
EVS_API void *evs_producer__reserve(struct evs_producer *p, unsigned int core, uint32_t type,
				    size_t size);
EVS_API int evs_producer__commit(struct evs_producer *p, unsigned int core);
EVS_API int evs_producer__discard(struct evs_producer *p, unsigned int core);

/*
 * Deferred publication: commit_deferred() finishes the reserved record like
 * commit() but leaves it invisible; publish() makes every such record of the
 * stream visible at once, in order. A burst of small records then costs one
 * publication (one cache-line transfer to the consumer, one wake check)
 * instead of one each. Records are also published by the next commit() or
 * emit(), by a reserve() or emit() that drops its record (deferred records
 * that filled the ring are then seen, and their room comes back), and when
 * the producer is freed. Until then the consumer neither sees them nor is
 * woken for them. Their timestamp is the time of that publication: one
 * clock read for the burst; past 64 records, each 64 take the time of the
 * commit after them.
 */
EVS_API int evs_producer__commit_deferred(struct evs_producer *p, unsigned int core);
EVS_API int evs_producer__publish(struct evs_producer *p, unsigned int core);

/* Reports a batch of drops still held back for the drop tracepoint. */
EVS_API int evs_producer__flush(struct evs_producer *p, unsigned int core);

/* New fields go at the end only: callers built against an older header
 * pass a smaller sz (docs/architecture.md, "Changing things"). */
struct evs_stream_stats {
	size_t sz;                /* set to sizeof(struct evs_stream_stats) */
	uint64_t produced;        /* events offered: committed + dropped */
	uint64_t committed;
	uint64_t dropped;         /* sum of the causes */
	uint64_t dropped_events[EVS_DROP_CAUSE_COUNT];
	uint64_t dropped_bytes[EVS_DROP_CAUSE_COUNT];  /* payload bytes */
	uint64_t released;        /* records the consumer released (consumer-written) */
	uint64_t wakeups;         /* eventfd writes by the producer */
	uint64_t ring_bytes;
	uint64_t max_events;
	uint64_t page_size;       /* backing page size: 4096 or 2 MiB */
	uint32_t hugepages;       /* 1: backed by huge pages */
	uint32_t connected;       /* producer side: a consumer is attached */
	uint32_t producer_closed; /* the producer closed the stream (evs_producer__free) */
	uint32_t core;
	uint32_t producer_died;   /* consumer side: its process hung up without closing */
};

EVS_API int evs_producer__stats(const struct evs_producer *p, unsigned int core,
				struct evs_stream_stats *st);

/* ---------------------------------------------------------------- consumer */

/*
 * Attach to stream `core` of the producer called name: first a producer of
 * that name in this process, then one in another process through its socket.
 * name NULL: the first producer created in this process. One consumer per
 * stream: a second gets EBUSY. No producer: ENOENT.
 */
EVS_API struct evs_consumer *evs_consumer__connect(const char *name, unsigned int core,
						   const struct evs_consumer_opts *opts);
EVS_API void evs_consumer__free(struct evs_consumer *c);

/* The fd to poll (epoll, poll, select) for readability: readable when
 * records are pending (after evs_consumer__prepare_wait() returned 0) and
 * when the producer ends. For a producer in this process it is the
 * stream's eventfd; for one in another process, an epoll set over that
 * eventfd and the socket to the producer. Owned by the consumer: poll it,
 * never read, write or close it. */
EVS_API int evs_consumer__fd(const struct evs_consumer *c);
/* The socket to the producer (readable / hang-up when the producer is gone),
 * or -1 for a producer in this process. Owned by the consumer. */
EVS_API int evs_consumer__hup_fd(const struct evs_consumer *c);

struct evs_record {
	struct evs_event_header hdr; /* copied out of shared memory and checked */
	const void *data;            /* hdr.data_size bytes, contiguous, in the ring */
};

/*
 * Look at the next record without consuming it; data stays valid until
 * evs_consumer__release(). 0, -EAGAIN when empty, -EPIPE when empty and the
 * producer has gone, -EBADMSG when the ring is corrupt (stream broken).
 */
EVS_API int evs_consumer__peek(struct evs_consumer *c, struct evs_record *rec);
/* Give back the oldest handed-out record's ring space. -EINVAL: none. */
EVS_API int evs_consumer__release(struct evs_consumer *c);

/*
 * Holding several records: hand out the record after the last one handed
 * out (by peek or peek_next) without giving back anything, so that every
 * handed-out record stays valid until release() gives them back, oldest
 * first. With nothing held it is peek(). Returns as peek(), and -ENOBUFS
 * when EVS_CONSUMER_MAX_HELD records are held already. Held records hold
 * ring space: the producer drops (and counts) when it runs out.
 */
#define EVS_CONSUMER_MAX_HELD 65536
EVS_API int evs_consumer__peek_next(struct evs_consumer *c, struct evs_record *rec);

/* Called for each record; return 0 to go on, anything else to stop after it. */
typedef int (*evs_record_fn)(void *ctx, const struct evs_record *rec);

/*
 * Hand up to max records to fn, releasing each after it returns; records
 * already held come first. max 0: the records pending, that is those the
 * consumer knows of and, once they are read, those up to the producer's
 * position at one look at it (every record published before the call, and
 * at most two rings' worth of bytes); what is published after that look
 * is left for the next call, so a producer that keeps publishing cannot
 * hold the call. At most INT_MAX records a call, whatever max. Returns the
 * count handed over (0 when none was pending), or a negative errno as peek.
 */
EVS_API int evs_consumer__consume(struct evs_consumer *c, evs_record_fn fn, void *ctx,
				  size_t max);

/*
 * Declare that the consumer will sleep on evs_consumer__fd(): 0 when the
 * ring is empty and the producer will write the eventfd at its next commit;
 * -EAGAIN when records are pending (do not sleep); -EPIPE producer gone.
 * Right after reading a busy producer's records it may first spin for the
 * catch-up pause (EVSTREAM_CATCHUP_NS, 2 us), as peek does; when the
 * producer's wakeup for a record already read is still on its way, it waits
 * for it (up to 1 ms, in poll()) so that the fd is not left readable for
 * nothing.
 */
EVS_API int evs_consumer__prepare_wait(struct evs_consumer *c);

/* prepare_wait + poll the eventfd and the producer socket. 0 records
 * pending, -ETIMEDOUT, -EPIPE producer gone and nothing left. timeout_ms < 0
 * waits forever. */
EVS_API int evs_consumer__wait(struct evs_consumer *c, int timeout_ms);

EVS_API int evs_consumer__stats(const struct evs_consumer *c, struct evs_stream_stats *st);

/* ------------------------------------------------------------------ misc */

EVS_API const char *evs_strerror(int err);   /* err: positive or negative errno */
EVS_API const char *evs_errmsg(void);        /* last failure of this thread, or "" */
EVS_API const char *evs_drop_cause_name(int cause);


#ifdef __cplusplus
}
#endif
#endif /* EVSTREAM_EVSTREAM_H */

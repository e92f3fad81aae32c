/* SPDX-License-Identifier: MIT */
/* Private structures of libevstream; nothing here is ABI. */
#ifndef EVS_INTERNAL_H
#define EVS_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdatomic.h>
#include <pthread.h>
#include <sys/types.h>

#include "evstream/evstream.h"
#include "atomics.h"
#include "layout.h"

#define EVS_HIDDEN __attribute__((visibility("hidden")))
#include "clock.h"
#define EVS_HUGE_PAGE (2ULL * 1024 * 1024)
#define EVS_NAME_MAX 64

/* The options struct sz rule: accept smaller (older) structs; a larger one
 * only if the bytes this library does not know are zero. */
EVS_HIDDEN bool evs_opts_valid(const void *opts, size_t user_sz, size_t known_sz);
#define OPTS_VALID(o, type) evs_opts_valid((o), (o) ? (o)->sz : 0, sizeof(struct type))
#define OPTS_HAS(o, field) \
	((o) && (o)->sz >= offsetof(__typeof__(*(o)), field) + sizeof((o)->field))
#define OPTS_GET(o, field, def) (OPTS_HAS(o, field) ? (o)->field : (def))

/* Thread-local sentence for evs_errmsg(); returns -err for chaining. */
EVS_HIDDEN int evs_fail(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
EVS_HIDDEN void evs_clear_errmsg(void);

/* ------------------------------------------------------------ config */
struct evs_config {
	uint64_t ring_bytes;   /* requested, before rounding to the page size */
	uint64_t max_events;
	int hugepages;         /* EVS_HUGEPAGES_AUTO / ON / OFF */
	enum evs_clock_mode clock; /* EVSTREAM_TSC */
};
EVS_HIDDEN int evs_config_resolve(const struct evs_producer_opts *opts, struct evs_config *cfg);
EVS_HIDDEN int evs_parse_u64(const char *s, uint64_t *out); /* with K/M/G/T suffixes */
EVS_HIDDEN int evs_runtime_dir(const char *opt_dir, char *buf, size_t len);
EVS_HIDDEN int evs_check_name(const char *name);
EVS_HIDDEN int evs_socket_path(const char *dir, const char *name, char *buf, size_t len);

/* ------------------------------------------------------------ memory */
struct evs_map {
	struct evs_shm_prod *prod;  /* control page 0 */
	struct evs_shm_cons *cons;  /* control page 1 */
	uint8_t *data;              /* ring, followed by its second mapping */
	void *ctl_base;
	void *data_res;             /* reserved range holding both copies */
	size_t data_res_len;
	uint64_t ring_bytes;
};

struct evs_backing {
	int ctl_fd;      /* control memfd, read-write */
	int data_fd;     /* data memfd, read-write (producer) */
	int data_ro_fd;  /* the same file opened read-only, handed to consumers */
	uint64_t ring_bytes;
	uint64_t page_size;
	bool hugetlb;
};

EVS_HIDDEN int evs_backing_create(struct evs_backing *b, const struct evs_config *cfg,
				  const char *label, unsigned int core);
EVS_HIDDEN void evs_backing_destroy(struct evs_backing *b);
/* Map a stream; writable = producer view (data read-write, page 0 read-write). */
EVS_HIDDEN int evs_map_attach(struct evs_map *m, int ctl_fd, int data_fd, uint64_t ring_bytes,
			      uint64_t page_size, bool writable);
EVS_HIDDEN void evs_map_detach(struct evs_map *m);

/* ------------------------------------------------------------ producer */
/* Deferred records that share one clock read at most (producer.c). */
#define EVS_UNSTAMPED_MAX 64

struct evs_stream {
	/* Hot fields, touched by the producer thread only. */
	uint64_t prod_pos;        /* private copy of prod->prod_pos */
	uint64_t prod_off;        /* prod_pos % cap */
	uint64_t cons_cache;      /* last clamped cons_pos read from the consumer */
	uint64_t released_cache;  /* last clamped released count */
	uint64_t committed;
	uint64_t produced;
	uint64_t cap;
	uint64_t max_events;
	uint8_t *data;
	struct evs_shm_prod *prod;
	struct evs_shm_cons *cons;
	uint64_t resv_len;        /* record length of the open reservation, 0: none */
	uint64_t resv_size;
	uint32_t resv_type;
	bool timestamps;
	/* Deferred records sealed since the last clock read, waiting for
	 * the timestamp their publication gives them (producer.c). */
	uint64_t unstamped;
	struct evs_clock clock;   /* the timestamps' (clock.h) */
	int efd;
	/* 1: full fence after publishing; 0: the consumer uses membarrier().
	 * Set by whoever attaches a consumer, before active. */
	_Atomic int fence;

	/* Set by whoever attaches a consumer; read by the producer on emit. */
	_Atomic int active __attribute__((aligned(EVS_CACHELINE)));
	_Atomic int claimed;      /* one consumer per stream */

	/* Drop accounting: producer thread only; see drop.c. */
	uint64_t dropped_events[EVS_DROP_CAUSE_COUNT] __attribute__((aligned(EVS_CACHELINE)));
	uint64_t dropped_bytes[EVS_DROP_CAUSE_COUNT];
	uint64_t wakeups;
	/* Drop run and the batch of it not yet reported to the drop
	 * tracepoint; see drop.c. */
	uint64_t burst_events;    /* drops since the last accepted event */
	int burst_cause;          /* cause of the batch; it has one */
	uint64_t batch_events0;   /* dropped_events[burst_cause] at the batch's start */
	uint64_t batch_bytes0;    /* dropped_bytes[burst_cause] at the batch's start */
	/* Where the unstamped deferred records' headers are: kept, not found
	 * by walking the records, whose sizes would make a chain of loads. */
	uint64_t unstamped_off[EVS_UNSTAMPED_MAX];

	/* Cold. */
	unsigned int core;
	struct evs_backing backing;
	struct evs_map map;
	int conn_fd;                   /* remote consumer's socket (server thread) */
	struct evs_consumer *local;    /* in-process consumer, under the registry lock */
	struct evs_producer *owner;
} __attribute__((aligned(EVS_CACHELINE)));

struct evs_server;

struct evs_producer {
	char *name;                /* NULL: in-process only */
	unsigned int ncores;
	struct evs_stream *streams;
	struct evs_config cfg;
	struct evs_server *server;
	bool membarrier;           /* registered for MEMBARRIER_CMD_GLOBAL_EXPEDITED */
	pid_t pid;                 /* creator: a forked child must not use it */
	struct evs_producer *next; /* registry */
};

/* The single place drops are counted (and reported to the tracepoint). */
EVS_HIDDEN int evs_stream_drop(struct evs_stream *s, uint64_t bytes, int cause);
/* An event was accepted: ends a drop burst. */
EVS_HIDDEN void evs_stream_drop_burst_end(struct evs_stream *s);
EVS_HIDDEN void evs_stream_drop_flush(struct evs_stream *s);

/* Make every committed record of the stream visible (and wake if armed). */
EVS_HIDDEN void evs_stream_publish(struct evs_stream *s);

/* Attach/detach bookkeeping used by the in-process and socket paths. */
EVS_HIDDEN int evs_stream_claim(struct evs_stream *s);
/* consumer_membarrier: the consumer will call membarrier() when it arms.
 * Returns true when it must (the producer then skips its fence). */
EVS_HIDDEN bool evs_stream_activate(struct evs_stream *s, bool consumer_membarrier);
EVS_HIDDEN void evs_stream_release_claim(struct evs_stream *s);

/* ------------------------------------------------------------ stats */
/* The caller's struct is at least as large as the 1.0 one (up to core). */
EVS_HIDDEN bool evs_stats_size_ok(const struct evs_stream_stats *st);
/* Everything the shared pages say (the fields only one side knows are 0). */
EVS_HIDDEN void evs_stats_from_shm(const struct evs_shm_prod *prod, const struct evs_shm_cons *cons,
				   struct evs_stream_stats *st);
/* Hand out as much of full as the caller's (possibly older, smaller) struct holds. */
EVS_HIDDEN void evs_stats_copy_out(struct evs_stream_stats *st, const struct evs_stream_stats *full);

/* ------------------------------------------------------------ membarrier */
EVS_HIDDEN bool evs_membarrier_usable(void);   /* this process may call it */
EVS_HIDDEN bool evs_membarrier_register(void); /* producers: skip the fence */
EVS_HIDDEN int evs_membarrier(void);           /* consumers: 0 or -errno */

/* ------------------------------------------------------------ eventfd */
/* Write 1 / read everything, never waiting whatever the consumer did to the
 * shared file flags. */
EVS_HIDDEN bool evs_efd_kick(int efd);
EVS_HIDDEN void evs_efd_drain(int efd);

/* ------------------------------------------------------------ registry */
EVS_HIDDEN void evs_registry_lock(void);
EVS_HIDDEN void evs_registry_unlock(void);
EVS_HIDDEN void evs_registry_add(struct evs_producer *p);
EVS_HIDDEN void evs_registry_remove(struct evs_producer *p);
EVS_HIDDEN struct evs_producer *evs_registry_find(const char *name);

/* ------------------------------------------------------------ server */
EVS_HIDDEN int evs_server_start(struct evs_producer *p, const struct evs_producer_opts *opts);
EVS_HIDDEN void evs_server_stop(struct evs_producer *p);

/* Wire format of the socket handshake (see docs/architecture.md). */
#define EVS_HELLO_MAGIC   0x6f6c6c6548535645ULL /* "EVSHello" */
#define EVS_WELCOME_MAGIC 0x656d6f636c655745ULL /* "EWelcome" */
struct evs_hello {
	uint64_t magic;
	uint16_t abi_major;
	uint16_t abi_minor;
	uint32_t core;
	/* ABI 1.1 (a 1.0 hello ends before this) */
	uint32_t flags;          /* EVS_HELLO_F_* */
	uint32_t pad;
};
#define EVS_HELLO_V10_BYTES      16
#define EVS_HELLO_F_MEMBARRIER   0x1u /* the consumer can call membarrier() */
#define EVS_WELCOME_F_MEMBARRIER 0x100u /* ... and must, when it arms */
struct evs_welcome {
	uint64_t magic;
	int32_t status;          /* 0 or -errno */
	uint32_t ncores;
	uint64_t ring_bytes;
	uint64_t max_events;
	uint64_t page_size;
	uint32_t core;
	uint32_t flags;
};

/* ------------------------------------------------------------ consumer */
struct evs_consumer {
	/* Hot. */
	uint64_t cons_pos;
	uint64_t cons_off;
	uint64_t prod_cache;
	uint64_t released;
	uint64_t cap;
	uint64_t peek_len;        /* length of the oldest handed-out record (held >= 1) */
	uint64_t held;            /* records handed out and not released */
	uint64_t read_pos;        /* after the last handed-out record */
	uint64_t read_off;        /* read_pos % cap */
	/* Lengths of the held records after the oldest, oldest first
	 * (evs_consumer__peek_next()); a ring of held_cap entries. */
	uint64_t *held_len;
	size_t held_head, held_cap;
	const uint8_t *data;
	const struct evs_shm_prod *prod;
	struct evs_shm_cons *cons;
	int broken;               /* sticky -EBADMSG */

	/* Wakeup protocol state; see evs_consumer__prepare_wait(). */
	bool armed;
	bool kick_pending;
	bool gone;                /* the producer socket hung up */
	bool membarrier;          /* arm with membarrier() instead of a fence */
	uint64_t arms;
	uint64_t empty_peeks;

	int efd;
	int sock;                 /* -1 in process */
	unsigned int core;
	struct evs_map map;
	struct evs_stream *local; /* in-process producer stream, under the registry lock */
};

EVS_HIDDEN int evs_consumer_init(struct evs_consumer *c, int ctl_fd, int data_fd,
				 uint64_t ring_bytes, uint64_t page_size, unsigned int core,
				 bool membarrier);
EVS_HIDDEN int evs_client_connect(struct evs_consumer *c, const char *name, unsigned int core,
				  const struct evs_consumer_opts *opts);

#endif

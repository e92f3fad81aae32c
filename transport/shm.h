/* SPDX-License-Identifier: MIT */
/* A stream's memory files and their mappings (shm.c). */
#ifndef EVS_SHM_H
#define EVS_SHM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "layout.h"

#define EVS_HUGE_PAGE (2ULL * 1024 * 1024)

/* One process's view of a stream. */
struct evs_map {
	struct evs_shm_prod *prod;  /* control page 0 (the control memfd) */
	struct evs_shm_cons *cons;  /* control page 1 (the consumer memfd) */
	uint8_t *data;              /* ring, followed by its second mapping */
	void *ctl_base;
	void *data_res;             /* reserved range holding both copies */
	size_t data_res_len;
	uint64_t ring_bytes;
};

/* The producer's memory files of a stream. */
struct evs_backing {
	int ctl_fd;      /* control memfd (page 0), read-write (producer) */
	int ctl_ro_fd;   /* the same file opened read-only, handed to consumers */
	int cons_fd;     /* consumer memfd (page 1), read-write: the consumer writes it */
	int data_fd;     /* data memfd, read-write (producer) */
	int data_ro_fd;  /* the same file opened read-only, handed to consumers */
	uint64_t ring_bytes;
	uint64_t page_size;
	bool hugetlb;
};

/* The files of one stream; hugetlb: from the huge-page pool (budget.c). */
int evs_backing_create(struct evs_backing *b, const struct evs_config *cfg, bool hugetlb,
		       const char *label, unsigned int core);
void evs_backing_destroy(struct evs_backing *b);
/* A fresh consumer page (page 1) holding *init, for the next consumer:
 * replaces b->cons_fd and, at the same address, m->cons (shm.c). */
int evs_backing_renew_cons(struct evs_backing *b, struct evs_map *m,
			   const struct evs_shm_cons *init, const char *label, unsigned int core);
/* Pages for the ring's bytes [from, to), also in the producer's view. */
int evs_backing_commit(struct evs_backing *b, uint8_t *data, uint64_t from, uint64_t to);
/* The producer commits the ring this much at a time as it first fills. */
#define EVS_COMMIT_CHUNK (2ULL * 1024 * 1024)
/* After a commit failed, the producer tries again no sooner than this: an
 * fallocate() per dropped event (and the kernel's reclaim in it) would hold
 * the runtime back for as long as memory is short. */
#define EVS_COMMIT_RETRY_NS (10ULL * 1000 * 1000)
/* fallocate() calls made while signals interrupt them (shm.c). */
#define EVS_ALLOCATE_TRIES 4
/* Map a stream: page 0 from ctl_fd and page 1 from cons_fd, side by side,
 * and the ring twice; writable = the producer's view (page 0 and the ring
 * read-write), else both read-only. Page 1 is read-write in both. */
int evs_map_attach(struct evs_map *m, int ctl_fd, int cons_fd, int data_fd, uint64_t ring_bytes,
		   uint64_t page_size, bool writable);
void evs_map_detach(struct evs_map *m);

#endif

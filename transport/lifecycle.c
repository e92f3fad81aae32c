/* SPDX-License-Identifier: MIT */
/* Creating and freeing producers and their streams. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/eventfd.h>

#include "attach.h"
#include "budget.h"
#include "drop.h"
#include "errors.h"
#include "membarrier.h"
#include "producer.h"
#include "registry.h"
#include "server.h"
#include "wakeup.h"

static void stream_init_shared(struct evs_stream *s, const struct evs_producer *p)
{
	struct evs_shm_prod *prod = s->map.prod;

	memset(s->map.ctl_base, 0, EVS_CTL_BYTES);
	prod->magic = EVS_SHM_MAGIC;
	prod->abi_major = EVS_ABI_MAJOR;
	prod->abi_minor = EVS_ABI_MINOR;
	prod->hdr_bytes = EVS_CTL_BYTES;
	prod->ring_bytes = s->backing.ring_bytes;
	prod->max_events = p->cfg.max_events;
	prod->page_size = s->backing.page_size;
	prod->core = s->core;
	prod->flags = s->backing.hugetlb ? EVS_SHM_F_HUGETLB : 0;
	prod->producer_pid = (uint32_t)getpid();
}

/* Why the kernel can refuse huge pages the pool showed free, and the way out. */
#define HUGETLB_REFUSED                                                                     \
	" (the pool was read with enough free: another process took them since, or this "  \
	"process's hugetlb cgroup allows fewer; EVSTREAM_HUGEPAGES=auto falls back to normal " \
	"pages, off never tries)"

static int stream_init(struct evs_stream *s, struct evs_producer *p, unsigned int core,
		       bool hugetlb, bool timestamps)
{
	int err;

	s->core = core;
	s->owner = p;
	s->conn_fd = -1;
	s->efd = -1;
	err = evs_backing_create(&s->backing, &p->cfg, hugetlb, p->name, core);
	if (err)
		return err;
	err = evs_map_attach(&s->map, s->backing.ctl_fd, s->backing.cons_fd, s->backing.data_fd,
			     s->backing.ring_bytes, s->backing.page_size, true);
	if (err)
		return evs_fail(-err, "mapping the ring of core %u (%llu bytes%s): %s%s", core,
				(unsigned long long)s->backing.ring_bytes,
				hugetlb ? " of huge pages" : "", evs_strerror(err),
				hugetlb ? HUGETLB_REFUSED : "");
	s->prod = s->map.prod;
	s->cons = s->map.cons;
	s->data = s->map.data;
	s->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (s->efd < 0)
		return evs_fail(errno, "eventfd for core %u: %s", core, evs_strerror(errno));
	stream_init_shared(s, p);
	s->cap = s->backing.ring_bytes;
	s->max_events = p->cfg.max_events;
	/* the first chunk now: a shortage that early is an error, not a drop */
	s->commit_end = s->cap < EVS_COMMIT_CHUNK ? s->cap : EVS_COMMIT_CHUNK;
	err = evs_backing_commit(&s->backing, s->data, 0, s->commit_end);
	if (err)
		return evs_fail(-err, "ring memory for core %u%s: %s%s", core,
				hugetlb ? " (huge pages)" : "", evs_strerror(err),
				hugetlb ? HUGETLB_REFUSED : "");
	evs_stream_set_limits(s);
	s->timestamps = timestamps;
	if (timestamps)
		evs_clock_init(&s->clock, p->cfg.clock);
	return 0;
}

static void stream_fini(struct evs_stream *s)
{
	if (s->prod) {
		/* records committed with deferred publication are not lost */
		evs_stream_publish(s);
		evs_stream_drop_flush(s);
		/* pairs with smp_load_acquire(&prod->state) in producer_gone()
		 * (consumer.c): everything committed is visible once CLOSED is */
		smp_store_release(&s->prod->state, EVS_STATE_CLOSED);
	}
	/* wake a sleeping consumer so that it sees CLOSED */
	if (s->efd >= 0) {
		evs_efd_kick(s->efd);
		close(s->efd);
	}
	if (s->conn_fd >= 0)
		close(s->conn_fd);
	evs_map_detach(&s->map);
	evs_backing_destroy(&s->backing);
}

static void streams_fini(struct evs_producer *p)
{
	for (unsigned int i = 0; i < p->ncores; i++)
		stream_fini(&p->streams[i]);
}

/* Every core's stream, from scratch (p->streams as allocated, or as
 * streams_fini() left it). */
static int streams_init(struct evs_producer *p, bool hugetlb, bool timestamps)
{
	memset(p->streams, 0, sizeof(*p->streams) * p->ncores);
	for (unsigned int i = 0; i < p->ncores; i++) {
		p->streams[i].efd = -1;
		p->streams[i].conn_fd = -1;
		p->streams[i].backing.ctl_fd = -1;
		p->streams[i].backing.ctl_ro_fd = -1;
		p->streams[i].backing.cons_fd = -1;
		p->streams[i].backing.data_fd = -1;
		p->streams[i].backing.data_ro_fd = -1;
	}
	for (unsigned int i = 0; i < p->ncores; i++) {
		int err = stream_init(&p->streams[i], p, i, hugetlb, timestamps);

		if (err)
			return err;
	}
	return 0;
}

EVS_API struct evs_producer *evs_producer__new(const char *name, unsigned int ncores,
					       const struct evs_producer_opts *opts)
{
	struct evs_producer *p = NULL;
	bool hugetlb, use_membarrier, timestamps;
	int err;

	evs_clear_errmsg();
	if (!OPTS_VALID(opts, evs_producer_opts)) {
		err = evs_fail(EINVAL, "evs_producer_opts: unknown fields set (sz=%zu, this library knows %zu bytes)",
			       opts->sz, sizeof(struct evs_producer_opts));
		goto err_out;
	}
	if (ncores == 0 || ncores > 4096) {
		err = evs_fail(EINVAL, "ncores=%u is not allowed: use 1 to 4096", ncores);
		goto err_out;
	}
	if (name && (err = evs_check_name(name)))
		goto err_out;

	p = calloc(1, sizeof(*p));
	if (!p) {
		err = -ENOMEM;
		goto err_out;
	}
	p->ncores = ncores;
	p->pid = getpid();
	err = evs_config_resolve(opts, &p->cfg);
	if (err)
		goto err_free;
	err = evs_env_membarrier(&use_membarrier);
	if (err)
		goto err_free;
	p->membarrier = use_membarrier && evs_membarrier_register();
	err = evs_budget_check(&p->cfg, ncores, &hugetlb);
	if (err)
		goto err_free;
	if (name && !(p->name = strdup(name))) {
		err = -ENOMEM;
		goto err_free;
	}
	p->streams = aligned_alloc(EVS_CACHELINE, sizeof(*p->streams) * ncores);
	if (!p->streams) {
		err = -ENOMEM;
		goto err_free;
	}
	timestamps = !OPTS_GET(opts, no_timestamps, 0);
	err = streams_init(p, hugetlb, timestamps);
	if (err && hugetlb && p->cfg.hugepages == EVS_HUGEPAGES_AUTO &&
	    (err == -ENOMEM || err == -ENOSPC)) {
		/* The pool the budget counted was not ours after all: another
		 * process took the pages since (two runtimes starting
		 * together), or a hugetlb cgroup gives this one none (a
		 * container without a huge-page request). Auto means normal
		 * pages then, checked as a whole like any others. */
		struct evs_config normal = p->cfg;

		streams_fini(p);
		evs_clear_errmsg();
		normal.hugepages = EVS_HUGEPAGES_OFF;
		err = evs_budget_check(&normal, ncores, &hugetlb);
		if (!err)
			err = streams_init(p, false, timestamps);
	}
	if (err)
		goto err_free;
	evs_config_note_ring(&p->cfg, p->streams[0].backing.ring_bytes);

	evs_registry_lock();
	if (name && evs_registry_find(name)) {
		evs_registry_unlock();
		err = evs_fail(EEXIST, "a producer named '%s' already exists in this process", name);
		goto err_free;
	}
	evs_registry_add(p);
	evs_registry_unlock();

	if (name) {
		err = evs_server_start(p, opts);
		if (err) {
			evs_registry_lock();
			evs_registry_remove(p);
			evs_registry_unlock();
			goto err_free;
		}
	}
	return p;

err_free:
	if (p->streams)
		streams_fini(p);
	free(p->streams);
	free(p->name);
	free(p);
err_out:
	errno = -err;
	return NULL;
}

EVS_API void evs_producer__free(struct evs_producer *p)
{
	if (!p)
		return;
	if (p->server)
		evs_server_stop(p);
	evs_registry_lock();
	evs_registry_remove(p);
	/* in-process consumers keep their own mappings */
	for (unsigned int i = 0; i < p->ncores; i++)
		evs_stream_orphan_local(&p->streams[i]);
	evs_registry_unlock();
	streams_fini(p);
	free(p->streams);
	free(p->name);
	free(p);
}

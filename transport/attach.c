/* SPDX-License-Identifier: MIT */
/*
 * Attaching a consumer to a stream, the one home of it: claiming a stream
 * (one consumer each), making it live for the consumer (activate) and
 * giving it up (release); mapping the stream on the consumer's side and
 * checking the shared memory before anything is read; and connecting,
 * in this process (through the registry) or in another one (the socket
 * handshake of client.c). The producer's server (server.c) claims and
 * activates here too.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/stat.h>

#include "attach.h"
#include "client.h"
#include "consumer.h"
#include "errors.h"
#include "membarrier.h"
#include "probes.h"
#include "registry.h"
#include "wakeup.h"

/* One consumer per stream: the first claim wins. */
int evs_stream_claim(struct evs_stream *s)
{
	int expected = 0;

	/* pairs with smp_store_release(&s->claimed, 0) in
	 * evs_stream_release_claim(): the last consumer is inactive first */
	if (!cmpxchg(&s->claimed, &expected, 1))
		return -EBUSY;
	return 0;
}

/* Tries of the handover's reading of prod_pos and committed together,
 * before it takes what it read last (a publication keeps landing). */
#define HANDOVER_TRIES 64

/*
 * The records of [from, to) counted by walking their headers, which the
 * producer wrote; -1 when the walk misses to (from or to is not where a
 * record starts). Nothing at or past the accepted consumer position has
 * been written over: the producer writes up to a ring past it. Each
 * header must hold its own position (stream_seal_as()): the producer
 * accepts any position the consumer publishes within its bounds, without
 * walking the ring at each look, so the position it last accepted may
 * itself lie inside a payload, whose bytes a header-shaped run could
 * otherwise lead on to `to`.
 */
static int64_t records_between(const struct evs_stream *s, uint64_t from, uint64_t to)
{
	int64_t n = 0;

	if (from % EVS_RECORD_ALIGN)
		return -1;
	while (from != to) {
		const struct evs_event_header *h =
			(const struct evs_event_header *)(s->data + from % s->cap);
		uint64_t size = h->data_size, at;

		memcpy(&at, (const char *)h + EVS_RECORD_POS_AT, sizeof(at));
		if (at != from || size > s->cap - EVS_RECORD_HDR || evs_record_len(size) > to - from)
			return -1;
		from += evs_record_len(size);
		n++;
	}
	return n;
}

/*
 * Where the next consumer starts. It inherits the records its predecessor
 * left unreleased, from the position that one left in its page, when the
 * records from the position the producer last accepted lead to it and on
 * to prod_pos: an honest consumer's position always does. Its released
 * count is what was committed less the records still there, not the one
 * left in the page (a consumer killed between its two stores leaves the
 * count one ahead of the position; the record is delivered again, as one
 * it held). Any other position was written by a consumer that wrote
 * nonsense, or chosen inside a payload: the next consumer starts at the
 * newest record, and the skipped records are said on stderr.
 */
static void stream_handover(struct evs_stream *s, struct evs_shm_cons *init)
{
	/* relaxed: the old page is untrusted, checked below */
	uint64_t c = READ_ONCE(&s->cons->cons_pos), r = READ_ONCE(&s->cons->released);
	/* relaxed: the producer thread's own words; it moves them only while
	 * a consumer is active, or in an emit that began before it left,
	 * which is why each try reads cons_cache again */
	uint64_t cc = 0, rc = READ_ONCE(&s->released_cache);
	uint64_t p = 0, k = 0;
	int64_t n = -1;

	for (int i = 0; i < HANDOVER_TRIES; i++) {
		cc = READ_ONCE(&s->cons_cache);
		/* pairs with smp_store_release(&prod->prod_pos) in stream_publish():
		 * the records below p are complete, and committed counts them
		 * (it is stored first; one in flight may be counted already:
		 * stream_refresh_cons() takes such a count as committed) */
		p = smp_load_acquire(&s->prod->prod_pos);
		n = c - cc > p - cc || records_between(s, cc, c) < 0 ? -1 : records_between(s, c, p);
		/* relaxed: after the acquire above */
		k = READ_ONCE(&s->prod->committed);
		/* pairs with smp_wmb() in stream_refresh_cons(): the walk's
		 * reads are done before cons_cache is read again; unchanged, no
		 * record was written over [cc, c) while they ran (the emit in
		 * flight moves cons_cache before it writes below it) */
		smp_rmb();
		/* pairs as above: a publication landed meanwhile, look again */
		if (READ_ONCE(&s->cons_cache) == cc && smp_load_acquire(&s->prod->prod_pos) == p)
			break;
	}
	if (n >= 0 && (uint64_t)n <= k) {
		init->cons_pos = c;
		init->released = k - (uint64_t)n;
		return;
	}
	init->cons_pos = p;
	init->released = k;
	fprintf(stderr, "evstream: core %u: the last consumer left a position that does not match "
		"the ring; the next one starts at the newest record, skipping %llu it had not "
		"released\n", s->core, (unsigned long long)(k - (r - rc <= k - rc ? r : rc)));
}

/* Called with the stream claimed, before the consumer can see any data:
 * a fresh consumer page for it, so that what an earlier consumer writes
 * into its own, now or later, moves nothing. 1 when the consumer may use
 * membarrier(), 0 when not, or -errno. */
int evs_stream_activate(struct evs_stream *s, bool consumer_membarrier)
{
	bool use_membarrier = consumer_membarrier && s->owner->membarrier;
	struct evs_shm_cons init = { .wait = EVS_WAIT_AWAKE };
	int err;

	stream_handover(s, &init);
	err = evs_backing_renew_cons(&s->backing, &s->map, &init, s->owner->name, s->core);
	if (err)
		return evs_fail(-err, "a consumer page for core %u: %s", s->core, evs_strerror(err));
	/* a kick left over from a previous consumer would be a spurious wakeup
	 * (one still on its way is the consumer's to drop: prepare_wait) */
	evs_efd_drain(s->efd);
	/* relaxed: ordered before the producer's next emit by active below */
	WRITE_ONCE(&s->fence, !use_membarrier);
	/* the consumer starts armed (after the drain above, so that a kick
	 * for this arm stays): the first commit wakes it, so a client that
	 * polls before it reads anything is not left asleep */
	WRITE_ONCE(&s->cons->wait, EVS_WAIT_ARMED);
	/* Dekker with stream_publish()'s store of prod_pos and load of the
	 * wait word, as consumer_prepare_wait() arms: a publication that is
	 * not admitted after active below (a commit in flight, or a publish()
	 * of deferred records) either sees this arm and kicks, or its
	 * prod_pos is visible when the consumer first looks
	 * (evs_consumer_arm_at_start()). That commit may run under the
	 * previous consumer's rules, with only a barrier() (fence 0), so it
	 * takes membarrier() whenever the producer has it. */
	if (s->owner->membarrier)
		evs_membarrier();
	else
		smp_mb();
	/* pairs with smp_load_acquire(&s->active) in stream_admit()
	 * (producer.c): the wait word and fence above are in place first */
	smp_store_release(&s->active, 1);
	if (EVS_PROBE_ENABLED(connect))
		EVS_PROBE2(connect, s->core, s->owner ? s->owner->name : NULL);
	return use_membarrier;
}

void evs_stream_release_claim(struct evs_stream *s)
{
	/* pairs with smp_load_acquire(&s->active) in stream_admit(): the
	 * producer drops as no_consumer from its next emit on */
	smp_store_release(&s->active, 0);
	/* pairs with cmpxchg(&s->claimed) in evs_stream_claim(): the next
	 * consumer claims only after this one is inactive */
	smp_store_release(&s->claimed, 0);
	if (EVS_PROBE_ENABLED(disconnect))
		EVS_PROBE2(disconnect, s->core, s->owner ? s->owner->name : NULL);
}

void evs_stream_orphan_local(struct evs_stream *s)
{
	if (s->local) {
		s->local->local = NULL;
		s->local = NULL;
	}
}

static int file_size_is(int fd, uint64_t size)
{
	struct stat st;

	return fstat(fd, &st) == 0 && (uint64_t)st.st_size == size;
}

/* A file the producer could still shrink would turn our reads into
 * SIGBUS (holes it punches: docs/reliability.md). */
static bool sealed_with(int fd, int want)
{
	int seals = fcntl(fd, F_GET_SEALS);

	return seals >= 0 && (seals & want) == want;
}

/* Map the stream and check the producer's identity page against what the
 * handshake said; the consumer starts where its page says (the position
 * evs_stream_activate() handed over). */
int evs_consumer_map(struct evs_consumer *c, int ctl_fd, int cons_fd, int data_fd,
		     uint64_t ring_bytes, uint64_t page_size, unsigned int core, bool membarrier)
{
	const struct evs_shm_prod *prod;
	uint64_t prod_pos, cons_pos;
	int err;

	if ((page_size != 4096 && page_size != EVS_HUGE_PAGE) || ring_bytes < page_size ||
	    ring_bytes % page_size || ring_bytes > (1ULL << 46) ||
	    !file_size_is(data_fd, ring_bytes) || !file_size_is(ctl_fd, EVS_CTL_PAGE) ||
	    !file_size_is(cons_fd, EVS_CTL_PAGE))
		return evs_fail(EBADMSG, "stream of core %u: sizes do not match the shared files", core);
	if (!sealed_with(ctl_fd, F_SEAL_SHRINK | F_SEAL_GROW) ||
	    !sealed_with(cons_fd, F_SEAL_SHRINK | F_SEAL_GROW) ||
	    !sealed_with(data_fd, F_SEAL_SHRINK | F_SEAL_GROW))
		return evs_fail(EBADMSG, "stream of core %u: the shared files lack their seals "
				"(shrink and grow)", core);
	err = evs_map_attach(&c->map, ctl_fd, cons_fd, data_fd, ring_bytes, page_size, false);
	if (err)
		return evs_fail(-err, "mapping the ring of core %u: %s", core, evs_strerror(err));
	prod = c->map.prod;
	if (prod->magic != EVS_SHM_MAGIC || prod->abi_major != EVS_ABI_MAJOR ||
	    prod->hdr_bytes != EVS_CTL_BYTES || prod->ring_bytes != ring_bytes ||
	    prod->page_size != page_size || prod->core != core || prod->max_events == 0) {
		/* read before the unmap: the page is gone after it */
		unsigned int abi = prod->abi_major;

		evs_map_detach(&c->map);
		return evs_fail(EBADMSG, "stream of core %u: bad identity (magic, ABI %u, sizes)",
				core, abi);
	}
	/* pairs with smp_store_release(&prod->prod_pos) in stream_publish() */
	prod_pos = smp_load_acquire(&prod->prod_pos);
	cons_pos = READ_ONCE(&c->map.cons->cons_pos);
	if (prod_pos - cons_pos > ring_bytes || (prod_pos | cons_pos) % EVS_RECORD_ALIGN) {
		evs_map_detach(&c->map);
		return evs_fail(EBADMSG, "stream of core %u: positions out of range", core);
	}
	c->prod = prod;
	c->cons = c->map.cons;
	c->data = c->map.data;
	c->cap = ring_bytes;
	c->cons_pos = cons_pos;
	c->cons_off = cons_pos % ring_bytes;
	c->prod_cache = cons_pos;
	c->released = READ_ONCE(&c->map.cons->released);
	c->core = core;
	c->membarrier = membarrier;
	return 0;
}


/* A producer of this process: claim the stream and map it from the
 * producer's own descriptors. Under the registry lock. */
static int connect_local(struct evs_consumer *c, struct evs_producer *p, unsigned int core)
{
	struct evs_stream *s;
	int err;

	if (core >= p->ncores)
		return evs_fail(EINVAL, "core %u is out of range: producer '%s' has cores 0 to %u",
				core, p->name ? p->name : "(unnamed)", p->ncores - 1);
	s = &p->streams[core];
	if (evs_stream_claim(s))
		return evs_fail(EBUSY, "core %u already has a consumer", core);
	/* the stream's own eventfd: the producer's free wakes it too */
	c->efd = fcntl(s->efd, F_DUPFD_CLOEXEC, 0);
	if (c->efd < 0) {
		err = -errno;
		evs_stream_release_claim(s);
		return err;
	}
	/* first: activation gives the stream its fresh consumer page */
	err = evs_stream_activate(s, evs_membarrier_usable());
	if (err >= 0)
		err = evs_consumer_map(c, s->backing.ctl_ro_fd, s->backing.cons_fd,
				       s->backing.data_ro_fd, s->backing.ring_bytes,
				       s->backing.page_size, core, err);
	if (err) {
		evs_stream_release_claim(s);
		return err;
	}
	c->wait_fd = c->efd;
	c->local = s;
	s->local = c;
	evs_consumer_arm_at_start(c);
	return 0;
}

static int epoll_add(int ep, int fd, uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.fd = fd };

	return epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
}

/* A producer of another process: the handshake hands over its memory
 * files and eventfd; the socket stays open as the liveness link. */
static int connect_remote(struct evs_consumer *c, const char *name, unsigned int core,
			  const struct evs_consumer_opts *opts)
{
	int fds[EVS_WELCOME_NFDS], sock, err;
	struct evs_welcome w;

	err = evs_client_handshake(name, core, opts, &w, fds, &sock);
	if (err)
		return err;
	err = evs_consumer_map(c, fds[EVS_WELCOME_CTL_FD], fds[EVS_WELCOME_CONS_FD],
			       fds[EVS_WELCOME_DATA_FD], w.ring_bytes, w.page_size, core,
			       w.flags & EVS_WELCOME_F_MEMBARRIER);
	/* the mappings hold the memory; only the eventfd is kept */
	close(fds[EVS_WELCOME_CTL_FD]);
	close(fds[EVS_WELCOME_CONS_FD]);
	close(fds[EVS_WELCOME_DATA_FD]);
	if (err) {
		close(fds[EVS_WELCOME_EVENT_FD]);
		close(sock);
		return err;
	}
	c->efd = fds[EVS_WELCOME_EVENT_FD];
	c->sock = sock;
	/* one fd to wait on for both records and the producer's end: a dead
	 * producer cannot write the eventfd, but its socket hangs up */
	c->wait_fd = epoll_create1(EPOLL_CLOEXEC);
	if (c->wait_fd < 0 || epoll_add(c->wait_fd, c->efd, EPOLLIN) ||
	    epoll_add(c->wait_fd, c->sock, EPOLLIN | EPOLLRDHUP))
		return evs_fail(errno, "epoll for the stream fd of core %u: %s", core,
				strerror(errno));
	evs_consumer_arm_at_start(c);
	return 0;
}

static void consumer_close_fds(struct evs_consumer *c)
{
	if (c->wait_fd >= 0 && c->wait_fd != c->efd)
		close(c->wait_fd);
	if (c->efd >= 0)
		close(c->efd);
	/* closing the socket is the hang-up the producer's server sees */
	if (c->sock >= 0)
		close(c->sock);
}

EVS_API struct evs_consumer *evs_consumer__connect(const char *name, unsigned int core,
						   const struct evs_consumer_opts *opts)
{
	struct evs_consumer *c;
	struct evs_producer *p;
	bool use_membarrier;
	int err;

	evs_clear_errmsg();
	if (!OPTS_VALID(opts, evs_consumer_opts)) {
		err = evs_fail(EINVAL, "evs_consumer_opts: unknown fields set");
		goto err_out;
	}
	if (name && (err = evs_check_name(name)))
		goto err_out;
	c = calloc(1, sizeof(*c));
	if (!c) {
		err = -ENOMEM;
		goto err_out;
	}
	c->efd = c->sock = c->wait_fd = -1;
	c->kick_landing_ms = EVS_KICK_LANDING_MS;
	err = evs_env_membarrier(&use_membarrier);
	if (err)
		goto err_free;
	err = evs_env_catchup_ns(&c->catchup_ns);
	if (err)
		goto err_free;

	evs_registry_lock();
	p = evs_registry_find(name);
	if (p) {
		err = connect_local(c, p, core);
		evs_registry_unlock();
		if (err)
			goto err_free;
		return c;
	}
	evs_registry_unlock();

	if (!name) {
		err = evs_fail(ENOENT, "no producer in this process (and no name given to look for one elsewhere)");
		goto err_free;
	}
	err = connect_remote(c, name, core, opts);
	if (err)
		goto err_free;
	return c;

err_free:
	evs_map_detach(&c->map);
	consumer_close_fds(c);
	free(c);
err_out:
	errno = -err;
	return NULL;
}

EVS_API void evs_consumer__free(struct evs_consumer *c)
{
	if (!c)
		return;
	evs_registry_lock();
	if (c->local) {
		c->local->local = NULL;
		evs_stream_release_claim(c->local);
		c->local = NULL;
	}
	evs_registry_unlock();
	evs_map_detach(&c->map);
	free(c->held_len);
	consumer_close_fds(c);
	free(c);
}

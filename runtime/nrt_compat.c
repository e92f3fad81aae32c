/* SPDX-License-Identifier: MIT */
/*
 * The runtime's debug-stream API on top of the native consumer:
 * connect / read one event / close, with NRT_STATUS codes.
 *
 * The stream fd is the consumer's eventfd. Reading an event must not take a
 * process-wide lock (streams of different cores are read from different
 * threads at once), so the stream is found by indexing a table with the fd:
 * one atomic load. Connect and close, which are rare, take a mutex; so
 * does the lookup of an fd beyond the table, kept in a short list.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "evstream/evstream.h"
#include "nrt/ndebug_stream.h"
#include "atomics.h"
#include "consumer.h"

/* Zero pages cost nothing until a stream fd that high is used. */
#define DIRECT_FDS 65536

static _Atomic(struct evs_consumer *) by_fd[DIRECT_FDS];

struct nrt_conn {
	int fd;
	struct evs_consumer *c;
};

static pthread_mutex_t conns_mutex = PTHREAD_MUTEX_INITIALIZER;
static struct nrt_conn *high_conns; /* fds >= DIRECT_FDS */
static size_t nhigh, high_cap;

/*
 * The caller owns the stream until it closes it (one thread per stream), so
 * the consumer cannot be freed under a lookup of its own fd.
 */
static struct evs_consumer *conn_find(int fd)
{
	struct evs_consumer *c = NULL;

	if (fd >= 0 && fd < DIRECT_FDS)
		/* pairs with smp_store_release(&by_fd[fd]) in conn_add() */
		return smp_load_acquire(&by_fd[fd]);
	pthread_mutex_lock(&conns_mutex);
	for (size_t i = 0; i < nhigh; i++)
		if (high_conns[i].fd == fd) {
			c = high_conns[i].c;
			break;
		}
	pthread_mutex_unlock(&conns_mutex);
	return c;
}

static int conn_add(int fd, struct evs_consumer *c)
{
	int err = 0;

	if (fd < DIRECT_FDS) {
		/* pairs with smp_load_acquire(&by_fd[fd]) in conn_find(): the
		 * consumer is complete before its fd leads to it */
		smp_store_release(&by_fd[fd], c);
		return 0;
	}
	pthread_mutex_lock(&conns_mutex);
	if (nhigh == high_cap) {
		size_t cap = high_cap ? high_cap * 2 : 16;
		struct nrt_conn *n = realloc(high_conns, cap * sizeof(*n));

		if (!n) {
			err = -ENOMEM;
			goto out;
		}
		high_conns = n;
		high_cap = cap;
	}
	high_conns[nhigh++] = (struct nrt_conn){ .fd = fd, .c = c };
out:
	pthread_mutex_unlock(&conns_mutex);
	return err;
}

static struct evs_consumer *conn_remove(int fd)
{
	struct evs_consumer *c = NULL;

	if (fd >= 0 && fd < DIRECT_FDS)
		/* one owner per fd: only its closer clears it (pairs with the
		 * store that registered it, conn_add()) */
		return xchg(&by_fd[fd], NULL);
	pthread_mutex_lock(&conns_mutex);
	for (size_t i = 0; i < nhigh; i++)
		if (high_conns[i].fd == fd) {
			c = high_conns[i].c;
			high_conns[i] = high_conns[--nhigh];
			break;
		}
	pthread_mutex_unlock(&conns_mutex);
	return c;
}

/* The producer is the one of this process (EVSTREAM_PRODUCER names one if
 * there are several); with none here, EVSTREAM_PRODUCER names a producer
 * in another process to reach through its socket. */
NRT_API NRT_STATUS nrt_debug_client_connect(int logical_nc_idx, int *stream_fd)
{
	const char *name = getenv("EVSTREAM_PRODUCER");
	struct evs_consumer *c;

	if (!stream_fd || logical_nc_idx < 0)
		return NRT_INVALID;
	if (name && !*name)
		name = NULL;
	c = evs_consumer__connect(name, (unsigned int)logical_nc_idx, NULL);
	if (!c) {
		switch (errno) {
		case ENOENT: return NRT_UNINITIALIZED;
		case EINVAL: case EBUSY: return NRT_INVALID;
		case ENOMEM: case EMFILE: case ENFILE: return NRT_RESOURCE;
		case ETIMEDOUT: return NRT_TIMEOUT;
		default: return NRT_FAILURE;
		}
	}
	if (conn_add(evs_consumer__fd(c), c)) {
		evs_consumer__free(c);
		return NRT_RESOURCE;
	}
	*stream_fd = evs_consumer__fd(c);
	return NRT_SUCCESS;
}

NRT_API void nrt_debug_client_connect_close(int stream_fd)
{
	evs_consumer__free(conn_remove(stream_fd));
}

NRT_API NRT_STATUS nrt_debug_client_read_one_event(int stream_fd, ndebug_stream_event_header_t *header,
						   void **payload)
{
	struct evs_consumer *c;

	if (!header || !payload)
		return NRT_INVALID;
	c = conn_find(stream_fd);
	if (!c)
		return NRT_INVALID_HANDLE;
	/* one call: the record copied out and released, and the wakeup armed
	 * when it was the last one, so that stream_fd polls readable exactly
	 * when a read would succeed (an empty read arms it too) */
	switch (evs_consumer_take(c, header, payload, malloc)) {
	case 0:
		return NRT_SUCCESS;
	case -EAGAIN:
		return NRT_QUEUE_EMPTY;
	case -EPIPE:
		return NRT_CLOSED;
	case -ENOMEM:
		return NRT_RESOURCE; /* the event stays in the ring */
	default:
		return NRT_FAILURE;
	}
}

/* SPDX-License-Identifier: MIT */
/* A consumer's side of the socket handshake (client.c). */
#ifndef EVS_CLIENT_H
#define EVS_CLIENT_H

#include "evstream/evstream.h"
#include "handshake.h"

/*
 * Say hello to producer name for stream core and receive its welcome:
 * on success the welcome, its EVS_WELCOME_NFDS descriptors (ours to
 * close) and the connected socket (the liveness link). A negative errno,
 * with a sentence for evs_errmsg(), when refused or broken.
 */
int evs_client_handshake(const char *name, unsigned int core, const struct evs_consumer_opts *opts,
			 struct evs_welcome *w, int fds[EVS_WELCOME_NFDS], int *sock);

#endif

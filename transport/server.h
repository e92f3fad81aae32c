/* SPDX-License-Identifier: MIT */
/* The producer's socket server for consumers of other processes (server.c). */
#ifndef EVS_SERVER_H
#define EVS_SERVER_H

#include "evstream/evstream.h"

int evs_server_start(struct evs_producer *p, const struct evs_producer_opts *opts);
void evs_server_stop(struct evs_producer *p);

#endif

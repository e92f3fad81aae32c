/* SPDX-License-Identifier: MIT */
/* The runtime directory, checked once and then used through its descriptor
 * (rundir.c); see "Cross-process handshake" in docs/architecture.md. */
#ifndef EVS_RUNDIR_H
#define EVS_RUNDIR_H

#include <stdbool.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>

#include "config.h"

#define EVS_RUNDIR_MAX sizeof(((struct sockaddr_un *)0)->sun_path)
/* "<name>.sock" or "<name>.lock" */
#define EVS_RUNFILE_MAX (EVS_NAME_MAX + sizeof(".sock"))

struct evs_rundir {
	int fd;               /* O_PATH, checked; -1 when closed */
	uid_t peer_uid;       /* who may serve a producer here, besides root */
	char path[EVS_RUNDIR_MAX]; /* as named: for messages only */
};

/* The producer's: created if missing (0700, 0750 with a group), ours, not
 * a symbolic link, writable by nobody else. */
int evs_rundir_make(struct evs_rundir *d, const char *opt_dir, bool group, gid_t gid);
/* A consumer's: not a symbolic link, writable by nobody but its owner, who
 * is this process's uid or root (or, named explicitly, the uid of a
 * producer sharing it with a group of ours); that uid goes to peer_uid. */
int evs_rundir_open(struct evs_rundir *d, const char *opt_dir, const char *name);
void evs_rundir_close(struct evs_rundir *d);

/* name + ".sock" / ".lock" into buf (EVS_RUNFILE_MAX). */
void evs_runfile(char *buf, const char *name, const char *suffix);
/* The address of file in d, through the descriptor: /proc/self/fd/N/file. */
void evs_rundir_sockaddr(const struct evs_rundir *d, const char *file, struct sockaddr_un *sa);
/* A consumer's look at producer name's socket file before connecting: a
 * socket, not a link, owned by d->peer_uid or root. */
int evs_rundir_check_socket(const struct evs_rundir *d, const char *name, const char *file);

#endif

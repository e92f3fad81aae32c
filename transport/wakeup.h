/* SPDX-License-Identifier: MIT */
/* The eventfd, written and drained without ever waiting (wakeup.c). */
#ifndef EVS_WAKEUP_H
#define EVS_WAKEUP_H

#include <stdbool.h>
#include <stddef.h>

/* Write 1 / read everything, whatever the consumer did to the shared file
 * flags. */
bool evs_efd_kick(int efd);
void evs_efd_drain(int efd);
/* 0 when fd is an eventfd; else -EPROTO with what it is in what[len] (its
 * /proc/self/fd link: "pipe:[123]", a path), or -errno when /proc cannot
 * say. */
int evs_efd_check(int fd, char *what, size_t len);

#endif

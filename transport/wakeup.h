/* SPDX-License-Identifier: MIT */
/* The stream's eventfd, written and read without ever waiting, by the
 * producer and the consumer alike (wakeup.c). */
#ifndef EVS_WAKEUP_H
#define EVS_WAKEUP_H

#include <stdbool.h>
#include <stddef.h>

/* Add 1 to the count; false when it was not added (a full count: the fd
 * is readable already). */
bool evs_efd_kick(int efd);
/* Read the count, which resets it; true when there was one. */
bool evs_efd_drain(int efd);
/* 0 when fd is an eventfd, and not a semaphore one; else -EPROTO with
 * what it is in what[len] (its /proc/self/fd link: "pipe:[123]", a path;
 * or "a semaphore eventfd"), or -errno when /proc cannot say. */
int evs_efd_check(int fd, char *what, size_t len);

#endif

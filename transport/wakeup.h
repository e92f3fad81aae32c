/* SPDX-License-Identifier: MIT */
/* The eventfd, written and drained without ever waiting (wakeup.c). */
#ifndef EVS_WAKEUP_H
#define EVS_WAKEUP_H

#include <stdbool.h>

/* Write 1 / read everything, whatever the consumer did to the shared file
 * flags. */
bool evs_efd_kick(int efd);
void evs_efd_drain(int efd);

#endif

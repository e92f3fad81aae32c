/* SPDX-License-Identifier: MIT */
/* membarrier(2) for the wakeup protocol's store/load pairing (membarrier.c). */
#ifndef EVS_MEMBARRIER_H
#define EVS_MEMBARRIER_H

#include <stdbool.h>

bool evs_membarrier_usable(void);   /* this process may call it */
bool evs_membarrier_register(void); /* producers: skip the fence */
int evs_membarrier(void);           /* consumers: 0 or -errno */

#endif

/* SPDX-License-Identifier: MIT */
/* Producers of this process, by name (registry.c). */
#ifndef EVS_REGISTRY_H
#define EVS_REGISTRY_H

struct evs_producer;

void evs_registry_lock(void);
void evs_registry_unlock(void);
/* The caller holds the lock for these. */
void evs_registry_add(struct evs_producer *p);
void evs_registry_remove(struct evs_producer *p);
struct evs_producer *evs_registry_find(const char *name); /* NULL: the first */

#endif

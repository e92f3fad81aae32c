/* SPDX-License-Identifier: MIT */
/* Producers of this process, by name, for in-process consumers and the
 * debug-stream API. One mutex; only connect/close paths take it. */
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "producer.h"
#include "registry.h"

static pthread_mutex_t registry_mutex = PTHREAD_MUTEX_INITIALIZER;
static struct evs_producer *registry_head;

void evs_registry_lock(void)
{
	pthread_mutex_lock(&registry_mutex);
}

void evs_registry_unlock(void)
{
	pthread_mutex_unlock(&registry_mutex);
}

/* Appends, so that "the first producer" is the oldest one. Caller locks. */
void evs_registry_add(struct evs_producer *p)
{
	struct evs_producer **pp = &registry_head;

	while (*pp)
		pp = &(*pp)->next;
	p->next = NULL;
	*pp = p;
}

void evs_registry_remove(struct evs_producer *p)
{
	for (struct evs_producer **pp = &registry_head; *pp; pp = &(*pp)->next) {
		if (*pp == p) {
			*pp = p->next;
			return;
		}
	}
}

/* name NULL: the first producer. Caller locks. A child forked from the
 * creator inherits a copy of the list, but not the producer: skip it. */
struct evs_producer *evs_registry_find(const char *name)
{
	pid_t self = getpid();

	for (struct evs_producer *p = registry_head; p; p = p->next)
		if (p->pid == self && (!name || (p->name && !strcmp(p->name, name))))
			return p;
	return NULL;
}

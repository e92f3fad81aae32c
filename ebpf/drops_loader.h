/* SPDX-License-Identifier: MIT */
/*
 * Loading, attaching, reading and unpinning the drop-counting BPF program.
 * Used by evs-drops, evs-bench-drops and tests/test_bpf.
 *
 * The maps are pinned under a directory (default /sys/fs/bpf/evstream) so
 * that `bpftool map dump pinned` and other readers see them. One process at
 * a time holds the probe attached (the owner, recorded in the drops_owner
 * map); another evs_drops__open() on the same directory reuses the pinned
 * maps and only reads, so no drop is ever counted twice.
 *
 * Errors as in libevstream: int functions return -errno, constructors NULL
 * and errno; evs_drops__errmsg() holds a sentence saying what to do.
 */
#ifndef EVS_DROPS_LOADER_H
#define EVS_DROPS_LOADER_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "drops.h"

struct evs_drops_opts {
	size_t sz;
	const char *pin_dir;  /* NULL: EVS_DROPS_PIN_DIR */
	const char *binary;   /* library or program with the probes; NULL: default */
	pid_t pid;            /* 0: every process using binary; else that one */
	int no_attach;        /* 1: only open the pinned maps (they must exist) */
};

struct evs_drops;

struct evs_drops *evs_drops__open(const struct evs_drops_opts *opts);
/* Detaches the probe if this handle attached it; the pins stay. A handle
 * that reads another's maps reports that owner's binary and pid; asked
 * for another binary or pid it fails with -EBUSY. Pins that are not of
 * evs-drops' layout, and a pin directory that is a link or another user's,
 * are refused by name before anything is read. */
void evs_drops__free(struct evs_drops *d);
/*
 * Before each read of a handle that is not the owner: follows the owner,
 * takes the probe over when the owner has exited (as a new evs_drops__open
 * would; not in no_attach mode), and fails with -ESTALE when the pins are
 * no longer its maps (evs_drops__unpin(), --detach): then counting into
 * them would be seen by nobody. For an owner or reader of one process
 * (pid), -ESRCH once that process exited: the probe is detached and the
 * owner entry removed (counts stay pinned), so the next open may count.
 */
int evs_drops__refresh(struct evs_drops *d);
/* 1: this handle holds the probe attached; 0: it reads another's maps. */
int evs_drops__is_owner(const struct evs_drops *d);
pid_t evs_drops__owner_pid(const struct evs_drops *d);
/* 1: the owner leads a session of its own, as evs-drops --background's
 * child does (it outlives the terminal or script that started it). */
int evs_drops__owner_in_background(const struct evs_drops *d);
const char *evs_drops__binary(const struct evs_drops *d);
const char *evs_drops__pin_dir(const struct evs_drops *d);

typedef int (*evs_drops_fn)(void *ctx, const struct evs_drop_key *k, const struct evs_drop_val *v);
/* Calls fn for every entry; stops early when fn returns nonzero. Returns
 * the number of entries visited or -errno. */
int evs_drops__for_each(const struct evs_drops *d, evs_drops_fn fn, void *ctx);
int evs_drops__lookup(const struct evs_drops *d, pid_t pid, unsigned int core,
		      struct evs_drop_val *v);

/*
 * Stop counting and remove the pins: signals a live owner in another
 * process (SIGTERM) and waits for it, then unpins the maps and removes the
 * directory. 0 when nothing is left pinned (also when nothing was).
 */
int evs_drops__unpin(const char *pin_dir);

/* What evs_drops__unpin_report() found and did, for saying so. */
struct evs_drops_unpinned {
	pid_t stopped;  /* the live owner it stopped; 0: none was counting */
	int pins;       /* pins it removed; 0: nothing was pinned */
};
/* evs_drops__unpin(), and what it did to *r (may be NULL). */
int evs_drops__unpin_report(const char *pin_dir, struct evs_drops_unpinned *r);

/* Whether BPF can be used here at all; 0 or -errno with evs_drops__errmsg()
 * saying why (not root, bpffs, BTF). */
int evs_drops__check_env(const char *pin_dir);

const char *evs_drops__errmsg(void);
/* libbpf's own messages to stderr (default: kept quiet, the last one is
 * appended to errmsg). */
void evs_drops__set_verbose(int on);

/* ------------------------------------------------------------ stapsdt */
struct evs_stapsdt_note {
	unsigned long long sema;  /* semaphore address, 0: none */
	char args[256];
};
/* Find provider:name in the .note.stapsdt of an ELF file: 0, -ENOENT when
 * the file has no such probe, other -errno when it cannot be read. */
int evs_stapsdt_find(const char *path, const char *provider, const char *name,
		     struct evs_stapsdt_note *note);

#endif

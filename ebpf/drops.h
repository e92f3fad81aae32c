/* SPDX-License-Identifier: MIT */
/*
 * Types shared by the BPF program (drops.bpf.c) and its readers. They are
 * the BTF of the pinned maps, so `bpftool map dump` prints these names.
 */
#ifndef EVS_EBPF_DROPS_H
#define EVS_EBPF_DROPS_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define EVS_DROPS_PIN_DIR     "/sys/fs/bpf/evstream"
#define EVS_DROPS_MAP         "drops"        /* <pin dir>/drops */
#define EVS_DROPS_OWNER_MAP   "drops_owner"  /* <pin dir>/drops_owner */
#define EVS_DROPS_MAX_ENTRIES 16384

/* One entry per process and logical core (stream index) of its producers. */
struct evs_drop_key {
	__u32 pid;   /* tgid */
	__u32 core;
};

struct evs_drop_val {
	__u64 events;       /* dropped events, all causes */
	__u64 bytes;        /* their payload bytes */
	__u64 bursts;       /* runs of consecutive drops */
	__u64 batches;      /* probe hits (a run is reported in batches) */
	__u64 ring_full;    /* events per cause (enum evs_drop_cause) */
	__u64 too_big;
	__u64 no_consumer;
	__u64 no_memory;
	__u64 total;        /* the stream's own running total at the last batch */
	__u64 last_ns;      /* bpf_ktime_get_ns() of the last batch */
	char comm[16];      /* thread that reported the first batch */
};

#define EVS_DROPS_PATH_MAX 4096  /* PATH_MAX, which vmlinux.h does not have */

/* The process that holds the probe attached; others only read the maps,
 * so two evs-drops never count a drop twice. What it attached to is kept
 * with it: a reader reports that, not what it would have attached to. */
struct evs_drops_owner {
	__u32 pid;
	__u32 target_pid;   /* 0: every process that maps binary */
	__u64 start_time;   /* /proc/<pid>/stat field 22: tells a reused pid apart */
	char binary[EVS_DROPS_PATH_MAX];  /* the file the probe is attached to */
};

#endif

// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Counts the drops libevstream reports through its USDT probe
 * evstream:drop(core, events, bytes, cause, total, first) into a hash map
 * keyed by {pid, core}. The probe fires once per batch of drops (see
 * transport/drop.c), so this program runs rarely and adds whole batches.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/usdt.bpf.h>

#include "drops.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, EVS_DROPS_MAX_ENTRIES);
	__type(key, struct evs_drop_key);
	__type(value, struct evs_drop_val);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} drops SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct evs_drops_owner);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} drops_owner SEC(".maps");

SEC("usdt")
int BPF_USDT(evs_drop, int core, __u64 events, __u64 bytes, int cause, __u64 total, int first)
{
	struct evs_drop_key key = {
		.pid = bpf_get_current_pid_tgid() >> 32,
		.core = (__u32)core,
	};
	struct evs_drop_val *v = bpf_map_lookup_elem(&drops, &key);

	if (!v) {
		struct evs_drop_val zero = {};

		bpf_get_current_comm(zero.comm, sizeof(zero.comm));
		/* NOEXIST: another CPU may have created it meanwhile; keep theirs */
		bpf_map_update_elem(&drops, &key, &zero, BPF_NOEXIST);
		v = bpf_map_lookup_elem(&drops, &key);
		if (!v)
			return 0; /* the map is full */
	}
	/* atomic: threads of one process may report for the same core */
	__sync_fetch_and_add(&v->events, events);
	__sync_fetch_and_add(&v->bytes, bytes);
	__sync_fetch_and_add(&v->batches, 1);
	if (first)
		__sync_fetch_and_add(&v->bursts, 1);
	/* enum evs_drop_cause by number (evstream.h is not included here);
	 * a cause without a case counts in events only */
	switch (cause) {
	case 0:
		__sync_fetch_and_add(&v->ring_full, events);
		break;
	case 1:
		__sync_fetch_and_add(&v->too_big, events);
		break;
	case 2:
		__sync_fetch_and_add(&v->no_consumer, events);
		break;
	case 3:
		__sync_fetch_and_add(&v->no_memory, events);
		break;
	}
	v->total = total;
	v->last_ns = bpf_ktime_get_ns();
	return 0;
}

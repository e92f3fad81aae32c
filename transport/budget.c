/* SPDX-License-Identifier: MIT */
/*
 * The memory budget of a producer, checked as a whole before anything is
 * taken. Rings are committed lazily (shm.c): a small run touches only the
 * start of each ring. But a ring that fills must be able to take its pages
 * without the process being killed: inside a memory cgroup the kernel
 * OOM-kills rather than fail a page fault or even an fallocate(), so the
 * worst case is checked here, where a shortage can still be a sentence.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/resource.h>

#include "budget.h"
#include "errors.h"
#include "layout.h"
#include "shm.h"

/* where a ring's size comes from, for the advice of a refusal */
#define RING_SIZE_SOURCES \
	"the options ring_bytes or max_events, or EVSTREAM_RING_BYTES or " \
	"NEURON_RT_DEBUG_STREAM_BUFFER_SIZE"

/* Bytes as MiB, for the sentences. */
static double mib(uint64_t bytes)
{
	return (double)bytes / (1024.0 * 1024.0);
}

/* The value of "key:" in a /proc file like meminfo, in its unit; -1. */
static long long proc_value(const char *path, const char *key)
{
	char line[256];
	size_t n = strlen(key);
	long long v = -1;
	FILE *f = fopen(path, "re");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, n) && line[n] == ':') {
			v = strtoll(line + n + 1, NULL, 10);
			break;
		}
	fclose(f);
	return v;
}

static bool read_u64_file(const char *path, uint64_t *v)
{
	char buf[64];
	FILE *f = fopen(path, "re");
	bool ok;

	if (!f)
		return false;
	ok = fgets(buf, sizeof(buf), f) && buf[0] >= '0' && buf[0] <= '9';
	fclose(f);
	if (ok)
		*v = strtoull(buf, NULL, 10);
	return ok; /* "max" (no limit) reads as false */
}

struct cg_room {
	uint64_t room;            /* the least headroom along the path */
	uint64_t limit, usage;    /* where it is */
	char where[1100];
};

/* Mount point of the memory cgroup hierarchy: cgroup v1 with the memory
 * controller, or cgroup v2. */
static bool cgroup_mount(bool v2, char *out, size_t len)
{
	char line[1024], mnt[512], fstype[64], opts[512];
	FILE *f = fopen("/proc/self/mountinfo", "re");
	bool found = false;

	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f)) {
		char *dash = strstr(line, " - ");

		if (!dash || sscanf(line, "%*s %*s %*s %*s %511s", mnt) != 1 ||
		    sscanf(dash + 3, "%63s %*s %511s", fstype, opts) != 2)
			continue;
		if (v2 ? !strcmp(fstype, "cgroup2") :
			 !strcmp(fstype, "cgroup") && strstr(opts, "memory") != NULL) {
			snprintf(out, len, "%s", mnt);
			found = true;
		}
	}
	fclose(f);
	return found;
}

/* Walk from the process's memory cgroup up to the hierarchy's root and
 * keep the least room (limit - usage). False when no limit applies. */
static bool cgroup_room(struct cg_room *r)
{
	char line[1024], mnt[512], dir[1024];
	const char *lim_file = NULL, *use_file = NULL;
	bool limited = false;
	FILE *f = fopen("/proc/self/cgroup", "re");

	if (!f)
		return false;
	dir[0] = '\0';
	while (fgets(line, sizeof(line), f)) {
		char *ctl = strchr(line, ':'), *path = ctl ? strchr(ctl + 1, ':') : NULL;

		if (!path)
			continue;
		path[strcspn(path, "\n")] = '\0';
		*path++ = '\0';
		ctl++;
		/* v1 "N:memory,...:/path" wins over v2 "0::/path" */
		if (strstr(ctl, "memory") && cgroup_mount(false, mnt, sizeof(mnt))) {
			snprintf(dir, sizeof(dir), "%s%s", mnt, path);
			lim_file = "memory.limit_in_bytes";
			use_file = "memory.usage_in_bytes";
			break;
		}
		if (!*ctl && cgroup_mount(true, mnt, sizeof(mnt))) {
			snprintf(dir, sizeof(dir), "%s%s", mnt, path);
			lim_file = "memory.max";
			use_file = "memory.current";
		}
	}
	fclose(f);
	if (!lim_file)
		return false;
	for (;;) {
		char p[1100];
		uint64_t lim, use;

		snprintf(p, sizeof(p), "%s/%s", dir, lim_file);
		if (read_u64_file(p, &lim) && lim < (1ULL << 62)) {
			snprintf(p, sizeof(p), "%s/%s", dir, use_file);
			if (!read_u64_file(p, &use))
				use = 0;
			if (!limited || (lim > use ? lim - use : 0) < r->room) {
				r->room = lim > use ? lim - use : 0;
				r->limit = lim;
				r->usage = use;
				snprintf(r->where, sizeof(r->where), "%s/%s", dir, lim_file);
				limited = true;
			}
		}
		if (strlen(dir) <= strlen(mnt))
			break;
		*strrchr(dir, '/') = '\0';
	}
	return limited;
}

/* Huge pages free for us: free, less those reserved for mappings made. */
static long long hugepages_free(void)
{
	long long free_pages = proc_value("/proc/meminfo", "HugePages_Free");
	long long rsvd = proc_value("/proc/meminfo", "HugePages_Rsvd");

	if (free_pages < 0)
		return 0;
	return rsvd > 0 ? free_pages - rsvd : free_pages;
}

static uint64_t round_up(uint64_t v, uint64_t to)
{
	return (v + to - 1) / to * to;
}

int evs_budget_check(const struct evs_config *cfg, unsigned int ncores, bool *hugetlb)
{
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
	uint64_t huge_ring = round_up(cfg->ring_bytes, EVS_HUGE_PAGE);
	uint64_t ring, total, vm_total;
	long long need = (long long)(huge_ring / EVS_HUGE_PAGE) * ncores;
	long long avail_kb, free_huge = 0;
	struct cg_room cg = { 0 };
	struct rlimit rl;

	*hugetlb = false;
	if (cfg->hugepages != EVS_HUGEPAGES_OFF) {
		free_huge = hugepages_free();
		*hugetlb = free_huge >= need;
		if (!*hugetlb && cfg->hugepages == EVS_HUGEPAGES_ON)
			return evs_fail(ENOSPC, "huge pages required (hugepages on: the option or EVSTREAM_HUGEPAGES) but %u rings of %.1f MiB need %lld "
					"huge pages of 2 MiB and %lld are free: reserve more in "
					"/proc/sys/vm/nr_hugepages or use auto/off", ncores,
					mib(huge_ring), need, free_huge);
	}
	ring = *hugetlb ? huge_ring : round_up(cfg->ring_bytes, page);
	total = ring * ncores;

	/* address space: each ring is mapped twice, plus the control pages */
	vm_total = (2 * ring + (*hugetlb ? EVS_HUGE_PAGE : page) + EVS_CTL_BYTES) * ncores;
	if (getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
		long long vm_kb = proc_value("/proc/self/status", "VmSize");
		uint64_t used = vm_kb > 0 ? (uint64_t)vm_kb * 1024 : 0;

		if (used + vm_total > rl.rlim_cur)
			return evs_fail(ENOMEM, "%u rings of %.1f MiB need %.1f MiB of address space "
					"(each is mapped twice) and RLIMIT_AS leaves %.1f MiB: lower the "
					"ring size (" RING_SIZE_SOURCES "), or raise ulimit -v", ncores, mib(ring), mib(vm_total),
					mib(rl.rlim_cur > used ? rl.rlim_cur - used : 0));
	}
	/* huge pages come from their own pool, checked above */
	if (*hugetlb)
		return 0;
	if (cgroup_room(&cg) && total > cg.room)
		return evs_fail(ENOMEM, "%u rings of %.1f MiB (%.1f MiB) do not fit this process's "
				"memory cgroup: its limit is %.1f MiB (%s) and %.1f MiB are in use; lower the "
				"ring size (" RING_SIZE_SOURCES ") or the cores",
				ncores, mib(ring), mib(total), mib(cg.limit), cg.where, mib(cg.usage));
	avail_kb = proc_value("/proc/meminfo", "MemAvailable");
	if (avail_kb > 0 && total > (uint64_t)avail_kb * 1024)
		return evs_fail(ENOMEM, "%u rings of %.1f MiB (%.1f MiB) are more than the %.1f MiB "
				"of memory available (MemAvailable in /proc/meminfo); lower the "
				"ring size (" RING_SIZE_SOURCES ") or the cores",
				ncores, mib(ring), mib(total), (double)avail_kb / 1024.0);
	return 0;
}

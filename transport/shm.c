/* SPDX-License-Identifier: MIT */
/*
 * Backing memory of a stream: a control memfd and a data memfd (huge pages
 * when asked or free), allocated up front so that a shortage is an error
 * here and never a SIGBUS on first touch; and the double mapping of the
 * data area that keeps every record contiguous.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "errors.h"
#include "shm.h"

#ifndef MFD_HUGE_2MB
#define MFD_HUGE_2MB (21U << 26)
#endif

static uint64_t round_up(uint64_t v, uint64_t to)
{
	return (v + to - 1) / to * to;
}

static int seal_size(int fd)
{
	/* a consumer must not be able to shrink the file under the producer */
	if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0)
		return -errno;
	return 0;
}

/* Allocate every page now: fallocate fails with ENOSPC/ENOMEM instead of a
 * later SIGBUS when the pool (huge pages, tmpfs) runs short. */
static int make_memfd(const char *label, unsigned int flags, uint64_t size, int *out)
{
	int fd = memfd_create(label, MFD_CLOEXEC | MFD_ALLOW_SEALING | flags);
	int err;

	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)size) < 0 || fallocate(fd, 0, 0, (off_t)size) < 0) {
		err = -errno;
		close(fd);
		return err;
	}
	err = seal_size(fd);
	if (err) {
		close(fd);
		return err;
	}
	*out = fd;
	return 0;
}

/* A read-only descriptor of the same file, for consumers: they can map the
 * ring but never write into it. */
static int reopen_ro(int fd)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	return open(path, O_RDONLY | O_CLOEXEC);
}

int evs_backing_create(struct evs_backing *b, const struct evs_config *cfg, const char *label,
		       unsigned int core)
{
	char name[96];
	int err = -ENOMEM;

	memset(b, 0, sizeof(*b));
	b->ctl_fd = b->data_fd = b->data_ro_fd = -1;
	snprintf(name, sizeof(name), "evstream:%s:%u", label ? label : "-", core);

	err = make_memfd(name, 0, EVS_CTL_BYTES, &b->ctl_fd);
	if (err)
		return evs_fail(-err, "control memory for core %u: %s", core, strerror(-err));

	if (cfg->hugepages != EVS_HUGEPAGES_OFF) {
		b->page_size = EVS_HUGE_PAGE;
		b->ring_bytes = round_up(cfg->ring_bytes, b->page_size);
		err = make_memfd(name, MFD_HUGETLB | MFD_HUGE_2MB, b->ring_bytes, &b->data_fd);
		if (!err)
			b->hugetlb = true;
		else if (cfg->hugepages == EVS_HUGEPAGES_ON) {
			evs_backing_destroy(b);
			return evs_fail(-err, "EVSTREAM_HUGEPAGES=on but %llu bytes of 2 MiB huge pages "
					"for core %u could not be had (%s): reserve more in "
					"/proc/sys/vm/nr_hugepages or use auto/off",
					(unsigned long long)round_up(cfg->ring_bytes, EVS_HUGE_PAGE), core,
					strerror(-err));
		}
	}
	if (!b->hugetlb) {
		b->page_size = (uint64_t)sysconf(_SC_PAGESIZE);
		b->ring_bytes = round_up(cfg->ring_bytes, b->page_size);
		err = make_memfd(name, 0, b->ring_bytes, &b->data_fd);
		if (err) {
			evs_backing_destroy(b);
			return evs_fail(-err, "ring memory (%llu bytes) for core %u: %s",
					(unsigned long long)b->ring_bytes, core, strerror(-err));
		}
	}
	b->data_ro_fd = reopen_ro(b->data_fd);
	if (b->data_ro_fd < 0) {
		err = -errno;
		evs_backing_destroy(b);
		return evs_fail(-err, "read-only view of the ring for core %u: %s", core, strerror(-err));
	}
	return 0;
}

void evs_backing_destroy(struct evs_backing *b)
{
	if (b->ctl_fd >= 0)
		close(b->ctl_fd);
	if (b->data_fd >= 0)
		close(b->data_fd);
	if (b->data_ro_fd >= 0)
		close(b->data_ro_fd);
	b->ctl_fd = b->data_fd = b->data_ro_fd = -1;
}

/*
 * Reserve 2 * ring_bytes of address space (aligned to the page size), then
 * map the file over both halves: byte i of the ring is visible at data + i
 * and at data + ring_bytes + i.
 */
static int map_twice(struct evs_map *m, int fd, uint64_t ring_bytes, uint64_t page_size, int prot)
{
	size_t res_len = 2 * ring_bytes + page_size;
	uint8_t *res, *base;
	int populate = (prot & PROT_WRITE) ? MAP_POPULATE : 0;

	res = mmap(NULL, res_len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (res == MAP_FAILED)
		return -errno;
	base = (uint8_t *)(((uintptr_t)res + page_size - 1) & ~(uintptr_t)(page_size - 1));
	if (mmap(base, ring_bytes, prot, MAP_SHARED | MAP_FIXED | populate, fd, 0) == MAP_FAILED ||
	    mmap(base + ring_bytes, ring_bytes, prot, MAP_SHARED | MAP_FIXED | populate, fd, 0) == MAP_FAILED) {
		int err = -errno;

		munmap(res, res_len);
		return err;
	}
	m->data_res = res;
	m->data_res_len = res_len;
	m->data = base;
	m->ring_bytes = ring_bytes;
	return 0;
}

int evs_map_attach(struct evs_map *m, int ctl_fd, int data_fd, uint64_t ring_bytes,
		   uint64_t page_size, bool writable)
{
	uint8_t *ctl;
	int err;

	memset(m, 0, sizeof(*m));
	ctl = mmap(NULL, EVS_CTL_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, ctl_fd, 0);
	if (ctl == MAP_FAILED)
		return -errno;
	/* the consumer only reads page 0: take write access away */
	if (!writable && mprotect(ctl, EVS_CTL_PAGE, PROT_READ) < 0) {
		err = -errno;
		munmap(ctl, EVS_CTL_BYTES);
		return err;
	}
	err = map_twice(m, data_fd, ring_bytes, page_size, writable ? PROT_READ | PROT_WRITE : PROT_READ);
	if (err) {
		munmap(ctl, EVS_CTL_BYTES);
		return err;
	}
	m->ctl_base = ctl;
	m->prod = (struct evs_shm_prod *)ctl;
	m->cons = (struct evs_shm_cons *)(ctl + EVS_CTL_PAGE);
	return 0;
}

void evs_map_detach(struct evs_map *m)
{
	if (m->ctl_base)
		munmap(m->ctl_base, EVS_CTL_BYTES);
	if (m->data_res)
		munmap(m->data_res, m->data_res_len);
	memset(m, 0, sizeof(*m));
}

/* SPDX-License-Identifier: MIT */
/*
 * Backing memory of a stream: a control memfd (the producer's page), a
 * consumer memfd (the consumer's page) and a data memfd (huge pages when
 * budget.c chose them), and the mappings: the two pages side by side, and
 * the data area twice, which keeps every record contiguous. The ring's
 * pages are committed as the producer first reaches them
 * (evs_backing_commit(), from producer.c), so a run that emits little
 * takes little memory; budget.c checked that the whole fits, and a commit
 * that still fails is a counted drop, never a SIGBUS.
 */
#include <errno.h>
#include <stdbool.h>
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

/* fallocate() of [off, off + len): 0 or -errno. It gives up with EINTR when
 * a signal is pending (a profiler's, a timer's), which says nothing of the
 * memory: a few tries, so that it fails only for want of memory. */
static int file_allocate(int fd, uint64_t off, uint64_t len)
{
	for (int tries = 1; fallocate(fd, 0, (off_t)off, (off_t)len) < 0; tries++)
		if (errno != EINTR || tries == EVS_ALLOCATE_TRIES)
			return -errno;
	return 0;
}

/* Make a memfd of size bytes, sealed against shrinking and growing (a
 * consumer must not be able to turn the producer's stores into SIGBUS).
 * prealloc: allocate every page now (the small control file). */
static int make_memfd(const char *label, unsigned int flags, uint64_t size, bool prealloc,
		      unsigned int seals, int *out)
{
	int fd = memfd_create(label, MFD_CLOEXEC | MFD_ALLOW_SEALING | flags);
	int err = 0;

	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)size) < 0)
		err = -errno;
	else if (prealloc)
		err = file_allocate(fd, 0, size);
	if (!err && fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | seals) < 0)
		err = -errno;
	if (err) {
		close(fd);
		return err;
	}
	*out = fd;
	return 0;
}

/*
 * A read-only descriptor of the same file, for consumers: they can map it
 * but never write into it. A memfd's inode is made with mode 0777, and
 * anyone holding a descriptor may open /proc/self/fd/N again, read-write:
 * the file is left readable by its owner only, so that a consumer of
 * another uid cannot turn the descriptor it was given into a writable one
 * (the producer's own descriptor was opened read-write before). -errno on
 * failure.
 */
static int reopen_ro(int fd)
{
	char path[64];
	int ro;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	ro = open(path, O_RDONLY | O_CLOEXEC);
	if (ro < 0)
		return -errno;
	if (fchmod(fd, 0400) < 0) {
		int err = -errno;

		close(ro);
		return err;
	}
	return ro;
}

/* The name a stream's memfds carry (/proc/PID/maps, fd links). */
static void memfd_name(char *name, size_t len, const char *label, unsigned int core)
{
	snprintf(name, len, "evstream:%s:%u", label ? label : "-", core);
}

int evs_backing_create(struct evs_backing *b, const struct evs_config *cfg, bool hugetlb,
		       const char *label, unsigned int core)
{
	char name[96];
	int err;

	memset(b, 0, sizeof(*b));
	b->ctl_fd = b->ctl_ro_fd = b->cons_fd = b->data_fd = b->data_ro_fd = -1;
	memfd_name(name, sizeof(name), label, core);

	/* the two control pages are allocated now: nothing to punch later */
	err = make_memfd(name, 0, EVS_CTL_PAGE, true, F_SEAL_SEAL, &b->ctl_fd);
	if (!err)
		err = make_memfd(name, 0, EVS_CTL_PAGE, true, F_SEAL_SEAL, &b->cons_fd);
	if (err) {
		evs_backing_destroy(b);
		return evs_fail(-err, "control memory for core %u: %s", core, strerror(-err));
	}
	b->ctl_ro_fd = reopen_ro(b->ctl_fd);
	if (b->ctl_ro_fd < 0) {
		err = b->ctl_ro_fd;
		evs_backing_destroy(b);
		return evs_fail(-err, "read-only view of the control page for core %u: %s", core,
				strerror(-err));
	}
	b->hugetlb = hugetlb;
	b->page_size = hugetlb ? EVS_HUGE_PAGE : (uint64_t)sysconf(_SC_PAGESIZE);
	b->ring_bytes = round_up(cfg->ring_bytes, b->page_size);
	/* not F_SEAL_FUTURE_WRITE, which would also stop hole punching: with
	 * it, a process killed while mapping the file was seen stuck in
	 * exit_mmap() on Linux 6.18 (docs/reliability.md) */
	err = make_memfd(name, hugetlb ? MFD_HUGETLB | MFD_HUGE_2MB : 0, b->ring_bytes, false,
			 F_SEAL_SEAL, &b->data_fd);
	if (err) {
		evs_backing_destroy(b);
		return evs_fail(-err, "ring memory (%llu bytes%s) for core %u: %s",
				(unsigned long long)b->ring_bytes, hugetlb ? ", huge pages" : "",
				core, strerror(-err));
	}
	b->data_ro_fd = reopen_ro(b->data_fd);
	if (b->data_ro_fd < 0) {
		err = b->data_ro_fd;
		evs_backing_destroy(b);
		return evs_fail(-err, "read-only view of the ring for core %u: %s", core, strerror(-err));
	}
	return 0;
}

/*
 * Give the ring's bytes [from, to) their pages: allocated in the file
 * (an error here, not a SIGBUS later, when memory or the huge-page pool
 * is short) and mapped in the producer's view at data, so that its stores
 * take no page faults.
 */
int evs_backing_commit(struct evs_backing *b, uint8_t *data, uint64_t from, uint64_t to)
{
	int err = file_allocate(b->data_fd, from, to - from);

	if (err)
		return err;
	/* MADV_POPULATE_WRITE: Linux 5.14; before it, the first store faults */
	madvise(data + from, to - from, MADV_POPULATE_WRITE);
	return 0;
}

/*
 * A new consumer page for the next consumer, holding *init, mapped in the
 * producer's view where the old one was (one mmap() replaces the other,
 * so the producer's pointers stay valid and read the one or the other).
 * The old file is closed here: a consumer that kept its mapping of it
 * writes into a page nobody reads any more. (TSan takes the mmap() for a
 * plain write racing with those loads: scripts/tsan.supp.)
 */
int evs_backing_renew_cons(struct evs_backing *b, struct evs_map *m,
			   const struct evs_shm_cons *init, const char *label, unsigned int core)
{
	char name[96];
	int fd = -1, err;
	ssize_t n;

	memfd_name(name, sizeof(name), label, core);
	err = make_memfd(name, 0, EVS_CTL_PAGE, true, F_SEAL_SEAL, &fd);
	if (err)
		return err;
	n = pwrite(fd, init, sizeof(*init), 0);
	if (n != (ssize_t)sizeof(*init)) {
		err = n < 0 ? -errno : -EIO;
		close(fd);
		return err;
	}
	if (mmap(m->cons, EVS_CTL_PAGE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED | MAP_POPULATE,
		 fd, 0) == MAP_FAILED) {
		err = -errno;
		close(fd);
		return err;
	}
	close(b->cons_fd);
	b->cons_fd = fd;
	return 0;
}

void evs_backing_destroy(struct evs_backing *b)
{
	const int fds[] = { b->ctl_fd, b->ctl_ro_fd, b->cons_fd, b->data_fd, b->data_ro_fd };

	for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
		if (fds[i] >= 0)
			close(fds[i]);
	b->ctl_fd = b->ctl_ro_fd = b->cons_fd = b->data_fd = b->data_ro_fd = -1;
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

	res = mmap(NULL, res_len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (res == MAP_FAILED)
		return -errno;
	base = (uint8_t *)(((uintptr_t)res + page_size - 1) & ~(uintptr_t)(page_size - 1));
	/* pages come when committed (evs_backing_commit()); a hugetlb mapping
	 * reserves them from the pool here, so a short pool fails now */
	if (mmap(base, ring_bytes, prot, MAP_SHARED | MAP_FIXED, fd, 0) == MAP_FAILED ||
	    mmap(base + ring_bytes, ring_bytes, prot, MAP_SHARED | MAP_FIXED, fd, 0) == MAP_FAILED) {
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

int evs_map_attach(struct evs_map *m, int ctl_fd, int cons_fd, int data_fd, uint64_t ring_bytes,
		   uint64_t page_size, bool writable)
{
	uint8_t *ctl;
	int err;

	memset(m, 0, sizeof(*m));
	/* the two pages side by side, each from its own file */
	ctl = mmap(NULL, EVS_CTL_BYTES, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (ctl == MAP_FAILED)
		return -errno;
	if (mmap(ctl, EVS_CTL_PAGE, writable ? PROT_READ | PROT_WRITE : PROT_READ,
		 MAP_SHARED | MAP_FIXED | MAP_POPULATE, ctl_fd, 0) == MAP_FAILED ||
	    mmap(ctl + EVS_CTL_PAGE, EVS_CTL_PAGE, PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_FIXED | MAP_POPULATE, cons_fd, 0) == MAP_FAILED) {
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

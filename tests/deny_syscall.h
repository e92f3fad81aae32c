/* SPDX-License-Identifier: MIT */
/*
 * One system call refused, for tests: after evs_deny_syscall(nr, err), nr
 * fails with err in the calling thread and in the threads it starts from
 * then on (a seccomp filter; threads started before keep theirs; for good:
 * call it in a process of its own). Used for the machine out of memory for
 * a ring's growth (fallocate, ENOMEM: the library commits a ring's pages
 * with it as it first fills) and for a kernel without copy_file_range
 * (ENOSYS: the dump writer copies by hand). 0, or -1 with errno.
 */
#ifndef EVS_TEST_DENY_SYSCALL_H
#define EVS_TEST_DENY_SYSCALL_H

#include <errno.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <linux/filter.h>
#include <linux/seccomp.h>

static inline int evs_deny_syscall(unsigned int nr, unsigned int err)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, nr, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (err & SECCOMP_RET_DATA)),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof(f) / sizeof(f[0]), .filter = f };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog))
		return -1;
	return 0;
}

#endif

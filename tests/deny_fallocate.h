/* SPDX-License-Identifier: MIT */
/*
 * The machine out of memory for a ring's growth, for tests: the library
 * commits a ring's pages with fallocate() as it first fills. After this,
 * fallocate() fails with ENOMEM in the calling thread and in the threads
 * it starts from then on (a seccomp filter; threads started before keep
 * theirs). 0, or -1 with errno.
 */
#ifndef EVS_TEST_DENY_FALLOCATE_H
#define EVS_TEST_DENY_FALLOCATE_H

#include <errno.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <linux/filter.h>
#include <linux/seccomp.h>

static inline int evs_deny_fallocate(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_fallocate, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOMEM),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof(f) / sizeof(f[0]), .filter = f };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog))
		return -1;
	return 0;
}

#endif

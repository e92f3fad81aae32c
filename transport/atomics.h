/* SPDX-License-Identifier: MIT */
/*
 * The only place evstream spells memory ordering. Everything shared between
 * producer and consumer goes through these wrappers around C11
 * atomic_*_explicit(); call sites say which access each one pairs with.
 */
#ifndef EVS_ATOMICS_H
#define EVS_ATOMICS_H

#include <stdatomic.h>
#include <stdint.h>

#define smp_load_acquire(p)      atomic_load_explicit((p), memory_order_acquire)
#define smp_store_release(p, v)  atomic_store_explicit((p), (v), memory_order_release)
#define READ_ONCE(p)             atomic_load_explicit((p), memory_order_relaxed)
#define WRITE_ONCE(p, v)         atomic_store_explicit((p), (v), memory_order_relaxed)
#define xchg(p, v)               atomic_exchange_explicit((p), (v), memory_order_seq_cst)
#define cmpxchg(p, oldp, v)      atomic_compare_exchange_strong_explicit((p), (oldp), (v), \
					memory_order_seq_cst, memory_order_seq_cst)
/* A relaxed read of a word that is not _Atomic because others define it:
 * the kernel's probe semaphores, a ring header the other process wrote. */
#define READ_ONCE_PLAIN(p)       __atomic_load_n((p), __ATOMIC_RELAXED)
/* Compiler barrier: keeps program order, emits nothing. */
#define barrier()                atomic_signal_fence(memory_order_seq_cst)
/* Full barrier: orders an earlier store before a later load (Dekker). */
#define smp_mb()                 atomic_thread_fence(memory_order_seq_cst)
/* A seqlock's pair, as the kernel's: earlier stores before later stores
 * (the writer's version, then its data), earlier loads before later loads
 * (the reader's data, then the version again). C11 promises it toward
 * atomics only; the data here is ring memory, for which the compilers'
 * fences (x86: none needed but the compiler's; arm64: dmb) give it. */
#define smp_wmb()                atomic_thread_fence(memory_order_release)
#define smp_rmb()                atomic_thread_fence(memory_order_acquire)

/* x86: orders earlier non-temporal (streaming) stores before later stores,
 * the release store that publishes them included (ordinary stores need
 * none); only ringcopy.c's x86 path streams. */
#if defined(__x86_64__)
#define nt_store_fence()         __builtin_ia32_sfence()
#endif

#define likely(x)   __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

#endif

/* SPDX-License-Identifier: MIT */
/*
 * The wire format of the socket handshake between a consumer in another
 * process and a producer's server (client.c, server.c); see "Cross-process
 * handshake" in docs/architecture.md. Versioned with the shared layout
 * (layout.h): a hello carries EVS_ABI_MAJOR, and a welcome hands over the
 * stream's memory files.
 *
 *  consumer                         producer's server thread
 *  hello   {magic, abi, core, flags} ──►
 *          ◄── welcome {magic, status, sizes, core, flags}
 *              + SCM_RIGHTS [control memfd (read-only), consumer memfd,
 *                            data memfd (read-only), eventfd]
 */
#ifndef EVS_HANDSHAKE_H
#define EVS_HANDSHAKE_H

#include <stdint.h>

#define EVS_HELLO_MAGIC   0x6f6c6c6548535645ULL /* "EVSHello" */
#define EVS_WELCOME_MAGIC 0x656d6f636c655745ULL /* "EWelcome" */

struct evs_hello {
	uint64_t magic;
	uint16_t abi_major;
	uint16_t abi_minor;
	uint32_t core;
	uint32_t flags;          /* EVS_HELLO_F_* */
	uint32_t pad;
};
#define EVS_HELLO_F_MEMBARRIER   0x1u   /* the consumer can call membarrier() */

struct evs_welcome {
	uint64_t magic;
	int32_t status;          /* 0 or -errno */
	uint32_t ncores;
	uint64_t ring_bytes;
	uint64_t max_events;
	uint64_t page_size;
	uint32_t core;
	uint32_t flags;          /* EVS_SHM_F_* | EVS_WELCOME_F_* */
};
#define EVS_WELCOME_F_MEMBARRIER 0x100u /* ... and must, when it arms */

/* Descriptors a welcome carries, in this order. */
enum {
	EVS_WELCOME_CTL_FD,
	EVS_WELCOME_CONS_FD,
	EVS_WELCOME_DATA_FD,
	EVS_WELCOME_EVENT_FD,
	EVS_WELCOME_NFDS
};

#endif

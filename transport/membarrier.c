/* SPDX-License-Identifier: MIT */
/*
 * membarrier(2) for the wakeup protocol's store/load pairing.
 *
 * The producer publishes prod_pos and then loads the consumer's wait word;
 * the consumer stores ARMED and then loads prod_pos. Each side needs a full
 * barrier between its store and its load. The producer commits millions of
 * times a second and the consumer arms once per sleep, so the barrier is
 * made asymmetric: a producer process registered for
 * MEMBARRIER_CMD_GLOBAL_EXPEDITED skips its fence, and a consumer that arms
 * calls membarrier(), which runs a full barrier on every running thread of
 * the producer before it returns. Either the producer's prod_pos store is
 * then visible to the consumer, or the producer's later load sees ARMED.
 *
 * EVSTREAM_MEMBARRIER=off keeps the fence on both sides (and is how the
 * tests exercise both ways).
 */
#include <errno.h>
#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "config.h"
#include "membarrier.h"

static int sys_membarrier(int cmd)
{
	return (int)syscall(__NR_membarrier, cmd, 0, 0);
}

/* EVSTREAM_MEMBARRIER=off; producers and consumers refuse a bad value
 * before they get here (evs_env_membarrier()). */
static bool disabled(void)
{
	bool use;

	return evs_env_membarrier(&use) == 0 && !use;
}

bool evs_membarrier_usable(void)
{
	int q;

	if (disabled())
		return false;
	q = sys_membarrier(MEMBARRIER_CMD_QUERY);
	return q >= 0 && (q & MEMBARRIER_CMD_GLOBAL_EXPEDITED);
}

bool evs_membarrier_register(void)
{
	int q;

	if (disabled())
		return false;
	q = sys_membarrier(MEMBARRIER_CMD_QUERY);
	if (q < 0 || !(q & MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED) ||
	    !(q & MEMBARRIER_CMD_GLOBAL_EXPEDITED))
		return false;
	return sys_membarrier(MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED) == 0;
}

int evs_membarrier(void)
{
	return sys_membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED) < 0 ? -errno : 0;
}

/* SPDX-License-Identifier: MIT */
/* Error strings: evs_strerror(), evs_errmsg(), evs_drop_cause_name(). */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "evstream/evstream.h"
#include "errors.h"

static __thread char errmsg[512];

int evs_fail(int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	/* clang-analyzer 14 misses the va_start above */
	vsnprintf(errmsg, sizeof(errmsg), fmt, ap); /* NOLINT(clang-analyzer-valist.Uninitialized) */
	va_end(ap);
	return -err;
}

void evs_clear_errmsg(void)
{
	errmsg[0] = '\0';
}

EVS_API const char *evs_errmsg(void)
{
	return errmsg;
}

EVS_API const char *evs_strerror(int err)
{
	const char *s;

	if (err == INT_MIN)
		return "unknown error"; /* -INT_MIN overflows */
	if (err < 0)
		err = -err;
	switch (err) {
	case 0: return "success";
	case ENOBUFS: return "dropped: ring full";
	case EMSGSIZE: return "dropped: event larger than the ring";
	case ENOTCONN: return "dropped: no consumer connected";
	case EBADMSG: return "stream corrupt: shared memory failed validation";
	case EPIPE: return "producer gone and stream drained";
	case EBUSY: return "stream already has a consumer (or a reservation is open)";
	}
	/* strerrordesc_np is thread-safe and never allocates */
	s = strerrordesc_np(err);
	return s ? s : "unknown error";
}

EVS_API const char *evs_drop_cause_name(int cause)
{
	switch (cause) {
	case EVS_DROP_RING_FULL: return "ring_full";
	case EVS_DROP_TOO_BIG: return "too_big";
	case EVS_DROP_NO_CONSUMER: return "no_consumer";
	case EVS_DROP_NO_MEMORY: return "no_memory";
	}
	return "unknown";
}

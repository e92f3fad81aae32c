/* SPDX-License-Identifier: MIT */
#ifndef EVS_TOOLS_DUMP_H
#define EVS_TOOLS_DUMP_H

#include <stdbool.h>

/* Turn the raw files (core<N>.evsraw) in rawdir into .npy files and an
 * index in outdir. 0, or -errno after saying what failed. */
int dump_convert(const char *rawdir, const char *outdir, bool summary);

#endif

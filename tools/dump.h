/* SPDX-License-Identifier: MIT */
#ifndef EVS_TOOLS_DUMP_H
#define EVS_TOOLS_DUMP_H

#include <stdbool.h>

/* Turn the raw files (core<N>.evsraw) in rawdir into .npy files and an
 * index in outdir. The exit status, after saying what failed: 0; 1 a file
 * could not be converted or written; 2 rawdir cannot be read, or outdir
 * was refused or cannot be written (dump_writer_open). */
int dump_convert(const char *rawdir, const char *outdir, bool summary, bool progress);

#endif

/* SPDX-License-Identifier: MIT */
/* Device-print look: the event's prefix, then a short NumPy-like preview. */
#ifndef EVS_TOOLS_PREVIEW_H
#define EVS_TOOLS_PREVIEW_H

#include <stdio.h>

#include "evstream/tensor.h"

/* Print ev as a device print: prefix, then the tensor, then a newline. */
void preview_print(FILE *f, const struct evs_tensor_info *ev);

#endif

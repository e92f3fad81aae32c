/* SPDX-License-Identifier: MIT */
/* Device-print look: the event's prefix, then a short NumPy-like preview. */
#ifndef EVS_TOOLS_PREVIEW_H
#define EVS_TOOLS_PREVIEW_H

#include <stdio.h>

#include "tensor_event.h"

/* Tensors with at most this many elements are printed in full. */
#define PREVIEW_FULL_MAX 64

/* Print ev as a device print: prefix, then the tensor, then a newline. */
void preview_print(FILE *f, const struct tensor_event *ev);

/* One element as NumPy prints it ("1.5", "-2.", "True", "7"). */
int preview_element(char *buf, size_t len, const char *dtype, uint32_t elem_size, const void *p);

#endif

/* SPDX-License-Identifier: MIT */
/* The thread's failure sentence behind evs_errmsg() (errors.c). */
#ifndef EVS_ERRORS_H
#define EVS_ERRORS_H

/* Keep a sentence for evs_errmsg(); returns -err for chaining. */
int evs_fail(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void evs_clear_errmsg(void);

#endif

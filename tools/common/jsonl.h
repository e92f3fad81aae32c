/* SPDX-License-Identifier: MIT */
/* The little JSON the index needs: escaping strings, and reading back the
 * flat one-line objects evs-dump writes (no nesting but the shape array). */
#ifndef EVS_TOOLS_JSONL_H
#define EVS_TOOLS_JSONL_H

#include <stdint.h>
#include <stdio.h>

/* Writes s as a JSON string, quotes included. */
void json_put_str(FILE *f, const char *s);

/* The value of "key" in a one-line object: 0, or -ENOENT if absent, -EINVAL
 * if it has the wrong type. Strings come back still escaped. */
int json_get_u64(const char *line, const char *key, uint64_t *v);
int json_get_double(const char *line, const char *key, double *v);
int json_get_str(const char *line, const char *key, char *buf, size_t len);
int json_get_u64_array(const char *line, const char *key, uint64_t *v, uint32_t max, uint32_t *n);
/* 1 if "key" is null, 0 if it is something else, -ENOENT if absent. */
int json_is_null(const char *line, const char *key);

/* A temporary file of the directory dirfd, new: created with O_EXCL and
 * O_NOFOLLOW, so that nothing already there is written to or followed; a
 * name already taken (a temporary a killed run left, or a link someone
 * planted) is removed first, once. The descriptor, or -1 and errno. */
int create_tmp_at(int dirfd, const char *name);

/* A file of the directory dirfd, whole or not at all: fill(f, ctx) writes
 * it under a temporary name, which is synced and then renamed to name.
 * 0, or -errno (and no file, the temporary removed). */
int json_file_whole(int dirfd, const char *name, void (*fill)(FILE *f, void *ctx), void *ctx);

#endif

/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "jsonl.h"

/* Length of the valid UTF-8 sequence at s, or 0. */
static int utf8_len(const unsigned char *s)
{
	/* 0xf5..0xff start no sequence: they are not 3-byte leads */
	int n = s[0] >= 0xf5 ? 0 : s[0] >= 0xf0 ? 4 : s[0] >= 0xe0 ? 3 : s[0] >= 0xc2 ? 2 : 0;

	for (int i = 1; i < n; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	/* no overlong forms, surrogates or code points past U+10FFFF */
	if ((s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] >= 0xa0) ||
	    (s[0] == 0xf0 && s[1] < 0x90) || (s[0] == 0xf4 && s[1] >= 0x90))
		return 0;
	return n;
}

void json_put_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch >= 0x80) {
			/* the producer's text is untrusted: keep the index valid
			 * JSON (UTF-8), showing stray bytes as code points U+0080..U+00FF */
			int n = utf8_len((const unsigned char *)s);

			if (n) {
				fwrite(s, 1, (size_t)n, f);
				s += n - 1;
			} else {
				fprintf(f, "\\u%04x", ch);
			}
			continue;
		}

		switch (ch) {
		case '"':  fputs("\\\"", f); break;
		case '\\': fputs("\\\\", f); break;
		case '\n': fputs("\\n", f); break;
		case '\r': fputs("\\r", f); break;
		case '\t': fputs("\\t", f); break;
		default:
			if (ch < 0x20 || ch == 0x7f)
				fprintf(f, "\\u%04x", ch);
			else
				fputc(ch, f);
		}
	}
	fputc('"', f);
}

/* An escaped quote inside a string is \" so "key": cannot match in one. */
static const char *find_value(const char *line, const char *key)
{
	char pat[64];
	const char *p;

	snprintf(pat, sizeof(pat), "\"%s\":", key);
	p = strstr(line, pat);
	return p ? p + strlen(pat) : NULL;
}

int json_get_u64(const char *line, const char *key, uint64_t *v)
{
	const char *p = find_value(line, key);
	char *end;

	if (!p)
		return -ENOENT;
	if (*p < '0' || *p > '9')
		return -EINVAL;
	errno = 0;
	*v = strtoull(p, &end, 10);
	return errno ? -EINVAL : 0;
}

int json_get_double(const char *line, const char *key, double *v)
{
	const char *p = find_value(line, key);
	char *end;

	if (!p)
		return -ENOENT;
	if (*p != '-' && (*p < '0' || *p > '9'))
		return -EINVAL;
	errno = 0;
	*v = strtod(p, &end);
	return errno || end == p || isnan(*v) ? -EINVAL : 0;
}

int json_get_str(const char *line, const char *key, char *buf, size_t len)
{
	const char *p = find_value(line, key), *q;

	if (!p)
		return -ENOENT;
	if (*p != '"')
		return -EINVAL;
	for (q = ++p; *q && *q != '"'; q++)
		if (*q == '\\' && q[1])
			q++;
	if (*q != '"' || (size_t)(q - p) >= len)
		return -EINVAL;
	memcpy(buf, p, (size_t)(q - p));
	buf[q - p] = '\0';
	return 0;
}

int json_get_u64_array(const char *line, const char *key, uint64_t *v, uint32_t max, uint32_t *n)
{
	const char *p = find_value(line, key);
	char *end;

	if (!p)
		return -ENOENT;
	if (*p++ != '[')
		return -EINVAL;
	*n = 0;
	while (*p != ']') {
		if (*n == max || *p < '0' || *p > '9')
			return -EINVAL;
		v[(*n)++] = strtoull(p, &end, 10);
		p = end;
		if (*p == ',')
			p++;
		else if (*p != ']')
			return -EINVAL;
	}
	return 0;
}

int json_is_null(const char *line, const char *key)
{
	const char *p = find_value(line, key);

	if (!p)
		return -ENOENT;
	return !strncmp(p, "null", 4);
}

int create_tmp_at(int dirfd, const char *name)
{
	int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);

	/* one left by a run that was killed, or planted: the name goes (a link
	 * is removed, not followed), and a new file takes it, once */
	if (fd < 0 && errno == EEXIST && unlinkat(dirfd, name, 0) == 0)
		fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	return fd;
}

int json_file_whole(int dirfd, const char *name, void (*fill)(FILE *f, void *ctx), void *ctx)
{
	char tmp[256];
	int fd, err = 0;
	FILE *f;

	if (snprintf(tmp, sizeof(tmp), ".%s.tmp", name) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	fd = create_tmp_at(dirfd, tmp);
	f = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (!f) {
		err = errno;
		if (fd >= 0)
			close(fd);
	} else {
		fill(f, ctx);
		errno = 0;
		if (fflush(f) || ferror(f))
			err = errno ? errno : EIO;
		/* the data reaches the disk before the name does */
		if (!err && fsync(fileno(f)))
			err = errno;
		if (fclose(f) && !err)
			err = errno;
		if (!err && renameat(dirfd, tmp, dirfd, name))
			err = errno;
	}
	if (err)
		unlinkat(dirfd, tmp, 0);
	return -err;
}

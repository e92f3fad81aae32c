/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "jsonl.h"

void json_put_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;

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
				fputc(ch, f); /* UTF-8 passes through */
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

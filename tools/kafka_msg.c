/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kafka_msg.h"
#include "evstream/tensor.h"

bool kmsg_name_ok(const char *s, size_t n)
{
	if (n == 0 || n > KMSG_NAME_MAX || s[0] == '.')
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '-' || c == '_' || c == '.'))
			return false;
	}
	return true;
}

int kmsg_key(char *buf, const char *host, const char *producer, unsigned int core)
{
	if (!kmsg_name_ok(host, strlen(host)) || !kmsg_name_ok(producer, strlen(producer)))
		return -EINVAL;
	return snprintf(buf, KMSG_KEY_MAX, "%s/%s/%u", host, producer, core);
}

int kmsg_parse_key(const void *key, size_t len, struct kmsg_source *src)
{
	const char *k = key, *end, *a, *b;
	uint64_t core = 0;

	/* untrusted: every part is checked before it names a directory;
	 * a record without a key has none (NULL: no end to compute) */
	if (!k || len == 0 || len >= KMSG_KEY_MAX)
		return -EBADMSG;
	end = k + len;
	a = memchr(k, '/', len);
	if (!a)
		return -EBADMSG;
	b = memchr(a + 1, '/', (size_t)(end - a - 1));
	if (!b || !kmsg_name_ok(k, (size_t)(a - k)) || !kmsg_name_ok(a + 1, (size_t)(b - a - 1)))
		return -EBADMSG;
	if (b + 1 == end || end - b - 1 > 4)
		return -EBADMSG;
	for (const char *p = b + 1; p < end; p++) {
		if (*p < '0' || *p > '9')
			return -EBADMSG;
		core = core * 10 + (uint64_t)(*p - '0');
	}
	if (core >= 4096)
		return -EBADMSG;
	memcpy(src->host, k, (size_t)(a - k));
	src->host[a - k] = '\0';
	memcpy(src->producer, a + 1, (size_t)(b - a - 1));
	src->producer[b - a - 1] = '\0';
	src->core = (unsigned int)core;
	return 0;
}

/* Decimal digits of v and a NUL into buf (at least 21 bytes): once per
 * record, where snprintf() would cost as much as the rest of the headers. */
static void put_u64(char *buf, uint64_t v)
{
	char tmp[20];
	int n = 0;

	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	while (n)
		*buf++ = tmp[--n];
	*buf = '\0';
}

void kmsg_hdrs_fill(struct kmsg_hdrs *h, const struct evs_event_header *eh, const void *payload)
{
	struct evs_tensor_info ev;

	put_u64(h->seq, eh->seq);
	put_u64(h->type, eh->type);
	h->chunk[0] = '\0';
	h->tensor = eh->type == EVS_EVENT_TENSOR_READ &&
		    !evs_tensor_parse(payload, eh->data_size, &ev) && !ev.is_print;
	if (!h->tensor)
		return;
	memcpy(h->dtype, ev.dtype, sizeof(h->dtype));
	{
		char *p = h->shape, *end = h->shape + sizeof(h->shape);

		*p++ = '[';
		for (uint32_t i = 0; i < ev.ndim; i++)
			p += snprintf(p, (size_t)(end - p), i ? ",%" PRIu64 : "%" PRIu64, ev.shape[i]);
		snprintf(p, (size_t)(end - p), "]");
	}
}

/* A decimal header value, whole: 0, or -EBADMSG. */
static int header_u64(const rd_kafka_headers_t *hdrs, const char *name, uint64_t *v)
{
	const void *val;
	size_t size;
	const char *s, *end;
	uint64_t n = 0;

	if (rd_kafka_header_get_last(hdrs, name, &val, &size) || !val || size == 0 || size > 40)
		return -EBADMSG;
	s = val;
	end = s + size;
	if (*s < '0' || *s > '9')
		return -EBADMSG;
	for (; s < end && *s >= '0' && *s <= '9'; s++) {
		if (n > (UINT64_MAX - 9) / 10)
			return -EBADMSG;
		n = n * 10 + (uint64_t)(*s - '0');
	}
	if (s != end)
		return -EBADMSG;
	*v = n;
	return 0;
}

int kmsg_meta_parse(const rd_kafka_headers_t *hdrs, struct kmsg_meta *meta)
{
	const void *val;
	size_t size;

	if (!hdrs || header_u64(hdrs, KMSG_SEQ, &meta->seq))
		return -EBADMSG;
	meta->chunk = 0;
	meta->nchunks = 1;
	if (rd_kafka_header_get_last(hdrs, KMSG_CHUNK, &val, &size) == RD_KAFKA_RESP_ERR_NO_ERROR) {
		/* "INDEX/COUNT" */
		char buf[48];
		uint64_t i, n;
		char *slash, *end;

		if (!val || size == 0 || size >= sizeof(buf))
			return -EBADMSG;
		memcpy(buf, val, size);
		buf[size] = '\0';
		slash = strchr(buf, '/');
		if (!slash || slash == buf || buf[0] < '0' || buf[0] > '9' || slash[1] < '0' || slash[1] > '9')
			return -EBADMSG;
		errno = 0;
		i = strtoull(buf, &end, 10);
		if (end != slash || errno)
			return -EBADMSG;
		n = strtoull(slash + 1, &end, 10);
		if (*end || errno || n == 0 || n > UINT32_MAX || i >= n)
			return -EBADMSG;
		meta->chunk = (uint32_t)i;
		meta->nchunks = (uint32_t)n;
	}
	return 0;
}

size_t kmsg_chunk_size(size_t message_max, size_t keylen)
{
	if (message_max < KMSG_MIN_MESSAGE_MAX)
		message_max = KMSG_MIN_MESSAGE_MAX;
	return message_max - KMSG_CHUNK_OVERHEAD - keylen;
}

int kmsg_conf_set(rd_kafka_conf_t *conf, const char *key, const char *val)
{
	char err[256];

	if (rd_kafka_conf_set(conf, key, val, err, sizeof(err)) != RD_KAFKA_CONF_OK) {
		fprintf(stderr, "%s: librdkafka refused %s=%s: %s\n", program_invocation_short_name,
			key, val, err);
		return -EINVAL;
	}
	return 0;
}

int kmsg_conf_apply(rd_kafka_conf_t *conf, char *const *props, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++) {
		char key[256], err[512];
		const char *eq = strchr(props[i], '=');

		if (!eq || eq == props[i] || (size_t)(eq - props[i]) >= sizeof(key)) {
			fprintf(stderr, "%s: -X '%s': use -X key=value with a librdkafka property "
				"(see CONFIGURATION.md of librdkafka)\n", program_invocation_short_name, props[i]);
			return -EINVAL;
		}
		memcpy(key, props[i], (size_t)(eq - props[i]));
		key[eq - props[i]] = '\0';
		if (rd_kafka_conf_set(conf, key, eq + 1, err, sizeof(err)) != RD_KAFKA_CONF_OK) {
			fprintf(stderr, "%s: -X '%s': %s\n", program_invocation_short_name, props[i], err);
			return -EINVAL;
		}
	}
	return 0;
}

void kmsg_log_cb(const rd_kafka_t *rk, int level, const char *fac, const char *buf)
{
	(void)rk;
	/* FAIL lines repeat what the error callback says, at every retry */
	if (level > 4 || !strcmp(fac, "FAIL"))
		return;
	fprintf(stderr, "%s: kafka: %s\n", program_invocation_short_name, buf);
}

void kmsg_error_note(rd_kafka_resp_err_t err, const char *reason)
{
	static struct timespec last;
	static unsigned int held;
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	if (last.tv_sec && now.tv_sec - last.tv_sec < 1 && err != RD_KAFKA_RESP_ERR__FATAL) {
		held++;
		return;
	}
	last = now;
	fprintf(stderr, "%s: kafka: %s (%s)", program_invocation_short_name, reason, rd_kafka_err2name(err));
	if (held)
		fprintf(stderr, "; %u more like it in the last second", held);
	fputc('\n', stderr);
	held = 0;
}

/* SPDX-License-Identifier: MIT */
/* Pinning, thread pairs, histograms and the report writer of evs-bench. */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "bench.h"
#include "jsonl.h"

const size_t bench_payloads[NPAYLOADS] = { 0, 64, 1024, 64 << 10, 1 << 20, 4 << 20 };
struct bench_opts bopt;

int bench_pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set) < 0)
		return -errno;
	return 0;
}

/*
 * A shared machine: a high weight keeps the other builds from taking the
 * CPU for milliseconds, without starving them as a real-time policy
 * would. With autogroups the thread nice only counts inside our session's
 * group, so the group's nice is raised too. Threads created afterwards
 * inherit the nice value. Root only; said when refused.
 */
void bench_raise_priority(void)
{
	FILE *f = fopen("/proc/self/autogroup", "w");
	bool ok = f && fprintf(f, "-20") >= 0;

	if (f && fclose(f) != 0)
		ok = false;
	if (!ok)
		warn("cannot raise the autogroup priority (%s): other load on the CPUs will show more",
		     strerror(errno));
	if (setpriority(PRIO_PROCESS, 0, -20) < 0)
		warn("cannot set nice -20: %s", strerror(errno));
}

void *bench_area(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED) {
		warn("mmap %zu bytes: %s", len, strerror(errno));
		return NULL;
	}
	/* before the first touch: no huge page may be faulted in */
	if (madvise(p, len, MADV_NOHUGEPAGE))
		warn("madvise(MADV_NOHUGEPAGE): %s (the limits may get huge pages)", strerror(errno));
	memset(p, 0, len);
	return p;
}

void bench_area_free(void *p, size_t len)
{
	if (p)
		munmap(p, len);
}

struct pinned {
	void *(*fn)(void *);
	void *arg;
	int cpu;
};

static void *pinned_main(void *arg)
{
	struct pinned *p = arg;
	int err = bench_pin(p->cpu);

	if (err)
		warn("cannot pin a thread to CPU %d: %s (numbers are not comparable)",
		     p->cpu, strerror(-err));
	return p->fn(p->arg);
}

void bench_pair(void *(*a)(void *), void *arg_a, void *(*b)(void *), void *arg_b)
{
	struct pinned pa = { a, arg_a, BENCH_CPU_PRODUCER }, pb = { b, arg_b, BENCH_CPU_CONSUMER };
	pthread_t ta, tb;

	if (pthread_create(&tb, NULL, pinned_main, &pb) || pthread_create(&ta, NULL, pinned_main, &pa)) {
		warn("pthread_create failed");
		exit(1);
	}
	pthread_join(ta, NULL);
	pthread_join(tb, NULL);
}

void bench_prime(struct evs_producer *p, struct evs_consumer *c, const void *src, size_t size)
{
	uint64_t filled = 0;
	struct evs_record rec;

	while (filled < 2 * bopt.ring_bytes) {
		uint64_t n = 0;

		while (evs_producer__emit(p, 0, 1, src, size) == 0)
			n++;
		filled += n * (64 + ((size + 7) & ~(size_t)7));
		while (evs_consumer__peek(c, &rec) == 0)
			evs_consumer__release(c);
		if (!n)
			break;
	}
}

void bench_spin_until(uint64_t t)
{
	while (cli_now_ns() < t)
		cpu_relax();
}

/* ------------------------------------------------------------ histogram */

void hist_init(struct hist *h)
{
	memset(h, 0, sizeof(*h));
	h->min = UINT64_MAX;
}

static unsigned int hist_index(uint64_t v)
{
	unsigned int msb, shift;

	if (v < (1u << HIST_SUB))
		return (unsigned int)v;
	msb = 63 - (unsigned int)__builtin_clzll(v);
	shift = msb - HIST_SUB;
	return ((shift + 1) << HIST_SUB) + (unsigned int)((v >> shift) - (1u << HIST_SUB));
}

static double hist_mid(unsigned int idx)
{
	unsigned int shift, sub;

	if (idx < (1u << HIST_SUB))
		return idx;
	shift = (idx >> HIST_SUB) - 1;
	sub = idx & ((1u << HIST_SUB) - 1);
	return ldexp((double)((1u << HIST_SUB) + sub), (int)shift) + (ldexp(1.0, (int)shift) - 1) / 2;
}

void hist_add(struct hist *h, uint64_t v)
{
	h->b[hist_index(v)]++;
	h->count++;
	h->sum += (double)v;
	if (v < h->min)
		h->min = v;
	if (v > h->max)
		h->max = v;
}

/* The value below which a fraction q of the samples lie (bucket middle). */
static double hist_pct(const struct hist *h, double q)
{
	uint64_t want, seen = 0;

	if (!h->count)
		return NAN;
	want = (uint64_t)ceil(q * (double)h->count);
	if (want < 1)
		want = 1;
	for (unsigned int i = 0; i < HIST_BUCKETS; i++) {
		seen += h->b[i];
		if (seen >= want) {
			double m = hist_mid(i);

			/* the bucket cannot hold values outside what was seen */
			return m < (double)h->min ? (double)h->min : m > (double)h->max ? (double)h->max : m;
		}
	}
	return (double)h->max;
}

void hist_merge(struct hist *into, const struct hist *from)
{
	for (unsigned int i = 0; i < HIST_BUCKETS; i++)
		into->b[i] += from->b[i];
	into->count += from->count;
	into->sum += from->sum;
	if (from->min < into->min)
		into->min = from->min;
	if (from->max > into->max)
		into->max = from->max;
}

void lat_from_hist(struct lat *l, const struct hist *h)
{
	l->n = h->count;
	l->p50 = hist_pct(h, 0.50);
	l->p90 = hist_pct(h, 0.90);
	l->p99 = hist_pct(h, 0.99);
	l->p999 = hist_pct(h, 0.999);
	l->max = h->count ? (double)h->max : NAN;
	l->mean = h->count ? h->sum / (double)h->count : NAN;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

double median(const double *v, int n)
{
	double *w, m;

	if (n <= 0)
		return NAN;
	w = malloc(sizeof(*w) * (size_t)n);
	if (!w)
		return NAN;
	memcpy(w, v, sizeof(*w) * (size_t)n);
	qsort(w, (size_t)n, sizeof(*w), cmp_double);
	m = n % 2 ? w[n / 2] : (w[n / 2 - 1] + w[n / 2]) / 2;
	free(w);
	return m;
}

void min_max(const double *v, int n, double *lo, double *hi)
{
	*lo = *hi = NAN;
	for (int i = 0; i < n; i++) {
		if (isnan(v[i]))
			continue;
		if (isnan(*lo) || v[i] < *lo)
			*lo = v[i];
		if (isnan(*hi) || v[i] > *hi)
			*hi = v[i];
	}
}

double ratio(double a, double b)
{
	if (!(b > 0) || isnan(a))
		return NAN;
	return a / b;
}

/* ------------------------------------------------------------ report */

/* The JSON document, built in memory and written at the end (only with
 * --json, which the human lines then leave to stderr). */
static FILE *js;
static char *js_buf;
static size_t js_len;
static bool js_first = true;

static FILE *js_file(void)
{
	if (!js) {
		js = open_memstream(&js_buf, &js_len);
		if (!js)
			abort();
	}
	return js;
}

static void js_put(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void js_put(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfprintf(js_file(), fmt, ap);
	va_end(ap);
}

static void js_sep(void)
{
	if (!js_first)
		js_put(",");
	js_put("\n");
	js_first = false;
}

static void js_key(const char *k)
{
	js_sep();
	js_put("\"%s\": ", k);
}

void rep_section(const char *name)
{
	js_key(name);
	js_put("[");
	js_first = true;
}

void rep_section_end(void)
{
	js_put("]");
	js_first = false;
}

void rep_obj_begin(void)
{
	js_sep();
	js_put("{");
	js_first = true;
}

void rep_obj_end(void)
{
	js_put("}");
	js_first = false;
}

void rep_str(const char *k, const char *v)
{
	js_key(k);
	json_put_str(js_file(), v);
}

void rep_num(const char *k, double v)
{
	js_key(k);
	if (isnan(v) || isinf(v))
		js_put("null");
	else
		js_put("%.6g", v);
}

void rep_int(const char *k, uint64_t v)
{
	js_key(k);
	js_put("%llu", (unsigned long long)v);
}

void rep_raw(const char *k, const char *json)
{
	js_key(k);
	js_put("%s", json);
}

void rep_lat(const char *k, const struct lat *l)
{
	js_key(k);
	js_put("{");
	js_first = true;
	rep_int("samples", l->n);
	rep_num("p50_ns", l->p50);
	rep_num("p90_ns", l->p90);
	rep_num("p99_ns", l->p99);
	rep_num("p999_ns", l->p999);
	rep_num("max_ns", l->max);
	rep_num("mean_ns", l->mean);
	rep_obj_end();
}

/* --plot-dir, before anything is measured: a directory that cannot take
 * the files is refused then (exit 2), not found out after the run. */
static void plot_dir_check(void)
{
	struct stat st;
	const char *why = NULL;

	if (!bopt.plot_dir)
		return;
	if (stat(bopt.plot_dir, &st) < 0)
		why = strerror(errno);
	else if (!S_ISDIR(st.st_mode))
		why = "not a directory";
	else if (access(bopt.plot_dir, W_OK | X_OK) < 0)
		why = strerror(errno);
	if (why) {
		fprintf(stderr, "%s: --plot-dir '%s': cannot write files in it: %s\n",
			program_invocation_short_name, bopt.plot_dir, why);
		exit(2);
	}
}

void rep_begin(void)
{
	plot_dir_check();
	js_put("{");
	js_first = true;
}

void rep_finish(void)
{
	js_put("\n}\n");
	if (fclose(js) != 0)
		abort();
	if (bopt.json)
		fwrite(js_buf, 1, js_len, stdout);
	free(js_buf);
}

void say(const char *fmt, ...)
{
	va_list ap;
	FILE *f = bopt.json ? stderr : stdout;

	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	fflush(f);
}

static bool progress_shown;

void progress(const char *fmt, ...)
{
	va_list ap;

	if (!isatty(STDERR_FILENO))
		return;
	fprintf(stderr, "\r\033[K");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fflush(stderr);
	progress_shown = true;
}

void progress_done(void)
{
	if (progress_shown)
		fprintf(stderr, "\r\033[K");
	progress_shown = false;
}

void warn(const char *fmt, ...)
{
	progress_done();
	va_list ap;

	fprintf(stderr, "%s: WARNING: ", program_invocation_short_name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
}

FILE *plot_open(const char *file, const char *header)
{
	char path[512];
	FILE *f;

	if (!bopt.plot_dir)
		return NULL;
	snprintf(path, sizeof(path), "%s/%s", bopt.plot_dir, file);
	f = fopen(path, "w");
	if (!f) {
		warn("cannot write %s: %s", path, strerror(errno));
		return NULL;
	}
	fprintf(f, "%s\n", header);
	return f;
}

struct tput tput_of(double ev_s, size_t size)
{
	return (struct tput){ .ev_s = ev_s, .gb_s = ev_s * (double)size / 1e9, .ok = ev_s > 0 };
}

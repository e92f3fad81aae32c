/* SPDX-License-Identifier: MIT */
/*
 * How much a stream holds and what it costs: the reference default of 64K
 * tensor-read events is real, a ring sized smaller in bytes says so once,
 * memory is taken as the ring first fills, the whole producer is checked
 * against what the process may use before anything is taken, a ring
 * whose memory cannot be had drops and counts (trying again only now and
 * then, not once per event), and huge pages the kernel
 * refuses after all give way to normal pages.
 */
#include <fcntl.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "deny_syscall.h"
#include "helpers.h"
#include "shm.h"

/* The runtime's smallest tensor-read record: header and fixed payload. */
#define TENSOR_RECORD (64u + EVS_TENSOR_FIXED_BYTES)

static void clear_env(void)
{
	unsetenv("EVSTREAM_RING_BYTES");
	unsetenv("NEURON_RT_DEBUG_STREAM_BUFFER_SIZE");
	unsetenv("EVSTREAM_HUGEPAGES");
}

/* A print is a tensor-read event with the fixed payload alone. */
static int emit_print(struct evs_producer *p)
{
	struct evs_tensor t = { .prefix = "x", .pipe = 1 };

	return evs_producer__emit_tensor(p, 0, &t);
}

/* Fill core 0 with prints until one is dropped; how many were taken. */
static uint64_t fill_with_prints(struct evs_producer *p, int *last)
{
	uint64_t n = 0;

	while ((*last = emit_print(p)) == 0)
		n++;
	return n;
}

/* KiB of shared memory this process has touched (RssShmem). */
static long rss_shmem_kb(void)
{
	return evs_proc_number("/proc/self/status", "RssShmem:");
}

/* A default producer made with NEURON_RT_DEBUG_STREAM_BUFFER_SIZE set to
 * buffer_size (NULL: unset) keeps `events` tensor-read events on core 0,
 * in bytes as well, and drops the next one by the event limit. */
static void assert_stream_holds(const char *buffer_size, uint64_t events)
{
	EVS_OPTS(evs_producer_opts, o, .hugepages = EVS_HUGEPAGES_OFF);
	struct evs_stream_stats st = { .sz = sizeof(st) };
	struct evs_producer *p;
	struct evs_consumer *c;
	int last;

	clear_env();
	if (buffer_size)
		setenv("NEURON_RT_DEBUG_STREAM_BUFFER_SIZE", buffer_size, 1);
	p = evs_producer__new(NULL, 1, &o);
	clear_env();
	ck_assert_msg(p, "%s", evs_errmsg());
	c = evs_consumer__connect(NULL, 0, NULL);
	ck_assert_ptr_nonnull(c);
	ck_assert_int_eq(evs_producer__stats(p, 0, &st), 0);
	ck_assert_uint_eq(st.max_events, events);
	ck_assert_uint_ge(st.ring_bytes, events * TENSOR_RECORD);
	ck_assert_uint_eq(fill_with_prints(p, &last), events);
	ck_assert_int_eq(last, -ENOBUFS);
	evs_consumer__free(c);
	evs_producer__free(p);
}

/* With nothing set, a stream keeps the reference's 64K events of the
 * smallest tensor-read kind, and the 65537th is dropped by the event
 * limit, not by bytes. */
START_TEST(test_memory_default_holds_64k_tensor_reads)
{
	assert_stream_holds(NULL, 65536);
}
END_TEST

/* NEURON_RT_DEBUG_STREAM_BUFFER_SIZE=100000 is what a stream keeps. */
START_TEST(test_memory_buffer_size_from_the_environment_is_real)
{
	assert_stream_holds("100000", 100000);
}
END_TEST

/* Run fn in a child with its stderr in a pipe; returns what it wrote. */
static void stderr_of(void (*fn)(void), char *out, size_t len)
{
	int fds[2], status;
	ssize_t n, got = 0;
	pid_t pid;

	ck_assert_int_eq(pipe(fds), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		dup2(fds[1], 2);
		close(fds[0]);
		fn();
		_exit(0);
	}
	close(fds[1]);
	while (got < (ssize_t)len - 1 && (n = read(fds[0], out + got, len - 1 - got)) > 0)
		got += n;
	out[got] = '\0';
	close(fds[0]);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child: status %d", status);
}

static void two_small_producers(void)
{
	EVS_OPTS(evs_producer_opts, o, .hugepages = EVS_HUGEPAGES_OFF);

	setenv("EVSTREAM_RING_BYTES", "8M", 1);
	for (int i = 0; i < 2; i++) {
		struct evs_producer *p = evs_producer__new(NULL, 1, &o);
		struct evs_stream_stats st = { .sz = sizeof(st) };

		if (!p || evs_producer__stats(p, 0, &st) || st.ring_bytes != 8u << 20 ||
		    st.max_events != 65536)
			_exit(3);
		evs_producer__free(p);
	}
}

/* EVSTREAM_RING_BYTES below what the event limit needs: said once per
 * process, naming both variables; the ring keeps its byte size. */
START_TEST(test_memory_smaller_ring_bytes_are_said_once)
{
	char err[2048];
	const char *first, *again;

	clear_env();
	stderr_of(two_small_producers, err, sizeof(err));
	first = strstr(err, "EVSTREAM_RING_BYTES=8M");
	ck_assert_msg(first, "no note on stderr: '%s'", err);
	ck_assert_msg(strstr(err, "NEURON_RT_DEBUG_STREAM_BUFFER_SIZE"), "'%s'", err);
	ck_assert_msg(strstr(err, "7710 tensor-read events"), "'%s'", err);
	again = strstr(first + 1, "EVSTREAM_RING_BYTES=8M");
	ck_assert_msg(!again, "said twice: '%s'", err);
}
END_TEST

/* Memory is taken as the ring first fills: eight default streams (68 MiB
 * each) cost a chunk each until written, and a full ring all of it. */
START_TEST(test_memory_small_run_does_not_pay_for_the_worst_case)
{
	EVS_OPTS(evs_producer_opts, o, .hugepages = EVS_HUGEPAGES_OFF);
	struct evs_producer *p;
	struct evs_consumer *c;
	long before, made, filled;
	int last;

	clear_env();
	before = rss_shmem_kb();
	p = evs_producer__new(NULL, 8, &o);
	ck_assert_msg(p, "%s", evs_errmsg());
	made = rss_shmem_kb();
	printf("RssShmem: %ld KiB before, %ld KiB with 8 default streams\n", before, made);
	ck_assert_int_le(made - before, 8 * 2048 + 8 * 16 + 1024);
	c = evs_consumer__connect(NULL, 0, NULL);
	ck_assert_ptr_nonnull(c);
	fill_with_prints(p, &last);
	filled = rss_shmem_kb();
	printf("RssShmem: %ld KiB once core 0 is full\n", filled);
	ck_assert_int_ge(filled - made, 65536L * TENSOR_RECORD / 1024 - 2048);
	evs_consumer__free(c);
	evs_producer__free(p);
}
END_TEST

/* RLIMIT_AS too small for the rings (each is mapped twice): an error with
 * a sentence, before anything is mapped. */
static int fork_and_wait(void (*fn)(void))
{
	int status;
	pid_t pid = fork();

	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		fn();
		fflush(stdout);
		_exit(0);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	return status;
}

static void small_address_space(void)
{
	EVS_OPTS(evs_producer_opts, o, .ring_bytes = 64 << 20, .hugepages = EVS_HUGEPAGES_OFF);
	struct rlimit rl;
	long vm_kb = evs_proc_number("/proc/self/status", "VmSize:");
	struct evs_producer *p;

	if (vm_kb <= 0)
		_exit(2);
	/* room for the process and 200 MiB more: one 64 MiB ring (128 MiB
	 * mapped) fits, four do not */
	rl.rlim_cur = rl.rlim_max = (rlim_t)vm_kb * 1024 + (200u << 20);
	if (setrlimit(RLIMIT_AS, &rl))
		_exit(3);
	p = evs_producer__new(NULL, 4, &o);
	/* the size came from an option: the advice names the options too */
	if (p || errno != ENOMEM || !strstr(evs_errmsg(), "RLIMIT_AS") ||
	    !strstr(evs_errmsg(), "4 rings") || !strstr(evs_errmsg(), "the options ring_bytes")) {
		printf("child: producer %p, errno %d: %s\n", (void *)p, errno, evs_errmsg());
		_exit(4);
	}
	printf("refused: %s\n", evs_errmsg());
	p = evs_producer__new(NULL, 1, &o);
	if (!p)
		_exit(5);
	evs_producer__free(p);
}

/* RLIMIT_AS too small for the rings (each is mapped twice): an error with
 * a sentence, before anything is mapped. */
START_TEST(test_memory_rlimit_as_is_checked_as_a_whole)
{
	int status;

	clear_env();
	status = fork_and_wait(small_address_space);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %d", status);
}
END_TEST

/* Write v to a (cgroup) file; false when it cannot be written whole. */
static bool write_str(const char *path, const char *v)
{
	int fd = open(path, O_WRONLY);
	bool ok = fd >= 0 && write(fd, v, strlen(v)) == (ssize_t)strlen(v);

	if (fd >= 0)
		close(fd);
	return ok;
}

/* A memory cgroup of this test: cgroup v1 (memory controller) or v2,
 * under the one this process is in. Its directory, or NULL. */
static const char *make_memory_cgroup(char *dir, size_t len, uint64_t limit)
{
	const char *roots[][2] = {
		{ "/sys/fs/cgroup/memory", "memory.limit_in_bytes" },
		{ "/sys/fs/cgroup", "memory.max" },
	};
	char path[512], v[32];

	snprintf(v, sizeof(v), "%llu", (unsigned long long)limit);
	for (size_t i = 0; i < 2; i++) {
		snprintf(dir, len, "%s/evs-test-%d", roots[i][0], (int)getpid());
		if (mkdir(dir, 0755) < 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, roots[i][1]);
		if (write_str(path, v))
			return dir;
		rmdir(dir);
	}
	return NULL;
}

static void join_cgroup(const char *dir)
{
	char path[512], pid[32];

	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	if (!write_str(path, pid))
		_exit(4);
}

/* In a 256 MiB memory cgroup, 8 rings of 64 MiB: ENOMEM and a sentence
 * naming the cgroup, not an OOM kill when the rings fill. */
START_TEST(test_memory_cgroup_limit_is_checked_as_a_whole)
{
	char dir[256];
	int status;
	pid_t pid;

	clear_env();
	if (geteuid() != 0)
		EVS_SKIP("needs root to make a memory cgroup");
	if (!make_memory_cgroup(dir, sizeof(dir), 256u << 20))
		EVS_SKIP("no memory cgroup can be made here (v1 memory controller or v2 memory.max)");
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		EVS_OPTS(evs_producer_opts, o, .ring_bytes = 64 << 20,
			 .hugepages = EVS_HUGEPAGES_OFF);
		struct evs_producer *p;

		join_cgroup(dir);
		p = evs_producer__new(NULL, 8, &o);
		if (p || errno != ENOMEM || !strstr(evs_errmsg(), "memory cgroup")) {
			printf("child: producer %p, errno %d: %s\n", (void *)p, errno, evs_errmsg());
			_exit(1);
		}
		printf("refused: %s\n", evs_errmsg());
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
		/* a sanitizer's shadow of the rings counts against the cgroup too */
		printf("SKIP filling two rings in the cgroup: built with a sanitizer\n");
		fflush(stdout);
		_exit(0);
#endif
		/* two of them fit, and fill without being killed */
		p = evs_producer__new(NULL, 2, &o);
		if (!p)
			_exit(2);
		for (unsigned int core = 0; core < 2; core++) {
			struct evs_consumer *c = evs_consumer__connect(NULL, core, NULL);
			char buf[4096] = { 0 };

			if (!c)
				_exit(5);
			while (evs_producer__emit(p, core, 1, buf, sizeof(buf)) == 0)
				;
			evs_consumer__free(c);
		}
		evs_producer__free(p);
		fflush(stdout);
		_exit(0);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	rmdir(dir);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "child %s %d", WIFSIGNALED(status) ? "killed by signal" : "exited",
		      WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
}
END_TEST

/* A hugetlb cgroup of this test, and what making it changed. */
struct hugetlb_cg {
	char dir[256];
	char mnt[128];  /* a v1 hierarchy mounted here, to unmount */
	bool enabled;   /* v2: hugetlb enabled in the root's subtree by us */
};

static bool file_has(const char *path, const char *word)
{
	char line[512];
	FILE *f = fopen(path, "re");
	bool has = f && fgets(line, sizeof(line), f) && strstr(line, word);

	if (f)
		fclose(f);
	return has;
}

/* Undo make_hugetlb_cgroup(), whatever part of it was done. */
static void remove_hugetlb_cgroup(struct hugetlb_cg *cg)
{
	if (cg->dir[0])
		rmdir(cg->dir);
	if (cg->enabled)
		write_str("/sys/fs/cgroup/cgroup.subtree_control", "-hugetlb");
	if (cg->mnt[0]) {
		umount2(cg->mnt, MNT_DETACH);
		rmdir(cg->mnt);
	}
	memset(cg, 0, sizeof(*cg));
}

/*
 * A hugetlb cgroup that grants no 2 MiB huge pages, neither reserved at
 * mmap() nor faulted in (a container without a huge-page request): cgroup
 * v2 with the hugetlb controller, else a v1 hugetlb hierarchy, mounted
 * here when none is. NULL with the reason, everything undone, when it
 * cannot be made.
 */
static const char *make_hugetlb_cgroup(struct hugetlb_cg *cg)
{
	const char *v2 = "/sys/fs/cgroup", *why = NULL;
	const char *limits[][2] = { { "hugetlb.2MB.max", "hugetlb.2MB.rsvd.max" },
				    { "hugetlb.2MB.limit_in_bytes", "hugetlb.2MB.rsvd.limit_in_bytes" } };
	char path[512], dir[256];
	int v1 = 1;

	memset(cg, 0, sizeof(*cg));
	snprintf(path, sizeof(path), "%s/cgroup.controllers", v2);
	if (file_has(path, "hugetlb")) {
		snprintf(path, sizeof(path), "%s/cgroup.subtree_control", v2);
		if (file_has(path, "hugetlb") || (cg->enabled = write_str(path, "+hugetlb"))) {
			v1 = 0;
			snprintf(dir, sizeof(dir), "%s/evs-hugetlb-%d", v2, (int)getpid());
		}
	}
	if (v1) {
		snprintf(cg->mnt, sizeof(cg->mnt), "/tmp/evs-hugetlb-%d", (int)getpid());
		if (mkdir(cg->mnt, 0700) < 0 || mount("none", cg->mnt, "cgroup", 0, "hugetlb") < 0) {
			rmdir(cg->mnt);
			cg->mnt[0] = '\0';
			return "the hugetlb controller is in neither cgroup v2 nor a v1 hierarchy "
			       "that can be mounted here";
		}
		snprintf(dir, sizeof(dir), "%s/evs-test", cg->mnt);
	}
	if (mkdir(dir, 0755) < 0) {
		why = "cannot make a hugetlb cgroup";
		goto undo;
	}
	snprintf(cg->dir, sizeof(cg->dir), "%s", dir);
	/* the reservation limit (Linux 5.7) fails the mmap(), the other
	 * the first commit; either must be met by normal pages */
	snprintf(path, sizeof(path), "%s/%s", dir, limits[v1][0]);
	if (!write_str(path, "0")) {
		why = "the hugetlb cgroup has no 2 MiB limit to set";
		goto undo;
	}
	snprintf(path, sizeof(path), "%s/%s", dir, limits[v1][1]);
	write_str(path, "0");
	return NULL;
undo:
	remove_hugetlb_cgroup(cg);
	return why;
}

/* In the cgroup: auto gives a working producer on normal pages, on
 * whichever call the kernel refused the huge pages; on gives ENOMEM or
 * ENOSPC with a sentence that names the likely causes and the way out.
 * Exit status 0, else the step that failed. */
static void hugepages_refused_child(const char *dir)
{
	EVS_OPTS(evs_producer_opts, o, .ring_bytes = 4 << 20, .hugepages = EVS_HUGEPAGES_AUTO);
	struct evs_stream_stats st = { .sz = sizeof(st) };
	struct evs_producer *p;

	join_cgroup(dir);
	p = evs_producer__new(NULL, 2, &o);
	if (!p) {
		printf("child: auto producer in a cgroup without huge pages: %s\n", evs_errmsg());
		_exit(1);
	}
	for (unsigned int core = 0; core < 2; core++) {
		struct evs_consumer *c = evs_consumer__connect(NULL, core, NULL);
		struct evs_record rec;
		char buf[256];

		memset(buf, (int)core + 1, sizeof(buf));
		if (!c || evs_producer__stats(p, core, &st) || st.hugepages != 0)
			_exit(2);
		if (evs_producer__emit(p, core, 7, buf, sizeof(buf)) || evs_consumer__peek(c, &rec) ||
		    rec.hdr.data_size != sizeof(buf) || memcmp(rec.data, buf, sizeof(buf)))
			_exit(3);
		evs_consumer__release(c);
		evs_consumer__free(c);
	}
	evs_producer__free(p);
	o.hugepages = EVS_HUGEPAGES_ON;
	p = evs_producer__new(NULL, 2, &o);
	if (p || (errno != ENOMEM && errno != ENOSPC) || !strstr(evs_errmsg(), "hugetlb cgroup") ||
	    !strstr(evs_errmsg(), "EVSTREAM_HUGEPAGES=auto")) {
		printf("child: huge pages on: producer %p, errno %d: %s\n", (void *)p, errno,
		       evs_errmsg());
		_exit(4);
	}
	printf("on, refused: %s\n", evs_errmsg());
	fflush(stdout);
	_exit(0);
}

/* Huge pages free on the machine, none for this process (its hugetlb
 * cgroup; or another process took them between the budget's look and
 * the mapping): EVSTREAM_HUGEPAGES=auto falls back to normal pages. */
START_TEST(test_memory_hugepages_refused_fall_back_to_normal_pages)
{
	struct hugetlb_cg cg;
	const char *why;
	int status;
	pid_t pid;

	clear_env();
	if (geteuid() != 0)
		EVS_SKIP("needs root to make a hugetlb cgroup");
	if (evs_hugepages_free() < 4)
		EVS_SKIP("needs 4 free 2 MiB huge pages (HugePages_Free=%ld) for auto to choose them",
			 evs_hugepages_free());
	why = make_hugetlb_cgroup(&cg);
	if (why)
		EVS_SKIP("%s", why);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0)
		hugepages_refused_child(cg.dir);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	remove_hugetlb_cgroup(&cg);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "child %s %d", WIFSIGNALED(status) ? "killed by signal" : "exited",
		      WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
}
END_TEST

/* Make every fallocate() of this process fail with ENOMEM (seccomp). */
/* Memory that cannot be committed when the ring first fills past its
 * first chunk: the event is dropped and counted as no_memory (-ENOMEM),
 * never a SIGBUS; what was committed is delivered. */
START_TEST(test_memory_commit_failure_drops_and_counts)
{
	int status;
	pid_t pid;

	clear_env();
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		EVS_OPTS(evs_producer_opts, o, .ring_bytes = 16 << 20,
			 .hugepages = EVS_HUGEPAGES_OFF);
		struct evs_stream_stats st = { .sz = sizeof(st) };
		struct evs_producer *p = evs_producer__new(NULL, 1, &o);
		struct evs_consumer *c = evs_consumer__connect(NULL, 0, NULL);
		static char buf[4000];
		uint64_t ok = 0, got = 0;
		struct evs_record rec;
		int err;

		if (!p || !c)
			_exit(2);
		if (evs_deny_syscall(__NR_fallocate, ENOMEM))
			_exit(6);
		while ((err = evs_producer__emit(p, 0, 1, buf, sizeof(buf))) == 0)
			ok++;
		if (err != -ENOMEM || evs_producer__emit(p, 0, 1, buf, sizeof(buf)) != -ENOMEM)
			_exit(7);
		/* the first 2 MiB chunk was committed when the producer was made */
		if (evs_producer__stats(p, 0, &st) || st.dropped_events[EVS_DROP_NO_MEMORY] != 2 ||
		    st.committed != ok || ok != (2u << 20) / 4064)
			_exit(8);
		while (evs_consumer__peek(c, &rec) == 0) {
			got++;
			evs_consumer__release(c);
		}
		if (got != ok || strcmp(evs_drop_cause_name(EVS_DROP_NO_MEMORY), "no_memory"))
			_exit(9);
		evs_consumer__free(c);
		evs_producer__free(p);
		_exit(0);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "child %s %d", WIFSIGNALED(status) ? "killed by signal" : "exited",
		      WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
}
END_TEST

/* The library's fallocate(), interposed: counted, failed with EINTR while
 * fallocate_interrupts lasts, then with ENOMEM while fallocate_fails is set
 * (the kernel's own call otherwise). */
static _Atomic unsigned long fallocate_calls;
static _Atomic int fallocate_fails;
static _Atomic int fallocate_interrupts; /* calls still to fail with EINTR */

int fallocate(int fd, int mode, off_t offset, off_t len)
{
	atomic_fetch_add(&fallocate_calls, 1);
	if (atomic_load(&fallocate_interrupts) > 0) {
		atomic_fetch_sub(&fallocate_interrupts, 1);
		errno = EINTR;
		return -1;
	}
	if (atomic_load(&fallocate_fails)) {
		errno = ENOMEM;
		return -1;
	}
	return (int)syscall(SYS_fallocate, fd, mode, offset, len);
}

/* A producer of one 16 MiB stream on normal pages (committed 2 MiB at a
 * time as it fills) and its consumer; fallocate() back to the kernel's,
 * after `interrupts` calls that a signal interrupts. */
static struct evs_producer *growing_stream(struct evs_consumer **c, int interrupts)
{
	EVS_OPTS(evs_producer_opts, o, .ring_bytes = 16 << 20, .hugepages = EVS_HUGEPAGES_OFF);
	struct evs_producer *p;

	clear_env();
	atomic_store(&fallocate_interrupts, interrupts);
	atomic_store(&fallocate_fails, 0);
	p = evs_producer__new(NULL, 1, &o);
	ck_assert_msg(p, "%s", evs_errmsg());
	*c = evs_consumer__connect(NULL, 0, NULL);
	ck_assert_ptr_nonnull(*c);
	return p;
}

/* While memory cannot be committed, the producer tries again once per
 * EVS_COMMIT_RETRY_NS, not on every event it drops (each try is a system
 * call, and under memory pressure the kernel's reclaim); once memory is
 * there again, the first event after that time has it. */
START_TEST(test_memory_commit_failure_is_not_retried_per_event)
{
	struct evs_stream_stats st = { .sz = sizeof(st) };
	struct evs_consumer *c;
	struct evs_producer *p = growing_stream(&c, 0);
	static char buf[4000];
	const unsigned long drops = 100000;
	unsigned long calls, allowed;
	uint64_t t0, ok = 0, elapsed;
	int err = 0;

	atomic_store(&fallocate_fails, 1);
	while ((err = evs_producer__emit(p, 0, 1, buf, sizeof(buf))) == 0)
		ok++;
	ck_assert_int_eq(err, -ENOMEM);
	/* the first chunk was committed when the producer was made */
	ck_assert_uint_eq(ok, (2u << 20) / 4064);
	t0 = evs_test_now_ns();
	atomic_store(&fallocate_calls, 0);
	for (unsigned long i = 0; i < drops; i++)
		ck_assert_int_eq(evs_producer__emit(p, 0, 1, buf, sizeof(buf)), -ENOMEM);
	elapsed = evs_test_now_ns() - t0;
	calls = atomic_load(&fallocate_calls);
	/* one try per period begun, and the one at its end */
	allowed = (unsigned long)(elapsed / EVS_COMMIT_RETRY_NS) + 2;
	ck_assert_msg(calls <= allowed, "%lu fallocate() calls for %lu drops in %.1f ms (at most %lu)",
		      calls, drops, elapsed / 1e6, allowed);
	ck_assert_int_eq(evs_producer__stats(p, 0, &st), 0);
	ck_assert_uint_eq(st.dropped_events[EVS_DROP_NO_MEMORY], drops + 1);

	/* memory is back: after the period, the ring grows again */
	atomic_store(&fallocate_fails, 0);
	usleep((useconds_t)(EVS_COMMIT_RETRY_NS / 1000 + 1000));
	ck_assert_int_eq(evs_producer__emit(p, 0, 1, buf, sizeof(buf)), 0);
	ck_assert_uint_ge(atomic_load(&fallocate_calls), calls + 1);
	evs_consumer__free(c);
	evs_producer__free(p);
}
END_TEST

/* A commit that a signal interrupted (fallocate() gives up with EINTR when
 * one is pending) is tried again at once, the producer's first chunk as
 * much as the ring's growth: memory is not short, the producer is made,
 * nothing is dropped, and no pause in the ring's growth follows. */
START_TEST(test_memory_commit_interrupted_by_a_signal_is_tried_again)
{
	struct evs_stream_stats st = { .sz = sizeof(st) };
	struct evs_consumer *c;
	struct evs_producer *p = growing_stream(&c, 1);
	static char buf[4000];
	/* past the first chunk: the ring must grow */
	const uint64_t events = (6u << 20) / 4064;
	unsigned long calls;
	int interrupts;

	/* its first fallocate() (the control file's) was interrupted once */
	ck_assert_int_eq(atomic_load(&fallocate_interrupts), 0);
	atomic_store(&fallocate_calls, 0);
	atomic_store(&fallocate_interrupts, 2);
	for (uint64_t i = 0; i < events; i++)
		ck_assert_msg(evs_producer__emit(p, 0, 1, buf, sizeof(buf)) == 0,
			      "event %llu of %llu dropped", (unsigned long long)i,
			      (unsigned long long)events);
	/* the two interrupted calls, and the one that grew the ring */
	interrupts = atomic_load(&fallocate_interrupts);
	calls = atomic_load(&fallocate_calls);
	ck_assert_int_eq(interrupts, 0);
	ck_assert_uint_ge(calls, 3);
	ck_assert_int_eq(evs_producer__stats(p, 0, &st), 0);
	ck_assert_uint_eq(st.dropped, 0);
	evs_consumer__free(c);
	evs_producer__free(p);
}
END_TEST

static Suite *memory_suite(void)
{
	Suite *s = suite_create("memory");
	TCase *tc = evs_tcase("memory");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_memory_default_holds_64k_tensor_reads);
	tcase_add_test(tc, test_memory_buffer_size_from_the_environment_is_real);
	tcase_add_test(tc, test_memory_smaller_ring_bytes_are_said_once);
	tcase_add_test(tc, test_memory_small_run_does_not_pay_for_the_worst_case);
	tcase_add_test(tc, test_memory_rlimit_as_is_checked_as_a_whole);
	tcase_add_test(tc, test_memory_cgroup_limit_is_checked_as_a_whole);
	tcase_add_test(tc, test_memory_commit_failure_drops_and_counts);
	tcase_add_test(tc, test_memory_commit_failure_is_not_retried_per_event);
	tcase_add_test(tc, test_memory_commit_interrupted_by_a_signal_is_tried_again);
	tcase_add_test(tc, test_memory_hugepages_refused_fall_back_to_normal_pages);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return evs_run_suite(memory_suite());
}

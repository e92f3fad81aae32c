/* SPDX-License-Identifier: MIT */
/*
 * Untrusted shared memory, one behaviour per test.
 *
 * Consumer side: whatever the producer's side of the shared memory holds,
 * the consumer gives records, -EAGAIN, -EPIPE or a sticky -EBADMSG; never a
 * crash, an out-of-bounds read or a hang. A fake producer behind the socket
 * hands over bad files, and the consumer refuses them.
 *
 * Producer side: whatever a consumer writes into its page (position,
 * released count, wait word) or does to its wakeup fd, the producer never
 * writes outside its ring, never overwrites unreleased records, and never
 * blocks; the worst a consumer can cause is drops.
 */
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>

#include "helpers.h"
#include "consumer.h"
#include "handshake.h"
#include "producer.h"

#define RING 4096u

struct fx {
	struct evs_producer *p;
	struct evs_consumer *c;
	struct evs_stream *s;   /* the producer's view, to play the other side */
};

static struct fx fx;

static void open_pair(uint64_t max_events)
{
	EVS_OPTS(evs_producer_opts, o, .ring_bytes = RING, .max_events = max_events,
		 .hugepages = EVS_HUGEPAGES_OFF);

	fx.p = evs_producer__new(NULL, 1, &o);
	ck_assert_msg(fx.p, "producer: %s", evs_errmsg());
	fx.s = &fx.p->streams[0];
	fx.c = evs_consumer__connect(NULL, 0, NULL);
	ck_assert_msg(fx.c, "consumer: %s", evs_errmsg());
}

static void setup(void)
{
	open_pair(1024);
}

static void teardown(void)
{
	evs_consumer__free(fx.c);
	evs_producer__free(fx.p);
	memset(&fx, 0, sizeof(fx));
}

static void emit_n(int n, size_t size)
{
	char buf[256] = { 0 };

	for (int i = 0; i < n; i++) {
		memset(buf, 'a' + i % 26, sizeof(buf));
		ck_assert_int_eq(evs_producer__emit(fx.p, 0, 1, buf, size), 0);
	}
}

static struct evs_event_header *ring_hdr(uint64_t pos)
{
	return (struct evs_event_header *)(fx.s->data + pos % RING);
}

/* evs_errmsg() names the corruption (why is part of the sentence). */
static void assert_broken_says(const char *why)
{
	ck_assert_msg(strstr(evs_errmsg(), "stream corrupt") && strstr(evs_errmsg(), why),
		      "evs_errmsg() says '%s', want 'stream corrupt' and '%s'", evs_errmsg(), why);
}

/* Broken is sticky for every consumer call, each says why again (after
 * another failure took the thread's message), and stats still answer. */
static void assert_broken(const char *why)
{
	struct evs_stream_stats st = { .sz = sizeof(st) };
	struct evs_record r;

	ck_assert_int_eq(evs_consumer__peek(fx.c, &r), -EBADMSG);
	assert_broken_says(why);
	ck_assert_ptr_null(evs_producer__new("another failure", 1, NULL));
	ck_assert_int_eq(evs_consumer__peek(fx.c, &r), -EBADMSG);
	assert_broken_says(why);
	ck_assert_int_eq(evs_consumer__prepare_wait(fx.c), -EBADMSG);
	ck_assert_int_eq(evs_consumer__wait(fx.c, 0), -EBADMSG);
	assert_broken_says(why);
	ck_assert_int_eq(evs_consumer__release(fx.c), -EINVAL);
	ck_assert_int_eq(evs_consumer__stats(fx.c, &st), 0);
}

/* What a call made in a child process returned, and how long it took. */
struct bounded {
	int ret;
	int ms;
};

/* Runs fn(arg) in a child process that SIGALRM ends after limit_s, so that
 * a call that never returns fails the test instead of hanging the suite.
 * The child's copy of a consumer shares the parent's memory files and
 * eventfd, which is what the call works on. */
static struct bounded run_bounded(int (*fn)(void *), void *arg, unsigned int limit_s)
{
	struct bounded r = { 0 };
	int p[2], status;
	ssize_t n;
	pid_t pid;

	ck_assert_int_eq(pipe(p), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		uint64_t t0 = evs_test_now_ns();

		close(p[0]);
		/* Check's handler would kill the whole test: die alone */
		signal(SIGALRM, SIG_DFL);
		alarm(limit_s);
		r.ret = fn(arg);
		r.ms = (int)((evs_test_now_ns() - t0) / 1000000);
		_exit(write(p[1], &r, sizeof(r)) == (ssize_t)sizeof(r) ? 0 : 1);
	}
	close(p[1]);
	n = read(p[0], &r, sizeof(r));
	close(p[0]);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(!WIFSIGNALED(status) || WTERMSIG(status) != SIGALRM,
		      "the call did not return within %u s", limit_s);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0 && n == (ssize_t)sizeof(r),
		      "child status %d", status);
	return r;
}

static int wait_200ms(void *c)
{
	return evs_consumer__wait(c, 200);
}

/* Nothing comes: wait() returns -ETIMEDOUT after its 200 ms, not never. */
static void assert_wait_keeps_its_timeout(struct evs_consumer *c)
{
	struct bounded r = run_bounded(wait_200ms, c, 3);

	ck_assert_int_eq(r.ret, -ETIMEDOUT);
	ck_assert_int_lt(r.ms, 1000);
}

/* ------------------------------------------------------------ consumer */

START_TEST(test_consumer_rejects_record_longer_than_published)
{
	emit_n(1, 16);
	ring_hdr(0)->data_size = 17 + 64; /* runs past prod_pos */
	assert_broken("runs past the producer's position");
}
END_TEST

START_TEST(test_consumer_rejects_data_size_near_u64_max)
{
	emit_n(1, 16);
	ring_hdr(0)->data_size = UINT64_MAX - 3; /* would wrap a naive len sum */
	assert_broken("claims 18446744073709551612 payload bytes");
}
END_TEST

START_TEST(test_consumer_rejects_prod_pos_more_than_a_ring_ahead)
{
	emit_n(1, 16);
	WRITE_ONCE(&fx.s->prod->prod_pos, (uint64_t)RING + 8);
	assert_broken("is not on the 8-byte record grid");
}
END_TEST

START_TEST(test_consumer_rejects_prod_pos_going_back)
{
	struct evs_record r;

	emit_n(3, 16);
	for (int i = 0; i < 3; i++) {
		ck_assert_int_eq(evs_consumer__peek(fx.c, &r), 0);
		ck_assert_int_eq(evs_consumer__release(fx.c), 0);
	}
	WRITE_ONCE(&fx.s->prod->prod_pos, 80); /* behind what we consumed */
	assert_broken("is not on the 8-byte record grid");
}
END_TEST

START_TEST(test_consumer_rejects_unaligned_prod_pos)
{
	struct evs_record r;

	emit_n(1, 16);
	ck_assert_int_eq(evs_consumer__peek(fx.c, &r), 0);
	ck_assert_int_eq(evs_consumer__release(fx.c), 0);
	WRITE_ONCE(&fx.s->prod->prod_pos, READ_ONCE(&fx.s->prod->prod_pos) + 12);
	assert_broken("is not on the 8-byte record grid");
}
END_TEST

START_TEST(test_consumer_rejects_truncated_header)
{
	struct evs_record r;

	emit_n(1, 16);
	ck_assert_int_eq(evs_consumer__peek(fx.c, &r), 0);
	ck_assert_int_eq(evs_consumer__release(fx.c), 0);
	/* only 32 bytes published: less than a header */
	WRITE_ONCE(&fx.s->prod->prod_pos, READ_ONCE(&fx.s->prod->prod_pos) + 32);
	assert_broken("runs past the producer's position");
}
END_TEST

/* The header is copied out once and checked; rewriting it afterwards
 * changes neither the copy nor how far release moves. */
START_TEST(test_consumer_header_copy_is_immune_to_later_writes)
{
	struct evs_record r, r2;

	emit_n(2, 16);
	ck_assert_int_eq(evs_consumer__peek(fx.c, &r), 0);
	ring_hdr(0)->data_size = 3000;
	ring_hdr(0)->seq = 99;
	ck_assert_uint_eq(r.hdr.data_size, 16);
	ck_assert_uint_eq(r.hdr.seq, 0);
	ck_assert_int_eq(evs_consumer__release(fx.c), 0);
	ck_assert_int_eq(evs_consumer__peek(fx.c, &r2), 0);
	ck_assert_uint_eq(r2.hdr.seq, 1);
	ck_assert_uint_eq(r2.hdr.data_size, 16);
}
END_TEST

static int release_all(void *ctx, const struct evs_record *r)
{
	(void)ctx;
	(void)r;
	return 0;
}

static void assert_within_mapping(const struct evs_record *r)
{
	const uint8_t *d = r->data;

	ck_assert(d >= fx.c->data + EVS_RECORD_HDR);
	ck_assert(d + r->hdr.data_size <= fx.c->data + 2 * RING);
}

/* A record that wraps, and the largest size a header may claim from the
 * last offset, stay inside the double mapping. */
START_TEST(test_consumer_record_never_extends_past_the_mapping)
{
	uint64_t len = evs_record_len(200), n = RING / len;
	struct evs_record r;

	emit_n((int)n, 200);
	ck_assert_int_eq(evs_consumer__consume(fx.c, release_all, NULL, 0), (int)n);
	emit_n(2, 200); /* the first of these runs past the end of the ring */
	ck_assert_uint_gt(n * len % RING + len, RING);
	ck_assert_int_eq(evs_consumer__peek(fx.c, &r), 0);
	assert_within_mapping(&r);
	/* claim everything published as one payload: still inside */
	ring_hdr(n * len)->data_size = 2 * len - EVS_RECORD_HDR;
	ck_assert_int_eq(evs_consumer__peek(fx.c, &r), 0);
	ck_assert_uint_eq(r.hdr.data_size, 2 * len - EVS_RECORD_HDR);
	assert_within_mapping(&r);
	ck_assert_int_eq(evs_consumer__release(fx.c), 0);
	ck_assert_int_eq(evs_consumer__peek(fx.c, &r), -EAGAIN);
}
END_TEST

/* Another holder of the stream's eventfd (a consumer that left and kept a
 * copy) clears O_NONBLOCK on it: the flag belongs to the file, which every
 * later consumer of the stream shares. No read of the consumer depends on
 * it: wait() keeps its timeout, and a commit still wakes it. */
START_TEST(test_consumer_wait_ignores_o_nonblock_cleared_by_another_holder)
{
	int held = dup(evs_consumer__fd(fx.c));
	struct pollfd pfd = { .fd = evs_consumer__fd(fx.c), .events = POLLIN };

	ck_assert_int_ge(held, 0);
	ck_assert_int_eq(fcntl(held, F_SETFL, 0), 0);
	assert_wait_keeps_its_timeout(fx.c);
	ck_assert_int_eq(fcntl(held, F_SETFL, 0), 0);
	emit_n(1, 16);
	ck_assert_int_eq(poll(&pfd, 1, 2000), 1);
	ck_assert_int_eq(evs_consumer__wait(fx.c, 2000), 0);
	close(held);
}
END_TEST

START_TEST(test_connect_rejects_bad_magic)
{
	struct evs_consumer *c2;

	evs_consumer__free(fx.c);
	fx.c = NULL;
	fx.s->prod->magic = 0x4142434445464748ULL;
	c2 = evs_consumer__connect(NULL, 0, NULL);
	ck_assert_ptr_null(c2);
	ck_assert_int_eq(errno, EBADMSG);
	/* the refused consumer did not keep the stream claimed */
	fx.s->prod->magic = EVS_SHM_MAGIC;
	fx.c = evs_consumer__connect(NULL, 0, NULL);
	ck_assert_msg(fx.c, "after restoring the magic: %s", evs_errmsg());
}
END_TEST

/* The next consumer of a stream starts where its predecessor left only
 * when that is a record start the producer's own records lead to; a
 * position off the record grid, ahead of the ring or inside a payload
 * (here, one shaped like a header that ends where the ring does) comes
 * from a consumer that wrote nonsense: the next one starts at the newest
 * record, instead of being refused or handed a forged record. */
static void assert_next_consumer_starts_fresh(uint64_t left_pos)
{
	struct evs_record r;

	evs_consumer__free(fx.c);
	fx.c = NULL;
	WRITE_ONCE(&fx.s->cons->cons_pos, left_pos);
	fx.c = evs_consumer__connect(NULL, 0, NULL);
	ck_assert_msg(fx.c, "connect after a consumer left position %llu: %s",
		      (unsigned long long)left_pos, evs_errmsg());
	ck_assert_int_eq(evs_consumer__peek(fx.c, &r), -EAGAIN);
	ck_assert_int_eq(evs_producer__emit(fx.p, 0, 7, "fresh", 5), 0);
	ck_assert_int_eq(evs_consumer__peek(fx.c, &r), 0);
	ck_assert_uint_eq(r.hdr.type, 7);
	ck_assert_uint_eq(r.hdr.data_size, 5);
	ck_assert_int_eq(memcmp(r.data, "fresh", 5), 0);
	ck_assert_int_eq(evs_consumer__release(fx.c), 0);
}

START_TEST(test_next_consumer_starts_fresh_after_an_unaligned_position)
{
	emit_n(3, 8);
	assert_next_consumer_starts_fresh(4);
}
END_TEST

START_TEST(test_next_consumer_starts_fresh_after_a_position_ahead)
{
	emit_n(3, 8);
	assert_next_consumer_starts_fresh(READ_ONCE(&fx.s->prod->prod_pos) + 8);
}
END_TEST

/* A position put back behind the one the producer accepted: the records
 * there were read, and the producer may write over them. */
START_TEST(test_next_consumer_starts_fresh_after_a_position_put_back)
{
	uint64_t len = evs_record_len(100), n = RING / len;
	char buf[100] = { 0 };

	emit_n((int)n, 100);
	ck_assert_int_eq(evs_consumer__consume(fx.c, release_all, NULL, 0), (int)n);
	/* the ring looked full: this emit reads, and accepts, the position */
	ck_assert_int_eq(evs_producer__emit(fx.p, 0, 1, buf, sizeof(buf)), 0);
	ck_assert_uint_eq(fx.s->cons_cache, n * len);
	ck_assert_int_eq(evs_consumer__consume(fx.c, release_all, NULL, 0), 1);
	assert_next_consumer_starts_fresh(0);
}
END_TEST

START_TEST(test_next_consumer_is_not_handed_a_record_forged_in_a_payload)
{
	uint8_t payload[200] = { 0 };
	struct evs_event_header fake = { .data_size = 72, .type = 0x4242, .seq = 12345 };

	/* record 0 spans [0, 264); a "header" at 128 whose record ends at 264 */
	memcpy(payload + 64, &fake, sizeof(fake));
	ck_assert_int_eq(evs_producer__emit(fx.p, 0, 1, payload, sizeof(payload)), 0);
	ck_assert_uint_eq(READ_ONCE(&fx.s->prod->prod_pos), 128 + evs_record_len(72));
	assert_next_consumer_starts_fresh(128);
}
END_TEST

/* The same header-shaped bytes, but the position inside the payload was
 * published while the ring was full: the producer's look at the consumer
 * page accepted it (its bounds allow it), and the handover starts from
 * what it accepted. left is 8-aligned (128) or not (132). */
static void forge_behind_an_accepted_position(uint64_t left)
{
	uint8_t payload[200] = { 0 };
	struct evs_event_header fake = { .data_size = 72, .type = 0x4242, .seq = 12345 };
	int n = 0;

	memcpy(payload + 64, &fake, sizeof(fake));
	ck_assert_int_eq(evs_producer__emit(fx.p, 0, 1, payload, sizeof(payload)), 0);
	while (evs_producer__emit(fx.p, 0, 1, "ABCDEFGH", 8) == 0)
		n++;
	ck_assert_int_gt(n, 0);
	WRITE_ONCE(&fx.c->cons->cons_pos, left);
	/* the ring looked full: this emit reads the page again */
	ck_assert_int_eq(evs_producer__emit(fx.p, 0, 1, "ABCDEFGH", 8), 0);
	ck_assert_uint_eq(READ_ONCE(&fx.s->cons_cache), left);
	assert_next_consumer_starts_fresh(left);
}

START_TEST(test_next_consumer_is_not_handed_a_record_forged_behind_an_accepted_position)
{
	forge_behind_an_accepted_position(128);
}
END_TEST

START_TEST(test_next_consumer_starts_fresh_after_an_accepted_unaligned_position)
{
	forge_behind_an_accepted_position(132);
}
END_TEST

/* A consumer killed between its two stores of a release leaves its
 * released count one ahead of its position: the next consumer still
 * inherits every record from that position (the one in between again, as
 * a record it held), and the event limit counts right after it. */
START_TEST(test_next_consumer_inherits_after_a_release_torn_by_a_kill)
{
	struct evs_record r;

	teardown();
	open_pair(4);
	emit_n(3, 8);
	evs_consumer__free(fx.c);
	fx.c = NULL;
	WRITE_ONCE(&fx.s->cons->released, 1); /* cons_pos still 0 */
	fx.c = evs_consumer__connect(NULL, 0, NULL);
	ck_assert_msg(fx.c, "%s", evs_errmsg());
	for (uint64_t i = 0; i < 3; i++) {
		ck_assert_int_eq(evs_consumer__peek(fx.c, &r), 0);
		ck_assert_uint_eq(r.hdr.seq, i);
		ck_assert_int_eq(evs_consumer__release(fx.c), 0);
	}
	ck_assert_int_eq(evs_consumer__peek(fx.c, &r), -EAGAIN);
	for (int i = 0; i < 4; i++)
		ck_assert_msg(evs_producer__emit(fx.p, 0, 1, "x", 1) == 0, "emit %d of 4", i);
	ck_assert_int_eq(evs_producer__emit(fx.p, 0, 1, "x", 1), -ENOBUFS);
}
END_TEST

/* No descriptor left for the new consumer page: the connect fails with
 * the reason, and leaves the stream free for the next try. */
START_TEST(test_connect_without_a_descriptor_for_its_page_fails_cleanly)
{
	struct rlimit old, lim;
	int fillers[64], nfill = 0, fd;

	evs_consumer__free(fx.c);
	fx.c = NULL;
	ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &old), 0);
	/* every descriptor below the limit taken but one: the consumer's
	 * copy of the eventfd gets it, the page's memfd finds none */
	fd = fcntl(0, F_DUPFD_CLOEXEC, 0);
	ck_assert_int_ge(fd, 0);
	close(fd);
	lim = old;
	lim.rlim_cur = (rlim_t)fd + 64;
	ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &lim), 0);
	while ((fd = fcntl(0, F_DUPFD_CLOEXEC, 0)) >= 0)
		fillers[nfill++] = fd;
	ck_assert_int_eq(errno, EMFILE);
	close(fillers[--nfill]);
	ck_assert_ptr_null(evs_consumer__connect(NULL, 0, NULL));
	ck_assert_int_eq(errno, EMFILE);
	ck_assert_msg(strstr(evs_errmsg(), "consumer page for core 0"), "message: %s", evs_errmsg());
	while (nfill)
		close(fillers[--nfill]);
	ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &old), 0);
	fx.c = evs_consumer__connect(NULL, 0, NULL);
	ck_assert_msg(fx.c, "after the descriptors came back: %s", evs_errmsg());
}
END_TEST

/* A consumer that keeps a mapping of its page after it left, and writes
 * there that everything was read, moves nothing: the next consumer has a
 * page of its own, and the producer does not write over what that one has
 * not read. */
START_TEST(test_a_consumer_gone_cannot_release_for_the_next_one)
{
	struct evs_stream_stats st = { .sz = sizeof(st) };
	uint64_t len = evs_record_len(100), n = RING / len;
	struct evs_shm_cons *old;
	struct evs_record r;
	char buf[100] = { 0 };
	int ok = 0;

	old = mmap(NULL, EVS_CTL_PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fx.s->backing.cons_fd, 0);
	ck_assert_ptr_ne(old, MAP_FAILED);
	evs_consumer__free(fx.c);
	fx.c = evs_consumer__connect(NULL, 0, NULL);
	ck_assert_msg(fx.c, "%s", evs_errmsg());
	for (uint64_t i = 0; i < 2 * n; i++) {
		buf[0] = (char)i;
		ok += evs_producer__emit(fx.p, 0, 1, buf, sizeof(buf)) == 0;
		WRITE_ONCE(&old->cons_pos, READ_ONCE(&fx.s->prod->prod_pos));
		WRITE_ONCE(&old->released, READ_ONCE(&fx.s->prod->committed));
	}
	ck_assert_int_eq(ok, (int)n); /* a ring's worth, then full */
	ck_assert_int_eq(evs_producer__stats(fx.p, 0, &st), 0);
	ck_assert_uint_eq(st.dropped_events[EVS_DROP_RING_FULL], n);
	for (uint64_t i = 0; i < n; i++) {
		ck_assert_int_eq(evs_consumer__peek(fx.c, &r), 0);
		ck_assert_int_eq(((const char *)r.data)[0], (char)i);
		ck_assert_int_eq(evs_consumer__release(fx.c), 0);
	}
	munmap(old, EVS_CTL_PAGE);
}
END_TEST

/* --------------------------------------------------- a fake producer */

/* Serves one connection on a socket of `name` with a welcome and the
 * given fds, from a child process; returns its pid. */
/* Serves one connection: reads the hello, sends the first wlen bytes of
 * *w with the fds (nothing at all when wlen is 0), waits for the hang-up. */
/* A listening socket at name's place in the runtime directory, its path
 * in *sa: what a fake producer serves on. */
static int fake_listen(const char *name, int backlog, struct sockaddr_un *sa)
{
	const char *dir = getenv("EVSTREAM_RUNTIME_DIR");
	int lfd;

	*sa = (struct sockaddr_un){ .sun_family = AF_UNIX };
	mkdir(dir, 0700);
	snprintf(sa->sun_path, sizeof(sa->sun_path), "%s/%s.sock", dir, name);
	unlink(sa->sun_path);
	lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(lfd, 0);
	ck_assert_int_eq(bind(lfd, (struct sockaddr *)sa, sizeof(*sa)), 0);
	ck_assert_int_eq(listen(lfd, backlog), 0);
	return lfd;
}

static pid_t fake_producer(const char *name, const struct evs_welcome *w, size_t wlen,
			   const int *fds, int nfds)
{
	struct sockaddr_un sa;
	int lfd = fake_listen(name, 1, &sa);
	pid_t pid;

	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		char cbuf[CMSG_SPACE(8 * sizeof(int))] = { 0 };
		struct iovec iov = { .iov_base = (void *)w, .iov_len = wlen };
		struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
		struct evs_hello h;
		int fd;

		alarm(10); /* never outlive a broken test */
		fd = accept(lfd, NULL, NULL);

		if (fd < 0 || recv(fd, &h, sizeof(h), 0) != sizeof(h))
			_exit(1);
		if (nfds) {
			struct cmsghdr *cm;

			msg.msg_control = cbuf;
			msg.msg_controllen = CMSG_SPACE(nfds * sizeof(int));
			cm = CMSG_FIRSTHDR(&msg);
			cm->cmsg_level = SOL_SOCKET;
			cm->cmsg_type = SCM_RIGHTS;
			cm->cmsg_len = CMSG_LEN(nfds * sizeof(int));
			memcpy(CMSG_DATA(cm), fds, nfds * sizeof(int));
		}
		if (wlen)
			sendmsg(fd, &msg, MSG_NOSIGNAL);
		else
			_exit(0); /* dies mid-handshake */
		/* stay until the consumer hangs up */
		recv(fd, &h, 1, 0);
		_exit(0);
	}
	close(lfd);
	return pid;
}

static int memfd_sealed_with(size_t size, int seals)
{
	int fd = memfd_create("fake", MFD_CLOEXEC | MFD_ALLOW_SEALING);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, (off_t)size), 0);
	if (seals)
		ck_assert_int_eq(fcntl(fd, F_ADD_SEALS, seals), 0);
	return fd;
}

/* The files as a producer seals them: against shrinking and growing. */
static int memfd_of(size_t size, bool sealed)
{
	return memfd_sealed_with(size, sealed ? F_SEAL_SHRINK | F_SEAL_GROW : 0);
}

static void write_identity(int ctl_fd, uint64_t ring, uint32_t magic_ok)
{
	struct evs_shm_prod *prod = mmap(NULL, EVS_CTL_PAGE, PROT_READ | PROT_WRITE, MAP_SHARED,
					 ctl_fd, 0);

	ck_assert_ptr_ne(prod, MAP_FAILED);
	prod->magic = magic_ok ? EVS_SHM_MAGIC : 0;
	prod->abi_major = EVS_ABI_MAJOR;
	prod->hdr_bytes = EVS_CTL_BYTES;
	prod->ring_bytes = ring;
	prod->max_events = 16;
	prod->page_size = 4096;
	munmap(prod, EVS_CTL_PAGE);
}

/* The files of a welcome, in its order: control, consumer page, ring, eventfd. */
static void fake_files(int fds[EVS_WELCOME_NFDS], uint64_t ring, bool sealed)
{
	fds[EVS_WELCOME_CTL_FD] = memfd_of(EVS_CTL_PAGE, sealed);
	fds[EVS_WELCOME_CONS_FD] = memfd_of(EVS_CTL_PAGE, sealed);
	fds[EVS_WELCOME_DATA_FD] = memfd_of(ring, sealed);
	fds[EVS_WELCOME_EVENT_FD] = eventfd(0, EFD_CLOEXEC);
}

static int count_fds(void)
{
	int n = 0;

	for (int fd = 0; fd < 1024; fd++)
		n += fcntl(fd, F_GETFD) >= 0;
	return n;
}

/* The fake producer has seen its consumer hang up: it exits, and its
 * socket goes. */
static void reap_fake(const char *name, pid_t pid)
{
	char path[160];
	int status;

	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "fake producer failed");
	snprintf(path, sizeof(path), "%s/%s.sock", getenv("EVSTREAM_RUNTIME_DIR"), name);
	unlink(path);
}

/* Connect to a fake producer serving these fds; the errno of the failure
 * (0 if it connected). No fd may be left behind either way. */
static int connect_fake_len(const char *tag, const struct evs_welcome *w, size_t wlen,
			    const int *fds, int nfds)
{
	const char *name = evs_test_name(tag);
	int before = count_fds(), err = 0;
	struct evs_consumer *c;
	pid_t pid;

	pid = fake_producer(name, w, wlen, fds, nfds);
	for (int i = 0; i < nfds; i++)
		close(fds[i]);
	c = evs_consumer__connect(name, 0, NULL);
	if (!c)
		err = errno;
	evs_consumer__free(c);
	reap_fake(name, pid);
	ck_assert_int_eq(count_fds(), before - nfds);
	return err;
}

static int connect_fake(const char *tag, const struct evs_welcome *w, const int *fds, int nfds)
{
	return connect_fake_len(tag, w, sizeof(*w), fds, nfds);
}

static struct evs_welcome welcome(uint64_t ring)
{
	return (struct evs_welcome){ .magic = EVS_WELCOME_MAGIC, .ncores = 1, .ring_bytes = ring,
				     .max_events = 16, .page_size = 4096 };
}

START_TEST(test_consumer_refuses_unsealed_files)
{
	struct evs_welcome w = welcome(RING);
	int fds[EVS_WELCOME_NFDS];

	fake_files(fds, RING, false);

	write_identity(fds[EVS_WELCOME_CTL_FD], RING, 1);
	ck_assert_int_eq(connect_fake("unsealed", &w, fds, EVS_WELCOME_NFDS), EBADMSG);
}
END_TEST

START_TEST(test_consumer_refuses_ring_larger_than_its_file)
{
	struct evs_welcome w = welcome(4 * RING);
	int fds[EVS_WELCOME_NFDS];

	fake_files(fds, RING, true);

	write_identity(fds[EVS_WELCOME_CTL_FD], 4 * RING, 1);
	ck_assert_int_eq(connect_fake("short", &w, fds, EVS_WELCOME_NFDS), EBADMSG);
}
END_TEST

START_TEST(test_consumer_refuses_bad_identity)
{
	struct evs_welcome w = welcome(RING);
	int fds[EVS_WELCOME_NFDS];

	fake_files(fds, RING, true);

	write_identity(fds[EVS_WELCOME_CTL_FD], RING, 0);
	ck_assert_int_eq(connect_fake("ident", &w, fds, EVS_WELCOME_NFDS), EBADMSG);
}
END_TEST

START_TEST(test_consumer_refuses_odd_page_size)
{
	struct evs_welcome w = welcome(RING);
	int fds[EVS_WELCOME_NFDS];

	fake_files(fds, RING, true);

	w.page_size = 12345;
	write_identity(fds[EVS_WELCOME_CTL_FD], RING, 1);
	ck_assert_int_eq(connect_fake("pgsz", &w, fds, EVS_WELCOME_NFDS), EBADMSG);
}
END_TEST

/* A producer hands a blocking eventfd: the consumer's reads of it never
 * wait on the flag, so wait() returns after its timeout (it read()
 * for ever in prepare_wait before). */
START_TEST(test_consumer_wait_keeps_its_timeout_on_a_blocking_eventfd)
{
	const char *name = evs_test_name("blockefd");
	struct evs_welcome w = welcome(RING);
	int fds[EVS_WELCOME_NFDS];
	struct evs_consumer *c;
	pid_t pid;

	fake_files(fds, RING, true);
	write_identity(fds[EVS_WELCOME_CTL_FD], RING, 1);
	pid = fake_producer(name, &w, sizeof(w), fds, EVS_WELCOME_NFDS);
	for (int i = 0; i < EVS_WELCOME_NFDS; i++)
		close(fds[i]);
	c = evs_consumer__connect(name, 0, NULL);
	ck_assert_msg(c, "connect: %s", evs_errmsg());
	assert_wait_keeps_its_timeout(c);
	evs_consumer__free(c);
	reap_fake(name, pid);
}
END_TEST

static int connect_named(void *name)
{
	struct evs_consumer *c = evs_consumer__connect(name, 0, NULL);
	struct pollfd pfd;
	int err;

	if (!c)
		return -errno;
	/* the record there makes the fd readable */
	pfd = (struct pollfd){ .fd = evs_consumer__fd(c), .events = POLLIN };
	err = poll(&pfd, 1, 0) == 1 ? 0 : -ENODATA;
	evs_consumer__free(c);
	return err;
}

/* A producer hands a blocking eventfd whose counter is full, with a record
 * pending and the wait word armed: the consumer takes its arm back and
 * would kick the eventfd itself, and that write must not wait (connect
 * never returned before). The full counter keeps the fd readable. */
START_TEST(test_consumer_connect_does_not_wait_on_a_full_blocking_eventfd)
{
	const char *name = evs_test_name("fullefd");
	struct evs_welcome w = welcome(RING);
	int fds[EVS_WELCOME_NFDS];
	uint64_t full = 0xfffffffffffffffeULL;
	struct evs_shm_prod *prod;
	struct evs_shm_cons *cons;
	struct bounded r;
	pid_t pid;

	fake_files(fds, RING, true);
	write_identity(fds[EVS_WELCOME_CTL_FD], RING, 1);
	prod = mmap(NULL, EVS_CTL_PAGE, PROT_READ | PROT_WRITE, MAP_SHARED,
		    fds[EVS_WELCOME_CTL_FD], 0);
	ck_assert_ptr_ne(prod, MAP_FAILED);
	cons = mmap(NULL, EVS_CTL_PAGE, PROT_READ | PROT_WRITE, MAP_SHARED,
		    fds[EVS_WELCOME_CONS_FD], 0);
	ck_assert_ptr_ne(cons, MAP_FAILED);
	WRITE_ONCE(&prod->prod_pos, evs_record_len(0)); /* one empty record */
	WRITE_ONCE(&cons->wait, EVS_WAIT_ARMED);
	munmap(prod, EVS_CTL_PAGE);
	munmap(cons, EVS_CTL_PAGE);
	ck_assert_int_eq(write(fds[EVS_WELCOME_EVENT_FD], &full, sizeof(full)), (ssize_t)sizeof(full));
	pid = fake_producer(name, &w, sizeof(w), fds, EVS_WELCOME_NFDS);
	for (int i = 0; i < EVS_WELCOME_NFDS; i++)
		close(fds[i]);
	r = run_bounded(connect_named, (void *)name, 3);
	ck_assert_msg(r.ret == 0, "connect: %s", strerror(-r.ret));
	reap_fake(name, pid);
}
END_TEST

/* What a producer hands as the stream's eventfd must be one: a pipe is
 * refused at connect, and the message names what came. */
START_TEST(test_consumer_refuses_a_pipe_for_its_eventfd)
{
	struct evs_welcome w = welcome(RING);
	int p[2], fds[EVS_WELCOME_NFDS];

	ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
	fake_files(fds, RING, true);
	close(fds[EVS_WELCOME_EVENT_FD]);
	fds[EVS_WELCOME_EVENT_FD] = p[0];
	write_identity(fds[EVS_WELCOME_CTL_FD], RING, 1);
	ck_assert_int_eq(connect_fake("pipeefd", &w, fds, EVS_WELCOME_NFDS), EPROTO);
	ck_assert_msg(strstr(evs_errmsg(), "pipe:["), "message: %s", evs_errmsg());
	close(p[1]);
}
END_TEST

/* A semaphore eventfd takes 1 from its count per read: one write of a
 * large count by the producer would keep it readable, and every wait of
 * the consumer would return at once. Refused at connect, by name. */
START_TEST(test_consumer_refuses_a_semaphore_eventfd)
{
	struct evs_welcome w = welcome(RING);
	int fds[EVS_WELCOME_NFDS];
	char info[64];
	FILE *f;
	bool said = false;

	fake_files(fds, RING, true);
	close(fds[EVS_WELCOME_EVENT_FD]);
	fds[EVS_WELCOME_EVENT_FD] = eventfd(0, EFD_CLOEXEC | EFD_SEMAPHORE);
	ck_assert_int_ge(fds[EVS_WELCOME_EVENT_FD], 0);
	snprintf(info, sizeof(info), "/proc/self/fdinfo/%d", fds[EVS_WELCOME_EVENT_FD]);
	f = fopen(info, "r");
	ck_assert_ptr_nonnull(f);
	while (fgets(info, sizeof(info), f))
		said |= strncmp(info, "eventfd-semaphore:", 18) == 0;
	fclose(f);
	if (!said) {
		for (int i = 0; i < EVS_WELCOME_NFDS; i++)
			close(fds[i]);
		fprintf(stderr, "SKIP test_consumer_refuses_a_semaphore_eventfd: this kernel's fdinfo "
			"does not say eventfd-semaphore (Linux 6.4 on)\n");
		return;
	}
	write_identity(fds[EVS_WELCOME_CTL_FD], RING, 1);
	ck_assert_int_eq(connect_fake("semefd", &w, fds, EVS_WELCOME_NFDS), EPROTO);
	ck_assert_msg(strstr(evs_errmsg(), "semaphore"), "message: %s", evs_errmsg());
}
END_TEST

START_TEST(test_consumer_refuses_a_regular_file_for_its_eventfd)
{
	struct evs_welcome w = welcome(RING);
	int fds[EVS_WELCOME_NFDS];

	fake_files(fds, RING, true);
	close(fds[EVS_WELCOME_EVENT_FD]);
	fds[EVS_WELCOME_EVENT_FD] = open("/tmp", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	ck_assert_int_ge(fds[EVS_WELCOME_EVENT_FD], 0);
	write_identity(fds[EVS_WELCOME_CTL_FD], RING, 1);
	ck_assert_int_eq(connect_fake("fileefd", &w, fds, EVS_WELCOME_NFDS), EPROTO);
	ck_assert_msg(strstr(evs_errmsg(), "/tmp/"), "message: %s", evs_errmsg());
}
END_TEST

START_TEST(test_consumer_closes_surplus_fds_of_a_welcome)
{
	struct evs_welcome w = welcome(RING);
	int fds[6];

	for (int i = 0; i < 6; i++)
		fds[i] = eventfd(0, EFD_CLOEXEC);
	ck_assert_int_ne(connect_fake("surplus", &w, fds, 6), 0);
}
END_TEST

START_TEST(test_consumer_refuses_welcome_without_fds)
{
	struct evs_welcome w = welcome(RING);

	ck_assert_int_eq(connect_fake("nofds", &w, NULL, 0), EPROTO);
}
END_TEST

/* A producer that dies between the hello and its welcome is a hang-up,
 * said as one, not a malformed message. */
START_TEST(test_consumer_names_a_producer_hanging_up_mid_handshake)
{
	struct evs_welcome w = welcome(RING);

	ck_assert_int_eq(connect_fake_len("hangup", &w, 0, NULL, 0), ECONNRESET);
	ck_assert_msg(strstr(evs_errmsg(), "hung up during the handshake"), "message: %s",
		      evs_errmsg());
}
END_TEST

START_TEST(test_consumer_refuses_truncated_welcome)
{
	struct evs_welcome w = welcome(RING);

	ck_assert_int_eq(connect_fake_len("halfwelcome", &w, sizeof(w) / 2, NULL, 0), EPROTO);
	ck_assert_msg(strstr(evs_errmsg(), "malformed welcome"), "message: %s", evs_errmsg());
}
END_TEST

/* A producer of another layout major refuses the hello: the consumer says
 * so, naming its ABI, not a bare "Protocol not supported". */
START_TEST(test_consumer_names_an_abi_refusal)
{
	struct evs_welcome w = welcome(RING);

	w.status = -EPROTONOSUPPORT;
	ck_assert_int_eq(connect_fake("abi", &w, NULL, 0), EPROTONOSUPPORT);
	ck_assert_msg(strstr(evs_errmsg(), "shared-memory ABI"), "message: %s", evs_errmsg());
}
END_TEST

/* A listening socket at name's place whose child process answers each
 * connection's hello with status -EAGAIN, as a server with too many
 * connections waiting for their hello does to the one waiting longest.
 * With restore, the first answer is given after the file `restore` names
 * is renamed back over the socket: a real producer's, moved aside. */
static pid_t fake_refuser(const char *name, const char *restore)
{
	struct evs_welcome w = welcome(RING);
	struct sockaddr_un sa;
	int lfd = fake_listen(name, 8, &sa);
	pid_t pid;

	w.status = -EAGAIN;
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct evs_hello h;

		alarm(10); /* never outlive a broken test */
		for (;;) {
			int fd = accept(lfd, NULL, NULL);

			if (fd < 0 || recv(fd, &h, sizeof(h), 0) != sizeof(h))
				_exit(1);
			if (restore && rename(restore, sa.sun_path))
				_exit(2);
			send(fd, &w, sizeof(w), MSG_NOSIGNAL);
			close(fd);
			if (restore)
				_exit(0);
		}
	}
	close(lfd);
	return pid;
}

/* Refused for too many connections waiting, for all of its timeout: the
 * consumer says why, not a bare "Resource temporarily unavailable". */
START_TEST(test_consumer_names_a_refusal_for_too_many_waiting)
{
	EVS_OPTS(evs_consumer_opts, o, .timeout_ms = 300);
	const char *name = evs_test_name("waiting");
	struct evs_consumer *c;
	int status;
	pid_t pid = fake_refuser(name, NULL);

	c = evs_consumer__connect(name, 0, &o);
	ck_assert_ptr_null(c);
	ck_assert_int_eq(errno, EAGAIN);
	ck_assert_msg(strstr(evs_errmsg(), "too many connections were waiting"), "message: %s",
		      evs_errmsg());
	kill(pid, SIGKILL);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
}
END_TEST

/* Refused once (its hello was late, and the server made room for newer
 * connections): the consumer connects again, as it does when the listen
 * queue is full, and gets in. The producer is another process, so that
 * the consumer goes through the socket. */
START_TEST(test_consumer_tries_again_after_a_refusal_for_too_many_waiting)
{
	const char *name = evs_test_name("again");
	char sock[200], aside[200], ok = 0;
	int ready[2], done[2], status;
	struct evs_consumer *c;
	pid_t prod, fake;

	snprintf(sock, sizeof(sock), "%s/%s.sock", getenv("EVSTREAM_RUNTIME_DIR"), name);
	snprintf(aside, sizeof(aside), "%s/%s.aside", getenv("EVSTREAM_RUNTIME_DIR"), name);
	ck_assert_int_eq(pipe(ready), 0);
	ck_assert_int_eq(pipe(done), 0);
	prod = fork();
	ck_assert_int_ge(prod, 0);
	if (prod == 0) {
		EVS_OPTS(evs_producer_opts, po, .ring_bytes = RING, .hugepages = EVS_HUGEPAGES_OFF);
		struct evs_producer *p = evs_producer__new(name, 1, &po);
		char b = p ? 1 : 0;

		alarm(10);
		if (write(ready[1], &b, 1) != 1 || read(done[0], &b, 1) < 0)
			_exit(1);
		evs_producer__free(p);
		_exit(0);
	}
	ck_assert_int_eq(read(ready[0], &ok, 1), 1);
	ck_assert_msg(ok, "the producer did not start");
	ck_assert_int_eq(rename(sock, aside), 0);
	fake = fake_refuser(name, aside);
	c = evs_consumer__connect(name, 0, NULL);
	ck_assert_msg(c, "connect after one refusal: %s", evs_errmsg());
	ck_assert_int_eq(waitpid(fake, &status, 0), fake);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the refusing server failed");
	evs_consumer__free(c);
	ck_assert_int_eq(write(done[1], &ok, 1), 1);
	ck_assert_int_eq(waitpid(prod, &status, 0), prod);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	close(ready[0]), close(ready[1]), close(done[0]), close(done[1]);
}
END_TEST

START_TEST(test_consumer_maps_out_of_range_status_to_eproto)
{
	struct evs_welcome w = welcome(RING);

	w.status = -100000;
	ck_assert_int_eq(connect_fake("status", &w, NULL, 0), EPROTO);
}
END_TEST

/* ------------------------------------------------------------ producer */

/* A consumer position far ahead: the producer keeps its last sane view,
 * so the unreleased first record is never overwritten. */
/* A producer's files are sealed against resizing and further sealing, and
 * against nothing else: F_SEAL_FUTURE_WRITE on the ring left a process
 * killed while it mapped the file stuck in exit_mmap() on Linux 6.18
 * (docs/reliability.md, "Holes are not sealed against"). */
START_TEST(test_producer_seals_files_against_resizing_only)
{
	const int want = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL;
	const struct evs_backing *b = &fx.s->backing;
	const int fds[] = { b->ctl_fd, b->ctl_ro_fd, b->cons_fd, b->data_fd, b->data_ro_fd };

	for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++) {
		int seals = fcntl(fds[i], F_GET_SEALS);

		ck_assert_msg(seals == want, "file %zu (fd %d): seals 0x%x, want 0x%x", i, fds[i],
			      (unsigned int)seals, (unsigned int)want);
	}
}
END_TEST

START_TEST(test_producer_ignores_consumer_position_ahead)
{
	struct evs_stream_stats st = { .sz = sizeof(st) };
	struct evs_event_header first;
	char buf[100] = { 0 };
	int ok = 0;

	emit_n(1, 16);
	memcpy(&first, ring_hdr(0), sizeof(first));
	WRITE_ONCE(&fx.s->cons->cons_pos, 1ULL << 40);
	for (int i = 0; i < 1000; i++)
		ok += evs_producer__emit(fx.p, 0, 1, buf, sizeof(buf)) == 0;
	ck_assert_int_eq(memcmp(&first, ring_hdr(0), sizeof(first)), 0);
	ck_assert_uint_le(80 + (uint64_t)ok * evs_record_len(sizeof(buf)), RING);
	ck_assert_int_eq(evs_producer__stats(fx.p, 0, &st), 0);
	ck_assert_uint_eq(st.produced, st.committed + st.dropped);
	ck_assert_uint_eq(st.dropped_events[EVS_DROP_RING_FULL], 1000 - ok);
}
END_TEST

/* A consumer position going back: the producer does not move back with
 * it, so records it knows were read are reused, never unread ones lost. */
START_TEST(test_producer_ignores_consumer_position_going_back)
{
	uint64_t len = evs_record_len(100), n = RING / len;
	char buf[100] = { 0 };
	int ok = 0;

	emit_n((int)n, 100);
	ck_assert_int_eq(evs_consumer__consume(fx.c, release_all, NULL, 0), (int)n);
	/* the ring looked full: this emit reads the consumer's position */
	ck_assert_int_eq(evs_producer__emit(fx.p, 0, 1, buf, sizeof(buf)), 0);
	ck_assert_uint_eq(fx.s->cons_cache, n * len);
	WRITE_ONCE(&fx.s->cons->cons_pos, 0);
	for (int i = 0; i < 1000; i++)
		ok += evs_producer__emit(fx.p, 0, 1, buf, sizeof(buf)) == 0;
	ck_assert_int_eq(ok, (int)n - 1); /* a ring from the last sane position */
	ck_assert_uint_eq(fx.s->cons_cache, n * len);
}
END_TEST

/* A consumer takes over while a publication is half done: its count is
 * stored, its position not yet (the producer thread preempted between the
 * two stores of stream_publish()). The handover reads that count against
 * the old position, so the next consumer's released count runs one ahead
 * of committed. The producer takes such a count as committed instead of
 * ignoring it: ignored, the event limit stayed shut for good, every emit
 * a ring_full drop into an empty ring. */
START_TEST(test_next_consumer_counting_ahead_after_a_half_seen_publication_still_gets_events)
{
	uint64_t k;

	teardown();
	open_pair(4);
	emit_n(3, 8);
	ck_assert_int_eq(evs_consumer__consume(fx.c, release_all, NULL, 0), 3);
	evs_consumer__free(fx.c);
	fx.c = NULL;
	k = READ_ONCE(&fx.s->prod->committed);
	WRITE_ONCE(&fx.s->prod->committed, k + 1);
	fx.c = evs_consumer__connect(NULL, 0, NULL);
	ck_assert_msg(fx.c, "%s", evs_errmsg());
	WRITE_ONCE(&fx.s->prod->committed, k);
	ck_assert_uint_eq(READ_ONCE(&fx.s->cons->released), k + 1);
	for (int i = 0; i < 20; i++) {
		ck_assert_msg(evs_producer__emit(fx.p, 0, 1, "x", 1) == 0, "emit %d after the handover", i);
		ck_assert_int_eq(evs_consumer__consume(fx.c, release_all, NULL, 0), 1);
	}
}
END_TEST

START_TEST(test_producer_clamps_released_count)
{
	int ok = 0;

	teardown();
	open_pair(4);
	emit_n(4, 8);
	ck_assert_int_eq(evs_consumer__consume(fx.c, release_all, NULL, 0), 4);
	ck_assert_int_eq(evs_producer__emit(fx.p, 0, 1, "x", 1), 0); /* sees released = 4 */
	WRITE_ONCE(&fx.s->cons->released, UINT64_MAX);
	for (int i = 0; i < 100; i++)
		ok += evs_producer__emit(fx.p, 0, 1, "x", 1) == 0;
	ck_assert_int_eq(ok, 3); /* the event limit still holds */
}
END_TEST

START_TEST(test_producer_ignores_garbage_wait_word)
{
	struct evs_stream_stats st = { .sz = sizeof(st) };

	WRITE_ONCE(&fx.s->cons->wait, 0xdeadbeef);
	emit_n(5, 8);
	ck_assert_int_eq(evs_producer__stats(fx.p, 0, &st), 0);
	ck_assert_uint_eq(st.wakeups, 0);
	ck_assert_uint_eq(st.committed, 5);
}
END_TEST

static void on_alarm(int sig)
{
	(void)sig;
	/* the producer blocked: fail loudly instead of hanging the suite */
	static const char msg[] = "producer blocked on a hostile consumer's wakeup fd\n";
	ssize_t n = write(2, msg, sizeof(msg) - 1);

	(void)n;
	_exit(99);
}

/* The consumer clears O_NONBLOCK on its eventfd (the flag lives in the file
 * description it shares with the producer), fills the counter to its limit
 * so that one more write would wait, never reads it, and arms its wait word
 * before every commit: the producer's kicks fail without waiting (the fd is
 * readable anyway), and every emit returns. */
START_TEST(test_hostile_consumer_cannot_block_producer)
{
	struct evs_stream_stats st = { .sz = sizeof(st) };
	int fd = evs_consumer__fd(fx.c);
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	int n = 20000;

	signal(SIGALRM, on_alarm);
	alarm(20);
	signal(SIGPIPE, SIG_IGN);
	ck_assert_int_eq(fcntl(fd, F_SETFL, 0), 0);
	{
		uint64_t v = 0xfffffffffffffffeULL;

		ck_assert_int_eq(write(fd, &v, sizeof(v)), (ssize_t)sizeof(v));
	}
	for (int i = 0; i < n; i++) {
		WRITE_ONCE(&fx.s->cons->wait, EVS_WAIT_ARMED);
		ck_assert_int_eq(evs_producer__emit(fx.p, 0, 1, "x", 1), 0);
		WRITE_ONCE(&fx.s->cons->cons_pos, READ_ONCE(&fx.s->prod->prod_pos));
		WRITE_ONCE(&fx.s->cons->released, (uint64_t)i + 1);
	}
	ck_assert_int_eq(evs_producer__stats(fx.p, 0, &st), 0);
	ck_assert_uint_eq(st.committed, n);
	ck_assert_uint_eq(st.wakeups, 0); /* no kick got through a full counter */
	ck_assert_int_eq(poll(&pfd, 1, 0), 1);
	/* a new consumer of the stream starts clean: the old count is drained
	 * without blocking, though the consumer left the file in blocking mode */
	ck_assert_int_eq(fcntl(fd, F_SETFL, 0), 0);
	evs_consumer__free(fx.c);
	fx.c = evs_consumer__connect(NULL, 0, NULL);
	ck_assert_ptr_nonnull(fx.c);
	alarm(0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("untrusted");
	TCase *tc = evs_tcase("consumer");
	TCase *tf = evs_tcase("fake-producer");
	TCase *tp = evs_tcase("producer");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_consumer_rejects_record_longer_than_published);
	tcase_add_test(tc, test_consumer_rejects_data_size_near_u64_max);
	tcase_add_test(tc, test_consumer_rejects_prod_pos_more_than_a_ring_ahead);
	tcase_add_test(tc, test_consumer_rejects_prod_pos_going_back);
	tcase_add_test(tc, test_consumer_rejects_unaligned_prod_pos);
	tcase_add_test(tc, test_consumer_rejects_truncated_header);
	tcase_add_test(tc, test_consumer_header_copy_is_immune_to_later_writes);
	tcase_add_test(tc, test_consumer_record_never_extends_past_the_mapping);
	tcase_add_test(tc, test_connect_rejects_bad_magic);
	tcase_add_test(tc, test_next_consumer_starts_fresh_after_an_unaligned_position);
	tcase_add_test(tc, test_next_consumer_starts_fresh_after_a_position_ahead);
	tcase_add_test(tc, test_next_consumer_starts_fresh_after_a_position_put_back);
	tcase_add_test(tc, test_next_consumer_is_not_handed_a_record_forged_in_a_payload);
	tcase_add_test(tc, test_next_consumer_is_not_handed_a_record_forged_behind_an_accepted_position);
	tcase_add_test(tc, test_next_consumer_starts_fresh_after_an_accepted_unaligned_position);
	tcase_add_test(tc, test_a_consumer_gone_cannot_release_for_the_next_one);
	tcase_add_test(tc, test_connect_without_a_descriptor_for_its_page_fails_cleanly);
	tcase_add_test(tc, test_next_consumer_inherits_after_a_release_torn_by_a_kill);
	tcase_add_test(tc, test_consumer_wait_ignores_o_nonblock_cleared_by_another_holder);
	suite_add_tcase(s, tc);

	/* a call that hangs is ended by SIGALRM in a child after 3 s */
	tcase_set_timeout(tf, 20);
	tcase_add_test(tf, test_consumer_refuses_unsealed_files);
	tcase_add_test(tf, test_consumer_refuses_ring_larger_than_its_file);
	tcase_add_test(tf, test_consumer_refuses_bad_identity);
	tcase_add_test(tf, test_consumer_refuses_odd_page_size);
	tcase_add_test(tf, test_consumer_wait_keeps_its_timeout_on_a_blocking_eventfd);
	tcase_add_test(tf, test_consumer_connect_does_not_wait_on_a_full_blocking_eventfd);
	tcase_add_test(tf, test_consumer_refuses_a_pipe_for_its_eventfd);
	tcase_add_test(tf, test_consumer_refuses_a_semaphore_eventfd);
	tcase_add_test(tf, test_consumer_refuses_a_regular_file_for_its_eventfd);
	tcase_add_test(tf, test_consumer_closes_surplus_fds_of_a_welcome);
	tcase_add_test(tf, test_consumer_refuses_welcome_without_fds);
	tcase_add_test(tf, test_consumer_names_an_abi_refusal);
	tcase_add_test(tf, test_consumer_names_a_refusal_for_too_many_waiting);
	tcase_add_test(tf, test_consumer_tries_again_after_a_refusal_for_too_many_waiting);
	tcase_add_test(tf, test_consumer_maps_out_of_range_status_to_eproto);
	tcase_add_test(tf, test_consumer_names_a_producer_hanging_up_mid_handshake);
	tcase_add_test(tf, test_consumer_refuses_truncated_welcome);
	suite_add_tcase(s, tf);

	tcase_add_checked_fixture(tp, setup, teardown);
	tcase_set_timeout(tp, 30);
	tcase_add_test(tp, test_producer_seals_files_against_resizing_only);
	tcase_add_test(tp, test_producer_ignores_consumer_position_ahead);
	tcase_add_test(tp, test_producer_ignores_consumer_position_going_back);
	tcase_add_test(tp, test_producer_clamps_released_count);
	tcase_add_test(tp, test_next_consumer_counting_ahead_after_a_half_seen_publication_still_gets_events);
	tcase_add_test(tp, test_producer_ignores_garbage_wait_word);
	tcase_add_test(tp, test_hostile_consumer_cannot_block_producer);
	suite_add_tcase(s, tp);
	return evs_run_suite(s);
}

/* SPDX-License-Identifier: MIT */
/* A running producer's streams followed from one thread (follow.h). */
#include <ctype.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>

#include "cli.h"
#include "follow.h"

#define PROG program_invocation_short_name

static void say_clear(const struct follow *fl)
{
	if (fl->clear_status)
		fl->clear_status(fl->ctx);
}

int follow_parse_cores(const char *arg, unsigned char *set)
{
	const char *s = arg;

	/* an empty list would follow nothing and look like success */
	if (!*s)
		goto bad;
	while (*s) {
		const char *num = s;
		char *end;
		unsigned long a, b;

		/* digits only: strtoul would also take a sign or blanks */
		if (!isdigit((unsigned char)*s))
			goto bad;
		a = b = strtoul(s, &end, 10);
		if (a >= FOLLOW_MAX_CORES)
			goto range;
		s = end;
		if (*s == '-') {
			num = ++s;
			if (!isdigit((unsigned char)*s))
				goto bad;
			b = strtoul(s, &end, 10);
			if (b >= FOLLOW_MAX_CORES)
				goto range;
			if (b < a) {
				fprintf(stderr, "%s: --cores '%s': the range %lu-%lu is reversed (write %lu-%lu); "
					"use a list like 0,2-3\n", PROG, arg, a, b, b, a);
				return -EINVAL;
			}
			s = end;
		}
		for (unsigned long i = a; i <= b; i++)
			set[i] = 1;
		/* a comma comes between two items: "0," is as wrong as ",0" */
		if (*s == ',' && s[1])
			s++;
		else if (*s)
			goto bad;
		continue;
range:
		fprintf(stderr, "%s: --cores '%s': core %.*s is out of range; cores are 0 to %u\n", PROG,
			arg, (int)strspn(num, "0123456789"), num, FOLLOW_MAX_CORES - 1);
		return -ERANGE;
	}
	return 0;
bad:
	fprintf(stderr, "%s: --cores '%s': use a list like 0,2-3\n", PROG, arg);
	return -EINVAL;
}

int follow_add_fd(struct follow *fl, int fd, uint64_t tok)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = tok };

	if (tok >= FOLLOW_TOK_STREAM)
		return -EINVAL; /* it would be taken for a stream's */
	return epoll_ctl(fl->ep, EPOLL_CTL_ADD, fd, &ev) < 0 ? -errno : 0;
}

int follow_open(struct follow *fl)
{
	sigset_t mask;

	fl->ep = fl->sfd = fl->tick_fd = fl->deadline_fd = -1;
	signal(SIGPIPE, SIG_IGN);
	/* From here on signals arrive through the signalfd: while waiting for
	 * the producer (which then gives up cleanly), and in the epoll set,
	 * between records. A hang-up (terminal or ssh closed) stops like
	 * SIGTERM, so what was taken up to there is kept. */
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	fl->sfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
	fl->tick_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	fl->deadline_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	fl->ep = epoll_create1(EPOLL_CLOEXEC);
	fl->s = calloc(FOLLOW_MAX_CORES, sizeof(*fl->s));
	if (fl->sfd < 0 || fl->tick_fd < 0 || fl->deadline_fd < 0 || fl->ep < 0 || !fl->s ||
	    follow_add_fd(fl, fl->sfd, FOLLOW_TOK_SIGNAL) || follow_add_fd(fl, fl->tick_fd, FOLLOW_TOK_TICK) ||
	    follow_add_fd(fl, fl->deadline_fd, FOLLOW_TOK_DEADLINE)) {
		int err = errno ? errno : ENOMEM;

		fprintf(stderr, "%s: setting up epoll: %s\n", PROG, strerror(err));
		return -err;
	}
	return 0;
}

/* ------------------------------------------------------------ connecting */

static int add_stream(struct follow *fl, unsigned int core, struct evs_consumer *c)
{
	struct follow_stream *s = &fl->s[fl->n];
	struct epoll_event ev = { .events = EPOLLIN };
	uint64_t tok = FOLLOW_TOK_STREAM + ((uint64_t)fl->n << 1);

	*s = (struct follow_stream){ .core = core, .c = c, .hup_fd = evs_consumer__hup_fd(c), .runnable = true };
	/* counted now: follow_close() frees it whatever follows */
	fl->n++;
	fl->live++;
	ev.data.u64 = tok;
	if (epoll_ctl(fl->ep, EPOLL_CTL_ADD, evs_consumer__fd(c), &ev) < 0)
		return -errno;
	if (s->hup_fd >= 0) {
		ev.events = EPOLLIN | EPOLLRDHUP;
		ev.data.u64 = tok + 1;
		if (epoll_ctl(fl->ep, EPOLL_CTL_ADD, s->hup_fd, &ev) < 0)
			return -errno;
	}
	return 0;
}

/* The producer is no longer there to connect to: it exited (its socket
 * is gone), died (nobody listens), or hung up during the handshake. */
static bool producer_gone(int err)
{
	return err == ENOENT || err == ECONNREFUSED || err == ECONNRESET || err == EPIPE;
}

int follow_connect(struct follow *fl, const unsigned char *set, bool all, double wait_s,
		   int (*on_stream)(void *ctx, struct follow_stream *s), void *ctx)
{
	for (unsigned int core = 0; core < FOLLOW_MAX_CORES; core++) {
		struct evs_consumer *c;
		uint64_t t0;
		int err;

		if (!all && !set[core])
			continue;
		t0 = cli_now_ns();
		c = cli_connect_or_stop(fl->name, core, core == 0 || !all ? wait_s : 0, false, fl->sfd);
		if (!c) {
			err = errno;
			if (all && err == EINVAL && fl->n)
				break; /* past the producer's last core */
			if (fl->n && producer_gone(err)) {
				/* what it committed on the cores already connected
				 * is in their rings: take it */
				fprintf(stderr, "%s: producer '%s' ended while its cores were being connected "
					"(core %u: %s); %s the %u connected\n", PROG, fl->name, core,
					*evs_errmsg() ? evs_errmsg() : strerror(err), fl->doing, fl->n);
				break;
			}
			if (err == EINTR) {
				struct signalfd_siginfo si = { 0 };
				const char *sig;

				if (read(fl->sfd, &si, sizeof(si)) != sizeof(si))
					si.ssi_signo = 0;
				sig = si.ssi_signo ? sigabbrev_np((int)si.ssi_signo) : NULL;
				fprintf(stderr, "%s: SIG%s while waiting for producer '%s'; nothing was %s\n", PROG,
					sig ? sig : "?", fl->name, fl->done);
				return -EINTR;
			}
			fprintf(stderr, "%s: cannot connect to core %u of producer '%s': %s", PROG, core, fl->name,
				*evs_errmsg() ? evs_errmsg() : strerror(err));
			if (err == ETIMEDOUT)
				fprintf(stderr, " (tried for %.1f s)", (double)(cli_now_ns() - t0) / 1e9);
			fputc('\n', stderr);
			return -err;
		}
		err = add_stream(fl, core, c);
		if (err) {
			fprintf(stderr, "%s: core %u: epoll: %s\n", PROG, core, strerror(-err));
			return err;
		}
		/* it says why it refuses */
		if (on_stream && (err = on_stream(ctx, &fl->s[fl->n - 1])))
			return err;
	}
	return 0;
}

static int arm_timer(int fd, int64_t first_ns, int64_t period_ns)
{
	struct itimerspec it = {
		.it_value = { first_ns / 1000000000, first_ns % 1000000000 },
		.it_interval = { period_ns / 1000000000, period_ns % 1000000000 },
	};

	return timerfd_settime(fd, 0, &it, NULL) < 0 ? -errno : 0;
}

int follow_arm(struct follow *fl, int64_t tick_ns, double seconds)
{
	int err = arm_timer(fl->tick_fd, tick_ns, tick_ns);

	if (!err && seconds > 0)
		err = arm_timer(fl->deadline_fd, (int64_t)(seconds * 1e9), 0);
	if (err)
		fprintf(stderr, "%s: arming timers: %s\n", PROG, strerror(-err));
	return err;
}

/* ------------------------------------------------------------ turns */

uint64_t follow_quota(struct follow *fl, struct follow_stream *s, uint64_t max)
{
	if (!fl->draining)
		return max;
	if (!s->drain_left)
		s->runnable = false;
	return s->drain_left < max ? s->drain_left : max;
}

void follow_took(struct follow *fl, struct follow_stream *s, uint64_t n)
{
	if (fl->draining)
		s->drain_left -= n;
}

static void stream_stop_watching(struct follow *fl, struct follow_stream *s)
{
	if (s->done)
		return;
	s->done = true;
	s->runnable = false;
	epoll_ctl(fl->ep, EPOLL_CTL_DEL, evs_consumer__fd(s->c), NULL);
	if (s->hup_fd >= 0)
		epoll_ctl(fl->ep, EPOLL_CTL_DEL, s->hup_fd, NULL);
	fl->live--;
}

void follow_end(struct follow *fl, struct follow_stream *s, int err)
{
	struct evs_stream_stats st = { .sz = sizeof(st) };

	if (err == -EPIPE) {
		s->died = !evs_consumer__stats(s->c, &st) && st.producer_died;
	} else {
		say_clear(fl);
		/* the library's sentence names the core and what was corrupt */
		if (err == -EBADMSG)
			fprintf(stderr, "%s: %s\n", PROG, evs_errmsg());
		else
			fprintf(stderr, "%s: core %u: stream broken: %s\n", PROG, s->core, evs_strerror(err));
		s->broken = true;
	}
	stream_stop_watching(fl, s);
}

bool follow_empty(struct follow *fl, struct follow_stream *s)
{
	int err;

	if (fl->draining) {
		/* what the ring held when the stop came is taken */
		s->runnable = false;
		return false;
	}
	/* polls the producer's socket too: a hang-up gives -EPIPE once the
	 * ring is drained */
	err = evs_consumer__prepare_wait(s->c);
	if (err == -EAGAIN)
		return true;
	if (err)
		follow_end(fl, s, err);
	else
		s->runnable = false; /* asleep until the eventfd fires */
	return false;
}

void follow_start_draining(struct follow *fl)
{
	if (fl->draining)
		return;
	fl->draining = true;
	for (unsigned int i = 0; i < fl->n; i++) {
		struct evs_stream_stats st = { .sz = sizeof(st) };
		struct follow_stream *s = &fl->s[i];

		if (s->done)
			continue;
		s->drain_left = evs_consumer__stats(s->c, &st) ? 0 : st.committed - st.released;
		s->runnable = true;
	}
}

bool follow_drained(const struct follow *fl)
{
	for (unsigned int i = 0; i < fl->n; i++)
		if (!fl->s[i].done && fl->s[i].runnable)
			return false;
	return true;
}

void follow_ack(int fd)
{
	char buf[256];

	while (read(fd, buf, sizeof(buf)) > 0)
		;
}

static void handle_signals(struct follow *fl)
{
	struct signalfd_siginfo si;

	while (read(fl->sfd, &si, sizeof(si)) == sizeof(si)) {
		if (++fl->signals > 1)
			fl->stop_now = true; /* asked twice: stop without draining */
		follow_start_draining(fl);
	}
}

int follow_poll(struct follow *fl, int timeout_ms, void (*on_token)(void *ctx, uint64_t tok), void *ctx)
{
	struct epoll_event evs[64];
	int n = epoll_wait(fl->ep, evs, 64, timeout_ms);

	if (n < 0)
		return errno == EINTR ? 0 : -errno;
	for (int i = 0; i < n; i++) {
		uint64_t tok = evs[i].data.u64;
		struct follow_stream *s;

		if (tok == FOLLOW_TOK_SIGNAL) {
			handle_signals(fl);
		} else if (tok == FOLLOW_TOK_DEADLINE) {
			follow_ack(fl->deadline_fd);
			follow_start_draining(fl);
		} else if (tok < FOLLOW_TOK_STREAM) {
			if (tok == FOLLOW_TOK_TICK)
				follow_ack(fl->tick_fd);
			if (on_token)
				on_token(ctx, tok);
		} else {
			s = &fl->s[(tok - FOLLOW_TOK_STREAM) >> 1];
			if (s->done)
				continue;
			if ((tok - FOLLOW_TOK_STREAM) & 1) {
				/* the producer went away: stop watching (it stays
				 * readable); the next turn then meets -EPIPE */
				epoll_ctl(fl->ep, EPOLL_CTL_DEL, s->hup_fd, NULL);
				s->hup_fd = -1;
			}
			if (!fl->draining)
				s->runnable = true;
		}
	}
	return n;
}

/* ------------------------------------------------------------ the end */

int follow_report_end(const struct follow *fl, bool say_closed)
{
	unsigned int died = 0, ended = 0;

	for (unsigned int i = 0; i < fl->n; i++) {
		died += fl->s[i].died;
		/* a broken stream ended too, but not closed by its producer */
		ended += fl->s[i].done && !fl->s[i].broken;
	}
	if (died) {
		fprintf(stderr, "%s: producer '%s' died (hang-up without closing its streams); everything it had "
			"committed was %s\n", PROG, fl->name, fl->took);
		return 3;
	}
	if (say_closed && fl->n && ended == fl->n)
		fprintf(stderr, "%s: producer '%s' closed its streams; everything it committed was %s\n", PROG,
			fl->name, fl->took);
	return 0;
}

bool follow_any_broken(const struct follow *fl)
{
	for (unsigned int i = 0; i < fl->n; i++)
		if (fl->s[i].broken)
			return true;
	return false;
}

void follow_detach(struct follow *fl)
{
	for (unsigned int i = 0; i < fl->n; i++) {
		struct follow_stream *s = &fl->s[i];

		if (!s->c)
			continue;
		if (!s->done) {
			epoll_ctl(fl->ep, EPOLL_CTL_DEL, evs_consumer__fd(s->c), NULL);
			if (s->hup_fd >= 0)
				epoll_ctl(fl->ep, EPOLL_CTL_DEL, s->hup_fd, NULL);
		}
		/* not done: that would say the producer closed it */
		s->runnable = false;
		s->hup_fd = -1;
		evs_consumer__free(s->c);
		s->c = NULL;
	}
}

void follow_close(struct follow *fl)
{
	int fds[] = { fl->ep, fl->sfd, fl->tick_fd, fl->deadline_fd };

	for (unsigned int i = 0; i < fl->n; i++)
		evs_consumer__free(fl->s[i].c);
	fl->n = fl->live = 0;
	for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
		if (fds[i] >= 0)
			close(fds[i]);
	fl->ep = fl->sfd = fl->tick_fd = fl->deadline_fd = -1;
	free(fl->s);
	fl->s = NULL;
}

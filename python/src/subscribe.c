/* SPDX-License-Identifier: MIT */
/*
 * Subscriptions: a background thread reads one core and calls fn(event)
 * for each event.
 *
 * The thread reads the ring without the GIL (the stream is "threaded":
 * its consumer calls take the stream's mutex) and takes the GIL only to
 * make the Event, call fn and drop its references. An exception in fn is
 * handed to evstream._common.report (logging) and the stream goes on.
 *
 * Ending. unsubscribe() asks the thread to stop (an eventfd wakes it) and
 * waits, without the GIL, until it has dropped its Python references;
 * from inside fn it only asks. A Subscription that is garbage collected
 * asks and does not wait. At interpreter exit, _stop_all() (registered
 * with atexit by evstream) stops every live thread before finalization
 * starts, waiting a bounded time: a thread still inside fn afterwards is
 * ended by CPython itself when it next takes the GIL.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/eventfd.h>

#include "evspy.h"
#include "lease.h"

PyTypeObject *evspy_subscription_type;

struct sub {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int refs;               /* the thread, the Python object, waiters (under mu) */
	bool stop;              /* asked to stop (under mu) */
	bool finished;          /* the thread has dropped every Python reference */
	int stop_fd;            /* eventfd: wakes the thread's poll */
	StreamObject *stream;   /* the thread's; touched with the GIL */
	PyObject *fn;
	unsigned int core;
	uint64_t events, errors; /* updated with the GIL */
	int end_err;            /* why the thread ended: 0 asked, -EPIPE producer gone, ... */
	char end_msg[256];      /* and in words, for another error: the library's message */
	struct sub *next, *prev; /* live subscriptions (under reg_mu) */
};

typedef struct {
	PyObject_HEAD
	struct sub *s;
} SubscriptionObject;

static pthread_mutex_t reg_mu = PTHREAD_MUTEX_INITIALIZER;
static struct sub *reg_head;
static bool py_exiting;     /* _stop_all() ran: no thread enters Python anew */
/* The subscription whose thread this is (NULL on every other thread): how
 * unsubscribe() and join() know they were called from inside fn. Not a
 * pthread_t kept from pthread_create: the thread is detached, and once it
 * has ended glibc gives its id to the next thread created, which would
 * then pass for it. */
static __thread struct sub *running_sub;

static void sub_put(struct sub *s)
{
	bool last;

	pthread_mutex_lock(&s->mu);
	last = --s->refs == 0;
	pthread_mutex_unlock(&s->mu);
	if (!last)
		return;
	close(s->stop_fd);
	pthread_cond_destroy(&s->cv);
	pthread_mutex_destroy(&s->mu);
	free(s);
}

static void sub_ask_stop(struct sub *s)
{
	pthread_mutex_lock(&s->mu);
	s->stop = true;
	pthread_mutex_unlock(&s->mu);
	eventfd_write(s->stop_fd, 1);
}

static bool sub_stopping(struct sub *s)
{
	bool stop;

	pthread_mutex_lock(&s->mu);
	stop = s->stop;
	pthread_mutex_unlock(&s->mu);
	return stop;
}

static bool sub_finished(struct sub *s)
{
	bool finished;

	pthread_mutex_lock(&s->mu);
	finished = s->finished;
	pthread_mutex_unlock(&s->mu);
	return finished;
}

static void sub_finish(struct sub *s)
{
	pthread_mutex_lock(&reg_mu);
	if (s->prev)
		s->prev->next = s->next;
	else if (reg_head == s)
		reg_head = s->next;
	if (s->next)
		s->next->prev = s->prev;
	s->next = s->prev = NULL;
	pthread_mutex_unlock(&reg_mu);
	pthread_mutex_lock(&s->mu);
	s->finished = true;
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
	sub_put(s);
}

/* Wait until the thread finished, up to deadline (0: forever); no GIL. */
static bool sub_wait_finished(struct sub *s, double deadline)
{
	bool done;

	pthread_mutex_lock(&s->mu);
	while (!s->finished) {
		if (deadline > 0) {
			struct timespec ts;
			double left = deadline - evspy_now();

			if (left <= 0)
				break;
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_sec += (time_t)left;
			ts.tv_nsec += (long)((left - (double)(time_t)left) * 1e9);
			if (ts.tv_nsec >= 1000000000L) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000L;
			}
			pthread_cond_timedwait(&s->cv, &s->mu, &ts);
		} else {
			pthread_cond_wait(&s->cv, &s->mu);
		}
	}
	done = s->finished;
	pthread_mutex_unlock(&s->mu);
	return done;
}

/* With the GIL: wait like sub_wait_finished(), in slices of 50 ms without
 * the GIL, running signal handlers between them, so that Ctrl-C in the
 * main thread raises KeyboardInterrupt. 1 finished, 0 at the deadline,
 * -1 with an exception set. */
static int sub_wait_finished_py(struct sub *s, double deadline)
{
	for (;;) {
		double slice = evspy_now() + 0.05;
		bool last = deadline > 0 && deadline <= slice, done;

		Py_BEGIN_ALLOW_THREADS
		done = sub_wait_finished(s, last ? deadline : slice);
		Py_END_ALLOW_THREADS
		if (done)
			return 1;
		if (last)
			return 0;
		if (PyErr_CheckSignals() < 0)
			return -1;
	}
}

/* fn raised: hand the exception to report(core, seq, type, value, tb). */
static void sub_report(struct sub *s, uint64_t seq)
{
	PyObject *t, *v, *tb, *r;

	PyErr_Fetch(&t, &v, &tb);
	PyErr_NormalizeException(&t, &v, &tb);
	if (evspy.report) {
		r = PyObject_CallFunction(evspy.report, "IKOOO", s->core, (unsigned long long)seq,
					  t ? t : Py_None, v ? v : Py_None, tb ? tb : Py_None);
		if (r)
			Py_DECREF(r);
		else
			PyErr_WriteUnraisable(s->fn);
	}
	Py_XDECREF(t);
	Py_XDECREF(v);
	Py_XDECREF(tb);
}

/* The stream failed (the error is set): report(core, None, type, value, tb)
 * says the subscription ended, and why. */
static void sub_report_end(struct sub *s)
{
	PyObject *t, *v, *tb, *r;

	PyErr_Fetch(&t, &v, &tb);
	PyErr_NormalizeException(&t, &v, &tb);
	if (evspy.report) {
		r = PyObject_CallFunction(evspy.report, "IOOOO", s->core, Py_None,
					  t ? t : Py_None, v ? v : Py_None, tb ? tb : Py_None);
		if (r)
			Py_DECREF(r);
		else
			PyErr_WriteUnraisable(evspy.report);
	}
	Py_XDECREF(t);
	Py_XDECREF(v);
	Py_XDECREF(tb);
}

/* With the GIL: let go of the stream and fn (the thread's last Python work). */
static void sub_drop_python(struct sub *s)
{
	StreamObject *stream = s->stream;
	PyObject *fn = s->fn;

	s->stream = NULL;
	s->fn = NULL;
	stream->threaded = false; /* no other thread reads it now */
	evspy_stream_shut(stream);
	Py_DECREF(stream);
	Py_DECREF(fn);
}

/* With the GIL: make the event, call fn, end the lease. */
static void sub_deliver(struct sub *s, const struct evs_record *rec, uint64_t ticket)
{
	PyObject *ev = evspy_event_new(s->stream, rec, ticket), *r;

	if (!ev) {
		s->errors++;
		sub_report(s, rec->hdr.seq);
		return;
	}
	s->events++;
	r = PyObject_CallFunctionObjArgs(s->fn, ev, NULL);
	if (r) {
		Py_DECREF(r);
	} else {
		s->errors++;
		sub_report(s, rec->hdr.seq);
	}
	/* the callback's views keep the record; the event itself ends here */
	evspy_event_end((EventObject *)ev);
	Py_DECREF(ev);
}

static int sub_poll(struct sub *s, int timeout_ms, bool ring)
{
	struct pollfd pfd[3];
	int n = 0;

	pfd[n++] = (struct pollfd){ .fd = s->stop_fd, .events = POLLIN };
	if (ring) {
		pfd[n++] = (struct pollfd){ .fd = evs_consumer__fd(s->stream->c), .events = POLLIN };
		if (evs_consumer__hup_fd(s->stream->c) >= 0)
			pfd[n++] = (struct pollfd){ .fd = evs_consumer__hup_fd(s->stream->c), .events = POLLIN };
	}
	return poll(pfd, (nfds_t)n, timeout_ms);
}

static void *sub_main(void *arg)
{
	struct sub *s = arg;
	PyGILState_STATE g;
	PyThreadState *ts;
	int err = 0;

	pthread_mutex_lock(&reg_mu);
	if (py_exiting) {
		/* the interpreter is going: never enter it */
		pthread_mutex_unlock(&reg_mu);
		sub_finish(s);
		return NULL;
	}
	pthread_mutex_unlock(&reg_mu);
	running_sub = s;
	g = PyGILState_Ensure();
	ts = PyEval_SaveThread();
	while (!sub_stopping(s)) {
		struct evs_record rec;
		uint64_t ticket = 0; /* set when the take succeeds (some compilers cannot tell) */
		int r = evspy_lease_take(s->stream, &rec, &ticket);

		if (r == 0) {
			PyEval_RestoreThread(ts);
			sub_deliver(s, &rec, ticket);
			ts = PyEval_SaveThread();
		} else if (r == -EAGAIN) {
			r = evspy_lease_prepare_wait(s->stream);
			if (r == 0)
				sub_poll(s, -1, true);
			else if (r != -EAGAIN && r != -EPIPE) {
				err = r;
				break;
			}
		} else if (r == -ENOBUFS) {
			/* the callback kept views of every record the stream may
			 * hold: wait for some to go (the producer drops meanwhile) */
			sub_poll(s, 10, false);
		} else {
			err = r; /* -EPIPE: the producer has gone, all delivered */
			break;
		}
	}
	PyEval_RestoreThread(ts);
	s->end_err = err;
	if (err && err != -EPIPE) {
		char what[64];

		/* the library's sentence (a corrupt stream: what its producer
		 * wrote wrong), read on this thread, which made the failing call */
		snprintf(s->end_msg, sizeof(s->end_msg), "%s",
			 err == -EBADMSG && *evs_errmsg() ? evs_errmsg() : evs_strerror(err));
		snprintf(what, sizeof(what), "subscription on core %u", s->core);
		evspy_oserror(err, what);
		sub_report_end(s);
	}
	sub_drop_python(s);
	PyGILState_Release(g);
	running_sub = NULL;
	sub_finish(s);
	return NULL;
}

PyObject *evspy_subscribe(PyObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "core", "fn", "producer", "timeout", "runtime_dir", NULL };
	PyObject *core_o, *fn, *producer = Py_None, *rdir = Py_None, *to = NULL;
	double timeout = 2.0;
	unsigned int core;
	SubscriptionObject *obj;
	StreamObject *stream;
	struct sub *s;
	sigset_t all, old;
	int err;

	(void)self;
	if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|OOO:subscribe", kwlist, &core_o, &fn, &producer,
					 &to, &rdir))
		return NULL;
	if (to) {
		timeout = PyFloat_AsDouble(to);
		if (timeout == -1.0 && PyErr_Occurred())
			return NULL;
	}
	if (evspy_parse_core(core_o, &core))
		return NULL;
	if (!PyCallable_Check(fn)) {
		PyErr_Format(PyExc_TypeError, "fn %R is not callable", fn);
		return NULL;
	}
	if (!(timeout >= 0)) {
		PyErr_Format(PyExc_ValueError, "timeout %R: allowed is seconds >= 0", to);
		return NULL;
	}
	pthread_mutex_lock(&reg_mu);
	err = py_exiting;
	pthread_mutex_unlock(&reg_mu);
	if (err) {
		PyErr_SetString(PyExc_RuntimeError, "subscribe: the interpreter is exiting");
		return NULL;
	}
	stream = evspy_stream_open(producer, core, timeout, rdir);
	if (!stream)
		return NULL;
	s = calloc(1, sizeof(*s));
	obj = s ? (SubscriptionObject *)((allocfunc)PyType_GetSlot(evspy_subscription_type, Py_tp_alloc))(
			  evspy_subscription_type, 0)
		: NULL;
	if (!obj) {
		free(s);
		Py_DECREF(stream);
		return PyErr_Occurred() ? NULL : PyErr_NoMemory();
	}
	s->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (s->stop_fd < 0) {
		PyErr_SetFromErrno(PyExc_OSError);
		free(s);
		Py_DECREF(stream);
		Py_DECREF(obj);
		return NULL;
	}
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->cv, NULL);
	s->refs = 2; /* the thread and the object */
	s->stream = stream;
	stream->threaded = true;
	s->fn = Py_NewRef(fn);
	s->core = core;
	obj->s = s;

	pthread_mutex_lock(&reg_mu);
	s->next = reg_head;
	if (reg_head)
		reg_head->prev = s;
	reg_head = s;
	pthread_mutex_unlock(&reg_mu);

	/* signals are for the main thread (Python runs its handlers there) */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	{
		pthread_attr_t attr;
		pthread_t thread;

		pthread_attr_init(&attr);
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		err = pthread_create(&thread, &attr, sub_main, s);
		pthread_attr_destroy(&attr);
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err) {
		/* undo as the thread would have */
		sub_drop_python(s);
		sub_finish(s);
		Py_DECREF(obj);
		errno = err;
		return PyErr_SetFromErrno(PyExc_OSError);
	}
	return (PyObject *)obj;
}

static PyObject *sub_unsubscribe(PyObject *o, PyObject *unused)
{
	struct sub *s = ((SubscriptionObject *)o)->s;

	(void)unused;
	sub_ask_stop(s);
	if (running_sub == s)
		Py_RETURN_NONE; /* from inside fn: the thread stops when fn returns */
	/* Ctrl-C ends the wait, not the stop: the thread was asked */
	if (sub_wait_finished_py(s, 0) < 0)
		return NULL;
	Py_RETURN_NONE;
}

static PyObject *sub_join(PyObject *o, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "timeout", NULL };
	struct sub *s = ((SubscriptionObject *)o)->s;
	PyObject *to = Py_None;
	double deadline = 0;
	int done;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "|O:join", kwlist, &to))
		return NULL;
	if (to != Py_None) {
		int err;
		double t = evspy_timeout(to, 0, &err);

		if (err)
			return NULL;
		deadline = evspy_now() + (t > 0 ? t : 1e-9);
	}
	if (running_sub == s) {
		PyErr_SetString(PyExc_RuntimeError, "join() from inside the subscription's callback");
		return NULL;
	}
	done = sub_wait_finished_py(s, deadline);
	if (done < 0)
		return NULL;
	return PyBool_FromLong(done);
}

static void sub_dealloc(PyObject *o)
{
	SubscriptionObject *self = (SubscriptionObject *)o;
	PyTypeObject *tp = Py_TYPE(o);

	if (self->s) {
		/* garbage collected: ask, do not wait (this may be fn's thread) */
		sub_ask_stop(self->s);
		sub_put(self->s);
	}
	((freefunc)PyType_GetSlot(tp, Py_tp_free))(o);
	Py_DECREF(tp);
}

static PyObject *sub_enter(PyObject *o, PyObject *unused)
{
	(void)unused;
	return Py_NewRef(o);
}

static PyObject *sub_exit(PyObject *o, PyObject *args)
{
	PyObject *r = sub_unsubscribe(o, NULL);

	(void)args;
	if (!r)
		return NULL;
	Py_DECREF(r);
	Py_RETURN_FALSE;
}

static PyObject *sub_get_running(PyObject *o, void *c)
{
	struct sub *s = ((SubscriptionObject *)o)->s;

	(void)c;
	return PyBool_FromLong(!sub_finished(s));
}

static PyObject *sub_get_events(PyObject *o, void *c)
{
	(void)c;
	return PyLong_FromUnsignedLongLong(((SubscriptionObject *)o)->s->events);
}

static PyObject *sub_get_errors(PyObject *o, void *c)
{
	(void)c;
	return PyLong_FromUnsignedLongLong(((SubscriptionObject *)o)->s->errors);
}

static PyObject *sub_get_core(PyObject *o, void *c)
{
	(void)c;
	return PyLong_FromUnsignedLong(((SubscriptionObject *)o)->s->core);
}

static PyObject *sub_get_ended_by(PyObject *o, void *c)
{
	struct sub *s = ((SubscriptionObject *)o)->s;

	(void)c;
	if (!sub_finished(s))
		Py_RETURN_NONE;
	if (s->end_err == 0)
		return PyUnicode_FromString("unsubscribed");
	if (s->end_err == -EPIPE)
		return PyUnicode_FromString("producer gone");
	return PyUnicode_DecodeUTF8(s->end_msg, (Py_ssize_t)strlen(s->end_msg), "replace");
}

static PyObject *sub_get_stats(PyObject *o, void *c)
{
	struct sub *s = ((SubscriptionObject *)o)->s;
	struct evs_stream_stats st = { .sz = sizeof(st) };
	int r;

	(void)c;
	/* the thread drops the stream with the GIL held, as we hold it */
	if (!s->stream || !s->stream->c) {
		PyErr_SetString(PyExc_ValueError, "the subscription has ended");
		return NULL;
	}
	r = evs_consumer__stats(s->stream->c, &st);
	if (r)
		return evspy_oserror(r, "stats");
	return evspy_stats(&st);
}

static PyObject *sub_repr(PyObject *o)
{
	struct sub *s = ((SubscriptionObject *)o)->s;

	return PyUnicode_FromFormat("<evstream.Subscription core=%u events=%llu errors=%llu%s>", s->core,
				    (unsigned long long)s->events, (unsigned long long)s->errors,
				    sub_finished(s) ? " ended" : "");
}

static PyGetSetDef sub_getset[] = {
	{ "running", sub_get_running, NULL, "the thread is still delivering", NULL },
	{ "events", sub_get_events, NULL, "events handed to fn", NULL },
	{ "errors", sub_get_errors, NULL, "calls of fn that raised", NULL },
	{ "core", sub_get_core, NULL, "the core subscribed to", NULL },
	{ "ended_by", sub_get_ended_by, NULL,
	  "None while running; 'unsubscribed', 'producer gone' or the error", NULL },
	{ "stats", sub_get_stats, NULL, "the stream's counters (Stats)", NULL },
	{ NULL, NULL, NULL, NULL, NULL },
};

static PyMethodDef sub_methods[] = {
	{ "unsubscribe", sub_unsubscribe, METH_NOARGS,
	  "Stop; wait until the thread has let go (from inside fn: only ask)." },
	{ "join", (PyCFunction)(void (*)(void))sub_join, METH_VARARGS | METH_KEYWORDS,
	  "join(timeout=None) -> True once the thread has ended (e.g. the producer has gone)" },
	{ "__enter__", sub_enter, METH_NOARGS, NULL },
	{ "__exit__", sub_exit, METH_VARARGS, NULL },
	{ NULL, NULL, 0, NULL },
};

static PyType_Slot sub_slots[] = {
	{ Py_tp_dealloc, sub_dealloc },
	{ Py_tp_repr, sub_repr },
	{ Py_tp_getset, sub_getset },
	{ Py_tp_methods, sub_methods },
	{ Py_tp_doc, "A callback subscription (evstream.subscribe()); dropping it stops it." },
	{ 0, NULL },
};

static PyType_Spec sub_spec = {
	.name = "evstream._native.Subscription",
	.basicsize = sizeof(SubscriptionObject),
	.flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_DISALLOW_INSTANTIATION | Py_TPFLAGS_IMMUTABLETYPE,
	.slots = sub_slots,
};

/* _stop_all(timeout): at interpreter exit, stop every live subscription and
 * wait up to timeout seconds for their threads to let go of Python. */
PyObject *evspy_stop_all(PyObject *self, PyObject *args)
{
	double timeout = 2.0, deadline;
	struct sub **live = NULL;
	size_t n = 0, cap = 0;

	(void)self;
	if (!PyArg_ParseTuple(args, "|d:_stop_all", &timeout))
		return NULL;
	pthread_mutex_lock(&reg_mu);
	py_exiting = true;
	for (struct sub *s = reg_head; s; s = s->next) {
		if (n == cap) {
			struct sub **nl = realloc(live, (cap = cap ? cap * 2 : 16) * sizeof(*live));

			if (!nl)
				break;
			live = nl;
		}
		pthread_mutex_lock(&s->mu);
		s->refs++;
		pthread_mutex_unlock(&s->mu);
		live[n++] = s;
	}
	pthread_mutex_unlock(&reg_mu);
	for (size_t i = 0; i < n; i++)
		sub_ask_stop(live[i]);
	deadline = evspy_now() + timeout;
	Py_BEGIN_ALLOW_THREADS
	for (size_t i = 0; i < n; i++)
		sub_wait_finished(live[i], deadline);
	Py_END_ALLOW_THREADS
	for (size_t i = 0; i < n; i++)
		sub_put(live[i]);
	free(live);
	Py_RETURN_NONE;
}

int evspy_subscription_types(PyObject *m)
{
	evspy_subscription_type = (PyTypeObject *)PyType_FromModuleAndSpec(m, &sub_spec, NULL);
	if (!evspy_subscription_type ||
	    PyModule_AddObjectRef(m, "Subscription", (PyObject *)evspy_subscription_type))
		return -1;
	return 0;
}

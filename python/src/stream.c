/* SPDX-License-Identifier: MIT */
/*
 * Stream: a consumer of one core, handing out Events (event.c) whose
 * records it holds as leases (lease.c).
 *
 * Threads. Every consumer call is made with the GIL held, except by a
 * subscription's thread, which reads without it: streams it reads are
 * "threaded" and every consumer call on them takes the stream's mutex
 * (lease.c). Waiting (poll) is done without the GIL and without touching
 * the consumer.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>

#include "evspy.h"
#include "lease.h"

PyTypeObject *evspy_stream_type;

#define WINDOW EVSPY_WINDOW

static int stream_check(StreamObject *s)
{
	if (s->closed || !s->c) {
		PyErr_SetString(PyExc_ValueError, "I/O operation on a closed evstream stream");
		return -1;
	}
	return 0;
}

/* Wait until records may be pending. 0; -ETIMEDOUT; -EPIPE; -ECANCELED
 * the stream was closed meanwhile (by another thread, or a signal
 * handler); another -errno; or -EINTR with a Python exception set (a
 * signal handler raised). timeout < 0: forever.
 *
 * close() from another thread while this waits: it writes wake_fd, which
 * the poll watches too, and leaves the consumer to this read (waiting),
 * which lets it go when it wakes. */
static int stream_wait(StreamObject *s, double timeout)
{
	double deadline = timeout >= 0 ? evspy_now() + timeout : 0;

	for (;;) {
		struct pollfd pfd[3];
		int r, n, ms, err;

		if (s->closed)
			return -ECANCELED;
		r = evspy_lease_prepare_wait(s);
		if (r == -EAGAIN)
			return 0;
		if (r)
			return r;
		ms = -1;
		if (timeout >= 0) {
			double left = deadline - evspy_now();

			if (left <= 0)
				return -ETIMEDOUT;
			ms = evspy_ms(left);
			if (ms < INT_MAX)
				ms++;
		}
		pfd[0] = (struct pollfd){ .fd = s->wake_fd, .events = POLLIN };
		pfd[1] = (struct pollfd){ .fd = evs_consumer__fd(s->c), .events = POLLIN };
		pfd[2] = (struct pollfd){ .fd = evs_consumer__hup_fd(s->c), .events = POLLIN };
		s->waiting++;
		Py_BEGIN_ALLOW_THREADS
		n = poll(pfd, pfd[2].fd >= 0 ? 3 : 2, ms);
		err = errno;
		Py_END_ALLOW_THREADS
		s->waiting--;
		if (s->closed) {
			evspy_lease_maybe_free(s);
			return -ECANCELED;
		}
		if (n < 0 && err == EINTR) {
			if (PyErr_CheckSignals() < 0)
				return -EINTR;
			continue;
		}
		if (n < 0)
			return -err;
		if (n > 0)
			return 0;
	}
}

enum { NEXT_ERR = -1, NEXT_NONE = 0, NEXT_EVENT = 1, NEXT_END = 2, NEXT_FULL = 3 };

static PyObject *held_error(StreamObject *s)
{
	if (WINDOW == 1)
		PyErr_Format(evspy.held_error ? evspy.held_error : PyExc_BufferError,
			     "core %u: the last event read is still held (a view of it is alive); "
			     "this libevstream holds one record at a time: copy what you keep "
			     "(ev.copy(), np.array(ev.array()))", s->core);
	else
		PyErr_Format(evspy.held_error ? evspy.held_error : PyExc_BufferError,
			     "core %u: %d records are held by events or views still alive, the most a "
			     "stream may hold; release events or drop their views, or copy what you "
			     "keep", s->core, WINDOW);
	return NULL;
}

/* The next event within timeout (< 0: forever; 0: none waiting). */
static int stream_next(StreamObject *s, double timeout, PyObject **out)
{
	double deadline = timeout > 0 ? evspy_now() + timeout : 0;
	const char *what;
	char buf[64];
	int r;

	for (;;) {
		struct evs_record rec;
		uint64_t ticket = 0; /* set when the take succeeds (some compilers cannot tell) */
		double left;

		/* also after each wait: closed meanwhile (another thread, a
		 * signal handler) is the closed stream's ValueError */
		if (stream_check(s))
			return NEXT_ERR;
		r = evspy_lease_take(s, &rec, &ticket);

		if (r == 0) {
			*out = evspy_event_new(s, &rec, ticket);
			return *out ? NEXT_EVENT : NEXT_ERR;
		}
		if (r == -EPIPE) {
			s->ended = true;
			return NEXT_END;
		}
		if (r == -ENOBUFS)
			return NEXT_FULL;
		if (r != -EAGAIN) {
			what = "reading";
			break;
		}
		left = timeout < 0 ? -1 : timeout == 0 ? 0 : deadline - evspy_now();
		if (timeout >= 0 && left <= 0) {
			/* arm the wakeup so that fileno() fires at the next event */
			r = evspy_lease_prepare_wait(s);
			if (r == -EAGAIN || r == -EPIPE)
				continue;
			if (r == 0)
				return NEXT_NONE;
		} else {
			/* -ETIMEDOUT: one more look, then arm and return */
			r = stream_wait(s, left);
			if (r == 0 || r == -EPIPE || r == -ETIMEDOUT || r == -ECANCELED)
				continue;
			if (r == -EINTR && PyErr_Occurred())
				return NEXT_ERR;
		}
		what = "waiting on";
		break;
	}
	snprintf(buf, sizeof(buf), "%s core %u", what, s->core);
	evspy_oserror(r, buf);
	return NEXT_ERR;
}

static PyObject *end_of_stream(StreamObject *s)
{
	PyErr_Format(evspy.end_of_stream ? evspy.end_of_stream : PyExc_EOFError,
		     "core %u: the producer has gone and every event it committed was read", s->core);
	return NULL;
}

static PyObject *stream_iternext(PyObject *self)
{
	StreamObject *s = (StreamObject *)self;
	PyObject *ev = NULL;
	int r;

	if (s->cur)
		evspy_event_end((EventObject *)s->cur);
	r = stream_next(s, -1, &ev);
	if (r == NEXT_EVENT) {
		s->cur = ev;
		return ev;
	}
	if (r == NEXT_FULL)
		return held_error(s);
	return NULL; /* NEXT_END: StopIteration; NEXT_ERR: the exception */
}

static PyObject *stream_read(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
			     PyObject *kwnames)
{
	static char *kwlist[] = { "timeout", NULL };
	StreamObject *s = (StreamObject *)self;
	PyObject *to = Py_None, *ev = NULL;
	double timeout;
	int err, r;

	PyObject **const out[] = { &to };

	if (!evspy_positional(args, nargs, kwnames, 0, out, 1) &&
	    evspy_parse_call(args, nargs, kwnames, "|O:read", kwlist, &to))
		return NULL;
	timeout = evspy_timeout(to, -1, &err);
	if (err)
		return NULL;
	r = stream_next(s, timeout, &ev);
	switch (r) {
	case NEXT_EVENT: return ev;
	case NEXT_NONE: Py_RETURN_NONE;
	case NEXT_END: return end_of_stream(s);
	case NEXT_FULL: return held_error(s);
	default: return NULL;
	}
}

static PyObject *stream_read_batch(PyObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "n", "timeout", NULL };
	StreamObject *s = (StreamObject *)self;
	PyObject *n_o, *to = NULL, *list, *ev;
	Py_ssize_t n;
	double timeout;
	int err, r;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "O|O:read_batch", kwlist, &n_o, &to))
		return NULL;
	n = PyNumber_AsSsize_t(n_o, NULL); /* an int; past Py_ssize_t: clamped */
	if (n == -1 && PyErr_Occurred())
		return NULL;
	if (n < 1) {
		PyErr_Format(PyExc_ValueError, "read_batch(%R): allowed is n >= 1", n_o);
		return NULL;
	}
	/* not given: 0 (what is there); None: for as long as it takes, as read() */
	timeout = to ? evspy_timeout(to, -1, &err) : 0;
	if (to && err)
		return NULL;
	list = PyList_New(0);
	if (!list)
		return NULL;
	while (PyList_Size(list) < n) {
		ev = NULL;
		r = stream_next(s, PyList_Size(list) ? 0 : timeout, &ev);
		if (r == NEXT_EVENT) {
			int a = PyList_Append(list, ev);

			Py_DECREF(ev);
			if (a < 0)
				goto err;
			continue;
		}
		if (r == NEXT_ERR)
			goto err;
		if (PyList_Size(list))
			break;
		if (r == NEXT_END) {
			end_of_stream(s);
			goto err;
		}
		if (r == NEXT_FULL) {
			held_error(s);
			goto err;
		}
		break;
	}
	return list;
err:
	Py_DECREF(list);
	return NULL;
}

static PyObject *stream_fileno(PyObject *self, PyObject *unused)
{
	StreamObject *s = (StreamObject *)self;

	(void)unused;
	if (stream_check(s))
		return NULL;
	return PyLong_FromLong(s->fd);
}

/* End every lease; the consumer goes once no view holds a record. */
void evspy_stream_shut(StreamObject *s)
{
	PyObject **evs;
	uint64_t n = 0;

	if (s->closed)
		return;
	s->closed = true;
	/* a read waiting in another thread wakes (and frees the consumer) */
	if (s->waiting)
		eventfd_write(s->wake_fd, 1);
	if (!s->c)
		return;
	evs = evspy_lease_events(s, &n);
	/* without memory for the list: the leases end with their events */
	for (uint64_t i = 0; i < n; i++) {
		evspy_event_end((EventObject *)evs[i]);
		Py_DECREF(evs[i]);
	}
	PyMem_Free(evs);
	evspy_lease_maybe_free(s);
}

static PyObject *stream_close(PyObject *self, PyObject *unused)
{
	(void)unused;
	evspy_stream_shut((StreamObject *)self);
	Py_RETURN_NONE;
}

static PyObject *stream_enter(PyObject *self, PyObject *unused)
{
	(void)unused;
	if (stream_check((StreamObject *)self))
		return NULL;
	return Py_NewRef(self);
}

static PyObject *stream_exit(PyObject *self, PyObject *args)
{
	(void)args;
	evspy_stream_shut((StreamObject *)self);
	Py_RETURN_FALSE;
}

static PyObject *stream_get_stats(PyObject *self, void *c)
{
	StreamObject *s = (StreamObject *)self;
	struct evs_stream_stats st = { .sz = sizeof(st) };
	int r;

	(void)c;
	if (stream_check(s))
		return NULL;
	r = evs_consumer__stats(s->c, &st);
	if (r)
		return evspy_oserror(r, "stats");
	return evspy_stats(&st);
}

static PyObject *stream_get_core(PyObject *self, void *c)
{
	(void)c;
	return PyLong_FromUnsignedLong(((StreamObject *)self)->core);
}

static PyObject *stream_get_producer(PyObject *self, void *c)
{
	(void)c;
	return Py_NewRef(((StreamObject *)self)->name);
}

static PyObject *stream_get_held(PyObject *self, void *c)
{
	StreamObject *s = (StreamObject *)self;

	(void)c;
	return PyLong_FromUnsignedLongLong(s->tail - s->head);
}

static PyObject *stream_get_lost(PyObject *self, void *c)
{
	(void)c;
	return PyLong_FromUnsignedLongLong(((StreamObject *)self)->lost);
}

static PyObject *stream_get_ended(PyObject *self, void *c)
{
	(void)c;
	return PyBool_FromLong(((StreamObject *)self)->ended);
}

static PyObject *stream_get_closed(PyObject *self, void *c)
{
	(void)c;
	return PyBool_FromLong(((StreamObject *)self)->closed);
}

static PyObject *stream_get_max_held(PyObject *self, void *c)
{
	(void)self;
	(void)c;
	return PyLong_FromLong(WINDOW);
}

static PyObject *stream_repr(PyObject *self)
{
	StreamObject *s = (StreamObject *)self;

	return PyUnicode_FromFormat("<evstream.Stream producer=%R core=%u%s>", s->name, s->core,
				    s->closed ? " closed" : s->ended ? " ended" : "");
}

static void stream_dealloc(PyObject *self)
{
	StreamObject *s = (StreamObject *)self;
	PyTypeObject *tp = Py_TYPE(self);

	/* every event holds a reference: none is alive, nothing is held */
	evspy_lease_free_consumer(s);
	if (s->wake_fd >= 0)
		close(s->wake_fd);
	free(s->slots);
	Py_XDECREF(s->producer);
	Py_XDECREF(s->name);
	pthread_mutex_destroy(&s->lock);
	PyObject_Free(self);
	Py_DECREF(tp);
}

static PyGetSetDef stream_getset[] = {
	{ "stats", stream_get_stats, NULL, "the stream's counters (Stats)", NULL },
	{ "core", stream_get_core, NULL, "the core this stream reads", NULL },
	{ "producer", stream_get_producer, NULL, "the producer's name (None: this process's first)", NULL },
	{ "held", stream_get_held, NULL, "records held by events or views alive", NULL },
	{ "max_held", stream_get_max_held, NULL, "the most records a stream may hold at once", NULL },
	{ "lost", stream_get_lost, NULL, "events missing between those read (sum of gaps)", NULL },
	{ "ended", stream_get_ended, NULL, "the producer has gone and everything was read", NULL },
	{ "closed", stream_get_closed, NULL, "close() was called", NULL },
	{ NULL, NULL, NULL, NULL, NULL },
};

static PyMethodDef stream_methods[] = {
	{ "read", (PyCFunction)(void (*)(void))stream_read, METH_FASTCALL | METH_KEYWORDS,
	  "read(timeout=None) -> Event, or None when timeout seconds passed (0: do not wait)" },
	{ "read_batch", (PyCFunction)(void (*)(void))stream_read_batch, METH_VARARGS | METH_KEYWORDS,
	  "read_batch(n, timeout=0) -> up to n events, waiting up to timeout for the first" },
	{ "fileno", stream_fileno, METH_NOARGS,
	  "fileno() -> fd readable when events may be pending after a read found none" },
	{ "close", stream_close, METH_NOARGS, "Detach from the core (once no view holds a record)." },
	{ "__enter__", stream_enter, METH_NOARGS, NULL },
	{ "__exit__", stream_exit, METH_VARARGS, NULL },
	{ NULL, NULL, 0, NULL },
};

static PyType_Slot stream_slots[] = {
	{ Py_tp_dealloc, stream_dealloc },
	{ Py_tp_repr, stream_repr },
	{ Py_tp_iter, PyObject_SelfIter },
	{ Py_tp_iternext, stream_iternext },
	{ Py_tp_getset, stream_getset },
	{ Py_tp_methods, stream_methods },
	{ Py_tp_doc, "A consumer of one core's stream (evstream.connect())." },
	{ 0, NULL },
};

static PyType_Spec stream_spec = {
	.name = "evstream._native.Stream",
	.basicsize = sizeof(StreamObject),
	.flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_DISALLOW_INSTANTIATION | Py_TPFLAGS_IMMUTABLETYPE,
	.slots = stream_slots,
};

/* A producer argument: None, a name, or a Producer object (its name). */
static int producer_name(PyObject *producer, const char **name, PyObject **keep, PyObject **name_obj)
{
	*keep = NULL;
	*name = NULL;
	*name_obj = Py_NewRef(Py_None);
	if (producer == Py_None)
		return 0;
	if (PyObject_TypeCheck(producer, evspy_producer_type)) {
		PyObject *n = PyObject_GetAttrString(producer, "name");

		if (!n)
			return -1;
		*keep = Py_NewRef(producer);
		EVSPY_SETREF(*name_obj, n);
		if (n == Py_None)
			return 0;
		*name = evspy_cstr(n, "producer name", NULL);
		return *name ? 0 : -1;
	}
	if (!PyUnicode_Check(producer)) {
		PyErr_Format(PyExc_TypeError,
			     "producer %R: allowed is None, a producer name (str) or a Producer", producer);
		return -1;
	}
	*name = evspy_cstr(producer, "producer", NULL);
	if (!*name)
		return -1;
	EVSPY_SETREF(*name_obj, Py_NewRef(producer));
	return 0;
}

/* Connect, waiting up to timeout seconds for the producer to appear. */
StreamObject *evspy_stream_open(PyObject *producer, unsigned int core, double timeout,
				PyObject *runtime_dir)
{
	const char *name, *rdir = NULL;
	PyObject *keep, *name_obj;
	struct evs_consumer *c = NULL;
	StreamObject *s;
	double deadline = evspy_now() + timeout;
	int err = 0;

	if (evspy_runtime_dir(runtime_dir, &rdir))
		return NULL;
	/* it sets keep and name_obj also when it fails */
	if (producer_name(producer, &name, &keep, &name_obj))
		goto fail;
	for (;;) {
		/* the handshake's timeout: 0 (below 1 ms) is the library's default */
		EVS_OPTS(evs_consumer_opts, o, .runtime_dir = rdir, .timeout_ms = evspy_ms(timeout));
		char msg[1024];

		Py_BEGIN_ALLOW_THREADS
		c = evs_consumer__connect(name, core, &o);
		err = c ? 0 : errno;
		if (!c)
			snprintf(msg, sizeof(msg), "%s", evs_errmsg());
		Py_END_ALLOW_THREADS
		if (c)
			break;
		/* not there yet: look again until the deadline */
		if (err == ENOENT && name && evspy_now() < deadline) {
			int r;

			Py_BEGIN_ALLOW_THREADS
			r = poll(NULL, 0, 20);
			Py_END_ALLOW_THREADS
			(void)r;
			if (PyErr_CheckSignals() < 0)
				goto fail;
			continue;
		}
		evspy_raise_oserror(err, PyUnicode_FromFormat("cannot connect to core %u of %s%s%s: %s", core,
							      name ? "producer '" : "this process's producer",
							      name ? name : "", name ? "'" : "",
							      msg[0] ? msg : evs_strerror(err)));
		goto fail;
	}

	s = PyObject_New(StreamObject, evspy_stream_type);
	if (!s) {
		evs_consumer__free(c);
		goto fail;
	}
	s->c = c;
	s->core = core;
	s->producer = keep;
	s->name = name_obj;
	s->head = s->tail = 0;
	s->slot_cap = 64;
	s->slots = calloc(s->slot_cap, sizeof(*s->slots));
	s->cur = NULL;
	s->next_seq = s->lost = 0;
	s->seen = s->ended = s->closed = s->threaded = false;
	pthread_mutex_init(&s->lock, NULL);
	s->epfd = -1;
	s->fd = evs_consumer__fd(c);
	s->waiting = 0;
	s->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (!s->slots) {
		Py_DECREF(s);
		return (StreamObject *)PyErr_NoMemory();
	}
	if (s->wake_fd < 0) {
		PyErr_SetFromErrno(PyExc_OSError);
		Py_DECREF(s);
		return NULL;
	}
	if (evs_consumer__hup_fd(c) >= 0) {
		/* one fd for select/asyncio: the eventfd or the producer's hang-up */
		struct epoll_event e = { .events = EPOLLIN };

		s->epfd = epoll_create1(EPOLL_CLOEXEC);
		if (s->epfd < 0 ||
		    epoll_ctl(s->epfd, EPOLL_CTL_ADD, evs_consumer__fd(c), &e) < 0 ||
		    epoll_ctl(s->epfd, EPOLL_CTL_ADD, evs_consumer__hup_fd(c), &e) < 0) {
			PyErr_SetFromErrno(PyExc_OSError);
			Py_DECREF(s);
			return NULL;
		}
		s->fd = s->epfd;
	}
	/* arm the wakeup: fileno() is readable once an event arrives */
	evs_consumer__prepare_wait(c);
	return s;
fail:
	Py_XDECREF(keep);
	Py_XDECREF(name_obj);
	return NULL;
}

int evspy_parse_core(PyObject *o, unsigned int *core)
{
	unsigned long long v;
	int r = evspy_int_in(o, 0, 4095, &v);

	if (r < 0)
		return -1;
	if (r > 0) {
		PyErr_Format(PyExc_ValueError, "core %R: allowed is 0 to 4095", o);
		return -1;
	}
	*core = (unsigned int)v;
	return 0;
}

PyObject *evspy_connect(PyObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "producer", "core", "timeout", "runtime_dir", NULL };
	PyObject *producer = Py_None, *core_o = NULL, *to = Py_None, *rdir = Py_None;
	unsigned int core = 0;
	double timeout;
	int err;

	(void)self;
	if (!PyArg_ParseTupleAndKeywords(args, kw, "|OOOO:connect", kwlist, &producer, &core_o, &to, &rdir))
		return NULL;
	if (core_o && evspy_parse_core(core_o, &core))
		return NULL;
	timeout = evspy_timeout(to, 2.0, &err);
	if (err)
		return NULL;
	return (PyObject *)evspy_stream_open(producer, core, timeout, rdir);
}

int evspy_stream_types(PyObject *m)
{
	evspy_stream_type = (PyTypeObject *)PyType_FromModuleAndSpec(m, &stream_spec, NULL);
	if (!evspy_stream_type || PyModule_AddObjectRef(m, "Stream", (PyObject *)evspy_stream_type))
		return -1;
	return 0;
}

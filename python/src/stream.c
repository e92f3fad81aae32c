/* SPDX-License-Identifier: MIT */
/*
 * Stream (a consumer of one core) and Event (one record, leased).
 *
 * Leases. Every record handed out stays in the ring (the library's
 * window: peek_next hands out, release gives back the oldest) until its
 * Event is released (release(), a with block, the next step of an
 * iteration, or the Event's end) and no buffer export of it is alive.
 * Exports are counted in bf_getbuffer/bf_releasebuffer, so a NumPy array
 * (or any view) keeps its record held exactly as long as it lives. The
 * memoryview handed out as Event.data is released when the lease ends, so
 * that using it afterwards raises ValueError instead of reading ring
 * memory the producer may have reused. Records go back in ring order: a
 * lease that ends early waits for the older ones.
 *
 * Threads. Every consumer call is made with the GIL held, except by a
 * subscription's thread, which reads without it: streams it reads are
 * "threaded" and every consumer call on them takes the stream's mutex
 * (never held while calling into Python). Waiting (poll) is done without
 * the GIL and without touching the consumer.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>

#include "evspy.h"

PyTypeObject *evspy_stream_type;
PyTypeObject *evspy_event_type;

#define WINDOW EVSPY_WINDOW

static inline void stream_lock(StreamObject *s)
{
	if (s->threaded)
		pthread_mutex_lock(&s->lock);
}

static inline void stream_unlock(StreamObject *s)
{
	if (s->threaded)
		pthread_mutex_unlock(&s->lock);
}

static void stream_free_consumer(StreamObject *s)
{
	if (!s->c)
		return;
	evs_consumer__free(s->c);
	s->c = NULL;
	if (s->epfd >= 0)
		close(s->epfd);
	s->epfd = -1;
	s->fd = -1;
}

static inline struct evspy_slot *slot_at(StreamObject *s, uint64_t ticket)
{
	return &s->slots[ticket & (s->slot_cap - 1)];
}

/* Give back, oldest first, every record whose lease has ended. Locked. */
static void pump_locked(StreamObject *s)
{
	while (s->head != s->tail && slot_at(s, s->head)->done) {
		evs_consumer__release(s->c);
		s->head++;
	}
}

/* A closed stream lets its consumer go once nothing is held and no read
 * is waiting on its fds (that read frees it when it wakes). */
static void stream_maybe_free(StreamObject *s)
{
	if (s->closed && s->head == s->tail && !s->waiting)
		stream_free_consumer(s);
}

/* Room for one more slot: the ring doubles, up to the window. Locked. */
static int slots_reserve(StreamObject *s)
{
	uint64_t cap = s->slot_cap * 2;
	struct evspy_slot *to;

	if (s->tail - s->head < s->slot_cap)
		return 0;
	if (s->tail - s->head >= WINDOW)
		return -ENOBUFS;
	to = calloc(cap, sizeof(*to));
	if (!to)
		return -ENOMEM;
	for (uint64_t t = s->head; t != s->tail; t++)
		to[t & (cap - 1)] = *slot_at(s, t);
	free(s->slots);
	s->slots = to;
	s->slot_cap = cap;
	return 0;
}

/* The record handed out after the last one (peek_next), into a new slot.
 * 0, or the library's -EAGAIN, -EPIPE, -EBADMSG; -ENOBUFS: window full. */
int evspy_stream_take(StreamObject *s, struct evs_record *rec, uint64_t *ticket)
{
	int r;

	stream_lock(s);
	r = slots_reserve(s);
	if (r == 0)
#if EVSPY_HAVE_PEEK_NEXT
		r = evs_consumer__peek_next(s->c, rec);
#else
		r = evs_consumer__peek(s->c, rec);
#endif
	if (r == 0) {
		struct evspy_slot *slot = slot_at(s, s->tail);

		slot->event = NULL;
		slot->done = false;
		*ticket = s->tail++;
	}
	stream_unlock(s);
	return r;
}

int evspy_stream_prepare_wait(StreamObject *s)
{
	int r;

	stream_lock(s);
	r = evs_consumer__prepare_wait(s->c);
	stream_unlock(s);
	return r;
}

static void slot_attach(StreamObject *s, uint64_t ticket, PyObject *ev)
{
	stream_lock(s);
	slot_at(s, ticket)->event = ev;
	stream_unlock(s);
}

/* A record whose lease ended with no view alive: give back what can go. */
static void slot_done(StreamObject *s, uint64_t ticket)
{
	struct evspy_slot *slot;

	if (!s->c)
		return;
	stream_lock(s);
	slot = slot_at(s, ticket);
	slot->event = NULL;
	slot->done = true;
	pump_locked(s);
	stream_unlock(s);
	stream_maybe_free(s);
}

/* ------------------------------------------------------------ events */

static void event_maybe_done(EventObject *ev)
{
	if (ev->released && !ev->exports && ev->payload) {
		ev->payload = NULL; /* the ring bytes are no longer ours */
		ev->view = NULL;
		slot_done(ev->stream, ev->ticket);
	}
}

/* End the lease: no new views; the memoryview of .data is released (its
 * users get ValueError); the record goes back once no view is alive. */
void evspy_event_end(EventObject *ev)
{
	PyObject *et, *ev_, *tb;

	if (ev->released)
		return;
	ev->released = true;
	if (ev->stream->cur == (PyObject *)ev)
		ev->stream->cur = NULL;
	if (ev->mv) {
		PyObject *ref = ev->mv, *mv = PyWeakref_GetObject(ref);

		ev->mv = NULL;
		if (mv && mv != Py_None) {
			PyObject *r;

			Py_INCREF(mv);
			/* an exception may be propagating (dealloc during unwinding) */
			PyErr_Fetch(&et, &ev_, &tb);
			r = PyObject_CallMethod(mv, "release", NULL);
			if (r)
				Py_DECREF(r);
			/* BufferError: it has exports of its own, which keep the
			 * record held until they go (safe either way) */
			PyErr_Clear();
			PyErr_Restore(et, ev_, tb);
			Py_DECREF(mv);
		}
		Py_DECREF(ref);
	}
	event_maybe_done(ev);
}

static PyObject *lease_error(EventObject *ev)
{
	PyErr_Format(evspy.lease_error ? evspy.lease_error : PyExc_ValueError,
		     "event seq %llu of core %u was released: its data is no longer readable "
		     "(copy it before: ev.copy(), np.array(ev.array()))",
		     (unsigned long long)ev->hdr.seq, ev->stream->core);
	return NULL;
}

/*
 * An Event is made and dropped for every record: the memory of a few
 * dropped ones is kept for the next, which spares PyObject_New() and
 * PyObject_Free() (469 -> 419 instructions an iteration step, callgrind).
 * Events are not tracked by the garbage collector, so memory is all there
 * is to keep; it is touched with the GIL held only.
 */
#define EVENT_SPARES 8
static PyObject *event_spares[EVENT_SPARES];
static int event_nspares;

static EventObject *event_alloc(void)
{
	if (event_nspares)
		return (EventObject *)PyObject_Init(event_spares[--event_nspares], evspy_event_type);
	return PyObject_New(EventObject, evspy_event_type);
}

static void event_free(PyObject *self)
{
	if (event_nspares < EVENT_SPARES)
		event_spares[event_nspares++] = self;
	else
		PyObject_Free(self);
}

void evspy_event_spares_free(void)
{
	while (event_nspares)
		PyObject_Free(event_spares[--event_nspares]);
}

/*
 * Events name few dtypes ("float32", "bfloat16", ...): the str of each is
 * made once and shared by the events of every stream, so an event does not
 * decode it again and array() finds its NumPy dtype by a hash computed
 * once. Names past the table's room (a producer may write any) get a str
 * of their own. Touched with the GIL held only.
 */
#define DTYPE_NAMES 16
static struct {
	char name[EVS_TENSOR_DTYPE_MAX];
	PyObject *str;
} dtype_names[DTYPE_NAMES];
static int n_dtype_names;

static PyObject *dtype_str(const char *name)
{
	PyObject *str;

	for (int i = 0; i < n_dtype_names; i++)
		if (!strcmp(dtype_names[i].name, name))
			return Py_NewRef(dtype_names[i].str);
	str = evspy_str(name);
	if (str && n_dtype_names < DTYPE_NAMES && strlen(name) < EVS_TENSOR_DTYPE_MAX) {
		strcpy(dtype_names[n_dtype_names].name, name);
		dtype_names[n_dtype_names++].str = Py_NewRef(str);
	}
	return str;
}

PyObject *evspy_event_new(StreamObject *s, const struct evs_record *rec, uint64_t ticket)
{
	EventObject *ev = event_alloc();

	if (!ev) {
		slot_done(s, ticket);
		return NULL;
	}
	Py_INCREF((PyObject *)s);
	ev->stream = s;
	ev->ticket = ticket;
	ev->hdr = rec->hdr;
	ev->payload = rec->data;
	ev->view = rec->data;
	ev->view_len = rec->hdr.data_size;
	ev->mv = NULL;
	ev->prefix = ev->dtype = NULL;
	ev->ndim = ev->elem_size = ev->pipe = ev->nc = 0;
	ev->exports = 0;
	ev->released = false;
	ev->kind = KIND_RAW;
	/* events lost just before this one (for the first: its seq) */
	ev->gap = !s->seen ? rec->hdr.seq : rec->hdr.seq > s->next_seq ? rec->hdr.seq - s->next_seq : 0;
	s->lost += ev->gap;
	s->next_seq = rec->hdr.seq + 1;
	s->seen = true;
	slot_attach(s, ticket, (PyObject *)ev);

	if (rec->hdr.type == EVS_EVENT_TENSOR_READ) {
		struct evs_tensor_info info;

		if (evs_tensor_parse(rec->data, rec->hdr.data_size, &info) == 0) {
			ev->kind = info.is_print ? KIND_PRINT : KIND_TENSOR;
			ev->prefix = evspy_str(info.prefix);
			ev->dtype = info.is_print ? NULL : dtype_str(info.dtype);
			if (!ev->prefix || (!info.is_print && !ev->dtype)) {
				Py_DECREF(ev);
				return NULL;
			}
			ev->ndim = info.ndim;
			memcpy(ev->shape, info.shape, sizeof(ev->shape));
			ev->elem_size = info.elem_size;
			ev->pipe = info.pipe;
			ev->nc = info.core;
			ev->view = info.data;
			ev->view_len = info.bytes;
		} else {
			ev->kind = KIND_BAD;
		}
	}
	return (PyObject *)ev;
}

static void event_dealloc(PyObject *self)
{
	EventObject *ev = (EventObject *)self;
	PyTypeObject *tp = Py_TYPE(self);

	/* every view holds a reference: none is alive here */
	evspy_event_end(ev);
	Py_XDECREF(ev->prefix);
	Py_XDECREF(ev->dtype);
	Py_DECREF((PyObject *)ev->stream);
	event_free(self);
	Py_DECREF(tp);
}

static int event_getbuffer(PyObject *self, Py_buffer *view, int flags)
{
	EventObject *ev = (EventObject *)self;

	if (ev->released) {
		lease_error(ev);
		return -1;
	}
	if (PyBuffer_FillInfo(view, self, (void *)ev->view, (Py_ssize_t)ev->view_len, 1, flags) < 0)
		return -1;
	ev->exports++;
	return 0;
}

static void event_releasebuffer(PyObject *self, Py_buffer *view)
{
	EventObject *ev = (EventObject *)self;

	(void)view;
	ev->exports--;
	event_maybe_done(ev);
}

static PyObject *ev_seq(PyObject *self, void *c)
{
	(void)c;
	return PyLong_FromUnsignedLongLong(((EventObject *)self)->hdr.seq);
}

static PyObject *ev_timestamp(PyObject *self, void *c)
{
	(void)c;
	return PyLong_FromUnsignedLongLong(((EventObject *)self)->hdr.timestamp_ns);
}

static PyObject *ev_type(PyObject *self, void *c)
{
	(void)c;
	return PyLong_FromUnsignedLong(((EventObject *)self)->hdr.type);
}

static PyObject *ev_core(PyObject *self, void *c)
{
	(void)c;
	return PyLong_FromUnsignedLong(((EventObject *)self)->stream->core);
}

static PyObject *ev_gap(PyObject *self, void *c)
{
	(void)c;
	return PyLong_FromUnsignedLongLong(((EventObject *)self)->gap);
}

static bool ev_has_tensor_fields(const EventObject *ev)
{
	return ev->kind == KIND_TENSOR || ev->kind == KIND_PRINT;
}

static PyObject *ev_pipe(PyObject *self, void *c)
{
	EventObject *ev = (EventObject *)self;

	(void)c;
	if (!ev_has_tensor_fields(ev))
		Py_RETURN_NONE;
	return PyLong_FromUnsignedLong(ev->pipe);
}

static PyObject *ev_nc(PyObject *self, void *c)
{
	EventObject *ev = (EventObject *)self;

	(void)c;
	if (!ev_has_tensor_fields(ev))
		Py_RETURN_NONE;
	return PyLong_FromUnsignedLong(ev->nc);
}

static PyObject *ev_prefix(PyObject *self, void *c)
{
	EventObject *ev = (EventObject *)self;

	(void)c;
	return Py_NewRef(ev->prefix ? ev->prefix : Py_None);
}

static PyObject *ev_dtype(PyObject *self, void *c)
{
	EventObject *ev = (EventObject *)self;

	(void)c;
	return Py_NewRef(ev->dtype ? ev->dtype : Py_None);
}

static PyObject *ev_shape_tuple(EventObject *ev)
{
	PyObject *t = PyTuple_New(ev->ndim);

	for (uint32_t i = 0; t && i < ev->ndim; i++) {
		PyObject *n = PyLong_FromUnsignedLongLong(ev->shape[i]);

		if (!n || PyTuple_SetItem(t, i, n) < 0) {
			Py_DECREF(t);
			return NULL;
		}
	}
	return t;
}

static PyObject *ev_shape(PyObject *self, void *c)
{
	EventObject *ev = (EventObject *)self;

	(void)c;
	if (ev->kind != KIND_TENSOR)
		Py_RETURN_NONE;
	return ev_shape_tuple(ev);
}

static PyObject *ev_elem_size(PyObject *self, void *c)
{
	EventObject *ev = (EventObject *)self;

	(void)c;
	if (ev->kind != KIND_TENSOR)
		Py_RETURN_NONE;
	return PyLong_FromUnsignedLong(ev->elem_size);
}

static PyObject *ev_nbytes(PyObject *self, void *c)
{
	(void)c;
	return PyLong_FromUnsignedLongLong(((EventObject *)self)->view_len);
}

static PyObject *ev_payload_size(PyObject *self, void *c)
{
	(void)c;
	return PyLong_FromUnsignedLongLong(((EventObject *)self)->hdr.data_size);
}

static const char *const kind_names[] = { "raw", "tensor", "print", "bad" };

static PyObject *ev_kind(PyObject *self, void *c)
{
	(void)c;
	return PyUnicode_FromString(kind_names[((EventObject *)self)->kind]);
}

static PyObject *ev_released(PyObject *self, void *c)
{
	(void)c;
	return PyBool_FromLong(((EventObject *)self)->released);
}

static PyObject *ev_held(PyObject *self, void *c)
{
	(void)c;
	return PyBool_FromLong(((EventObject *)self)->payload != NULL);
}

/* .data: a memoryview of the ring bytes, released when the lease ends. */
static PyObject *ev_data(PyObject *self, void *c)
{
	EventObject *ev = (EventObject *)self;
	PyObject *mv, *ref;

	(void)c;
	if (ev->released)
		return lease_error(ev);
	if (ev->mv) {
		mv = PyWeakref_GetObject(ev->mv);
		if (mv && mv != Py_None)
			return Py_NewRef(mv);
	}
	mv = PyMemoryView_FromObject(self);
	if (!mv)
		return NULL;
	ref = PyWeakref_NewRef(mv, NULL);
	if (!ref) {
		Py_DECREF(mv);
		return NULL;
	}
	EVSPY_SETREF(ev->mv, ref);
	return mv;
}

/*
 * An array's base: it holds one export of its event for as long as it lives,
 * so the record stays held while the array does, as a memoryview would.
 * NumPy's ndarray(shape, dtype, buffer) keeps the object it is given as the
 * array's base and lets go of the buffer it got from it at once (it unwraps
 * a memoryview to what it views): hence an object whose life is the export.
 */
typedef struct {
	PyObject_HEAD
	EventObject *ev;           /* strong */
} ArrayBaseObject;

static PyTypeObject *array_base_type;

static PyObject *array_base_new(EventObject *ev)
{
	ArrayBaseObject *b = PyObject_New(ArrayBaseObject, array_base_type);

	if (!b)
		return NULL;
	Py_INCREF((PyObject *)ev);
	b->ev = ev;
	ev->exports++;
	return (PyObject *)b;
}

static void array_base_dealloc(PyObject *self)
{
	ArrayBaseObject *b = (ArrayBaseObject *)self;
	PyTypeObject *tp = Py_TYPE(self);

	b->ev->exports--;
	event_maybe_done(b->ev);
	Py_DECREF((PyObject *)b->ev);
	PyObject_Free(self);
	Py_DECREF(tp);
}

/* read-only, as the event's own: a writable request is refused */
static int array_base_getbuffer(PyObject *self, Py_buffer *view, int flags)
{
	EventObject *ev = ((ArrayBaseObject *)self)->ev;

	return PyBuffer_FillInfo(view, self, (void *)ev->view, (Py_ssize_t)ev->view_len, 1, flags);
}

static PyType_Slot array_base_slots[] = {
	{ Py_tp_dealloc, array_base_dealloc },
	{ Py_bf_getbuffer, array_base_getbuffer },
	{ Py_tp_doc, "The base of an Event.array(): holds the event's record while the array "
		     "lives." },
	{ 0, NULL },
};

static PyType_Spec array_base_spec = {
	.name = "evstream._native.ArrayBase",
	.basicsize = sizeof(ArrayBaseObject),
	.flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_DISALLOW_INSTANTIATION | Py_TPFLAGS_IMMUTABLETYPE,
	.slots = array_base_slots,
};

/* numpy.ndarray and the numpy.dtype of each known evstream dtype (None: the
 * bytes of an event that is not a tensor), from array_views() at the first
 * array(); kept for the process, like the helpers _bind() keeps. */
static PyObject *view_ndarray, *view_dtypes;

static int array_views_load(void)
{
	PyObject *r, *nd, *dtypes;

	if (view_ndarray)
		return 0;
	r = PyObject_CallObject(evspy.array_views, NULL);
	if (!r)
		return -1;
	if (!PyArg_ParseTuple(r, "OO!:array_views", &nd, &PyDict_Type, &dtypes)) {
		Py_DECREF(r);
		return -1;
	}
	view_ndarray = Py_NewRef(nd);
	view_dtypes = Py_NewRef(dtypes);
	Py_DECREF(r);
	return 0;
}

/*
 * The array of a dtype NumPy knows, made here rather than by make_array():
 * one call to ndarray(shape, dtype, buffer) with a dtype object and a base
 * that holds the lease. NULL without an exception: a case for make_array
 * (an empty buffer, a dtype NumPy lacks).
 */
static PyObject *array_direct(EventObject *ev)
{
	PyObject *dtype, *shape, *base, *a;

	if (!ev->view_len || array_views_load())
		return NULL;
	dtype = PyDict_GetItemWithError(view_dtypes, ev->kind == KIND_TENSOR ? ev->dtype : Py_None);
	if (!dtype)
		return NULL;
	shape = ev->kind == KIND_TENSOR ? ev_shape_tuple(ev)
					: Py_BuildValue("(K)", (unsigned long long)ev->view_len);
	if (!shape)
		return NULL;
	base = array_base_new(ev);
	if (!base) {
		Py_DECREF(shape);
		return NULL;
	}
	a = PyObject_CallFunctionObjArgs(view_ndarray, shape, dtype, base, NULL);
	Py_DECREF(base);
	Py_DECREF(shape);
	return a;
}

static PyObject *ev_array(PyObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "bfloat16", NULL };
	EventObject *ev = (EventObject *)self;
	PyObject *bf16 = Py_None, *shape, *res;

	if ((PyTuple_Size(args) || (kw && PyDict_Size(kw))) &&
	    !PyArg_ParseTupleAndKeywords(args, kw, "|O:array", kwlist, &bf16))
		return NULL;
	if (ev->released)
		return lease_error(ev);
	if (bf16 == Py_None) {
		res = array_direct(ev);
		if (res || PyErr_Occurred())
			return res;
	}
	if (ev->kind == KIND_TENSOR) {
		shape = ev_shape_tuple(ev);
	} else {
		shape = Py_BuildValue("(K)", (unsigned long long)ev->view_len);
	}
	if (!shape)
		return NULL;
	res = PyObject_CallFunction(evspy.make_array, "OOIOO", self,
				    ev->kind == KIND_TENSOR ? ev->dtype : Py_None, ev->elem_size, shape,
				    bf16);
	Py_DECREF(shape);
	return res;
}

static PyObject *ev_copy(PyObject *self, PyObject *unused)
{
	EventObject *ev = (EventObject *)self;
	PyObject *data, *shape, *res;

	(void)unused;
	if (ev->released)
		return lease_error(ev);
	data = PyBytes_FromStringAndSize((const char *)ev->view, (Py_ssize_t)ev->view_len);
	if (!data)
		return NULL;
	shape = ev->kind == KIND_TENSOR ? ev_shape_tuple(ev) : Py_NewRef(Py_None);
	if (!shape) {
		Py_DECREF(data);
		return NULL;
	}
	res = PyObject_CallFunction(evspy.detached, "KKIIKsNOONONNK", (unsigned long long)ev->hdr.seq,
				    (unsigned long long)ev->hdr.timestamp_ns, ev->hdr.type,
				    ev->stream->core, (unsigned long long)ev->gap, kind_names[ev->kind],
				    ev_has_tensor_fields(ev) ? PyLong_FromUnsignedLong(ev->pipe)
							     : Py_NewRef(Py_None),
				    ev->prefix ? ev->prefix : Py_None, ev->dtype ? ev->dtype : Py_None,
				    ev->kind == KIND_TENSOR ? PyLong_FromUnsignedLong(ev->elem_size)
							    : Py_NewRef(Py_None),
				    shape,
				    ev_has_tensor_fields(ev) ? PyLong_FromUnsignedLong(ev->nc)
							     : Py_NewRef(Py_None),
				    data, (unsigned long long)ev->hdr.data_size);
	Py_DECREF(shape);
	return res;
}

static PyObject *ev_release(PyObject *self, PyObject *unused)
{
	(void)unused;
	evspy_event_end((EventObject *)self);
	Py_RETURN_NONE;
}

static PyObject *ev_enter(PyObject *self, PyObject *unused)
{
	(void)unused;
	return Py_NewRef(self);
}

static PyObject *ev_exit(PyObject *self, PyObject *args)
{
	(void)args;
	evspy_event_end((EventObject *)self);
	Py_RETURN_FALSE;
}

static PyObject *ev_repr(PyObject *self)
{
	EventObject *ev = (EventObject *)self;

	if (ev->kind == KIND_TENSOR) {
		PyObject *shape = ev_shape_tuple(ev), *r;

		if (!shape)
			return NULL;
		r = PyUnicode_FromFormat("<evstream.Event core=%u seq=%llu tensor %R %U %R%s>",
					 ev->stream->core, (unsigned long long)ev->hdr.seq, ev->prefix,
					 ev->dtype, shape, ev->released ? " released" : "");
		Py_DECREF(shape);
		return r;
	}
	if (ev->kind == KIND_PRINT)
		return PyUnicode_FromFormat("<evstream.Event core=%u seq=%llu print %R%s>", ev->stream->core,
					    (unsigned long long)ev->hdr.seq, ev->prefix,
					    ev->released ? " released" : "");
	return PyUnicode_FromFormat("<evstream.Event core=%u seq=%llu %s type=%u, %llu bytes%s>",
				    ev->stream->core, (unsigned long long)ev->hdr.seq, kind_names[ev->kind],
				    ev->hdr.type, (unsigned long long)ev->hdr.data_size,
				    ev->released ? " released" : "");
}

static PyGetSetDef event_getset[] = {
	{ "seq", ev_seq, NULL, "the stream's sequence number (counts dropped events too)", NULL },
	{ "timestamp_ns", ev_timestamp, NULL, "CLOCK_MONOTONIC at commit, in the producer", NULL },
	{ "type", ev_type, NULL, "event type (1: tensor read)", NULL },
	{ "core", ev_core, NULL, "the logical core (stream)", NULL },
	{ "gap", ev_gap, NULL, "events lost on this stream just before this one", NULL },
	{ "kind", ev_kind, NULL, "'tensor', 'print', 'raw' (not a tensor read) or 'bad'", NULL },
	{ "pipe", ev_pipe, NULL, "1 stdout, 2 stderr (tensors and prints)", NULL },
	{ "logical_nc_id", ev_nc, NULL, "the core the payload names", NULL },
	{ "prefix", ev_prefix, NULL, "the printed text (tensors and prints)", NULL },
	{ "dtype", ev_dtype, NULL, "the tensor's dtype name", NULL },
	{ "shape", ev_shape, NULL, "the tensor's shape, C order", NULL },
	{ "elem_size", ev_elem_size, NULL, "bytes per element", NULL },
	{ "nbytes", ev_nbytes, NULL, "bytes of data", NULL },
	{ "payload_size", ev_payload_size, NULL, "bytes of the whole payload", NULL },
	{ "data", ev_data, NULL, "memoryview of the data in the ring (released with the lease)", NULL },
	{ "released", ev_released, NULL, "the lease has ended: no new views", NULL },
	{ "held", ev_held, NULL, "the record is still in the ring (lease or views alive)", NULL },
	{ NULL, NULL, NULL, NULL, NULL },
};

static PyMethodDef event_methods[] = {
	{ "array", (PyCFunction)(void (*)(void))ev_array, METH_VARARGS | METH_KEYWORDS,
	  "array(bfloat16=None) -> NumPy array viewing the ring (keeps the record held)" },
	{ "copy", ev_copy, METH_NOARGS, "copy() -> DetachedEvent with the data copied out" },
	{ "release", ev_release, METH_NOARGS, "End the lease (views already made stay valid)." },
	{ "__enter__", ev_enter, METH_NOARGS, NULL },
	{ "__exit__", ev_exit, METH_VARARGS, NULL },
	{ NULL, NULL, 0, NULL },
};

static PyType_Slot event_slots[] = {
	{ Py_tp_dealloc, event_dealloc },
	{ Py_tp_repr, ev_repr },
	{ Py_tp_getset, event_getset },
	{ Py_tp_methods, event_methods },
	{ Py_bf_getbuffer, event_getbuffer },
	{ Py_bf_releasebuffer, event_releasebuffer },
	{ Py_tp_doc, "One event read from a stream: header fields, the parsed tensor, and its "
		     "bytes in the ring, leased (see docs/python.md)." },
	{ 0, NULL },
};

static PyType_Spec event_spec = {
	.name = "evstream._native.Event",
	.basicsize = sizeof(EventObject),
	.flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_DISALLOW_INSTANTIATION | Py_TPFLAGS_IMMUTABLETYPE,
	.slots = event_slots,
};

/* ------------------------------------------------------------ streams */

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
		r = evspy_stream_prepare_wait(s);
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
			stream_maybe_free(s);
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
		uint64_t ticket;
		double left;

		/* also after each wait: closed meanwhile (another thread, a
		 * signal handler) is the closed stream's ValueError */
		if (stream_check(s))
			return NEXT_ERR;
		r = evspy_stream_take(s, &rec, &ticket);

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
			r = evspy_stream_prepare_wait(s);
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

static double parse_timeout(PyObject *o, double dflt, int *err)
{
	double t;

	*err = 0;
	if (!o || o == Py_None)
		return dflt;
	t = PyFloat_AsDouble(o);
	if (t == -1.0 && PyErr_Occurred()) {
		*err = 1;
		return 0;
	}
	if (t < 0 || t != t) {
		PyErr_Format(PyExc_ValueError, "timeout %R: allowed is None or seconds >= 0", o);
		*err = 1;
	}
	return t;
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
	timeout = parse_timeout(to, -1, &err);
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
	timeout = to ? parse_timeout(to, -1, &err) : 0;
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
	evs = PyMem_Malloc((size_t)(s->tail - s->head + 1) * sizeof(*evs));
	stream_lock(s);
	for (uint64_t t = s->head; evs && t != s->tail; t++) {
		PyObject *e = slot_at(s, t)->event;

		if (e) {
			Py_INCREF(e);
			evs[n++] = e;
		}
	}
	stream_unlock(s);
	/* without memory for the list: the leases end with their events */
	for (uint64_t i = 0; i < n; i++) {
		evspy_event_end((EventObject *)evs[i]);
		Py_DECREF(evs[i]);
	}
	PyMem_Free(evs);
	stream_maybe_free(s);
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
	stream_free_consumer(s);
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
		*name = evspy_utf8(n);
		return *name ? 0 : -1;
	}
	if (!PyUnicode_Check(producer)) {
		PyErr_Format(PyExc_TypeError,
			     "producer %R: allowed is None, a producer name (str) or a Producer", producer);
		return -1;
	}
	*name = evspy_utf8(producer);
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
	timeout = parse_timeout(to, 2.0, &err);
	if (err)
		return NULL;
	return (PyObject *)evspy_stream_open(producer, core, timeout, rdir);
}

int evspy_stream_types(PyObject *m)
{
	array_base_type = (PyTypeObject *)PyType_FromModuleAndSpec(m, &array_base_spec, NULL);
	if (!array_base_type)
		return -1;
	evspy_event_type = (PyTypeObject *)PyType_FromModuleAndSpec(m, &event_spec, NULL);
	if (!evspy_event_type || PyModule_AddObjectRef(m, "Event", (PyObject *)evspy_event_type))
		return -1;
	evspy_stream_type = (PyTypeObject *)PyType_FromModuleAndSpec(m, &stream_spec, NULL);
	if (!evspy_stream_type || PyModule_AddObjectRef(m, "Stream", (PyObject *)evspy_stream_type))
		return -1;
	return 0;
}

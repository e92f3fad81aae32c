/* SPDX-License-Identifier: MIT */
/*
 * Event: one record a stream handed out, readable while its lease lasts.
 *
 * A lease ends with release(), a with block, the next step of an
 * iteration, the stream's close or the Event's end; the record goes back
 * (lease.c) once no buffer export of it is alive either. Exports are
 * counted in bf_getbuffer/bf_releasebuffer, so a NumPy array (or any view)
 * keeps its record held exactly as long as it lives. The memoryview handed
 * out as Event.data is released when the lease ends, so that using it
 * afterwards raises ValueError instead of reading ring memory the producer
 * may have reused.
 */
#include <string.h>

#include "evspy.h"
#include "lease.h"

PyTypeObject *evspy_event_type;

static void event_maybe_done(EventObject *ev)
{
	if (ev->released && !ev->exports && ev->payload) {
		ev->payload = NULL; /* the ring bytes are no longer ours */
		ev->view = NULL;
		evspy_lease_done(ev->stream, ev->ticket);
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
		evspy_lease_done(s, ticket);
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
	evspy_lease_attach(s, ticket, (PyObject *)ev);

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

/* The user released the memoryview handed out as .data (mv.release()):
 * it exports nothing any more (ValueError; no attribute says so). */
static bool memoryview_released(PyObject *mv)
{
	Py_buffer b;

	if (PyObject_GetBuffer(mv, &b, PyBUF_SIMPLE) < 0) {
		PyErr_Clear();
		return true;
	}
	PyBuffer_Release(&b);
	return false;
}

/* .data: a memoryview of the ring bytes, released when the lease ends.
 * The same one while it lives, unless its user released it: then a new
 * one (the lease goes on; a released memoryview can read nothing). */
static PyObject *ev_data(PyObject *self, void *c)
{
	EventObject *ev = (EventObject *)self;
	PyObject *mv, *ref;

	(void)c;
	if (ev->released)
		return lease_error(ev);
	if (ev->mv) {
		mv = PyWeakref_GetObject(ev->mv);
		if (mv && mv != Py_None && !memoryview_released(mv))
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

int evspy_event_types(PyObject *m)
{
	array_base_type = (PyTypeObject *)PyType_FromModuleAndSpec(m, &array_base_spec, NULL);
	if (!array_base_type)
		return -1;
	evspy_event_type = (PyTypeObject *)PyType_FromModuleAndSpec(m, &event_spec, NULL);
	if (!evspy_event_type || PyModule_AddObjectRef(m, "Event", (PyObject *)evspy_event_type))
		return -1;
	return 0;
}

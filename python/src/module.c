/* SPDX-License-Identifier: MIT */
/*
 * evstream._native: module functions, the binding of the helpers, the tensor
 * payload parser and the runtime's debug-stream API (nrt_*).
 */
#include <errno.h>
#include <stdlib.h>

#include <nrt/ndebug_stream.h>

#include "evspy.h"

/* _bind(Stats, LeaseError, TooManyHeld, EndOfStream, make_array,
 * array_views, DetachedEvent, report): the Python-level helpers, from
 * evstream._common, in this order. */
static PyObject **const bind_slots[] = {
	&evspy.stats, &evspy.lease_error, &evspy.held_error, &evspy.end_of_stream,
	&evspy.make_array, &evspy.array_views, &evspy.detached, &evspy.report,
};
#define BIND_N ((Py_ssize_t)(sizeof(bind_slots) / sizeof(bind_slots[0])))

static PyObject *mod_bind(PyObject *self, PyObject *args)
{
	(void)self;
	if (PyTuple_Size(args) != BIND_N) {
		PyErr_Format(PyExc_TypeError, "_bind() takes %zd helpers, not %zd", BIND_N,
			     PyTuple_Size(args));
		return NULL;
	}
	for (Py_ssize_t i = 0; i < BIND_N; i++) {
		PyObject *o = PyTuple_GetItem(args, i);

		Py_INCREF(o);
		EVSPY_SETREF(*bind_slots[i], o);
	}
	Py_RETURN_NONE;
}

/* tensor_parse(buffer) -> (kind, prefix, dtype, core, pipe, elem_size,
 * shape, offset, nbytes): the library's reading of a tensor-read payload;
 * kind is "tensor", "print" or "bad" (then the rest is None). */
static PyObject *mod_tensor_parse(PyObject *self, PyObject *arg)
{
	struct evs_tensor_info info;
	Py_buffer b;
	PyObject *shape, *res;
	int err;

	(void)self;
	if (PyObject_GetBuffer(arg, &b, PyBUF_SIMPLE) < 0)
		return NULL;
	err = evs_tensor_parse(b.buf, (uint64_t)b.len, &info);
	if (err) {
		PyBuffer_Release(&b);
		return Py_BuildValue("(sOOOOOOOO)", "bad", Py_None, Py_None, Py_None, Py_None,
				     Py_None, Py_None, Py_None, Py_None);
	}
	shape = PyTuple_New(info.ndim);
	for (uint32_t i = 0; shape && i < info.ndim; i++)
		PyTuple_SetItem(shape, i, PyLong_FromUnsignedLongLong(info.shape[i]));
	if (!shape) {
		PyBuffer_Release(&b);
		return NULL;
	}
	res = Py_BuildValue("(sNNIIINnK)", info.is_print ? "print" : "tensor",
			    evspy_str(info.prefix), info.is_print ? Py_NewRef(Py_None) : evspy_str(info.dtype),
			    info.core, info.pipe, info.elem_size, shape,
			    (Py_ssize_t)((const char *)info.data - (const char *)b.buf),
			    (unsigned long long)info.bytes);
	PyBuffer_Release(&b);
	return res;
}

static PyObject *mod_dtype_size(PyObject *self, PyObject *arg)
{
	const char *s = evspy_cstr(arg, "dtype", NULL);

	(void)self;
	if (!s)
		return NULL;
	return PyLong_FromUnsignedLong(evs_dtype_size(s));
}

static PyObject *mod_strerror(PyObject *self, PyObject *arg)
{
	int err = (int)PyLong_AsLong(arg);

	(void)self;
	if (err == -1 && PyErr_Occurred())
		return NULL;
	return PyUnicode_FromString(evs_strerror(err));
}

/* ------------------------------------------------ the debug-stream API */

/* An int argument (anything with __index__) as an int of the reference API:
 * 0 in range; 1 out of range, *v unset, any size of int (as the fallback
 * takes it); -1 raised (not an int). */
static int nrt_int(PyObject *arg, int *v)
{
	int overflow;
	long l = PyLong_AsLongAndOverflow(arg, &overflow);

	if (l == -1 && !overflow && PyErr_Occurred())
		return -1;
	if (overflow || l < INT32_MIN || l > INT32_MAX)
		return 1;
	*v = (int)l;
	return 0;
}

static PyObject *mod_nrt_connect(PyObject *self, PyObject *arg)
{
	NRT_STATUS st;
	int core, fd = -1, r = nrt_int(arg, &core);

	(void)self;
	if (r < 0)
		return NULL;
	if (r > 0) {
		PyObject *i = PyNumber_Index(arg);

		if (i) {
			PyErr_Format(PyExc_OverflowError, "core %S does not fit the reference API's int", i);
			Py_DECREF(i);
		}
		return NULL;
	}
	Py_BEGIN_ALLOW_THREADS
	st = nrt_debug_client_connect(core, &fd);
	Py_END_ALLOW_THREADS
	return Py_BuildValue("(ii)", (int)st, fd);
}

static PyObject *mod_nrt_read_one_event(PyObject *self, PyObject *arg)
{
	ndebug_stream_event_header_t h;
	void *payload = NULL;
	NRT_STATUS st;
	PyObject *res;
	int fd, r = nrt_int(arg, &fd);

	(void)self;
	if (r < 0)
		return NULL;
	if (r > 0)
		return Py_BuildValue("(iOO)", (int)NRT_INVALID_HANDLE, Py_None, Py_None);
	st = nrt_debug_client_read_one_event(fd, &h, &payload);
	if (st != NRT_SUCCESS)
		return Py_BuildValue("(iOO)", (int)st, Py_None, Py_None);
	res = Py_BuildValue("(iy#y#)", (int)st, (const char *)&h, (Py_ssize_t)sizeof(h),
			    (const char *)payload, (Py_ssize_t)h.data_size);
	free(payload);
	return res;
}

static PyObject *mod_nrt_close(PyObject *self, PyObject *arg)
{
	int fd, r = nrt_int(arg, &fd);

	(void)self;
	if (r < 0)
		return NULL;
	if (r == 0)
		nrt_debug_client_connect_close(fd);
	Py_RETURN_NONE;
}

static PyMethodDef mod_methods[] = {
	{ "_bind", mod_bind, METH_VARARGS, "Bind the Python-level helpers (evstream._common)." },
	{ "connect", (PyCFunction)(void (*)(void))evspy_connect, METH_VARARGS | METH_KEYWORDS,
	  "connect(producer=None, core=0, timeout=2.0, runtime_dir=None) -> Stream" },
	{ "subscribe", (PyCFunction)(void (*)(void))evspy_subscribe, METH_VARARGS | METH_KEYWORDS,
	  "subscribe(core, fn, producer=None, timeout=2.0, runtime_dir=None) -> Subscription" },
	{ "_stop_all", evspy_stop_all, METH_VARARGS,
	  "_stop_all(timeout): stop every live subscription (at interpreter exit)." },
	{ "tensor_parse", mod_tensor_parse, METH_O, "tensor_parse(payload) -> tuple (evs_tensor_parse)" },
	{ "dtype_size", mod_dtype_size, METH_O, "dtype_size(name) -> bytes per element, 0 if unknown" },
	{ "strerror", mod_strerror, METH_O, "strerror(errno) -> its name (evs_strerror)" },
	{ "nrt_connect", mod_nrt_connect, METH_O, "nrt_connect(core) -> (status, fd)" },
	{ "nrt_read_one_event", mod_nrt_read_one_event, METH_O,
	  "nrt_read_one_event(fd) -> (status, header bytes, payload bytes)" },
	{ "nrt_close", mod_nrt_close, METH_O, "nrt_close(fd)" },
	{ NULL, NULL, 0, NULL },
};

static int mod_exec(PyObject *m)
{
	if (evspy_event_types(m) || evspy_stream_types(m) || evspy_producer_types(m) || evspy_subscription_types(m))
		return -1;
	if (PyModule_AddIntConstant(m, "MAX_HELD", EVSPY_WINDOW) ||
	    PyModule_AddIntConstant(m, "HAVE_PEEK_NEXT", EVSPY_HAVE_PEEK_NEXT) ||
	    PyModule_AddIntConstant(m, "EVENT_TENSOR_READ", EVS_EVENT_TENSOR_READ) ||
	    PyModule_AddIntConstant(m, "TENSOR_FIXED_BYTES", EVS_TENSOR_FIXED_BYTES))
		return -1;
	return 0;
}

static void mod_free(void *m)
{
	(void)m;
	evspy_event_spares_free();
}

static PyModuleDef_Slot mod_slots[] = {
	{ Py_mod_exec, (void *)mod_exec },
	{ 0, NULL },
};

static struct PyModuleDef mod_def = {
	PyModuleDef_HEAD_INIT,
	.m_name = "evstream._native",
	.m_doc = "evstream's native binding of the C API (libevstream.so.1).",
	.m_size = 0,
	.m_methods = mod_methods,
	.m_slots = mod_slots,
	.m_free = mod_free,
};

PyMODINIT_FUNC PyInit__native(void)
{
	return PyModuleDef_Init(&mod_def);
}

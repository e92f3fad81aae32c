/* SPDX-License-Identifier: MIT */
/*
 * Producer: evs_producer__new/emit/emit_tensor/flush/stats.
 *
 * Calls are made with the GIL held, so that Python threads sharing a
 * Producer never emit on one stream at the same time (the C API's single
 * producer per stream). Emitting never blocks: a drop returns False and is
 * counted in stats(core).
 */
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <string.h>

#include "evspy.h"

PyTypeObject *evspy_producer_type;

typedef struct {
	PyObject_HEAD
	struct evs_producer *p;
	PyObject *name;     /* str or None */
	unsigned int ncores;
} ProducerObject;

static int producer_check(ProducerObject *self)
{
	if (!self->p) {
		PyErr_SetString(PyExc_ValueError, "operation on a closed evstream Producer");
		return -1;
	}
	return 0;
}

static int producer_core(ProducerObject *self, PyObject *o, unsigned int *core)
{
	unsigned long long v;
	int r = evspy_int_in(o, 0, self->ncores - 1, &v);

	if (r < 0)
		return -1;
	if (r > 0) {
		PyErr_Format(PyExc_ValueError, "core %R: producer %R has cores 0 to %u", o, self->name,
			     self->ncores - 1);
		return -1;
	}
	*core = (unsigned int)v;
	return 0;
}

static PyObject *producer_new(PyTypeObject *tp, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "name", "ncores", "ring_bytes", "max_events", "hugepages",
				  "runtime_dir", "no_timestamps", "allow_gid", NULL };
	PyObject *name = Py_None, *hp = Py_None, *rdir = Py_None, *gid = Py_None;
	PyObject *ncores_o = NULL, *ring_o = NULL, *events_o = NULL;
	unsigned long long ring_bytes = 0, max_events = 0, v = 1;
	unsigned int ncores;
	int no_ts = 0, r;
	ProducerObject *self;
	const char *cname = NULL, *crdir = NULL;
	int hugepages = EVS_HUGEPAGES_DEFAULT;
	long gid_v = 0;
	struct evs_producer *p;
	int err;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "|OO$OOOOpO:Producer", kwlist, &name, &ncores_o,
					 &ring_o, &events_o, &hp, &rdir, &no_ts, &gid))
		return NULL;
	/* sizes named as given (-1, not its unsigned wrap), with their range */
	if (ncores_o && (r = evspy_int_in(ncores_o, 1, 4096, &v))) {
		if (r > 0)
			PyErr_Format(PyExc_ValueError, "ncores %R: allowed is 1 to 4096", ncores_o);
		return NULL;
	}
	ncores = (unsigned int)v;
	if (ring_o && (r = evspy_int_in(ring_o, 0, UINT64_MAX, &ring_bytes))) {
		if (r > 0)
			PyErr_Format(PyExc_ValueError, "ring_bytes %R: " EVSPY_RING_BYTES_RANGE, ring_o);
		return NULL;
	}
	if (events_o && (r = evspy_int_in(events_o, 0, UINT64_MAX, &max_events))) {
		if (r > 0)
			PyErr_Format(PyExc_ValueError, "max_events %R: " EVSPY_MAX_EVENTS_RANGE, events_o);
		return NULL;
	}
	if (name != Py_None) {
		if (!PyUnicode_Check(name)) {
			PyErr_Format(PyExc_TypeError, "name %R: allowed is None or a str", name);
			return NULL;
		}
		cname = evspy_cstr(name, "name", NULL);
		if (!cname)
			return NULL;
	}
	if (hp != Py_None) {
		Py_ssize_t hn = 0;
		const char *h = PyUnicode_Check(hp) ? PyUnicode_AsUTF8AndSize(hp, &hn) : NULL;

		if (h && strlen(h) != (size_t)hn)
			h = NULL; /* 'on\0...' is not 'on' */

		if (h && !strcmp(h, "auto"))
			hugepages = EVS_HUGEPAGES_AUTO;
		else if (h && !strcmp(h, "on"))
			hugepages = EVS_HUGEPAGES_ON;
		else if (h && !strcmp(h, "off"))
			hugepages = EVS_HUGEPAGES_OFF;
		else {
			PyErr_Clear();
			PyErr_Format(PyExc_ValueError, "hugepages %R: allowed is None, 'auto', 'on' or 'off'", hp);
			return NULL;
		}
	}
	if (evspy_runtime_dir(rdir, &crdir))
		return NULL;
	if (gid != Py_None) {
		/* a gid_t; (gid_t)-1 means none */
		if ((r = evspy_int_in(gid, 0, UINT32_MAX - 1, &v))) {
			if (r > 0)
				PyErr_Format(PyExc_ValueError,
					     "allow_gid %R: allowed is None or a group id from 0 to %u", gid,
					     UINT32_MAX - 1);
			return NULL;
		}
		gid_v = (long)v;
	}
	{
		EVS_OPTS(evs_producer_opts, o, .ring_bytes = ring_bytes, .max_events = max_events,
			 .hugepages = hugepages, .runtime_dir = crdir, .no_timestamps = no_ts,
			 .allow_group = gid != Py_None, .allow_gid = (gid_t)gid_v);
		char msg[1024];

		Py_BEGIN_ALLOW_THREADS
		p = evs_producer__new(cname, ncores, &o);
		err = p ? 0 : errno;
		if (!p)
			snprintf(msg, sizeof(msg), "%s", evs_errmsg());
		Py_END_ALLOW_THREADS
		if (!p)
			return evspy_raise_oserror(err, PyUnicode_FromFormat("cannot create producer %R: %s", name,
									     msg[0] ? msg : evs_strerror(err)));
	}
	self = (ProducerObject *)((allocfunc)PyType_GetSlot(tp, Py_tp_alloc))(tp, 0);
	if (!self) {
		evs_producer__free(p);
		return NULL;
	}
	self->p = p;
	self->name = Py_NewRef(name);
	self->ncores = ncores;
	return (PyObject *)self;
}

static PyObject *producer_close(PyObject *o, PyObject *unused)
{
	ProducerObject *self = (ProducerObject *)o;

	(void)unused;
	if (self->p) {
		struct evs_producer *p = self->p;

		self->p = NULL;
		Py_BEGIN_ALLOW_THREADS
		evs_producer__free(p);
		Py_END_ALLOW_THREADS
	}
	Py_RETURN_NONE;
}

static void producer_dealloc(PyObject *o)
{
	ProducerObject *self = (ProducerObject *)o;
	PyTypeObject *tp = Py_TYPE(o);

	if (self->p)
		evs_producer__free(self->p);
	Py_XDECREF(self->name);
	((freefunc)PyType_GetSlot(tp, Py_tp_free))(o);
	Py_DECREF(tp);
}

/* The emit result: True committed, False dropped (counted), else raise. */
static PyObject *emit_result(int r, unsigned int core, const char *what)
{
	char buf[128];

	if (r == 0)
		Py_RETURN_TRUE;
	if (r == -ENOBUFS || r == -EMSGSIZE || r == -ENOTCONN)
		Py_RETURN_FALSE;
	snprintf(buf, sizeof(buf), "%s on core %u of producer", what, core);
	return evspy_oserror(r, buf);
}

/*
 * PyObject_GetBuffer() refused o, the argument what: a TypeError says
 * what is allowed instead of 'a bytes-like object is required', and for a
 * torch tensor (its type's module is torch's; torch is not imported) how
 * to send one. Other errors stand. NULL.
 */
static PyObject *no_buffer(PyObject *o, const char *what)
{
	PyObject *mod, *tname;
	bool torch = false;

	if (!PyErr_ExceptionMatches(PyExc_TypeError))
		return NULL;
	PyErr_Clear();
	tname = PyType_GetName(Py_TYPE(o));
	mod = PyObject_GetAttrString((PyObject *)Py_TYPE(o), "__module__");
	if (mod && PyUnicode_Check(mod)) {
		Py_ssize_t n;
		const char *m = PyUnicode_AsUTF8AndSize(mod, &n);

		torch = m && !strncmp(m, "torch", 5) && (m[5] == '\0' || m[5] == '.');
	}
	PyErr_Clear();
	if (!tname) {
		Py_XDECREF(mod);
		return NULL;
	}
	if (torch)
		PyErr_Format(PyExc_TypeError,
			     "%s of type %U.%U has no buffer: send a torch tensor with "
			     "evstream.torch.emit_tensor(producer, core, prefix, t), or pass t.numpy() "
			     "(a CPU tensor)", what, mod, tname);
	else
		PyErr_Format(PyExc_TypeError,
			     "%s of type %U: allowed is %sa buffer (bytes, bytearray, memoryview, "
			     "array.array, a NumPy array)", what, tname,
			     strcmp(what, "array") ? "" : "None or ");
	Py_XDECREF(mod);
	Py_DECREF(tname);
	return NULL;
}

static PyObject *producer_emit(PyObject *o, PyObject *const *args, Py_ssize_t nargs,
			       PyObject *kwnames)
{
	static char *kwlist[] = { "core", "type", "data", NULL };
	ProducerObject *self = (ProducerObject *)o;
	PyObject *core_o, *type_o, *data;
	unsigned long long type;
	unsigned int core;
	Py_buffer b;
	int r;

	PyObject **const out[] = { &core_o, &type_o, &data };

	if (!evspy_positional(args, nargs, kwnames, 3, out, 3) &&
	    evspy_parse_call(args, nargs, kwnames, "OOO:emit", kwlist, &core_o, &type_o, &data))
		return NULL;
	if ((r = evspy_int_in(type_o, 1, UINT32_MAX, &type))) {
		if (r > 0)
			PyErr_Format(PyExc_ValueError, "type %R: allowed is 1 to 4294967295 (0 is invalid)",
				     type_o);
		return NULL;
	}
	if (producer_check(self) || producer_core(self, core_o, &core))
		return NULL;
	if (PyObject_GetBuffer(data, &b, PyBUF_SIMPLE) < 0)
		return no_buffer(data, "data");
	r = evs_producer__emit(self->p, core, (uint32_t)type, b.buf, (size_t)b.len);
	PyBuffer_Release(&b);
	return emit_result(r, core, "emit");
}

/* 0 when a buffer's struct format is in the host's byte order (no prefix,
 * '@', '=', or the host's own '<' or '>'), else -1 with err saying why.
 * Checked whatever dtype= says: dtype= names the elements, it does not swap
 * their bytes, so a buffer in the other order would arrive byte-swapped. */
static int format_byteorder(const char *fmt, char *err, size_t len)
{
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	const bool other = fmt && *fmt == '<';
	const char *what = "little-endian", *ours = "big-endian";
#else
	const bool other = fmt && (*fmt == '>' || *fmt == '!');
	const char *what = "big-endian", *ours = "little-endian";
#endif
	if (!other)
		return 0;
	snprintf(err, len, "format '%s' is %s; evstream tensors are %s (the host's order): "
		 "convert it first (a.astype(a.dtype.newbyteorder('=')))", fmt, what, ours);
	return -1;
}

/* The evstream dtype of a buffer's struct format, or NULL (err says why:
 * also for a known format whose elements have another size, such as a
 * 3-byte 'B' of a ctypes union). */
static const char *format_dtype(const char *fmt, Py_ssize_t itemsize, char *err, size_t len)
{
	static const char *sints[] = { NULL, "int8", "int16", NULL, "int32", NULL, NULL, NULL, "int64" };
	static const char *uints[] = { NULL, "uint8", "uint16", NULL, "uint32", NULL, NULL, NULL, "uint64" };
	const char *f = fmt ? fmt : "B", *d = NULL;

	if (*f == '@' || *f == '=' || *f == '<')
		f++;
	if (f[0] && !f[1] && itemsize > 0 && itemsize <= 8) {
		switch (f[0]) {
		case '?': d = itemsize == 1 ? "bool" : NULL; break;
		case 'e': d = itemsize == 2 ? "float16" : NULL; break;
		case 'f': d = itemsize == 4 ? "float32" : NULL; break;
		case 'd': d = itemsize == 8 ? "float64" : NULL; break;
		case 'b': case 'h': case 'i': case 'l': case 'q': case 'n':
			d = sints[itemsize];
			break;
		case 'B': case 'H': case 'I': case 'L': case 'Q': case 'N': case 'c':
			d = uints[itemsize];
			break;
		}
	}
	if (d)
		return d;
	snprintf(err, len,
		 "format '%s' (%zd-byte elements) has no evstream dtype: pass dtype= (a name such as "
		 "'bfloat16', or any name for elements of that size)", fmt ? fmt : "B", itemsize);
	return NULL;
}

static PyObject *producer_emit_tensor(PyObject *o, PyObject *const *args, Py_ssize_t nargs,
				      PyObject *kwnames)
{
	static char *kwlist[] = { "core", "prefix", "array", "pipe", "dtype", NULL };
	ProducerObject *self = (ProducerObject *)o;
	PyObject *core_o, *prefix_o, *array = Py_None, *dtype_o = Py_None, *pipe_o = NULL;
	const char *prefix = "", *dtype = NULL;
	unsigned long long pipe_v = 0;
	uint64_t shape[EVS_TENSOR_MAX_DIMS];
	int64_t strides[EVS_TENSOR_MAX_DIMS];
	struct evs_tensor t = { 0 };
	unsigned int core;
	int pipe = 0, r;
	Py_buffer b;
	char err[256], cut[EVS_TENSOR_PREFIX_MAX];

	PyObject **const out[] = { &core_o, &prefix_o, &array, &pipe_o, &dtype_o };

	if (!evspy_positional(args, nargs, kwnames, 2, out, 5) &&
	    evspy_parse_call(args, nargs, kwnames, "OO|OOO:emit_tensor", kwlist, &core_o, &prefix_o,
			     &array, &pipe_o, &dtype_o))
		return NULL;
	if (pipe_o && (r = evspy_int_in(pipe_o, 0, 2, &pipe_v))) {
		if (r > 0)
			PyErr_Format(PyExc_ValueError,
				     "pipe %R: allowed is 0 or 1 (stdout) and 2 (stderr)", pipe_o);
		return NULL;
	}
	pipe = (int)pipe_v;
	if (producer_check(self) || producer_core(self, core_o, &core))
		return NULL;
	if (prefix_o != Py_None) {
		Py_ssize_t n;

		if (PyUnicode_Check(prefix_o)) {
			prefix = evspy_cstr(prefix_o, "prefix", &n);
			/* the library keeps EVS_TENSOR_PREFIX_MAX - 1 bytes: a str
			 * is cut before the character that would not fit whole,
			 * never inside it (a rare path: the copy costs nothing else) */
			if (prefix && n >= (Py_ssize_t)EVS_TENSOR_PREFIX_MAX) {
				size_t k = EVS_TENSOR_PREFIX_MAX - 1;

				while (k > 0 && ((unsigned char)prefix[k] & 0xC0) == 0x80)
					k--; /* a continuation byte: its character starts before */
				memcpy(cut, prefix, k);
				cut[k] = '\0';
				prefix = cut;
			}
		} else if (PyBytes_Check(prefix_o)) {
			char *bytes;

			if (PyBytes_AsStringAndSize(prefix_o, &bytes, &n) < 0)
				return NULL;
			if (memchr(bytes, 0, (size_t)n)) {
				PyErr_Format(PyExc_ValueError,
					     "prefix %R: allowed is bytes without NUL (a C string ends at "
					     "the first)", prefix_o);
				return NULL;
			}
			prefix = bytes;
		} else {
			PyErr_Format(PyExc_TypeError, "prefix %R: allowed is a str, bytes or None", prefix_o);
			return NULL;
		}
		if (!prefix)
			return NULL;
	}
	if (dtype_o != Py_None) {
		Py_ssize_t n;

		if (!PyUnicode_Check(dtype_o))
			goto bad_dtype;
		dtype = evspy_cstr(dtype_o, "dtype", &n);
		if (!dtype)
			return NULL;
		if (n == 0 || n >= (Py_ssize_t)EVS_TENSOR_DTYPE_MAX)
			goto bad_dtype;
	}
	t.prefix = prefix;
	t.pipe = pipe ? (uint32_t)pipe : 1;
	if (array == Py_None) {
		if (dtype) {
			PyErr_SetString(PyExc_ValueError, "dtype given without an array: a print has none");
			return NULL;
		}
		r = evs_producer__emit_tensor(self->p, core, &t);
		return emit_result(r, core, "emit_tensor");
	}
	if (PyObject_GetBuffer(array, &b, PyBUF_RECORDS_RO) < 0)
		return no_buffer(array, "array");
	if (b.suboffsets) {
		PyErr_SetString(PyExc_ValueError, "buffers with suboffsets (PIL-style) are not supported");
		goto fail;
	}
	if (b.ndim > (int)EVS_TENSOR_MAX_DIMS) {
		PyErr_Format(PyExc_ValueError, "array of %d dimensions: allowed is 0 to %u", b.ndim,
			     EVS_TENSOR_MAX_DIMS);
		goto fail;
	}
	if (format_byteorder(b.format, err, sizeof(err))) {
		PyErr_SetString(PyExc_TypeError, err);
		goto fail;
	}
	if (dtype) {
		uint32_t known = evs_dtype_size(dtype);

		if (known && (Py_ssize_t)known != b.itemsize) {
			PyErr_Format(PyExc_ValueError,
				     "dtype '%s' has %u-byte elements; the array's are %zd bytes", dtype,
				     known, b.itemsize);
			goto fail;
		}
		t.dtype = dtype;
		t.elem_size = (uint32_t)b.itemsize;
	} else {
		t.dtype = format_dtype(b.format, b.itemsize, err, sizeof(err));
		if (!t.dtype) {
			PyErr_SetString(PyExc_TypeError, err);
			goto fail;
		}
	}
	t.ndim = (uint32_t)b.ndim;
	for (int i = 0; i < b.ndim; i++) {
		shape[i] = (uint64_t)b.shape[i];
		if (b.strides)
			strides[i] = (int64_t)b.strides[i];
	}
	t.shape = b.ndim ? shape : NULL;
	/* gathered through the strides straight into the ring */
	t.strides = b.ndim && b.strides ? strides : NULL;
	t.data = b.len ? b.buf : NULL;
	r = evs_producer__emit_tensor(self->p, core, &t);
	PyBuffer_Release(&b);
	return emit_result(r, core, "emit_tensor");
fail:
	PyBuffer_Release(&b);
	return NULL;
bad_dtype:
	PyErr_Clear();
	PyErr_Format(PyExc_ValueError, "dtype %R: allowed is None or a name of 1 to %u bytes", dtype_o,
		     EVS_TENSOR_DTYPE_MAX - 1);
	return NULL;
}

static PyObject *producer_flush(PyObject *o, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "core", NULL };
	ProducerObject *self = (ProducerObject *)o;
	PyObject *core_o = Py_None;
	unsigned int core;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "|O:flush", kwlist, &core_o))
		return NULL;
	if (producer_check(self))
		return NULL;
	if (core_o == Py_None) {
		for (unsigned int i = 0; i < self->ncores; i++)
			evs_producer__flush(self->p, i);
	} else {
		if (producer_core(self, core_o, &core))
			return NULL;
		evs_producer__flush(self->p, core);
	}
	Py_RETURN_NONE;
}

static PyObject *producer_stats(PyObject *o, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "core", NULL };
	ProducerObject *self = (ProducerObject *)o;
	struct evs_stream_stats st = { .sz = sizeof(st) };
	PyObject *core_o = NULL;
	unsigned int core = 0;
	int r;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "|O:stats", kwlist, &core_o))
		return NULL;
	if (producer_check(self) || (core_o && producer_core(self, core_o, &core)))
		return NULL;
	r = evs_producer__stats(self->p, core, &st);
	if (r)
		return evspy_oserror(r, "stats");
	return evspy_stats(&st);
}

/* wait_connected(cores=None, timeout=10.0): True once every core named
 * (a core, or a list; all by default) has a consumer, False at the timeout
 * (None: no limit; the seconds rule of Stream.read()). */
static PyObject *producer_wait_connected(PyObject *o, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "cores", "timeout", NULL };
	ProducerObject *self = (ProducerObject *)o;
	PyObject *cores = Py_None, *list = NULL, *to = NULL, *one;
	double timeout, deadline;
	Py_ssize_t n;
	int err = 0;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "|OO:wait_connected", kwlist, &cores, &to))
		return NULL;
	timeout = to ? evspy_timeout(to, INFINITY, &err) : 10.0;
	if (to && err)
		return NULL;
	if (producer_check(self))
		return NULL;
	if (cores == Py_None) {
		list = PyList_New(0);
		for (unsigned int i = 0; list && i < self->ncores; i++) {
			PyObject *v = PyLong_FromUnsignedLong(i);

			if (!v || PyList_Append(list, v) < 0) {
				Py_XDECREF(v);
				Py_CLEAR(list);
				break;
			}
			Py_DECREF(v);
		}
	} else if (PyIndex_Check(cores) && (one = PyNumber_Index(cores))) {
		/* one core: an int, or anything with __index__ (numpy.int64) */
		Py_DECREF(one);
		list = Py_BuildValue("[O]", cores);
	} else if (PyErr_Occurred() && !PyErr_ExceptionMatches(PyExc_TypeError)) {
		return NULL;
	} else {
		/* a list of cores (a NumPy array has __index__, which refuses) */
		PyErr_Clear();
		list = PySequence_List(cores);
		if (!list && PyErr_ExceptionMatches(PyExc_TypeError)) {
			PyErr_Clear();
			PyErr_Format(PyExc_TypeError,
				     "cores %R: allowed is None, a core (an int) or a list of cores", cores);
		}
	}
	if (!list)
		return NULL;
	n = PyList_Size(list);
	deadline = evspy_now() + timeout;
	for (;;) {
		bool all = true;

		if (producer_check(self))
			goto err;
		for (Py_ssize_t i = 0; i < n && all; i++) {
			struct evs_stream_stats st = { .sz = sizeof(st) };
			unsigned int core;

			if (producer_core(self, PyList_GetItem(list, i), &core))
				goto err;
			all = evs_producer__stats(self->p, core, &st) == 0 && st.connected;
		}
		if (all || evspy_now() >= deadline) {
			Py_DECREF(list);
			return PyBool_FromLong(all);
		}
		Py_BEGIN_ALLOW_THREADS
		poll(NULL, 0, 5);
		Py_END_ALLOW_THREADS
		if (PyErr_CheckSignals() < 0)
			goto err;
	}
err:
	Py_DECREF(list);
	return NULL;
}

static PyObject *producer_enter(PyObject *o, PyObject *unused)
{
	(void)unused;
	if (producer_check((ProducerObject *)o))
		return NULL;
	return Py_NewRef(o);
}

static PyObject *producer_exit(PyObject *o, PyObject *args)
{
	PyObject *r = producer_close(o, NULL);

	(void)args;
	Py_XDECREF(r);
	if (!r)
		return NULL;
	Py_RETURN_FALSE;
}

static PyObject *producer_get_name(PyObject *o, void *c)
{
	(void)c;
	return Py_NewRef(((ProducerObject *)o)->name);
}

static PyObject *producer_get_ncores(PyObject *o, void *c)
{
	(void)c;
	return PyLong_FromUnsignedLong(((ProducerObject *)o)->ncores);
}

static PyObject *producer_get_closed(PyObject *o, void *c)
{
	(void)c;
	return PyBool_FromLong(((ProducerObject *)o)->p == NULL);
}

static PyObject *producer_repr(PyObject *o)
{
	ProducerObject *self = (ProducerObject *)o;

	return PyUnicode_FromFormat("<evstream.Producer %R, %u cores%s>", self->name, self->ncores,
				    self->p ? "" : ", closed");
}

static PyGetSetDef producer_getset[] = {
	{ "name", producer_get_name, NULL, "the producer's name (None: reachable in this process only)", NULL },
	{ "ncores", producer_get_ncores, NULL, "number of streams (logical cores)", NULL },
	{ "closed", producer_get_closed, NULL, "close() was called", NULL },
	{ NULL, NULL, NULL, NULL, NULL },
};

static PyMethodDef producer_methods[] = {
	{ "emit", (PyCFunction)(void (*)(void))producer_emit, METH_FASTCALL | METH_KEYWORDS,
	  "emit(core, type, data) -> True committed, False dropped (counted)" },
	{ "emit_tensor", (PyCFunction)(void (*)(void))producer_emit_tensor,
	  METH_FASTCALL | METH_KEYWORDS,
	  "emit_tensor(core, prefix, array=None, pipe=0, dtype=None) -> True committed, False dropped" },
	{ "flush", (PyCFunction)(void (*)(void))producer_flush, METH_VARARGS | METH_KEYWORDS,
	  "flush(core=None): report drops held back for the drop probe" },
	{ "stats", (PyCFunction)(void (*)(void))producer_stats, METH_VARARGS | METH_KEYWORDS,
	  "stats(core=0) -> Stats" },
	{ "wait_connected", (PyCFunction)(void (*)(void))producer_wait_connected,
	  METH_VARARGS | METH_KEYWORDS,
	  "wait_connected(cores=None, timeout=10.0) -> True once each core has a consumer" },
	{ "close", producer_close, METH_NOARGS, "Close every stream (consumers drain, then end)." },
	{ "__enter__", producer_enter, METH_NOARGS, NULL },
	{ "__exit__", producer_exit, METH_VARARGS, NULL },
	{ NULL, NULL, 0, NULL },
};

static PyType_Slot producer_slots[] = {
	{ Py_tp_new, producer_new },
	{ Py_tp_dealloc, producer_dealloc },
	{ Py_tp_repr, producer_repr },
	{ Py_tp_getset, producer_getset },
	{ Py_tp_methods, producer_methods },
	{ Py_tp_doc, "Producer(name=None, ncores=1, *, ring_bytes=0, max_events=0, hugepages=None, "
		     "runtime_dir=None, no_timestamps=False, allow_gid=None)" },
	{ 0, NULL },
};

static PyType_Spec producer_spec = {
	.name = "evstream._native.Producer",
	.basicsize = sizeof(ProducerObject),
	.flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE,
	.slots = producer_slots,
};

int evspy_producer_types(PyObject *m)
{
	evspy_producer_type = (PyTypeObject *)PyType_FromModuleAndSpec(m, &producer_spec, NULL);
	if (!evspy_producer_type || PyModule_AddObjectRef(m, "Producer", (PyObject *)evspy_producer_type))
		return -1;
	return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * What every part of evstream._native uses: the helpers bound from
 * evstream._common, the clock, OSError from the library's errors, and the
 * Stats tuple. Module functions are in module.c, which calls the others.
 */
#include <errno.h>
#include <stdarg.h>
#include <time.h>

#include "evspy.h"

struct evspy_bound evspy;

/*
 * A METH_FASTCALL | METH_KEYWORDS call that evspy_positional() did not
 * take, parsed by PyArg_ParseTupleAndKeywords() as before, its errors
 * included: the PyObject pointers after kwlist, for a format of "O"
 * conversions only. 0, or -1 with the exception set. The pointers are
 * borrowed from the caller's arguments.
 */
int evspy_parse_call(PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames, const char *fmt,
		     char **kwlist, ...)
{
	Py_ssize_t nkw = kwnames ? PyTuple_Size(kwnames) : 0;
	PyObject *tuple = PyTuple_New(nargs), *dict = NULL;
	va_list ap;
	int ok = 0;

	for (Py_ssize_t i = 0; tuple && i < nargs; i++)
		PyTuple_SetItem(tuple, i, Py_NewRef(args[i]));
	if (tuple && nkw) {
		dict = PyDict_New();
		for (Py_ssize_t i = 0; dict && i < nkw; i++)
			if (PyDict_SetItem(dict, PyTuple_GetItem(kwnames, i), args[nargs + i]) < 0)
				Py_CLEAR(dict);
	}
	va_start(ap, kwlist);
	if (tuple && (dict || !nkw))
		ok = PyArg_VaParseTupleAndKeywords(tuple, dict, fmt, kwlist, ap);
	va_end(ap);
	Py_XDECREF(dict);
	Py_XDECREF(tuple);
	return ok ? 0 : -1;
}

double evspy_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* An int argument: o is anything with __index__ (TypeError otherwise, as
 * PyArg's integer formats), *v its value. 0 when it is from lo to hi; 1
 * when it is not, negative or past 2**64 - 1 included (no exception: the
 * caller names the value as given, never a wrapped unsigned one, and the
 * range); -1 with an exception set. */
int evspy_int_in(PyObject *o, unsigned long long lo, unsigned long long hi, unsigned long long *v)
{
	PyObject *i = PyNumber_Index(o);
	long long s;
	int overflow, r = 0;

	if (!i)
		return -1;
	s = PyLong_AsLongLongAndOverflow(i, &overflow);
	if (s == -1 && PyErr_Occurred()) {
		r = -1;
	} else if (overflow < 0 || (!overflow && s < 0)) {
		r = 1;
	} else if (overflow > 0) {
		*v = PyLong_AsUnsignedLongLong(i);
		if (*v == (unsigned long long)-1 && PyErr_Occurred()) {
			PyErr_Clear(); /* past 2**64 - 1 */
			r = 1;
		}
	} else {
		*v = (unsigned long long)s;
	}
	Py_DECREF(i);
	if (r == 0 && (*v < lo || *v > hi))
		r = 1;
	return r;
}

/* Raise OSError(err, msg), the subclass its errno picks; msg is consumed
 * (NULL: its exception stands). NULL. */
PyObject *evspy_raise_oserror(int err, PyObject *msg)
{
	PyObject *exc;

	if (!msg)
		return NULL;
	exc = PyObject_CallFunction(PyExc_OSError, "iO", err < 0 ? -err : err, msg);
	Py_DECREF(msg);
	if (exc) {
		PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
		Py_DECREF(exc);
	}
	return NULL;
}

/* OSError saying what failed and why (the errno's name). A corrupt stream
 * says it with the library's sentence, which names the core and what its
 * producer wrote wrong. */
PyObject *evspy_oserror(int err, const char *what)
{
	if (err == -EBADMSG && *evs_errmsg())
		return evspy_raise_oserror(err, PyUnicode_FromString(evs_errmsg()));
	return evspy_raise_oserror(err, PyUnicode_FromFormat("%s: %s", what, evs_strerror(err)));
}

/* Stats in evstream/_common.py has a field per cause, named after them */
_Static_assert(EVS_DROP_CAUSE_COUNT == 4, "evstream._common.DROP_CAUSES names four causes");

PyObject *evspy_stats(const struct evs_stream_stats *st)
{
	const uint64_t head[] = { st->produced, st->committed, st->dropped };
	const uint64_t tail[] = { st->released, st->wakeups, st->ring_bytes, st->max_events,
				  st->page_size, st->hugepages, st->connected, st->producer_closed,
				  st->core, st->producer_died };
	PyObject *args, *res;
	Py_ssize_t i = 0;

	if (!evspy.stats) {
		PyErr_SetString(PyExc_RuntimeError, "evstream._native is not bound (import evstream)");
		return NULL;
	}
	/* head, the causes twice, tail: _common.STATS_FIELDS, in order */
	args = PyTuple_New((Py_ssize_t)(sizeof(head) / sizeof(head[0]) + 2 * EVS_DROP_CAUSE_COUNT +
					sizeof(tail) / sizeof(tail[0])));
	if (!args)
		return NULL;
#define PUT(v)                                                                  \
	do {                                                                    \
		PyObject *o_ = PyLong_FromUnsignedLongLong(v);                  \
		if (!o_ || PyTuple_SetItem(args, i++, o_) < 0)                  \
			goto fail;                                              \
	} while (0)
	for (size_t k = 0; k < sizeof(head) / sizeof(head[0]); k++)
		PUT(head[k]);
	for (int k = 0; k < EVS_DROP_CAUSE_COUNT; k++)
		PUT(st->dropped_events[k]);
	for (int k = 0; k < EVS_DROP_CAUSE_COUNT; k++)
		PUT(st->dropped_bytes[k]);
	for (size_t k = 0; k < sizeof(tail) / sizeof(tail[0]); k++)
		PUT(tail[k]);
#undef PUT
	res = PyObject_CallObject(evspy.stats, args);
	Py_DECREF(args);
	return res;
fail:
	Py_DECREF(args);
	return NULL;
}

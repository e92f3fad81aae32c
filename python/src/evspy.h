/* SPDX-License-Identifier: MIT */
/*
 * evstream._native: the Python binding of the public C API
 * (include/evstream/ and include/nrt/ headers), against CPython's limited API
 * (abi3, 3.11: the buffer protocol is part of it).
 *
 * Every Python object the binding handles is handled here, with the GIL
 * held: callbacks are called, and their references dropped, only after the
 * GIL was taken. The pure-Python parts of the package (evstream._common)
 * hand this module the few Python-level helpers it needs through _bind().
 */
#ifndef EVSPY_H
#define EVSPY_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <evstream/evstream.h>
#include <evstream/tensor.h>

/* How many records a stream may hold at once (events and views alive).
 * With evs_consumer__peek_next() that is the library's window; with
 * peek/release alone it is one. */
#ifdef EVS_CONSUMER_MAX_HELD
#define EVSPY_WINDOW EVS_CONSUMER_MAX_HELD
#define EVSPY_HAVE_PEEK_NEXT 1
#else
#define EVSPY_WINDOW 1
#define EVSPY_HAVE_PEEK_NEXT 0
#endif

/* The Python-level helpers from evstream._common (see _bind()). */
struct evspy_bound {
	PyObject *stats;          /* Stats(*fields) */
	PyObject *lease_error;    /* LeaseError: data used after its lease */
	PyObject *held_error;     /* TooManyHeld: the window is full */
	PyObject *end_of_stream;  /* EndOfStream: producer gone, all read */
	PyObject *make_array;     /* make_array(event, dtype, elem_size, shape) */
	PyObject *array_views;    /* array_views() -> (numpy.ndarray, {dtype: numpy.dtype}) */
	PyObject *detached;       /* DetachedEvent(...) */
	PyObject *report;         /* report(core, seq, type, value, tb): a callback raised */
};
extern struct evspy_bound evspy;

extern PyTypeObject *evspy_stream_type;
extern PyTypeObject *evspy_event_type;
extern PyTypeObject *evspy_producer_type;
extern PyTypeObject *evspy_subscription_type;

/* One slot per record a stream holds, in ring order. */
struct evspy_slot {
	PyObject *event;   /* borrowed: the Event of this record, NULL once gone */
	bool done;         /* lease ended and no view alive: may be given back */
};

typedef struct {
	PyObject_HEAD
	struct evs_consumer *c;
	unsigned int core;
	int fd;                    /* what fileno() returns */
	int epfd;                  /* owned epoll of eventfd + producer socket, or -1 */
	PyObject *producer;        /* a Producer object connected to, kept alive */
	PyObject *name;            /* str or None */
	struct evspy_slot *slots;  /* ring of slot_cap (a power of two), by ticket */
	uint64_t slot_cap;
	uint64_t head, tail;       /* tickets of the oldest held record and the next */
	PyObject *cur;             /* borrowed: the event iteration handed out last */
	uint64_t next_seq;         /* seq expected next (gap tracking) */
	uint64_t lost;             /* events missing between those read */
	bool seen;                 /* an event was read (next_seq is meaningful) */
	bool ended;                /* -EPIPE: the producer has gone, all read */
	bool closed;               /* close() was called */
	bool threaded;             /* a subscription thread reads it: lock */
	int waiting;               /* reads waiting in poll() without the GIL: the
				    * consumer stays until the last has woken */
	int wake_fd;               /* eventfd those reads poll too; close() writes it */
	pthread_mutex_t lock;      /* consumer calls and slots, when threaded */
} StreamObject;

enum evspy_kind { KIND_RAW, KIND_TENSOR, KIND_PRINT, KIND_BAD };

typedef struct {
	PyObject_HEAD
	StreamObject *stream;      /* strong */
	uint64_t ticket;
	struct evs_event_header hdr;
	const uint8_t *payload;    /* in the ring, hdr.data_size bytes */
	const uint8_t *view;       /* what the buffer protocol exports */
	uint64_t view_len;
	uint64_t gap;
	PyObject *mv;              /* weak reference to the memoryview of .data */
	PyObject *prefix, *dtype;  /* str, for tensors and prints */
	uint64_t shape[EVS_TENSOR_MAX_DIMS];
	uint32_t ndim, elem_size, pipe, nc;
	uint32_t exports;          /* buffer exports alive (views, arrays) */
	uint8_t kind;
	bool released;             /* lease ended: no new views */
} EventObject;

/* PyUnicode_AsUTF8() is not in the 3.11 limited API */
static inline const char *evspy_utf8(PyObject *o)
{
	return PyUnicode_AsUTF8AndSize(o, NULL);
}

/* A str argument handed to the library as a C string: its UTF-8 (*len
 * bytes, when len is not NULL). One with a NUL character is refused
 * (ValueError naming what and the value): the library would read it only
 * up to there, another name, prefix or directory than the one given.
 * NULL raised. */
static inline const char *evspy_cstr(PyObject *o, const char *what, Py_ssize_t *len)
{
	Py_ssize_t n;
	const char *s = PyUnicode_AsUTF8AndSize(o, &n);

	if (s && memchr(s, 0, (size_t)n)) {
		PyErr_Format(PyExc_ValueError,
			     "%s %R: allowed is a str without NUL characters (a C string ends at the "
			     "first)", what, o);
		return NULL;
	}
	if (len)
		*len = n;
	return s;
}

/* runtime_dir=: None (NULL: the default) or a str; else TypeError. -1 raised */
static inline int evspy_runtime_dir(PyObject *o, const char **dir)
{
	*dir = NULL;
	if (!o || o == Py_None)
		return 0;
	if (!PyUnicode_Check(o)) {
		PyErr_Format(PyExc_TypeError, "runtime_dir %R: allowed is None or a str (a directory)", o);
		return -1;
	}
	*dir = evspy_cstr(o, "runtime_dir", NULL);
	return *dir ? 0 : -1;
}

/* A str of UTF-8 text from the library (bad bytes replaced) */
static inline PyObject *evspy_str(const char *s)
{
	return PyUnicode_DecodeUTF8(s, (Py_ssize_t)strlen(s), "replace");
}

/* Py_SETREF and Py_XSETREF are not in the limited API */
#define EVSPY_SETREF(dst, src)                 \
	do {                                   \
		PyObject *old_ = (PyObject *)(dst); \
		(dst) = (src);                 \
		Py_XDECREF(old_);              \
	} while (0)

/* common.c */
PyObject *evspy_raise_oserror(int err, PyObject *msg);
PyObject *evspy_oserror(int err, const char *what);
PyObject *evspy_stats(const struct evs_stream_stats *st);
/* What Producer() allows, said when a size is not even a uint64 (a size
 * the library refuses it names itself, with this machine's bounds) */
#define EVSPY_RING_BYTES_RANGE \
	"allowed is 0 (the default) or a byte count from 4096 to half of this machine's memory"
#define EVSPY_MAX_EVENTS_RANGE \
	"allowed is 0 (the default) or a count from 1 to 4294967296 (at most this machine's " \
	"memory / 128)"

double evspy_now(void);

/* seconds >= 0 (any size, inf too) as milliseconds for poll() or a
 * timeout_ms, rounded down: at most INT_MAX (24.8 days), which the
 * callers' loops wait again until their deadline */
static inline int evspy_ms(double seconds)
{
	return seconds < (double)INT_MAX / 1000 ? (int)(seconds * 1000) : INT_MAX;
}
/* A timeout as Stream.read() takes it (evstream._common.timeout_seconds):
 * None or absent (then dflt), or seconds >= 0, inf included; else *err
 * set and TypeError, or ValueError naming the value (-1, NaN). */
static inline double evspy_timeout(PyObject *o, double dflt, int *err)
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
int evspy_int_in(PyObject *o, unsigned long long lo, unsigned long long hi, unsigned long long *v);
/*
 * The usual call of a METH_FASTCALL method, positional arguments alone,
 * from least to most of them: taken as it comes, into *out[i]. Parsing a
 * format costs a small emit() as much as the rest of it (435 of its 941
 * instructions, callgrind), and read() is called once an event. 0 when
 * the call is another kind: then evspy_parse_call() parses it.
 */
static inline int evspy_positional(PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames,
				   Py_ssize_t least, PyObject **const out[], Py_ssize_t most)
{
	if (kwnames || nargs < least || nargs > most)
		return 0;
	for (Py_ssize_t i = 0; i < nargs; i++)
		*out[i] = args[i];
	return 1;
}
int evspy_parse_call(PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames, const char *fmt,
		     char **kwlist, ...);

/* event.c */
int evspy_event_types(PyObject *m);
PyObject *evspy_event_new(StreamObject *s, const struct evs_record *rec, uint64_t ticket);
void evspy_event_end(EventObject *ev);
/* Give the kept memory of dropped Events back (the module's end). */
void evspy_event_spares_free(void);

/* stream.c */
int evspy_stream_types(PyObject *m);
int evspy_parse_core(PyObject *o, unsigned int *core);
PyObject *evspy_connect(PyObject *self, PyObject *args, PyObject *kw);
StreamObject *evspy_stream_open(PyObject *producer, unsigned int core, double timeout,
				PyObject *runtime_dir);
void evspy_stream_shut(StreamObject *s);

/* producer.c */
int evspy_producer_types(PyObject *m);

/* subscribe.c */
int evspy_subscription_types(PyObject *m);
PyObject *evspy_subscribe(PyObject *self, PyObject *args, PyObject *kw);
PyObject *evspy_stop_all(PyObject *self, PyObject *args);

#endif

# SPDX-License-Identifier: MIT
"""libevstream.so.1 through ctypes, for the pure-Python fallback.

Where it is looked for, in order: $EVSTREAM_LIBRARY (a path; when set,
nothing else is tried); in an installed package, the library directory
recorded at install time (the library the extension is linked with), and
in a checkout, its build directory (``build/libevstream.so.1`` beside
``python/`` or above ``build/python/``); then the dynamic loader's own
search (``ldconfig``, ``LD_LIBRARY_PATH``).

Two handles on the same library: ``fast`` (ctypes.PyDLL) keeps the GIL
for calls that never block (peek, release, emit, stats), which also
serializes them between Python threads; ``slow`` (ctypes.CDLL) lets the
GIL go for calls that may wait (connect's handshake, creating and freeing
producers).
"""
import ctypes
import os

SONAME = "libevstream.so.1"


def _candidates():
    env = os.environ.get("EVSTREAM_LIBRARY")
    if env:
        return [("EVSTREAM_LIBRARY", env)]
    here = os.path.dirname(os.path.abspath(__file__))
    try:
        from . import _config  # written at install time
        # not a checkout: paths beside it would be some other build
        c = [("the installed library directory", os.path.join(_config.LIBDIR, SONAME))]
    except ImportError:
        c = [
            ("the checkout's build directory", os.path.join(here, "..", "..", "build", SONAME)),
            ("the build directory", os.path.join(here, "..", "..", SONAME)),
        ]
    c.append(("the dynamic loader's search path", SONAME))
    return c


def load():
    tried = []
    for where, path in _candidates():
        if os.sep in path and not os.path.exists(path):
            tried.append("%s (%s: no such file)" % (os.path.normpath(path), where))
            continue
        try:
            fast = ctypes.PyDLL(path, use_errno=True)
        except OSError as e:
            tried.append("%s (%s: %s)" % (path, where, e))
            continue
        if not hasattr(fast, "evs_producer__new"):
            # a shared object, but of something else
            tried.append("%s (%s: not libevstream: it has no evs_producer__new)"
                         % (path, where))
            continue
        return os.path.normpath(path) if os.sep in path else path, fast, \
            ctypes.CDLL(path, use_errno=True)
    raise ImportError("cannot load %s; tried: %s. Build it (make), install it (make install), "
                      "or set EVSTREAM_LIBRARY to its path" % (SONAME, "; ".join(tried)))


path, fast, slow = load()

c_u8p = ctypes.POINTER(ctypes.c_uint8)


class EventHeader(ctypes.Structure):
    _fields_ = [("data_size", ctypes.c_uint64), ("type", ctypes.c_uint32),
                ("flags", ctypes.c_uint32), ("seq", ctypes.c_uint64),
                ("timestamp_ns", ctypes.c_uint64), ("reserved", ctypes.c_uint8 * 32)]


class Record(ctypes.Structure):
    _fields_ = [("hdr", EventHeader), ("data", ctypes.c_void_p)]


# EVS_DROP_CAUSE_COUNT; StreamStats is struct evs_stream_stats by hand,
# checked by the tests only (docs/architecture.md, "Changing things")
DROP_CAUSE_COUNT = 4


class StreamStats(ctypes.Structure):
    _fields_ = [("sz", ctypes.c_size_t), ("produced", ctypes.c_uint64),
                ("committed", ctypes.c_uint64), ("dropped", ctypes.c_uint64),
                ("dropped_events", ctypes.c_uint64 * DROP_CAUSE_COUNT),
                ("dropped_bytes", ctypes.c_uint64 * DROP_CAUSE_COUNT),
                ("released", ctypes.c_uint64), ("wakeups", ctypes.c_uint64),
                ("ring_bytes", ctypes.c_uint64), ("max_events", ctypes.c_uint64),
                ("page_size", ctypes.c_uint64), ("hugepages", ctypes.c_uint32),
                ("connected", ctypes.c_uint32), ("producer_closed", ctypes.c_uint32),
                ("core", ctypes.c_uint32), ("producer_died", ctypes.c_uint32)]


class ProducerOpts(ctypes.Structure):
    _fields_ = [("sz", ctypes.c_size_t), ("ring_bytes", ctypes.c_uint64),
                ("max_events", ctypes.c_uint64), ("hugepages", ctypes.c_int),
                ("allow_group", ctypes.c_int), ("allow_gid", ctypes.c_uint32),
                ("runtime_dir", ctypes.c_char_p), ("no_timestamps", ctypes.c_int)]


class ConsumerOpts(ctypes.Structure):
    _fields_ = [("sz", ctypes.c_size_t), ("runtime_dir", ctypes.c_char_p),
                ("timeout_ms", ctypes.c_int)]


MAX_DIMS = 8


class Tensor(ctypes.Structure):
    _fields_ = [("prefix", ctypes.c_char_p), ("pipe", ctypes.c_uint32),
                ("dtype", ctypes.c_char_p), ("elem_size", ctypes.c_uint32),
                ("ndim", ctypes.c_uint32), ("shape", ctypes.POINTER(ctypes.c_uint64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("data", ctypes.c_void_p)]


class TensorInfo(ctypes.Structure):
    _fields_ = [("prefix", ctypes.c_char * 512), ("dtype", ctypes.c_char * 16),
                ("core", ctypes.c_uint32), ("pipe", ctypes.c_uint32),
                ("ndim", ctypes.c_uint32), ("elem_size", ctypes.c_uint32),
                ("shape", ctypes.c_uint64 * MAX_DIMS), ("bytes", ctypes.c_uint64),
                ("numel", ctypes.c_uint64), ("data", ctypes.c_void_p),
                ("is_print", ctypes.c_uint32), ("reserved", ctypes.c_uint32 * 7)]


EVENT_TENSOR_READ = 1
TENSOR_FIXED_BYTES = 1024
HUGEPAGES = {None: 0, "auto": 1, "on": 2, "off": 3}

_vp, _int, _uint, _u32, _sz = ctypes.c_void_p, ctypes.c_int, ctypes.c_uint, ctypes.c_uint32, ctypes.c_size_t


def _proto(lib, name, restype, *argtypes):
    try:
        f = getattr(lib, name)
    except AttributeError:
        if lib not in (fast, slow):
            raise
        raise ImportError("%s is not a libevstream this package can use (an older one?): it "
                          "has no %s" % (path, name)) from None
    f.restype = restype
    f.argtypes = argtypes
    return f


# may wait: the GIL goes
producer_new = _proto(slow, "evs_producer__new", _vp, ctypes.c_char_p, _uint, ctypes.POINTER(ProducerOpts))
producer_free = _proto(slow, "evs_producer__free", None, _vp)
consumer_connect = _proto(slow, "evs_consumer__connect", _vp, ctypes.c_char_p, _uint,
                          ctypes.POINTER(ConsumerOpts))
errmsg_slow = _proto(slow, "evs_errmsg", ctypes.c_char_p)
nrt_connect = _proto(slow, "nrt_debug_client_connect", _int, _int, ctypes.POINTER(_int))

# never block: the GIL stays
emit = _proto(fast, "evs_producer__emit", _int, _vp, _uint, _u32, _vp, _sz)
emit_tensor = _proto(fast, "evs_producer__emit_tensor", _int, _vp, _uint, ctypes.POINTER(Tensor))
flush = _proto(fast, "evs_producer__flush", _int, _vp, _uint)
producer_stats = _proto(fast, "evs_producer__stats", _int, _vp, _uint, ctypes.POINTER(StreamStats))
consumer_free = _proto(fast, "evs_consumer__free", None, _vp)
consumer_fd = _proto(fast, "evs_consumer__fd", _int, _vp)
consumer_hup_fd = _proto(fast, "evs_consumer__hup_fd", _int, _vp)
peek = _proto(fast, "evs_consumer__peek", _int, _vp, ctypes.POINTER(Record))
try:
    peek_next = _proto(fast, "evs_consumer__peek_next", _int, _vp, ctypes.POINTER(Record))
except ImportError:  # a library without the window: one record at a time
    peek_next = None
release = _proto(fast, "evs_consumer__release", _int, _vp)
prepare_wait = _proto(fast, "evs_consumer__prepare_wait", _int, _vp)
consumer_stats = _proto(fast, "evs_consumer__stats", _int, _vp, ctypes.POINTER(StreamStats))
strerror = _proto(fast, "evs_strerror", ctypes.c_char_p, _int)
errmsg = _proto(fast, "evs_errmsg", ctypes.c_char_p)
dtype_size = _proto(fast, "evs_dtype_size", _u32, ctypes.c_char_p)
tensor_parse = _proto(fast, "evs_tensor_parse", _int, _vp, ctypes.c_uint64, ctypes.POINTER(TensorInfo))
nrt_read_one_event = _proto(fast, "nrt_debug_client_read_one_event", _int, _int,
                            ctypes.POINTER(EventHeader), ctypes.POINTER(_vp))
nrt_close = _proto(fast, "nrt_debug_client_connect_close", None, _int)

_libc = ctypes.CDLL(None)
free = _proto(_libc, "free", None, _vp)


# The C-API of CPython itself, for the buffer protocol: what the extension
# does with PyObject_GetBuffer, the fallback does through ctypes.pythonapi.
class PyBuffer(ctypes.Structure):
    _fields_ = [("buf", ctypes.c_void_p), ("obj", ctypes.c_void_p), ("len", ctypes.c_ssize_t),
                ("itemsize", ctypes.c_ssize_t), ("readonly", ctypes.c_int), ("ndim", ctypes.c_int),
                ("format", ctypes.c_char_p), ("shape", ctypes.POINTER(ctypes.c_ssize_t)),
                ("strides", ctypes.POINTER(ctypes.c_ssize_t)),
                ("suboffsets", ctypes.POINTER(ctypes.c_ssize_t)), ("internal", ctypes.c_void_p)]


PyBUF_SIMPLE = 0
PyBUF_FORMAT = 0x0004
PyBUF_ND = 0x0008
PyBUF_STRIDES = 0x0010 | PyBUF_ND
PyBUF_RECORDS_RO = PyBUF_STRIDES | PyBUF_FORMAT

get_buffer = _proto(ctypes.pythonapi, "PyObject_GetBuffer", _int, ctypes.py_object,
                    ctypes.POINTER(PyBuffer), _int)
release_buffer = _proto(ctypes.pythonapi, "PyBuffer_Release", None, ctypes.POINTER(PyBuffer))

# SPDX-License-Identifier: MIT
"""What both implementations share: errors, statistics, detached events,
NumPy views of event data, and the report of a failing callback.

Nothing here touches libevstream: the native extension and the ctypes
fallback each do that their own way, and hand their results to these.
"""
import collections
import logging
import sys

log = logging.getLogger("evstream")


# what a producer wrote (a prefix, a dtype's name) is shown by the tools,
# not obeyed: control characters (escape sequences, carriage returns, C1)
# are written out as escapes
_SHOWN = {c: "\\x%02x" % c for c in list(range(0x20)) + list(range(0x7f, 0xa0))}
_SHOWN[ord("\n")] = "\\n"
_SHOWN[ord("\t")] = "\\t"


def tolerant_output():
    """stdout writes what its encoding lacks as escapes (\\xe9, \\u2192)
    instead of failing: a producer's text is any Unicode, a terminal or a
    pipe may be ASCII (PYTHONIOENCODING=ascii, LANG=C on old Pythons)."""
    try:
        sys.stdout.reconfigure(errors="backslashreplace")
    except (AttributeError, ValueError):    # not a TextIOWrapper (replaced)
        pass


def shown(text):
    """text with its control characters as escapes (\\x1b, \\n, \\t)."""
    return str(text).translate(_SHOWN)


class LeaseError(ValueError):
    """An event's data was used after its lease ended (see docs/python.md).

    The ring bytes may already hold other events: evstream refuses to read
    them. Copy what you keep (``ev.copy()``, ``np.array(ev.array())``)
    before releasing the event.
    """


class TooManyHeld(LeaseError):
    """The stream holds as many records as it may (``Stream.max_held``):
    events not yet released, or views (arrays, memoryviews) still alive,
    keep them in the ring. Release events, drop views, or copy."""


class EndOfStream(EOFError):
    """The producer has gone and every event it committed was read."""


def real(x):
    """float(x) for a real number (as PyFloat_AsDouble takes it), else TypeError."""
    if isinstance(x, float):
        return x
    t = type(x)
    if not (hasattr(t, "__float__") or hasattr(t, "__index__")):
        raise TypeError("must be real number, not %s" % t.__name__)
    return float(x)


def timeout_seconds(timeout, default):
    """A timeout as Stream.read() takes it: None (then default), or seconds
    >= 0; else TypeError or ValueError naming it."""
    if timeout is None:
        return default
    t = real(timeout)
    if not t >= 0:
        raise ValueError("timeout %r: allowed is None or seconds >= 0" % (timeout,))
    return t


# enum evs_drop_cause, in order (evs_drop_cause_name())
DROP_CAUSES = ("ring_full", "too_big", "no_consumer", "no_memory")

STATS_FIELDS = (
    ("produced", "committed", "dropped")
    + tuple("dropped_" + c for c in DROP_CAUSES)
    + tuple("dropped_bytes_" + c for c in DROP_CAUSES)
    + ("released", "wakeups", "ring_bytes", "max_events", "page_size", "hugepages",
       "connected", "producer_closed", "core", "producer_died")
)


class Stats(collections.namedtuple("Stats", STATS_FIELDS)):
    """A stream's counters (``struct evs_stream_stats``, docs/api.md)."""

    __slots__ = ()

    @property
    def dropped_events(self):
        """Dropped events by cause: {'ring_full': n, 'too_big': n, ...}."""
        return {c: getattr(self, "dropped_" + c) for c in DROP_CAUSES}

    @property
    def dropped_bytes(self):
        """Dropped payload bytes by cause."""
        return {c: getattr(self, "dropped_bytes_" + c) for c in DROP_CAUSES}


# evstream dtype -> NumPy type of the same bytes, as evs-dump writes .npy
# files (docs/dump.md): bfloat16, which NumPy lacks, is its raw bits.
NPY_DTYPES = {
    "float64": "<f8", "float32": "<f4", "float16": "<f2", "bfloat16": "<u2",
    "int64": "<i8", "int32": "<i4", "int16": "<i2", "int8": "|i1",
    "uint64": "<u8", "uint32": "<u4", "uint16": "<u2", "uint8": "|u1",
    "bool": "|b1",
}


def numpy_dtype(dtype, elem_size):
    """The NumPy dtype string for an evstream dtype: the table above, and
    for names NumPy does not know, opaque elements of their size (``|Vn``)."""
    npd = NPY_DTYPES.get(dtype)
    if npd is not None:
        return npd
    if elem_size > _MAX_VOID:
        # "|V%d" past it is parsed into a C int: V-1, elements of -1 bytes
        raise ValueError("elem_size %d of dtype %r: NumPy's opaque elements (|Vn) are "
                         "allowed 0 to %d bytes" % (elem_size, dtype, _MAX_VOID))
    return "|V%d" % elem_size


_MAX_VOID = 2**31 - 1   # NumPy's itemsize is a C int


# What arrays are made with, at the first one (NumPy is imported then, not
# with evstream): numpy.frombuffer, numpy.ndarray, and a numpy.dtype object
# for each name of NPY_DTYPES (None: the bytes of an event that is not a
# tensor), so that no dtype string is parsed at every array
_views = {}


def _numpy_views():
    if not _views:
        import numpy as np
        dtypes = {name: np.dtype(npd) for name, npd in NPY_DTYPES.items()}
        dtypes[None] = np.dtype(np.uint8)
        _views.update(frombuffer=np.frombuffer, ndarray=np.ndarray, empty=np.empty,
                      dtypes=dtypes)
    return _views


def array_views():
    """(numpy.ndarray, {evstream dtype or None: numpy.dtype}): what the
    native Event.array() makes an array of known dtype with. Dtypes NumPy
    does not know are not in it: a producer may name any, and make_array
    makes each when asked (numpy_dtype)."""
    v = _numpy_views()
    return v["ndarray"], v["dtypes"]


def bfloat16_to_float32(bits):
    """float32 values of bfloat16 bits: a new array of the same shape.

    bits is a uint16 array (as ev.array() gives a bfloat16 tensor), or a
    buffer of them: one of uint16 elements (array.array('H')), or bytes
    (bytes, bytearray, ev.data), read as host-order uint16. Anything else
    is a TypeError naming it: the values of a float32 array, say, are not
    bfloat16 bits.
    """
    import numpy as np
    if isinstance(bits, np.ndarray):
        a = bits
    else:
        try:
            m = memoryview(bits)
        except TypeError:
            raise TypeError("bits of type %s: allowed is a uint16 array of bfloat16 bits, or a buffer "
                            "of them (uint16 elements, or bytes)" % type(bits).__name__) from None
        if m.itemsize == 1 and m.format in ("B", "b", "c"):
            if m.nbytes % 2:
                raise ValueError("bits of %d bytes: bfloat16 bits are 2 bytes each" % m.nbytes)
            a = np.frombuffer(m.cast("B") if m.ndim != 1 else m, np.uint16)
        else:
            a = np.asarray(m)
    if a.dtype.kind != "u" or a.dtype.itemsize != 2:
        raise TypeError("bits of dtype %s: allowed is uint16 (bfloat16 bits), or bytes of them"
                        % a.dtype)
    # in place on a new array: a 0-d array stays one (the operators would
    # make it a NumPy scalar, whose view() refuses the new dtype)
    f = a.astype(np.uint32)
    np.left_shift(f, np.uint32(16), out=f)
    return f.view(np.float32)


def make_array(exporter, dtype, elem_size, shape, bfloat16=None):
    """A NumPy array viewing exporter's bytes (no copy), read-only.

    dtype None (not a tensor): the bytes as uint8 (shape is not used).
    bfloat16 tensors view their bits as uint16, unless bfloat16='float32'
    asks for a float32 copy of their values.
    """
    v = _numpy_views()
    dtypes, frombuffer = v["dtypes"], v["frombuffer"]
    # checked first, whatever the size: an empty tensor is refused or
    # converted as one with elements
    if bfloat16 is not None:
        if dtype != "bfloat16":
            raise ValueError("bfloat16=%r: this tensor is %s, not bfloat16" % (bfloat16, dtype))
        if bfloat16 not in ("float32", dtypes["float32"].type):
            raise ValueError("bfloat16=%r: allowed is None (the bits, uint16) or 'float32'"
                             % (bfloat16,))
    npd = dtypes.get(dtype)
    if npd is None:
        npd = numpy_dtype(dtype, elem_size)
    if dtype is None:
        a = frombuffer(exporter, dtype=npd)
    elif len(memoryview(exporter)) == 0:
        # frombuffer refuses empty buffers on older NumPy: no bytes to view
        try:
            a = v["empty"](shape, dtype=npd)
        except ValueError:
            # the library accepts any sizes beside a 0; NumPy does not
            raise ValueError(
                "shape %s of this empty %s tensor: NumPy cannot hold it (allowed: each size "
                "and the element size times the product of the sizes other than 0 at most "
                "2**63-1)" % (shape, dtype)) from None
        a.flags.writeable = False
    else:
        a = frombuffer(exporter, dtype=npd)
        if len(shape) != 1:
            a = a.reshape(shape)
    if bfloat16 is not None:
        return bfloat16_to_float32(a)
    return a


class DetachedEvent:
    """An event copied out of the ring (``Event.copy()``): the same fields
    and methods, its data in memory of its own, with no lease."""

    __slots__ = ("seq", "timestamp_ns", "type", "core", "gap", "kind", "pipe",
                 "prefix", "dtype", "elem_size", "shape", "logical_nc_id", "payload_size",
                 "_bytes")

    released = False
    held = False

    def __init__(self, seq, timestamp_ns, type, core, gap, kind, pipe, prefix, dtype,
                 elem_size, shape, logical_nc_id, data, payload_size):
        self.seq = seq
        self.timestamp_ns = timestamp_ns
        self.type = type
        self.core = core
        self.gap = gap
        self.kind = kind
        self.pipe = pipe
        self.prefix = prefix
        self.dtype = dtype
        self.elem_size = elem_size
        self.shape = shape
        self.logical_nc_id = logical_nc_id
        self.payload_size = payload_size    # bytes of the whole payload, as the event's
        self._bytes = data

    @property
    def data(self):
        return memoryview(self._bytes)

    @property
    def nbytes(self):
        return len(self._bytes)

    def array(self, bfloat16=None):
        shape = self.shape if self.kind == "tensor" else (len(self._bytes),)
        return make_array(self._bytes, self.dtype if self.kind == "tensor" else None,
                          self.elem_size, shape, bfloat16)

    def copy(self):
        return self

    def release(self):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def __repr__(self):
        if self.kind == "tensor":
            return "<evstream.DetachedEvent core=%d seq=%d tensor %r %s %r>" % (
                self.core, self.seq, self.prefix, self.dtype, self.shape)
        return "<evstream.DetachedEvent core=%d seq=%d %s>" % (self.core, self.seq, self.kind)


def report(core, seq, exc_type, exc, tb):
    """A subscription's callback raised: say so, and the stream goes on.
    seq None: the stream itself failed (exc, an OSError) and the
    subscription has ended: say so with the library's message."""
    if seq is None:
        log.error("subscription on core %d ended: %s", core,
                  getattr(exc, "strerror", None) or exc)
        return
    log.error("subscription on core %d: the callback raised on the event seq %d; "
              "the subscription goes on", core, seq, exc_info=(exc_type, exc, tb))

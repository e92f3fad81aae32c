# SPDX-License-Identifier: MIT
"""The pure-Python implementation of evstream: the interface of the native
extension (evstream._native), over libevstream.so.1 with ctypes.

It follows the extension's design point for point (docs/python.md), with
Python's means:

- Leases. A record handed out (peek_next) stays in the ring until its
  lease has ended (release(), a with block, the next step of an
  iteration, the Event's end) and no view of it is alive. Views are made
  from a per-view exporter object (a ctypes array over the ring bytes);
  every NumPy array or memoryview made from it keeps it alive, and a weak
  reference tells when the last one has gone. The memoryview handed out
  as Event.data is released when the lease ends.
- Threads. Calls that never block keep the GIL (ctypes.PyDLL), so that
  Python threads never call the consumer at the same time; waiting is
  select.poll, which lets the GIL go and touches no consumer.
"""
import collections
import ctypes
import errno
import math
import operator
import os
import select
import struct
import sys
import threading
import time
import weakref

from . import _lib
# seconds read as the extension reads them (asyncio's read uses these too)
from ._common import real as _real, timeout_seconds as _parse_timeout

HAVE_PEEK_NEXT = 1 if _lib.peek_next is not None else 0
# the library's EVS_CONSUMER_MAX_HELD (evstream.h); one record at a time
# without peek_next
MAX_HELD = 65536 if HAVE_PEEK_NEXT else 1
EVENT_TENSOR_READ = _lib.EVENT_TENSOR_READ
TENSOR_FIXED_BYTES = _lib.TENSOR_FIXED_BYTES

_h = {}  # the helpers from evstream._common (_bind)

# struct evs_record: header fields used, then the data pointer
_REC = struct.Struct("<QIIQQ32xQ")
_EAGAIN, _EPIPE, _ENOBUFS = -errno.EAGAIN, -errno.EPIPE, -errno.ENOBUFS
_DROPS = (-errno.ENOBUFS, -errno.EMSGSIZE, -errno.ENOTCONN)
_take = _lib.peek_next if HAVE_PEEK_NEXT else _lib.peek
_release = _lib.release
_prepare_wait = _lib.prepare_wait


def _bind(stats, lease_error, held_error, end_of_stream, make_array, array_views, detached,
          report):
    # array_views serves the native Event.array(); here make_array makes every array
    _h.update(stats=stats, lease_error=lease_error, held_error=held_error,
              end_of_stream=end_of_stream, make_array=make_array, detached=detached,
              report=report)


def strerror(err):
    return _lib.strerror(err).decode()


def _oserror(err, what):
    """OSError saying what failed and why (the errno's name). A corrupt
    stream says it with the library's sentence, which names the core and
    what its producer wrote wrong."""
    why = _lib.errmsg().decode(errors="replace") if err == -errno.EBADMSG else ""
    return OSError(abs(err), why or "%s: %s" % (what, strerror(err)))


def _stats(st):
    return _h["stats"](st.produced, st.committed, st.dropped, *st.dropped_events,
                       *st.dropped_bytes, st.released, st.wakeups, st.ring_bytes,
                       st.max_events, st.page_size, st.hugepages, st.connected,
                       st.producer_closed, st.core, st.producer_died)


# Arguments are converted as the native extension's are, with the same
# exception types: an int is anything with __index__ (not a float, not a
# str: TypeError); seconds as evstream._common.real() reads them.
_index = operator.index


def _cstr(s, what):
    """A str argument as the C string the library reads: its UTF-8. One
    with a NUL character is refused (ValueError naming what and the value):
    the library would read it only up to there, another name, prefix or
    directory than the one given."""
    b = s.encode()
    if b"\0" in b:
        raise ValueError("%s %r: allowed is a str without NUL characters (a C string ends at "
                         "the first)" % (what, s))
    return b


# the library keeps this many bytes of a prefix (EVS_TENSOR_PREFIX_MAX - 1)
_PREFIX_MAX = 511


def _cut_prefix(b):
    """A str prefix's UTF-8 longer than the library keeps, cut before the
    character that would not fit whole (the library cuts at a byte)."""
    k = _PREFIX_MAX
    while k > 0 and b[k] & 0xC0 == 0x80:
        k -= 1  # a continuation byte: its character starts before
    return b[:k]


def _path(runtime_dir):
    if runtime_dir is None:
        return None
    if not isinstance(runtime_dir, str):
        raise TypeError("runtime_dir %r: allowed is None or a str (a directory)" % (runtime_dir,))
    return _cstr(runtime_dir, "runtime_dir") or None


def _is_core(o):
    """o is one core: an int, or anything with __index__ that gives one
    (numpy.int64; a NumPy array has __index__, which refuses: a list)."""
    if isinstance(o, int):
        return True
    if not hasattr(type(o), "__index__"):
        return False
    try:
        _index(o)
    except TypeError:
        return False
    return True


def _parse_core(core):
    core = _index(core)
    if core < 0 or core > 4095:
        raise ValueError("core %r: allowed is 0 to 4095" % (core,))
    return core


# poll()'s and the library's timeouts are C ints of milliseconds
_MS_MAX = 2**31 - 1


def _ms(seconds):
    """seconds >= 0 (any size, inf too) as milliseconds, rounded down: at
    most _MS_MAX (24.8 days), which the loops wait again until their deadline."""
    return int(seconds * 1000) if seconds < _MS_MAX / 1000 else _MS_MAX


def dtype_size(name):
    return _lib.dtype_size(_cstr(name, "dtype"))


# ------------------------------------------------------------------ leases

class _Slot:
    """One record the stream holds, and its lease."""

    __slots__ = ("core", "addr", "done", "released", "live", "refs", "mv", "keep",
                 "__weakref__")

    def __init__(self, core, addr):
        self.core = core
        self.addr = addr
        self.done = False
        self.released = False
        self.live = 0
        self.refs = None
        self.mv = None
        self.keep = None

    def exporter(self, event, off, n):
        """A new object exporting the ring bytes; counted until it goes.
        While views are alive the event lives too, as the extension's does
        (each view holds its exporter, the event itself)."""
        exp = (ctypes.c_ubyte * n).from_address(self.addr + off)
        self.keep = event
        if self.refs is None:
            self.refs = {}
        r = weakref.ref(exp, self._view_gone)
        self.refs[id(r)] = r  # keeps the weak reference (and its callback) alive
        self.live += 1
        return exp

    def _view_gone(self, ref):
        del self.refs[id(ref)]
        self.live -= 1
        if not self.live:
            self.keep = None
            if self.released:
                self._finish()

    def end(self):
        if self.released:
            return
        self.released = True
        if self.core.cur is self:
            self.core.cur = None
        if self.mv is not None:
            mv = self.mv()
            self.mv = None
            if mv is not None:
                try:
                    mv.release()
                except BufferError:
                    pass  # exports of its own keep the record held: safe
        if not self.live:
            self._finish()

    def _finish(self):
        if not self.done:
            self.done = True
            self.core.pump()


class _Core:
    """The consumer and what it holds; shared by the Stream and its events."""

    __slots__ = ("c", "core", "slots", "pumping", "closed", "cur", "rec", "recp", "info",
                 "infop", "poller", "ep", "fd", "efd", "hup", "seen", "next_seq", "lost",
                 "ended", "busy", "wake", "__weakref__")

    def __init__(self, c, core):
        self.c = c
        self.core = core
        self.slots = collections.deque()
        self.pumping = False
        self.closed = False
        self.cur = None
        self.rec = _lib.Record()
        self.recp = ctypes.byref(self.rec)
        self.info = _lib.TensorInfo()
        self.infop = ctypes.byref(self.info)
        self.efd = _lib.consumer_fd(c)
        self.hup = _lib.consumer_hup_fd(c)
        # reads in progress, one item each (append and pop are atomic under
        # the GIL): the consumer stays until the last has ended
        self.busy = []
        # an eventfd waits poll too: close() writes it, so that a read
        # waiting in another thread wakes
        self.wake = os.eventfd(0, os.EFD_CLOEXEC | os.EFD_NONBLOCK)
        self.poller = select.poll()
        self.poller.register(self.wake, select.POLLIN)
        self.poller.register(self.efd, select.POLLIN)
        self.ep = None
        self.fd = self.efd
        if self.hup >= 0:
            self.poller.register(self.hup, select.POLLIN)
            # one fd for select/asyncio: the eventfd or the producer's hang-up
            self.ep = select.epoll()
            self.ep.register(self.efd, select.EPOLLIN)
            self.ep.register(self.hup, select.EPOLLIN)
            self.fd = self.ep.fileno()
        self.seen = False
        self.next_seq = 0
        self.lost = 0
        self.ended = False
        # arm the wakeup: fileno() is readable once an event arrives
        _prepare_wait(c)

    def pump(self):
        """Give back, oldest first, every record whose lease has ended."""
        if self.pumping or self.c is None:
            return
        self.pumping = True
        try:
            slots = self.slots
            while slots and slots[0].done:
                slots.popleft()
                _release(self.c)
        finally:
            self.pumping = False
        if self.closed and not self.slots and not self.busy:
            self.free()

    def free(self):
        if self.c is not None:
            c, self.c = self.c, None
            _lib.consumer_free(c)
            if self.ep is not None:
                self.ep.close()
            os.close(self.wake)
            self.fd = -1

    def shut(self):
        if self.closed:
            return
        self.closed = True
        if self.busy:
            os.eventfd_write(self.wake, 1)  # a read waiting elsewhere wakes
        for slot in list(self.slots):
            slot.end()
        self.pump()


# ------------------------------------------------------------------ events

def _mv_released(mv):
    """mv.release() was called (no attribute says so: every use raises)."""
    try:
        mv.nbytes
    except ValueError:
        return True
    return False


class Event:
    """One event read from a stream, leased (see docs/python.md)."""

    __slots__ = ("_stream", "_slot", "seq", "timestamp_ns", "type", "core", "gap", "kind",
                 "pipe", "logical_nc_id", "prefix", "dtype", "shape", "elem_size", "nbytes",
                 "payload_size", "_off")

    def _lease_error(self):
        return _h["lease_error"](
            "event seq %d of core %d was released: its data is no longer readable "
            "(copy it before: ev.copy(), np.array(ev.array()))" % (self.seq, self.core))

    @property
    def released(self):
        return self._slot.released

    @property
    def held(self):
        return not self._slot.done

    def _view(self):
        """A new read-only memoryview of the data, counted as a view."""
        slot = self._slot
        if slot.released:
            raise self._lease_error()
        return memoryview(slot.exporter(self, self._off, self.nbytes)).cast("B").toreadonly()

    @property
    def data(self):
        slot = self._slot
        # end() drops mv: a released event's .data raises in _view()
        mv = slot.mv() if slot.mv is not None else None
        if mv is None or _mv_released(mv):  # gone, or its user released it
            mv = self._view()
            slot.mv = weakref.ref(mv)
        return mv

    def array(self, bfloat16=None):
        mv = self._view()
        if self.kind == "tensor":
            return _h["make_array"](mv, self.dtype, self.elem_size, self.shape, bfloat16)
        return _h["make_array"](mv, None, 0, (self.nbytes,), bfloat16)

    def copy(self):
        slot = self._slot
        if slot.released:
            raise self._lease_error()
        data = ctypes.string_at(slot.addr + self._off, self.nbytes)
        return _h["detached"](self.seq, self.timestamp_ns, self.type, self.core, self.gap,
                              self.kind, self.pipe, self.prefix, self.dtype, self.elem_size,
                              self.shape, self.logical_nc_id, data, self.payload_size)

    def release(self):
        self._slot.end()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._slot.end()
        return False

    def __del__(self):
        try:
            self._slot.end()
        except AttributeError:
            pass  # never fully made

    def __repr__(self):
        rel = " released" if self._slot.released else ""
        if self.kind == "tensor":
            return "<evstream.Event core=%d seq=%d tensor %r %s %r%s>" % (
                self.core, self.seq, self.prefix, self.dtype, self.shape, rel)
        if self.kind == "print":
            return "<evstream.Event core=%d seq=%d print %r%s>" % (self.core, self.seq,
                                                                   self.prefix, rel)
        return "<evstream.Event core=%d seq=%d %s type=%d, %d bytes%s>" % (
            self.core, self.seq, self.kind, self.type, self.payload_size, rel)


_U64 = (1 << 64) - 1


def _decode(b):
    return b.decode("utf-8", "replace")


def _new_event(stream, core):
    """The record peek_next just handed out, as an Event in a new slot."""
    size, typ, _flags, seq, ts, addr = _REC.unpack_from(core.rec)
    slot = _Slot(core, addr)
    core.slots.append(slot)
    ev = Event.__new__(Event)
    ev._stream = stream
    ev._slot = slot
    ev.seq = seq
    ev.timestamp_ns = ts
    ev.type = typ
    ev.core = core.core
    # modulo 2**64, as the library's (and the native extension's) uint64_t:
    # the seq after 2**64-1 is 0, and lost wraps as the C counter does
    gap = seq if not core.seen else (seq - core.next_seq if seq > core.next_seq else 0)
    core.lost = (core.lost + gap) & _U64
    core.next_seq = (seq + 1) & _U64
    core.seen = True
    ev.gap = gap
    ev.payload_size = size
    ev.kind = "raw"
    ev.pipe = ev.logical_nc_id = ev.prefix = ev.dtype = ev.shape = ev.elem_size = None
    ev.nbytes = size
    ev._off = 0
    if typ == EVENT_TENSOR_READ:
        info = core.info
        if _lib.tensor_parse(addr, size, core.infop) == 0:
            ev.prefix = _decode(info.prefix)
            ev.pipe = info.pipe
            ev.logical_nc_id = info.core
            if info.is_print:
                ev.kind = "print"
            else:
                ev.kind = "tensor"
                ev.dtype = _decode(info.dtype)
                ev.shape = tuple(info.shape[:info.ndim])
                ev.elem_size = info.elem_size
            ev.nbytes = info.bytes
            ev._off = (info.data or 0) - addr
        else:
            ev.kind = "bad"
    return ev


# ------------------------------------------------------------------ streams

class Stream:
    """A consumer of one core's stream (evstream.connect())."""

    __slots__ = ("_core", "_name", "_producer", "__weakref__")

    def __init__(self, c, core, name, producer):
        self._core = _Core(c, core)
        self._name = name
        self._producer = producer

    @property
    def core(self):
        return self._core.core

    @property
    def producer(self):
        return self._name

    @property
    def held(self):
        return len(self._core.slots)

    @property
    def max_held(self):
        return MAX_HELD

    @property
    def lost(self):
        return self._core.lost

    @property
    def ended(self):
        return self._core.ended

    @property
    def closed(self):
        return self._core.closed

    @property
    def stats(self):
        core = self._check()
        st = _lib.StreamStats(sz=ctypes.sizeof(_lib.StreamStats))
        r = _lib.consumer_stats(core.c, ctypes.byref(st))
        if r:
            raise _oserror(r, "stats")
        return _stats(st)

    def _check(self):
        core = self._core
        if core.closed or core.c is None:
            raise ValueError("I/O operation on a closed evstream stream")
        return core

    def _full(self):
        core = self._core
        if MAX_HELD == 1:
            return _h["held_error"](
                "core %d: the last event read is still held (a view of it is alive); this "
                "libevstream holds one record at a time: copy what you keep (ev.copy(), "
                "np.array(ev.array()))" % core.core)
        return _h["held_error"](
            "core %d: %d records are held by events or views still alive, the most a stream "
            "may hold; release events or drop their views, or copy what you keep"
            % (core.core, MAX_HELD))

    def _wait(self, timeout, extra=None):
        """Wait until records may be pending: 0, or -ETIMEDOUT, -EPIPE,
        -ECANCELED (closed meanwhile), -errno. Called within _next
        (core.busy), or by a subscription's thread, the only one that
        closes its stream."""
        core = self._core
        deadline = None if timeout < 0 else time.monotonic() + timeout
        poller = extra or core.poller
        while True:
            if core.closed:
                return -errno.ECANCELED
            r = _prepare_wait(core.c)
            if r == _EAGAIN:
                return 0
            if r:
                return r
            if deadline is None:
                ms = None
            else:
                left = deadline - time.monotonic()
                if left <= 0:
                    return -errno.ETIMEDOUT
                ms = min(_ms(left) + 1, _MS_MAX)
            if poller.poll(ms):
                return 0

    def _next(self, timeout):
        """(1, event) | (0, None) timed out | (2, None) ended | (3, None) full.

        close() from another thread meanwhile (while this waits: it wakes)
        is the closed stream's ValueError; the consumer stays until this
        has ended (core.busy), and goes then."""
        core = self._core
        core.busy.append(None)
        try:
            return self._next_busy(core, timeout)
        finally:
            core.busy.pop()
            if core.closed:
                core.pump()

    def _next_busy(self, core, timeout):
        deadline = time.monotonic() + timeout if timeout > 0 else 0
        c = core.c
        while True:
            # also after each wait: closed meanwhile
            self._check()
            slots = core.slots
            if len(slots) >= MAX_HELD:
                if slots[0].done:
                    core.pump()
                if len(slots) >= MAX_HELD:
                    return 3, None
            r = _take(c, core.recp)
            if r == 0:
                return 1, _new_event(self, core)
            if r == _EPIPE:
                core.ended = True
                return 2, None
            if r == _ENOBUFS:
                return 3, None
            if r != _EAGAIN:
                raise _oserror(r, "reading core %d" % core.core)
            left = -1 if timeout < 0 else (0 if timeout == 0 else deadline - time.monotonic())
            if timeout >= 0 and left <= 0:
                # arm the wakeup so that fileno() fires at the next event
                r = _prepare_wait(c)
                if r in (_EAGAIN, _EPIPE):
                    continue
                if r == 0:
                    return 0, None
            else:
                r = self._wait(left)
                if r in (0, _EPIPE, -errno.ETIMEDOUT, -errno.ECANCELED):
                    continue
            raise _oserror(r, "waiting on core %d" % core.core)

    def _end_of_stream(self):
        return _h["end_of_stream"](
            "core %d: the producer has gone and every event it committed was read"
            % self._core.core)

    def __iter__(self):
        return self

    def __next__(self):
        core = self._core
        if core.cur is not None:
            core.cur.end()
        code, ev = self._next(-1)
        if code == 1:
            core.cur = ev._slot
            return ev
        if code == 3:
            raise self._full()
        raise StopIteration

    def read(self, timeout=None):
        code, ev = self._next(_parse_timeout(timeout, -1))
        if code == 1:
            return ev
        if code == 0:
            return None
        if code == 2:
            raise self._end_of_stream()
        raise self._full()

    def read_batch(self, n, timeout=0):
        n = _index(n)
        if n < 1:
            raise ValueError("read_batch(%d): allowed is n >= 1" % n)
        # None: for as long as it takes, as read()
        timeout = _parse_timeout(timeout, -1)
        out = []
        while len(out) < n:
            code, ev = self._next(0 if out else timeout)
            if code == 1:
                out.append(ev)
                continue
            if out:
                break
            if code == 2:
                raise self._end_of_stream()
            if code == 3:
                raise self._full()
            break
        return out

    def fileno(self):
        return self._check().fd

    def close(self):
        self._core.shut()

    def __enter__(self):
        self._check()
        return self

    def __exit__(self, *exc):
        self._core.shut()
        return False

    def __del__(self):
        try:
            self._core.shut()
        except AttributeError:
            pass

    def __repr__(self):
        core = self._core
        return "<evstream.Stream producer=%r core=%d%s>" % (
            self._name, core.core, " closed" if core.closed else " ended" if core.ended else "")


def _producer_name(producer):
    if producer is None:
        return None, None, None
    if isinstance(producer, Producer):
        return (_cstr(producer.name, "producer name") if producer.name is not None else None,
                producer.name, producer)
    if not isinstance(producer, str):
        raise TypeError("producer %r: allowed is None, a producer name (str) or a Producer"
                        % (producer,))
    return _cstr(producer, "producer"), producer, None


def _open(producer, core, timeout, runtime_dir):
    cname, name, keep = _producer_name(producer)
    core = _parse_core(core)
    deadline = time.monotonic() + timeout
    # the handshake's timeout: 0 (below 1 ms) is the library's default
    opts = _lib.ConsumerOpts(sz=ctypes.sizeof(_lib.ConsumerOpts),
                             runtime_dir=_path(runtime_dir),
                             timeout_ms=_ms(timeout))
    while True:
        c = _lib.consumer_connect(cname, core, ctypes.byref(opts))
        if c:
            return c, core, name, keep
        err = ctypes.get_errno()
        msg = _lib.errmsg().decode(errors="replace")
        if err == errno.ENOENT and cname is not None and time.monotonic() < deadline:
            time.sleep(0.02)
            continue
        who = "producer '%s'" % name if name is not None else "this process's producer"
        raise OSError(err, "cannot connect to core %d of %s: %s"
                      % (core, who, msg or strerror(err)))


def connect(producer=None, core=0, timeout=None, runtime_dir=None):
    c, core, name, keep = _open(producer, core, _parse_timeout(timeout, 2.0), runtime_dir)
    return Stream(c, core, name, keep)


# ------------------------------------------------------------------ producer

_SINTS = {1: "int8", 2: "int16", 4: "int32", 8: "int64"}
_UINTS = {1: "uint8", 2: "uint16", 4: "uint32", 8: "uint64"}
_FLOATS = {("e", 2): "float16", ("f", 4): "float32", ("d", 8): "float64", ("?", 1): "bool"}


# struct format prefixes of the other byte order than the host's
_OTHER_ORDER = ("<",) if sys.byteorder == "big" else (">", "!")


def _check_byteorder(fmt):
    """Refuse a buffer format in the other byte order than the host's,
    whatever dtype= says: dtype= names the elements, it does not swap their
    bytes, so such a buffer would arrive byte-swapped."""
    if fmt and fmt[:1] in _OTHER_ORDER:
        other, ours = ("little", "big") if sys.byteorder == "big" else ("big", "little")
        raise TypeError("format '%s' is %s-endian; evstream tensors are %s-endian (the host's "
                        "order): convert it first (a.astype(a.dtype.newbyteorder('=')))"
                        % (fmt, other, ours))


def _format_dtype(fmt, itemsize):
    f = fmt if fmt is not None else "B"
    if f[:1] in ("@", "=", "<"):
        f = f[1:]
    if len(f) == 1:
        if f in "bhilqn" and itemsize in _SINTS:
            return _SINTS[itemsize]
        if f in "BHILQNc" and itemsize in _UINTS:
            return _UINTS[itemsize]
        if (f, itemsize) in _FLOATS:
            return _FLOATS[(f, itemsize)]
    raise TypeError("format '%s' (%d-byte elements) has no evstream dtype: pass dtype= (a name "
                    "such as 'bfloat16', or any name for elements of that size)"
                    % (fmt if fmt is not None else "B", itemsize))


def _no_buffer(o, what):
    """The TypeError for an argument that has no buffer: what is allowed
    instead of 'a bytes-like object is required', and for a torch tensor
    (its type's module is torch's; torch is not imported) how to send one."""
    t = type(o)
    mod = getattr(t, "__module__", None)
    if isinstance(mod, str) and mod.split(".")[0] == "torch":
        return TypeError("%s of type %s.%s has no buffer: send a torch tensor with "
                         "evstream.torch.emit_tensor(producer, core, prefix, t), or pass "
                         "t.numpy() (a CPU tensor)" % (what, mod, t.__name__))
    return TypeError("%s of type %s: allowed is %sa buffer (bytes, bytearray, memoryview, "
                     "array.array, a NumPy array)"
                     % (what, t.__name__, "None or " if what == "array" else ""))


_RING_BYTES_RANGE = ("allowed is 0 (the default) or a byte count from 4096 to half of this "
                     "machine's memory")
_MAX_EVENTS_RANGE = ("allowed is 0 (the default) or a count from 1 to 4294967296 (at most this "
                     "machine's memory / 128)")


class Producer:
    """Producer(name=None, ncores=1, *, ring_bytes=0, max_events=0,
    hugepages=None, runtime_dir=None, no_timestamps=False, allow_gid=None)"""

    __slots__ = ("_p", "_name", "_ncores", "__weakref__")

    def __init__(self, name=None, ncores=1, *, ring_bytes=0, max_events=0, hugepages=None,
                 runtime_dir=None, no_timestamps=False, allow_gid=None):
        self._p = None
        if name is not None and not isinstance(name, str):
            raise TypeError("name %r: allowed is None or a str" % (name,))
        ncores = _index(ncores)
        ring_bytes = _index(ring_bytes)
        max_events = _index(max_events)
        if not 1 <= ncores <= 4096:
            raise ValueError("ncores %d: allowed is 1 to 4096" % ncores)
        # sizes named as given, with their range (a size the library
        # refuses it names itself, with this machine's bounds)
        if not 0 <= ring_bytes < 2**64:
            raise ValueError("ring_bytes %d: %s" % (ring_bytes, _RING_BYTES_RANGE))
        if not 0 <= max_events < 2**64:
            raise ValueError("max_events %d: %s" % (max_events, _MAX_EVENTS_RANGE))
        if not (hugepages is None or isinstance(hugepages, str)) or \
                hugepages not in _lib.HUGEPAGES:
            raise ValueError("hugepages %r: allowed is None, 'auto', 'on' or 'off'" % (hugepages,))
        if allow_gid is not None:
            allow_gid = _index(allow_gid)
            if not 0 <= allow_gid <= 2**32 - 2:      # a gid_t; (gid_t)-1 means none
                raise ValueError("allow_gid %r: allowed is None or a group id from 0 to %d"
                                 % (allow_gid, 2**32 - 2))
        opts = _lib.ProducerOpts(sz=ctypes.sizeof(_lib.ProducerOpts), ring_bytes=ring_bytes,
                                 max_events=max_events, hugepages=_lib.HUGEPAGES[hugepages],
                                 allow_group=1 if allow_gid is not None else 0,
                                 allow_gid=allow_gid or 0,
                                 runtime_dir=_path(runtime_dir),
                                 no_timestamps=1 if no_timestamps else 0)
        p = _lib.producer_new(_cstr(name, "name") if name is not None else None, ncores,
                              ctypes.byref(opts))
        if not p:
            err = ctypes.get_errno()
            msg = _lib.errmsg().decode(errors="replace")
            raise OSError(err, "cannot create producer %r: %s" % (name, msg or strerror(err)))
        self._p = p
        self._name = name
        self._ncores = ncores

    name = property(lambda self: self._name,
                    doc="the producer's name (None: reachable in this process only)")
    ncores = property(lambda self: self._ncores, doc="number of streams (logical cores)")
    closed = property(lambda self: self._p is None, doc="close() was called")

    def _check(self):
        if self._p is None:
            raise ValueError("operation on a closed evstream Producer")
        return self._p

    def _core(self, core):
        c = _index(core)
        if not 0 <= c < self._ncores:
            raise ValueError("core %r: producer %r has cores 0 to %d"
                             % (core, self._name, self._ncores - 1))
        return c

    def _result(self, r, core, what):
        if r == 0:
            return True
        if r in _DROPS:
            return False
        raise _oserror(r, "%s on core %d of producer" % (what, core))

    def emit(self, core, type, data):
        type = _index(type)
        p = self._check()
        core = self._core(core)
        if not 0 < type <= 0xFFFFFFFF:
            raise ValueError("type %d: allowed is 1 to 4294967295 (0 is invalid)" % type)
        if isinstance(data, bytes):
            return self._result(_lib.emit(p, core, type, data, len(data)), core, "emit")
        view = _lib.PyBuffer()
        try:
            _lib.get_buffer(data, ctypes.byref(view), _lib.PyBUF_SIMPLE)
        except TypeError:
            raise _no_buffer(data, "data") from None
        try:
            r = _lib.emit(p, core, type, view.buf, view.len)
        finally:
            _lib.release_buffer(ctypes.byref(view))
        return self._result(r, core, "emit")

    def emit_tensor(self, core, prefix, array=None, pipe=0, dtype=None):
        pipe = _index(pipe)
        p = self._check()
        core = self._core(core)
        if pipe not in (0, 1, 2):
            raise ValueError("pipe %r: allowed is 0 or 1 (stdout) and 2 (stderr)" % (pipe,))
        if prefix is None:
            prefix = b""
        elif isinstance(prefix, str):
            b = _cstr(prefix, "prefix")
            prefix = b if len(b) <= _PREFIX_MAX else _cut_prefix(b)
        elif not isinstance(prefix, bytes):
            raise TypeError("prefix %r: allowed is a str, bytes or None" % (prefix,))
        elif b"\0" in prefix:
            raise ValueError("prefix %r: allowed is bytes without NUL (a C string ends at the "
                             "first)" % (prefix,))
        if dtype is not None:
            if not isinstance(dtype, str) or not 0 < len(dtype.encode()) < 16:
                raise ValueError("dtype %r: allowed is None or a name of 1 to 15 bytes" % (dtype,))
            _cstr(dtype, "dtype")
        t = _lib.Tensor(prefix=prefix, pipe=pipe or 1)
        if array is None:
            if dtype is not None:
                raise ValueError("dtype given without an array: a print has none")
            return self._result(_lib.emit_tensor(p, core, ctypes.byref(t)), core, "emit_tensor")
        view = _lib.PyBuffer()
        try:
            _lib.get_buffer(array, ctypes.byref(view), _lib.PyBUF_RECORDS_RO)
        except TypeError:
            raise _no_buffer(array, "array") from None
        try:
            if view.suboffsets:
                raise ValueError("buffers with suboffsets (PIL-style) are not supported")
            if view.ndim > _lib.MAX_DIMS:
                raise ValueError("array of %d dimensions: allowed is 0 to %d"
                                 % (view.ndim, _lib.MAX_DIMS))
            fmt = view.format.decode() if view.format else None
            _check_byteorder(fmt)
            if dtype is not None:
                known = _lib.dtype_size(dtype.encode())
                if known and known != view.itemsize:
                    raise ValueError("dtype '%s' has %d-byte elements; the array's are %d bytes"
                                     % (dtype, known, view.itemsize))
                t.dtype = dtype.encode()
                t.elem_size = view.itemsize
            else:
                t.dtype = _format_dtype(fmt, view.itemsize).encode()
            t.ndim = view.ndim
            if view.ndim:
                # Py_ssize_t sizes and byte strides, as the C API takes them:
                # gathered through the strides straight into the ring
                t.shape = ctypes.cast(view.shape, ctypes.POINTER(ctypes.c_uint64))
                if view.strides:
                    t.strides = ctypes.cast(view.strides, ctypes.POINTER(ctypes.c_int64))
            t.data = view.buf if view.len else None
            r = _lib.emit_tensor(p, core, ctypes.byref(t))
        finally:
            _lib.release_buffer(ctypes.byref(view))
        return self._result(r, core, "emit_tensor")

    def flush(self, core=None):
        p = self._check()
        cores = range(self._ncores) if core is None else (self._core(core),)
        for c in cores:
            _lib.flush(p, c)

    def stats(self, core=0):
        p = self._check()
        core = self._core(core)
        st = _lib.StreamStats(sz=ctypes.sizeof(_lib.StreamStats))
        r = _lib.producer_stats(p, core, ctypes.byref(st))
        if r:
            raise _oserror(r, "stats")
        return _stats(st)

    def wait_connected(self, cores=None, timeout=10.0):
        timeout = _parse_timeout(timeout, math.inf)
        self._check()
        if cores is None:
            cores = range(self._ncores)
        elif _is_core(cores):
            cores = [cores]
        else:
            try:
                cores = list(cores)
            except TypeError:
                raise TypeError("cores %r: allowed is None, a core (an int) or a list of cores"
                                % (cores,)) from None
        cores = [self._core(c) for c in cores]
        deadline = time.monotonic() + timeout
        st = _lib.StreamStats(sz=ctypes.sizeof(_lib.StreamStats))
        while True:
            p = self._check()
            ok = all(_lib.producer_stats(p, c, ctypes.byref(st)) == 0 and st.connected
                     for c in cores)
            if ok or time.monotonic() >= deadline:
                return ok
            time.sleep(0.005)

    def close(self):
        if self._p is not None:
            p, self._p = self._p, None
            _lib.producer_free(p)

    def __enter__(self):
        self._check()
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __del__(self):
        try:
            self.close()
        except AttributeError:
            pass

    def __repr__(self):
        return "<evstream.Producer %r, %d cores%s>" % (self._name, self._ncores,
                                                        "" if self._p else ", closed")


# ------------------------------------------------------------------ subscriptions

_subs_lock = threading.Lock()
_subs = set()       # live subscription states
_exiting = False


class _SubState:
    """What the thread uses: never the Subscription object itself, so that
    dropping that stops the thread."""

    __slots__ = ("stream", "fn", "core", "stop", "rfd", "wfd", "thread", "events", "errors",
                 "end_err", "end_msg", "finished", "__weakref__")


def _ask_stop(s):
    """Ask the thread of subscription state s to stop (its poll wakes)."""
    if not s.stop:
        s.stop = True
        try:
            os.write(s.wfd, b"x")
        except OSError:
            pass


def _sub_main(s):
    stream = s.stream
    core = stream._core
    wait = select.poll()
    wait.register(s.rfd, select.POLLIN)
    wait.register(core.efd, select.POLLIN)
    if core.hup >= 0:
        wait.register(core.hup, select.POLLIN)
    stop_only = select.poll()
    stop_only.register(s.rfd, select.POLLIN)
    err = 0
    try:
        while not s.stop:
            try:
                code, ev = stream._next(0)
            except OSError as e:
                err = -(e.errno or errno.EIO)
                # the library's sentence (a corrupt stream: what its producer
                # wrote wrong), as the native extension keeps it
                s.end_msg = (e.strerror if err == -errno.EBADMSG and e.strerror
                             else strerror(err))
                _h["report"](s.core, None, type(e), e, e.__traceback__)
                break
            if code == 1:
                s.events += 1
                try:
                    s.fn(ev)
                except BaseException as e:  # reported; the stream goes on
                    s.errors += 1
                    _h["report"](s.core, ev.seq, type(e), e, e.__traceback__)
                ev.release()
                del ev
            elif code == 0:
                stream._wait(-1, wait)
            elif code == 3:
                stop_only.poll(10)  # views held: wait for some to go
            else:
                err = _EPIPE
                break
    finally:
        s.end_err = err
        stream.close()
        s.stream = s.fn = None
        with _subs_lock:
            _subs.discard(s)
        s.finished.set()


class Subscription:
    """A callback subscription (evstream.subscribe()); dropping it stops it."""

    __slots__ = ("_s", "__weakref__")

    def __init__(self, s):
        self._s = s

    def unsubscribe(self):
        s = self._s
        _ask_stop(s)
        if threading.current_thread() is s.thread:
            return  # from inside fn: the thread stops when fn returns
        s.finished.wait()

    def join(self, timeout=None):
        if timeout is not None:
            # threading's waits take at most TIMEOUT_MAX (inf: OverflowError)
            timeout = min(_parse_timeout(timeout, None), threading.TIMEOUT_MAX)
        s = self._s
        if threading.current_thread() is s.thread:
            raise RuntimeError("join() from inside the subscription's callback")
        return s.finished.wait(timeout)

    running = property(lambda self: not self._s.finished.is_set())
    events = property(lambda self: self._s.events)
    errors = property(lambda self: self._s.errors)
    core = property(lambda self: self._s.core)

    @property
    def ended_by(self):
        s = self._s
        if not s.finished.is_set():
            return None
        if s.end_err == 0:
            return "unsubscribed"
        if s.end_err == _EPIPE:
            return "producer gone"
        return s.end_msg or strerror(s.end_err)

    @property
    def stats(self):
        stream = self._s.stream
        if stream is None or stream.closed:
            raise ValueError("the subscription has ended")
        return stream.stats

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.unsubscribe()
        return False

    def __del__(self):
        try:
            _ask_stop(self._s)  # garbage collected: ask, do not wait
        except AttributeError:
            pass

    def __repr__(self):
        s = self._s
        return "<evstream.Subscription core=%d events=%d errors=%d%s>" % (
            s.core, s.events, s.errors, " ended" if s.finished.is_set() else "")


def subscribe(core, fn, producer=None, timeout=2.0, runtime_dir=None):
    given, timeout = timeout, _real(timeout)
    core = _parse_core(core)
    if not callable(fn):
        raise TypeError("fn %r is not callable" % (fn,))
    if not timeout >= 0:
        raise ValueError("timeout %r: allowed is seconds >= 0" % (given,))
    if _exiting:
        raise RuntimeError("subscribe: the interpreter is exiting")
    c, core, name, keep = _open(producer, core, float(timeout), runtime_dir)
    s = _SubState()
    s.stream = Stream(c, core, name, keep)
    s.fn = fn
    s.core = core
    s.stop = False
    s.rfd, s.wfd = os.pipe2(os.O_CLOEXEC | os.O_NONBLOCK)
    s.events = s.errors = s.end_err = 0
    s.end_msg = ""
    s.finished = threading.Event()
    s.thread = threading.Thread(target=_sub_main, args=(s,), daemon=True,
                                name="evstream-subscription-core%d" % core)
    with _subs_lock:
        _subs.add(s)
    s.thread.start()
    weakref.finalize(s, os.close, s.rfd)
    weakref.finalize(s, os.close, s.wfd)
    return Subscription(s)


def _stop_all(timeout=2.0):
    """At interpreter exit: stop every live subscription, wait a bounded time."""
    global _exiting
    _exiting = True
    with _subs_lock:
        live = list(_subs)
    for s in live:
        _ask_stop(s)
    deadline = time.monotonic() + timeout
    for s in live:
        s.finished.wait(max(0.0, deadline - time.monotonic()))


# ------------------------------------------------------------------ payloads, nrt

def tensor_parse(payload):
    """The library's reading of a tensor-read payload (evs_tensor_parse)."""
    view = _lib.PyBuffer()
    _lib.get_buffer(payload, ctypes.byref(view), _lib.PyBUF_SIMPLE)
    try:
        info = _lib.TensorInfo()
        if _lib.tensor_parse(view.buf, view.len, ctypes.byref(info)):
            return ("bad", None, None, None, None, None, None, None, None)
        is_print = bool(info.is_print)
        return ("print" if is_print else "tensor", _decode(info.prefix),
                None if is_print else _decode(info.dtype), info.core, info.pipe, info.elem_size,
                tuple(info.shape[:info.ndim]), (info.data or 0) - (view.buf or 0), info.bytes)
    finally:
        _lib.release_buffer(ctypes.byref(view))


def nrt_connect(core):
    fd = ctypes.c_int(-1)
    core = _index(core)
    if not -2**31 <= core < 2**31:
        raise OverflowError("core %d does not fit the reference API's int" % core)
    st = _lib.nrt_connect(core, ctypes.byref(fd))
    return st, fd.value


def nrt_read_one_event(fd):
    h = _lib.EventHeader()
    payload = ctypes.c_void_p()
    fd = _index(fd)
    if not -2**31 <= fd < 2**31:
        return 3, None, None  # NRT_INVALID_HANDLE, as the native one says
    st = _lib.nrt_read_one_event(fd, ctypes.byref(h), ctypes.byref(payload))
    if st != 0:
        return st, None, None
    try:
        return st, ctypes.string_at(ctypes.addressof(h), ctypes.sizeof(h)), \
            ctypes.string_at(payload.value, h.data_size) if h.data_size else b""
    finally:
        _lib.free(payload)


def nrt_close(fd):
    fd = _index(fd)
    if -2**31 <= fd < 2**31:
        _lib.nrt_close(fd)

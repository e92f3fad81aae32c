# SPDX-License-Identifier: MIT
"""The runtime's debug-stream API (include/nrt/ndebug_stream.h) in Python.

    fd = evstream.nrt.connect(core)            # nrt_debug_client_connect
    ev = evstream.nrt.read_one_event(fd)       # nrt_debug_client_read_one_event
    evstream.nrt.connect_close(fd)             # nrt_debug_client_connect_close

Status codes: NRT_SUCCESS is a return; NRT_QUEUE_EMPTY makes
read_one_event return None (poll the fd for POLLIN, then read again);
every other status raises NrtError, whose ``status`` is the NRT_STATUS
value, and NRT_CLOSED raises its subclass NrtClosed (also an EOFError).
The producer is the one of this process, or another process's named by
EVSTREAM_PRODUCER (docs/api.md).

read_one_event returns ``(header, payload)``: header an EventHeader
(data_size, type, and evstream's seq and timestamp_ns from the reserved
bytes); payload a TensorRead for a valid tensor-read event (parsed with
the library's evs_tensor_parse), else the payload's bytes. Both own their
data (the reference API copies every event out of the ring).
"""
import collections
import enum
import operator
import struct

from . import _impl, _common


class NRT_STATUS(enum.IntEnum):
    NRT_SUCCESS = 0
    NRT_FAILURE = 1
    NRT_INVALID = 2
    NRT_INVALID_HANDLE = 3
    NRT_RESOURCE = 4
    NRT_TIMEOUT = 5
    NRT_QUEUE_FULL = 7
    NRT_UNINITIALIZED = 13
    NRT_CLOSED = 14
    NRT_QUEUE_EMPTY = 15


globals().update(NRT_STATUS.__members__)

NDEBUG_STREAM_EVENT_TYPE_INVALID = 0
NDEBUG_STREAM_EVENT_TYPE_DEBUG_TENSOR_READ = 1

_MEANING = {
    NRT_STATUS.NRT_FAILURE: "failure (a corrupt stream)",
    NRT_STATUS.NRT_INVALID: "invalid argument, or the stream already has a client",
    NRT_STATUS.NRT_INVALID_HANDLE: "not a stream fd from connect()",
    NRT_STATUS.NRT_RESOURCE: "out of memory or descriptors",
    NRT_STATUS.NRT_TIMEOUT: "the handshake with the producer timed out",
    NRT_STATUS.NRT_UNINITIALIZED: "no producer to connect to (set EVSTREAM_PRODUCER to reach "
                                  "another process's)",
    NRT_STATUS.NRT_CLOSED: "the producer has gone and every event was read",
}


class NrtError(OSError):
    """A call returned an NRT_STATUS other than success (or queue empty)."""

    def __init__(self, status, what):
        self.status = NRT_STATUS(status)
        super().__init__("%s: %s (%s)" % (what, self.status.name,
                                          _MEANING.get(self.status, "")))


class NrtClosed(NrtError, EOFError):
    """NRT_CLOSED: the producer has gone and the stream is drained."""


def _raise(status, what):
    if status == NRT_STATUS.NRT_CLOSED:
        raise NrtClosed(status, what)
    raise NrtError(status, what)


class EventHeader(collections.namedtuple("EventHeader", "data_size type seq timestamp_ns")):
    """ndebug_stream_event_header_t: data_size and type; seq and timestamp_ns
    are what evstream keeps in its reserved bytes (docs/architecture.md)."""

    __slots__ = ()
    _S = struct.Struct("<QI4xQQ32x")

    @classmethod
    def unpack(cls, raw):
        size, typ, seq, ts = cls._S.unpack(raw)
        return cls(size, typ, seq, ts)


class TensorRead(collections.namedtuple(
        "TensorRead", "prefix logical_nc_id pipe dtype shape elem_size data is_print")):
    """ndebug_stream_payload_debug_tensor_read_t as evs_tensor_parse reads
    it; data is the tensor's bytes (C order)."""

    __slots__ = ()

    def array(self, bfloat16=None):
        """A NumPy array over data (bfloat16: its bits, see docs/python.md)."""
        if self.is_print:
            raise ValueError("a print has no tensor")
        return _common.make_array(self.data, self.dtype, self.elem_size, self.shape, bfloat16)


def parse_payload(payload):
    """A TensorRead of a tensor-read payload, or None when it is not one."""
    kind, prefix, dtype, core, pipe, elem_size, shape, off, nbytes = _impl.tensor_parse(payload)
    if kind == "bad":
        return None
    data = bytes(memoryview(payload)[off:off + nbytes]) if nbytes else b""
    return TensorRead(prefix, core, pipe, dtype, shape if kind == "tensor" else None,
                      elem_size if kind == "tensor" else 0, data, kind == "print")


def connect(logical_nc_idx):
    """nrt_debug_client_connect: the pollable stream fd of a core (an int:
    anything with __index__; '0' and 1.0 are a TypeError)."""
    status, fd = _impl.nrt_connect(logical_nc_idx)
    if status != NRT_STATUS.NRT_SUCCESS:
        _raise(status, "nrt_debug_client_connect(%d)" % operator.index(logical_nc_idx))
    return fd


def read_one_event(stream_fd):
    """nrt_debug_client_read_one_event: (header, payload), or None when no
    event is available (NRT_QUEUE_EMPTY: the fd becomes readable at the
    next one)."""
    status, raw_hdr, payload = _impl.nrt_read_one_event(stream_fd)
    if status == NRT_STATUS.NRT_QUEUE_EMPTY:
        return None
    if status != NRT_STATUS.NRT_SUCCESS:
        _raise(status, "nrt_debug_client_read_one_event(%d)" % operator.index(stream_fd))
    hdr = EventHeader.unpack(raw_hdr)
    if hdr.type == NDEBUG_STREAM_EVENT_TYPE_DEBUG_TENSOR_READ:
        parsed = parse_payload(payload)
        if parsed is not None:
            return hdr, parsed
    return hdr, payload


def connect_close(stream_fd):
    """nrt_debug_client_connect_close."""
    _impl.nrt_close(stream_fd)

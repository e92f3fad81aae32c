# SPDX-License-Identifier: MIT
"""evstream: per-core shared-memory event streams of accelerator debug
events (tensor reads), from Python.

Two implementations with one interface (docs/python.md):

- ``native``: the C extension evstream._native, built against CPython's
  limited API (abi3) on the public C API of libevstream;
- ``fallback``: pure Python over libevstream.so.1 with ctypes.

The native one is used when it can be imported, else the fallback;
``EVSTREAM_PY_IMPL=native`` or ``=fallback`` forces one.
``evstream.implementation`` says which is in use.
"""
import atexit as _atexit
import os as _os

from ._common import (DetachedEvent, EndOfStream, LeaseError, NPY_DTYPES, Stats, TooManyHeld,
                      bfloat16_to_float32, numpy_dtype)
from . import _common

__all__ = [
    "connect", "aconnect", "subscribe", "Producer", "Stream", "Event", "Subscription",
    "DetachedEvent", "Stats", "LeaseError", "TooManyHeld", "EndOfStream",
    "bfloat16_to_float32", "numpy_dtype", "implementation", "tensor_parse", "dtype_size",
]

IMPL_ENV = "EVSTREAM_PY_IMPL"
_want = _os.environ.get(IMPL_ENV, "")
#: why the native extension could not be imported (None when it was, or not tried)
native_error = None


def _why_not_native(e):
    # an extension that is not there makes Python speak of a circular
    # import ("partially initialized module"): say what is wrong instead
    import importlib.machinery
    here = _os.path.dirname(__file__)
    if not any(_os.path.exists(_os.path.join(here, "_native" + suffix))
               for suffix in importlib.machinery.EXTENSION_SUFFIXES):
        return "the extension is not built: no _native*.so in %s" % here
    return str(e)


if _want == "native":
    try:
        from . import _native as _impl
    except ImportError as e:
        raise ImportError("%s=native, but the extension evstream._native cannot be imported (%s); "
                          "build it with `make python` (needs python3-dev) or unset %s"
                          % (IMPL_ENV, _why_not_native(e), IMPL_ENV)) from e
elif _want == "fallback":
    from . import _fallback as _impl
elif _want in ("", "auto"):
    try:
        from . import _native as _impl
    except ImportError as e:
        native_error = _why_not_native(e)
        from . import _fallback as _impl
else:
    raise ImportError("%s=%r: allowed is 'native', 'fallback', or unset (or 'auto') to use the "
                      "native extension when it is there" % (IMPL_ENV, _want))

implementation = "native" if _impl.__name__.endswith("_native") else "fallback"

_impl._bind(Stats, LeaseError, TooManyHeld, EndOfStream, _common.make_array,
            _common.array_views, DetachedEvent, _common.report)
# live subscriptions stop before the interpreter finalizes
_atexit.register(_impl._stop_all, 2.0)

Producer = _impl.Producer
Stream = _impl.Stream
Event = _impl.Event
Subscription = _impl.Subscription
MAX_HELD = _impl.MAX_HELD
HAVE_PEEK_NEXT = bool(_impl.HAVE_PEEK_NEXT)
EVENT_TENSOR_READ = _impl.EVENT_TENSOR_READ
tensor_parse = _impl.tensor_parse
dtype_size = _impl.dtype_size


def connect(producer=None, core=0, timeout=None, runtime_dir=None):
    """Connect to one core's stream and return a Stream.

    producer: a name (another process or this one), a Producer object, or
    None for the first producer created in this process. timeout: seconds
    to wait for the producer to appear and for the handshake (default 2).
    """
    return _impl.connect(producer, core, timeout, runtime_dir)


def subscribe(core, fn, producer=None, timeout=2.0, runtime_dir=None):
    """Call fn(event) for each event of one core, from a background thread.

    Returns a Subscription: keep it (dropping it stops the calls), and end
    it with unsubscribe() or a with block. An exception in fn is logged
    (logger "evstream") and the stream goes on. Each event's lease ends
    when fn returns; views fn keeps hold their records.
    """
    return _impl.subscribe(core, fn, producer, timeout, runtime_dir)


def aconnect(producer=None, core=0, timeout=None, runtime_dir=None):
    """``async for ev in evstream.aconnect(...)``: a stream for asyncio."""
    from ._aio import AsyncStream
    return AsyncStream(producer, core, timeout, runtime_dir)


def __getattr__(name):
    # evstream.nrt and evstream.torch work after a bare `import evstream`;
    # imported on first use, so that torch is loaded only by who wants it
    if name in ("nrt", "torch"):
        import importlib
        return importlib.import_module("." + name, __name__)
    raise AttributeError("module 'evstream' has no attribute %r" % name)

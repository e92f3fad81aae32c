# SPDX-License-Identifier: MIT
"""Shared by the Python tests: a private runtime directory for the whole
session (so that producers never meet another run's), unique producer
names, the built tools, and helpers that wait with generous deadlines
(the tests run on small machines shared with other builds: nothing here
measures time)."""
import ctypes
import itertools
import os
import pathlib
import shutil
import struct
import subprocess
import sys
import tempfile
import time

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
BUILD = pathlib.Path(os.environ.get("EVS_BUILD", ROOT / "build"))
PY = sys.executable

if "EVSTREAM_RUNTIME_DIR" not in os.environ:
    os.environ["EVSTREAM_RUNTIME_DIR"] = tempfile.mkdtemp(prefix="evs-pytest-run-")
RUNTIME_DIR = os.environ["EVSTREAM_RUNTIME_DIR"]
# small test rings need no huge pages: leave those to the C suites
os.environ.setdefault("EVSTREAM_HUGEPAGES", "off")

import evstream  # noqa: E402  (after the environment above)

_names = itertools.count()
DEADLINE = 30.0  # seconds: generous, only to end a hung test


def pytest_report_header(config):
    return "evstream %s implementation (records held per stream: %d), runtime dir %s" % (
        evstream.implementation, evstream.MAX_HELD, RUNTIME_DIR)


def pytest_sessionstart(session):
    want = os.environ.get("EVSTREAM_PY_IMPL")
    if want and want != evstream.implementation:
        raise pytest.UsageError("EVSTREAM_PY_IMPL=%s but evstream uses %s"
                                % (want, evstream.implementation))


def unique(tag="t"):
    return "py%d-%s-%d" % (os.getpid(), tag, next(_names))


@pytest.fixture
def name():
    return unique()


@pytest.fixture
def producer(name):
    p = evstream.Producer(name, 2, ring_bytes=1 << 20)
    yield p
    p.close()


def wait_for(cond, what, timeout=DEADLINE, step=0.005):
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError("timed out after %.0f s waiting for %s" % (timeout, what))
        time.sleep(step)


def tool(name):
    path = BUILD / name
    if not path.exists():
        pytest.fail("%s is not built (make dump-tools)" % path)
    return str(path)


def env(**extra):
    e = dict(os.environ)
    e.update({k: str(v) for k, v in extra.items()})
    return e


def run_python(code, timeout=120, **extra):
    """Run code in a fresh interpreter with this session's environment."""
    return subprocess.run([PY, "-c", code], env=env(**extra), capture_output=True, text=True,
                          timeout=timeout)


class Procs:
    """Processes a test started; killed at its end whatever happened."""

    def __init__(self):
        self.procs = []

    def start(self, args, **kw):
        p = subprocess.Popen(args, **kw)
        self.procs.append(p)
        return p

    def close(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
            p.wait()


@pytest.fixture
def procs():
    ps = Procs()
    yield ps
    ps.close()


@pytest.fixture
def tmpdir_fast():
    """A temporary directory in memory when there is room (dumps make many files)."""
    base = "/dev/shm" if os.access("/dev/shm", os.W_OK) and \
        shutil.disk_usage("/dev/shm").free > (512 << 20) else None
    d = tempfile.mkdtemp(prefix="evs-pytest-", dir=base)
    yield pathlib.Path(d)
    shutil.rmtree(d, ignore_errors=True)


def corrupting_producer(name, cores):
    """A producer through the library's C API (ctypes), standing in for a
    broken one in another process: emit(core, poke) seals a record, lets
    poke rewrite its header before any consumer can see it, publishes."""
    lib = ctypes.CDLL(os.environ["EVSTREAM_LIBRARY"], use_errno=True)
    lib.evs_producer__new.restype = ctypes.c_void_p
    lib.evs_producer__new.argtypes = [ctypes.c_char_p, ctypes.c_uint, ctypes.c_void_p]
    lib.evs_producer__reserve.restype = ctypes.c_void_p
    lib.evs_producer__reserve.argtypes = [ctypes.c_void_p, ctypes.c_uint, ctypes.c_uint32,
                                          ctypes.c_size_t]
    for f in ("commit_deferred", "publish"):
        getattr(lib, "evs_producer__" + f).argtypes = [ctypes.c_void_p, ctypes.c_uint]
    lib.evs_producer__free.argtypes = [ctypes.c_void_p]
    p = lib.evs_producer__new(name.encode(), cores, None)
    assert p

    def emit(core, poke=None):
        deadline = time.monotonic() + DEADLINE
        while True:
            pl = lib.evs_producer__reserve(p, core, 7, 8)
            if pl:
                break
            assert time.monotonic() < deadline, "no consumer on core %d" % core
            time.sleep(0.01)
        ctypes.memmove(pl, b"abcdefgh", 8)
        assert lib.evs_producer__commit_deferred(p, core) == 0
        if poke:
            poke(ctypes.c_uint64.from_address(pl - 64))     # the header's data_size
        assert lib.evs_producer__publish(p, core) == 0

    return emit, lambda: lib.evs_producer__free(p)


def tensor_payload(prefix=b"p", dtype=b"float32", shape=(), elem_size=0, data=b""):
    """A tensor-read payload built field by field (docs/architecture.md
    "Records", include/nrt/ndebug_stream.h), as a producer may write one."""
    b = bytearray(1024)
    b[0:len(prefix)] = prefix
    struct.pack_into("<II", b, 512, 0, 1)
    b[520:520 + len(dtype)] = dtype
    struct.pack_into("<8Q", b, 536, *(list(shape) + [0] * (8 - len(shape))))
    struct.pack_into("<Q", b, 600, len(data))
    struct.pack_into("<HBBI", b, 608, 0x4e45, len(shape), 0, elem_size)
    return bytes(b) + data

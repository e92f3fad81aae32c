# SPDX-License-Identifier: MIT
"""evstream.nrt: the runtime's debug-stream API (connect, read_one_event,
connect_close) with its status codes."""
import select

import numpy as np
import pytest

import evstream
import evstream.nrt as nrt
from conftest import BUILD, run_python, unique


def test_connect_read_close_in_process(producer, monkeypatch):
    monkeypatch.setenv("EVSTREAM_PRODUCER", producer.name)
    fd = nrt.connect(1)
    assert nrt.read_one_event(fd) is None          # NRT_QUEUE_EMPTY
    assert select.select([fd], [], [], 0)[0] == []
    src = np.arange(12, dtype=np.float32).reshape(3, 4)
    producer.emit_tensor(1, "layer.out", src.T, pipe=2)
    assert select.select([fd], [], [], 30)[0] == [fd]
    hdr, pl = nrt.read_one_event(fd)
    assert (hdr.type, hdr.seq, hdr.data_size) == (
        nrt.NDEBUG_STREAM_EVENT_TYPE_DEBUG_TENSOR_READ, 0, 1024 + 48)
    assert isinstance(pl, nrt.TensorRead)
    assert (pl.prefix, pl.logical_nc_id, pl.pipe, pl.dtype, pl.shape, pl.elem_size) == (
        "layer.out", 1, 2, "float32", (4, 3), 4)
    assert pl.data == np.ascontiguousarray(src.T).tobytes()
    assert (pl.array() == src.T).all()
    producer.emit(1, 77, b"raw")
    hdr, pl = nrt.read_one_event(fd)
    assert (hdr.type, pl) == (77, b"raw")
    producer.emit_tensor(1, "just text")
    hdr, pl = nrt.read_one_event(fd)
    assert pl.is_print and pl.prefix == "just text" and pl.data == b""
    nrt.connect_close(fd)
    with pytest.raises(nrt.NrtError) as e:
        nrt.read_one_event(fd)
    assert e.value.status == nrt.NRT_INVALID_HANDLE


def test_closed_and_invalid(producer, monkeypatch):
    monkeypatch.setenv("EVSTREAM_PRODUCER", producer.name)
    fd = nrt.connect(0)
    with pytest.raises(nrt.NrtError, match="NRT_INVALID") as e:
        nrt.connect(0)                              # a second client
    assert e.value.status == nrt.NRT_STATUS.NRT_INVALID
    with pytest.raises(nrt.NrtError) as e:
        nrt.connect(9)                              # out of range
    assert e.value.status == nrt.NRT_INVALID
    producer.emit(0, 3, b"last")
    producer.close()
    assert nrt.read_one_event(fd)[1] == b"last"
    with pytest.raises(nrt.NrtClosed, match="NRT_CLOSED"):
        nrt.read_one_event(fd)
    with pytest.raises(EOFError):
        nrt.read_one_event(fd)
    nrt.connect_close(fd)


# ints past the reference API's int, up to past C long: what the fallback
# does with any size of int, the extension does too (not a bare
# OverflowError from the conversion to long)
BIG = [2**31, -2**31 - 1, 2**63, -2**63 - 1, 2**64, -2**64, 2**100]


@pytest.mark.parametrize("n", BIG, ids=[str(n) for n in BIG])
def test_ints_past_the_reference_apis_int(n):
    with pytest.raises(nrt.NrtError) as e:
        nrt.read_one_event(n)                       # not a stream fd
    assert type(e.value) is nrt.NrtError and e.value.status == nrt.NRT_INVALID_HANDLE
    assert str(e.value) == ("nrt_debug_client_read_one_event(%d): NRT_INVALID_HANDLE (not a "
                            "stream fd from connect())" % n)
    assert nrt.connect_close(n) is None             # nothing to close
    with pytest.raises(OverflowError) as e:
        nrt.connect(n)
    assert type(e.value) is OverflowError
    assert str(e.value) == "core %d does not fit the reference API's int" % n


@pytest.mark.skipif(not (BUILD / "python" / "evstream" / "_native.abi3.so").exists(),
                    reason="the native extension is not built")
@pytest.mark.parametrize("n", BIG + [True, 1.0, "3"], ids=[str(n) for n in BIG + [True, 1.0, "3"]])
def test_both_implementations_take_nrt_arguments_alike(n):
    from evstream import _fallback, _native

    def outcome(f):
        try:
            return f(n)
        except Exception as e:  # noqa: BLE001  (compared, type and text)
            return type(e), str(e)
    for f in ("nrt_connect", "nrt_read_one_event", "nrt_close"):
        if f == "nrt_connect" and n is True:
            continue                                # core 1 exists or not: not the point
        assert outcome(getattr(_native, f)) == outcome(getattr(_fallback, f)), f


# a core or fd that is not an int is refused as it is everywhere else in
# the package, not truncated to one: 0.5 is not core 0, fd + 0.5 not fd
NOT_INTS = [(float, "float"), (lambda n: n + 0.5, "n+0.5"), (str, "str")]


@pytest.mark.parametrize("conv", [c for c, _ in NOT_INTS], ids=[i for _, i in NOT_INTS])
def test_the_reference_api_takes_ints_only(producer, monkeypatch, conv):
    monkeypatch.setenv("EVSTREAM_PRODUCER", producer.name)
    not_int = "cannot be interpreted as an integer"
    with pytest.raises(TypeError, match=not_int):
        nrt.connect(conv(0))
    fd = nrt.connect(0)                             # core 0 was left free
    producer.emit(0, 5, b"x")
    with pytest.raises(TypeError, match=not_int):
        nrt.read_one_event(conv(fd))
    with pytest.raises(TypeError, match=not_int):
        nrt.connect_close(conv(fd))
    assert nrt.read_one_event(fd)[1] == b"x"        # neither read nor closed
    nrt.connect_close(fd)


def test_no_producer_is_uninitialized():
    r = run_python("import evstream.nrt as n\n"
                   "try:\n    n.connect(0)\nexcept n.NrtError as e:\n    print(e.status.name)\n",
                   EVSTREAM_PRODUCER="")
    assert r.stdout.strip() == "NRT_UNINITIALIZED", r.stderr


def test_another_process_through_evstream_producer(producer, procs):
    import subprocess
    import sys
    from conftest import env
    child = procs.start([sys.executable, "-c", (
        "import select, evstream.nrt as n\n"
        "fd = n.connect(1)\n"
        "while True:\n"
        "    ev = n.read_one_event(fd)\n"
        "    if ev is None:\n"
        "        select.select([fd], [], [], 30)\n"
        "        continue\n"
        "    print(ev[1].prefix, ev[1].shape, ev[1].array().sum(), flush=True)\n"
        "    break\n"
        "n.connect_close(fd)\n")],
        env=env(EVSTREAM_PRODUCER=producer.name), stdout=subprocess.PIPE, text=True)
    assert producer.wait_connected([1], timeout=30)
    assert producer.emit_tensor(1, "far", np.ones((2, 5), np.int32))
    out, _ = child.communicate(timeout=60)
    assert child.returncode == 0 and out.split() == ["far", "(2,", "5)", "10"]

# SPDX-License-Identifier: MIT
"""The consumer: connect, iteration, read, read_batch, fileno with select
and selectors, stats, gaps and drops, the end of a stream, errors."""
import ctypes
import errno
import itertools
import select
import selectors
import signal
import sys
import textwrap
import threading

import numpy as np
import pytest

import evstream
from conftest import procs, run_python, tensor_payload, tool, unique, wait_for  # noqa: F401


def test_connect_by_name_by_object_and_to_this_process(producer, name):
    with evstream.connect(name, 1) as s:
        assert s.core == 1 and s.producer == name
    with evstream.connect(producer, 0) as s:
        assert s.producer == name
        producer.emit(0, 5, b"x")
        ev = s.read(5)
        assert (ev.type, bytes(ev.data)) == (5, b"x")


def test_iteration_in_order_until_the_producer_closes(producer, name):
    s = evstream.connect(name, 0)
    for i in range(20):
        assert producer.emit(0, 3, i.to_bytes(4, "little"))
    producer.close()
    got = [(ev.seq, int.from_bytes(ev.data, "little"), ev.gap) for ev in s]
    assert got == [(i, i, 0) for i in range(20)]
    assert s.ended
    with pytest.raises(evstream.EndOfStream, match="producer has gone"):
        s.read(0)


def test_iteration_releases_the_previous_event(producer, name):
    s = evstream.connect(name, 0)
    for i in range(3):
        producer.emit(0, 3, b"abc")
    it = iter(s)
    first = next(it)
    assert not first.released
    second = next(it)
    assert first.released and not second.released
    with pytest.raises(evstream.LeaseError, match="seq 0 of core 0 was released"):
        first.data


def test_an_event_carries_nothing_of_events_read_before_it(producer, name):
    """Events are made and dropped once per record (and their memory
    reused): each must show its own record only, whatever came before."""
    s = evstream.connect(name, 0)
    t = np.arange(6, dtype=np.float32).reshape(2, 3)
    producer.emit_tensor(0, "a.weight", t, pipe=1)
    producer.emit(0, 7, b"raw!")
    producer.emit_tensor(0, "hello", None, pipe=2)       # a print
    producer.emit_tensor(0, "b", t[:, 1].astype(np.int16), pipe=1)
    producer.emit(0, 9, b"")
    seen = []
    for ev in itertools.islice(s, 5):
        seen.append((ev.seq, ev.type, ev.kind, ev.prefix, ev.dtype, ev.shape, ev.gap,
                     ev.released, bytes(ev.data)))
    tensor = evstream.EVENT_TENSOR_READ
    assert seen == [
        (0, tensor, "tensor", "a.weight", "float32", (2, 3), 0, False, t.tobytes()),
        (1, 7, "raw", None, None, None, 0, False, b"raw!"),
        (2, tensor, "print", "hello", None, None, 0, False, b""),
        (3, tensor, "tensor", "b", "int16", (2,), 0, False, np.array([1, 4], np.int16).tobytes()),
        (4, 9, "raw", None, None, None, 0, False, b""),
    ]


def test_a_copy_has_every_attribute_of_the_event(producer, name):
    # "the same fields and methods": every public attribute of Event, with
    # the same value (the lease's own excepted: a copy has none)
    s = evstream.connect(name, 0)
    t = np.arange(6, dtype=np.float32).reshape(2, 3)
    producer.emit_tensor(0, "a.weight", t, pipe=2)
    producer.emit(0, 7, b"raw!")
    producer.emit_tensor(0, "hello", None)
    producer.emit(0, evstream.EVENT_TENSOR_READ, b"not a tensor read")
    attrs = [a for a in dir(evstream.Event) if not a.startswith("_")]
    assert {"payload_size", "nbytes", "data", "array", "copy", "held"} <= set(attrs)
    kinds = []
    for ev in itertools.islice(s, 4):
        c = ev.copy()
        kinds.append(ev.kind)
        for a in attrs:
            assert hasattr(c, a), "DetachedEvent has no %r" % a
            mine, theirs = getattr(ev, a), getattr(c, a)
            if a == "data":
                assert bytes(mine) == bytes(theirs)
            elif a == "array":
                assert mine().tobytes() == theirs().tobytes() and mine().dtype == theirs().dtype
            elif a in ("released", "held"):
                assert theirs is False
            elif not callable(mine):
                assert mine == theirs, (ev.kind, a, mine, theirs)
        assert c.payload_size > c.nbytes if ev.kind == "tensor" else True
    assert kinds == ["tensor", "raw", "print", "bad"]
    s.close()


def test_read_with_timeout_returns_none(producer, name):
    with evstream.connect(name, 0) as s:
        assert s.read(0) is None
        assert s.read(0.05) is None
        producer.emit(0, 1, b"")
        ev = s.read(1)
        assert ev.payload_size == 0 and ev.kind == "bad"  # type 1 without a tensor payload


def test_read_by_position_and_by_name(producer, name):
    with evstream.connect(name, 0) as s:
        assert s.read(timeout=0) is None and s.read(0) is None
        for data in (b"a", b"b", b"c"):
            producer.emit(0, 5, data)
        got = [s.read(), s.read(1), s.read(timeout=1)]
        assert [bytes(e.data) for e in got] == [b"a", b"b", b"c"]
        # the interpreter's messages: the extension's and the fallback's differ
        with pytest.raises(TypeError, match=r"at most 1 argument|but 3 were given"):
            s.read(0, 1)
        with pytest.raises(TypeError, match=r"'wait'"):
            s.read(wait=1)


def test_read_batch(producer, name):
    with evstream.connect(name, 0) as s:
        assert s.read_batch(4) == []
        for i in range(6):
            producer.emit(0, 2, bytes([i]))
        seen = []
        while len(seen) < 6:
            batch = s.read_batch(4, timeout=5)
            assert 1 <= len(batch) <= min(4, s.max_held)
            seen += [ev.data[0] for ev in batch]
            for ev in batch:
                ev.release()
            del batch, ev
        assert seen == list(range(6))
        with pytest.raises(ValueError, match="n >= 1"):
            s.read_batch(0)


def test_a_timeout_of_none_waits_for_read_and_read_batch_alike(producer, name):
    # None: for as long as it takes, in read() as in read_batch(); the
    # default of read_batch stays 0 (what is there)
    with evstream.connect(name, 0) as s:
        assert s.read_batch(4) == [] and s.read_batch(4, 0) == []
        for read in (lambda: s.read(None), lambda: s.read_batch(3, timeout=None)):
            t = threading.Timer(0.2, producer.emit, (0, 2, b"late"))
            t.start()
            got = read()
            t.join()
            ev = got[0] if isinstance(got, list) else got
            assert bytes(ev.data) == b"late"
            ev.release()
            del got, ev


LONG_TIMEOUTS = [float("inf"), 3e6, 1e300]     # forever; 35 days (past a C int of ms); huge


@pytest.mark.parametrize("t", LONG_TIMEOUTS, ids=["inf", "3e6", "1e300"])
def test_timeouts_of_any_size_are_waits(producer, name, t):
    # any real number of seconds >= 0 is a timeout, inf and those past what
    # poll() or the library take in milliseconds too: the wait is clamped,
    # never an overflow (the events here come at once or soon)
    with evstream.connect(name, 0, timeout=t) as s:
        producer.emit(0, 2, b"ready")
        with s.read(t) as ev:
            assert bytes(ev.data) == b"ready"
        producer.emit(0, 2, b"batch")
        batch = s.read_batch(3, timeout=t)
        assert [bytes(ev.data) for ev in batch] == [b"batch"]
        for ev in batch:
            ev.release()
        del batch, ev
        timer = threading.Timer(0.2, producer.emit, (0, 2, b"late"))
        timer.start()
        ev = s.read(t)                  # waits, then wakes at the event
        timer.join()
        assert bytes(ev.data) == b"late"
        ev.release()
    got = []
    sub = evstream.subscribe(1, lambda ev: got.append(bytes(ev.data)), producer=name, timeout=t)
    producer.emit(1, 2, b"sub")
    wait_for(lambda: got, "the callback")
    sub.unsubscribe()
    assert got == [b"sub"] and sub.join(t) is True


def test_fileno_with_select(producer, name):
    with evstream.connect(name, 0) as s:
        assert s.read(0) is None  # empty: arms the wakeup
        assert select.select([s], [], [], 0)[0] == []
        t = threading.Timer(0.05, producer.emit, (0, 4, b"wake"))
        t.start()
        r, _, _ = select.select([s], [], [], 30)
        t.join()
        assert r == [s]
        assert bytes(s.read(0).data) == b"wake"


def test_fileno_with_selectors_over_two_cores(producer, name):
    sel = selectors.DefaultSelector()
    streams = [evstream.connect(name, c) for c in (0, 1)]
    for st in streams:
        assert st.read(0) is None
        sel.register(st, selectors.EVENT_READ)
    producer.emit(1, 9, b"one")
    ready = sel.select(30)
    assert [k.fileobj.core for k, _ in ready] == [1]
    ev = streams[1].read(0)
    assert (ev.core, bytes(ev.data)) == (1, b"one")
    for st in streams:
        sel.unregister(st)
        st.close()


def test_stats_gaps_and_drops_are_visible(name):
    # a ring of 4 events: the rest of a burst is dropped and counted
    with evstream.Producer(name, 1, ring_bytes=1 << 20, max_events=4) as p:
        s = evstream.connect(name, 0)
        results = [p.emit(0, 7, bytes([i])) for i in range(10)]
        assert results == [True] * 4 + [False] * 6
        p.emit(0, 7, b"x")  # still full
        st = s.stats
        assert (st.committed, st.dropped, st.dropped_ring_full) == (4, 7, 7)
        assert st.dropped_events == {"ring_full": 7, "too_big": 0, "no_consumer": 0,
                                     "no_memory": 0}
        for _ in range(4):
            with s.read(5):
                pass
        assert p.emit(0, 7, b"after")
        ev = s.read(5)
        assert (ev.seq, ev.gap, bytes(ev.data)) == (11, 7, b"after")
        assert s.lost == 7 == s.stats.dropped
        assert p.stats(0).committed == 5


def test_no_consumer_drops_show_as_the_first_gap(name):
    with evstream.Producer(name, 1, ring_bytes=1 << 20) as p:
        assert p.emit(0, 7, b"lost") is False and p.emit(0, 7, b"lost") is False
        assert p.stats(0).dropped_no_consumer == 2
        s = evstream.connect(name, 0)
        p.emit(0, 7, b"kept")
        ev = s.read(5)
        assert (ev.seq, ev.gap) == (2, 2)


def test_closed_stream_refuses_io(producer, name):
    s = evstream.connect(name, 0)
    s.close()
    s.close()  # twice is fine
    assert s.closed
    for f in (lambda: s.read(0), s.fileno, lambda: s.stats, lambda: next(s)):
        with pytest.raises(ValueError, match="closed"):
            f()
    with evstream.connect(name, 0):  # the core is free again
        pass


def producer_ring(name, core, ring_bytes):
    """Where this process's producer maps core's ring for writing: the
    bytes a producer that went wrong would have written."""
    tag = "/memfd:evstream:%s:%d " % (name, core)
    for line in open("/proc/self/maps"):
        addr, perms = line.split()[:2]
        lo, hi = (int(x, 16) for x in addr.split("-"))
        if perms == "rw-s" and hi - lo == ring_bytes and tag in line + " ":
            return lo       # the first of the double mapping: offset 0
    raise AssertionError("no writable mapping of %s in /proc/self/maps" % tag)


def test_a_corrupt_stream_says_what_its_producer_wrote_wrong(producer, name):
    s = evstream.connect(name, 0)
    assert producer.emit(0, 1, b"x" * 16)
    # the first record's data_size, as a broken producer might leave it
    ctypes.c_uint64.from_address(producer_ring(name, 0, 1 << 20)).value = 1 << 40
    for _ in range(2):      # broken for good, and each read says why
        with pytest.raises(OSError) as e:
            s.read(0)
        assert e.value.errno == errno.EBADMSG
        assert "core 0: stream corrupt" in str(e.value), str(e.value)
        assert "claims 1099511627776 payload bytes" in str(e.value), str(e.value)


def test_header_seqs_wrap_at_64_bits(producer, name):
    # a producer's header seq goes 2**64-1, then 5, 6: counted modulo 2**64,
    # as the C library does (the seq after 2**64-1 is 0, so 5 follows a gap of 5)
    s = evstream.connect(name, 0)
    base = producer_ring(name, 0, 1 << 20)
    for i, seq in enumerate((2**64 - 1, 5, 6)):
        assert producer.emit(0, 7, b"abcdefgh")
        # each record: 64 header bytes + 8 of data; the header's seq at 16
        ctypes.c_uint64.from_address(base + 72 * i + 16).value = seq
    got = []
    for _ in range(3):
        ev = s.read(1)
        got.append((ev.seq, ev.gap, s.lost))
        ev.release()
    assert got == [(2**64 - 1, 2**64 - 1, 2**64 - 1), (5, 5, 4), (6, 0, 4)]


@pytest.mark.parametrize("shape", [(0, 2**64 - 1), (0, 2**62, 2**62)], ids=["dim", "product"])
def test_an_empty_tensor_numpy_cannot_shape_is_refused_by_name(producer, name, shape):
    import evstream.nrt as nrt
    pl = tensor_payload(shape=shape)
    s = evstream.connect(name, 0)
    assert producer.emit(0, 1, pl)
    ev = s.read(5)
    assert (ev.kind, ev.shape, ev.nbytes) == ("tensor", shape, 0)    # the library accepts it
    said = "shape %s of this empty float32 tensor: NumPy cannot hold it" % (shape,)
    calls = [ev.array, ev.copy().array, nrt.parse_payload(pl).array]
    try:
        import evstream.torch as et
        calls.append(lambda: et.tensor(ev))
    except ImportError:     # no PyTorch: the three others
        pass
    for f in calls:
        with pytest.raises(ValueError) as e:
            f()
        assert str(e.value).startswith(said) and "2**63-1" in str(e.value), str(e.value)
    ev.release()
    s.close()


@pytest.mark.parametrize("elem_size", [2**31, 2**32 - 1])
def test_opaque_elements_numpy_cannot_size_are_refused_by_name(producer, name, elem_size):
    said = "elem_size %d of dtype 'blob': NumPy's opaque elements (|Vn) are allowed 0 to " \
        "2147483647 bytes" % elem_size
    with pytest.raises(ValueError) as e:
        evstream.numpy_dtype("blob", elem_size)
    assert str(e.value) == said
    assert evstream.numpy_dtype("blob", 2**31 - 1) == "|V2147483647"
    # an empty tensor, so that it fits any ring, of a dtype NumPy does not know
    s = evstream.connect(name, 0)
    assert producer.emit(0, 1, tensor_payload(dtype=b"blob", shape=(0,), elem_size=elem_size))
    ev = s.read(5)
    assert (ev.kind, ev.elem_size) == ("tensor", elem_size)
    for f in (ev.array, ev.copy().array):
        with pytest.raises(ValueError) as e:
            f()     # not an array of |V-1 (itemsize -1)
        assert str(e.value) == said
    ev.release()
    s.close()


CLOSE_WHILE_WAITING = textwrap.dedent("""
    import os, sys, threading, time, evstream
    p = evstream.Producer({name!r}, 1, ring_bytes=1 << 20)
    s = evstream.connect({name!r}, 0)
    def watchdog():                 # a read close() does not wake hangs: say so
        time.sleep(10)
        print("the read was not woken", flush=True)
        os._exit(3)
    threading.Thread(target=watchdog, daemon=True).start()
    if {held!r}:                    # a view of an earlier event stays alive
        p.emit(0, 5, b"viewed")
        ev = s.read(5)
        view = ev.array()
        ev.release()
        del ev
    threading.Timer(0.2, s.close).start()
    try:
        r = {call}
        print("returned", r, flush=True)
    except ValueError as e:
        print("ValueError:", e, flush=True)
    assert s.closed
    if {held!r}:
        assert view.tobytes() == b"viewed"  # still held, still readable
        del view
    # the consumer has gone (once nothing is held): the core takes another
    with evstream.connect({name!r}, 0) as s2:
        p.emit(0, 5, b"next")
        print(bytes(s2.read(5).data), flush=True)
""")


@pytest.mark.parametrize("held", [False, True], ids=["nothing-held", "a-view-held"])
@pytest.mark.parametrize("call", ["s.read(None)", "s.read(5)", "s.read_batch(1, None)",
                                  "next(iter(s))"])
def test_close_from_another_thread_wakes_a_waiting_read(call, held):
    """close() while a read waits in another thread: the read wakes and
    raises the closed stream's ValueError (no crash, no hang, no OSError),
    and the consumer goes once the read has let go of it."""
    r = run_python(CLOSE_WHILE_WAITING.format(name=unique("close"), call=call, held=held),
                   timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.splitlines() == ["ValueError: I/O operation on a closed evstream stream",
                                     "b'next'"], r.stdout + r.stderr


def test_connect_errors_name_the_value(producer, name):
    with pytest.raises(FileNotFoundError, match="no-such-producer"):
        evstream.connect("no-such-producer", 0, timeout=0)
    with pytest.raises(OSError, match="core 7 is out of range.*0 to 1") as e:
        evstream.connect(name, 7)
    assert e.value.errno == errno.EINVAL
    with evstream.connect(name, 0):
        with pytest.raises(OSError, match="already has a consumer") as e:
            evstream.connect(name, 0)
        assert e.value.errno == errno.EBUSY
    with pytest.raises(ValueError, match="core -1: allowed is 0 to 4095"):
        evstream.connect(name, -1)
    with pytest.raises(TypeError, match="producer 3"):
        evstream.connect(3, 0)
    with pytest.raises(ValueError, match="timeout -1"):
        evstream.connect(name, 0, timeout=-1)
    with evstream.connect(name, 0) as s, pytest.raises(ValueError, match="timeout"):
        s.read(-2)


@pytest.mark.skipif(sys.version_info >= (3, 12),
                    reason="None is immortal from Python 3.12: its count shows no leak")
def test_a_refused_producer_argument_keeps_no_reference():
    # connect() and subscribe() refusing their producer= let go of what
    # they took meanwhile (None, the name). Python 3.11's None counts its
    # references: 2000 refusals leaking one each would show
    calls = (lambda: evstream.connect(3, 0), lambda: evstream.subscribe(0, print, producer=3))
    for call in calls:
        before = sys.getrefcount(None)
        for _ in range(2000):
            with pytest.raises(TypeError, match="producer 3"):
                call()
        assert sys.getrefcount(None) - before < 100


def test_connect_waits_for_the_producer_to_appear(name):
    p = []
    t = threading.Timer(0.2, lambda: p.append(evstream.Producer(name, 1, ring_bytes=1 << 20)))
    t.start()
    try:
        with evstream.connect(name, 0, timeout=30) as s:
            assert s.core == 0
    finally:
        t.join()
        for x in p:
            x.close()


def test_events_of_another_process(procs, tmp_path):
    """evs-demo (every dtype, strided views, prints) read by name."""
    name = unique("demo")
    demo = procs.start([tool("evs-demo"), "--name", name, "--cores", "2", "--pattern", "all",
                        "--events", "300", "--rate", "0", "--ring", "4M"])
    streams = [evstream.connect(name, c, timeout=30) for c in (0, 1)]
    kinds = set()
    n = 0
    for s in streams:
        for ev in s:
            n += 1
            kinds.add(ev.kind)
            assert ev.core == s.core and ev.logical_nc_id == s.core
            if ev.kind == "tensor":
                a = ev.array()
                assert a.shape == ev.shape and a.nbytes == ev.nbytes
                assert a.dtype == np.dtype(evstream.numpy_dtype(ev.dtype, ev.elem_size))
                del a
        assert s.ended and not s.stats.producer_died
    assert demo.wait(60) == 0
    assert kinds <= {"tensor", "print"} and "tensor" in kinds
    assert n + sum(s.stats.dropped for s in streams) == 600


def test_a_producer_that_dies_is_drained_then_ends(procs):
    name = unique("die")
    demo = procs.start([tool("evs-demo"), "--name", name, "--cores", "1", "--events", "50",
                        "--rate", "0", "--hold"])
    s = evstream.connect(name, 0, timeout=30)
    wait_for(lambda: s.stats.committed == 50, "50 events committed")
    demo.send_signal(signal.SIGKILL)
    demo.wait(30)
    seqs = [ev.seq for ev in s]
    assert seqs == list(range(50))
    assert s.stats.producer_died == 1
    s.close()


def test_ctrl_c_interrupts_a_waiting_iteration(procs, name):
    """SIGINT reaches a loop waiting for events: KeyboardInterrupt, promptly."""
    import subprocess
    import sys
    import time
    from conftest import env
    with evstream.Producer(name, 1, ring_bytes=1 << 20):
        # KeyboardInterrupt's handler set in the child itself: a harness
        # started in the background by a shell without job control leaves
        # SIGINT ignored, and Python would then keep it so
        child = procs.start([sys.executable, "-c",
                             "import signal\n"
                             "signal.signal(signal.SIGINT, signal.default_int_handler)\n"
                             "import evstream\n"
                             "s = evstream.connect(%r, 0)\n"
                             "try:\n"
                             "    print('waiting', flush=True)\n"
                             "    for ev in s:\n"
                             "        pass\n"
                             "except KeyboardInterrupt:\n"
                             "    print('interrupted', flush=True)\n" % name],
                            env=env(), stdout=subprocess.PIPE, text=True)
        assert child.stdout.readline().strip() == "waiting"
        time.sleep(0.2)          # most likely in its wait by now; either way it is caught
        child.send_signal(signal.SIGINT)
        out, _ = child.communicate(timeout=60)
        assert out.strip() == "interrupted" and child.returncode == 0


def test_runtime_dir_argument(tmp_path, procs, name):
    """A producer and a consumer in another process meet in the directory given."""
    import subprocess
    import sys
    from conftest import env
    rdir = tmp_path / "run"
    rdir.mkdir(mode=0o700)
    with evstream.Producer(name, 1, ring_bytes=1 << 20, runtime_dir=str(rdir)) as p:
        assert (rdir / (name + ".sock")).exists()
        child = procs.start([sys.executable, "-c",
                             "import evstream\n"
                             "s = evstream.connect(%r, 0, timeout=30, runtime_dir=%r)\n"
                             "print(bytes(s.read(30).data).decode(), flush=True)\n"
                             % (name, str(rdir))],
                            env=env(), stdout=subprocess.PIPE, text=True)
        assert p.wait_connected(timeout=60)
        p.emit(0, 4, b"found")
        out, _ = child.communicate(timeout=60)
    assert out.strip() == "found" and child.returncode == 0

# SPDX-License-Identifier: MIT
"""Views are leases: a record stays in the ring while its event is not
released or any view of it is alive, and nothing reads ring memory after
that (docs/python.md, "Leases")."""
import gc

import numpy as np
import pytest

import evstream

needs_window = pytest.mark.skipif(
    evstream.MAX_HELD < 3,
    reason="holding several records at once needs evs_consumer__peek_next() in libevstream "
           "(this one holds %d)" % evstream.MAX_HELD)


def tensor(p, core, prefix, value, n=256):
    assert p.emit_tensor(core, prefix, np.full(n, value, dtype=np.float32))


def test_use_after_release_raises_and_never_reads_the_ring(producer, name):
    s = evstream.connect(name, 0)
    tensor(producer, 0, "a", 1.0)
    ev = s.read(5)
    mv = ev.data
    assert mv.nbytes == 1024 and ev.held
    ev.release()
    assert ev.released and not ev.held and s.held == 0
    with pytest.raises(ValueError, match="released memoryview"):
        mv[0]
    with pytest.raises(ValueError, match="released memoryview"):
        bytes(mv)
    for f in (lambda: ev.data, ev.array, ev.copy):
        with pytest.raises(evstream.LeaseError, match="seq 0 of core 0 was released"):
            f()
    # the metadata stays
    assert (ev.seq, ev.prefix, ev.dtype, ev.shape) == (0, "a", "float32", (256,))


def test_an_array_keeps_its_record_held(producer, name):
    s = evstream.connect(name, 0)
    tensor(producer, 0, "a", 3.0)
    ev = s.read(5)
    a = ev.array()
    assert not a.flags.writeable and a.base is not None
    ev.release()
    assert s.held == 1 and ev.held
    assert s.stats.released == 0
    # the producer keeps going; the held bytes do not change
    while producer.emit(0, 9, b"x" * 4096):
        pass
    assert (a == 3.0).all()
    del a
    assert s.held == 0 and not ev.held
    assert s.stats.released == 1


def test_an_array_outlives_its_event_and_stays_read_only(producer, name):
    s = evstream.connect(name, 0)
    tensor(producer, 0, "a", 4.0, n=12)
    ev = s.read(5)
    a = ev.array().reshape(3, 4)
    del ev
    gc.collect()
    assert s.held == 1                  # the array alone holds the record
    with pytest.raises(ValueError):
        a.setflags(write=True)          # the ring is never written through a view
    with pytest.raises(ValueError):
        a[0, 0] = 1.0
    base = a.base
    while isinstance(base, np.ndarray):
        base = base.base
    assert memoryview(base).readonly
    del base
    assert (a == 4.0).all() and s.held == 1
    del a
    assert s.held == 0 and s.stats.released == 1


def test_views_of_views_and_numpy_views_of_data(producer, name):
    s = evstream.connect(name, 0)
    tensor(producer, 0, "a", 5.0)
    with s.read(5) as ev:
        d = ev.data
        b = np.asarray(d)                   # NumPy's own view of the memoryview
        c = ev.array().reshape(16, 16)[::2, 1::3].T   # a view of a view
    with pytest.raises(ValueError):
        d[0]                                # the handed-out memoryview is released
    assert s.held == 1
    assert b.nbytes == 1024 and (c == 5.0).all()
    del b
    assert s.held == 1
    del c
    assert s.held == 0


def test_data_after_its_user_released_it_is_a_new_view(producer, name):
    """ev.data.release() by its user, the event still leased: ev.data is a
    new view of the data (it kept returning the released one, which can
    read nothing); the lease's end still releases the view handed out."""
    s = evstream.connect(name, 0)
    assert producer.emit(0, 5, b"abcd")
    ev = s.read(5)
    first = ev.data
    assert ev.data is first                 # the same one while it lives
    first.release()
    assert not ev.released and ev.held
    again = ev.data
    assert again is not first
    assert bytes(again) == b"abcd" and ev.data is again
    ev.release()
    with pytest.raises(ValueError, match="released memoryview"):
        bytes(again)
    with pytest.raises(evstream.LeaseError):
        ev.data
    s.close()


def test_copy_keeps_data_beyond_the_lease(producer, name):
    s = evstream.connect(name, 0)
    tensor(producer, 0, "keep", 7.0, n=6)
    ev = s.read(5)
    kept = ev.copy()
    arr = np.array(ev.array())
    ev.release()
    assert s.held == 0
    assert isinstance(kept, evstream.DetachedEvent)
    assert (kept.seq, kept.prefix, kept.dtype, kept.shape, kept.kind) == (0, "keep", "float32",
                                                                          (6,), "tensor")
    assert (kept.array() == 7.0).all() and (arr == 7.0).all()
    assert bytes(kept.data) == np.full(6, 7.0, np.float32).tobytes()


def test_copy_takes_no_reference_it_does_not_give_back(producer, name):
    # the pipe number is a small int, which CPython caches: a copy that kept
    # a reference to it would add one to that shared object every time
    import sys
    s = evstream.connect(name, 0)
    assert producer.emit_tensor(0, "pipe", np.zeros(4, np.float32), pipe=2)
    ev = s.read(5)
    assert ev.pipe == 2
    ev.copy()
    before = sys.getrefcount(2)
    for _ in range(2000):
        ev.copy()
    assert sys.getrefcount(2) - before < 100
    ev.release()


def test_views_kept_across_iterations(producer, name):
    s = evstream.connect(name, 0)
    for i in range(3):
        tensor(producer, 0, "t%d" % i, float(i))
    producer.close()
    kept = []
    if evstream.MAX_HELD >= 3:
        for ev in s:
            kept.append(ev.array())     # each array holds its record
        assert [float(a[0]) for a in kept] == [0.0, 1.0, 2.0]
        assert s.held == 3
        del kept[:]
        assert s.held == 0
    else:
        it = iter(s)
        kept.append(next(it).array())
        with pytest.raises(evstream.TooManyHeld, match="holds one record at a time"):
            next(it)
        del kept[:]
        assert [ev.prefix for ev in it] == ["t1", "t2"]


@needs_window
def test_out_of_order_lease_ends_give_back_in_ring_order(producer, name):
    s = evstream.connect(name, 0)
    for i in range(3):
        tensor(producer, 0, "t%d" % i, float(i))
    a, b, c = s.read(5), s.read(5), s.read(5)
    assert s.held == 3
    c.release()
    b.release()
    assert s.held == 3 and s.stats.released == 0   # a is older and still leased
    kept_b = None
    a2 = a.array()
    a.release()
    assert s.held == 3                              # a's array holds it
    del a2
    assert s.held == 0 and s.stats.released == 3
    assert kept_b is None and b.released and c.released


@needs_window
def test_window_full_raises_until_something_goes(name):
    n = evstream.MAX_HELD
    # room for one more event than the window (72 bytes a record)
    with evstream.Producer(name, 1, ring_bytes=(n + 1) * 72 + (1 << 20), max_events=n + 1) as p:
        s = evstream.connect(name, 0)
        for i in range(n + 1):
            assert p.emit(0, 2, bytes([i % 256]))
        held = s.read_batch(n)
        assert len(held) == n == s.held
        with pytest.raises(evstream.TooManyHeld, match="%d records are held" % n):
            s.read(0)
        held[0].release()
        assert s.read(0).data[0] == n % 256


def test_ring_filling_while_views_are_held(name):
    with evstream.Producer(name, 1, ring_bytes=64 << 10) as p:
        s = evstream.connect(name, 0)
        tensor(p, 0, "held", 9.0, n=1024)
        ev = s.read(5)
        a = ev.array()
        ev.release()
        sent = 0
        while p.emit_tensor(0, "more", np.full(1024, 1.0, np.float32)):
            sent += 1
        st = p.stats(0)
        assert st.dropped_ring_full >= 1 and st.committed == sent + 1
        assert (a == 9.0).all()                  # the producer never wrote over it
        assert p.emit_tensor(0, "more", np.zeros(1024, np.float32)) is False
        del a                                    # gives the record back
        assert p.emit_tensor(0, "after", np.zeros(1024, np.float32)) is True
        got = []
        while True:
            e = s.read(0)
            if e is None:
                break
            got.append((e.prefix, e.gap))
            e.release()
            del e
        assert got[:sent] == [("more", 0)] * sent
        assert got[sent][0] == "after" and got[sent][1] == st.dropped_ring_full + 1


def test_close_with_a_view_alive_keeps_the_core_until_it_goes(producer, name):
    s = evstream.connect(name, 0)
    tensor(producer, 0, "a", 2.0)
    a = s.read(5).array()
    s.close()
    assert (a == 2.0).all()
    with pytest.raises(OSError, match="already has a consumer"):
        evstream.connect(name, 0)
    del a
    with evstream.connect(name, 0):
        pass


def test_dropping_the_stream_with_events_alive(producer, name):
    s = evstream.connect(name, 0)
    tensor(producer, 0, "a", 4.0)
    ev = s.read(5)
    a = ev.array()
    del s
    gc.collect()
    assert (a == 4.0).all() and ev.held
    ev.release()
    del ev
    assert (a == 4.0).all()
    del a
    gc.collect()
    with evstream.connect(name, 0):
        pass


def test_an_event_that_goes_releases_its_record(producer, name):
    s = evstream.connect(name, 0)
    for i in range(3):
        tensor(producer, 0, "t%d" % i, 1.0)
    for i in range(3):
        ev = s.read(5)
        assert ev.prefix == "t%d" % i and s.held == 1
        del ev           # no release(): its end gives the record back
        assert s.held == 0
    assert s.stats.released == 3

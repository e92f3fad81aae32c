# SPDX-License-Identifier: MIT
"""Debug callbacks: evstream.subscribe() calls fn(event) from a background
thread; exceptions are logged, unsubscribe works from anywhere, and neither
garbage collection nor interpreter exit with a live subscription crashes
or hangs."""
import gc
import logging
import textwrap
import threading

import numpy as np
import pytest

import evstream
from conftest import DEADLINE, corrupting_producer, run_python, unique, wait_for


def test_callback_gets_every_event_in_order(producer, name):
    got = []
    done = threading.Event()

    def fn(ev):
        got.append((ev.seq, ev.prefix, float(ev.array()[0])))
        if len(got) == 50:
            done.set()

    with evstream.subscribe(0, fn, producer=name) as sub:
        for i in range(50):
            assert producer.emit_tensor(0, "x%d" % i, np.full(4, i, np.float32))
        assert done.wait(DEADLINE)
        assert sub.events == 50 and sub.errors == 0 and sub.running
        assert sub.stats.committed == 50
    assert got == [(i, "x%d" % i, float(i)) for i in range(50)]
    assert not sub.running and sub.ended_by == "unsubscribed"


def test_a_raising_callback_is_logged_and_the_stream_goes_on(producer, name, caplog):
    seen = []

    def fn(ev):
        seen.append(ev.seq)
        if ev.seq % 2:
            raise RuntimeError("golden mismatch at %d" % ev.seq)

    with caplog.at_level(logging.ERROR, logger="evstream"):
        with evstream.subscribe(0, fn, producer=name) as sub:
            for i in range(6):
                producer.emit(0, 5, b"e")
            wait_for(lambda: len(seen) == 6, "6 callbacks")
            assert sub.errors == 3 and sub.running
    msgs = [r for r in caplog.records if r.name == "evstream"]
    assert len(msgs) == 3
    assert "callback raised on the event seq 1" in msgs[0].getMessage()
    assert "golden mismatch at 1" in str(msgs[0].exc_info[1])


def test_a_corrupt_stream_ends_the_subscription_and_says_why(caplog):
    name = unique("sub")
    emit, close = corrupting_producer(name, 1)
    got = []
    try:
        with caplog.at_level(logging.ERROR, logger="evstream"):
            sub = evstream.subscribe(0, lambda ev: got.append(ev.seq), producer=name)
            emit(0)
            # a record that claims more bytes than its ring: the stream is broken
            emit(0, lambda size: setattr(size, "value", 1 << 40))
            assert sub.join(DEADLINE)
    finally:
        close()
    assert len(got) == 1 and sub.errors == 0 and not sub.running
    # the library's sentence, not a bare errno name
    assert sub.ended_by.startswith("core 0: stream corrupt: "), sub.ended_by
    assert "claims 1099511627776 payload bytes" in sub.ended_by, sub.ended_by
    msgs = [r.getMessage() for r in caplog.records if r.name == "evstream"]
    # not "the callback raised ...; the subscription goes on": it ended
    assert msgs == ["subscription on core 0 ended: " + sub.ended_by], msgs


def test_unsubscribe_from_inside_the_callback(producer, name):
    calls = []
    box = {}

    def fn(ev):
        calls.append(ev.seq)
        if ev.seq == 2:
            box["sub"].unsubscribe()   # asks; returns at once

    box["sub"] = sub = evstream.subscribe(0, fn, producer=name)
    for i in range(10):
        producer.emit(0, 5, b"e")
    assert sub.join(DEADLINE)
    assert calls == [0, 1, 2] and sub.ended_by == "unsubscribed"
    with evstream.connect(name, 0) as s:   # the rest waits for the next consumer
        assert s.read(5).seq == 3


def test_the_end_of_the_producer_ends_the_subscription(producer, name):
    got = []
    sub = evstream.subscribe(1, lambda ev: got.append(ev.seq), producer=name)
    producer.emit(1, 5, b"last")
    producer.close()
    assert sub.join(DEADLINE)
    assert got == [0] and sub.ended_by == "producer gone"
    sub.unsubscribe()  # after the end: nothing to do


def test_join_and_unsubscribe_from_threads_started_after_the_end(producer, name):
    """Once the subscription's thread has ended, threads started later are
    not "inside the callback" (glibc gives an ended thread's id to the next
    thread created: the check must not rest on thread ids)."""
    sub = evstream.subscribe(0, lambda ev: None, producer=name)
    producer.close()
    assert sub.join(DEADLINE) and sub.ended_by == "producer gone"
    results = []

    def other():
        try:
            results.append((sub.join(DEADLINE), sub.join(0), sub.unsubscribe()))
        except Exception as e:  # noqa: BLE001  (what the test reports)
            results.append(repr(e))

    for _ in range(5):
        t = threading.Thread(target=other)
        t.start()
        t.join(DEADLINE)
        assert not t.is_alive()
    assert results == [(True, True, None)] * 5


def test_garbage_collecting_the_subscription_stops_it(producer, name):
    got = []
    sub = evstream.subscribe(0, got.append, producer=name)
    producer.emit(0, 5, b"e")
    wait_for(lambda: got, "the first call")
    del sub
    gc.collect()
    # the thread lets the core go once it has stopped
    def free():
        try:
            evstream.connect(name, 0).close()
            return True
        except OSError:
            return False
    wait_for(free, "the core to be free again")
    got.clear()


def test_a_callback_that_references_its_subscription(producer, name):
    """fn -> subscription -> thread -> fn: unsubscribe inside, then all goes."""
    box = {}

    def fn(ev):
        box["sub"].unsubscribe()

    box["sub"] = evstream.subscribe(0, fn, producer=name)
    producer.emit(0, 5, b"e")
    assert box["sub"].join(DEADLINE)
    del box["sub"]
    gc.collect()


def test_views_kept_by_the_callback_hold_their_records(producer, name):
    kept = []
    sub = evstream.subscribe(0, lambda ev: kept.append(ev.array()), producer=name)
    producer.emit_tensor(0, "a", np.arange(8, dtype=np.int32))
    wait_for(lambda: kept, "the call")
    assert producer.stats(0).released == 0
    assert list(kept[0]) == list(range(8))
    kept.clear()
    wait_for(lambda: producer.stats(0).released == 1, "the record given back")
    sub.unsubscribe()


def test_subscribe_errors(producer, name):
    with pytest.raises(TypeError, match="not callable"):
        evstream.subscribe(0, 42, producer=name)
    with pytest.raises(FileNotFoundError, match="no-such"):
        evstream.subscribe(0, print, producer="no-such", timeout=0)
    with pytest.raises(ValueError, match="core 4096"):
        evstream.subscribe(4096, print, producer=name)


JOIN_CTRL_C = textwrap.dedent("""
    import os, signal, threading, time, evstream
    p = evstream.Producer({name!r}, 1, ring_bytes=1 << 20)
    sub = evstream.subscribe(0, lambda ev: None, producer={name!r})
    def watchdog():                         # a join that ignores Ctrl-C hangs: say so
        time.sleep(30)
        print("join ignored SIGINT", flush=True)
        os._exit(3)
    threading.Thread(target=watchdog, daemon=True).start()
    assert sub.join(0.2) is False           # the producer lives: a timeout still ends it
    assert sub.join(timeout=0) is False
    for args in ((), (3600,)):
        threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGINT)).start()
        try:
            sub.join(*args)
            print("join returned", flush=True)
        except KeyboardInterrupt:
            print("interrupted", args, flush=True)
    assert sub.running
    sub.unsubscribe()
    assert sub.join() is True and sub.join(0) is True
""")


def test_join_takes_seconds_as_read_does(producer, name):
    """join(-1) and join(nan) returned False at once: a ValueError naming
    them now, as Stream.read() says; None waits for the end."""
    sub = evstream.subscribe(0, lambda ev: None, producer=name)
    try:
        for bad in (-1, float("nan")):
            with pytest.raises(ValueError) as e:
                sub.join(bad)
            assert str(e.value) == "timeout %r: allowed is None or seconds >= 0" % bad
        with pytest.raises(TypeError):
            sub.join("1")
        assert sub.join(0) is False and sub.running
    finally:
        sub.unsubscribe()
    assert sub.join(None) is True


def test_join_is_interrupted_by_ctrl_c():
    r = run_python(JOIN_CTRL_C.format(name=unique("join")), timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.splitlines() == ["interrupted ()", "interrupted (3600,)"], r.stdout


SHUTDOWN = textwrap.dedent("""
    import sys, threading, time, numpy as np, evstream
    mode = sys.argv[1] if len(sys.argv) > 1 else {mode!r}
    p = evstream.Producer({name!r}, 1, ring_bytes=1 << 20)
    calls = threading.Event()
    def fn(ev):
        calls.set()
        if mode == "raise":
            raise ValueError("boom")
        if mode == "block":
            threading.Event().wait()        # never returns
        if mode == "slow":
            time.sleep(0.05)
        if mode == "keep":
            kept.append(ev.array())
    kept = []
    sub = evstream.subscribe(0, fn, producer={name!r})
    for i in range(200):
        p.emit_tensor(0, "x", np.full(64, i, np.float32))
    assert calls.wait(30)
    print("exiting with a live subscription", flush=True)
    {exit}
""")


@pytest.mark.parametrize("mode", ["plain", "raise", "slow", "block", "keep"])
@pytest.mark.parametrize("exit", ["sys.exit(0)", "pass", "del p"])
def test_interpreter_exit_with_a_live_subscription(mode, exit):
    r = run_python(SHUTDOWN.format(mode=mode, name=unique("exit"), exit=exit), timeout=120)
    assert r.returncode == 0, r.stderr
    assert "exiting with a live subscription" in r.stdout
    assert "Fatal Python error" not in r.stderr and "Segmentation" not in r.stderr


def test_interpreter_exit_with_a_subscription_to_a_producer_process(procs):
    from conftest import tool
    name = unique("xexit")
    procs.start([tool("evs-demo"), "--name", name, "--cores", "1", "--rate", "2000",
                 "--seconds", "60"])
    code = textwrap.dedent("""
        import threading, evstream
        got = threading.Event()
        sub = evstream.subscribe(0, lambda ev: got.set(), producer=%r, timeout=30)
        assert got.wait(30)
        print("ok", flush=True)
    """ % name)
    r = run_python(code, timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr

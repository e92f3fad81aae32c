# SPDX-License-Identifier: MIT
"""asyncio: `async for ev in evstream.aconnect(...)`, and a Stream's fd in
loop.add_reader."""
import asyncio
import threading

import numpy as np

import evstream


def test_async_for_until_the_producer_closes(producer, name):
    async def main():
        got = []
        async with evstream.aconnect(name, 1) as s:
            def emit():
                for i in range(30):
                    producer.emit_tensor(1, "x%d" % i, np.full(3, i, np.int16))
                producer.close()
            threading.Timer(0.05, emit).start()
            async for ev in s:
                got.append((ev.seq, ev.prefix, int(ev.array()[0])))
        return got
    assert asyncio.run(main()) == [(i, "x%d" % i, i) for i in range(30)]


def test_async_read_with_timeout(producer, name):
    async def main():
        s = await evstream.aconnect(name, 0)
        assert s.stream.core == 0
        assert await s.read(0.05) is None
        asyncio.get_running_loop().call_later(0.05, producer.emit, 0, 6, b"later")
        ev = await s.read(30)
        data = bytes(ev.data)
        s.close()
        return data
    assert asyncio.run(main()) == b"later"


def test_async_read_refuses_a_bad_timeout_as_read_does(producer, name):
    """-1 or NaN: ValueError naming it (it was taken for no timeout, or
    'now'); a str: TypeError, as Stream.read() says."""
    async def main():
        s = await evstream.aconnect(name, 0)
        out = []
        for bad in (-1, float("nan"), "1"):
            try:
                await s.read(bad)
                out.append((bad, "accepted"))
            except (ValueError, TypeError) as e:
                try:
                    s.stream.read(bad)
                except (ValueError, TypeError) as e2:
                    out.append((bad, type(e) is type(e2) and str(e) == str(e2), str(e)))
        s.close()
        return out
    got = asyncio.run(main())
    assert [g[:2] for g in got] == [(-1, True), (got[1][0], True), ("1", True)], got
    assert "timeout -1: allowed is None or seconds >= 0" in got[0][2]


def test_add_reader_on_the_stream_fd(producer, name):
    async def main():
        loop = asyncio.get_running_loop()
        s = evstream.connect(name, 0)
        got = []
        done = loop.create_future()

        def readable():
            while True:
                ev = s.read(0)          # arms the wakeup when empty
                if ev is None:
                    return
                with ev:
                    got.append(bytes(ev.data))
                if len(got) == 5 and not done.done():
                    done.set_result(None)

        assert s.read(0) is None
        loop.add_reader(s.fileno(), readable)
        for i in range(5):
            loop.call_later(0.01 * i, producer.emit, 0, 6, b"%d" % i)
        await asyncio.wait_for(done, 30)
        loop.remove_reader(s.fileno())
        s.close()
        return got
    assert asyncio.run(main()) == [b"0", b"1", b"2", b"3", b"4"]


def test_async_close_wakes_a_waiting_read_and_unwatches_the_fd(producer, name):
    """close() while tasks wait in read(t), read(None) and async for: each
    wakes at once with the closed stream's ValueError (they waited until
    their timeout, or forever), and the loop no longer watches the fd, so
    the next stream, which may get the same fd number, reads (it failed
    with FileExistsError)."""
    async def main():
        loop = asyncio.get_running_loop()
        s = await evstream.aconnect(name, 0)

        async def iterate():
            async for ev in s:
                pass

        async def outcome(coro):
            t0 = loop.time()
            try:
                await coro
                return "returned", loop.time() - t0
            except ValueError as e:
                return "ValueError" if "closed" in str(e) else str(e), loop.time() - t0

        waits = [outcome(s.read(30)), outcome(s.read(None)), outcome(iterate())]
        loop.call_later(0.2, s.close)
        got = await asyncio.wait_for(asyncio.gather(*waits), 20)
        s2 = await evstream.aconnect(name, 0)
        loop.call_later(0.1, producer.emit, 0, 3, b"x")
        ev = await asyncio.wait_for(s2.read(20), 25)
        data = bytes(ev.data) if ev is not None else None
        s2.close()
        return got, data
    got, data = asyncio.run(main())
    assert [g[0] for g in got] == ["ValueError"] * 3, got
    assert all(g[1] < 10 for g in got), got
    assert data == b"x"


def test_async_two_tasks_reading_one_stream_both_wake(producer, name):
    """Two tasks in read() on one AsyncStream: each event wakes a reader;
    the first task was left waiting (its add_reader was replaced by the
    second's) although its event was in the ring."""
    async def main():
        loop = asyncio.get_running_loop()
        s = await evstream.aconnect(name, 0)

        async def reader():
            ev = await s.read(20)
            return None if ev is None else bytes(ev.data)

        def emit():
            producer.emit(0, 3, b"a")
            producer.emit(0, 3, b"b")
        loop.call_later(0.2, emit)
        t0 = loop.time()
        got = await asyncio.wait_for(asyncio.gather(reader(), reader()), 30)
        took = loop.time() - t0
        s.close()
        return got, took
    got, took = asyncio.run(main())
    assert sorted(got) == [b"a", b"b"], got
    assert took < 10, took

# SPDX-License-Identifier: MIT
"""asyncio on top of a Stream: the loop watches Stream.fileno() with
add_reader, and events are read without waiting (read(0)), which also arms
the wakeup before the loop sleeps."""
import asyncio

import evstream
from evstream._common import timeout_seconds


class AsyncStream:
    """``async for ev in evstream.aconnect(...)``; also ``await``-able and an
    async context manager. Iteration releases the previous event as the
    synchronous one does; read() returns events that stay leased until
    released."""

    def __init__(self, producer, core, timeout, runtime_dir):
        self._args = (producer, core, timeout, runtime_dir)
        self._stream = None
        self._cur = None
        self._waiters = set()   # futures of the tasks waiting in _readable()
        self._watch = None      # (loop, fd) while the loop watches the fd

    async def _open(self):
        if self._stream is None:
            loop = asyncio.get_running_loop()
            # the handshake may take a while: not on the loop's thread
            self._stream = await loop.run_in_executor(None, evstream.connect, *self._args)
        return self._stream

    async def _opened(self):
        await self._open()
        return self

    def __await__(self):
        return self._opened().__await__()

    @property
    def stream(self):
        """The Stream (None until connected)."""
        return self._stream

    def _ready(self):
        # the fd is readable: every waiter looks (one of them may find
        # the event, the others read None and wait again)
        for fut in self._waiters:
            if not fut.done():
                fut.set_result(None)

    def _unwatch(self):
        if self._watch is not None:
            loop, fd = self._watch
            self._watch = None
            loop.remove_reader(fd)

    async def _readable(self, s, timeout):
        """Wait until the stream's fd is readable, close() is called or
        timeout seconds pass (asyncio.TimeoutError). One reader on the fd
        for the stream, shared by every task waiting: add_reader() on an fd
        the loop watches replaces the callback, which would leave the
        tasks waiting before without a wakeup."""
        loop = asyncio.get_running_loop()
        fut = loop.create_future()
        if self._watch is None:
            fd = s.fileno()
            loop.add_reader(fd, self._ready)
            self._watch = (loop, fd)
        elif self._watch[0] is not loop:
            raise RuntimeError("AsyncStream: a task of another event loop is waiting on it")
        self._waiters.add(fut)
        try:
            await asyncio.wait_for(fut, timeout)
        finally:
            self._waiters.discard(fut)
            if not self._waiters:
                self._unwatch()

    async def read(self, timeout=None):
        """The next event, or None when timeout seconds passed."""
        timeout = timeout_seconds(timeout, None)  # refused as Stream.read() refuses it
        s = await self._open()
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        while True:
            ev = s.read(0)
            if ev is not None:
                return ev
            left = None if deadline is None else deadline - loop.time()
            if left is not None and left <= 0:
                return None
            try:
                await self._readable(s, left)
            except asyncio.TimeoutError:
                return None

    def __aiter__(self):
        return self

    async def __anext__(self):
        if self._cur is not None:
            self._cur.release()
            self._cur = None
        try:
            ev = await self.read()
        except evstream.EndOfStream:
            raise StopAsyncIteration from None
        self._cur = ev
        return ev

    def close(self):
        """Close the stream. Tasks waiting in read() or iteration wake at
        once and raise the closed stream's ValueError, as a thread's read
        does; the loop stops watching the fd before it is closed (a stream
        opened next may get the same fd number)."""
        self._cur = None
        self._unwatch()
        for fut in self._waiters:
            if not fut.done():
                fut.set_result(None)    # the woken read(0) raises ValueError
        if self._stream is not None:
            self._stream.close()

    async def __aenter__(self):
        await self._open()
        return self

    async def __aexit__(self, *exc):
        self.close()
        return False

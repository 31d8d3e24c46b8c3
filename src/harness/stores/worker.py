"""The threads that run a backend's blocking calls.

``asyncio.to_thread`` and ``run_in_executor`` go through an executor, a
``concurrent.futures.Future`` and a chained asyncio future; handing a call to a
thread of our own and settling the asyncio future directly costs about a quarter
less per call (measured ~56 vs ~74 µs a round trip here), which is much of what a
batched append spends outside its fsync.

A call that was handed over always runs to its end, even when the coroutine
waiting for it is cancelled: a backend's lock is never given up while its write
is still going on in the thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import queue
import threading
from collections import deque
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["BlockingWorkers"]

_T = TypeVar("_T")
_Job = tuple[Callable[..., Any], tuple[Any, ...], Callable[[Any, BaseException | None], None]]


_Mailbox = queue.SimpleQueue[_Job | None]
"""Where an idle thread waits for its next call (``None``: end)."""


class BlockingWorkers:
    """Runs blocking calls on up to ``threads`` daemon threads, started on demand.

    A call goes straight to an idle thread (the most recently idle one, so a steady
    caller keeps one warm thread while the others idle out), else to a new thread,
    else waits in a backlog the busy threads take in order; with one thread calls
    also finish in order. The bookkeeping is exact: a burst of calls for different
    sessions gets as many threads as it needs, up to ``threads``.
    With ``idle_s`` a thread ends after that long without work; with ``None``
    threads live until ``close`` (a SQLite connection must stay on the thread that
    opened it). In a forked child a pool starts new threads, or, with
    ``idle_s=None``, refuses with ``RuntimeError`` instead of waiting forever.
    """

    def __init__(self, name: str, *, threads: int = 1, idle_s: float | None = 5.0) -> None:
        if threads < 1:
            raise ValueError(f"a worker pool needs at least one thread, got {threads}")
        self._name = name
        self._most = threads
        self._idle_s = idle_s
        self._lock = threading.Lock()
        self._idle: list[_Mailbox] = []  # threads waiting for a call, most recently idle last
        self._backlog: deque[_Job] = deque()  # calls waiting for a thread (all are busy)
        self._threads = 0  # alive
        self._closed = False
        self._pid = os.getpid()

    async def run(self, fn: Callable[..., _T], *args: Any) -> _T:
        """``fn(*args)`` on the worker thread; its result or exception."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[_T] = loop.create_future()

        def done(result: Any, error: BaseException | None) -> None:
            with contextlib.suppress(RuntimeError):  # the loop is closed: nobody is waiting
                loop.call_soon_threadsafe(_settle, future, result, error)

        self._submit((fn, args, done))
        return await future

    def call(self, fn: Callable[..., _T], *args: Any) -> _T:
        """``fn(*args)`` on the worker thread, waiting for it without an event loop."""
        finished = threading.Event()
        outcome: list[Any] = [None, None]

        def done(result: Any, error: BaseException | None) -> None:
            outcome[0], outcome[1] = result, error
            finished.set()

        self._submit((fn, args, done))
        finished.wait()
        if outcome[1] is not None:
            raise outcome[1]
        result: _T = outcome[0]
        return result

    def close(self) -> None:
        """Let the threads finish what they were handed, then end. Later calls raise ``RuntimeError``."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            for idle in self._idle:
                idle.put(None)  # end
            self._threads -= len(self._idle)
            self._idle.clear()

    def _submit(self, job: _Job) -> None:
        if self._pid != os.getpid():
            self._after_fork()
        with self._lock:
            if self._closed:
                raise RuntimeError(f"worker pool {self._name} is closed")
            if self._idle:
                self._idle.pop().put(job)
            elif self._threads < self._most:
                self._threads += 1
                threading.Thread(target=self._main, args=(job,), name=self._name, daemon=True).start()
            else:
                self._backlog.append(job)

    def _after_fork(self) -> None:
        """In a forked child the parent's threads are gone: start afresh, or refuse when the
        threads held state that did not come along (a connection pinned to its thread)."""
        if self._idle_s is None:
            raise RuntimeError(
                f"worker pool {self._name} belongs to process {self._pid}: open a new one in this process"
            )
        self._lock = threading.Lock()
        self._idle = []
        self._backlog = deque()
        self._threads = 0
        self._pid = os.getpid()

    def _main(self, job: _Job | None) -> None:
        mailbox: _Mailbox = queue.SimpleQueue()
        timeout = self._idle_s
        while job is not None:
            _call(job)
            job = self._next(mailbox, timeout)

    def _next(self, mailbox: _Mailbox, timeout: float | None) -> _Job | None:
        """The next call for this thread, or ``None`` when it should end."""
        lock = self._lock
        with lock:
            if self._backlog:
                return self._backlog.popleft()
            if self._closed:
                self._threads -= 1
                return None
            self._idle.append(mailbox)
        try:
            return mailbox.get(timeout=timeout)
        except queue.Empty:
            with lock:
                if mailbox in self._idle:  # nobody handed it a call: end
                    self._idle.remove(mailbox)
                    self._threads -= 1
                    return None
            return mailbox.get()  # a call was handed over just now


def _call(job: _Job) -> None:
    fn, args, done = job
    try:
        result = fn(*args)
    except BaseException as error:
        done(None, error)
    else:
        done(result, None)


def _settle(future: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
    if future.done():  # its waiter was cancelled
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)

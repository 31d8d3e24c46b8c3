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
from collections.abc import Callable
from typing import Any, Final, TypeVar

__all__ = ["BlockingWorkers"]

_T = TypeVar("_T")
_Job = tuple[Callable[..., Any], tuple[Any, ...], Callable[[Any, BaseException | None], None]]
_STOP: Final = None


class BlockingWorkers:
    """Runs blocking calls on up to ``threads`` daemon threads, started on demand.

    Calls are taken in the order they were handed over; with one thread they also
    finish in that order. With ``idle_s`` a thread ends after that long without
    work; with ``None`` threads live until ``close`` (a SQLite connection must stay
    on the thread that opened it). In a forked child a pool starts new threads, or,
    with ``idle_s=None``, refuses with ``RuntimeError`` instead of waiting forever.
    """

    def __init__(self, name: str, *, threads: int = 1, idle_s: float | None = 5.0) -> None:
        if threads < 1:
            raise ValueError(f"a worker pool needs at least one thread, got {threads}")
        self._name = name
        self._most = threads
        self._idle_s = idle_s
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._threads = 0  # alive
        self._waiting = 0  # blocked in get(), ready for a job (never more than _threads)
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
            for _ in range(self._threads):
                self._jobs.put(_STOP)

    def _submit(self, job: _Job) -> None:
        if self._pid != os.getpid():
            self._after_fork()
        with self._lock:
            if self._closed:
                raise RuntimeError(f"worker pool {self._name} is closed")
            self._jobs.put(job)
            if self._waiting == 0 and self._threads < self._most:
                self._threads += 1
                threading.Thread(target=self._main, name=self._name, daemon=True).start()

    def _after_fork(self) -> None:
        """In a forked child the parent's threads are gone: start afresh, or refuse when the
        threads held state that did not come along (a connection pinned to its thread)."""
        if self._idle_s is None:
            raise RuntimeError(
                f"worker pool {self._name} belongs to process {self._pid}: open a new one in this process"
            )
        self._jobs = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._threads = self._waiting = 0
        self._pid = os.getpid()

    def _main(self) -> None:
        jobs, lock = self._jobs, self._lock
        while True:
            with lock:
                self._waiting += 1
            try:
                job = jobs.get(timeout=self._idle_s)
            except queue.Empty:
                with lock:  # a job put before this check is seen; one put after starts a thread
                    self._waiting -= 1
                    if jobs.empty():
                        self._threads -= 1
                        return
                continue
            with lock:
                self._waiting -= 1
            if job is _STOP:
                return
            fn, args, done = job
            try:
                result = fn(*args)
            except BaseException as error:
                done(None, error)
            else:
                done(result, None)
            del job, fn, args, done  # hold nothing while idle


def _settle(future: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
    if future.done():  # its waiter was cancelled
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)

"""``ThreadedDatabase``: an SQLite backend's one connection, kept on one worker thread.

The connection is opened, used and closed only by one dedicated thread (``BlockingWorkers``
with one thread); every coroutine hands its blocking part to it, so the calls of one backend are
serialized without a lock and the event loop never waits on SQLite or fsync. ``SqliteBackend``
and ``DshSqliteBackend`` build on it.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from harness.errors import StorageError
from harness.stores.worker import BlockingWorkers

__all__ = ["ThreadedDatabase"]

_T = TypeVar("_T")


class ThreadedDatabase:
    """Base of a backend over one SQLite connection on its own thread: set ``_path`` and call
    ``_start(name)`` from ``__init__`` (it runs ``_open`` there, which sets ``_conn``), run
    blocking work with ``await self._run(fn, ...)`` and use ``self._db`` inside it."""

    _path: Path
    _conn: sqlite3.Connection | None
    _closed: bool
    _worker: BlockingWorkers

    @property
    def path(self) -> Path:
        """The database file."""
        return self._path

    def __repr__(self) -> str:
        return f"{type(self).__name__}({str(self._path)!r})"

    def _start(self, thread_name: str) -> None:
        self._conn = None
        self._closed = False
        self._worker = BlockingWorkers(thread_name, threads=1, idle_s=None)
        try:
            self._worker.call(self._open)
        except BaseException:
            self._worker.close()
            self._closed = True
            raise

    def _open(self) -> None:
        raise NotImplementedError

    async def _run(self, fn: Callable[..., _T], *args: Any) -> _T:
        if self._closed:
            raise StorageError(f"{self!r} is closed")
        return await self._worker.run(fn, *args)

    @property
    def _db(self) -> sqlite3.Connection:
        conn = self._conn
        if conn is None:
            raise StorageError(f"{self!r} is closed")
        return conn

    async def close(self) -> None:
        """Close the connection and stop the worker thread. Later calls raise ``StorageError``."""
        if self._closed:
            return
        try:
            await self._worker.run(self._close)
        finally:
            self._closed = True
            self._worker.close()

    def _close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()

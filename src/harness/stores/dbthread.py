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

from harness.errors import CorruptSession, SessionOwner
from harness.stores.base import Reservations, closed, corrupt
from harness.stores.ownership import Claim, LockFiles, current_writer
from harness.stores.sqlite_errors import sqlite_errors
from harness.stores.worker import BlockingWorkers

__all__ = ["ThreadedDatabase"]

_T = TypeVar("_T")


class ThreadedDatabase:
    """Base of a backend over one SQLite connection on its own thread: set ``_path`` and call
    ``_start(name)`` from ``__init__`` (it runs ``_open`` there, which sets ``_conn``), run
    blocking work with ``await self._run(fn, ...)`` and use ``self._db`` inside it. ``_pending``
    holds the ids ``create`` reserved (``base.Reservations``).

    Ownership: the sessions' lock files live in ``<database>-owners`` beside the file; a
    write checks ``self._claims.check(session_id, self._writer)`` inside its ``BEGIN
    IMMEDIATE`` transaction, and a takeover renames its lock file inside one, so no write of
    the old owner can commit after it (``harness.stores.ownership``)."""

    _path: Path
    _conn: sqlite3.Connection | None
    _closed: bool
    _worker: BlockingWorkers
    _claims: LockFiles
    _writer: str | None
    _pending: Reservations

    @property
    def path(self) -> Path:
        """The database file."""
        return self._path

    def __repr__(self) -> str:
        return f"{type(self).__name__}({str(self._path)!r})"

    def _start(self, thread_name: str) -> None:
        self._conn = None
        self._pending = Reservations()
        self._closed = False
        self._claims = LockFiles(f"{self._path}-owners")
        self._writer = None
        self._worker = BlockingWorkers(thread_name, threads=1, idle_s=None)
        try:
            self._worker.call(self._open)
        except BaseException:
            self._worker.close()
            self._closed = True
            raise

    def _open(self) -> None:
        raise NotImplementedError

    def _corrupt(self, session_id: str) -> Callable[[str], CorruptSession]:
        return corrupt(session_id, str(self._path))

    async def _run(self, fn: Callable[..., _T], *args: Any) -> _T:
        if self._closed:
            raise closed(self)
        return await self._worker.run(self._as_writer, current_writer(), fn, *args)

    def _as_writer(self, writer: str | None, fn: Callable[..., _T], *args: Any) -> _T:
        # One thread runs every call in turn: the attribute names the writer of this one.
        self._writer = writer
        try:
            return fn(*args)
        finally:
            self._writer = None

    # -- ownership ---------------------------------------------------------------------

    async def claim(self, session_id: str, owner: SessionOwner, *, take_over: bool = False) -> Claim:
        """Take the session's lock file; a takeover renames its own in a write transaction."""
        if not take_over:  # a few local syscalls that never wait (a taken lock is refused): no hop
            return self._claims.claim(session_id, owner, False, self._fence)
        return await self._run(self._claims.claim, session_id, owner, take_over, self._fence)

    def _fence(self, action: Callable[[], None]) -> None:
        conn = self._db
        with sqlite_errors("read", f"cannot lock {self._path} to take a session over"):
            conn.execute("BEGIN IMMEDIATE")
        try:
            action()
        finally:
            conn.execute("ROLLBACK")

    async def unclaim(self, session_id: str) -> None:
        self._claims.release(session_id)  # an unlock, an unlink and a close: no hop

    async def owner(self, session_id: str) -> SessionOwner | None:
        return await self._run(self._claims.owner, session_id)

    @property
    def _db(self) -> sqlite3.Connection:
        conn = self._conn
        if conn is None:
            raise closed(self)
        return conn

    async def close(self) -> None:
        """Close the connection and stop the worker thread. Later calls raise ``StorageError``."""
        if self._closed:
            return
        try:
            await self._worker.run(self._claims.release_all)
            await self._worker.run(self._close)
        finally:
            self._closed = True
            self._worker.close()

    def _close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()

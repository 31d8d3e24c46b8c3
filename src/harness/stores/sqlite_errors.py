"""SQLite's exceptions as harness errors, in one place, and the SQLite backends' transactions.

A site running SQLite names its *situation*; ``translate`` picks the error from it and from the
error's kind. The message keeps SQLite's text; SQLITE_FULL adds "no space left on the file system".

* ``open``: SQLITE_NOTADB is ``UnsupportedFormat`` ("PATH is not an SQLite database: ..."), any
  other error ``PersistenceFailed`` ("cannot open the session database PATH: ...");
* ``read`` (no session data written): ``StorageError`` ("WHAT: ...");
* ``write`` (before the ``COMMIT``, rolled back: nothing written): ``PersistenceFailed``;
* ``commit`` (the ``COMMIT`` itself: the WAL may hold the write): ``OutcomeUnknown``;
* ``stream`` (a streamed read; the store then reads exactly): ``StreamRejected``;
* ``index`` (the search sidecar): SQLITE_NOTADB, SQLITE_CORRUPT or "malformed" is
  ``SearchIndexCorrupt`` (rebuild it), any other error ``SearchIndexError``.

A busy or locked database is waited for by SQLite's busy handler (the ``busy_timeout``), then is
an error like any other, except where ``retry_locked`` retries: a journal-mode switch, for which
SQLite does not wait.
"""

from __future__ import annotations

import contextlib
import sqlite3
import time
from collections.abc import Callable, Iterator
from typing import Literal, TypeVar

from harness.errors import (
    OutcomeUnknown,
    PersistenceFailed,
    SearchIndexCorrupt,
    SearchIndexError,
    StorageError,
    UnsupportedFormat,
)
from harness.stores.backend import StreamRejected

__all__ = ["commit", "is_locked", "retry_locked", "snapshot", "sqlite_errors", "transaction", "translate"]

_T = TypeVar("_T")
Situation = Literal["open", "read", "write", "commit", "stream", "index"]


def _code(error: sqlite3.Error) -> int:
    """The primary result code of ``error`` (0 when it has none)."""
    return (getattr(error, "sqlite_errorcode", None) or 0) & 0xFF


def _describe(error: sqlite3.Error) -> str:
    """The SQLite error as a message part; a full disk is said so (SQLite says "database or disk")."""
    if _code(error) == sqlite3.SQLITE_FULL:
        return f"{error}: no space left on the file system"
    return str(error)


def translate(error: sqlite3.Error, situation: Situation, what: str, after: str = "") -> Exception:
    """The harness error for ``error`` met in ``situation`` (see the module docs) while doing
    ``what`` (for ``open`` and ``index``: the file); ``after`` ends a ``commit`` message."""
    detail = _describe(error)
    if situation == "open":
        if _code(error) == sqlite3.SQLITE_NOTADB:
            return UnsupportedFormat(f"{what} is not an SQLite database: {detail}")
        return PersistenceFailed(f"cannot open the session database {what}: {detail}")
    if situation == "index":
        if _code(error) in (sqlite3.SQLITE_NOTADB, sqlite3.SQLITE_CORRUPT) or "malformed" in str(error):
            return SearchIndexCorrupt(
                f"the search index {what} is damaged ({detail}): rebuild it (harness index --rebuild)"
            )
        return SearchIndexError(f"the search index {what} failed: {detail}")
    if situation == "commit":
        return OutcomeUnknown(f"{what}: the commit failed ({detail}); {after}")
    failure = {"read": StorageError, "write": PersistenceFailed, "stream": StreamRejected}[situation]
    return failure(f"{what}: {detail}")


@contextlib.contextmanager
def sqlite_errors(situation: Situation, what: str) -> Iterator[None]:
    """Raise ``translate(error, situation, what)`` for an ``sqlite3.Error`` in the block, the
    error chained as the cause (a ``StreamRejected`` drops it: the store reads exactly again)."""
    try:
        yield
    except sqlite3.Error as error:
        raise translate(error, situation, what) from (None if situation == "stream" else error)


@contextlib.contextmanager
def snapshot(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """One read transaction: the reads in the block see one consistent snapshot."""
    conn.execute("BEGIN")
    try:
        yield conn
    finally:
        conn.execute("COMMIT")


@contextlib.contextmanager
def transaction(conn: sqlite3.Connection, *, commits: bool = True) -> Iterator[sqlite3.Connection]:
    """One ``BEGIN IMMEDIATE`` write transaction, committed at the end of the block (with
    ``commits=False`` left open for ``commit``); any error in it rolls it back."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
        if commits:
            conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def commit(conn: sqlite3.Connection, what: str, after: str, landed: Callable[[], bool] | None = None) -> None:
    """``COMMIT`` the open transaction. A failed commit is rolled back and, when ``landed()``
    (this connection sees the write committed: the WAL index only moves after the sync), only a
    step after it failed: return. Otherwise the outcome is unknown (``OutcomeUnknown``)."""
    try:
        conn.execute("COMMIT")
    except sqlite3.Error as error:
        try:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            if landed is not None and landed():
                return
        except (sqlite3.Error, StorageError) as again:
            after = f"looking at the database afterwards failed too ({again}); {after}"
        raise translate(error, "commit", what, after) from error


def retry_locked(action: Callable[[], _T], deadline: float) -> _T:
    """``action()``, retried until ``deadline`` (``time.monotonic``) while the database is busy or
    locked. Switching a file to WAL needs it alone, and SQLite answers "database is locked" at
    once instead of waiting on the busy handler: two processes opening a new file would fail."""
    delay = 0.001
    while True:
        try:
            return action()
        except sqlite3.OperationalError as error:
            if not is_locked(error) or time.monotonic() >= deadline:
                raise
            time.sleep(delay)
            delay = min(delay * 2, 0.05)


def is_locked(error: sqlite3.Error) -> bool:
    """SQLite's "database is locked" (SQLITE_BUSY) or "database table is locked" (SQLITE_LOCKED)."""
    return _code(error) in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)

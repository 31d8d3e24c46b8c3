"""The rows of one stored session, read page by page for a streamed restore (``SqliteBackend.read``).

The backend's own connection lives on its worker thread, and a read transaction held
there across the pages of a long restore would stand in the way of its next write.
A stream therefore opens a connection of its own (read-only, ``query_only``) on the
thread that consumes it, as the JSONL stream reads its file, and fetches the rows a
page at a time: a restore then holds one page of lines, not every row of the log,
and never builds the whole fetched list before its first event.

It reads in one snapshot of its own, and only the file the backend opened (same device
and inode). Its snapshot must show the header and length the backend read: otherwise
(the session was written, deleted or replaced in between, another file is at the path,
any SQLite error) it raises ``StreamRejected`` and the store asks for the exact read,
which reads everything again on the backend's connection and gives the precise outcome.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Final

from harness.stores.backend import ReadProgress, StreamRejected
from harness.stores.sqlite_errors import sqlite_errors

__all__ = ["PAGE_ROWS", "FileId", "file_id", "keyed_rows", "stored_pages"]

PAGE_ROWS: Final = 1024
"""Rows fetched per page."""

_SELECT_HEAD: Final = "SELECT header, length FROM sessions WHERE id = ?"
# The lines as bytes (the cast is free in SQLite): the stream decodes bytes, no str is built.
_SELECT_ROWS: Final = "SELECT seq, CAST(line AS BLOB) FROM events WHERE session_id = ? ORDER BY seq"

FileId = tuple[int, int]
"""A file's ``(st_dev, st_ino)``."""


def file_id(path: Path) -> FileId | None:
    """The identity of the file at ``path`` (``None`` when it cannot be read)."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_dev, info.st_ino


def stored_pages(
    path: Path, opened: FileId | None, key: str | bytes, head: tuple[object, int], timeout: float
) -> Iterator[list[tuple[int, bytes]]]:
    """The ``(seq, line)`` rows of the session stored under ``key``, in seq order, in pages.

    ``opened`` is the identity of the file the backend opened, ``head`` the ``(header,
    length)`` its read found; anything else here is ``StreamRejected`` (see the module docs).
    """
    if opened is None or file_id(path) != opened:
        raise StreamRejected("the database file is not the one the backend opened")
    with sqlite_errors("stream", "cannot open the database to stream it"):
        conn = sqlite3.connect(
            f"{path.as_uri()}?mode=ro",
            uri=True,
            timeout=timeout,
            isolation_level=None,
            check_same_thread=False,
        )
    try:
        if file_id(path) != opened:
            raise StreamRejected("the database file is not the one the backend opened")
        with sqlite_errors("stream", "reading the rows failed"):
            conn.execute("PRAGMA query_only = ON")
            conn.execute("PRAGMA trusted_schema = OFF")
            conn.execute("BEGIN")
            row = conn.execute(_SELECT_HEAD, (key,)).fetchone()
            if row is None or (row[0], row[1]) != head:
                raise StreamRejected("the session changed since its header was read")
            cursor = conn.execute(_SELECT_ROWS, (key,))
            while page := cursor.fetchmany(PAGE_ROWS):
                yield page
    finally:
        conn.close()


def keyed_rows(
    pages: Iterator[list[tuple[int, bytes]]], progress: ReadProgress
) -> Iterator[tuple[int, bytes]]:
    """The ``(seq, line)`` rows of ``pages`` (``WireStream.lines``: ``fastrestore`` checks each
    row's seq); ``progress`` is set to the seq of each page's last row (in events, as the total)."""
    for page in pages:
        yield from page
        progress.done = page[-1][0]

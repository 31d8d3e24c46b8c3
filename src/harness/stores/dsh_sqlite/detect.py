"""Which SQLite layout a file holds, and the backend that reads it.

The two layouts tell themselves apart by ``PRAGMA application_id``, which SQLite keeps at bytes
68–71 of the database header: ``0x68726E73`` ("hrns", ``SqliteBackend``) or ``0x44534850``
("DSHP", dsh's schema 17, ``DshSqliteBackend``). The header is read as plain bytes, so telling
opens no connection and changes nothing.
"""

from __future__ import annotations

import os
from typing import Final, Literal

from harness.stores.backend import Backend
from harness.stores.dsh_sqlite.schema import APPLICATION_ID

__all__ = ["Layout", "open_sqlite_backend", "sqlite_layout"]

Layout = Literal["harness", "dsh"]
_MAGIC: Final = b"SQLite format 3\x00"
_WAL: Final = 2


def _header(path: str | os.PathLike[str]) -> bytes | None:
    try:
        with open(path, "rb") as file:
            head = file.read(100)
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None
    return head if len(head) == 100 and head.startswith(_MAGIC) else None


def sqlite_layout(path: str | os.PathLike[str]) -> Layout | None:
    """``"dsh"`` for a dsh session database, ``"harness"`` for any other SQLite file (its own
    backend refuses a foreign one), ``None`` when there is no SQLite database there yet."""
    head = _header(path)
    if head is None:
        return None
    return "dsh" if int.from_bytes(head[68:72], "big") == APPLICATION_ID else "harness"


def open_sqlite_backend(path: str | os.PathLike[str], *, layout: Layout | None = None) -> Backend:
    """The backend for the SQLite file at ``path``: the layout the file holds, or for a file
    that is not a database yet ``layout`` (default ``"harness"``). A dsh database is opened in
    the journal mode its header shows (WAL stays WAL, a rollback journal stays ``delete``), so
    reading it changes nothing in it."""
    found = sqlite_layout(path)
    if found == "dsh" or (found is None and layout == "dsh"):
        from harness.stores.dsh_sqlite.backend import DshSqliteBackend

        head = _header(path)
        rollback = head is not None and head[18] != _WAL
        return DshSqliteBackend(path, journal_mode="delete" if rollback else "wal")
    from harness.stores.sqlite import SqliteBackend

    return SqliteBackend(path)

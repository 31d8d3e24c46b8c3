"""Following a session in a harness SQLite database as it grows: ``SqliteBackend.tail``.

Every ``POLL_S`` the tail asks the backend's own connection (on its thread) for the
session's recorded length and, when it grew, for the rows past what it has read, both in
one read transaction: a batch is committed whole by one transaction, so the tail sees it
whole or not at all. A packed chunk row gives its members; each event must carry the next
seq. ``from_seq`` inside a packed row starts at that row and skips the members before it.

``SessionNotFound`` for an unknown id (a session created in this backend and not yet
appended to is waited for), ``SessionDeleted`` when the session's row goes away,
``CorruptSession`` for a row that does not decode or a seq out of order.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import Any, Final

from harness.errors import SessionDeleted
from harness.events.event import Event
from harness.stores.base import corrupt, no_session
from harness.stores.rows import row_events
from harness.stores.sqlite_errors import snapshot, sqlite_errors

__all__ = ["POLL_S", "tail_rows"]

POLL_S: Final = 0.1
"""How often a waiting tail asks for the session's length."""

_PAGE: Final = 1024
_LENGTH: Final = "SELECT length FROM sessions WHERE id = ?"
_START: Final = "SELECT max(seq) FROM events WHERE session_id = ? AND seq <= ?"
_ROWS: Final = (
    "SELECT seq, CAST(line AS BLOB) FROM events WHERE session_id = ? AND seq >= ? ORDER BY seq LIMIT ?"
)


class _Cursor:
    """Where a tail stands: the seq of the next row to fetch and of the next event due."""

    def __init__(self) -> None:
        self.row = -1  # not started: found from ``from_seq`` on the first read
        self.seq = -1
        self.length = 0  # the recorded length at the last read


def _read(
    conn: sqlite3.Connection,
    key: object,
    session_id: str,
    where: str,
    from_seq: int,
    cursor: _Cursor,
) -> tuple[int | None, list[Event]]:
    """The recorded length (None: no such session) and the events past the cursor."""

    damaged = corrupt(session_id, where)
    with sqlite_errors("read", f"tailing session {session_id!r} in {where} failed"), snapshot(conn):
        row = conn.execute(_LENGTH, (key,)).fetchone()
        if row is None:
            return None, []
        length = int(row[0])
        if length <= cursor.length and cursor.row >= 0:
            return length, []
        if cursor.row < 0:
            start = conn.execute(_START, (key, from_seq)).fetchone()
            cursor.row = cursor.seq = 0 if start is None or start[0] is None else int(start[0])
        events: list[Event] = []
        while cursor.seq < length:
            rows = conn.execute(_ROWS, (key, cursor.row, _PAGE)).fetchall()
            if not rows:
                raise damaged(f"{length} events recorded, rows end at seq {cursor.seq}")
            for seq, line in rows:
                if seq != cursor.seq:
                    raise damaged(f"a row at seq {seq} where {cursor.seq} was due")
                cursor.row = cursor.seq = row_events(line, seq, from_seq, damaged, events)
        cursor.length = length
        return length, events


async def tail_rows(
    session_id: str,
    from_seq: int,
    *,
    key: object,
    where: str,
    connection: Callable[[], sqlite3.Connection],
    pending: Callable[[str], bool],
    run: Callable[..., Awaitable[Any]],
    poll_s: float = POLL_S,
) -> AsyncGenerator[Event, None]:
    """The tail generator (see the module docs). ``connection`` gives the backend's
    connection (called on its thread), ``run`` runs a call there."""
    cursor = _Cursor()
    seen = False

    def read() -> tuple[int | None, list[Event]]:
        return _read(connection(), key, session_id, where, from_seq, cursor)

    while True:
        length, events = await run(read)
        if length is None:
            if seen:
                raise SessionDeleted(f"session {session_id!r} was deleted while it was tailed")
            if not pending(session_id):
                raise no_session(session_id)
        else:
            seen = True
        for event in events:
            yield event
        if not events:
            await asyncio.sleep(poll_s)

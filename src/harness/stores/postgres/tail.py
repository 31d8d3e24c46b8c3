"""Live tail of one session: LISTEN/NOTIFY, then read what committed past the cursor.

The append function sends ``NOTIFY <channel>, '<new length>'`` inside its
transaction, so the notification is delivered exactly when the batch commits. A
tailer holds its own connection (not a pooled one: it waits on it indefinitely):

1. connect, ``LISTEN`` on the session's channel;
2. read every committed event with ``seq >= cursor`` (in pages), yield each, advance
   the cursor;
3. wait for a notification (no timer, no polling), then go to 2.

Because ``LISTEN`` is in force before step 2 reads, a commit either is seen by that
read or wakes step 3: nothing is missed. The cursor only moves past events already
yielded, so after a broken connection the tailer reconnects (with backoff), listens
again and reads from the cursor: nothing is missed or repeated. A notification
for a commit already read only costs a read that finds nothing. The connection
uses TCP keepalives, so a silently dead server is noticed even while idle. A
notification that brings nothing new makes the tailer check the session still exists:
``delete`` notifies, and its tails end with ``SessionDeleted``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import Any

import psycopg
from psycopg import sql

from harness.errors import SessionDeleted, SessionNotFound, StorageError
from harness.events.event import Event
from harness.stores.base import corrupt
from harness.stores.postgres.codec import db_text, event_from_wire, notify_channel
from harness.stores.postgres.conninfo import scrub, where
from harness.stores.postgres.errors import is_connection_error
from harness.stores.postgres.poollog import one_line
from harness.stores.postgres.queries import Queries
from harness.stores.rows import decode_row

__all__ = ["PAGE", "tail_session"]

log = logging.getLogger("harness.stores.postgres")

PAGE = 2000
"""Events read per query while catching up."""


async def _listen(dsn: str, kwargs: dict[str, Any], channel: str) -> psycopg.AsyncConnection[Any]:
    conn = await psycopg.AsyncConnection.connect(dsn, autocommit=True, **kwargs)
    try:
        await conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(channel)))
    except BaseException:
        await conn.close()
        raise
    return conn


async def tail_session(
    *,
    dsn: str,
    connect_kwargs: dict[str, Any],
    schema: str,
    queries: Queries,
    session_id: str,
    from_seq: int,
    known: bool,
    max_outage_s: float,
    prepare: Callable[[], Awaitable[object]],
) -> AsyncGenerator[Event, None]:
    """The tail generator (see the module docs). ``known``: the session is created in this
    backend but not yet appended to, so an absent row is not ``SessionNotFound``.
    ``prepare`` runs first (the backend makes sure its schema exists)."""
    await prepare()
    channel = notify_channel(schema, session_id)
    key = db_text(session_id)
    location = f"{where(dsn)} schema {schema}"
    cursor = from_seq
    checked = known
    conn: psycopg.AsyncConnection[Any] | None = None
    outage: float | None = None
    delay = 0.05
    woken = False
    seen = False  # the session's row was seen: its absence later means it was deleted
    try:
        while True:
            try:
                if conn is None:
                    conn = await _listen(dsn, connect_kwargs, channel)
                if not checked:
                    found = await (await conn.execute(queries.length, (key,))).fetchone()
                    if found is None:
                        raise SessionNotFound(f"no session {session_id!r}")
                    checked = seen = True
                while True:
                    page = await (await conn.execute(queries.tail_lines, (key, cursor, PAGE))).fetchall()
                    outage, delay = None, 0.05
                    if woken and not page:
                        found = await (await conn.execute(queries.length, (key,))).fetchone()
                        if found is None and seen:
                            raise SessionDeleted(f"session {session_id!r} was deleted while it was tailed")
                    woken = False
                    seen = seen or bool(page)
                    for (line,) in page:
                        (obj,) = decode_row(line, cursor, corrupt(session_id, location))
                        event = event_from_wire(session_id, obj, location)
                        yield event
                        cursor += 1
                    if len(page) < PAGE:
                        break
                async for _ in conn.notifies(stop_after=1):
                    woken = True  # any commit (or a delete): read past the cursor again
            except psycopg.Error as error:
                if not is_connection_error(error):
                    raise StorageError(
                        f"tailing session {session_id!r} failed: {one_line(scrub(str(error), dsn))}"
                    ) from error
                if conn is not None:
                    await conn.close()
                    conn = None
                woken = True  # a delete may have been missed meanwhile: check after reconnecting
                now = time.monotonic()
                outage = outage if outage is not None else now
                if now - outage > max_outage_s:
                    raise StorageError(
                        f"tailing session {session_id!r}: the database at {where(dsn)} has been "
                        f"unreachable for {max_outage_s:.0f} s: {one_line(scrub(str(error), dsn))}"
                    ) from error
                log.info(
                    "session %s: tail connection lost, reconnecting: %s",
                    session_id,
                    one_line(scrub(str(error), dsn)),
                )
                await asyncio.sleep(delay)
                delay = min(delay * 2, 2.0)
    finally:
        if conn is not None:
            await conn.close()

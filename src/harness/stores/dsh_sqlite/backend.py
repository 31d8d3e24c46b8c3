"""``DshSqliteBackend``: sessions in a DeepSeek Harness SQLite database (schema 17).

The file is dsh's own: what this backend writes, dsh's ``session-persistence-sqlite`` provider
reads (and the other way round), row for row. ``docs/dsh-sqlite.md`` describes the layout;
``schema.py`` the opening checks, ``codec.py`` the rows, ``scan.py`` the torn-tail rule.

How it meets harness's ``Backend`` contract:

* **create** reserves the id in this backend only (as dsh's coordinator does); the session row
  is written by the first non-empty append, in the same transaction as its events, with a new
  ``incarnation`` UUID and ``revision`` 0. An id stored in the file, or reserved here, is
  ``SessionExists``. Ids and header strings must be valid UTF-8 (the columns are ``TEXT``):
  a lone surrogate is refused (``InvalidSessionId`` / ``InvalidHeader``).
* **append** packs the batch (``codec.pack_batch``, packing never spans two appends), then one
  ``BEGIN IMMEDIATE`` transaction: the identity and schema are checked again, the logical tail
  is read from the last two physical rows (and any packed row that may cover them), the batch
  must start there (``SessionConflict``, nothing written), the rows are inserted and the
  session's ``revision`` goes up by one. A tail that does not decode is ``CorruptSession``
  (load the session: its repair cuts the torn tail first).
* **read** is one read transaction over every row. A torn tail (``scan.py``) is reported as
  ``StoredLog.torn`` with ``committed_offset`` = the seq of its first physical row; committed
  corruption is ``CorruptSession`` naming the seq; a header whose version is not 0 is
  ``UnsupportedFormat``.
* **repair** re-reads the rows under the write lock, refuses a stale torn marker
  (``SessionConflict``), deletes the rows from the marker on, inserts the closers as scalar
  rows and bumps the revision once.
* ``revision(id)`` gives dsh's change token for a session,
  ``file:<dev>:<ino>:<birth>:store:<storeId>:incarnation:<uuid>:revision:<n>``.

One connection on one worker thread per backend, as ``SqliteBackend``.
"""

from __future__ import annotations

import functools
import os
import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Final, TypeVar

from harness.errors import InvalidHeader, InvalidSessionId, PersistenceFailed, SessionConflict, StorageError
from harness.events.event import Event
from harness.session.header import SessionHeader, validate_header
from harness.stores.backend import SessionInfo, StoredLog, TornTail, check_batch
from harness.stores.base import listed, no_session
from harness.stores.dbthread import ThreadedDatabase
from harness.stores.dsh_sqlite.codec import (
    MAX_PACKED_MEMBERS,
    BoundRow,
    RowMalformed,
    RowUnreadable,
    StoredRow,
    bind_event,
    decode_row,
    pack_batch,
)
from harness.stores.dsh_sqlite.scan import ROW_COLUMNS, Scan, event_row, scan
from harness.stores.dsh_sqlite.schema import (
    JOURNAL_MODES,
    JournalMode,
    check_identity_for_write,
    open_database,
)
from harness.stores.dsh_sqlite.sessions import (
    SESSION_COLUMNS,
    UPSERT_SESSION,
    header_of,
    session_params,
    text_of,
)
from harness.stores.ids import check_session_id
from harness.stores.sqlite_errors import commit, snapshot, sqlite_errors, transaction

__all__ = ["DshSqliteBackend"]

_T = TypeVar("_T")
_INSERT_EVENT: Final = (
    "INSERT INTO events (session_id, seq, type, time, data, source_event_seqs, surface_op, ignorable) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
)
_ROWS_FROM: Final = f"SELECT {ROW_COLUMNS} FROM events WHERE session_id = ? AND seq >= ? ORDER BY seq"
_TAIL: Final = f"SELECT {ROW_COLUMNS} FROM events WHERE session_id = ? ORDER BY seq DESC LIMIT 2"
_PACKED_BEFORE: Final = (
    f"SELECT {ROW_COLUMNS} FROM events WHERE session_id = ? AND seq >= ? AND seq < ? "
    "AND type IN ('text-chunks', 'reasoning-chunks', 'tool-call-chunks') AND ignorable = 0 ORDER BY seq"
)
_TITLES: Final = (
    f"SELECT {ROW_COLUMNS} FROM events WHERE session_id = ? AND type = 'session/title' "
    "AND ignorable IS NOT 0 AND seq < ? ORDER BY seq DESC"
)


def _utf8(value: str, what: str, error: Callable[[str], Exception]) -> str:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise error(
            f"{what} {value!r} holds a lone surrogate: the dsh SQLite layout stores UTF-8 text"
        ) from None
    return value


def _key(session_id: str) -> str:
    check_session_id(session_id)
    return _utf8(session_id, "session id", InvalidSessionId)


class _Tail:
    __slots__ = ("length", "time")

    def __init__(self, length: int, time: int | None) -> None:
        self.length = length
        self.time = time


class DshSqliteBackend(ThreadedDatabase):
    """Sessions in a dsh (schema 17) SQLite database file; see the module docs.

    ``journal_mode`` is the one dsh selects on open (``wal`` by default, as dsh's provider);
    ``busy_timeout`` bounds each wait for another connection's lock (dsh: 5 s).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        journal_mode: JournalMode = "wal",
        busy_timeout: float = 5.0,
    ) -> None:
        if journal_mode not in JOURNAL_MODES:
            raise ValueError(f"journal_mode must be one of {', '.join(JOURNAL_MODES)}, not {journal_mode!r}")
        self._path = Path(os.path.abspath(os.path.expanduser(path)))  # "~/…" as a shell means it
        self._journal: JournalMode = journal_mode
        self._busy_timeout = busy_timeout
        self._store: str = ""
        self._start("harness-dsh-sqlite")

    # -- plumbing -------------------------------------------------------------------

    def _open(self) -> None:
        try:
            self._path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        except OSError as error:
            raise PersistenceFailed(f"cannot create the folder of {self._path}: {error}") from error
        conn, store_id = open_database(self._path, self._journal, self._busy_timeout, sqlite3.connect)
        info = os.stat(self._path)
        birth = getattr(info, "st_birthtime_ns", 0)
        self._store = f"file:{info.st_dev}:{info.st_ino}:{birth}:store:{store_id}"
        self._conn = conn

    def _rows(self, sql: str, params: tuple[Any, ...], session_id: str) -> list[StoredRow]:
        corrupt = self._corrupt(session_id)
        return [event_row(raw, corrupt) for raw in self._db.execute(sql, params).fetchall()]

    def _session_row(self, key: str) -> tuple[Any, ...] | None:
        row = self._db.execute(f"SELECT {SESSION_COLUMNS} FROM sessions WHERE id = ?", (key,)).fetchone()
        return None if row is None else tuple(row)

    def _header(self, session_id: str, row: Sequence[Any]) -> SessionHeader:
        return header_of(session_id, row, self._corrupt(session_id))

    def _span_from(self, session_id: str, key: str, from_seq: int) -> tuple[int, list[StoredRow]]:
        """dsh's ``physicalSpanFrom``: the rows from the earliest packed row that may hold
        ``from_seq`` (a damaged one counts) on."""
        base = from_seq
        floor = max(0, from_seq - MAX_PACKED_MEMBERS + 1)
        for row in self._rows(_PACKED_BEFORE, (key, floor, from_seq), session_id):
            try:
                members = decode_row(row)
                if members[-1]["seq"] >= from_seq:
                    base = min(base, row.seq)
            except (RowMalformed, RowUnreadable):
                base = min(base, row.seq)
        return base, self._rows(_ROWS_FROM, (key, base), session_id)

    def _tail_scan(self, session_id: str, key: str) -> Scan | None:
        """The logical tail from the last physical rows (``None``: the session has no rows)."""
        last = self._rows(_TAIL, (key,), session_id)
        if not last:
            return None
        base, rows = self._span_from(session_id, key, min(row.seq for row in last))
        return scan(rows, self._corrupt(session_id), base)

    def _tail(self, session_id: str, key: str) -> _Tail:
        """The committed length and last time (a torn tail is read past the whole log)."""
        tail = self._tail_scan(session_id, key)
        if tail is None:
            return _Tail(0, None)
        if tail.torn_from is None and tail.events:
            return _Tail(tail.events[-1]["seq"] + 1, tail.events[-1]["time"])
        whole = scan(self._rows(_ROWS_FROM, (key, 0), session_id), self._corrupt(session_id))
        return _Tail(len(whole.events), whole.events[-1]["time"] if whole.events else None)

    # -- create -------------------------------------------------------------------------

    async def create(self, header: SessionHeader) -> None:
        """Reserve ``header.id``; the session row is written by its first append."""
        _key(header.id)
        header = validate_header(header)
        for what, value in (
            ("cwd", header.cwd),
            ("parentSession", header.parent_session),
            ("agentPreset", header.agent_preset),
        ):
            if value is not None:
                _utf8(value, f"session header {what}", InvalidHeader)
        if header.cwd is not None and not os.path.isabs(header.cwd):
            raise InvalidHeader(f"session header cwd must be an absolute path here, got {header.cwd!r}")
        await self._run(self._create, header)

    def _create(self, header: SessionHeader) -> None:
        self._pending.reserve(header, stored=self._session_row(header.id) is not None)

    # -- append -------------------------------------------------------------------------

    async def append(self, session_id: str, batch: Sequence[Event]) -> None:
        """Durably append ``batch`` in one transaction (see the module docs)."""
        key = _key(session_id)
        batch = list(batch)
        for event in batch:
            _utf8(event.type, "event type", PersistenceFailed)
        rows = pack_batch(batch)  # CPU work: done on the loop's thread, like SqliteBackend
        await self._run(self._append, session_id, key, batch, rows)

    def _append(self, session_id: str, key: str, batch: list[Event], rows: list[BoundRow]) -> None:
        pending = self._pending.get(session_id)
        if not batch:
            if pending is None and self._session_row(key) is None:
                raise no_session(session_id)
            return

        def body(conn: sqlite3.Connection) -> None:
            expected = 0
            if self._session_row(key) is not None:
                tail = self._tail_scan(session_id, key)
                if tail is not None and tail.torn_from is not None:
                    raise self._corrupt(session_id)(
                        f"it has an invalid physical tail at seq {tail.torn_from} (load it to cut the tail)"
                    )
                expected = tail.events[-1]["seq"] + 1 if tail is not None and tail.events else 0
                if pending is not None:
                    raise self._pending.lapsed(session_id, expected, batch[0].seq)
            elif pending is None:
                raise no_session(session_id)
            check_batch(session_id, expected, batch)
            if pending is not None:
                conn.execute(UPSERT_SESSION, session_params(pending))
            conn.executemany(_INSERT_EVENT, [(key, *row) for row in rows])

        self._write("append to", session_id, key, body)
        if pending is not None:
            self._pending.pop(session_id, None)

    # -- read ---------------------------------------------------------------------------

    async def read(self, session_id: str) -> StoredLog:
        """The committed log, every row decoded and checked; a torn tail is reported in ``torn``."""
        key = _key(session_id)
        return await self._run(self._read, session_id, key)

    read_exact = read

    def _read(self, session_id: str, key: str) -> StoredLog:
        with (
            sqlite_errors("read", f"cannot read session {session_id!r} from {self._path}"),
            snapshot(self._db),
        ):
            row = self._session_row(key)
            if row is None:
                raise self._pending.missing(session_id)
            rows = self._rows(_ROWS_FROM, (key, 0), session_id)
        header = self._header(session_id, row)
        found = scan(rows, self._corrupt(session_id))
        torn = None
        if found.torn_from is not None:
            torn = TornTail(found.torn_from, f"physical row at seq {found.torn_from}: {found.torn_detail}")
        return StoredLog(header, found.events, torn=torn)

    # -- repair, length, revision, list ----------------------------------------------------

    async def repair(self, session_id: str, log: StoredLog, closers: Sequence[Event]) -> None:
        """Cut the torn tail ``log.torn`` (rows from its seq on) and append ``closers`` as
        scalar rows, in one transaction; a stale marker is ``SessionConflict``."""
        key = _key(session_id)
        closers = list(closers)
        if log.torn is None and not closers:
            return
        rows = [bind_event(event) for event in closers]
        await self._run(self._repair, session_id, key, log.torn, closers, rows)

    def _repair(
        self, session_id: str, key: str, torn: TornTail | None, closers: list[Event], rows: list[BoundRow]
    ) -> None:

        def body(conn: sqlite3.Connection) -> None:
            if self._session_row(key) is None:
                raise no_session(session_id)
            current = scan(self._rows(_ROWS_FROM, (key, 0), session_id), self._corrupt(session_id))
            if torn is not None:
                if current.torn_from != torn.committed_offset:
                    raise SessionConflict(
                        f"session {session_id!r} repair is stale: the physical tail no longer "
                        f"starts at seq {torn.committed_offset}"
                    )
                conn.execute(
                    "DELETE FROM events WHERE session_id = ? AND seq >= ?", (key, torn.committed_offset)
                )
            elif current.torn_from is not None:
                raise SessionConflict(
                    f"session {session_id!r} repair omitted the current torn tail at seq {current.torn_from}"
                )
            if closers:
                check_batch(session_id, len(current.events), closers)
                conn.executemany(_INSERT_EVENT, [(key, *row) for row in rows])

        self._write("repair of", session_id, key, body)

    def _write(
        self, what: str, session_id: str, key: str, body: Callable[[sqlite3.Connection], None]
    ) -> None:
        """One ``BEGIN IMMEDIATE`` transaction: the identity checked again, ``body``, the
        session's revision up by one, commit. A failure before the commit wrote nothing
        (``PersistenceFailed``); a failed commit (an fsync error, a full disk) may have
        written the rows (``OutcomeUnknown``): the store's next attempt learns from the tail
        what is stored, as with ``SqliteBackend``."""

        def step(conn: sqlite3.Connection) -> None:
            self._claims.check(session_id, self._writer)
            body(conn)
            conn.execute("UPDATE sessions SET revision = revision + 1 WHERE id = ?", (key,))

        self._immediate(
            step,
            failed=f"{what} session {session_id!r} in {self._path} failed, nothing written",
            unknown=f"{what} session {session_id!r} in {self._path}",
            after="outcome unknown: the next attempt reads what is stored first",
        )

    def _immediate(
        self, body: Callable[[sqlite3.Connection], _T], *, failed: str, unknown: str, after: str
    ) -> _T:
        """``body`` inside one ``BEGIN IMMEDIATE`` transaction, the file's identity checked
        again first. An error before the commit rolls back (``PersistenceFailed``: ``failed``,
        nothing changed); a failed commit is ``OutcomeUnknown`` (``unknown``, then ``after``)."""
        with sqlite_errors("write", failed), transaction(self._db, commits=False) as conn:
            check_identity_for_write(conn, str(self._path))
            result = body(conn)
        commit(conn, unknown, after)
        return result

    async def delete(self, session_id: str) -> None:
        """Remove the session for good: its rows and session row in one ``BEGIN IMMEDIATE``
        transaction (identity re-checked; ``secure_delete`` on, so the bytes are overwritten),
        and any reservation here. ``SessionNotFound`` when nothing is stored or reserved. dsh
        itself never deletes; the schema's ``ON DELETE CASCADE`` is what a deleter relies on."""
        key = _key(session_id)
        await self._run(self._delete, session_id, key)

    def _delete(self, session_id: str, key: str) -> None:
        def step(conn: sqlite3.Connection) -> bool:
            self._claims.check(session_id, self._writer)
            conn.execute("DELETE FROM events WHERE session_id = ?", (key,))
            return conn.execute("DELETE FROM sessions WHERE id = ?", (key,)).rowcount > 0

        failed = f"deleting session {session_id!r} from {self._path} failed, nothing deleted"
        with sqlite_errors("write", failed):
            self._db.execute("PRAGMA secure_delete = ON")  # not inside a transaction
        found = self._immediate(
            step,
            failed=failed,
            unknown=f"deleting session {session_id!r} from {self._path}",
            after="outcome unknown",
        )
        self._pending.deleted(session_id, found=found)

    async def stored_length(self, session_id: str) -> int:
        """The committed event count (0 for a created, never-appended session)."""
        key = _key(session_id)
        return await self._run(self._stored_length, session_id, key)

    def _stored_length(self, session_id: str, key: str) -> int:
        stored = self._tail(session_id, key).length if self._session_row(key) is not None else None
        return self._pending.length(session_id, stored)

    async def revision(self, session_id: str) -> str:
        """dsh's change token of a stored session: it changes with every append and repair."""
        key = _key(session_id)
        return await self._run(self._revision, session_id, key)

    def _revision(self, session_id: str, key: str) -> str:
        row = self._session_row(key)
        if row is None:
            raise no_session(session_id)
        self._header(session_id, row)
        return f"{self._store}:incarnation:{text_of(row[9])}:revision:{row[10]}"

    def _title(self, session_id: str, key: str, length: int) -> str | None:
        for row in self._rows(_TITLES, (key, length), session_id):
            try:
                (event,) = decode_row(row)
            except (RowMalformed, RowUnreadable):
                continue
            data = event["data"]
            title = data.get("title") if isinstance(data, dict) else None
            if isinstance(title, str):
                return title
        return None

    def _list(self) -> list[SessionInfo]:
        with sqlite_errors("read", f"cannot list sessions in {self._path}"):
            rows = self._db.execute(
                f"SELECT {SESSION_COLUMNS} FROM sessions ORDER BY created_at, id"
            ).fetchall()
        out: list[SessionInfo] = []
        for row in rows:
            session_id = text_of(row[0]) or bytes(row[0]).decode("utf-8", "replace")
            length, last, title, problem = 0, None, None, None
            try:
                tail = self._tail(session_id, session_id)
                length, last = tail.length, tail.time
                title = self._title(session_id, session_id, length)
            except StorageError as error:
                problem = str(error)
            info = listed(
                session_id,
                functools.partial(self._header, session_id, row),
                event_count=length,
                last_activity=last,
                title=title,
                location=str(self._path),
                created_at=row[2] if type(row[2]) is int else None,  # the row's: used when the
                cwd=text_of(row[3]),  # header does not read
                parent=text_of(row[4]),
                problem=problem,  # the header's problem comes first
            )
            out.append(info)
        return out

    async def list(self) -> list[SessionInfo]:
        """Every stored session, oldest first. One whose header or log does not read is listed
        with ``problem`` saying why."""
        return await self._run(self._list)

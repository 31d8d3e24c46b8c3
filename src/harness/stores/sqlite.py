"""``SqliteBackend``: many sessions in one SQLite database file (SPEC §4, FORMAT §9.8 in spirit).

Byte compatibility with dsh's SQLite store is not a goal (JSONL is the interchange
format); the design follows its outline: one row per session, one row per event,
``BEGIN IMMEDIATE`` + a tail check per append, ``synchronous=FULL``, WAL.

Schema (version 2, ``PRAGMA application_id`` = ``0x68726E73`` "hrns",
``PRAGMA user_version`` = schema version), both tables ``STRICT``::

    sessions(id PRIMARY KEY, version, created_at, cwd, parent_session, seed_length,
             origin, delegation_depth, agent_preset,
             header,       -- the JSONL header line (type, version, id, createdAt, ...) as JSON text
             length,       -- committed event count: the next seq
             last_time,    -- time of the last event (list())
             title_seq)    -- seq of the latest session/title event with a string title (list())
    events(session_id REFERENCES sessions, seq, type, time,
           line,          -- the event's exact wire JSON line (Event.encode()) as text
           PRIMARY KEY(session_id, seq))   -- a rowid table since version 2

``read`` returns ``loads(line)`` for each row, so what comes back is exactly what
was appended, key order included; ``header`` + ``line``\\s in seq order is the
session's JSONL file (``export``).

Decisions:

* **Threading.** Each backend owns one connection, opened and used only by one
  dedicated worker thread; every coroutine hands its blocking part to that thread
  (``BlockingWorkers`` with one thread), so calls on one backend are serialized
  without a lock and the event loop never blocks on SQLite or fsync. A batch's
  rows are encoded on the loop's thread before the hand-over. Measured against
  ``asyncio.to_thread`` + a lock around one shared connection, the two are equal
  within noise (about 150k events/s at 100 events per append, 3.7k appends/s at one
  event per append, where the fsync of each commit dominates); the dedicated thread
  wins on simplicity: no lock, SQLite's same-thread check stays on, and the default
  executor is not shared. The database is opened, checked and migrated in the
  constructor (blocking briefly), so a refused file fails there.
* **Create.** ``create`` only reserves the id in this backend (like JSONL, FORMAT
  §9.4): the session row is inserted by the first non-empty append, in the same
  transaction as its events, so a never-appended session leaves nothing behind, is
  not listed and blocks no id after a crash. ``create`` refuses an id reserved
  here or stored in the file (``SessionExists``). If another writer published the
  same id first, the first append gets ``SessionConflict`` and the reservation
  lapses (the id now names the stored session).
* **Append.** One ``BEGIN IMMEDIATE`` transaction: read ``length``, check every seq
  of the batch (``SessionConflict``, nothing written), insert all rows, advance
  ``length``, commit (durable: ``synchronous=FULL``). Two backends (threads or
  processes) on one file are serialized by the write lock, so each seq is won by
  exactly one writer. A SQLite failure before the ``COMMIT`` rolls back and raises
  ``PersistenceFailed`` (chained): nothing written. A failure of the ``COMMIT``
  itself (the WAL's fdatasync failing with EIO, a full disk, an autocheckpoint
  error after the commit) is looked at again: when this connection then sees the
  new length, the commit was made durable (the WAL index only moves after the sync)
  and the append returns; otherwise the outcome is unknown (``OutcomeUnknown``): the
  WAL may hold the batch's frames, which a crash recovery by a fresh process adopts
  as committed, while this process does not see them. The store's next attempt asks
  ``stored_length`` (this process's view: without the batch), then writes it again;
  that commit overwrites the stray frames (a WAL frame is only valid after a valid
  chain of frames before it), so a fresh process sees the batch once or not at all.
  An append whose awaiting task is cancelled may still commit: the store learns the
  truth from ``stored_length`` / a ``SessionConflict``.
* **Read.** One read transaction (a consistent WAL snapshot). Rows must run
  contiguously from seq 0, each line must parse to an object carrying its row's
  seq, and the row count must equal ``length``; otherwise ``CorruptSession`` naming
  the session and seq. A header whose version is not 0 is ``UnsupportedFormat``
  (checked before its shape), a malformed one ``CorruptSession``. Transactions
  leave no torn tails: ``torn`` is always ``None`` and ``repair`` only appends the
  closers (one transaction). ``StoredLog.location`` is ``None`` (the store adds
  "raw log: <path>" only for one-file-per-session backends, FORMAT §7.4);
  ``SessionInfo.location`` is the database path. The exact read (``read_exact``)
  runs on the worker thread; ``read``'s stream is the one exception to the threading
  rule: it reads its rows a page at a time, in a read-only snapshot of its own, on the
  thread that restores from it (as the JSONL stream reads its file), see ``sqlite_pages``.
* **Schema versions.** A newer ``user_version`` is refused (``UnsupportedFormat``)
  before anything is written, as is a file with another ``application_id`` (dsh's
  own SQLite store included: ``DshSqliteBackend`` reads those) or a non-empty database that is
  not ours. Older versions are migrated in order, all steps in one ``BEGIN
  IMMEDIATE`` transaction (``_MIGRATIONS[v]`` takes version ``v`` to ``v + 1``; an
  empty file is version 0, so creating the schema is the first migration); a
  failing step leaves the file as it was.
* **Ids and text.** Session ids are any non-empty string without NUL (like every
  backend). Text columns are ``ANY``: a value is stored as TEXT, or, when it holds
  a lone surrogate (valid in JavaScript strings, not encodable as UTF-8), as the
  BLOB of its ``surrogatepass`` bytes; the two forms never collide. JSON columns
  need no such care (``dumps`` escapes lone surrogates).
* **Packing.** Chunk runs are not packed (FORMAT §9.2 packing is optional); one row
  per event keeps ``stored_length``, seq checks and row-level corruption reports
  simple.
* The database file is created with mode 0600 (its parent directories as needed).
"""

from __future__ import annotations

import contextlib
import functools
import os
import sqlite3
import time
from collections.abc import AsyncGenerator, Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, Final

from harness.errors import PersistenceFailed, UnsupportedFormat
from harness.events.collector import collector_paused
from harness.events.event import Event
from harness.events.json import dumps
from harness.events.packed import pack_records
from harness.session.header import SessionHeader, validate_header
from harness.stores.backend import (
    ReadProgress,
    SessionInfo,
    StoredLog,
    StreamRejected,
    WireStream,
    check_batch,
)
from harness.stores.base import listed, never_appended, no_session
from harness.stores.dbthread import ThreadedDatabase
from harness.stores.ids import check_session_id
from harness.stores.rows import decode_row, header_from_text, page_events, title_from_line, title_seq
from harness.stores.sqlite_errors import commit, retry_locked, snapshot, sqlite_errors, transaction
from harness.stores.sqlite_pages import file_id, keyed_rows, stored_pages
from harness.stores.sqlite_tail import tail_rows

__all__ = ["APPLICATION_ID", "SCHEMA_VERSION", "SqliteBackend"]

APPLICATION_ID: Final = 0x68726E73
"""``PRAGMA application_id`` of a harness session database ("hrns")."""
DSH_APPLICATION_ID: Final = 0x44534850

# One packed row holds at most this many chunks and this much text (FORMAT §9.8's limits).
_PACKED_MEMBERS: Final = 1024
_PACKED_BYTES: Final = 1 << 20
_SELECT_ROWS: Final = "SELECT seq, line FROM events WHERE session_id = ? ORDER BY seq"
_LENGTH: Final = "SELECT length FROM sessions WHERE id = ?"
_Key = str | bytes
_Row = tuple[_Key, int, _Key, int, str]  # an events row: session_id, seq, type, time, line


def _migrate_to_1(conn: sqlite3.Connection) -> None:
    conn.execute(
        """
        CREATE TABLE sessions (
            id ANY PRIMARY KEY NOT NULL,
            version INTEGER NOT NULL,
            created_at INTEGER NOT NULL,
            cwd ANY,
            parent_session ANY,
            seed_length INTEGER,
            origin ANY,
            delegation_depth INTEGER NOT NULL,
            agent_preset ANY,
            header TEXT NOT NULL,
            length INTEGER NOT NULL DEFAULT 0,
            last_time INTEGER,
            title_seq INTEGER
        ) STRICT, WITHOUT ROWID
        """
    )
    conn.execute(
        """
        CREATE TABLE events (
            session_id ANY NOT NULL REFERENCES sessions(id),
            seq INTEGER NOT NULL,
            type ANY NOT NULL,
            time INTEGER NOT NULL,
            line TEXT NOT NULL,
            PRIMARY KEY (session_id, seq)
        ) STRICT, WITHOUT ROWID
        """
    )


def _migrate_to_2(conn: sqlite3.Connection) -> None:
    """``events`` becomes a rowid table. As a WITHOUT ROWID table, a row of more than
    about 1 KB (most messages) spilled its last bytes into an overflow page of its own:
    the file was 4× the events' size and a restore read all of it."""
    conn.execute(
        """
        CREATE TABLE events_v2 (
            session_id ANY NOT NULL REFERENCES sessions(id),
            seq INTEGER NOT NULL,
            type ANY NOT NULL,
            time INTEGER NOT NULL,
            line TEXT NOT NULL,
            PRIMARY KEY (session_id, seq)
        ) STRICT
        """
    )
    conn.execute(
        "INSERT INTO events_v2 (session_id, seq, type, time, line) "
        "SELECT session_id, seq, type, time, line FROM events ORDER BY session_id, seq"
    )
    conn.execute("DROP TABLE events")
    conn.execute("ALTER TABLE events_v2 RENAME TO events")


def _migrate_to_3(conn: sqlite3.Connection) -> None:
    """Nothing to convert: from version 3 an ``events`` row may hold a packed chunk row
    (FORMAT §9.2; ``seq``/``time`` of its first member, ``type`` the row type), so a harness
    that predates packing must refuse the file rather than misread it."""


_MIGRATIONS: list[Callable[[sqlite3.Connection], None]] = [_migrate_to_1, _migrate_to_2, _migrate_to_3]
"""``_MIGRATIONS[v]`` upgrades schema version ``v`` to ``v + 1`` (0 = an empty file)."""
SCHEMA_VERSION: Final = len(_MIGRATIONS)

_INSERT_EVENT: Final = "INSERT INTO events (session_id, seq, type, time, line) VALUES (?, ?, ?, ?, ?)"


def _sql_text(value: str) -> _Key:
    """``value`` as stored in an ``ANY`` text column (see the module notes on surrogates)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return value.encode("utf-8", "surrogatepass")
    return value


def _sql_optional(value: str | None) -> _Key | None:
    return None if value is None else _sql_text(value)


class SqliteBackend(ThreadedDatabase):
    """Sessions in one SQLite database file. See the module docs for the design."""

    def __init__(
        self, path: str | os.PathLike[str], *, busy_timeout: float = 30.0, pack_chunks: bool = True
    ) -> None:
        self._path = Path(path).expanduser().absolute()  # "~/…" as a shell means it
        self._pack = pack_chunks
        self._busy_timeout = busy_timeout
        self._start("harness-sqlite")

    # -- plumbing -------------------------------------------------------------

    def _open(self) -> None:
        path = self._path
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
            os.close(fd)
        except FileExistsError:
            pass
        except OSError as error:
            raise PersistenceFailed(f"cannot create the session database {path}: {error}") from error
        with sqlite_errors("open", str(path)):
            conn = sqlite3.connect(path, timeout=self._busy_timeout, isolation_level=None)
            try:
                self._prepare(conn)
            except BaseException:
                conn.close()
                raise
        self._conn = conn
        self._file_id = file_id(path)  # what a stream must find at the path (sqlite_pages)

    def _prepare(self, conn: sqlite3.Connection) -> None:
        conn.execute("PRAGMA trusted_schema = OFF")
        self._check_identity(conn)
        conn.execute("PRAGMA foreign_keys = ON")
        retry_locked(lambda: conn.execute("PRAGMA journal_mode = WAL"), time.monotonic() + self._busy_timeout)
        conn.execute("PRAGMA synchronous = FULL")
        if conn.execute("PRAGMA user_version").fetchone()[0] < len(_MIGRATIONS):
            self._migrate(conn)

    def _check_identity(self, conn: sqlite3.Connection) -> tuple[int, int]:
        """Refuse a file that is not (a version we can read of) a harness session database."""
        path = self._path
        # Read both header fields from one snapshot: a concurrent opener may commit its
        # migration (which sets both) between two separate reads.
        with contextlib.nullcontext() if conn.in_transaction else snapshot(conn):
            app_id = conn.execute("PRAGMA application_id").fetchone()[0]
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            tables = conn.execute("SELECT count(*) FROM sqlite_schema").fetchone()[0]
        if app_id == DSH_APPLICATION_ID:
            raise UnsupportedFormat(
                f"{path} is a DeepSeek Harness (dsh) SQLite store: open it with DshSqliteBackend "
                "(the CLI's --store sqlite:FILE does so by itself)"
            )
        if app_id == 0 and version == 0:
            if tables:
                raise UnsupportedFormat(f"{path} is an SQLite database but not a harness session database")
        elif app_id != APPLICATION_ID:
            raise UnsupportedFormat(
                f"{path} is not a harness session database (application_id {app_id:#010x})"
            )
        if version > len(_MIGRATIONS):
            raise UnsupportedFormat(
                f"{path} has schema version {version}, newer than this harness reads "
                f"({len(_MIGRATIONS)}): upgrade the harness"
            )
        return app_id, version

    def _migrate(self, conn: sqlite3.Connection) -> None:
        with transaction(conn):
            # Another connection may have migrated while we waited for the lock.
            _, version = self._check_identity(conn)
            for step in range(version, len(_MIGRATIONS)):
                _MIGRATIONS[step](conn)
                conn.execute(f"PRAGMA user_version = {step + 1}")
            conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")

    # -- create -----------------------------------------------------------------

    async def create(self, header: SessionHeader) -> None:
        """Reserve ``header.id``; the session is written by its first append."""
        check_session_id(header.id)
        header = validate_header(header)
        await self._run(self._create, header)

    def _create(self, header: SessionHeader) -> None:
        self._pending.reserve(header, stored=self._length(header.id) is not None)

    def _length(self, session_id: str) -> int | None:
        with sqlite_errors("read", f"cannot query {self._path}"):
            row = self._db.execute(_LENGTH, (_sql_text(session_id),)).fetchone()
        return None if row is None else int(row[0])

    # -- append -----------------------------------------------------------------

    async def append(self, session_id: str, batch: Sequence[Event]) -> None:
        """Durably append ``batch`` in one transaction (see the module docs)."""
        check_session_id(session_id)
        batch = list(batch)
        # Encoding is CPU work under the GIL: done here it runs warm on the loop's thread.
        key = _sql_text(session_id)
        records = (
            pack_records(batch, max_members=_PACKED_MEMBERS, max_bytes=_PACKED_BYTES)
            if self._pack
            else [(event.seq, event.type, event.time, event.encode()) for event in batch]
        )
        # An ASCII type is its own SQL text (``_sql_text`` returns it): no encode attempt per row.
        rows = [
            (
                key,
                seq,
                kind if type(kind) is str and kind.isascii() else _sql_text(kind),
                time,
                line.decode("utf-8"),
            )
            for seq, kind, time, line in records
        ]
        await self._run(self._append, session_id, batch, rows)

    def _append(self, session_id: str, batch: list[Event], rows: list[_Row]) -> None:
        conn = self._db
        key = _sql_text(session_id)
        pending = self._pending.get(session_id)
        if not batch:
            if pending is None and self._length(session_id) is None:
                raise no_session(session_id)
            return
        what = f"append to session {session_id!r} in {self._path}"
        with sqlite_errors("write", f"{what} failed, nothing written"), transaction(conn, commits=False):
            self._claims.check(session_id, self._writer)
            row = conn.execute(_LENGTH, (key,)).fetchone()
            if row is None:
                if pending is None:
                    raise no_session(session_id)
                expected = 0
            elif pending is not None:
                raise self._pending.lapsed(session_id, int(row[0]), batch[0].seq)
            else:
                expected = int(row[0])
            check_batch(session_id, expected, batch)
            if pending is not None:
                self._insert_session(conn, key, pending)
            conn.executemany(_INSERT_EVENT, rows)
            conn.execute(
                "UPDATE sessions SET length = ?, last_time = ?, title_seq = coalesce(?, title_seq) "
                "WHERE id = ?",
                (expected + len(batch), batch[-1].time, title_seq(batch), key),
            )

        def landed() -> bool:  # this connection sees the batch committed (see the module notes)
            return self._length(session_id) == expected + len(batch) and conn.execute(
                "SELECT line FROM events WHERE session_id = ? AND seq >= ? ORDER BY seq", (key, rows[0][1])
            ).fetchall() == [(row[4],) for row in rows]

        after = (
            "outcome unknown: the write-ahead log may hold the batch, which a crash recovery "
            "would adopt; the next attempt writes it again"
        )
        commit(conn, what, after, landed)
        if pending is not None:
            self._pending.pop(session_id, None)

    @staticmethod
    def _insert_session(conn: sqlite3.Connection, key: _Key, header: SessionHeader) -> None:
        line = header.to_json(line=True)
        conn.execute(
            "INSERT INTO sessions (id, version, created_at, cwd, parent_session, seed_length, origin, "
            "delegation_depth, agent_preset, header, length) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0)",
            (
                key,
                header.version,
                header.created_at,
                _sql_optional(header.cwd),
                _sql_optional(header.parent_session),
                header.seed_length,
                _sql_optional(header.origin),
                header.delegation_depth or 0,
                _sql_optional(header.agent_preset),
                dumps(line).decode("utf-8"),
            ),
        )

    # -- read -------------------------------------------------------------------

    async def read(self, session_id: str) -> StoredLog:
        """The committed log as a ``WireStream``: the header here, the rows fetched page by
        page from a snapshot of the stream's own as the store validates them (see
        ``sqlite_pages``; ``torn`` is always ``None``)."""
        check_session_id(session_id)
        header, length, head = await self._run(self._read_rows, session_id, None)
        if length <= 0:
            return await self.read_exact(session_id)  # it says why there is nothing to read
        progress = ReadProgress(length)
        path, opened, key, timeout = self._path, self._file_id, _sql_text(session_id), self._busy_timeout

        def events() -> Iterator[dict[str, Any]]:
            pages = stored_pages(path, opened, key, (head[0][0], length), timeout)
            return page_events(pages, progress, length, keyed=True, packed=True)

        def lines() -> Iterator[tuple[int, bytes]]:
            return keyed_rows(stored_pages(path, opened, key, (head[0][0], length), timeout), progress)

        def finished(count: int) -> None:
            if count != length:
                raise StreamRejected(f"{count} events stored where {length} are recorded")

        exact = lambda: self.read_exact(session_id)  # noqa: E731
        stream = WireStream(events, exact, progress, lines=lines, finished=finished)
        return StoredLog(header, [], stream=stream)

    async def read_exact(self, session_id: str) -> StoredLog:
        """The committed log, every row decoded and validated (``torn`` is always ``None``)."""
        check_session_id(session_id)
        return await self._run(self._read, session_id)

    def _read_rows(
        self, session_id: str, select: str | None = _SELECT_ROWS
    ) -> tuple[SessionHeader, int, list[Any]]:
        """The header, the recorded length and the rows ``select`` fetches, from one snapshot
        (no ``select``: the session row ``(header, length)`` as the only row)."""
        key = _sql_text(session_id)
        what = f"cannot read session {session_id!r} from {self._path}"
        with sqlite_errors("read", what), snapshot(self._db) as conn:
            row = conn.execute("SELECT header, length FROM sessions WHERE id = ?", (key,)).fetchone()
            if row is None:
                raise self._pending.missing(session_id)
            lines = [row] if select is None else conn.execute(select, (key,)).fetchall()
        header = self._header(session_id, row[0])
        length = row[1]
        return header, length if type(length) is int else -1, lines

    def _read(self, session_id: str) -> StoredLog:
        header, length, lines = self._read_rows(session_id)
        events = self._decode(session_id, lines)
        if len(events) != length:
            raise self._corrupt(session_id)(f"{length} events recorded but {len(events)} rows stored")
        if not events:
            raise never_appended(session_id)
        return StoredLog(header, events)

    def _decode(self, session_id: str, lines: list[tuple[int, str]]) -> list[dict[str, Any]]:
        events: list[dict[str, Any]] = []
        corrupt = self._corrupt(session_id)
        with collector_paused():
            for seq, line in lines:
                if seq != len(events):
                    raise corrupt(f"seq gap in committed region: expected seq {len(events)}, found {seq}")
                events.extend(decode_row(line, seq, corrupt, packed=True))
        return events

    def _header(self, session_id: str, text: object) -> SessionHeader:
        return header_from_text(session_id, text, self._corrupt(session_id))

    # -- repair, length, list ---------------------------------------------------

    async def repair(self, session_id: str, log: StoredLog, closers: Sequence[Event]) -> None:
        """Append ``closers`` in one transaction (SQLite logs have no torn tails to cut)."""
        await self.append(session_id, closers)

    tail_polls = True
    """Its live tail polls the database (``capabilities.tail_wakes_on_commit``)."""

    def tail(self, session_id: str, from_seq: int = 0) -> AsyncGenerator[Event, None]:
        """The committed events with ``seq >= from_seq`` in order, then each new batch as it
        commits, until the iterator is closed (``TailingBackend``; see ``sqlite_tail``: it
        polls the session's length on this backend's connection)."""
        check_session_id(session_id)
        return tail_rows(
            session_id,
            from_seq,
            key=_sql_text(session_id),
            where=str(self._path),
            connection=lambda: self._db,
            pending=self._pending.__contains__,
            run=self._run,
        )

    async def stored_length(self, session_id: str) -> int:
        """The committed event count (0 for a created, never-appended session)."""
        check_session_id(session_id)
        return await self._run(self._stored_length, session_id)

    def _stored_length(self, session_id: str) -> int:
        return self._pending.length(session_id, self._length(session_id))

    def _list(self) -> list[SessionInfo]:
        with sqlite_errors("read", f"cannot list sessions in {self._path}"):
            rows = self._db.execute(
                "SELECT s.id, s.header, s.length, s.last_time, e.line, s.created_at, s.cwd "
                "FROM sessions AS s "
                "LEFT JOIN events AS e ON e.session_id = s.id AND e.seq = s.title_seq "
                "WHERE s.length > 0 ORDER BY s.created_at, s.id"
            ).fetchall()
        out: list[SessionInfo] = []
        for key, header_text, length, last_time, title_line, created_at, cwd in rows:
            session_id = key if isinstance(key, str) else bytes(key).decode("utf-8", "surrogatepass")
            info = listed(
                session_id,
                functools.partial(self._header, session_id, header_text),
                event_count=length,
                last_activity=last_time,
                title=title_from_line(title_line),
                location=str(self._path),
                created_at=created_at if isinstance(created_at, int) else None,  # the row's: used when
                cwd=cwd if isinstance(cwd, str) else None,  # the header does not read
            )
            out.append(info)
        return out

    async def list(self) -> list[SessionInfo]:
        """Every session with at least one event, oldest first.

        Reads the session rows only (count, last time and title are kept up to date by
        ``append``); gives what ``summarize`` gives for the full log. A row whose header
        is unreadable is listed with ``problem`` saying why, as JSONL listing does.
        """
        return await self._run(self._list)

    # -- delete -------------------------------------------------------------------

    async def delete(self, session_id: str) -> None:
        """Delete the session's rows in one ``BEGIN IMMEDIATE`` transaction (durable at commit),
        with ``secure_delete`` on so their bytes are overwritten, not left in free pages.
        A reservation made here (created, never appended) is dropped."""
        check_session_id(session_id)
        await self._run(self._delete, session_id)

    def _delete(self, session_id: str) -> None:
        conn = self._db
        key = _sql_text(session_id)
        what = f"deleting session {session_id!r} from {self._path} failed, nothing deleted"
        with sqlite_errors("write", what):
            conn.execute("PRAGMA secure_delete = ON")
            with transaction(conn):
                self._claims.check(session_id, self._writer)
                conn.execute("DELETE FROM events WHERE session_id = ?", (key,))
                found = conn.execute("DELETE FROM sessions WHERE id = ?", (key,)).rowcount > 0
        self._pending.deleted(session_id, found=found)

"""``PostgresBackend``: sessions in PostgreSQL, for many workers on many machines (SPEC §4).

Layout: ``migrations`` (the versioned schema and the append function), ``queries``
(the statements), ``codec`` (keys, header and lines), ``errors`` (psycopg errors to
harness errors), ``leasing`` (fenced leases), ``tail`` (LISTEN/NOTIFY live tail).

Decisions:

* **Connections.** psycopg 3 async with a ``psycopg_pool.AsyncConnectionPool`` of
  autocommit connections, opened on first use in the running event loop. The first
  use also connects once directly and creates or migrates the schema, so a wrong
  DSN or a refused schema fails at once with a clear error. A backend belongs to one
  event loop at a time; used from a new loop (a new ``asyncio.run``) it opens a new
  pool. A connection that breaks during an operation is replaced and the operation
  retried once (appends too: see idempotence below).
* **Create.** As in SQLite, ``create`` only reserves the id in this backend; the
  session row is inserted by the first non-empty append in the same transaction as
  its events, so a never-appended session leaves nothing and is not listed.
* **Append.** One statement, ``append_events`` (see ``migrations``): one round trip,
  one transaction, committed durably (when the server's ``synchronous_commit`` is
  ``off``, the backend's connections set it ``on``; stronger settings are kept).
  The batch's first seq is compared with the stored length under the session row's
  lock: ``SessionConflict`` and nothing written when they differ. A batch whose
  start is already stored is accepted only if that stored prefix is byte-identical
  (then only the rest is inserted): a batch retried after a lost reply succeeds
  once, never duplicates, and a different event at a stored seq is a conflict.
  A connection that broke after the statement was sent makes the outcome unknown
  (``OutcomeUnknown``); one that broke at once is retried on a fresh connection, marked
  as a retry, and a retried batch already stored byte for byte is reported stored before
  any lease check. Failing to get a connection at all is ``PersistenceFailed``.
* **Cut-off connections** fail within about ``io_timeout_s``: ``tcp_user_timeout``,
  keepalives and ``connect_timeout`` come from it (``conninfo.connect_settings``), and a
  connection that broke after waiting is not retried.
* **Leases.** When this backend holds a lease on the session (``acquire``), the
  append carries its fencing token and the function refuses it (``LeaseLost``,
  nothing written) unless the token is current and unexpired. An append without a
  token is refused (``LeaseHeld``) while another writer holds a live lease. Leases
  held at ``close`` are released.
* **Read.** One ``REPEATABLE READ`` read-only transaction: the header row, then the
  lines in pages as raw UTF-8 bytes (a binary cursor, no text decoding). ``read``
  hands them to the store as a ``WireStream`` (each decoded while the store
  validates it); ``read_exact`` decodes them all and names any damage: each line
  must hold the event of its position and the count must equal the stored length,
  else ``CorruptSession`` naming the session and seq. Databases leave no torn
  tails: ``torn`` is ``None``; ``repair`` only appends.
* **Errors.** No psycopg exception leaves the backend: writes fail with
  ``PersistenceFailed``, reads with ``StorageError``, the psycopg error chained as
  the cause. Messages name the server as ``user@host:port/db`` and never contain
  the DSN's password.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterator, Sequence
from dataclasses import replace
from typing import Any, Final, TypeVar

import psycopg
from psycopg import abc
from psycopg.abc import Buffer
from psycopg.adapt import Loader
from psycopg.pq import Format
from psycopg_pool import AsyncConnectionPool

from harness.errors import (
    LeaseHeld,
    LeaseLost,
    OutcomeUnknown,
    PersistenceFailed,
    SessionConflict,
    SessionNotFound,
    SessionOwner,
    StorageError,
)
from harness.events.event import Event
from harness.events.json import loads
from harness.session.header import SessionHeader, validate_header
from harness.stores.backend import (
    ReadProgress,
    SessionInfo,
    StoredLog,
    StreamRejected,
    WireStream,
    check_batch,
)
from harness.stores.base import Reservations, closed, corrupt, listed, never_appended
from harness.stores.ids import check_session_id
from harness.stores.leases import Lease
from harness.stores.ownership import Claim, in_use, lost
from harness.stores.postgres import codec
from harness.stores.postgres.conninfo import connect_settings, scrub, where
from harness.stores.postgres.errors import is_connection_error, stored_part, translate
from harness.stores.postgres.leasing import LeaseKeeper
from harness.stores.postgres.migrations import ensure_schema
from harness.stores.postgres.poollog import one_line, route_pool_logs
from harness.stores.postgres.queries import Queries
from harness.stores.postgres.tail import tail_session
from harness.stores.rows import page_events, page_rows, row_pages, title_from_line

__all__ = ["DEFAULT_SCHEMA", "PostgresBackend"]

log = logging.getLogger("harness.stores.postgres")

DEFAULT_SCHEMA: Final = "harness"
READ_PAGE: Final = 4096
"""Seqs fetched per query by ``read`` (bounds the driver's buffer)."""
_STALE_S: Final = 0.5
"""A connection that fails within this long was already broken (stale), not cut off: retry."""

T = TypeVar("T")
Connection = psycopg.AsyncConnection[Any]


class _RawTextPython(Loader):
    """Load ``text`` in binary format as the raw UTF-8 bytes (no ``str`` decoding)."""

    format = Format.BINARY

    def load(self, data: Buffer) -> bytes:
        return bytes(data)


# bytea's binary loader does the same (its wire format is the raw bytes too) without a
# Python call per value when psycopg's C implementation is installed: ~20% of a read's
# client CPU on 100 MB of 1.1 kB lines.
_RawText: type[abc.Loader] = (
    psycopg.adapters.get_loader(psycopg.postgres.types["bytea"].oid, Format.BINARY) or _RawTextPython
)


async def _durable_commits(conn: Connection) -> None:
    await conn.execute("SET synchronous_commit = on")


class PostgresBackend:
    """Sessions in one PostgreSQL schema. See the module docs for the design.

    ``dsn`` is a libpq connection string or URL. ``schema`` is created on first use.
    ``lease_ttl_s`` is the lease a session's owner holds (``claim``), renewed every third of
    it: a killed owner's session can be taken without ``take_over`` that long after its last
    renewal. ``io_timeout_s`` (default: a third of the lease) bounds how long a request the
    server does not answer waits before its connection is given up (``tcp_user_timeout`` and
    keepalives; settings the DSN names win). ``min_size``/``max_size`` size the connection
    pool (``max_size`` defaults to ``min_size``: a fixed pool, filled before first use);
    ``timeout`` (default: twice ``io_timeout_s``) is how long an operation waits for a
    pooled connection; ``connect_timeout`` (default: ``io_timeout_s``, at least 2 s) bounds
    each connection attempt; ``tail_outage_s`` is how long a tail keeps reconnecting before
    it gives up.

    Close the backend (or its ``SessionStore``) before its event loop ends: psycopg_pool
    swallows the cancellation of a connection attempt in flight, so ``asyncio.run``
    could wait for it forever. A fixed-size pool makes such attempts rare (only to
    replace a broken connection).
    """

    def __init__(
        self,
        dsn: str,
        *,
        schema: str = DEFAULT_SCHEMA,
        min_size: int = 2,
        max_size: int | None = None,
        timeout: float | None = None,
        connect_timeout: float | None = None,
        application_name: str = "harness",
        tail_outage_s: float = 60.0,
        lease_ttl_s: float = 10.0,
        io_timeout_s: float | None = None,
    ) -> None:
        if not isinstance(schema, str) or not schema or "\x00" in schema or len(schema.encode()) > 63:
            raise ValueError("schema must be a non-empty name of at most 63 bytes without NUL")
        max_size = min_size if max_size is None else max_size
        if not 1 <= min_size <= max_size:
            raise ValueError(f"pool sizes must satisfy 1 <= min_size <= max_size, got {min_size}, {max_size}")
        if not (isinstance(lease_ttl_s, int | float) and 0 < lease_ttl_s < 86_400):
            raise ValueError(f"lease_ttl_s must be a positive number of seconds, got {lease_ttl_s!r}")
        io_timeout_s = lease_ttl_s / 3 if io_timeout_s is None else io_timeout_s
        limits = (("io_timeout_s", io_timeout_s), ("timeout", timeout), ("connect_timeout", connect_timeout))
        for name, value in limits:
            if value is not None and not (isinstance(value, int | float) and 0 < value < 86_400):
                raise ValueError(f"{name} must be a positive number of seconds, got {value!r}")
        self._dsn = dsn
        self._schema = schema
        self._min_size = min_size
        self._max_size = max_size
        self._io_timeout = float(io_timeout_s)
        self._timeout = 2 * self._io_timeout if timeout is None else float(timeout)
        self._tail_outage_s = tail_outage_s
        self._lease_ttl = float(lease_ttl_s)
        self._connect_kwargs: dict[str, Any] = {
            **connect_settings(dsn, self._io_timeout),
            "application_name": application_name,
        }
        if connect_timeout is not None:
            self._connect_kwargs["connect_timeout"] = max(1, round(connect_timeout))
        self._app_name = application_name
        self._where = f"{where(dsn)} schema {schema}"
        self._q = Queries(schema)
        self._pool: AsyncConnectionPool[Connection] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock: asyncio.Lock | None = None
        self._pending = Reservations()
        self._leases = LeaseKeeper(self._q, self._run_for_keeper)
        self._closed = False

    @property
    def schema(self) -> str:
        """The PostgreSQL schema holding the sessions."""
        return self._schema

    @property
    def location(self) -> str:
        """``user@host:port/db schema NAME`` (never the password)."""
        return self._where

    def __repr__(self) -> str:
        return f"PostgresBackend({self._where!r})"

    # -- plumbing -------------------------------------------------------------------

    async def _ready(self, write: bool = False) -> AsyncConnectionPool[Connection]:
        """The pool, opened (and the schema prepared) on first use in this event loop. A failure
        to connect is ``PersistenceFailed`` for a write (nothing was written), else ``StorageError``."""
        if self._closed:
            raise closed(self)
        loop = asyncio.get_running_loop()
        if self._pool is not None and self._loop is loop:
            return self._pool
        if self._lock is None or self._loop is not loop:
            self._lock = asyncio.Lock()
            if self._pool is not None:
                log.debug("%r: used from a new event loop; opening a new pool", self)
                self._pool = None
            self._loop = loop
        async with self._lock:
            if self._pool is not None:
                return self._pool
            try:
                conn = await psycopg.AsyncConnection.connect(
                    self._dsn, autocommit=True, **self._connect_kwargs
                )
            except psycopg.Error as error:
                reason = one_line(scrub(str(error).strip(), self._dsn))
                failure = PersistenceFailed if write else StorageError
                raise failure(f"cannot connect to PostgreSQL at {where(self._dsn)}: {reason}") from error
            try:
                await ensure_schema(conn, self._schema)
                row = await (await conn.execute("SHOW synchronous_commit")).fetchone()
            except psycopg.Error as error:
                raise translate(
                    error, dsn=self._dsn, session_id=None, action="preparing the schema", write=True
                ) from error
            finally:
                await conn.close()
            # A returned append must be durable: where the server does not wait for the WAL
            # flush at commit, this backend's sessions do (any stronger setting is kept).
            configure = _durable_commits if row is not None and row[0] == "off" else None
            pool: AsyncConnectionPool[Connection] = AsyncConnectionPool(
                self._dsn,
                min_size=self._min_size,
                max_size=self._max_size,
                kwargs={"autocommit": True, **self._connect_kwargs},
                timeout=self._timeout,
                name=f"harness:{self._schema}",
                configure=configure,
                open=False,
            )
            route_pool_logs()
            try:
                await pool.open(wait=True, timeout=self._timeout)
            except Exception as error:
                raise translate(
                    error, dsn=self._dsn, session_id=None, action="opening the connection pool", write=write
                ) from error
            self._pool = pool
        return pool

    async def _run(
        self,
        fn: Callable[[Connection], Awaitable[T]],
        action: str,
        session_id: str | None,
        write: bool,
        *,
        first_seq: int | None = None,
        token: int | None = None,
        commits: bool = False,
    ) -> T:
        """Run ``fn`` on a pooled connection; translate errors. When a connection breaks at
        once (a stale one: the server restarted or dropped it), the pool's idle connections
        are checked and ``fn`` runs once more; one that broke after waiting (an unreachable
        server) is not retried, so a cut-off caller fails within about ``io_timeout_s``.

        ``commits``: ``fn`` commits events (an append). Once it may have reached the server
        its failure is ``OutcomeUnknown``, not ``PersistenceFailed``, unless a retry got a
        definite answer."""
        pool = await self._ready(write)
        uncertain = False  # a ``commits`` statement was sent on a connection that then broke
        for attempt in (1, 2):
            started = time.monotonic()
            sent = False
            try:
                async with pool.connection(timeout=self._timeout) as conn:
                    sent = commits
                    return await fn(conn)
            except psycopg.Error as error:
                broken = is_connection_error(error)
                uncertain = uncertain or (sent and broken)
                if attempt == 1 and broken and time.monotonic() - started < _STALE_S:
                    log.info("%r: connection lost during %s, retrying once", self, action)
                    await pool.check()
                    continue
                failure = translate(
                    error,
                    dsn=self._dsn,
                    session_id=session_id,
                    action=action,
                    write=write,
                    first_seq=first_seq,
                    token=token,
                )
                # A definite refusal (a conflict, a lost lease) is the truth even after a broken
                # first attempt: the append recognises a batch that attempt stored.
                if uncertain and type(failure) is PersistenceFailed:
                    raise self._unknown(session_id, action, failure) from error
                raise failure from error
            except Exception as error:  # PoolTimeout and friends
                if isinstance(error, StorageError | ValueError):
                    raise
                failure = translate(error, dsn=self._dsn, session_id=session_id, action=action, write=write)
                if uncertain or sent:
                    raise self._unknown(session_id, action, failure) from error
                raise failure from error
        raise AssertionError("unreachable")

    def _unknown(self, session_id: str | None, action: str, failure: StorageError) -> OutcomeUnknown:
        label = f"session {session_id!r}" if session_id is not None else "the session store"
        return OutcomeUnknown(
            f"{action} for {label}: the connection broke after the statement was sent, so it may "
            f"have committed ({failure}); the next flush reads what is stored before it writes again"
        )

    async def run_sql(
        self, fn: Callable[[Connection], Awaitable[T]], action: str, *, write: bool = False
    ) -> T:
        """Run ``fn`` on a pooled autocommit connection (schema prepared), with this backend's
        error translation and one retry on a broken connection. For the layers above that
        keep tables of their own in the schema (the search index); ``fn`` must be safe to
        run twice."""
        return await self._run(fn, action, None, write)

    async def _run_for_keeper(
        self, fn: Callable[[Connection], Awaitable[T]], action: str, session_id: str, write: bool
    ) -> T:
        return await self._run(fn, action, session_id, write)

    # -- create -----------------------------------------------------------------------

    async def create(self, header: SessionHeader) -> None:
        """Reserve ``header.id``; the session is written by its first append."""
        check_session_id(header.id)
        header = validate_header(header)
        self._pending.reserve(header, stored=await self._length(header.id) is not None)

    async def _length(self, session_id: str) -> int | None:
        async def query(conn: Connection) -> int | None:
            row = await (await conn.execute(self._q.length, (codec.db_text(session_id),))).fetchone()
            return None if row is None else int(row[0])

        return await self._run(query, "reading the length", session_id, False)

    # -- append -----------------------------------------------------------------------

    async def append(self, session_id: str, batch: Sequence[Event]) -> None:
        """Durably append ``batch`` in one transaction (see the module docs)."""
        check_session_id(session_id)
        events = list(batch)
        if not events:
            await self.stored_length(session_id)  # SessionNotFound for an unknown id
            return
        first = events[0].seq
        check_batch(session_id, first, events)
        pending = self._pending.get(session_id)
        token = self._leases.usable(session_id)  # LeaseLost at once when it could not be renewed
        params = (
            codec.db_text(session_id),
            None if pending is None else codec.encode_header(pending),
            None if pending is None else pending.created_at,
            None if pending is None or pending.cwd is None else codec.db_text(pending.cwd),
            first,
            b"\n".join([event.encode() for event in events]).decode("utf-8"),
            events[-1].time,
            codec.title_seq(events),
            token,
            codec.notify_channel(self._schema, session_id),
        )

        attempts = 0

        async def call(conn: Connection) -> int:
            nonlocal attempts
            attempts += 1  # a retry may find its batch stored by the attempt that broke
            row = await (await conn.execute(self._q.append, (*params, attempts > 1))).fetchone()
            assert row is not None
            return int(row[0])

        try:
            length = await self._run(
                call, "appending events", session_id, True, first_seq=first, token=token, commits=True
            )
        except LeaseLost as refused:
            if pending is None and await self._length(session_id) is None:
                # The lease check comes first in the append; the session itself is gone.
                raise SessionNotFound(f"session {session_id!r} was deleted: nothing was written") from refused
            row = await self._owner_row(session_id)
            if row is not None and row[2]:
                raise lost(
                    session_id,
                    _owner_of(row),
                    refused.token,
                    stored=refused.stored,
                    written=stored_part(first, refused.stored),
                ) from refused
            raise
        except SessionConflict as conflict:
            if conflict.expected:
                self._pending.pop(session_id, None)  # another writer published this id first
            raise
        if length != first + len(events):
            raise PersistenceFailed(
                f"append to session {session_id!r}: the database reports length {length}, "
                f"expected {first + len(events)}"
            )
        self._pending.pop(session_id, None)

    # -- read -------------------------------------------------------------------------

    async def _fetch(self, session_id: str) -> tuple[object, int, list[bytes | None]]:
        """Header text, recorded length and the raw lines by seq (``None`` where a row is
        missing; rows past the length are appended after it), from one snapshot."""
        check_session_id(session_id)
        key = codec.db_text(session_id)

        async def query(conn: Connection) -> tuple[object, int, list[bytes | None]] | None:
            async with conn.transaction():
                await conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
                row = await (await conn.execute(self._q.header, (key,))).fetchone()
                if row is None:
                    return None
                session_key, header, length = row
                length = int(length)
                lines: list[bytes | None] = [None] * length
                extra: list[bytes | None] = []
                cursor = conn.cursor(binary=True)
                cursor.adapters.register_loader("text", _RawText)
                for start in range(0, length + 1, READ_PAGE):
                    if start + READ_PAGE > length:
                        await cursor.execute(self._q.lines_rest, (session_key, start))
                    else:
                        await cursor.execute(self._q.lines, (session_key, start, start + READ_PAGE))
                    for seq, line in await cursor.fetchall():
                        if seq < length:
                            lines[seq] = line
                        else:
                            extra.append(line)
                return header, length, lines + extra

        found = await self._run(query, "reading", session_id, False)
        if found is None:
            raise self._pending.missing(session_id)
        return found

    async def read(self, session_id: str) -> StoredLog:
        """The committed log as a ``WireStream``: lines fetched from one snapshot, handed to the
        store's fast path (``WireStream.lines``) or decoded as it validates them (``torn`` is
        always ``None``); anything unusual falls back to ``read_exact``, which names the problem."""
        header_text, length, fetched = await self._fetch(session_id)
        header = codec.decode_header(session_id, header_text, self._where)
        if not fetched or len(fetched) != length or None in fetched:
            return await self.read_exact(session_id)
        progress = ReadProgress(length)
        rows = fetched

        def events() -> Iterator[dict[str, Any]]:
            return page_events(row_pages(rows), progress, length)

        def lines() -> Iterator[bytes]:
            return page_rows(row_pages(rows), progress)

        def finished(count: int) -> None:
            if count != length:
                raise StreamRejected(f"{count} events stored where {length} are recorded")

        exact = lambda: self.read_exact(session_id)  # noqa: E731
        stream = WireStream(events, exact, progress, lines=lines, packed=False, finished=finished)
        return StoredLog(header, [], stream=stream)

    async def read_exact(self, session_id: str) -> StoredLog:
        """The committed log, every line decoded and validated (``CorruptSession`` names the seq)."""
        header_text, length, lines = await self._fetch(session_id)
        header = codec.decode_header(session_id, header_text, self._where)
        stored = sum(line is not None for line in lines)
        if stored != length:
            raise corrupt(session_id, self._where)(f"{length} events recorded but {stored} rows stored")
        missing = next((seq for seq, line in enumerate(lines) if line is None), None)
        if missing is not None:
            raise corrupt(session_id, self._where)(f"seq gap in committed region: no row for seq {missing}")
        events = codec.decode_lines(session_id, lines, self._where)  # type: ignore[arg-type]
        del lines
        if not events:
            raise never_appended(session_id)
        return StoredLog(header, events)

    # -- repair, length, list -----------------------------------------------------------

    async def repair(self, session_id: str, log: StoredLog, closers: Sequence[Event]) -> None:
        """Append ``closers`` in one transaction (a database log has no torn tail to cut)."""
        await self.append(session_id, closers)

    async def stored_length(self, session_id: str) -> int:
        """The committed event count (0 for a created, never-appended session)."""
        check_session_id(session_id)
        return self._pending.length(session_id, await self._length(session_id))

    async def list(self) -> list[SessionInfo]:
        """Every session with at least one event, oldest first (from the session rows and
        the latest title row; a row whose header is unreadable is listed with ``problem``)."""

        async def query(conn: Connection) -> list[tuple[Any, ...]]:
            return await (await conn.execute(self._q.list)).fetchall()

        rows = await self._run(query, "listing sessions", None, False)
        out: list[SessionInfo] = []
        for header_text, length, last_time, title_line, row_id, created_at, cwd in rows:
            raw = _loads_or_none(header_text)
            # The header's own id (a text column cannot hold every id; the header line can).
            session_id = raw.get("id") if isinstance(raw, dict) and isinstance(raw.get("id"), str) else row_id
            info = listed(
                str(session_id),
                functools.partial(codec.decode_header, str(session_id), header_text, self._where),
                event_count=int(length),
                last_activity=None if last_time is None else int(last_time),
                title=title_from_line(title_line),
                location=self._where,
                created_at=None if created_at is None else int(created_at),  # the row's: used when
                cwd=cwd if isinstance(cwd, str) else None,  # the header does not read
            )
            out.append(info)
        return out

    # -- delete ---------------------------------------------------------------------------

    async def delete(self, session_id: str) -> None:
        """Delete the session row and its events in one transaction (durable at commit), after
        locking its lease row as an append does: ``LeaseHeld`` while another owner holds a
        live lease (a lease of this backend's is expired with it; the row stays, so fencing
        tokens keep growing if the id is used again). Tails of it are woken and end with
        ``SessionDeleted``. The rows' bytes stay in the table files until PostgreSQL vacuums."""
        check_session_id(session_id)
        key = codec.db_text(session_id)
        mine = self._leases.token(session_id)
        channel = codec.notify_channel(self._schema, session_id)

        async def write(conn: Connection) -> tuple[str, Any, Any]:
            async with conn.transaction():
                lease = await (await conn.execute(self._q.delete_lease, (key,))).fetchone()
                if lease is not None and lease[3] and int(lease[1]) != mine:
                    return "held", lease[0], lease[2]
                row = await (await conn.execute(self._q.delete_session, (key,))).fetchone()
                if row is None:
                    return "missing", None, None
                await conn.execute(self._q.delete_events, (int(row[0]),))
                if mine is not None:
                    await conn.execute(self._q.release, (key, mine))
                await conn.execute("SELECT pg_notify(%s, 'deleted')", (channel,))
            return "deleted", None, None

        outcome, owner, expires = await self._run(write, "deleting", session_id, True)
        if outcome == "held":
            holder = codec.from_db_text(owner) if isinstance(owner, str) else None
            raise LeaseHeld(
                f"session {session_id!r} is leased by {LeaseHeld.describe(holder)}: it cannot be deleted "
                "until the lease expires or is released",
                holder=holder,
                expires_at=None if expires is None else int(expires),
            )
        if outcome == "deleted":
            self._leases.forget(session_id)  # the transaction expired the row with the session
        self._pending.deleted(session_id, found=outcome != "missing")

    # -- ownership: a session's owner holds its fenced lease ------------------------------

    async def claim(self, session_id: str, owner: SessionOwner, *, take_over: bool = False) -> Claim:
        """Take the session's fenced lease for ``lease_ttl_s`` (renewed while held), the owner
        record as its owner text; ``take_over`` takes a live lease (a larger token fences the
        old holder's appends off)."""
        check_session_id(session_id)
        await self._ready(write=True)
        held = self._leases.lease(session_id)
        if held is not None:
            mine = _owner_text(held.owner)
            if mine is not None and mine.store == owner.store:
                return Claim(mine)
            if not take_over:
                raise in_use(session_id, mine)
        row = await self._owner_row(session_id)
        previous = None if row is None else _owner_of(row)
        live = row is not None and bool(row[2])
        record = (
            owner
            if not (live and take_over and previous)
            else replace(owner, took_over=replace(previous, took_over=None))
        )
        try:
            lease = await self._leases.acquire(
                session_id, json.dumps(record.to_json(), separators=(",", ":")), self._lease_ttl, take_over
            )
        except LeaseHeld as refused:
            row = await self._owner_row(session_id)
            holder = _owner_of(row) if row is not None and row[2] else refused.owner
            raise in_use(session_id, holder) from refused
        return Claim(replace(record, token=lease.token), previous, taken_over=live and take_over)

    async def unclaim(self, session_id: str) -> None:
        check_session_id(session_id)
        await self._leases.release(session_id)

    async def owner(self, session_id: str) -> SessionOwner | None:
        """The holder of a live lease on the session, by the server's clock."""
        check_session_id(session_id)
        row = await self._owner_row(session_id)
        return _owner_of(row) if row is not None and row[2] else None

    async def _owner_row(self, session_id: str) -> tuple[Any, ...] | None:
        async def query(conn: Connection) -> tuple[Any, ...] | None:
            return await (await conn.execute(self._q.owner, (codec.db_text(session_id),))).fetchone()

        return await self._run(query, "reading the lease", session_id, False)

    # -- leases and tail ------------------------------------------------------------------

    tail_polls = False
    """Its live tail is woken by each commit (``NOTIFY``), never by polling."""

    async def acquire(self, session_id: str, owner: str, ttl_s: float, *, takeover: bool = False) -> Lease:
        """Take the fenced lease on ``session_id`` (see ``harness.stores.leases``)."""
        check_session_id(session_id)
        await self._ready()
        return await self._leases.acquire(session_id, owner, ttl_s, takeover)

    async def release(self, session_id: str) -> None:
        """Stop renewing and expire this backend's lease on ``session_id`` (no-op if none)."""
        check_session_id(session_id)
        await self._leases.release(session_id)

    def lease(self, session_id: str) -> Lease | None:
        """The lease this backend holds on ``session_id``, as last renewed."""
        return self._leases.lease(session_id)

    def tail(self, session_id: str, from_seq: int = 0) -> AsyncGenerator[Event, None]:
        """Committed events from ``from_seq`` on, then each as it commits (LISTEN/NOTIFY; see
        ``harness.stores.postgres.tail``). Close the iterator (``aclose``) to stop."""
        check_session_id(session_id)
        if not isinstance(from_seq, int) or from_seq < 0:
            raise ValueError(f"from_seq must be a non-negative integer, got {from_seq!r}")
        if self._closed:
            raise closed(self)
        return tail_session(
            dsn=self._dsn,
            connect_kwargs={**self._connect_kwargs, "application_name": f"{self._app_name}-tail"},
            schema=self._schema,
            queries=self._q,
            session_id=session_id,
            from_seq=from_seq,
            known=session_id in self._pending,
            max_outage_s=self._tail_outage_s,
            prepare=self._ready,
        )

    # -- close ------------------------------------------------------------------------------

    async def close(self) -> None:
        """Release held leases, close the pool. Later calls raise ``StorageError``."""
        if self._closed:
            return
        try:
            for session_id in self._leases.held():
                try:
                    await self._leases.release(session_id)
                except StorageError as error:
                    log.warning("session %s: releasing the lease failed: %s", session_id, error)
        finally:
            self._closed = True
            pool, self._pool = self._pool, None
            if pool is not None and self._loop is asyncio.get_running_loop():
                await pool.close()


def _owner_text(text: object) -> SessionOwner | None:
    """The owner record a lease row's owner text holds (``None`` for a plain name)."""
    raw = _loads_or_none(codec.from_db_text(text) if isinstance(text, str) else text)
    return SessionOwner.from_json(raw)


def _owner_of(row: tuple[Any, ...]) -> SessionOwner:
    """The owner of an ``owner`` query row: its record, or the lease's plain owner name."""
    record = _owner_text(row[0])
    if record is None:
        name = codec.from_db_text(row[0]) if isinstance(row[0], str) else None
        return SessionOwner(pid=None, host=None, store=name, since=None, token=int(row[3]))
    return replace(record, token=int(row[3]))


def _loads_or_none(text: object) -> Any:
    try:
        return loads(text) if isinstance(text, str | bytes) else None
    except ValueError:
        return None

"""The SQLite FTS5 index: a sidecar file beside a JSONL root or an SQLite store.

Schema (``PRAGMA application_id`` = ``0x68727378`` "hrsx", ``user_version`` = schema
version; an older version is dropped and rebuilt, it holds nothing the store does not)::

    sessions(key INTEGER PRIMARY KEY, id BLOB UNIQUE,   -- the id's UTF-8 (surrogatepass) bytes
             cursor, token, header, tail, classes)      -- the SessionState (harness.search.plan)
    rows(rowid INTEGER PRIMARY KEY, session_key, seq,   -- one per indexed event with text
         type, time, class, turn, step, shadowed_by, compaction_id,
         text BLOB)                                     -- its semantic text (UTF-8, surrogatepass)
    fts USING fts5(body, content='', detail=none,       -- contentless: the index only
                   tokenize='trigram case_sensitive 1') -- body = fold_text(text), rowid = rows.rowid
    fts_vocab USING fts5vocab(fts, row)                 -- rows per trigram: a query uses the rarest

A session's rows, its ``fts`` entries and its state row change in one ``BEGIN IMMEDIATE``
transaction (``apply``), after checking that the state row is still the one the plan was
made from (another process may have indexed the session meanwhile): a crash leaves every
session at its old state or its new one, never between. The file runs in WAL mode
(readers never wait for a catch-up) with ``synchronous=NORMAL``: a power cut may lose the
last commits, which only makes the index stale, and the next catch-up redoes them.

``detail=none`` keeps only which rows hold each trigram (no positions): the index is about
a third of the size and twice as fast to build as with positions, and a query is the AND
of its trigrams; the exact check happens afterwards, against the needle. A contentless
table cannot read its text back, so deleting a row hands FTS5 the folded text again,
recomputed from ``rows.text``.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Final, TypeVar

import msgspec

from harness.errors import SearchIndexCorrupt, SearchIndexError
from harness.query.index import QueryIndex
from harness.query.records import CLASSIFICATIONS
from harness.search.backing import Candidate, CandidateQuery, Key
from harness.search.fold import fold_text
from harness.search.plan import SessionPlan, SessionState
from harness.search.prefilter import PrefilterDialect, build_prefilter
from harness.stores.sqlite_errors import is_locked, translate
from harness.stores.worker import BlockingWorkers

__all__ = ["APPLICATION_ID", "NARROW", "SCHEMA_VERSION", "SidecarIndex"]

NARROW: Final = 6
"""How many of a query's trigrams (the rarest) the FTS5 query uses."""
APPLICATION_ID: Final = 0x68727378
SCHEMA_VERSION: Final = 2  # 2: fts_vocab

_T = TypeVar("_T")

_SCHEMA: Final = (
    "CREATE TABLE sessions (key INTEGER PRIMARY KEY, id BLOB NOT NULL UNIQUE, cursor INTEGER NOT NULL,"
    " token TEXT NOT NULL, header TEXT NOT NULL, tail TEXT NOT NULL, classes BLOB NOT NULL) STRICT",
    "CREATE TABLE rows (rowid INTEGER PRIMARY KEY, session_key INTEGER NOT NULL, seq INTEGER NOT NULL,"
    " type BLOB NOT NULL, time INTEGER NOT NULL, class INTEGER NOT NULL, turn INTEGER NOT NULL,"
    " step INTEGER NOT NULL, shadowed_by INTEGER, compaction_id BLOB, text BLOB NOT NULL,"
    " UNIQUE (session_key, seq)) STRICT",
    "CREATE VIRTUAL TABLE fts USING fts5(body, content='', detail=none,"
    " tokenize='trigram case_sensitive 1')",
    "CREATE VIRTUAL TABLE fts_vocab USING fts5vocab(fts, row)",
)


def _b(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


def _s(blob: bytes) -> str:
    return bytes(blob).decode("utf-8", "surrogatepass")


def _phrase(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


def _sqlite_any_of(column: str, _sql_type: str, values: Sequence[int], _params: list[Any]) -> str:
    # Integers inline: SQLite has no array parameter, and these are never user text.
    return f"{column} IN ({', '.join(str(int(value)) for value in values)})"


_PREFILTER: Final = PrefilterDialect(
    integer="?",
    text="?",
    true="1",
    session_column="s.id",
    encode_text=_b,
    prefix_match=lambda column, prefix: f"substr({column}, 1, {len(prefix)}) = ?",
    any_of=_sqlite_any_of,
)


_SELECT: Final = (
    "SELECT s.id, r.seq, r.type, r.time, r.class, r.turn, r.step, r.shadowed_by, r.compaction_id, r.text"
)


class SidecarIndex:
    """The index in an SQLite file (``:memory:`` for a memory store). Every call runs on one
    dedicated thread that owns the connection."""

    def __init__(self, path: str | os.PathLike[str], *, busy_timeout: float = 30.0) -> None:
        self._memory = os.fspath(path) == ":memory:"
        self._path = os.fspath(path) if self._memory else str(Path(path).absolute())
        self._busy_timeout = busy_timeout
        self._conn: sqlite3.Connection | None = None
        self._worker = BlockingWorkers("harness-search", threads=1, idle_s=None)
        self._closed = False

    @property
    def location(self) -> str:
        """The index file (``:memory:`` for an in-memory index)."""
        return self._path

    def __repr__(self) -> str:
        return f"SidecarIndex({self._path!r})"

    # ---- plumbing ---------------------------------------------------------------------

    async def run(self, fn: Callable[..., _T], *args: Any) -> _T:
        """Run ``fn(*args)`` on the index's thread (the connection opened on first use)."""
        if self._closed:
            raise SearchIndexError(f"{self!r} is closed")
        return await self._worker.run(self._guarded, fn, *args)

    def _guarded(self, fn: Callable[..., _T], *args: Any) -> _T:
        try:
            if self._conn is None:
                self._conn = self._open()
            return fn(*args)
        except sqlite3.Error as error:
            if self._conn is not None and self._conn.in_transaction:
                with contextlib.suppress(sqlite3.Error):
                    self._conn.rollback()
            raise translate(error, "index", self._path) from error

    def _open(self) -> sqlite3.Connection:
        if not self._memory:
            Path(self._path).parent.mkdir(parents=True, exist_ok=True)
            if not os.path.exists(self._path):
                fd = os.open(self._path, os.O_CREAT | os.O_WRONLY, 0o600)
                os.close(fd)
        conn = sqlite3.connect(self._path, timeout=self._busy_timeout, isolation_level=None)
        try:
            conn.execute("PRAGMA trusted_schema = OFF")
            if not self._memory:
                self._enter_wal(conn)
            conn.execute("PRAGMA synchronous = NORMAL")
            self._prepare(conn)
        except BaseException:
            conn.close()
            raise
        return conn

    def _enter_wal(self, conn: sqlite3.Connection) -> None:
        # Switching a file into WAL needs it alone for a moment, and SQLite answers "database
        # is locked" at once, without its busy handler, while another connection (a second
        # indexer opening the same new file) holds it: retry until the busy timeout.
        deadline = time.monotonic() + self._busy_timeout
        delay = 0.002
        while True:
            try:
                mode = str(conn.execute("PRAGMA journal_mode").fetchone()[0]).lower()
                if mode != "wal":
                    mode = str(conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]).lower()
            except sqlite3.OperationalError as error:
                if not is_locked(error):
                    raise
                mode = ""
            if mode == "wal":
                return
            if time.monotonic() >= deadline:
                raise SearchIndexError(
                    f"the search index {self._path} could not enter WAL mode within "
                    f"{self._busy_timeout:g} s (another process holds it)"
                )
            time.sleep(delay)
            delay = min(delay * 2, 0.05)

    def _prepare(self, conn: sqlite3.Connection) -> None:
        application = conn.execute("PRAGMA application_id").fetchone()[0]
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if application == APPLICATION_ID and version == SCHEMA_VERSION:
            return
        tables = conn.execute("SELECT count(*) FROM sqlite_schema").fetchone()[0]
        if application not in (0, APPLICATION_ID) or (application == 0 and tables):
            raise SearchIndexCorrupt(
                f"{self._path} is not a harness search index: move it away, or rebuild "
                "(harness index --rebuild replaces it)"
            )
        if version > SCHEMA_VERSION:
            raise SearchIndexError(
                f"the search index {self._path} has version {version}, newer than this harness "
                f"({SCHEMA_VERSION}): upgrade harness, or rebuild it"
            )
        conn.execute("BEGIN IMMEDIATE")
        try:
            # Another process may have created it meanwhile; an older version is dropped whole.
            if conn.execute("PRAGMA user_version").fetchone()[0] != SCHEMA_VERSION:
                for name in ("fts_vocab", "fts", "rows", "sessions"):
                    conn.execute(f"DROP TABLE IF EXISTS {name}")
                for statement in _SCHEMA:
                    conn.execute(statement)
                conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
                conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            conn.execute("COMMIT")
        except BaseException:
            conn.rollback()
            raise

    @property
    def _db(self) -> sqlite3.Connection:
        assert self._conn is not None
        return self._conn

    async def close(self) -> None:
        """Close the connection and the thread."""
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

    # ---- state ------------------------------------------------------------------------

    async def states(self) -> dict[str, SessionState]:
        """The state of every indexed session."""
        return await self.run(self._states)

    def _states(self) -> dict[str, SessionState]:
        out: dict[str, SessionState] = {}
        for sid, cursor, token, header, tail in self._db.execute(
            "SELECT id, cursor, token, header, tail FROM sessions"
        ):
            session_id = _s(sid)
            out[session_id] = SessionState(
                session_id=session_id, cursor=cursor, token=token, header=header, tail=tail
            )
        return out

    async def classes(self, session_id: str) -> bytes:
        """The classification codes of a session's indexed events (empty when none)."""
        return await self.run(self._classes, session_id)

    def _classes(self, session_id: str) -> bytes:
        row = self._db.execute("SELECT classes FROM sessions WHERE id = ?", (_b(session_id),)).fetchone()
        return b"" if row is None else bytes(row[0])

    async def apply(self, plan: SessionPlan) -> bool:
        """Write ``plan`` in one transaction; ``False`` (nothing written) when the session's
        state is no longer ``plan.expect``."""
        return await self.run(self._apply, plan)

    def _state_of(self, key: bytes) -> tuple[int, SessionState] | None:
        row = self._db.execute(
            "SELECT key, cursor, token, header, tail FROM sessions WHERE id = ?", (key,)
        ).fetchone()
        if row is None:
            return None
        skey, cursor, token, header, tail = row
        return skey, SessionState(session_id=_s(key), cursor=cursor, token=token, header=header, tail=tail)

    def _delete_rows(self, skey: int) -> None:
        conn = self._db
        doomed = conn.execute("SELECT rowid, text FROM rows WHERE session_key = ?", (skey,)).fetchall()
        conn.executemany(
            "INSERT INTO fts (fts, rowid, body) VALUES ('delete', ?, ?)",
            ((rowid, fold_text(_s(text))) for rowid, text in doomed),
        )
        conn.execute("DELETE FROM rows WHERE session_key = ?", (skey,))

    def _apply(self, plan: SessionPlan) -> bool:
        conn = self._db
        state = plan.state
        key = _b(state.session_id)
        conn.execute("BEGIN IMMEDIATE")
        try:
            found = self._state_of(key)
            if (found[1] if found else None) != plan.expect:
                conn.execute("ROLLBACK")
                return False
            if found is None:
                skey = conn.execute(
                    "INSERT INTO sessions (id, cursor, token, header, tail, classes)"
                    " VALUES (?, 0, '', '', '', x'') RETURNING key",
                    (key,),
                ).fetchone()[0]
            else:
                skey = found[0]
                if plan.reset:
                    self._delete_rows(skey)
            base = conn.execute("SELECT coalesce(max(rowid), 0) + 1 FROM rows").fetchone()[0]
            conn.executemany(
                "INSERT INTO rows (rowid, session_key, seq, type, time, class, turn, step, shadowed_by,"
                " compaction_id, text) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    (
                        base + i,
                        skey,
                        row.seq,
                        _b(row.type),
                        row.time,
                        QueryIndex.code_of(row.classification),
                        row.turn or 0,
                        row.step or 0,
                        row.shadowed_by,
                        None if row.compaction_id is None else _b(row.compaction_id),
                        _b(row.text),
                    )
                    for i, row in enumerate(plan.rows)
                ),
            )
            conn.executemany(
                "INSERT INTO fts (rowid, body) VALUES (?, ?)",
                ((base + i, fold_text(row.text)) for i, row in enumerate(plan.rows)),
            )
            conn.executemany(
                "UPDATE rows SET class = ?, shadowed_by = ?, compaction_id = ?"
                " WHERE session_key = ? AND seq = ?",
                (
                    (
                        QueryIndex.code_of(item.classification),
                        item.shadowed_by,
                        None if item.compaction_id is None else _b(item.compaction_id),
                        skey,
                        item.seq,
                    )
                    for item in plan.reclass
                ),
            )
            conn.execute(
                "UPDATE sessions SET cursor = ?, token = ?, header = ?, tail = ?, classes = ? WHERE key = ?",
                (state.cursor, state.token, state.header, state.tail, plan.classes, skey),
            )
            conn.execute("COMMIT")
            return True
        except BaseException:
            if conn.in_transaction:
                conn.rollback()
            raise

    async def drop(self, session_ids: Sequence[str]) -> None:
        """Remove these sessions and their rows (they left the store)."""
        await self.run(self._drop, list(session_ids))

    def _drop(self, session_ids: list[str]) -> None:
        conn = self._db
        conn.execute("BEGIN IMMEDIATE")
        try:
            for session_id in session_ids:
                found = self._state_of(_b(session_id))
                if found is not None:
                    self._delete_rows(found[0])
                    conn.execute("DELETE FROM sessions WHERE key = ?", (found[0],))
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.rollback()
            raise

    async def clear(self) -> None:
        """Start from nothing: the file is deleted and made again (so a damaged one is too)."""
        if self._closed:
            raise SearchIndexError(f"{self!r} is closed")
        await self._worker.run(self._clear)  # never opens the file: it may be what is damaged

    def _clear(self) -> None:
        self._close()
        if self._memory:
            return
        for suffix in ("", "-wal", "-shm", "-journal"):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self._path + suffix)

    # ---- search -----------------------------------------------------------------------

    async def narrow(self, query: CandidateQuery) -> CandidateQuery | None:
        """The ``NARROW`` rarest of the query's trigrams (FTS5 intersects every term's row
        list: rare ones keep that cost near the number of hits as the index grows), or
        ``None`` when one is in no row."""
        if not query.terms:
            return query
        counts = await self.run(self._counts, query.terms)
        if min(counts.values()) == 0:
            return None
        rarest = sorted(query.terms, key=lambda term: (counts[term], term))[:NARROW]
        return msgspec.structs.replace(query, terms=tuple(rarest))

    def _counts(self, terms: tuple[str, ...]) -> dict[str, int]:
        conn = self._db
        out: dict[str, int] = {}
        for term in terms:
            row = conn.execute("SELECT doc FROM fts_vocab WHERE term = ?", (term,)).fetchone()
            out[term] = 0 if row is None else int(row[0])
        return out

    async def candidates(self, query: CandidateQuery, after: Key | None, limit: int) -> list[Candidate]:
        """Up to ``limit`` candidate rows in key order after ``after``."""
        return await self.run(self._candidates, query, after, limit)

    def _candidates(self, query: CandidateQuery, after: Key | None, limit: int) -> list[Candidate]:
        params: list[Any] = []
        if query.terms:
            params.append(" AND ".join(_phrase(term) for term in query.terms))
            pre = build_prefilter(query, params, _PREFILTER)
            sql = (
                f"{_SELECT}, m.score FROM (SELECT rowid, bm25(fts) AS score FROM fts WHERE fts MATCH ?) AS m"
                " JOIN rows AS r ON r.rowid = m.rowid JOIN sessions AS s ON s.key = r.session_key"
                f" WHERE {pre}"
            )
            if after is not None:
                sql += " AND (m.score, s.id, r.seq) > (?, ?, ?)"
                params += [after[0], _b(after[1]), after[2]]
            sql += " ORDER BY m.score, s.id, r.seq LIMIT ?"
        else:
            pre = build_prefilter(query, params, _PREFILTER)
            sql = (
                f"{_SELECT}, 0.0 FROM rows AS r JOIN sessions AS s ON s.key = r.session_key WHERE {pre}"
            )
            if after is not None:
                sql += " AND (s.id, r.seq) > (?, ?)"
                params += [_b(after[1]), after[2]]
            sql += " ORDER BY s.id, r.seq LIMIT ?"
        params.append(limit)
        names = CLASSIFICATIONS_BY_CODE
        found = self._db.execute(sql, params)
        return [
            Candidate(
                session_id=_s(sid),
                seq=seq,
                type=_s(kind),
                time=time,
                classification=names[code],
                turn=turn or None,
                step=step or None,
                shadowed_by=shadowed_by,
                compaction_id=None if compaction is None else _s(compaction),
                text=_s(text),
                score=float(score),
            )
            for sid, seq, kind, time, code, turn, step, shadowed_by, compaction, text, score in found
        ]


CLASSIFICATIONS_BY_CODE: Final = {QueryIndex.code_of(name): name for name in CLASSIFICATIONS}

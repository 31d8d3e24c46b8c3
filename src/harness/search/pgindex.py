"""The PostgreSQL index: a ``tsvector`` column with a GIN index, in the store's own schema.

Schema (its own versioned chain, recorded in ``<schema>.search_schema_version`` and
migrated like the store's: every missing step in one transaction under an advisory lock,
so two processes opening a fresh schema migrate it once; a newer version is refused)::

    search_sessions(id text PRIMARY KEY,          -- codec.db_text(session id)
                    cursor, token, header, tail, classes)   -- the SessionState
    search_rows(session_id, seq,                  -- PRIMARY KEY
                type, time, class, turn, step, shadowed_by, compaction_id,
                body bytea,                       -- the semantic text (UTF-8, surrogatepass)
                tsv tsvector,                     -- its trigrams (GIN index search_rows_tsv)
                wide boolean)                     -- too many trigrams for a tsvector: always checked

The store's own migrations are untouched (an older harness still opens the schema); the
index's tables appear on the first use of the index.

A row's ``tsvector`` is built here, not by a text search configuration: its lexemes are
the trigrams of ``fold_text(text)`` (the same folding as the SQLite index), each written
as the base64url of its UTF-8 bytes, with up to ``_POSITIONS`` positions each so that
``ts_rank`` sees how often a trigram occurs. The query is the AND of the query's trigrams
in the same spelling, so neither side ever passes user text through tsquery syntax: the
alphabet of base64url holds no operator and no quote. A text whose vector would pass the
1 MB limit of a ``tsvector`` is stored ``wide`` (no vector): every ranked search checks
such rows too, and ranks them last.

Ranking is ``ts_rank(tsv, query, 1)`` (divided by one plus the log of the length).
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from typing import Any, Final

from psycopg import AsyncConnection, sql

from harness.errors import UnsupportedFormat
from harness.query.index import QueryIndex
from harness.search.backing import Candidate, CandidateQuery, Key
from harness.search.fold import fold_text
from harness.search.plan import SessionPlan, SessionState
from harness.search.prefilter import PrefilterDialect, build_prefilter
from harness.search.sidecar import CLASSIFICATIONS_BY_CODE
from harness.stores.capabilities import SqlSchema
from harness.stores.postgres.codec import db_text, from_db_text

__all__ = ["SEARCH_SCHEMA_VERSION", "PostgresIndex", "tsvector_literal"]

Connection = AsyncConnection[Any]

_POSITIONS: Final = 8
_MAX_POSITION: Final = 16383
_MAX_VECTOR: Final = 900_000  # bytes of literal: under PostgreSQL's 1 MB tsvector limit


def _to_1(s: sql.Identifier) -> list[sql.Composed]:
    return [
        sql.SQL(
            "CREATE TABLE {s}.search_sessions (id text COLLATE \"C\" PRIMARY KEY, cursor bigint NOT NULL,"
            " token text NOT NULL, header text NOT NULL, tail text NOT NULL, classes bytea NOT NULL)"
        ).format(s=s),
        sql.SQL(
            "CREATE TABLE {s}.search_rows (session_id text COLLATE \"C\" NOT NULL, seq bigint NOT NULL,"
            " type text NOT NULL, time bigint NOT NULL, class smallint NOT NULL, turn integer NOT NULL,"
            " step integer NOT NULL, shadowed_by bigint, compaction_id text, body bytea NOT NULL,"
            " tsv tsvector, wide boolean NOT NULL DEFAULT false, PRIMARY KEY (session_id, seq))"
        ).format(s=s),
        sql.SQL("CREATE INDEX search_rows_tsv ON {s}.search_rows USING gin (tsv)").format(s=s),
        sql.SQL("CREATE INDEX search_rows_wide ON {s}.search_rows (session_id, seq) WHERE wide").format(s=s),
    ]


_MIGRATIONS: Final = [_to_1]
SEARCH_SCHEMA_VERSION: Final = len(_MIGRATIONS)


async def _version(conn: Connection, schema: str) -> int | None:
    # pg_tables, not to_regclass: the catalog cache may still hold "no such table" from before
    # the advisory lock wait (invalidations are read at lock or transaction start only).
    row = await (
        await conn.execute(
            "SELECT 1 FROM pg_catalog.pg_tables"
            " WHERE schemaname = %s AND tablename = 'search_schema_version'",
            (schema,),
        )
    ).fetchone()
    if row is None:
        return None
    row = await (
        await conn.execute(
            sql.SQL("SELECT coalesce(max(version), 0) FROM {}.search_schema_version").format(
                sql.Identifier(schema)
            )
        )
    ).fetchone()
    return int(row[0]) if row is not None else 0


def _newer(schema: str, version: int) -> UnsupportedFormat:
    return UnsupportedFormat(
        f"the search index in PostgreSQL schema {schema!r} has version {version}, newer than this "
        f"harness reads ({SEARCH_SCHEMA_VERSION}): upgrade harness"
    )


async def ensure_search_schema(conn: Connection, schema: str) -> None:
    """Create or migrate the index's tables in ``schema`` (``conn`` in autocommit mode)."""
    found = await _version(conn, schema)
    if found == SEARCH_SCHEMA_VERSION:
        return
    if found is not None and found > SEARCH_SCHEMA_VERSION:
        raise _newer(schema, found)
    s = sql.Identifier(schema)
    async with conn.transaction():
        await conn.execute(
            "SELECT pg_advisory_xact_lock(hashtext('harness.search.migrate:' || %s::text))", (schema,)
        )
        found = await _version(conn, schema)  # another process may have migrated meanwhile
        if found is None:
            await conn.execute(
                sql.SQL(
                    "CREATE TABLE {}.search_schema_version (version integer PRIMARY KEY,"
                    " applied_at timestamptz NOT NULL DEFAULT now())"
                ).format(s)
            )
            found = 0
        if found > SEARCH_SCHEMA_VERSION:
            raise _newer(schema, found)
        for step in range(found, SEARCH_SCHEMA_VERSION):
            for statement in _MIGRATIONS[step](s):
                await conn.execute(statement)
            await conn.execute(
                sql.SQL("INSERT INTO {}.search_schema_version (version) VALUES (%s)").format(s), (step + 1,)
            )


def _lexeme(gram: str) -> str:
    return base64.urlsafe_b64encode(gram.encode("utf-8")).decode("ascii").rstrip("=")


def tsvector_literal(text: str) -> str | None:
    """The ``tsvector`` input of ``text`` (see the module doc), ``None`` when too large."""
    folded = fold_text(text)
    positions: dict[str, list[int]] = {}
    for start in range(len(folded) - 2):
        found = positions.setdefault(folded[start : start + 3], [])
        if len(found) < _POSITIONS:
            found.append(min(start + 1, _MAX_POSITION))
    parts = [
        f"'{_lexeme(gram)}':{','.join(map(str, sorted(set(where))))}" for gram, where in positions.items()
    ]
    literal = " ".join(parts)
    if len(literal) > _MAX_VECTOR:
        literal = " ".join(f"'{_lexeme(gram)}'" for gram in positions)
        if len(literal) > _MAX_VECTOR:
            return None
    return literal


def _b(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


def _s(blob: bytes | memoryview) -> str:
    return bytes(blob).decode("utf-8", "surrogatepass")


class PostgresIndex:
    """The index in the PostgreSQL schema of a ``SqlSchema`` backend (its connection pool)."""

    def __init__(self, backend: SqlSchema) -> None:
        self._backend = backend
        self._schema = backend.schema
        self._s = sql.Identifier(backend.schema)
        self._ready = False

    @property
    def location(self) -> str:
        return f"{self._backend.location} (tables search_*)"

    def __repr__(self) -> str:
        return f"PostgresIndex({self.location!r})"

    async def _run(self, fn: Any, action: str, *, write: bool = False) -> Any:
        if not self._ready:
            schema = self._schema
            await self._backend.run_sql(
                lambda conn: ensure_search_schema(conn, schema), "preparing the search index", write=True
            )
            self._ready = True
        return await self._backend.run_sql(fn, action, write=write)

    def _q(self, text: str) -> sql.Composed:
        return sql.SQL(text).format(s=self._s)

    async def states(self) -> dict[str, SessionState]:
        async def query(conn: Connection) -> list[tuple[Any, ...]]:
            cursor = await conn.execute(
                self._q("SELECT id, cursor, token, header, tail FROM {s}.search_sessions")
            )
            return await cursor.fetchall()

        out: dict[str, SessionState] = {}
        for key, cursor, token, header, tail in await self._run(query, "reading the search index"):
            session_id = from_db_text(key)
            out[session_id] = SessionState(
                session_id=session_id, cursor=int(cursor), token=token, header=header, tail=tail
            )
        return out

    async def classes(self, session_id: str) -> bytes:
        """The classification codes of a session's indexed events (empty when none)."""
        key = db_text(session_id)

        async def query(conn: Connection) -> bytes:
            statement = self._q("SELECT classes FROM {s}.search_sessions WHERE id = %s::text")
            row = await (await conn.execute(statement, (key,))).fetchone()
            return b"" if row is None else bytes(row[0])

        result: bytes = await self._run(query, "reading the search index")
        return result

    async def apply(self, plan: SessionPlan) -> bool:
        state = plan.state
        key = db_text(state.session_id)
        copy_rows = [
            (
                key,
                row.seq,
                db_text(row.type),
                row.time,
                QueryIndex.code_of(row.classification),
                row.turn or 0,
                row.step or 0,
                row.shadowed_by,
                None if row.compaction_id is None else db_text(row.compaction_id),
                _b(row.text),
                vector,
                vector is None,
            )
            for row in plan.rows
            for vector in (tsvector_literal(row.text),)
        ]

        async def write(conn: Connection) -> bool:
            async with conn.transaction():
                await conn.execute(
                    "SELECT pg_advisory_xact_lock("
                    "hashtext('harness.search:' || %s::text || ':' || %s::text))",
                    (self._schema, key),
                )
                row = await (
                    await conn.execute(
                        self._q(
                            "SELECT id, cursor, token, header, tail FROM {s}.search_sessions"
                            " WHERE id = %s::text FOR UPDATE"
                        ),
                        (key,),
                    )
                ).fetchone()
                found = (
                    None
                    if row is None
                    else SessionState(
                        session_id=state.session_id,
                        cursor=int(row[1]),
                        token=row[2],
                        header=row[3],
                        tail=row[4],
                    )
                )
                if found != plan.expect:
                    return False
                if plan.reset:
                    await conn.execute(
                        self._q("DELETE FROM {s}.search_rows WHERE session_id = %s::text"), (key,)
                    )
                if copy_rows:
                    async with conn.cursor().copy(
                        self._q(
                            "COPY {s}.search_rows (session_id, seq, type, time, class, turn, step,"
                            " shadowed_by, compaction_id, body, tsv, wide) FROM STDIN"
                        )
                    ) as copy:
                        for item in copy_rows:
                            await copy.write_row(item)
                if plan.reclass:
                    async with conn.cursor() as cursor:
                        await cursor.executemany(
                            self._q(
                                "UPDATE {s}.search_rows SET class = %s, shadowed_by = %s, compaction_id = %s"
                                " WHERE session_id = %s::text AND seq = %s"
                            ),
                            [
                                (
                                    QueryIndex.code_of(item.classification),
                                    item.shadowed_by,
                                    None if item.compaction_id is None else db_text(item.compaction_id),
                                    key,
                                    item.seq,
                                )
                                for item in plan.reclass
                            ],
                        )
                await conn.execute(
                    self._q(
                        "INSERT INTO {s}.search_sessions (id, cursor, token, header, tail, classes)"
                        " VALUES (%s::text, %s, %s, %s, %s, %s) ON CONFLICT (id) DO UPDATE SET"
                        " cursor = excluded.cursor, token = excluded.token, header = excluded.header,"
                        " tail = excluded.tail, classes = excluded.classes"
                    ),
                    (key, state.cursor, state.token, state.header, state.tail, plan.classes),
                )
                return True

        result: bool = await self._run(write, "writing the search index", write=True)
        return result

    async def drop(self, session_ids: Sequence[str]) -> None:
        keys = [db_text(session_id) for session_id in session_ids]

        async def write(conn: Connection) -> None:
            async with conn.transaction():
                await conn.execute(self._q("DELETE FROM {s}.search_rows WHERE session_id = ANY(%s)"), (keys,))
                await conn.execute(self._q("DELETE FROM {s}.search_sessions WHERE id = ANY(%s)"), (keys,))

        await self._run(write, "writing the search index", write=True)

    async def clear(self) -> None:
        async def write(conn: Connection) -> None:
            async with conn.transaction():
                await conn.execute(self._q("TRUNCATE {s}.search_rows, {s}.search_sessions"))

        await self._run(write, "clearing the search index", write=True)

    async def narrow(self, query: CandidateQuery) -> CandidateQuery | None:
        """Every term: the GIN index intersects its posting lists itself."""
        return query

    async def candidates(self, query: CandidateQuery, after: Key | None, limit: int) -> list[Candidate]:
        params: list[Any] = []
        clauses = build_prefilter(query, params, _PREFILTER)
        if query.terms:
            tsquery = " & ".join(f"'{_lexeme(term)}'" for term in query.terms)
            text = (
                "SELECT session_id, seq, type, time, class, turn, step, shadowed_by, compaction_id,"
                " body, score FROM (SELECT r.*, CASE WHEN r.wide THEN 0.0::float8"
                " ELSE (-ts_rank(r.tsv, q.q, 1))::float8 END AS score"
                " FROM {s}.search_rows AS r, (SELECT %s::tsquery AS q) AS q"
                f" WHERE (r.tsv @@ q.q OR r.wide) AND {clauses}) AS x"
            )
            params.insert(0, tsquery)
            if after is not None:
                text += " WHERE (score, session_id, seq) > (%s::float8, %s::text, %s::bigint)"
                params += [after[0], db_text(after[1]), after[2]]
            text += " ORDER BY score, session_id, seq LIMIT %s"
        else:
            text = (
                "SELECT session_id, seq, type, time, class, turn, step, shadowed_by, compaction_id, body,"
                f" 0.0::float8 FROM {{s}}.search_rows AS r WHERE {clauses}"
            )
            if after is not None:
                text += " AND (session_id, seq) > (%s::text, %s::bigint)"
                params += [db_text(after[1]), after[2]]
            text += " ORDER BY session_id, seq LIMIT %s"
        params.append(limit)
        statement = self._q(text)

        async def read(conn: Connection) -> list[tuple[Any, ...]]:
            return await (await conn.execute(statement, params)).fetchall()

        names = CLASSIFICATIONS_BY_CODE
        found = await self._run(read, "searching")
        return [
            Candidate(
                session_id=from_db_text(sid),
                seq=int(seq),
                type=from_db_text(kind),
                time=int(time),
                classification=names[code],
                turn=turn or None,
                step=step or None,
                shadowed_by=None if shadowed_by is None else int(shadowed_by),
                compaction_id=None if compaction is None else from_db_text(compaction),
                text=_s(body),
                score=float(score),
            )
            for sid, seq, kind, time, code, turn, step, shadowed_by, compaction, body, score in found
        ]

    async def close(self) -> None:
        """Nothing to close: the connections are the backend's."""


def _pg_any_of(column: str, sql_type: str, values: Sequence[int], params: list[Any]) -> str:
    params.append(list(values))
    return f"{column} = ANY(%s::{sql_type}[])"


_PREFILTER: Final = PrefilterDialect(
    integer="%s::bigint",
    text="%s::text",
    true="true",
    session_column="r.session_id",
    encode_text=db_text,
    prefix_match=lambda column, _prefix: f"starts_with({column}, %s::text)",
    any_of=_pg_any_of,
)

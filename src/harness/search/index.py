"""``SearchIndex``: full-text search across a store, kept up to date incrementally.

``open_search_index(store)`` picks where the index lives (``docs/querying-search.md``):

* a JSONL root: the sidecar ``<root>/.harness-index.sqlite`` (a file at the root, which
  the store's layout, made of directories, never reads);
* an SQLite store: the sidecar ``<file>.harness-index.sqlite`` beside the database (its
  own file, so indexing never holds the store's write lock and a damaged index never
  touches a session);
* PostgreSQL: tables in the store's schema, with a ``tsvector`` column and a GIN index;
* a memory store: an in-memory SQLite index.

``catch_up()`` reads each session whose change token moved, and writes what changed in one
transaction per session (``plan_session``); ``search()`` catches up first (unless told not
to), asks the backing for candidates in rank order and keeps those the query layer's own
rules admit: the ``TextNeedle`` of the text and the ``EventFilter``.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Sequence
from typing import Any, Final

from harness.errors import HarnessError, InvalidQuery
from harness.query.filters import EventFilter
from harness.query.match import TextNeedle
from harness.search.backing import Backing, Candidate, CandidateQuery
from harness.search.cursor import Key, decode_cursor, encode_cursor, query_digest
from harness.search.fold import query_terms
from harness.search.plan import SessionState, plan_session
from harness.search.results import IndexReport, SearchHit, SearchPage, StaleSession, snippet
from harness.search.sources import probe, read_committed
from harness.stores.backend import Backend
from harness.stores.capabilities import DatabaseFile, SessionFiles, SqlSchema
from harness.stores.store import SessionStore

__all__ = ["INDEX_SIDECAR", "MAX_HITS", "SearchIndex", "forget_deleted", "open_search_index", "sidecar_path"]

log = logging.getLogger("harness.search")

INDEX_SIDECAR: Final = ".harness-index.sqlite"
"""The index file of a JSONL root (``<root>/.harness-index.sqlite``); an SQLite store's is
``<file>.harness-index.sqlite``."""

MAX_HITS: Final = 500
"""The most hits one page holds."""

_BATCH: Final = 256


class SearchIndex:
    """Full-text search over every session of one store (see the module doc).

    Use from one event loop; close it (or use ``async with``) when done. Several processes
    may index and search one store at once: each session's update is one transaction,
    checked against the state it was planned from.
    """

    def __init__(self, backend: Backend, backing: Backing) -> None:
        self._backend = backend
        self._backing = backing
        self._lock: asyncio.Lock | None = None

    @property
    def location(self) -> str:
        """Where the index lives (a file path, or the PostgreSQL schema)."""
        return self._backing.location

    def __repr__(self) -> str:
        return f"SearchIndex({self.location!r})"

    def _guard(self) -> asyncio.Lock:
        if self._lock is None:
            self._lock = asyncio.Lock()
        return self._lock

    async def catch_up(self) -> IndexReport:
        """Index what the store gained since the last catch-up; drop what it lost."""
        async with self._guard():
            return await self._catch_up()

    async def rebuild(self) -> IndexReport:
        """Throw the index away and build it again from the store."""
        async with self._guard():
            await self._backing.clear()
            return await self._catch_up()

    async def _catch_up(self) -> IndexReport:
        found = await probe(self._backend)
        states = await self._backing.states()
        gone = [sid for sid in states if sid not in found.tokens and sid not in found.problems]
        if gone:
            await self._backing.drop(gone)
        stale = [StaleSession(sid, problem) for sid, problem in sorted(found.problems.items())]
        updated = reset = events = rows = reclassified = 0
        for session_id, token in sorted(found.tokens.items()):
            state = states.get(session_id)
            for _attempt in range(3):
                if state is not None and state.token == token:
                    break
                try:
                    header, committed = await read_committed(self._backend, session_id)
                except HarnessError as error:  # a damaged log: reported, its old rows kept
                    stale.append(StaleSession(session_id, str(error)))
                    break
                if not committed:
                    break
                indexed = await self._backing.classes(session_id) if state is not None else b""
                plan = plan_session(state, indexed, header, committed, token)
                if await self._backing.apply(plan):
                    updated += 1
                    reset += plan.reset
                    events += plan.events
                    rows += len(plan.rows)
                    reclassified += len(plan.reclass)
                    break
                # another indexer moved this session meanwhile: plan again from its state
                state = (await self._backing.states()).get(session_id)
        return IndexReport(
            location=self.location,
            sessions=len(found.tokens) + len(found.problems),
            updated=updated,
            reset=reset,
            removed=len(gone),
            events=events,
            rows=rows,
            reclassified=reclassified,
            stale=tuple(stale),
        )

    async def forget(self, session_ids: Sequence[str]) -> None:
        """Remove these sessions and their rows now (a deleted session's text leaves the index
        at once; a catch-up would drop it too, but a search with ``catch_up=False`` would not)."""
        async with self._guard():
            await self._backing.drop(list(session_ids))

    async def states(self) -> dict[str, SessionState]:
        """What the index holds of each session (its cursor, token and digests)."""
        return await self._backing.states()

    async def search(
        self,
        text: str,
        *,
        filter: EventFilter | None = None,
        session: str | None = None,
        limit: int = 20,
        cursor: str | None = None,
        catch_up: bool = True,
    ) -> SearchPage:
        """The events of the store whose semantic text holds ``text``, best first.

        ``text`` is data, never syntax: it matches as the query layer's text filter
        matches (``TextNeedle``: literal, case-insensitive, whitespace-flexible). ``filter``
        narrows by seq, time, type, classification, turn and step (and more text);
        ``session`` keeps one session. ``limit`` is 1 to ``MAX_HITS``; ``cursor`` is a
        previous page's ``next_cursor`` for the same query. With ``catch_up`` (the
        default) the index is brought up to date first, so no answer is staler than the
        call. Bad arguments raise ``InvalidQuery``."""
        needle = TextNeedle(text)
        where = filter if filter is not None else EventFilter()
        if not isinstance(where, EventFilter):
            raise InvalidQuery(f"filter must be an EventFilter, got {type(where).__name__}")
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_HITS:
            raise InvalidQuery(f"limit must be an integer from 1 to {MAX_HITS}, got {limit!r}")
        if session is not None and (not isinstance(session, str) or not session):
            raise InvalidQuery(f"session must be a session id, got {session!r}")
        terms = tuple(query_terms(text))
        digest = query_digest(text, where.key(), session, bool(terms))
        after: Key | None = decode_cursor(cursor, digest) if cursor is not None else None
        stale: tuple[StaleSession, ...] = ()
        if catch_up:
            stale = (await self.catch_up()).stale
        narrowed = await self._backing.narrow(CandidateQuery(terms=terms, where=where, session=session))
        hits: list[SearchHit] = []
        next_cursor: str | None = None
        while next_cursor is None and narrowed is not None:
            batch = await self._backing.candidates(narrowed, after, _BATCH)
            for candidate in batch:
                after = candidate.key
                if not _admitted(candidate, needle, where):
                    continue
                if len(hits) == limit:  # one hit past the page: there is a next page
                    next_cursor = encode_cursor(_key(hits[-1]), digest)
                    break
                hits.append(_hit(candidate, needle))
            if len(batch) < _BATCH:
                break
        return SearchPage(hits=tuple(hits), next_cursor=next_cursor, ranked=bool(terms), stale=stale)

    async def close(self) -> None:
        """Close the index (the store is the caller's to close)."""
        await self._backing.close()

    async def __aenter__(self) -> SearchIndex:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


def _key(hit: SearchHit) -> Key:
    return (hit.score, hit.session_id, hit.seq)


def _admitted(candidate: Candidate, needle: TextNeedle, where: EventFilter) -> bool:
    if not needle.matches(candidate.text):
        return False
    return where.empty or where.admits(
        seq=candidate.seq,
        type=candidate.type,
        time=candidate.time,
        classification=candidate.classification,
        turn=candidate.turn,
        step=candidate.step,
        text=candidate.text,
    )


def _hit(candidate: Candidate, needle: TextNeedle) -> SearchHit:
    line, match = snippet(candidate.text, needle)
    return SearchHit(
        session_id=candidate.session_id,
        seq=candidate.seq,
        type=candidate.type,
        time=candidate.time,
        classification=candidate.classification,
        turn=candidate.turn,
        step=candidate.step,
        shadowed_by=candidate.shadowed_by,
        compaction_id=candidate.compaction_id,
        score=candidate.score,
        snippet=line,
        match=match,
    )


def sidecar_path(backend: Backend) -> str | None:
    """Where the sidecar index of ``backend`` lives, ``None`` for a database-held index."""
    if isinstance(backend, SessionFiles):
        return os.path.join(os.path.abspath(backend.root), INDEX_SIDECAR)
    if isinstance(backend, DatabaseFile):
        return str(backend.path) + INDEX_SIDECAR
    return None


def open_search_index(
    store: SessionStore | Backend, *, path: str | os.PathLike[str] | None = None
) -> SearchIndex:
    """The search index of ``store`` (a ``SessionStore`` or its backend), where the module
    doc says it lives; ``path`` puts a sidecar index elsewhere (not for PostgreSQL).
    Nothing is opened until first use."""
    backend = store.backend if isinstance(store, SessionStore) else store
    if isinstance(backend, SqlSchema):
        if path is not None:
            raise ValueError("a store in a database server keeps its index in its own schema: no path")
        from harness.search.pgindex import PostgresIndex

        return SearchIndex(backend, PostgresIndex(backend))
    from harness.search.sidecar import SidecarIndex

    where = path if path is not None else sidecar_path(backend)
    return SearchIndex(backend, SidecarIndex(where if where is not None else ":memory:"))


async def forget_deleted(store: SessionStore | Backend, session_id: str) -> bool:
    """Drop ``session_id`` from the store's index if the store has one (none is created).
    True when an index was there. ``harness delete`` calls it after ``SessionStore.delete``."""
    backend = store.backend if isinstance(store, SessionStore) else store
    if isinstance(backend, SqlSchema):
        schema = backend.schema

        async def exists(conn: Any) -> bool:
            query = "SELECT to_regclass(format('%%I.search_sessions', %s::text))"
            cursor = await conn.execute(query, (schema,))
            row = await cursor.fetchone()
            return row is not None and row[0] is not None

        if not await backend.run_sql(exists, "looking for the search index"):
            return False
    else:
        path = sidecar_path(backend)
        if path is None or not os.path.exists(path):
            return False
    index = open_search_index(backend)
    try:
        await index.forget([session_id])
    finally:
        await index.close()
    return True

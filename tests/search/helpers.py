"""Stores of every kind for the search tests, and the brute-force answer a search must equal."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator, Iterable
from pathlib import Path

from harness.events.event import Event
from harness.query import EventFilter, TextNeedle, event_text, filter_events, index_of
from harness.search import SearchHit, SearchIndex, SearchPage
from harness.session.session import Session
from harness.stores.backend import Backend
from harness.stores.memory import MemoryBackend
from harness.stores.store import SessionStore

KINDS = ("jsonl", "jsonl-zstd", "sqlite", "postgres", "memory")


def make_backend(kind: str, where: Path, schema: str | None = None) -> Backend:
    """A backend of ``kind`` under ``where`` (PostgreSQL: in ``schema`` on the test server)."""
    if kind == "jsonl":
        from harness.stores.jsonl.backend import JsonlBackend

        return JsonlBackend(where / "root", compression="none")
    if kind == "jsonl-zstd":
        from harness.stores.jsonl.backend import JsonlBackend

        return JsonlBackend(where / "root", compression="zstd")
    if kind == "sqlite":
        from harness.stores.sqlite import SqliteBackend

        return SqliteBackend(where / "sessions.db")
    if kind == "postgres":
        from harness.stores.postgres import PostgresBackend
        from tests.stores.pg import app_name, server_dsn

        assert schema is not None
        return PostgresBackend(server_dsn(), schema=schema, application_name=app_name(schema))
    assert kind == "memory"
    return MemoryBackend()


class Place:
    """Where one test's store lives: ``backend()`` opens a new backend on it (a memory store
    gives the same one back)."""

    def __init__(self, kind: str, where: Path) -> None:
        self.kind = kind
        self.where = where
        self.schema = f"t_{uuid.uuid4().hex[:12]}" if kind == "postgres" else None
        self._memory: Backend | None = None

    def backend(self) -> Backend:
        if self.kind == "memory":
            if self._memory is None:
                self._memory = MemoryBackend()
            return self._memory
        return make_backend(self.kind, self.where, self.schema)

    @contextlib.asynccontextmanager
    async def store(self) -> AsyncIterator[SessionStore]:
        store = SessionStore(self.backend())
        try:
            yield store
        finally:
            if self.kind != "memory":  # a memory backend serves the next store of the test too
                await store.close()

    def drop(self) -> None:
        if self.schema is None:
            return
        from tests.stores.pg import drop_schema, server_dsn

        drop_schema(server_dsn(), self.schema)


async def all_pages(
    index: SearchIndex, text: str, *, limit: int = 7, **options: object
) -> tuple[list[SearchHit], list[SearchPage]]:
    """Every hit of a search, page by page (each page checked to be in key order)."""
    hits: list[SearchHit] = []
    pages: list[SearchPage] = []
    cursor: str | None = None
    while True:
        page = await index.search(text, limit=limit, cursor=cursor, **options)  # type: ignore[arg-type]
        pages.append(page)
        keys = [(hit.score, hit.session_id, hit.seq) for hit in page.hits]
        assert keys == sorted(keys)
        if hits and page.hits:
            assert (hits[-1].score, hits[-1].session_id, hits[-1].seq) < keys[0]
        hits.extend(page.hits)
        if page.next_cursor is None:
            return hits, pages
        assert page.hits, "a page is never followed by an empty one"
        cursor = page.next_cursor


def brute(
    sessions: Iterable[Session | tuple[str, list[Event]]],
    text: str,
    where: EventFilter | None = None,
    session: str | None = None,
) -> dict[tuple[str, int], str]:
    """What a search must find, by the query layer alone: ``{(session, seq): classification}``
    of the events ``where`` keeps whose semantic text holds ``text``."""
    needle = TextNeedle(text)
    out: dict[tuple[str, int], str] = {}
    for item in sessions:
        sid, events = (item.id, list(item.events)) if isinstance(item, Session) else item
        if session is not None and sid != session:
            continue
        index = index_of(events)
        for record in filter_events(index, where):
            if needle.matches(event_text(record.event)):
                out[(sid, record.seq)] = record.classification
    return out


def found(hits: Iterable[SearchHit]) -> dict[tuple[str, int], str]:
    """``{(session, seq): classification}`` of ``hits`` (no hit twice)."""
    out: dict[tuple[str, int], str] = {}
    for hit in hits:
        assert (hit.session_id, hit.seq) not in out, f"hit twice: {hit.session_id} {hit.seq}"
        out[(hit.session_id, hit.seq)] = hit.classification
    return out


def committed(session: Session) -> tuple[str, list[Event]]:
    """The events of a live session a store holds (an end-seed and closers are not stored)."""
    return session.id, list(session.events)

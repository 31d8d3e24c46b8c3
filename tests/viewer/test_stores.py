"""The viewer over an SQLite file and a PostgreSQL schema: the same pages, nothing written, and
live updates through PostgreSQL's tail (LISTEN/NOTIFY) as through a polled file."""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

import harness
from harness.demos.engine import build_crash_fork, build_demo_session
from harness.stores.sqlite import SqliteBackend
from harness.stores.store import SessionStore
from harness.viewer import create_app
from tests.stores.pg import PgSchema, fresh_schema
from tests.viewer.helpers import live_messages
from tests.viewer.test_app import nodes_of, rows_of


async def _adopt(store: SessionStore, sessions: list[harness.Session]) -> None:
    try:
        for session in sessions:
            await store.adopt(session)
            await store.flush(session)
    finally:
        await store.close()


@contextmanager
def _client(open_store: Any, **options: Any) -> Iterator[TestClient]:
    with TestClient(create_app(open_store, **options), base_url="http://127.0.0.1:8765") as test_client:
        yield test_client


def _browse(c: TestClient) -> None:
    listing = c.get("/").text
    assert 'data-id="demo-session"' in listing and 'data-id="demo-session-crash"' in listing
    page = c.get("/session?id=demo-session-crash").text
    assert rows_of(page) and nodes_of(page)
    for url in (
        "/session?id=demo-session&seq=13",
        "/session/sections?id=demo-session-crash",
        "/session/request?id=demo-session&at=12",
        "/session/chart.svg?id=demo-session",
        "/session/export.jsonl?id=demo-session",
        "/api/summary?id=demo-session",
    ):
        assert c.get(url).status_code == 200, url


def test_the_viewer_over_an_sqlite_file_writes_nothing_to_it(tmp_path: Path) -> None:
    path = tmp_path / "sessions.db"
    demo = build_demo_session()
    asyncio.run(_adopt(SessionStore(SqliteBackend(path)), [demo, build_crash_fork(demo)]))
    before = hashlib.sha256(path.read_bytes()).hexdigest()

    async def open_store() -> SessionStore:
        return SessionStore(SqliteBackend(path))

    with _client(open_store) as c:
        _browse(c)
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before


@pytest.fixture
def pg() -> Iterator[PgSchema]:
    yield from fresh_schema()


def test_the_viewer_over_postgresql_follows_its_tail(pg: PgSchema) -> None:
    demo = build_demo_session()
    asyncio.run(_adopt(SessionStore(pg.backend()), [demo, build_crash_fork(demo)]))

    async def open_store() -> SessionStore:
        return SessionStore(pg.backend())

    def grow() -> None:
        time.sleep(0.5)

        async def append() -> None:
            store = SessionStore(pg.backend())
            session = await store.load("demo-session")
            session.append("turn/start", {"turn": 3})
            await store.flush(session)
            await store.close()

        asyncio.run(append())

    with _client(open_store, live_poll=60.0, live_limit=20.0) as c:  # a poll would come too late
        _browse(c)
        state = c.get("/api/summary?id=demo-session").json()
        assert state["openTurn"] is False
        length = len(demo) + 1  # the stored log plus the end-seed a load adds
        messages = live_messages(c, length, grow)
    assert messages[0][0] == "state" and messages[0][1]["open"] is False
    assert messages[-1][0] == "grown" and messages[-1][1]["open"] is True

"""The database backends' streamed read ends exactly where their exact read does.

``SqliteBackend.read`` streams pages of rows from a snapshot of its own connection, and
``PostgresBackend.read`` fetches the lines in pages of seqs; both hand the store their rows
for ``fastrestore`` (``WireStream.lines``; SQLite's keyed by their seq column), whose fast
checks fall back to ``read_exact`` at anything unusual. Here
generated sessions (turns with packed chunk runs, titles, messages, forks) restore to the
same events on JSONL, SQLite and PostgreSQL, streamed and exactly; and generated damage to
the stored rows (garbled, cut, re-sequenced, swapped, missing, extra rows, a newline inside
a line, a wrong recorded length, rows stored out of physical order) ends the same both ways:
the same events, or the same error with the same message.
"""

from __future__ import annotations

import asyncio
import itertools
import sqlite3
from collections.abc import Callable, Coroutine, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import harness.stores.postgres.backend as pg_backend
import harness.stores.sqlite_pages as sqlite_pages
from harness.errors import HarnessError
from harness.events.event import Event
from harness.events.json import loads
from harness.session.header import SessionHeader
from harness.stores.backend import StoredLog, StreamRejected
from harness.stores.jsonl import JsonlBackend
from harness.stores.sqlite import SqliteBackend
from harness.stores.store import SessionStore, restore_stored
from tests.stores.pg import PgSchema, fresh_schema, server_up
from tests.stores.test_jsonl_format import closed_turn, ev

Outcome = tuple[str, Any]
Rows = list[tuple[int, str]]
Make = Callable[[], Any]
"""Makes a backend (one with ``read_exact``)."""
_ids = itertools.count()


@pytest.fixture
def pg() -> Iterator[PgSchema | None]:
    if not server_up():
        yield None
        return
    yield from fresh_schema()


@pytest.fixture(autouse=True)
def small_pages(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pages of 3 rows, so that every log here spans several."""
    monkeypatch.setattr(sqlite_pages, "PAGE_ROWS", 3)
    monkeypatch.setattr(pg_backend, "READ_PAGE", 3)


def session_events(shape: list[tuple[int, bool]]) -> list[Event]:
    """A closed turn per ``(chunks, titled)``: ``chunks`` text deltas (a packed run), then a
    ``session/title`` event when ``titled``; a user message before the first turn."""
    message = {
        "id": "m-1",
        "role": "user",
        "source": {"kind": "user"},
        "content": [{"type": "text", "text": 'hé \U0001f600 \\ " \n'}],
    }
    events = [Event.create("user/message", 0, 1000, message, surface_op="append")]
    for turn, (chunks, titled) in enumerate(shape, 1):
        events.extend(closed_turn(len(events), turn=turn, chunks=chunks))
        if titled:
            events.append(ev("session/title", len(events), {"title": f"title {turn}"}))
    return events


SHAPES = st.lists(st.tuples(st.integers(0, 7), st.booleans()), min_size=1, max_size=4)


def outcome_of(action: Callable[[], Coroutine[Any, Any, list[Event]]]) -> Outcome:
    try:
        events = asyncio.run(action())
    except HarnessError as error:
        return type(error).__name__, str(error)
    return "ok", [loads(event.encode()) for event in events]


def both_ways(make: Make, session_id: str) -> tuple[Outcome, Outcome]:
    """(a store's inspect: the stream, falling back to the exact read; the exact read alone)."""

    async def streamed() -> list[Event]:
        store = SessionStore(make(), clock=lambda: 7)
        try:
            return list((await store.inspect(session_id)).events)
        finally:
            await store.close()

    async def exact() -> list[Event]:
        backend = make()
        try:
            log = await backend.read_exact(session_id)
        finally:
            await backend.close()
        return list(restore_stored(session_id, log, clock=lambda: 7)[0].events)

    return outcome_of(streamed), outcome_of(exact)


async def refuse_exact(session_id: str) -> StoredLog:
    raise AssertionError("a healthy log must restore from the stream alone")


LINES = {"jsonl", "sqlite", "postgres"}
"""The backends whose stream hands the store its lines (``fastrestore``), not wire objects."""


def streamed_alone(make: Make, session_id: str) -> Outcome:
    """Inspect with the exact read made to fail: the stream alone must do it."""

    async def go() -> list[Event]:
        backend = make()
        log = await backend.read(session_id)
        assert log.stream is not None
        assert (log.stream.lines is not None) == (type(backend).__name__[:-7].lower() in LINES)
        backend.read_exact = refuse_exact
        store = SessionStore(backend, clock=lambda: 7)
        try:
            return list((await store.inspect(session_id)).events)
        finally:
            await store.close()

    return outcome_of(go)


def database_makers(tmp_path: Path, pg: PgSchema | None) -> dict[str, Make]:
    makers: dict[str, Make] = {"sqlite": lambda: SqliteBackend(tmp_path / "sessions.db")}
    if pg is not None:
        makers["postgres"] = pg.backend
    return makers


def store_session(make: Make, header: SessionHeader, events: list[Event], batch: int = 8) -> None:
    async def go() -> None:
        backend = make()
        try:
            await backend.create(header)
            for start in range(0, len(events), batch):  # several batches, some runs cut across them
                await backend.append(header.id, events[start : start + batch])
        finally:
            await backend.close()

    asyncio.run(go())


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(shape=SHAPES)
def test_generated_sessions_and_their_forks_restore_alike_everywhere(
    tmp_path: Path, pg: PgSchema | None, shape: list[tuple[int, bool]]
) -> None:
    session_id = f"s{next(_ids)}"
    header = SessionHeader.new(id=session_id, cwd="/w", created_at=1_767_225_600_000)
    events = session_events(shape)
    makers = {"jsonl": lambda: JsonlBackend(tmp_path / "jsonl"), **database_makers(tmp_path, pg)}
    results = {}
    for name, make in makers.items():
        store_session(make, header, events)
        streamed, exact = both_ways(make, session_id)
        assert streamed == exact, name
        assert streamed_alone(make, session_id) == streamed, name
        results[name] = streamed

        async def fork(make: Make = make) -> str:
            store = SessionStore(make(), clock=lambda: 7)
            try:
                parent = await store.inspect(session_id)
                child = await store.adopt(parent.fork(id=f"{session_id}-fork"))
                child.append("session/title", {"title": "the fork"})
                await store.flush(child)
                return child.id
            finally:
                await store.close()

        child = asyncio.run(fork())
        streamed, exact = both_ways(make, child)
        assert streamed == exact and streamed[0] == "ok", name
        assert streamed_alone(make, child) == streamed, name
        results[f"{name} fork"] = streamed
    assert results["jsonl"][0] == "ok"
    assert len({str(value) for name, value in results.items() if "fork" not in name}) == 1
    assert len({str(value) for name, value in results.items() if "fork" in name}) == 1


# ---- damage -------------------------------------------------------------------------------------

GARBAGE = st.sampled_from(["", "{", "NaN", "[1]", "{}", '{"seq":0}', "null", " ", "\t{", "x" * 40])


@st.composite
def damages(draw: st.DrawFn) -> tuple[str, Any]:
    kind = draw(
        st.sampled_from(
            [
                "none",
                "garble",
                "cut",
                "newline",
                "reseq",
                "swap",
                "drop",
                "extra",
                "length",
                "json seq",
                "shuffle",
                "swap, stored in line order",
            ]
        )
    )
    return kind, draw(st.tuples(st.integers(0, 10**6), st.integers(0, 10**6), GARBAGE, st.integers(-2, 3)))


def damaged(rows: Rows, length: int, damage: tuple[str, Any]) -> tuple[Rows, int, bool]:
    """``rows`` (``(seq, line)`` in seq order) and ``length`` after ``damage``: the rows in the
    physical order to store them, and whether to store them in reverse order instead."""
    kind, (a, b, garbage, delta) = damage
    rows = list(rows)
    i, j = a % len(rows), b % len(rows)
    seq, line = rows[i]
    if kind == "garble":
        rows[i] = (seq, garbage)
    elif kind == "cut":
        rows[i] = (seq, line[: b % max(1, len(line))])
    elif kind == "newline":  # after the opening brace it is JSON whitespace; inside a string it is not
        at = 1 if b % 2 else line.index('"type":"') + 3
        rows[i] = (seq, line[:at] + "\n" + line[at:])
    elif kind == "reseq":
        taken = {s for s, _ in rows}
        rows[i] = (next(s for s in range(seq + delta, seq + delta + 10**6) if s not in taken), line)
    elif kind == "swap":
        rows[i], rows[j] = (seq, rows[j][1]), (rows[j][0], line)
    elif kind == "swap, stored in line order":  # the lines stored in seq order, their seq columns swapped
        rows[i], rows[j] = (rows[j][0], line), (seq, rows[j][1])
        return rows, length, False
    elif kind == "drop":
        del rows[i]
    elif kind == "extra":
        rows.append((rows[-1][0] + 1 + b % 3, line))
    elif kind == "length":
        length = max(0, length + delta)
    elif kind == "json seq":
        rows[i] = (seq, line.replace(f'"seq":{seq},', f'"seq":{seq + delta or 1},', 1))
    return sorted(rows), length, kind == "shuffle"


def rewrite_sqlite(db: Path, session_id: str, change: Callable[[Rows, int], tuple[Rows, int, bool]]) -> None:
    with sqlite3.connect(db, isolation_level=None) as conn:
        rows = conn.execute(
            "SELECT seq, line FROM events WHERE session_id = ? ORDER BY seq", (session_id,)
        ).fetchall()
        (length,) = conn.execute("SELECT length FROM sessions WHERE id = ?", (session_id,)).fetchone()
        new, new_length, reverse = change(rows, length)
        conn.execute("PRAGMA foreign_keys = OFF")
        conn.execute("DELETE FROM events WHERE session_id = ?", (session_id,))
        conn.executemany(
            "INSERT INTO events (session_id, seq, type, time, line) VALUES (?, ?, 'x', 0, ?)",
            [(session_id, seq, line) for seq, line in (reversed(new) if reverse else new)],
        )
        conn.execute("UPDATE sessions SET length = ? WHERE id = ?", (new_length, session_id))


def rewrite_postgres(
    pg: PgSchema, session_id: str, change: Callable[[Rows, int], tuple[Rows, int, bool]]
) -> None:
    with pg.connect() as conn:
        key, length = conn.execute("SELECT key, length FROM sessions WHERE id = %s", (session_id,)).fetchone()  # type: ignore[misc]
        rows: Rows = conn.execute(  # type: ignore[assignment]
            "SELECT seq, line FROM events WHERE session_key = %s ORDER BY seq", (key,)
        ).fetchall()
        new, new_length, reverse = change(rows, int(length))  # type: ignore[arg-type]
        conn.execute("DELETE FROM events WHERE session_key = %s", (key,))
        with conn.cursor() as cursor:
            cursor.executemany(
                "INSERT INTO events (session_key, seq, line) VALUES (%s, %s, %s)",
                [(key, seq, line) for seq, line in (reversed(new) if reverse else new)],
            )
        conn.execute("UPDATE sessions SET length = %s WHERE key = %s", (new_length, key))


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(shape=SHAPES, damage=damages())
def test_damaged_rows_end_as_the_exact_read_does(
    tmp_path: Path, pg: PgSchema | None, kind: str, shape: list[tuple[int, bool]], damage: tuple[str, Any]
) -> None:
    if kind == "postgres" and pg is None:
        pytest.skip("no PostgreSQL server")
    session_id = f"d{next(_ids)}"
    header = SessionHeader.new(id=session_id, cwd="/w", created_at=1_767_225_600_000)
    make = database_makers(tmp_path, pg)[kind]
    store_session(make, header, session_events(shape))

    def change(rows: Rows, length: int) -> tuple[Rows, int, bool]:
        return damaged(rows, length, damage)

    if kind == "sqlite":
        rewrite_sqlite(tmp_path / "sessions.db", session_id, change)
    else:
        assert pg is not None
        rewrite_postgres(pg, session_id, change)
    streamed, exact = both_ways(make, session_id)
    assert streamed == exact
    if damage[0] in ("none", "shuffle"):
        assert streamed[0] == "ok"
        assert streamed_alone(make, session_id) == streamed


def test_a_row_stored_at_another_seq_than_its_event_is_refused_as_the_exact_read_does(tmp_path: Path) -> None:
    """A packed row holds seqs 3-6; the next event's row is stored at seq 5 (a gap the JSON
    alone does not show): the stream checks each row's seq column, as the exact read does."""
    db = tmp_path / "sessions.db"
    header = SessionHeader.new(id="s", cwd="/w", created_at=1)
    store_session(lambda: SqliteBackend(db), header, session_events([(4, True)]), batch=100)
    with sqlite3.connect(db, isolation_level=None) as conn:
        stored = conn.execute("SELECT seq FROM events WHERE session_id = 's' ORDER BY seq").fetchall()
        assert [seq for (seq,) in stored] == [0, 1, 2, 3, 7, 8, 9]
        conn.execute("UPDATE events SET seq = 5 WHERE session_id = 's' AND seq = 7")
    streamed, exact = both_ways(lambda: SqliteBackend(db), "s")
    detail = "seq gap in committed region: expected seq 7, found 5"
    assert exact == ("CorruptSession", f"stored session 's' is corrupt: {detail} ({db})")
    assert streamed == exact


@pytest.mark.parametrize("change", ["appended", "deleted", "recreated", "replaced file"])
def test_a_sqlite_stream_refuses_a_session_changed_after_its_header_was_read(
    tmp_path: Path, change: str
) -> None:
    """The stream reads in a snapshot of its own: unless that shows the header and length
    ``read`` found, in the file the backend opened, it leaves the log to the exact read."""
    db = tmp_path / "sessions.db"
    header = SessionHeader.new(id="s", cwd="/w", created_at=1)
    events = session_events([(4, True), (0, False)])
    store_session(lambda: SqliteBackend(db), header, events)
    store_session(lambda: SqliteBackend(tmp_path / "other.db"), header, events)  # the same session

    async def go() -> None:
        backend = SqliteBackend(db)
        try:
            log = await backend.read("s")
            assert log.stream is not None
            if change == "appended":
                other = SqliteBackend(db)
                await other.append("s", [ev("session/title", len(events), {"title": "later"})])
                await other.close()
            elif change == "deleted":
                await backend.delete("s")
            elif change == "recreated":  # as many events, under another header
                await backend.delete("s")
                await backend.create(SessionHeader.new(id="s", cwd="/elsewhere", created_at=2))
                await backend.append("s", events)
            else:
                (tmp_path / "other.db").replace(db)
            with pytest.raises(StreamRejected):
                list(log.stream.events())
        finally:
            await backend.close()

    asyncio.run(go())

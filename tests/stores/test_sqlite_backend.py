"""``SqliteBackend``: the rows it writes, atomicity, racing writers, schema versions, corruption.

What every backend does (round trip, seq checks, ids, list, repair, two writers) is the store
contract, run here as ``TestSqliteContract``. Row-level tests write unpacked (one row per event);
packed chunk rows have their own tests.
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
import sqlite3
from collections import defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

import harness.stores.sqlite as sqlite_module
from harness.errors import (
    CorruptSession,
    PersistenceFailed,
    SessionConflict,
    SessionExists,
    StorageError,
    UnsupportedFormat,
)
from harness.events.event import Event
from harness.events.json import loads
from harness.stores.backend import Backend, StoredLog
from harness.stores.sqlite import APPLICATION_ID, SCHEMA_VERSION, SqliteBackend
from harness.stores.store import SessionStore
from harness.testing.contract import StoreContract
from harness.testing.samples import (
    check_listed_oldest_first,
    chunk,
    corruptions,
    full_header,
    header,
    run,
    sample_events,
    wire,
    write_samples,
)

T = TypeVar("T")


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "sessions.db"


@pytest.fixture
def backend(db: Path) -> Iterator[SqliteBackend]:
    store = SqliteBackend(db, pack_chunks=False)
    yield store
    run(store.close())


def raw(db: Path) -> sqlite3.Connection:
    return sqlite3.connect(db, isolation_level=None)


def rows(db: Path, session_id: str) -> list[tuple[int, str]]:
    with raw(db) as conn:
        return conn.execute(
            "SELECT seq, line FROM events WHERE session_id = ? ORDER BY seq", (session_id,)
        ).fetchall()


class TestSqliteContract(StoreContract):
    """The shared store contract, on one database file."""

    def make_backend(self, tmp_path: Path) -> Backend:
        return SqliteBackend(tmp_path / "sessions.db")

    def second_backend(self, tmp_path: Path, first: Backend) -> Backend:
        return SqliteBackend(tmp_path / "sessions.db")

    def corrupt_header(self, tmp_path: Path, backend: Backend, session_id: str) -> None:
        with raw(tmp_path / "sessions.db") as conn:
            conn.execute("UPDATE sessions SET header = '{not a header' WHERE id = ?", (session_id,))


# -- rows -------------------------------------------------------------------------------------------


def test_the_stored_line_is_the_wire_line(db: Path, backend: SqliteBackend) -> None:
    """The lossless round trip itself is in the store contract; here, the rows it leaves."""
    events = sample_events()
    log = run(write_samples(backend))
    assert log.torn is None
    assert log.location is None
    # the stored line is exactly the wire line the event encodes to
    assert [line.encode() for _, line in rows(db, "s1")] == [event.encode() for event in events]


def test_header_fields_are_stored_in_the_session_row(db: Path, backend: SqliteBackend) -> None:
    full = full_header()  # that it reads back is in the store contract
    run(backend.create(full))
    run(backend.append("child", [chunk(0)]))
    with raw(db) as conn:
        row = conn.execute(
            "SELECT version, created_at, cwd, parent_session, seed_length, origin, delegation_depth, "
            "agent_preset, header FROM sessions WHERE id = 'child'"
        ).fetchone()
    assert row[:8] == (0, 5, "/a", "parent", 3, "subagent", 2, "minimal")
    assert loads(row[8]) == {"type": "session", **full.to_json(line=True)}


def test_create_alone_and_an_empty_batch_write_no_row(db: Path, backend: SqliteBackend) -> None:
    run(backend.create(header()))
    run(backend.append("s1", []))
    with raw(db) as conn:
        assert conn.execute("SELECT count(*) FROM sessions").fetchone() == (0,)


# -- reappends and atomicity ------------------------------------------------------------------------


def test_reappending_stored_seqs_is_a_conflict(db: Path, backend: SqliteBackend) -> None:
    """No idempotent retries here (``PostgresBackend`` has them); the other seq checks are in the
    store contract."""

    async def go() -> None:
        await backend.create(header())
        await backend.append("s1", [chunk(0), chunk(1), chunk(2)])
        with pytest.raises(SessionConflict, match="expected 3 at index 0, got 1") as info:
            await backend.append("s1", [chunk(1), chunk(2), chunk(3)])  # re-append of stored seqs
        assert (info.value.expected, info.value.got) == (3, 1)
        assert await backend.stored_length("s1") == 3
        assert len((await backend.read_exact("s1")).events) == 3

    run(go())
    assert [seq for seq, _ in rows(db, "s1")] == [0, 1, 2]


def test_failing_batch_is_all_or_nothing(db: Path, backend: SqliteBackend) -> None:
    # A real SQLite failure in the middle of the batch: the insert of seq 3 aborts.
    async def go() -> None:
        await backend.create(header())
        await backend.append("s1", [chunk(0), chunk(1)])
        with raw(db) as conn:
            conn.execute(
                "CREATE TRIGGER fail_seq_3 BEFORE INSERT ON events WHEN NEW.seq = 3 "
                "BEGIN SELECT RAISE(ABORT, 'injected failure'); END"
            )
        with pytest.raises(PersistenceFailed, match="injected failure") as info:
            await backend.append("s1", [chunk(2), chunk(3), chunk(4)])
        assert isinstance(info.value.__cause__, sqlite3.Error)
        assert await backend.stored_length("s1") == 2
        assert [seq for seq, _ in rows(db, "s1")] == [0, 1]  # seq 2 was inserted, then rolled back
        with raw(db) as conn:
            conn.execute("DROP TRIGGER fail_seq_3")
        await backend.append("s1", [chunk(2), chunk(3), chunk(4)])  # the retry is contiguous
        assert [e["seq"] for e in (await backend.read_exact("s1")).events] == [0, 1, 2, 3, 4]

    run(go())


def test_failing_first_append_leaves_no_session(db: Path, backend: SqliteBackend) -> None:
    async def go() -> None:
        await backend.create(header())
        with raw(db) as conn:
            conn.execute(
                "CREATE TRIGGER fail_seq_1 BEFORE INSERT ON events WHEN NEW.seq = 1 "
                "BEGIN SELECT RAISE(ABORT, 'injected failure'); END"
            )
        with pytest.raises(PersistenceFailed):
            await backend.append("s1", [chunk(0), chunk(1)])
        with raw(db) as conn:
            assert conn.execute("SELECT count(*) FROM sessions").fetchone() == (0,)
            assert conn.execute("SELECT count(*) FROM events").fetchone() == (0,)
            conn.execute("DROP TRIGGER fail_seq_1")
        assert await backend.stored_length("s1") == 0  # still reserved
        await backend.append("s1", [chunk(0), chunk(1)])
        assert len((await backend.read_exact("s1")).events) == 2

    run(go())


# -- racing writers ---------------------------------------------------------------------------------

BATCH = 4


async def _race_writer(db: Path, writer: int, batches: int, create: bool) -> int:
    """Append ``batches`` batches tagged with ``writer``, retrying on conflicts; returns the conflicts."""
    store = SqliteBackend(db, pack_chunks=False)
    conflicts = 0
    try:
        if create:
            with contextlib.suppress(SessionExists):
                await store.create(header("race"))
        done = 0
        while done < batches:
            start = await store.stored_length("race")
            batch = [
                Event.create("plugin/race", start + i, 0, {"writer": writer, "batch": done, "i": i})
                for i in range(BATCH)
            ]
            try:
                await store.append("race", batch)
            except SessionConflict:
                conflicts += 1
                continue
            done += 1
    finally:
        await store.close()
    return conflicts


def _race_process(db: str, writer: int, batches: int) -> None:
    asyncio.run(_race_writer(Path(db), writer, batches, create=True))


def check_race_log(db: Path, writers: int, batches: int) -> None:
    events = run(_read(db, "race")).events
    assert [e["seq"] for e in events] == list(range(writers * batches * BATCH))
    seen: dict[tuple[int, int], list[int]] = defaultdict(list)
    for event in events:
        seen[(event["data"]["writer"], event["data"]["batch"])].append(event["seq"])
    assert set(seen) == {(w, b) for w in range(writers) for b in range(batches)}
    for seqs in seen.values():  # every batch whole, contiguous and in order: never interleaved
        assert seqs == list(range(seqs[0], seqs[0] + BATCH))
    for event in events:
        assert event["data"]["i"] == event["seq"] - seen[(event["data"]["writer"], event["data"]["batch"])][0]


async def _read(db: Path, session_id: str) -> StoredLog:
    store = SqliteBackend(db, pack_chunks=False)
    try:
        return await store.read_exact(session_id)
    finally:
        await store.close()


def test_two_backends_in_threads_never_interleave(db: Path) -> None:
    async def go() -> list[int]:
        first = SqliteBackend(db, pack_chunks=False)
        try:
            await first.create(header("race"))
            await first.append("race", [Event.create("plugin/race", 0, 0, {"writer": 9, "batch": 0, "i": 0})])
        finally:
            await first.close()
        return await asyncio.gather(*(_race_writer(db, w, 15, create=False) for w in range(2)))

    run(go())
    events = run(_read(db, "race")).events
    assert events[0]["data"]["writer"] == 9
    seen: dict[tuple[int, int], list[int]] = defaultdict(list)
    for event in events[1:]:
        seen[(event["data"]["writer"], event["data"]["batch"])].append(event["seq"])
    assert [e["seq"] for e in events] == list(range(1 + 2 * 15 * BATCH))
    assert set(seen) == {(w, b) for w in range(2) for b in range(15)}
    assert all(seqs == list(range(seqs[0], seqs[0] + BATCH)) for seqs in seen.values())


def test_two_processes_racing_on_a_fresh_file(db: Path) -> None:
    context = multiprocessing.get_context("spawn")
    batches = 15
    processes = [context.Process(target=_race_process, args=(str(db), w, batches)) for w in range(2)]
    for process in processes:
        process.start()
    for process in processes:
        process.join(60)
        assert process.exitcode == 0
    check_race_log(db, 2, batches)


# -- list -------------------------------------------------------------------------------------------


def test_list_is_oldest_first_and_names_the_database(db: Path, backend: SqliteBackend) -> None:
    """That ``list`` agrees with ``summarize`` is in the store contract; order and place are ours."""
    run(check_listed_oldest_first(backend, str(db)))


# -- corruption -------------------------------------------------------------------------------------


def _seeded(db: Path, count: int = 4) -> None:
    async def go() -> None:
        store = SqliteBackend(db, pack_chunks=False)
        try:
            await store.create(header())
            await store.append("s1", [chunk(seq) for seq in range(count)])
        finally:
            await store.close()

    run(go())


def _execute(db: Path, sql: str, *params: Any) -> None:
    with raw(db) as conn:
        conn.execute(sql, params)


CORRUPTIONS = corruptions(
    "?",
    ("DELETE FROM events WHERE seq = 1", (), "seq gap in committed region: expected seq 1, found 2"),
    ("DELETE FROM events WHERE seq = 3", (), "4 events recorded but 3 rows stored"),
)


@pytest.mark.parametrize(("sql", "params", "match"), CORRUPTIONS)
def test_corrupt_rows_are_refused(db: Path, sql: str, params: tuple[Any, ...], match: str) -> None:
    _seeded(db)
    _execute(db, "PRAGMA foreign_keys = OFF")
    _execute(db, sql, *params)
    with pytest.raises(CorruptSession, match=match) as info:
        run(_read(db, "s1"))
    assert "'s1'" in str(info.value)
    assert info.value.path == str(db)


@pytest.mark.parametrize(("sql", "params", "match"), CORRUPTIONS)
def test_a_streamed_restore_refuses_corrupt_rows_like_the_exact_read(
    db: Path, sql: str, params: tuple[Any, ...], match: str
) -> None:
    _seeded(db)
    _execute(db, "PRAGMA foreign_keys = OFF")
    _execute(db, sql, *params)

    async def go() -> None:
        store = SessionStore(SqliteBackend(db, pack_chunks=False))
        try:
            with pytest.raises(CorruptSession, match=match):
                await store.inspect("s1")
            with pytest.raises(CorruptSession, match=match):
                await store.load("s1")
        finally:
            await store.close()

    run(go())


@pytest.mark.parametrize(("version", "word"), [(1, "newer"), (42, "newer"), (-1, "older")])
def test_foreign_header_version_is_unsupported(db: Path, version: int, word: str) -> None:
    _seeded(db)
    _execute(db, "UPDATE sessions SET header = ?", f'{{"type":"session","version":{version},"id":"s1"}}')
    with pytest.raises(UnsupportedFormat, match=word):
        run(_read(db, "s1"))


def test_list_shows_an_unreadable_header_as_damaged(db: Path) -> None:
    _seeded(db)
    _execute(db, "UPDATE sessions SET header = '{'")

    async def go() -> list[Any]:
        store = SqliteBackend(db, pack_chunks=False)
        try:
            return await store.list()
        finally:
            await store.close()

    (damaged,) = run(go())  # listed with the reason, never dropped
    assert (damaged.id, damaged.event_count, damaged.cwd) == ("s1", 4, "/work/project")
    assert damaged.problem is not None and "not a JSON object" in damaged.problem


# -- schema versions --------------------------------------------------------------------------------


def _pragma(db: Path, name: str) -> int:
    with raw(db) as conn:
        value = conn.execute(f"PRAGMA {name}").fetchone()[0]
    assert isinstance(value, int)
    return value


def test_new_file_gets_identity_pragmas_and_mode(db: Path, backend: SqliteBackend) -> None:
    assert _pragma(db, "application_id") == APPLICATION_ID
    assert _pragma(db, "user_version") == SCHEMA_VERSION == 3
    with raw(db) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    assert db.stat().st_mode & 0o777 == 0o600
    pragmas = ("synchronous", "foreign_keys", "trusted_schema", "journal_mode")
    values = backend._worker.call(
        lambda: [backend._db.execute(f"PRAGMA {name}").fetchone()[0] for name in pragmas]
    )
    assert values == [2, 1, 0, "wal"]  # FULL, ON, OFF, WAL


def test_newer_schema_version_is_refused_untouched(db: Path) -> None:
    _seeded(db)
    _execute(db, f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    before = db.read_bytes()
    with pytest.raises(UnsupportedFormat, match="newer"):
        SqliteBackend(db, pack_chunks=False)
    assert db.read_bytes() == before


@pytest.mark.parametrize(
    ("setup", "match"),
    [
        ([f"PRAGMA application_id = {0x44534850}"], "dsh"),
        (["PRAGMA application_id = 7", "CREATE TABLE t(x)"], "not a harness session database"),
        (["CREATE TABLE t(x)"], "not a harness session database"),
        (["PRAGMA user_version = 1"], "not a harness session database"),
    ],
)
def test_foreign_databases_are_refused(db: Path, setup: list[str], match: str) -> None:
    with raw(db) as conn:
        for statement in setup:
            conn.execute(statement)
    with pytest.raises(UnsupportedFormat, match=match):
        SqliteBackend(db, pack_chunks=False)


def test_a_file_that_is_not_sqlite_is_refused_untouched(db: Path) -> None:
    content = b'{"type":"session","version":0}\n' * 200
    db.write_bytes(content)
    with pytest.raises(UnsupportedFormat, match="not an SQLite database"):
        SqliteBackend(db, pack_chunks=False)
    assert db.read_bytes() == content


def test_older_schema_is_migrated_in_order(db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _seeded(db, count=2)
    calls: list[int] = []

    def newer(conn: sqlite3.Connection) -> None:
        calls.append(2)
        conn.execute("ALTER TABLE sessions ADD COLUMN note TEXT")

    def newest(conn: sqlite3.Connection) -> None:
        calls.append(3)
        conn.execute("UPDATE sessions SET note = 'migrated'")

    migrations: list[Callable[[sqlite3.Connection], None]] = [*sqlite_module._MIGRATIONS, newer, newest]
    monkeypatch.setattr(sqlite_module, "_MIGRATIONS", migrations)
    log = run(_read(db, "s1"))
    assert calls == [2, 3]
    assert _pragma(db, "user_version") == SCHEMA_VERSION + 2
    assert len(log.events) == 2
    with raw(db) as conn:
        assert conn.execute("SELECT note FROM sessions").fetchone() == ("migrated",)
    run(_read(db, "s1"))  # already current: nothing runs again
    assert calls == [2, 3]


def test_a_version_1_file_is_migrated_to_a_rowid_events_table_with_every_row(
    db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with monkeypatch.context() as patch:
        patch.setattr(sqlite_module, "_MIGRATIONS", sqlite_module._MIGRATIONS[:1])
        _seeded(db, count=5)
        assert _pragma(db, "user_version") == 1
        with raw(db) as conn:
            (old,) = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'events'").fetchone()
            before = conn.execute("SELECT * FROM events ORDER BY session_id, seq").fetchall()
        assert "WITHOUT ROWID" in old
    log = run(_read(db, "s1"))
    assert _pragma(db, "user_version") == SCHEMA_VERSION == 3
    assert [event["seq"] for event in log.events] == [0, 1, 2, 3, 4]
    with raw(db) as conn:
        (new,) = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'events'").fetchone()
        assert conn.execute("SELECT * FROM events ORDER BY session_id, seq").fetchall() == before
    assert "WITHOUT ROWID" not in new and "PRIMARY KEY (session_id, seq)" in new


def test_failed_migration_rolls_back(db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _seeded(db, count=1)

    def broken(conn: sqlite3.Connection) -> None:
        conn.execute("ALTER TABLE sessions ADD COLUMN note TEXT")
        conn.execute("SELECT * FROM no_such_table")

    monkeypatch.setattr(sqlite_module, "_MIGRATIONS", [*sqlite_module._MIGRATIONS, broken])
    with pytest.raises(PersistenceFailed):
        SqliteBackend(db, pack_chunks=False)
    assert _pragma(db, "user_version") == SCHEMA_VERSION
    with raw(db) as conn:
        assert "note" not in [column[1] for column in conn.execute("PRAGMA table_info(sessions)")]


# -- lifecycle --------------------------------------------------------------------------------------


def test_closed_backend_refuses_calls(db: Path) -> None:
    async def go() -> None:
        store = SqliteBackend(db, pack_chunks=False)
        await store.close()
        await store.close()  # idempotent
        with pytest.raises(StorageError):
            await store.list()
        with pytest.raises(StorageError):
            await store.append("s1", [chunk(0)])

    run(go())


# -- packed chunk rows ------------------------------------------------------------------------------


def _chunky_batch() -> list[Event]:
    events = [chunk(seq, f"w{seq} ") for seq in range(8)]
    events.append(Event.create("session/title", 8, 1008, {"title": "between runs"}))
    for seq in range(9, 13):
        data = {
            "turn": 1,
            "step": 1,
            "chunk": {"type": "tool-call-delta", "index": 1, "id": "c1", "argumentsDelta": f"{{{seq}"},
        }
        events.append(Event.create("assistant/chunk", seq, 1000 + seq, data))
    events.append(chunk(13, "tail"))
    return events


def test_runs_of_chunks_are_stored_as_packed_rows_and_read_back_exactly(db: Path) -> None:
    batch = _chunky_batch()

    async def go() -> tuple[StoredLog, list[str]]:
        store = SqliteBackend(db)
        try:
            await store.create(header())
            await store.append("s1", batch[:13])
            await store.append("s1", batch[13:])  # a lone chunk: runs never span two batches
            exact = await store.read_exact("s1")
            assert await store.stored_length("s1") == len(batch)
        finally:
            await store.close()
        session = SessionStore(SqliteBackend(db))
        try:
            restored = await session.inspect("s1")
        finally:
            await session.close()
        return exact, [event.type for event in restored.events]

    exact, restored_types = run(go())
    assert exact.events == wire(batch)
    assert restored_types[: len(batch)] == [event.type for event in batch]
    stored = rows(db, "s1")
    kinds = [loads(line)["type"] for _, line in stored]
    assert kinds == ["text-chunks", "session/title", "tool-call-chunks", "assistant/chunk"]
    assert [seq for seq, _ in stored] == [0, 8, 9, 13]


def test_a_damaged_packed_row_is_corruption_both_ways(db: Path) -> None:
    async def write() -> None:
        store = SqliteBackend(db)
        try:
            await store.create(header())
            await store.append("s1", [chunk(seq) for seq in range(6)])
        finally:
            await store.close()

    run(write())
    _execute(db, "UPDATE events SET line = replace(line, '\"dt\":[', '\"dt\":[1,') WHERE seq = 0")

    async def read() -> None:
        store = SessionStore(SqliteBackend(db))
        try:
            with pytest.raises(CorruptSession, match="unparsable committed event at seq 0"):
                await store.inspect("s1")
        finally:
            await store.close()
        with pytest.raises(CorruptSession, match="unparsable committed event at seq 0"):
            await SqliteBackend(db).read_exact("s1")

    run(read())


def test_a_packed_row_holds_at_most_the_member_and_size_caps() -> None:
    from harness.events.packed import expand_row, pack_records

    events = [chunk(seq, "x" * 10) for seq in range(2500)]
    records = pack_records(events, max_members=1024)
    assert [len(expand_row(loads(line))) for _, _, _, line in records] == [1024, 1024, 452]
    assert [seq for seq, _, _, _ in records] == [0, 1024, 2048]
    by_size = pack_records(events, max_bytes=1000)  # 100 pieces of 10 characters per row
    assert all(len(expand_row(loads(line))) == 100 for _, _, _, line in by_size)
    expanded = [event for _, _, _, line in by_size for event in expand_row(loads(line))]
    assert expanded == wire(events)

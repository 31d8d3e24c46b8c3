"""``DshSqliteBackend``: the file it makes, the files it refuses, revisions, the tail check, the
torn-final-row repair and committed corruption, rule by rule (each with what it refuses)."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from harness.errors import CorruptSession, SessionConflict, SessionNotFound, UnsafeStorage, UnsupportedFormat
from harness.events.event import Event
from harness.session.header import SessionHeader
from harness.stores.backend import StoredLog, TornTail
from harness.stores.dsh_sqlite import DshSqliteBackend, open_sqlite_backend, sqlite_layout
from harness.stores.dsh_sqlite.schema import SCHEMA_SQL, UUID_RE
from harness.stores.sqlite import SqliteBackend
from harness.stores.store import SessionStore
from harness.testing.contract import one_turn
from harness.testing.samples import chunk, header, run

DSHP = 0x44534850


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "sessions.sqlite"


def raw(db: Path) -> sqlite3.Connection:
    return sqlite3.connect(db, isolation_level=None)


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def rows(db: Path) -> list[tuple[Any, ...]]:
    with raw(db) as conn:
        return conn.execute(
            "SELECT seq, type, typeof(data), source_event_seqs, surface_op, ignorable "
            "FROM events ORDER BY seq"
        ).fetchall()


def revision(db: Path, session_id: str = "s1") -> int:
    with raw(db) as conn:
        return int(conn.execute("SELECT revision FROM sessions WHERE id = ?", (session_id,)).fetchone()[0])


async def _write(db: Path, batches: list[list[Event]], head: SessionHeader | None = None) -> None:
    backend = DshSqliteBackend(db)
    try:
        await backend.create(head or header())
        for batch in batches:
            await backend.append("s1", batch)
    finally:
        await backend.close()


def write(db: Path, *batches: list[Event]) -> None:
    run(_write(db, list(batches)))


def read(db: Path) -> StoredLog:
    async def go() -> StoredLog:
        backend = DshSqliteBackend(db)
        try:
            return await backend.read("s1")
        finally:
            await backend.close()

    return run(go())


def turn(seq: int, number: int = 1) -> list[Event]:
    """A closed turn of three events starting at ``seq``."""
    return [
        Event.create("turn/start", seq, 10, {"turn": number}),
        Event.create("session/title", seq + 1, 11, {"title": f"t{number}"}),
        Event.create("turn/end", seq + 2, 12, {"turn": number, "reason": {"kind": "completed"}}),
    ]


# ---- the file ------------------------------------------------------------------------------


def test_a_new_file_is_schema_17_of_dsh_private_and_in_wal(db: Path) -> None:
    write(db, [chunk(0)])
    assert db.stat().st_mode & 0o777 == 0o600
    with raw(db) as conn:
        assert conn.execute("PRAGMA application_id").fetchone()[0] == DSHP
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 17
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        (store_id,) = conn.execute("SELECT store_id FROM persistence_state WHERE singleton = 1").fetchone()
        assert UUID_RE.match(store_id)
        tables = {n: s for n, s in conn.execute("SELECT name, sql FROM sqlite_schema WHERE type = 'table'")}
        assert sorted(tables) == ["events", "persistence_state", "sessions"]
        assert all(sql in SCHEMA_SQL for sql in tables.values())  # dsh's CREATE texts, verbatim
        session = conn.execute(
            "SELECT version, delegation_depth, incarnation, revision FROM sessions"
        ).fetchone()
    assert session[:2] == (0, 0) and UUID_RE.match(session[2]) and session[3] == 1
    assert sqlite_layout(db) == "dsh"


def test_a_new_folder_is_made_private(tmp_path: Path) -> None:
    path = tmp_path / "a" / "b" / "sessions.sqlite"
    run(DshSqliteBackend(path).close())
    assert path.parent.stat().st_mode & 0o777 == 0o700


def _prepare(db: Path, statements: list[str]) -> None:
    with raw(db) as conn:
        for statement in statements:
            conn.execute(statement)
    os.chmod(db, 0o600)


def _dsh_file(db: Path) -> None:
    run(DshSqliteBackend(db, journal_mode="delete").close())


@pytest.mark.parametrize(
    ("setup", "match"),
    [
        (["CREATE TABLE t(x)"], "unversioned schema"),
        ([f"PRAGMA application_id = {DSHP}"], "unversioned schema"),
        ([f"PRAGMA application_id = {DSHP}", "PRAGMA user_version = 16"], "schema version 16"),
        (["PRAGMA user_version = 17"], "application id 0, expected"),
        ([f"PRAGMA application_id = {0x68726E73}", "PRAGMA user_version = 3"], "schema version 3"),
    ],
)
def test_other_schemas_and_foreign_application_ids_are_refused_untouched(
    db: Path, setup: list[str], match: str
) -> None:
    _prepare(db, setup)
    before = digest(db)
    with pytest.raises(UnsupportedFormat, match=match):
        DshSqliteBackend(db)
    assert digest(db) == before


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ("ALTER TABLE events ADD COLUMN extra TEXT", "required schema objects"),
        ("CREATE INDEX extra ON events(type)", "required schema objects"),
        ("DROP TABLE persistence_state", "required schema objects"),
        ("DELETE FROM persistence_state", "no valid store identity"),
        ("UPDATE persistence_state SET store_id = 'not-a-uuid'", "no valid store identity"),
    ],
)
def test_a_dsh_file_whose_schema_or_identity_differs_is_refused(db: Path, change: str, match: str) -> None:
    _dsh_file(db)
    _prepare(db, [change])
    before = digest(db)
    with pytest.raises(UnsupportedFormat, match=match):
        DshSqliteBackend(db, journal_mode="delete")
    assert digest(db) == before


def test_a_file_that_is_not_sqlite_is_refused(db: Path) -> None:
    db.write_bytes(b'{"type":"session"}\n' * 300)
    os.chmod(db, 0o600)
    with pytest.raises(UnsupportedFormat, match="not an SQLite database"):
        DshSqliteBackend(db)
    assert sqlite_layout(db) is None


def test_harness_own_backend_refuses_a_dsh_file_and_points_here(db: Path) -> None:
    _dsh_file(db)
    with pytest.raises(UnsupportedFormat, match="DshSqliteBackend"):
        SqliteBackend(db)


# ---- permissions and links -------------------------------------------------------------------


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604, 0o610])
def test_a_file_others_may_reach_is_refused(db: Path, mode: int) -> None:
    _dsh_file(db)
    os.chmod(db, mode)
    with pytest.raises(UnsafeStorage, match="accessible only by that user"):
        DshSqliteBackend(db)
    os.chmod(db, 0o600)
    run(DshSqliteBackend(db).close())


@pytest.mark.parametrize("mode", [0o777, 0o770, 0o702])
def test_a_folder_others_may_write_is_refused(tmp_path: Path, mode: int) -> None:
    folder = tmp_path / "shared"
    folder.mkdir()
    os.chmod(folder, mode)
    with pytest.raises(UnsafeStorage, match="not group/world-writable"):
        DshSqliteBackend(folder / "sessions.sqlite")
    assert not (folder / "sessions.sqlite").exists()
    os.chmod(folder, 0o750)
    run(DshSqliteBackend(folder / "sessions.sqlite").close())


def test_files_and_folders_of_another_user_are_refused(db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _dsh_file(db)
    monkeypatch.setattr(os, "getuid", lambda: db.stat().st_uid + 1)
    with pytest.raises(UnsafeStorage, match="owned by the current user"):
        DshSqliteBackend(db)


def test_symbolic_links_and_other_kinds_of_file_are_refused(tmp_path: Path) -> None:
    real = tmp_path / "real.sqlite"
    _dsh_file(real)
    link = tmp_path / "link.sqlite"
    link.symlink_to(real)
    with pytest.raises(UnsafeStorage, match="not a symbolic link"):
        DshSqliteBackend(link)
    dangling = tmp_path / "dangling.sqlite"
    dangling.symlink_to(tmp_path / "nowhere.sqlite")
    with pytest.raises(UnsafeStorage, match="not a symbolic link"):
        DshSqliteBackend(dangling)
    assert not (tmp_path / "nowhere.sqlite").exists()
    folder_link = tmp_path / "folder-link"
    folder_link.symlink_to(tmp_path)
    with pytest.raises(UnsafeStorage, match="real directory"):
        DshSqliteBackend(folder_link / "real.sqlite")
    (tmp_path / "dir.sqlite").mkdir(mode=0o700)
    with pytest.raises(UnsafeStorage, match="regular file"):
        DshSqliteBackend(tmp_path / "dir.sqlite")


# ---- rows, revisions, the tail check --------------------------------------------------------


def test_each_append_is_one_revision_and_packs_only_its_own_batch(db: Path) -> None:
    write(db, [chunk(0), chunk(1)], [chunk(2), chunk(3), chunk(4)])
    assert revision(db) == 2
    assert [(seq, kind, ignorable) for seq, kind, _, _, _, ignorable in rows(db)] == [
        (0, "assistant/chunk", None),
        (1, "assistant/chunk", None),
        (2, "text-chunks", 0),
    ]

    async def token() -> str:
        backend = DshSqliteBackend(db)
        try:
            first = await backend.revision("s1")
            await backend.append("s1", [chunk(5)])
            second = await backend.revision("s1")
            assert first.rsplit(":", 1) == [second.rsplit(":", 1)[0], "2"]
            assert second.endswith(":revision:3") and ":store:" in second and ":incarnation:" in second
            return second
        finally:
            await backend.close()

    run(token())


def test_provenance_and_surface_ops_are_stored_as_dsh_stores_them(db: Path) -> None:
    async def go() -> None:
        store = SessionStore(DshSqliteBackend(db))
        session = await store.create(id="s1")
        one_turn(session)
        await store.close()

    run(go())
    found = {kind: (seqs, op) for _, kind, _, seqs, op, _ in rows(db)}
    assert found["tool/result"] == (b"\x04", '"append"')  # cites tool/call seq 4
    assert found["user/message"] == (None, '"append"')
    assert found["turn/start"] == (None, None)


def test_an_append_onto_a_torn_tail_is_refused_until_a_load_cuts_it(db: Path) -> None:
    write(db, [*turn(0), chunk(3)])
    with raw(db) as conn:
        conn.execute("UPDATE events SET data = '{torn' WHERE seq = 3")

    async def go() -> None:
        backend = DshSqliteBackend(db)
        try:
            with pytest.raises(CorruptSession, match="invalid physical tail at seq 3"):
                await backend.append("s1", [chunk(3)])
            assert await backend.stored_length("s1") == 3
        finally:
            await backend.close()

    run(go())


# ---- torn final row, committed corruption ----------------------------------------------------


@pytest.mark.parametrize(
    "damage",
    [
        "UPDATE events SET data = '{\"turn\":' WHERE seq = 4",  # a final row cut short
        "UPDATE events SET data = x'28b52ffd00' WHERE seq = 4",  # a zstd frame cut short
        "UPDATE events SET source_event_seqs = x'80' WHERE seq = 4",
        "UPDATE events SET seq = 9 WHERE seq = 4",  # a gap after the last turn end
    ],
)
def test_a_torn_final_row_is_reported_and_a_load_cuts_it(db: Path, damage: str) -> None:
    write(db, turn(0), [Event.create("turn/start", 3, 20, {"turn": 2}), chunk(4)])
    with raw(db) as conn:
        conn.execute(damage)
    log = read(db)
    assert [e["seq"] for e in log.events] == [0, 1, 2, 3]
    assert log.torn is not None and log.torn.committed_offset in (4, 9)
    before = revision(db)

    async def load() -> None:
        store = SessionStore(DshSqliteBackend(db))
        session = await store.load("s1")
        types = [e.type for e in session.events][3:]
        assert types == ["turn/start", "turn/end", "harness/repair", "session/end-seed"]
        await store.close()

    run(load())
    # the torn row is gone; the closer, the repair's record and the end-seed follow
    assert [seq for seq, *_ in rows(db)] == [0, 1, 2, 3, 4, 5, 6]
    assert revision(db) == before + 2  # the repair, then the end-seed's append
    assert read(db).torn is None


@pytest.mark.parametrize(
    "damage",
    [
        "UPDATE events SET data = '{torn' WHERE seq = 1",
        "UPDATE events SET seq = 7 WHERE seq = 1",
        "UPDATE events SET ignorable = 0 WHERE seq = 1",  # a scalar row marked packed
    ],
)
def test_a_bad_row_before_a_finished_turn_is_committed_corruption(db: Path, damage: str) -> None:
    write(db, turn(0), [chunk(3)])
    with raw(db) as conn:
        conn.execute(damage)
    before = digest(db)
    with pytest.raises(CorruptSession, match="invalid committed physical row at seq"):
        read(db)

    async def listed() -> None:
        backend = DshSqliteBackend(db, journal_mode="wal")
        try:
            (info,) = await backend.list()  # listed from its tail (dsh lists rows): never dropped
            assert info.id == "s1"
            assert info.problem is None or "invalid committed physical row" in info.problem
        finally:
            await backend.close()

    run(listed())
    assert digest(db) == before


@pytest.mark.parametrize(
    ("damage", "match"),
    [
        ("UPDATE events SET data = 7 WHERE seq = 4", "data must be a string or blob"),
        ("UPDATE events SET source_event_seqs = 'text' WHERE seq = 4", "must be a blob or null"),
        ("UPDATE events SET type = '' WHERE seq = 4", "type must not be empty"),
        ("UPDATE events SET time = 9007199254740993 WHERE seq = 4", "time must be a safe integer"),
        ("UPDATE events SET data = '1e400' WHERE seq = 4", "JSON harness cannot read"),
    ],
)
def test_a_row_whose_columns_break_the_schema_is_corruption_even_at_the_tail(
    db: Path, damage: str, match: str
) -> None:
    write(db, [*turn(0), Event.create("turn/start", 3, 20, {"turn": 2}), chunk(4)])
    with raw(db) as conn:
        conn.execute(damage)
    with pytest.raises(CorruptSession, match=match):
        read(db)


def test_a_stale_repair_is_refused_and_writes_nothing(db: Path) -> None:
    write(db, turn(0), [chunk(3), chunk(4)])
    with raw(db) as conn:
        conn.execute("UPDATE events SET data = '{torn' WHERE seq = 4")

    async def go() -> None:
        backend = DshSqliteBackend(db)
        try:
            log = await backend.read("s1")
            assert log.torn == TornTail(4, log.torn.detail if log.torn else "")
            stale = StoredLog(log.header, log.events, torn=TornTail(3, "elsewhere"))
            with pytest.raises(SessionConflict, match="repair is stale"):
                await backend.repair("s1", stale, [])
            untold = StoredLog(log.header, log.events)
            with pytest.raises(SessionConflict, match="omitted the current torn tail"):
                await backend.repair("s1", untold, [Event.create("turn/end", 4, 5, {"turn": 1})])
            assert len(rows(db)) == 5
            await backend.repair("s1", log, [])
            assert [seq for seq, *_ in rows(db)] == [0, 1, 2, 3]
            with pytest.raises(SessionConflict):  # closers must continue the log
                await backend.repair("s1", await backend.read("s1"), [Event.create("turn/end", 9, 5, {})])
        finally:
            await backend.close()

    run(go())


# ---- session rows ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("damage", "match"),
    [
        ("UPDATE sessions SET cwd = 'relative'", "cwd must be absolute"),
        ("UPDATE sessions SET origin = 'parent'", "origin"),
        ("UPDATE sessions SET incarnation = 'nope'", "incarnation must be a UUID"),
        ("UPDATE sessions SET revision = -1", "revision"),
        ("UPDATE sessions SET created_at = -5", "created_at"),
    ],
)
def test_a_damaged_session_row_is_corruption_and_is_listed_with_it(db: Path, damage: str, match: str) -> None:
    write(db, turn(0))
    with raw(db) as conn:
        conn.execute(damage)
    with pytest.raises(CorruptSession, match=f"invalid session header.*{match}"):
        read(db)


def test_a_session_of_another_format_version_is_unsupported(db: Path) -> None:
    write(db, turn(0))
    with raw(db) as conn:
        conn.execute("UPDATE sessions SET version = 1")
    with pytest.raises(UnsupportedFormat, match="format version 1"):
        read(db)


def test_a_session_row_without_a_depth_reads_without_one(db: Path) -> None:
    write(db, turn(0))
    with raw(db) as conn:
        conn.execute("UPDATE sessions SET delegation_depth = NULL")
    assert read(db).header.delegation_depth is None


# ---- reading leaves the file as it was ---------------------------------------------------------


def test_reading_a_rollback_journal_file_changes_nothing(db: Path) -> None:
    _dsh_file(db)
    run(_write_delete(db))
    before = digest(db)
    backend = open_sqlite_backend(db)
    assert isinstance(backend, DshSqliteBackend)

    async def go() -> None:
        try:
            await SessionStore(backend).inspect("s1")
            await backend.list()
        finally:
            await backend.close()

    run(go())
    assert digest(db) == before
    assert sorted(p.name for p in db.parent.iterdir()) == [db.name]


async def _write_delete(db: Path) -> None:
    backend = DshSqliteBackend(db, journal_mode="delete")
    try:
        await backend.create(header())
        await backend.append("s1", turn(0))
    finally:
        await backend.close()


def test_the_layout_is_told_by_the_application_id(tmp_path: Path) -> None:
    ours = tmp_path / "ours.db"
    run(SqliteBackend(ours).close())
    theirs = tmp_path / "theirs.sqlite"
    _dsh_file(theirs)
    assert (sqlite_layout(ours), sqlite_layout(theirs), sqlite_layout(tmp_path / "none")) == (
        "harness",
        "dsh",
        None,
    )
    opened = [
        open_sqlite_backend(ours),
        open_sqlite_backend(theirs),
        open_sqlite_backend(tmp_path / "new.sqlite", layout="dsh"),
    ]
    assert [type(b).__name__ for b in opened] == ["SqliteBackend", "DshSqliteBackend", "DshSqliteBackend"]
    for backend in opened:
        run(backend.close())
    assert sqlite_layout(tmp_path / "new.sqlite") == "dsh"


def test_json_column_text_is_compact(db: Path) -> None:
    write(db, turn(0))
    with raw(db) as conn:
        (data,) = conn.execute("SELECT data FROM events WHERE seq = 2").fetchone()
    assert data == json.dumps({"turn": 1, "reason": {"kind": "completed"}}, separators=(",", ":"))


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ("PRAGMA application_id = 7", "application id changed before mutation"),
        ("PRAGMA user_version = 18", "schema changed before mutation"),
        ("CREATE INDEX sneaky ON events(type)", "required schema objects"),
    ],
)
def test_an_append_checks_the_identity_again_under_the_write_lock(db: Path, change: str, match: str) -> None:
    """Another program may change the file after it was opened: each write transaction checks
    the application id, the schema objects and the version again before writing."""

    async def go() -> None:
        backend = DshSqliteBackend(db)
        try:
            await backend.create(header())
            await backend.append("s1", [chunk(0)])
            with raw(db) as conn:
                conn.execute(change)
            with pytest.raises(UnsupportedFormat, match=match):
                await backend.append("s1", [chunk(1)])
            assert len(rows(db)) == 1 and revision(db) == 1
        finally:
            await backend.close()

    run(go())


def test_delete_removes_the_rows_and_the_reservation_and_refuses_the_unknown(db: Path) -> None:
    async def go() -> None:
        backend = DshSqliteBackend(db)
        try:
            await backend.create(header("kept"))
            await backend.append("kept", turn(0))
            await backend.create(header())
            await backend.append("s1", [chunk(0), chunk(1), chunk(2)])
            await backend.delete("s1")
            with pytest.raises(SessionNotFound):
                await backend.stored_length("s1")
            with pytest.raises(SessionNotFound):
                await backend.delete("s1")
            await backend.create(header("reserved"))
            await backend.delete("reserved")  # a reservation only
            with pytest.raises(SessionNotFound):
                await backend.append("reserved", [chunk(0)])
            assert [info.id for info in await backend.list()] == ["kept"]
            await backend.create(header())  # the id is free again
            await backend.append("s1", [chunk(0)])
            assert await backend.stored_length("s1") == 1
        finally:
            await backend.close()

    run(go())
    with raw(db) as conn:
        assert conn.execute("SELECT session_id, count(*) FROM events GROUP BY 1 ORDER BY 1").fetchall() == [
            ("kept", 3),
            ("s1", 1),
        ]

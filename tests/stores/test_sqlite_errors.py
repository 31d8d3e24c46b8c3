"""The one SQLite error translator (``harness.stores.sqlite_errors``): each kind of sqlite3
error, provoked for real (no mocks), mapped to the harness error of each situation; the
transaction helpers built on it; and the backends' errors through it.

A disk I/O error and a full disk injected below SQLite by the fault shim are in
``tests/stores/faults/test_sqlite_error_kinds.py``."""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from harness.errors import (
    OutcomeUnknown,
    PersistenceFailed,
    SearchIndexCorrupt,
    SearchIndexError,
    StorageError,
    UnsupportedFormat,
)
from harness.stores.backend import Backend, StreamRejected, read_whole
from harness.stores.dsh_sqlite import DshSqliteBackend
from harness.stores.sqlite import SqliteBackend
from harness.stores.sqlite_errors import (
    Situation,
    commit,
    is_locked,
    retry_locked,
    sqlite_errors,
    transaction,
    translate,
)
from harness.testing.samples import chunk, header, run


def _raised(action: Callable[[], object]) -> sqlite3.Error:
    try:
        action()
    except sqlite3.Error as error:
        return error
    raise AssertionError("no sqlite3 error was raised")


def _not_a_database(tmp: Path) -> sqlite3.Error:
    path = tmp / "garbage.db"
    path.write_bytes(b"this is not a database at all" * 200)
    return _raised(lambda: sqlite3.connect(path).execute("PRAGMA user_version").fetchone())


def _malformed(tmp: Path) -> sqlite3.Error:
    path = tmp / "malformed.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE t (x)")
        conn.executemany("INSERT INTO t VALUES (?)", [("x" * 500,) for _ in range(200)])
    conn.close()
    with open(path, "r+b") as handle:  # page 2, the table's root page, overwritten
        handle.seek(4096)
        handle.write(b"\xff" * 4096)
    return _raised(lambda: sqlite3.connect(path).execute("SELECT sum(length(x)) FROM t").fetchall())


def _busy(tmp: Path) -> sqlite3.Error:
    path = tmp / "busy.db"
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("CREATE TABLE t (x)")
    holder.execute("BEGIN IMMEDIATE")
    try:
        return _raised(
            lambda: sqlite3.connect(path, timeout=0, isolation_level=None).execute("BEGIN IMMEDIATE")
        )
    finally:
        holder.close()


def _table_locked(tmp: Path) -> sqlite3.Error:
    uri = f"file:locked-{os.getpid()}?mode=memory&cache=shared"
    writer = sqlite3.connect(uri, uri=True, isolation_level=None)
    writer.execute("CREATE TABLE t (v)")
    writer.execute("BEGIN")
    writer.execute("INSERT INTO t VALUES (1)")
    try:
        return _raised(lambda: sqlite3.connect(uri, uri=True).execute("SELECT * FROM t").fetchall())
    finally:
        writer.close()


def _read_only(tmp: Path) -> sqlite3.Error:
    path = tmp / "read-only.db"
    sqlite3.connect(path).execute("CREATE TABLE t (x)").connection.close()
    conn = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)
    return _raised(lambda: conn.execute("INSERT INTO t VALUES (1)"))


def _full(tmp: Path) -> sqlite3.Error:
    conn = sqlite3.connect(tmp / "full.db", isolation_level=None)
    conn.execute("CREATE TABLE t (x)")
    conn.execute("PRAGMA max_page_count = 3")  # the file may not grow: SQLite's own "disk is full"
    return _raised(lambda: conn.execute("INSERT INTO t VALUES (?)", ("x" * 100_000,)))


KINDS: dict[str, tuple[Callable[[Path], sqlite3.Error], int, str]] = {
    # kind: how to provoke it, its primary result code, SQLite's words
    "not a database": (_not_a_database, sqlite3.SQLITE_NOTADB, "file is not a database"),
    "malformed": (_malformed, sqlite3.SQLITE_CORRUPT, "database disk image is malformed"),
    "busy": (_busy, sqlite3.SQLITE_BUSY, "database is locked"),
    "table locked": (_table_locked, sqlite3.SQLITE_LOCKED, "database table is locked"),
    "read-only": (_read_only, sqlite3.SQLITE_READONLY, "attempt to write a readonly database"),
    "full": (_full, sqlite3.SQLITE_FULL, "database or disk is full"),
}

# situation: the harness error of each kind (default first), and the start of its message
MAPPING: dict[Situation, tuple[type[Exception], dict[str, type[Exception]], str]] = {
    "open": (
        PersistenceFailed,
        {"not a database": UnsupportedFormat},
        "cannot open the session database WHAT: ",
    ),
    "read": (StorageError, {}, "WHAT: "),
    "write": (PersistenceFailed, {}, "WHAT: "),
    "commit": (OutcomeUnknown, {}, "WHAT: the commit failed ("),
    "stream": (StreamRejected, {}, "WHAT: "),
    "index": (
        SearchIndexError,
        {"not a database": SearchIndexCorrupt, "malformed": SearchIndexCorrupt},
        "the search index WHAT ",
    ),
}


@pytest.fixture(scope="module")
def provoked(tmp_path_factory: pytest.TempPathFactory) -> dict[str, sqlite3.Error]:
    tmp = tmp_path_factory.mktemp("sqlite-errors")
    return {kind: provoke(tmp) for kind, (provoke, _, _) in KINDS.items()}


@pytest.mark.parametrize("kind", list(KINDS))
def test_each_kind_is_provoked_for_real(provoked: dict[str, sqlite3.Error], kind: str) -> None:
    _, code, words = KINDS[kind]
    error = provoked[kind]
    assert error.sqlite_errorcode & 0xFF == code, (error.sqlite_errorcode, error)
    assert words in str(error)


@pytest.mark.parametrize("situation", list(MAPPING))
@pytest.mark.parametrize("kind", list(KINDS))
def test_each_kind_maps_to_the_harness_error_of_its_situation(
    provoked: dict[str, sqlite3.Error], kind: str, situation: Situation
) -> None:
    default, special, start = MAPPING[situation]
    _, _, words = KINDS[kind]
    translated = translate(provoked[kind], situation, "WHAT", "AFTER")
    expected = special.get(kind, default)
    assert type(translated) is expected
    message = str(translated)
    if expected is UnsupportedFormat:
        assert message.startswith("WHAT is not an SQLite database: "), message
    elif expected is SearchIndexCorrupt:
        assert message.startswith("the search index WHAT is damaged ("), message
        assert message.endswith("rebuild it (harness index --rebuild)"), message
    else:
        assert message.startswith(start), message
    assert words in message  # SQLite's own text, always
    if situation == "commit":
        assert message.endswith("; AFTER"), message
    assert ("no space left on the file system" in message) == (kind == "full")


@pytest.mark.parametrize("kind", list(KINDS))
def test_locked_means_busy_or_table_locked(provoked: dict[str, sqlite3.Error], kind: str) -> None:
    assert is_locked(provoked[kind]) == (kind in ("busy", "table locked"))


@pytest.mark.parametrize("situation", list(MAPPING))
def test_the_sqlite_error_is_chained_except_for_a_rejected_stream(
    provoked: dict[str, sqlite3.Error], situation: Situation
) -> None:
    error = provoked["busy"]
    with pytest.raises(Exception) as caught, sqlite_errors(situation, "WHAT"):
        raise error
    assert type(caught.value) is type(translate(error, situation, "WHAT"))
    if situation == "stream":
        assert caught.value.__cause__ is None and caught.value.__suppress_context__
    else:
        assert caught.value.__cause__ is error


def test_other_errors_pass_through_untouched() -> None:
    with pytest.raises(KeyError), sqlite_errors("write", "WHAT"):
        raise KeyError("not SQLite's")


# -- the transaction helpers --------------------------------------------------------------


@pytest.fixture
def failing_commit() -> Iterator[sqlite3.Connection]:
    """A connection in a write transaction whose ``COMMIT`` fails for real (a deferred foreign key)."""
    conn = sqlite3.connect(":memory:", isolation_level=None)
    conn.execute("PRAGMA foreign_keys = ON")
    conn.execute("CREATE TABLE parent (id PRIMARY KEY)")
    conn.execute("CREATE TABLE child (parent REFERENCES parent(id) DEFERRABLE INITIALLY DEFERRED)")
    conn.execute("BEGIN IMMEDIATE")
    conn.execute("INSERT INTO child VALUES (5)")
    yield conn
    conn.close()


def test_a_failed_commit_is_rolled_back_and_its_outcome_unknown(failing_commit: sqlite3.Connection) -> None:
    with pytest.raises(OutcomeUnknown) as caught:
        commit(failing_commit, "append to session 's'", "outcome unknown: try again")
    assert str(caught.value) == (
        "append to session 's': the commit failed (FOREIGN KEY constraint failed); outcome unknown: try again"
    )
    assert isinstance(caught.value.__cause__, sqlite3.IntegrityError)
    assert not failing_commit.in_transaction
    assert failing_commit.execute("SELECT count(*) FROM child").fetchone() == (0,)


def test_a_failed_commit_seen_landed_returns(failing_commit: sqlite3.Connection) -> None:
    seen: list[bool] = []

    def landed() -> bool:
        seen.append(failing_commit.in_transaction)
        return True

    commit(failing_commit, "WHAT", "AFTER", landed)
    assert seen == [False]  # looked at after the rollback


def test_a_failed_commit_whose_check_fails_names_both(failing_commit: sqlite3.Connection) -> None:
    def landed() -> bool:
        raise StorageError("cannot query the file")

    with pytest.raises(OutcomeUnknown) as caught:
        commit(failing_commit, "WHAT", "AFTER", landed)
    assert str(caught.value) == (
        "WHAT: the commit failed (FOREIGN KEY constraint failed); "
        "looking at the database afterwards failed too (cannot query the file); AFTER"
    )


def test_a_transaction_rolls_back_on_any_error() -> None:
    conn = sqlite3.connect(":memory:", isolation_level=None)
    conn.execute("CREATE TABLE t (x)")
    with pytest.raises(ValueError), transaction(conn):
        conn.execute("INSERT INTO t VALUES (1)")
        raise ValueError("refused")
    assert not conn.in_transaction
    with transaction(conn):
        conn.execute("INSERT INTO t VALUES (2)")
    assert conn.execute("SELECT x FROM t").fetchall() == [(2,)]


def test_retry_locked_waits_for_the_lock_and_gives_up_at_the_deadline(tmp_path: Path) -> None:
    path = tmp_path / "wal.db"
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN EXCLUSIVE")
    conn = sqlite3.connect(path, timeout=0, isolation_level=None)
    with pytest.raises(sqlite3.OperationalError, match="locked"):
        retry_locked(lambda: conn.execute("PRAGMA journal_mode = WAL"), time.monotonic() + 0.05)
    threading.Timer(0.1, lambda: holder.execute("ROLLBACK")).start()
    mode = retry_locked(lambda: conn.execute("PRAGMA journal_mode = WAL").fetchone(), time.monotonic() + 10)
    assert mode == ("wal",)
    conn.close()
    holder.close()


# -- through the backends ---------------------------------------------------------------------


@pytest.mark.parametrize("make", [SqliteBackend, DshSqliteBackend], ids=["sqlite", "dsh-sqlite"])
def test_a_database_locked_past_the_busy_timeout_fails_the_append_nothing_written(
    tmp_path: Path, make: Callable[..., Backend]
) -> None:
    path = tmp_path / "sessions.db"

    async def scenario() -> None:
        backend = make(path, busy_timeout=0.05)
        try:
            await backend.create(header("s1"))
            await backend.append("s1", [chunk(0)])
            holder = sqlite3.connect(path, isolation_level=None)
            holder.execute("BEGIN IMMEDIATE")
            with pytest.raises(PersistenceFailed) as caught:
                await backend.append("s1", [chunk(1)])
            assert type(caught.value) is PersistenceFailed
            assert "failed, nothing written: database is locked" in str(caught.value)
            assert str(path) in str(caught.value)
            holder.execute("ROLLBACK")
            holder.close()
            assert await backend.stored_length("s1") == 1
            await backend.append("s1", [chunk(1)])
            assert await backend.stored_length("s1") == 2
        finally:
            await backend.close()

    run(scenario())


@pytest.mark.parametrize("make", [SqliteBackend, DshSqliteBackend], ids=["sqlite", "dsh-sqlite"])
def test_a_damaged_database_fails_the_read_naming_it(tmp_path: Path, make: Callable[..., Backend]) -> None:
    path = tmp_path / "sessions.db"

    async def scenario() -> None:
        backend = make(path)
        await backend.create(header("s1"))
        await backend.append("s1", [chunk(seq, "x" * 2000) for seq in range(50)])
        await backend.close()
        with open(path, "r+b") as handle:  # every page after the schema's overwritten
            handle.seek(2 * 4096)
            handle.write(b"\xff" * (os.path.getsize(path) - 2 * 4096))
        backend = make(path)
        try:
            with pytest.raises(StorageError) as caught:
                await read_whole(backend, "s1")
            assert "database disk image is malformed" in str(caught.value)
            assert str(path) in str(caught.value)
        finally:
            await backend.close()

    run(scenario())

"""Schema 17 itself: the tables, the checks made on opening a database, and the column rules.

Ported from dsh's ``session-persistence-sqlite`` (``resources/sql/schema.sql``,
``src/schema.ts``, ``src/store.ts``). Opening follows dsh's order: the path checks (parent a
real directory owned by the user and not group/world-writable; the file, if present, a regular
file, not a symbolic link, owned by the user with no group/world permission bits), create the
file 0600 if absent and check it again, ``trusted_schema`` and ``mmap_size`` off (read back),
``foreign_keys`` on, then one ``BEGIN IMMEDIATE`` that reads ``user_version``,
``application_id`` and the number of schema objects: a pristine file (0, 0, none) is
initialized (tables, a random UUID store id, application id, version 17); version 0 with
anything else, another version, or another application id is refused; the schema objects must
equal the ones ``schema.sql`` creates (whitespace aside). Then the journal mode (retried while
busy, read back) and ``synchronous = FULL`` (read back), and the store id must be a UUID.
"""

from __future__ import annotations

import os
import re
import sqlite3
import stat
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final, Literal

from harness.errors import PersistenceFailed, UnsafeStorage, UnsupportedFormat
from harness.events.json import MAX_SAFE_INTEGER
from harness.stores.sqlite_errors import retry_locked, sqlite_errors, transaction

__all__ = [
    "APPLICATION_ID",
    "SCHEMA_SQL",
    "SCHEMA_VERSION",
    "JournalMode",
    "check_database_file",
    "check_parent",
    "open_database",
]

APPLICATION_ID: Final = 0x44534850
"""``PRAGMA application_id`` of a dsh SQLite session database ("DSHP")."""
SCHEMA_VERSION: Final = 17
JournalMode = Literal["wal", "delete", "truncate", "persist"]
JOURNAL_MODES: Final = ("wal", "delete", "truncate", "persist")

SCHEMA_SQL: Final = """CREATE TABLE persistence_state (
  singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
  store_id  TEXT NOT NULL
) STRICT;

CREATE TABLE sessions (
  id               TEXT PRIMARY KEY,
  version          INTEGER NOT NULL,
  created_at       INTEGER NOT NULL,
  cwd              TEXT,
  parent_session   TEXT,
  seed_length      INTEGER,
  origin           TEXT,
  delegation_depth INTEGER,
  agent_preset     TEXT,
  incarnation      TEXT NOT NULL,
  revision         INTEGER NOT NULL
) STRICT;

CREATE TABLE events (
  session_id        TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
  seq               INTEGER NOT NULL,
  type              TEXT NOT NULL,
  time              INTEGER NOT NULL,
  data              ANY NOT NULL,
  source_event_seqs ANY,
  surface_op        TEXT,
  ignorable         INTEGER CHECK (ignorable IS NULL OR ignorable IN (0, 1)),
  PRIMARY KEY (session_id, seq)
) STRICT;
"""
"""dsh's ``resources/sql/schema.sql``, verbatim (the stored ``CREATE`` texts are compared)."""

_SCHEMA_OBJECTS: Final = (
    "SELECT type, name, tbl_name, sql FROM sqlite_schema WHERE name NOT GLOB 'sqlite_*' ORDER BY type, name"
)
UUID_RE: Final = re.compile(
    r"^[0-9a-f]{8}-[0-9a-f]{4}-[1-8][0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$", re.I
)


def check_parent(path: Path) -> None:
    """The database's folder must be a real directory of this user, not group/world-writable."""
    try:
        info = os.lstat(path)
    except OSError as error:
        raise UnsafeStorage(f"session database parent {str(path)!r} cannot be checked: {error}") from error
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode):
        raise UnsafeStorage(f"session database parent {str(path)!r} must be a real directory")
    if hasattr(os, "getuid") and (info.st_uid != os.getuid() or info.st_mode & 0o022):
        raise UnsafeStorage(
            f"session database parent {str(path)!r} must be owned by the current user "
            "and not group/world-writable"
        )


def check_database_file(path: Path, *, missing_ok: bool = False) -> None:
    """The database must be a regular file of this user with no group/world permission bits."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        if missing_ok:
            return
        raise
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISREG(info.st_mode):
        raise UnsafeStorage(f"session database {str(path)!r} must be a regular file, not a symbolic link")
    if hasattr(os, "getuid") and (info.st_uid != os.getuid() or info.st_mode & 0o077):
        raise UnsafeStorage(
            f"session database {str(path)!r} must be owned by the current user "
            "and accessible only by that user (chmod 600)"
        )


def _normalized(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    def text(value: Any) -> Any:
        return value.decode("utf-8", "replace") if isinstance(value, bytes) else value

    return [
        (text(kind), text(name), text(table), re.sub(r"\s+", " ", text(sql) or "").strip())
        for kind, name, table, sql in rows
    ]


_EXPECTED: list[tuple[Any, ...]] = []


def _expected_schema() -> list[tuple[Any, ...]]:
    if not _EXPECTED:
        reference = sqlite3.connect(":memory:")
        try:
            reference.execute("PRAGMA foreign_keys = ON")
            reference.executescript(SCHEMA_SQL)
            _EXPECTED.extend(_normalized(reference.execute(_SCHEMA_OBJECTS).fetchall()))
        finally:
            reference.close()
    return _EXPECTED


def check_schema(conn: sqlite3.Connection, where: str) -> None:
    """The schema objects must be exactly schema 17's (dsh's ``validateRequiredSchema``)."""
    if _normalized(conn.execute(_SCHEMA_OBJECTS).fetchall()) != _expected_schema():
        raise UnsupportedFormat(f"session database at {where!r} does not contain the required schema objects")


def check_identity_for_write(conn: sqlite3.Connection, where: str) -> None:
    """Inside a write transaction: nobody changed the identity, schema or version meanwhile."""
    application_id = conn.execute("PRAGMA application_id").fetchone()[0]
    if application_id != APPLICATION_ID:
        raise UnsupportedFormat(
            f"session database application id changed before mutation (expected {APPLICATION_ID}, "
            f"got {application_id})"
        )
    check_schema(conn, where)
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    if version != SCHEMA_VERSION:
        raise UnsupportedFormat(
            f"session database schema changed before mutation (expected {SCHEMA_VERSION}, got {version})"
        )


def _claim(conn: sqlite3.Connection, where: str) -> None:
    """dsh's ``configureDatabase``: check the identity, initialize a pristine file."""
    conn.execute("PRAGMA foreign_keys = ON")
    with transaction(conn):
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        application_id = conn.execute("PRAGMA application_id").fetchone()[0]
        objects = conn.execute(
            "SELECT COUNT(*) AS count FROM sqlite_schema WHERE name NOT GLOB 'sqlite_*'"
        ).fetchone()[0]
        if version == 0 and (application_id != 0 or objects > 0):
            raise UnsupportedFormat(
                f"session database at {where!r} has an unversioned schema or application identity "
                f"(application_id {application_id:#010x}): not a dsh session database"
            )
        if version not in (0, SCHEMA_VERSION):
            raise UnsupportedFormat(
                f"session database at {where!r} has schema version {version}, incompatible with "
                f"this layout ({SCHEMA_VERSION})"
            )
        if version != 0 and application_id != APPLICATION_ID:
            raise UnsupportedFormat(
                f"session database at {where!r} has application id {application_id}, "
                f"expected {APPLICATION_ID} (dsh)"
            )
        if version == 0:
            for statement in SCHEMA_SQL.split(";"):
                if statement.strip():
                    conn.execute(statement)
            conn.execute(
                "INSERT INTO persistence_state (singleton, store_id) VALUES (1, ?)", (str(uuid.uuid4()),)
            )
            conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
            conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        check_schema(conn, where)


def _select_journal(conn: sqlite3.Connection, mode: JournalMode, deadline: float, where: str) -> None:
    selected = retry_locked(
        lambda: conn.execute(f"PRAGMA journal_mode = {mode.upper()}").fetchone()[0], deadline
    )
    text = selected.decode() if isinstance(selected, bytes) else str(selected)
    if text.lower() != mode:
        raise PersistenceFailed(
            f"session database at {where!r} selected journal mode {text}, expected {mode}"
        )


def _read_back(conn: sqlite3.Connection, pragma: str, expected: int, where: str) -> None:
    value = conn.execute(f"PRAGMA {pragma}").fetchone()[0]
    if value != expected:
        raise PersistenceFailed(
            f"session database at {where!r} retained {pragma}={value}, expected {expected}"
        )


def open_database(
    path: Path, journal_mode: JournalMode, busy_timeout_s: float, connect: Callable[..., sqlite3.Connection]
) -> tuple[sqlite3.Connection, str]:
    """Open, check and (if pristine) initialize the database at ``path``; returns the
    connection and the store id. Raises ``UnsafeStorage``, ``UnsupportedFormat`` or
    ``PersistenceFailed``; nothing is changed in a refused file."""
    where = str(path)
    deadline = time.monotonic() + busy_timeout_s
    check_parent(path.parent)
    check_database_file(path, missing_ok=True)
    try:
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY | getattr(os, "O_NOFOLLOW", 0), 0o600))
    except FileExistsError:
        pass
    except OSError as error:
        raise PersistenceFailed(f"cannot create the session database {where}: {error}") from error
    check_database_file(path)
    with sqlite_errors("open", where):
        conn = connect(path, timeout=busy_timeout_s, isolation_level=None, check_same_thread=True)
        try:
            conn.text_factory = bytes
            conn.execute("PRAGMA trusted_schema = OFF")
            _read_back(conn, "trusted_schema", 0, where)
            conn.execute("PRAGMA mmap_size = 0")
            _read_back(conn, "mmap_size", 0, where)
            _claim(conn, where)
            _select_journal(conn, journal_mode, deadline, where)
            conn.execute("PRAGMA synchronous = FULL")
            _read_back(conn, "synchronous", 2, where)
            row = conn.execute("SELECT store_id FROM persistence_state WHERE singleton = 1").fetchone()
            store_id = (
                row[0].decode("utf-8", "replace") if row is not None and isinstance(row[0], bytes) else None
            )
            if store_id is None or not UUID_RE.match(store_id):
                raise UnsupportedFormat(f"session database at {where!r} has no valid store identity")
        except BaseException:
            conn.close()
            raise
    return conn, store_id


def safe_int(value: object, *, minimum: int = -MAX_SAFE_INTEGER) -> int | None:
    """``value`` when it is an integer in ``[minimum, 2^53 - 1]`` (dsh's safe-integer fields)."""
    if type(value) is int and minimum <= value <= MAX_SAFE_INTEGER:
        return value
    return None

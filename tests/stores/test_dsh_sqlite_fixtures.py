"""dsh's SQLite databases both ways, with dsh's own code on each side.

* ``shared/fixtures/dsh-sqlite``: databases dsh's SQLite provider wrote from the JSONL fixtures'
  stored events. Each session reads here to the events the matching JSONL fixture holds
  (compared as JSON values: dsh rebuilds scalar rows in its own key order), restores with full
  validation to the same messages, and the single-batch one is rewritten row for row, zstd
  frames included.
* ``tests/data/dsh_sqlite``: databases harness wrote (``make.py``) and dsh's SQLite provider
  then read (``dsh-view.json.zst``: its listing, stored events and derived messages, recorded
  by ``shared/dsh-check/dsh-sqlite-load.mjs``). They read here to exactly what dsh read.

The files are copied to a private folder first: dsh's rules refuse a file with group or world
permissions, and git checks files out 0644.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import shutil
import sqlite3
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import zstandard

import harness
from harness.events.json import json_equal
from harness.session.header import validate_header
from harness.stores.backend import StoredLog
from harness.stores.dsh_sqlite import DshSqliteBackend
from harness.stores.store import SessionStore, restore_stored
from harness.testing.samples import run
from tests.test_fixtures_dsh import FIXTURES, RAW_FILES, read_raw

DSH_SQLITE = FIXTURES.parent / "dsh-sqlite"
DATA = Path(__file__).resolve().parents[1] / "data" / "dsh_sqlite"
PER_FIXTURE = [name.removesuffix(".jsonl") for name in RAW_FILES]
# One database holds one state per id: the final states (05-*) of the ids that recur.
SUPERSEDED = {"04-killed-during-tool", "04-killed-mid-stream", "06-torn-tail-resumed"}
_PHYSICAL = "SELECT seq, type, time, typeof(data), data, source_event_seqs, surface_op, ignorable FROM events"


def private_copy(source: Path, tmp_path: Path) -> Path:
    folder = tmp_path / "private"
    folder.mkdir(mode=0o700, exist_ok=True)
    target = folder / source.name
    shutil.copyfile(source, target)
    os.chmod(target, 0o600)
    return target


def read_all(path: Path) -> dict[str, tuple[StoredLog, harness.Session]]:
    """Every session of the database: its log as read and as restored (``inspect``)."""

    async def go() -> dict[str, tuple[StoredLog, harness.Session]]:
        backend = DshSqliteBackend(path, journal_mode="delete")
        store = SessionStore(backend)
        try:
            out = {}
            for info in await backend.list():
                assert info.problem is None, info.problem
                out[info.id] = (await backend.read(info.id), await store.inspect(info.id))
            return out
        finally:
            await store.close()

    return run(go())


@cache
def jsonl_fixture(name: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    return read_raw(f"{name}.jsonl")


def same_events(ours: list[dict[str, Any]], theirs: list[dict[str, Any]]) -> None:
    assert len(ours) == len(theirs)
    for mine, other in zip(ours, theirs, strict=True):
        assert json_equal(mine, other), (mine.get("seq"), mine.get("type"))


def test_the_fixture_databases_are_present() -> None:
    found = sorted(p.name for p in DSH_SQLITE.glob("*.sqlite"))
    assert len(found) == 13, f"expected dsh's SQLite fixtures in {DSH_SQLITE}"
    assert {f"{name}.sqlite" for name in PER_FIXTURE} <= set(found)


@pytest.mark.parametrize("name", PER_FIXTURE)
def test_each_fixture_database_reads_as_its_jsonl_fixture(name: str, tmp_path: Path) -> None:
    path = private_copy(DSH_SQLITE / f"{name}.sqlite", tmp_path)
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    header, events = jsonl_fixture(name)
    ((log, session),) = read_all(path).values()
    assert log.torn is None
    same_events(log.events, events)
    assert log.header.to_json(line=True) == header  # every header field, the JSONL line's way
    jsonl_header = validate_header({k: v for k, v in header.items() if k != "type"})
    from_jsonl, _ = restore_stored(header["id"], StoredLog(jsonl_header, copy.deepcopy(events)))
    assert [m.raw for m in session.derive_messages()] == [m.raw for m in from_jsonl.derive_messages()]
    assert [e.encode() for e in session.events[: len(events)]] == [
        e.encode() for e in from_jsonl.events[: len(events)]
    ]
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before  # read in its own journal mode
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]


def test_the_database_of_all_fixtures_holds_each_final_state(tmp_path: Path) -> None:
    sessions = read_all(private_copy(DSH_SQLITE / "all-fixtures.sqlite", tmp_path))
    expected = {jsonl_fixture(name)[0]["id"]: name for name in PER_FIXTURE if name not in SUPERSEDED}
    assert sorted(sessions) == sorted(expected) and len(sessions) == 8
    for session_id, (log, _) in sessions.items():
        same_events(log.events, jsonl_fixture(expected[session_id])[1])


def test_the_long_database_splits_runs_and_compresses_as_described(tmp_path: Path) -> None:
    path = private_copy(DSH_SQLITE / "long-packed-zstd.sqlite", tmp_path)
    ((log, session),) = read_all(path).values()
    _, compaction = jsonl_fixture("03-auto-compaction")
    assert len(log.events) == 3510
    same_events(log.events[: len(compaction)], compaction)
    synthetic = log.events[len(compaction) :]
    texts = [
        e["data"]["chunk"]["text"]
        for e in synthetic
        if e["type"] == "assistant/chunk" and e["data"]["chunk"]["type"] == "text-delta"
    ]
    assert len(texts) == 1500 and sum(len(t.encode()) for t in texts) == 8768
    assert synthetic[-1]["type"] == "assistant/message" or any("sourceEventSeqs" in e for e in synthetic)
    assert session.derive_messages()[-1].role == "assistant"
    with sqlite3.connect(path) as conn:
        packed = conn.execute(
            "SELECT seq FROM events WHERE ignorable = 0 AND type = 'text-chunks'"
        ).fetchall()
        blobs = conn.execute("SELECT type FROM events WHERE typeof(data) = 'blob'").fetchall()
    assert len(packed) == 8 and {"text-chunks", "assistant/message", "request/header"} <= {
        t for (t,) in blobs
    }


def test_the_single_batch_database_is_rewritten_row_for_row(tmp_path: Path) -> None:
    """One append of the same events gives dsh's physical rows exactly: packing, run splits,
    provenance BLOBs, and level-3 zstd frames byte for byte."""
    source = private_copy(DSH_SQLITE / "long-packed-zstd.sqlite", tmp_path)
    ((log, session),) = read_all(source).values()
    target = tmp_path / "private" / "rewritten.sqlite"

    async def write() -> None:
        backend = DshSqliteBackend(target, journal_mode="delete")
        try:
            await backend.create(log.header)
            await backend.append(log.header.id, list(session.events[: len(log.events)]))
        finally:
            await backend.close()

    run(write())
    with sqlite3.connect(source) as theirs, sqlite3.connect(target) as ours:
        expected = theirs.execute(_PHYSICAL + " ORDER BY seq").fetchall()
        assert ours.execute(_PHYSICAL + " ORDER BY seq").fetchall() == expected
        columns = (
            "id, version, created_at, cwd, parent_session, seed_length, origin, delegation_depth, revision"
        )
        assert (
            ours.execute(f"SELECT {columns} FROM sessions").fetchall()
            == theirs.execute(f"SELECT {columns} FROM sessions").fetchall()
        )
    assert len(expected) == 141


# ---- databases harness wrote, as dsh read them ------------------------------------------------


@cache
def dsh_view() -> dict[str, Any]:
    raw = zstandard.ZstdDecompressor().decompress((DATA / "dsh-view.json.zst").read_bytes())
    view: dict[str, Any] = json.loads(raw)
    return view


@pytest.mark.parametrize("name", ["exported.sqlite", "live.sqlite", "continued.sqlite"])
def test_databases_harness_wrote_read_as_dsh_read_them(name: str, tmp_path: Path) -> None:
    seen = dsh_view()[name]
    sessions = read_all(private_copy(DATA / name, tmp_path))
    assert seen["sha256Unchanged"] and all(s["accepted"] for s in seen["sessions"])
    assert sorted(sessions) == sorted(s["id"] for s in seen["sessions"])
    for theirs in seen["sessions"]:
        log, session = sessions[theirs["id"]]
        assert log.torn is None
        same_events(log.events, theirs["stored"])
        assert all(
            list(a) == list(b) for a, b in zip(log.events, theirs["stored"], strict=True)
        )  # key order too
        assert json_equal(log.header.to_json(), theirs["meta"])
        messages = [m.raw for m in session.derive_messages()]
        assert len(messages) == len(theirs["messages"]) and all(
            json_equal(a, b) for a, b in zip(messages, theirs["messages"], strict=True)
        )


def test_the_live_database_holds_what_its_writer_did(tmp_path: Path) -> None:
    """What ``make.py`` wrote is in the file: runs split by flushes and at 1,024 members, zstd
    rows, a repair that cut a torn final row, one revision per append or repair."""
    path = private_copy(DATA / "live.sqlite", tmp_path)
    with sqlite3.connect(path) as conn:
        revisions = dict(conn.execute("SELECT id, revision FROM sessions").fetchall())
        packed = conn.execute(
            "SELECT json_array_length(data, '$.texts') FROM events WHERE session_id = 'session-live-first' "
            "AND type = 'text-chunks' AND typeof(data) = 'text' ORDER BY seq"
        ).fetchall()
        blobs = conn.execute("SELECT count(*) FROM events WHERE typeof(data) = 'blob'").fetchone()[0]
        child = conn.execute(
            "SELECT origin, delegation_depth, agent_preset FROM sessions WHERE id = 'session-live-child'"
        ).fetchone()
    assert revisions == {"session-live-first": 5, "session-live-torn": 4, "session-live-child": 1}
    assert (9,) in packed and blobs >= 2
    assert child == ("subagent", 1, "explore")
    sessions = read_all(path)
    torn_log, _ = sessions["session-live-torn"]
    assert [e["type"] for e in torn_log.events[-3:]] == ["turn/start", "turn/end", "session/end-seed"]


def test_a_dsh_database_harness_continued_keeps_every_row_dsh_wrote(tmp_path: Path) -> None:
    """``continued.sqlite`` is dsh's ``04-killed-during-tool`` after a harness load (the closers
    of the killed turn) and a new turn: dsh's rows are untouched, and one revision was added per
    write (the repair, then the flushed end-seed and turn)."""
    original = private_copy(DSH_SQLITE / "04-killed-during-tool.sqlite", tmp_path)
    continued = private_copy(DATA / "continued.sqlite", tmp_path)
    with sqlite3.connect(original) as theirs, sqlite3.connect(continued) as ours:
        before = theirs.execute(_PHYSICAL + " ORDER BY seq").fetchall()
        after = ours.execute(_PHYSICAL + " ORDER BY seq").fetchall()
        revisions = [db.execute("SELECT revision FROM sessions").fetchone()[0] for db in (theirs, ours)]
    assert after[: len(before)] == before and len(after) > len(before)
    assert revisions[1] == revisions[0] + 2
    ((log, _),) = read_all(continued).values()
    assert [e["type"] for e in log.events[39:43]] == [
        "tool/result",
        "step/end",
        "turn/end",
        "session/end-seed",
    ]
    assert log.events[-1]["type"] == "turn/end"

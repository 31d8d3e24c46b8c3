"""The two fsyncgate defects of issue 19, each shown failing on the old code and fixed.

* JSONL: an fsync fails and the rollback ``ftruncate`` fails too. The file keeps the
  unsynced batch; the backend used to keep believing the old size, so every later flush
  raised ``SessionConflict`` (a stuck session) while a fresh process read the never-synced
  batch as committed. Now the error is ``OutcomeUnknown`` and the next attempt resyncs from
  the file: the batch is adopted (written again and fsync'd) or cut back and rewritten.
* SQLite: a real EIO on the WAL's fdatasync (injected below the library by the shim) was
  reported as "nothing written"; the batch's frames stay in the WAL, and a fresh process
  reads them as committed. Now it is ``OutcomeUnknown`` and the write-behind resyncs.

After each: every event is stored exactly once, in order, and a fresh process agrees.
"""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from pathlib import Path

import pytest

import harness
from harness.errors import OutcomeUnknown, PersistenceFailed
from harness.events.json import loads
from harness.stores.backend import read_whole
from harness.stores.jsonl.backend import JsonlBackend
from harness.stores.jsonl.fileio import FileOps
from harness.stores.jsonl.paths import Compression
from harness.stores.store import SessionStore
from harness.testing.samples import run
from tests.stores.faults.counts import COUNTS
from tests.stores.faults.shim import Shim
from tests.stores.faults.writer import SESSION_ID, append_turn, make_backend, turn_events

REPO = Path(__file__).resolve().parents[3]
MODES: tuple[Compression, ...] = ("none", "zstd")


def stored_once(backend_events: list[dict[str, object]], session: harness.Session) -> None:
    """The stored log is exactly the session's events: each once, in order."""
    assert [event["seq"] for event in backend_events] == list(range(len(backend_events)))
    assert backend_events == [loads(event.encode()) for event in session.events]


class BrokenRollback(FileOps):
    """The next fdatasync fails and every ftruncate fails (EIO); with ``half``, the failing
    write puts only the first half of its bytes in the file."""

    def __init__(self, *, half: bool = False, fsyncs: int = 1) -> None:
        self.fsyncs = 0 if half else fsyncs  # a half write fails before its fsync
        self.half = half
        self.broken = True

    def write(self, fd: int, data: bytes | memoryview) -> int:
        if self.half and self.broken:
            self.half = False
            os.write(fd, bytes(data[: len(data) // 2]))
            raise OSError(errno.ENOSPC, "No space left on device (injected write)")
        return super().write(fd, data)

    def fsync(self, fd: int, *, directory: bool = False) -> None:
        if self.fsyncs and not directory:
            self.fsyncs -= 1
            raise OSError(errno.EIO, "Input/output error (injected fsync)")
        super().fsync(fd, directory=directory)

    def ftruncate(self, fd: int, size: int) -> None:
        if self.broken:
            raise OSError(errno.EIO, "Input/output error (injected ftruncate)")
        super().ftruncate(fd, size)


@pytest.mark.parametrize("compression", MODES)
@pytest.mark.parametrize("half", [False, True], ids=["whole-batch-held", "part-held"])
def test_jsonl_failed_rollback_is_unknown_and_the_next_flush_resyncs(
    tmp_path: Path, compression: Compression, half: bool
) -> None:
    async def scenario() -> None:
        backend = JsonlBackend(tmp_path, compression)
        store = SessionStore(backend, write_window_s=3600)
        session = await store.create(id=SESSION_ID)
        append_turn(session, 1)
        await store.flush(session)
        path = Path(backend.locate(session.header))
        committed = path.stat().st_size
        append_turn(session, 2)
        ops = backend._os = BrokenRollback(half=half)
        with pytest.raises(OutcomeUnknown, match="outcome unknown") as failed:
            await store.flush(session)
        assert str(path) in str(failed.value) and "injected ftruncate" in str(failed.value)
        assert path.stat().st_size > committed  # the rollback did not happen
        assert store.pending(session) == len(turn_events(2))
        if half:
            ops.broken = False  # the cut back works now: the part is cut, the batch rewritten
        # The next flush resyncs from the file, never a SessionConflict against our own bytes.
        append_turn(session, 3)
        await store.flush(session)
        assert store.pending(session) == 0
        stored_once((await read_whole(JsonlBackend(tmp_path, compression), SESSION_ID)).events, session)
        await store.close()

    run(scenario())


def test_a_write_of_unknown_outcome_is_remembered_across_close(tmp_path: Path) -> None:
    """A backend closed after a failed rollback still resyncs (adopting, written again) on reuse."""

    async def scenario() -> None:
        backend = JsonlBackend(tmp_path, "none")
        store = SessionStore(backend, write_window_s=3600)
        session = await store.create(id=SESSION_ID)
        append_turn(session, 1)
        backend._os = BrokenRollback()
        with pytest.raises(PersistenceFailed):  # publish: the temp file's fsync, nothing linked
            await store.flush(session)
        await store.flush(session)
        append_turn(session, 2)
        backend._os = BrokenRollback(fsyncs=2)
        with pytest.raises(OutcomeUnknown):
            await store.flush(session)
        with pytest.raises(OutcomeUnknown, match="resyncing"):
            await store.close()  # the final flush's resync fails too; the backend is closed
        backend._os = FileOps()
        assert await backend.stored_length(SESSION_ID) == len(session.events)
        stored_once((await read_whole(JsonlBackend(tmp_path, "none"), SESSION_ID)).events, session)

    run(scenario())


def writer(shim: Shim, kind: str, rules: str, turns: int) -> list[str]:
    """Run the writer under the shim to its end; its report lines."""
    done = subprocess.run(
        [sys.executable, "-m", "tests.stores.faults.writer", kind, str(shim.path), str(turns)],
        env=shim.env(rules) | {"HARNESS_WRITER_EXIT": "1"},
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    COUNTS["faults injected"] += len(shim.faults())
    return done.stdout.splitlines()


async def fresh_read(kind: str, root: Path) -> list[dict[str, object]]:
    backend = make_backend(kind, root)
    try:
        return (await read_whole(backend, SESSION_ID)).events
    finally:
        await backend.close()


def expected_events(turns: int) -> list[tuple[str, object]]:
    from harness.events.json import dumps

    return [(kind, loads(dumps(data))) for turn in range(1, turns + 1) for kind, data, _ in turn_events(turn)]


@pytest.mark.parametrize("kind", ["jsonl-none", "jsonl-zstd"])
def test_jsonl_failed_rollback_below_the_library(shim: Shim, kind: str) -> None:
    """Real failing fdatasync and ftruncate calls (the shim): the second append's fsync and its
    rollback fail; the session goes on, and a fresh process sees every event once."""
    lines = writer(shim, kind, "fdatasync:2:EIO,ftruncate:1:EIO", turns=4)
    assert not [line for line in lines if "SessionConflict" in line], lines  # never stuck on our own write
    assert [fault[:2] for fault in shim.faults()] == [["fdatasync", "2"], ["ftruncate", "1"]]
    assert lines[:3] == ["appended 8", "ok 8", "appended 16"]
    assert lines[3].startswith("err OutcomeUnknown 8 ") and "outcome unknown" in lines[3], lines[3]
    assert lines[4:] == ["appended 24", "ok 24", "appended 32", "ok 32", "done"]
    stored = run(fresh_read(kind, shim.path))
    assert [(event["type"], event["data"]) for event in stored] == expected_events(4)


def test_sqlite_wal_fdatasync_eio_is_unknown_and_resynced(shim: Shim) -> None:
    """The WAL's fdatasync fails with a real EIO under SQLite itself (the shim's log shows the
    ``-wal`` file): the append says outcome unknown, the retry commits, every event once."""
    # The 4th WAL sync is the second flush's commit (1st, 2nd: opening, the schema; 3rd: batch 1).
    shim.match = str(shim.path / "sessions.db-wal")
    lines = writer(shim, "sqlite", "fdatasync:4:EIO", turns=3)
    (fault,) = shim.faults()
    assert fault[0] == "fdatasync" and fault[4].endswith("sessions.db-wal"), fault
    assert lines[:3] == ["appended 8", "ok 8", "appended 16"]
    assert lines[3].startswith("err OutcomeUnknown 8 ") and "outcome unknown" in lines[3], lines[3]
    assert lines[4:] == ["appended 24", "ok 24", "done"]
    stored = run(fresh_read("sqlite", shim.path))
    assert [(event["type"], event["data"]) for event in stored] == expected_events(3)


def test_sqlite_unknown_batch_is_whole_or_absent_after_the_writer_dies(shim: Shim) -> None:
    """Killed right after the failed commit, before any retry: SQLite's recovery adopts the
    batch's WAL frames (as the shim's EIO left them) — exactly the unknown batch, which is why
    "nothing written" was wrong."""
    shim.match = str(shim.path / "sessions.db-wal")
    lines = writer(shim, "sqlite", "fdatasync:4:EIO", turns=2)
    assert lines[3].startswith("err OutcomeUnknown 8 "), lines
    stored = run(fresh_read("sqlite", shim.path))
    assert len(stored) in (8, 16)
    assert [(event["type"], event["data"]) for event in stored] == expected_events(2)[: len(stored)]

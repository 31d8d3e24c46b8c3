"""A full disk, for real: a 2 MB tmpfs mounted by the test (it runs as root; otherwise it
skips with the reason, and under ``CI=true`` fails).

For JSONL (plain, zstd) and SQLite: fill the file system, flush: a typed error naming the
path and "no space"; the events stay queued. Free the space, flush again: every event is
stored exactly once. SQLite's case includes a WAL that cannot be checkpointed while the disk
is full (the checkpoint must grow the database file), checkpointed after.
"""

from __future__ import annotations

import contextlib
import errno
import os
import random
import sqlite3
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

import harness
from harness.errors import PersistenceFailed
from harness.events.json import loads
from harness.stores.backend import read_whole
from harness.stores.store import SessionStore
from harness.testing.samples import run
from tests.stores.faults.counts import COUNTS
from tests.stores.faults.shim import need
from tests.stores.faults.writer import SESSION_ID, make_backend

SIZE = "2m"


@pytest.fixture
def small_fs(tmp_path: Path) -> Iterator[Path]:
    """A fresh 2 MB tmpfs, unmounted afterwards."""
    need(hasattr(os, "geteuid") and os.geteuid() == 0, "the full-disk tests mount a tmpfs: run them as root")
    mount = tmp_path / f"fs-{uuid.uuid4().hex[:8]}"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={SIZE},mode=0700", "tmpfs", str(mount)],
        capture_output=True,
        text=True,
        check=False,
    )
    need(done.returncode == 0, f"mounting a tmpfs failed: {done.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def fill(path: Path) -> None:
    """Write ``path`` until the file system is full."""
    block = b"\0" * 65536
    with open(path, "wb", buffering=0) as handle:
        with contextlib.suppress(OSError):
            while True:
                handle.write(block)
        with contextlib.suppress(OSError):
            while True:
                handle.write(b"\0" * 512)


def big_turn(session: harness.Session, turn: int, size: int) -> None:
    """A turn whose prompt is ``size`` hex digits of seeded noise (zstd cannot squeeze it away)."""
    text = random.Random(turn).randbytes(size // 2).hex()
    session.append("turn/start", {"turn": turn})
    session.append("user/message", harness.user_message(text, id=f"u-{turn}"), surface_op="append")
    session.append("turn/end", {"turn": turn, "reason": {"kind": "completed"}})


def no_space(error: BaseException, path: Path) -> None:
    text = str(error)
    assert str(path) in text, text
    assert "no space" in text.lower(), text


@pytest.mark.parametrize("kind", ["jsonl-none", "jsonl-zstd", "sqlite"])
def test_a_full_disk_fails_clearly_and_a_flush_after_freeing_stores_every_event_once(
    small_fs: Path, kind: str
) -> None:
    root = small_fs / "store"
    filler = small_fs / "filler"

    async def scenario() -> None:
        store = SessionStore(make_backend(kind, root), write_window_s=3600)
        session = await store.create(id=SESSION_ID)
        big_turn(session, 1, 1000)
        await store.flush(session)
        fill(filler)
        failures = 0
        for turn in range(2, 5):
            big_turn(session, turn, 40_000)
            with pytest.raises(PersistenceFailed) as failed:
                await store.flush(session)
            failures += 1
            where = root / "sessions.db" if kind == "sqlite" else root
            no_space(failed.value, where)
            assert store.pending(session) > 0
        COUNTS["full-disk failures"] += failures
        filler.unlink()
        await store.flush(session)
        assert store.pending(session) == 0
        await store.close()
        fresh = make_backend(kind, root)
        try:
            stored = (await read_whole(fresh, SESSION_ID)).events
        finally:
            await fresh.close()
        assert stored == [loads(event.encode()) for event in session.events]

    run(scenario())


def test_sqlite_wal_that_cannot_be_checkpointed_on_a_full_disk(small_fs: Path) -> None:
    """The WAL holds committed pages the full disk keeps out of the database file: a
    checkpoint fails, appends fail with "no space", nothing is lost; freed, it all lands."""
    root = small_fs / "store"
    filler = small_fs / "filler"
    database = root / "sessions.db"

    async def scenario() -> None:
        store = SessionStore(make_backend("sqlite", root), write_window_s=3600)
        session = await store.create(id=SESSION_ID)
        big_turn(session, 1, 100)
        await store.flush(session)
        # Leave room for the WAL only: commits land in it, the checkpoint cannot grow the file.
        fill(filler)
        room = 300_000
        os.truncate(filler, filler.stat().st_size - room)
        turn, committed_in_wal = 1, 0
        with pytest.raises(PersistenceFailed) as failed:
            while True:
                turn += 1
                big_turn(session, turn, 20_000 + turn)
                await store.flush(session)
                committed_in_wal += 1
        no_space(failed.value, database)
        assert committed_in_wal > 0, "the WAL took no commit at all"
        wal = Path(f"{database}-wal")
        assert wal.stat().st_size > database.stat().st_size
        with sqlite3.connect(database) as other:
            try:
                busy, frames, checkpointed = other.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
            except sqlite3.OperationalError as error:
                assert "full" in str(error) or error.sqlite_errorcode == sqlite3.SQLITE_FULL, error
            else:
                assert busy or checkpointed < frames, "a full disk let the WAL be checkpointed"
        filler.unlink()
        await store.flush(session)
        await store.close()
        with sqlite3.connect(database) as other:
            busy, frames, checkpointed = other.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
            assert (busy, checkpointed) == (0, frames)
        assert wal.stat().st_size == 0 if wal.exists() else True
        fresh = make_backend("sqlite", root)
        try:
            stored = (await read_whole(fresh, SESSION_ID)).events
        finally:
            await fresh.close()
        assert stored == [loads(event.encode()) for event in session.events]
        COUNTS["full-disk failures"] += 1

    run(scenario())


def test_no_space_errno_is_what_the_tmpfs_gives(small_fs: Path) -> None:
    """The premise: the mounted file system really runs out (ENOSPC), not a quota or EIO."""
    fill(small_fs / "filler")
    with pytest.raises(OSError) as full, open(small_fs / "more", "wb", buffering=0) as handle:
        handle.write(b"x" * 65536)
    assert full.value.errno == errno.ENOSPC

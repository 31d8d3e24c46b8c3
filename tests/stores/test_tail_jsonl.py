"""The tail contract (``tail_contract.py``) on JSONL roots, plain and zstd, and a tail that
never sees a batch its writer rolled back."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from harness.errors import PersistenceFailed
from harness.stores.backend import Backend
from harness.stores.jsonl.backend import JsonlBackend
from harness.stores.jsonl.fileio import FileOps
from harness.stores.store import SessionStore
from harness.testing.samples import run
from harness.testing.tail_contract import Follower, TailContract


class TestTailJsonlPlain(TailContract):
    compression = "none"

    def make_backend(self, tmp_path: Path) -> Backend:
        return JsonlBackend(tmp_path / "root", compression=self.compression)  # type: ignore[arg-type]


class TestTailJsonlZstd(TestTailJsonlPlain):
    compression = "zstd"


class _SlowFailingSync(FileOps):
    """The next data fsync waits, then fails: the writer rolls its batch back under its lock."""

    def __init__(self) -> None:
        self.fail_next = False

    def fsync(self, fd: int, *, directory: bool = False) -> None:
        if self.fail_next and not directory:
            self.fail_next = False
            time.sleep(0.6)
            raise OSError(5, "Input/output error (injected)")
        super().fsync(fd, directory=directory)


def test_a_tail_never_yields_a_batch_its_writer_rolled_back(tmp_path: Path) -> None:
    # The batch's bytes are in the file for 0.6 s before the failed fsync truncates them; the
    # tail polls its stat meanwhile, but reads only under a shared lock the writer's exclusive
    # one excludes, so it sees the log before the write or after the rollback, never between.
    async def scenario() -> None:
        ops = _SlowFailingSync()
        backend = JsonlBackend(tmp_path / "root", compression="none")
        backend._os = ops
        writer = SessionStore(backend)
        session = await writer.create(id="rolled", cwd="/work/project")
        session.append("turn/start", {"turn": 1})
        await writer.flush(session)
        follower = Follower(JsonlBackend(tmp_path / "root", compression="none").tail("rolled"))
        try:
            await follower.until(1)
            session.append("session/title", {"title": "never stored"})
            ops.fail_next = True
            with pytest.raises(PersistenceFailed):
                await writer.flush(session)
            await asyncio.sleep(0.4)
            assert [e.seq for e in follower.events] == [0] and follower.error is None
            await writer.flush(session)  # the retry commits it
            await follower.until(2)
            await asyncio.sleep(0.3)
            assert [e.encode() for e in follower.events] == [e.encode() for e in session.events]
        finally:
            await follower.close()
            await writer.close()

    run(scenario())


def test_a_torn_last_line_is_waited_on_until_a_repair_cuts_it(tmp_path: Path) -> None:
    # A writer that crashed mid-line leaves bytes with no newline: the tail neither yields nor
    # fails on them; the next load repairs the log (cuts them, appends its closers), and the
    # tail goes on with the closers.
    async def scenario() -> None:
        root = tmp_path / "root"
        writer = SessionStore(JsonlBackend(root, compression="none"))
        session = await writer.create(id="torn", cwd="/work/project")
        session.append("turn/start", {"turn": 1})
        session.append("step/start", {"turn": 1, "step": 1})
        await writer.close()
        (log,) = root.rglob("session.jsonl")
        with open(log, "ab") as handle:
            handle.write(b'{"type":"assistant/chunk","seq":2,"ti')
        follower = Follower(JsonlBackend(root, compression="none").tail("torn"))
        try:
            await follower.until(2)
            await asyncio.sleep(0.5)
            assert [e.seq for e in follower.events] == [0, 1] and follower.error is None
            repairer = SessionStore(JsonlBackend(root, compression="none"))
            repaired = await repairer.load("torn")
            await repairer.close()
            total = len(repaired.events)
            assert total > 2  # the closers of the open step and turn
            await follower.until(total)
            await asyncio.sleep(0.3)
            assert [e.encode() for e in follower.events] == [e.encode() for e in repaired.events]
            assert follower.error is None
        finally:
            await follower.close()

    run(scenario())

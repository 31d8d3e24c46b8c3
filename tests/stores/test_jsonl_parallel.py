"""One JSONL backend syncs several sessions at once; one session's writes stay in order."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

from harness.stores.jsonl.backend import JsonlBackend
from harness.stores.jsonl.fileio import FileOps
from harness.stores.store import SessionStore
from tests.stores.contract import one_turn, wire

SESSIONS = 3


class TogetherOps(FileOps):
    """A log file's sync waits until ``SESSIONS`` syncs are in progress at the same time
    (the barrier breaks, and the sync fails, if they are made one after another)."""

    def __init__(self) -> None:
        self.together = threading.Barrier(SESSIONS, timeout=10)
        self.waiting = True

    def fsync(self, fd: int, *, directory: bool = False) -> None:
        if not directory and self.waiting:
            self.together.wait()
        super().fsync(fd, directory=directory)


def test_sessions_of_one_backend_sync_in_parallel(tmp_path: Path) -> None:
    async def scenario() -> None:
        backend = JsonlBackend(tmp_path, compression="none")
        ops = backend._os = TogetherOps()
        store = SessionStore(backend, write_window_s=10)
        sessions = [await store.create() for _ in range(SESSIONS)]
        for session in sessions:
            one_turn(session)
        await asyncio.gather(*(store.flush(session) for session in sessions))
        ops.waiting = False
        for session in sessions:
            one_turn(session, 2)
        await asyncio.gather(*(store.flush(session) for session in sessions))
        await store.close()
        check = SessionStore(JsonlBackend(tmp_path, compression="none"))
        for session in sessions:
            assert wire(await check.inspect(session.id))[: len(session.events)] == wire(session)

    asyncio.run(scenario())

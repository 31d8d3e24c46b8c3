"""One JSONL backend syncs several sessions at once; a flush cancelled mid-sync loses nothing."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from pathlib import Path

from harness.stores.jsonl.backend import JsonlBackend
from harness.stores.jsonl.fileio import FileOps
from harness.stores.store import SessionStore
from harness.testing.contract import one_turn, wire

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


class HeldOps(FileOps):
    """A log file's sync waits until the test lets it go (``entered`` says it is waiting)."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()

    def fsync(self, fd: int, *, directory: bool = False) -> None:
        if not directory and not self.release.is_set():
            self.entered.set()
            self.release.wait(10)
        super().fsync(fd, directory=directory)


def test_a_flush_cancelled_while_its_write_syncs_neither_loses_nor_duplicates(tmp_path: Path) -> None:
    async def scenario() -> None:
        backend = JsonlBackend(tmp_path, compression="none")
        store = SessionStore(backend, write_window_s=10)
        session = await store.create()
        one_turn(session)
        await store.flush(session)
        ops = backend._os = HeldOps()
        one_turn(session, 2)
        waiter = asyncio.ensure_future(store.flush(session))
        await asyncio.to_thread(ops.entered.wait, 10)  # the batch is in the worker, mid-sync
        waiter.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await waiter
        one_turn(session, 3)  # more events while the write is still going on
        ops.release.set()
        await store.flush(session)
        await store.close()
        check = await SessionStore(JsonlBackend(tmp_path, compression="none")).inspect(session.id)
        assert wire(check)[: len(session.events)] == wire(session)
        assert len(check.events) == len(session.events) + 1  # and its end-seed: nothing twice

    asyncio.run(scenario())

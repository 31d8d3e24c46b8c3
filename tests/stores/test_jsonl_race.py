"""Two processes race to write one JSONL session: one owner at a time, never interleaved bytes.

Each round a process loads the session (taking ownership), adds a turn and flushes. The other
one's load is refused with ``SessionInUse`` while it owns the session, so no flush ever meets
a ``SessionConflict`` (before ownership, about half the flushes did, after loads that had
already committed nothing wrong but raced)."""

from __future__ import annotations

import asyncio
import contextlib
import os
from pathlib import Path

import pytest

from harness.errors import SessionConflict, SessionInUse
from harness.stores.jsonl.backend import JsonlBackend
from harness.stores.store import SessionStore
from harness.testing.contract import one_turn

ROUNDS = 25
SESSION_ID = "raced"


def backend(root: Path, compression: str) -> JsonlBackend:
    return JsonlBackend(root, compression=compression)  # type: ignore[arg-type]


def writer(root: Path, compression: str, write_fd: int) -> None:
    """Load, add a turn, flush; ROUNDS times. Reports wins, conflicts and refusals on the pipe."""

    async def main() -> tuple[int, int, int]:
        wins = conflicts = refusals = 0
        for _ in range(ROUNDS):
            store = SessionStore(backend(root, compression), write_window_s=3600)
            try:
                session = await store.load(SESSION_ID)
            except SessionInUse:
                refusals += 1
                await store.close()
                await asyncio.sleep(0.001)
                continue
            one_turn(session, sum(1 for e in session.events if e.type == "turn/start") + 1)
            try:
                await store.flush(session)
                wins += 1
            except SessionConflict:
                conflicts += 1
            with contextlib.suppress(SessionConflict):
                await store.close()
        return wins, conflicts, refusals

    try:
        wins, conflicts, refusals = asyncio.run(main())
        os.write(write_fd, f"{wins} {conflicts} {refusals}\n".encode())
    finally:
        os._exit(0)


@pytest.mark.parametrize("compression", ["none", "zstd"])
def test_two_processes_never_interleave_a_log(tmp_path: Path, compression: str) -> None:
    async def seed() -> None:
        store = SessionStore(backend(tmp_path, compression))
        one_turn(await store.create(id=SESSION_ID))
        await store.close()

    asyncio.run(seed())
    read_fd, write_fd = os.pipe()
    children = []
    for _ in range(2):
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child exits inside writer()
            os.close(read_fd)
            writer(tmp_path, compression, write_fd)
        children.append(pid)
    os.close(write_fd)
    for pid in children:
        os.waitpid(pid, 0)
    with os.fdopen(read_fd) as reports:
        results = [tuple(map(int, line.split())) for line in reports.read().splitlines()]
    assert len(results) == 2, "a writer died"
    wins = sum(result[0] for result in results)
    assert sum(result[1] for result in results) == 0, f"a flush met a conflict: {results}"
    assert all(result[0] + result[2] == ROUNDS for result in results), results
    assert wins > 0

    async def turns_on_disk() -> int:
        store = SessionStore(backend(tmp_path, compression))
        restored = await store.inspect(SESSION_ID)  # full validation: interleaved bytes would fail here
        await store.close()
        return sum(1 for e in restored.events if e.type == "turn/start")

    assert asyncio.run(turns_on_disk()) == 1 + wins

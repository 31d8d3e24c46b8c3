"""``harness tail`` on a JSONL root and a harness SQLite file (PostgreSQL's is in
``stores/test_postgres_cli.py``): a real ``harness`` process prints the committed events from
``--from`` on, then each batch another process's store commits, one JSON line per event;
Ctrl-C ends it with 130; a dsh-layout SQLite store, which cannot be followed, is one line."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from harness.stores.backend import Backend
from harness.stores.jsonl.backend import JsonlBackend
from harness.stores.sqlite import SqliteBackend
from harness.stores.store import SessionStore
from harness.testing.contract import one_turn
from harness.testing.tail_contract import chunks
from tests.interruptible import HARNESS_CLI, ChildLines

STORES: dict[str, tuple[Callable[[Path], Backend], Callable[[Path], str]]] = {
    "jsonl": (lambda base: JsonlBackend(base / "root"), lambda base: str(base / "root")),
    "sqlite": (lambda base: SqliteBackend(base / "s.db"), lambda base: f"sqlite:{base / 's.db'}"),
}


def seed(backend: Backend) -> list[bytes]:
    async def build() -> list[bytes]:
        store = SessionStore(backend)
        session = await store.create(id="live-1", cwd="/work/project")
        one_turn(session)
        await store.close()
        return [event.encode() for event in session.events]

    return asyncio.run(build())


def more(backend: Backend, stored: int) -> list[bytes]:
    """What a later process commits: the load's own closers (``session/end-seed``) and a turn."""

    async def write() -> list[bytes]:
        store = SessionStore(backend)
        session = await store.load("live-1")
        before = stored
        session.append("turn/start", {"turn": 2})
        chunks(session, 6, "live")
        await store.close()
        return [event.encode() for event in session.events[before:]]

    return asyncio.run(write())


@pytest.mark.parametrize("kind", sorted(STORES))
def test_tail_prints_the_log_then_what_another_process_commits(tmp_path: Path, kind: str) -> None:
    make, spec = STORES[kind]
    stored = seed(make(tmp_path))
    command = [*HARNESS_CLI, "tail", "live-1", "--from", "2", "--json", "--store", spec(tmp_path)]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    child = ChildLines(process)
    try:
        assert child.until(len(stored) - 2) == stored[2:]
        added = more(make(tmp_path), len(stored))
        lines = child.until(len(stored) - 2 + len(added))
        assert lines == stored[2:] + added
        assert [json.loads(line)["seq"] for line in lines] == list(range(2, len(stored) + len(added)))
    finally:
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=30)
    assert process.returncode == 130, err


def test_tail_of_a_dsh_layout_store_says_it_cannot_follow(tmp_path: Path) -> None:
    from harness.stores.dsh_sqlite import DshSqliteBackend

    async def build() -> None:
        store = SessionStore(DshSqliteBackend(tmp_path / "dsh.sqlite"))
        session = await store.create(id="live-1", cwd="/work/project")
        one_turn(session)
        await store.close()

    asyncio.run(build())
    done = subprocess.run(
        [*HARNESS_CLI, "--store", f"sqlite:{tmp_path / 'dsh.sqlite'}", "tail", "live-1"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1
    assert "tail follows JSONL, harness SQLite and PostgreSQL sessions" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1

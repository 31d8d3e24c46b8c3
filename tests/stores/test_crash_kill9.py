"""Real crashes: a child process appends and flushes in a loop and is killed with SIGKILL.

After every kill the parent restores the session and checks the durability promise:
the stored log validates, it contains every event a returned flush covered, the
events committed before are unchanged (nothing is ever rewritten), and every event
is one the child really appended (its content is a function of its turn number).
The next child loads the session (committing repair closers) and goes on.

On PostgreSQL a killed writer's lease outlives it until its TTL runs out (the file backends'
locks die with their process): the next child loads with ``take_over=True``, which fences it
off at once, and one that must create the session again (its predecessor died before its
first write) waits for that lease to expire (``lease_ttl_s=1.0``).
"""

from __future__ import annotations

import asyncio
import os
import random
import select
import signal
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import harness
from harness.events.json import loads
from harness.stores.backend import Backend
from harness.stores.store import SessionStore
from tests.stores.faults.counts import COUNTS

KILLS = int(os.environ.get("HARNESS_CRASH_KILLS", "100"))
SESSION_ID = "crash-loop"


def jsonl_factory(compression: str) -> Callable[[Path], Backend]:
    def make(root: Path) -> Backend:
        from harness.stores.jsonl.backend import JsonlBackend

        return JsonlBackend(root, compression=compression)  # type: ignore[arg-type]

    return make


def sqlite_factory(root: Path) -> Backend:
    from harness.stores.sqlite import SqliteBackend

    return SqliteBackend(root / "sessions.db")


PG_LEASE_TTL_S = 1.0
"""How long a killed postgres writer's lease keeps its session (a ``create`` after it waits)."""
PG_SCHEMA: list[tuple[str, str]] = []
"""The PostgreSQL server and fresh schema of the running postgres loop (inherited by the forked writers)."""


def postgres_factory(root: Path) -> Backend:
    from harness.stores.postgres import PostgresBackend
    from tests.stores.pg import app_name

    dsn, schema = PG_SCHEMA[-1]
    return PostgresBackend(
        dsn, schema=schema, application_name=app_name(schema), min_size=1, lease_ttl_s=PG_LEASE_TTL_S
    )


BACKENDS: dict[str, Callable[[Path], Backend]] = {
    "jsonl-none": jsonl_factory("none"),
    "jsonl-zstd": jsonl_factory("zstd"),
    "sqlite": sqlite_factory,
    "postgres": postgres_factory,
}
PG_KILLS = min(KILLS, 50)
"""Kills of the postgres loop (each writer connects and migrates-checks first, so a kill costs more)."""


def append_turn(session: harness.Session, turn: int) -> None:
    """A deterministic turn: every payload is derived from ``turn``."""
    session.append("turn/start", {"turn": turn})
    session.append("step/start", {"turn": turn, "step": 1})
    session.append(
        "user/message", harness.user_message(f"turn {turn} asks", id=f"u-{turn}"), surface_op="append"
    )
    for index in range(3):
        session.append(
            "assistant/chunk",
            {
                "turn": turn,
                "step": 1,
                "chunk": {"type": "text-delta", "index": 0, "text": f"t{turn}.{index} "},
            },
        )
    reply = harness.assistant_message(f"turn {turn} answers " * 8, provider="p", model="m", id=f"a-{turn}")
    session.append("assistant/message", {"turn": turn, "step": 1, "message": reply}, surface_op="append")
    session.append("step/end", {"turn": turn, "step": 1})
    session.append("turn/end", {"turn": turn, "reason": {"kind": "completed"}})


def check_event(event: dict[str, Any]) -> None:
    """Each event must be one the child appended (or a closer/end-seed the store wrote)."""
    data = event["data"]
    kind = event["type"]
    if kind == "user/message":
        assert data["content"][0]["text"] == f"turn {data['id'][2:]} asks"
    elif kind == "assistant/message":
        turn = data["turn"]
        assert data["message"]["id"] == f"a-{turn}"
        assert data["message"]["content"][0]["text"] == f"turn {turn} answers " * 8
    elif kind == "assistant/chunk":
        assert data["chunk"]["text"].startswith(f"t{data['turn']}.")
    else:
        # a torn tail cut inside a batch ends mid-turn: the next load closes that turn and
        # records who it closed (``harness/repair``)
        assert kind in {
            "turn/start",
            "step/start",
            "step/end",
            "turn/end",
            "session/end-seed",
            "harness/repair",
        }, kind


TURNS_PER_RUN = 12


async def open_session(store: SessionStore, first_run: bool, *, leased: bool) -> harness.Session:
    """Create the session on the first run, else load it. ``leased`` (PostgreSQL): the killed
    writer's lease is live until its TTL runs out; a load takes it over, a create waits."""
    if not first_run:
        return await store.load(SESSION_ID, take_over=leased)
    while True:
        try:
            return await store.create(id=SESSION_ID)
        except harness.errors.SessionInUse:
            if not leased:
                raise  # a file backend's lock died with its process: nobody may own it now
            await asyncio.sleep(0.05)


def child(make: Callable[[Path], Backend], root: Path, write_fd: int, first_run: bool) -> None:
    async def main() -> None:
        store = SessionStore(make(root), write_window_s=0.001)
        session = await open_session(store, first_run, leased=make is postgres_factory)
        turn = sum(1 for e in session.events if e.type == "turn/start")
        os.write(write_fd, b"ready\n")
        for _ in range(TURNS_PER_RUN):
            turn += 1
            append_turn(session, turn)
            if turn % 2 == 0:
                await store.flush(session)
                os.write(write_fd, b"%d\n" % len(session.events))
            else:
                await asyncio.sleep(0.0005)  # let a background batch start
        await asyncio.sleep(60)  # wait for the kill

    try:
        asyncio.run(main())
    except BaseException:  # the parent sees the pipe close: say why on the test's stderr
        traceback.print_exc()
        sys.stderr.flush()
        os._exit(1)
    finally:
        os._exit(0)


def run_and_kill(make: Callable[[Path], Backend], root: Path, first_run: bool, rng: random.Random) -> int:
    """Fork a writer and SIGKILL it at a random point of its run; return the last flushed count.

    The kill comes after a random number of reported flushes plus a random sub-millisecond
    delay, so it lands before, during and after writes and fsyncs.
    """
    kill_after_flushes = rng.randint(0, TURNS_PER_RUN // 2)
    extra_delay = rng.uniform(0.0, 0.002)
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child never returns
        os.close(read_fd)
        child(make, root, write_fd, first_run)
    os.close(write_fd)
    buffer = b""
    flushed = 0
    flushes = 0
    deadline = time.monotonic() + 20.0
    kill_at: float | None = None
    try:
        while kill_at is None or time.monotonic() < kill_at:
            if time.monotonic() > deadline:
                raise AssertionError("the writer stalled")
            timeout = 0.05 if kill_at is None else max(0.0, kill_at - time.monotonic())
            ready, _, _ = select.select([read_fd], [], [], timeout)
            if not ready:
                continue
            chunk = os.read(read_fd, 65536)
            if not chunk:
                raise AssertionError("the writer exited before it was killed (its traceback is on stderr)")
            buffer += chunk
            *lines, buffer = buffer.split(b"\n")
            for line in lines:
                if line == b"ready":
                    if kill_after_flushes == 0:
                        kill_at = time.monotonic() + extra_delay
                else:
                    flushed = int(line)
                    flushes += 1
                    if flushes >= kill_after_flushes and kill_at is None:
                        kill_at = time.monotonic() + extra_delay
    finally:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        while True:  # what the writer reported before it died
            ready, _, _ = select.select([read_fd], [], [], 0)
            chunk = os.read(read_fd, 65536) if ready else b""
            if not chunk:
                break
            buffer += chunk
        os.close(read_fd)
    for line in buffer.split(b"\n"):
        if line and line != b"ready":
            flushed = int(line)
    return flushed


async def inspect(make: Callable[[Path], Backend], root: Path) -> harness.Session:
    store = SessionStore(make(root))
    try:
        return await store.inspect(SESSION_ID)
    finally:
        await store.close()


@pytest.fixture
def storage(backend: str) -> Iterator[None]:
    """The postgres loop gets a fresh schema on the test server (the test skips when it is down)."""
    from tests.stores.pg import fresh_schema, server_up

    if backend != "postgres" or not server_up():
        yield
        return

    for schema in fresh_schema():
        PG_SCHEMA.append((schema.dsn, schema.name))
        try:
            yield
        finally:
            PG_SCHEMA.remove((schema.dsn, schema.name))


@pytest.mark.parametrize("backend", sorted(BACKENDS))
def test_kill9_never_loses_a_flushed_event_nor_rewrites_one(
    backend: str, tmp_path: Path, storage: None
) -> None:
    if backend == "postgres":
        from tests.stores.pg import server_dsn

        server_dsn()  # skip (or, under CI=true, fail) when no server answers
    make = BACKENDS[backend]
    kills = PG_KILLS if backend == "postgres" else KILLS
    rng = random.Random(f"{backend}-{kills}")
    previous: list[dict[str, Any]] = []
    total_flushed = 0
    exists = False
    for kill in range(kills):
        flushed = run_and_kill(make, tmp_path, not exists, rng)
        COUNTS["kills"] += 1
        try:
            restored = asyncio.run(inspect(make, tmp_path))
        except harness.errors.SessionNotFound:
            # Killed before its first batch was published: nothing may exist yet.
            assert not exists and flushed == 0, f"kill {kill}: a flushed session vanished"
            continue
        exists = True
        stored = [loads(event.encode()) for event in restored.events][:-1]  # without the new end-seed
        assert len(stored) >= flushed, f"kill {kill}: {flushed} events were flushed, {len(stored)} restored"
        assert stored[: len(previous)] == previous, f"kill {kill}: committed events changed"
        for event in stored[len(previous) :]:
            check_event(event)
        # The next writer loads (committing any closers); what it keeps is the new baseline.
        previous = stored
        total_flushed = max(total_flushed, flushed)
    assert total_flushed > 0, "no flush ever returned: the loop did not exercise durability"

"""Many writers of one ``HarnessSession`` id, on a JSONL root, an SQLite file and PostgreSQL.

Real processes (``writer.py``), each with its own store, start at once and add items (one to
three per call): every item is stored exactly once, each writer's items in its order, and a
fresh store reads them all. Two processes popping at once never pop the same item. Threads
(each its own loop, one store or one store each) hold to the same. On today's main before
this change one process's items were lost and its ``HarnessSession`` stuck (issue 29).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.integrations.openai_agents import HarnessSession, item_payload
from harness.stores import open_store
from harness.stores.store import SessionStore

ROOT = Path(__file__).resolve().parents[3]
WRITERS = 3
ITEMS = 20


@pytest.fixture(params=["jsonl", "sqlite", "postgres"])
def spec(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "jsonl":
        yield f"jsonl:{tmp_path / 'root'}"
    elif request.param == "sqlite":
        yield f"sqlite:{tmp_path / 'sessions.db'}"
    else:
        from tests.stores.pg import fresh_schema

        for schema in fresh_schema():
            yield schema.spec


def spawn(spec: str, name: str, go: Path, *extra: str, count: int = ITEMS) -> subprocess.Popen[str]:
    args = [spec, "chat", name, str(count), str(go), *extra]
    return subprocess.Popen(
        [sys.executable, "-m", "tests.integrations.openai_agents.writer", *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def start(go: Path, names: list[str]) -> None:
    """Make ``go`` once every writer is ready (imported, its store open)."""
    deadline = time.monotonic() + 60
    while not all(go.with_name(f"{go.name}.{name}.ready").exists() for name in names):
        assert time.monotonic() < deadline, "the writers did not start"
        time.sleep(0.01)
    go.touch()


def finish(writers: list[subprocess.Popen[str]]) -> list[dict[str, Any]]:
    results = []
    for writer in writers:
        out, err = writer.communicate(timeout=180)
        assert writer.returncode == 0, err
        results.append(json.loads(out.strip().splitlines()[-1]))
    return results


async def stored_items(spec: str) -> list[Any]:
    async with open_store(spec) as store:
        return await HarnessSession("chat", store).get_items()


def texts(items: list[Any]) -> list[str]:
    return [item["content"] for item in items]


def check_each_once_in_order(stored: list[str], names: list[str], count: int) -> None:
    assert len(stored) == len(set(stored)) == len(names) * count
    for name in names:
        mine = [text for text in stored if text.startswith(f"{name}-")]
        assert mine == [f"{name}-{i}" for i in range(count)]


def test_processes_add_every_item_once_in_order(spec: str, tmp_path: Path) -> None:
    go = tmp_path / "go"
    names = [f"w{i}" for i in range(WRITERS)]
    writers = [spawn(spec, name, go) for name in names]
    start(go, names)
    results = finish(writers)
    stored = texts(asyncio.run(stored_items(spec)))
    check_each_once_in_order(stored, names, ITEMS)
    assert sorted(t for r in results for t in r["added"]) == sorted(stored)
    switches = sum(1 for a, b in itertools.pairwise(stored) if a.split("-")[0] != b.split("-")[0])
    kind = spec.split(":")[0]
    total = WRITERS * ITEMS
    print(f"\nopenai-agents many writers [{kind}]: {len(stored)} of {total} stored once, {switches} switches")


def test_two_processes_popping_never_pop_the_same_item(spec: str, tmp_path: Path) -> None:
    async def seed() -> None:
        async with open_store(spec) as store:
            await HarnessSession("chat", store).add_items(
                [{"role": "user", "content": f"s-{i}"} for i in range(10)]
            )

    asyncio.run(seed())
    go = tmp_path / "go"
    poppers = [spawn(spec, name, go, "pop", "3", count=0) for name in ("a", "b")]
    start(go, ["a", "b"])
    popped = [item["content"] for result in finish(poppers) for item in result["popped"]]
    assert sorted(popped) == [f"s-{i}" for i in range(4, 10)]  # six distinct items, the latest
    assert texts(asyncio.run(stored_items(spec))) == [f"s-{i}" for i in range(4)]


def test_threads_with_their_own_loops_on_one_store(tmp_path: Path) -> None:
    store = open_store(f"jsonl:{tmp_path / 'root'}")
    names = [f"t{i}" for i in range(WRITERS)]

    def write(name: str) -> None:
        session = HarnessSession("chat", store)
        for i in range(ITEMS):
            asyncio.run(session.add_items([{"role": "user", "content": f"{name}-{i}"}]))

    threads = [threading.Thread(target=write, args=(name,)) for name in names]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    asyncio.run(store.close())
    check_each_once_in_order(texts(asyncio.run(stored_items(f"jsonl:{tmp_path / 'root'}"))), names, ITEMS)


def test_threads_each_with_its_own_store(tmp_path: Path) -> None:
    spec = f"sqlite:{tmp_path / 'sessions.db'}"
    names = [f"t{i}" for i in range(WRITERS)]
    failures: list[BaseException] = []

    def write(name: str) -> None:
        async def go() -> None:
            async with open_store(spec) as store:
                session = HarnessSession("chat", store)
                for i in range(ITEMS):
                    await session.add_items([{"role": "user", "content": f"{name}-{i}"}])

        try:
            asyncio.run(go())
        except BaseException as error:  # reported by the test
            failures.append(error)

    threads = [threading.Thread(target=write, args=(name,)) for name in names]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures
    check_each_once_in_order(texts(asyncio.run(stored_items(spec))), names, ITEMS)


def test_a_held_session_makes_others_wait_then_refuse(tmp_path: Path) -> None:
    from harness.errors import SessionInUse

    async def go() -> list[str]:
        root = f"jsonl:{tmp_path / 'root'}"
        async with open_store(root) as first_store, open_store(root) as second_store:
            held = HarnessSession("chat", first_store, hold=True)
            await held.add_items([{"role": "user", "content": "a"}])
            other = HarnessSession("chat", second_store, wait=0.2)
            with pytest.raises(SessionInUse):
                await other.add_items([{"role": "user", "content": "lost?"}])
            waiting = asyncio.ensure_future(
                HarnessSession("chat", second_store, wait=10).add_items(
                    [{"role": "user", "content": "b"}]
                )
            )
            await asyncio.sleep(0.2)
            assert not waiting.done()
            await held.close()  # lets go: the waiting writer goes on
            await waiting
            return texts(await held.get_items())

    assert asyncio.run(go()) == ["a", "b"]


def test_the_store_is_never_stuck_after_a_conflict(tmp_path: Path) -> None:
    """A writer whose session another took over gets an error once, then goes on."""
    from harness.errors import StorageError

    async def go() -> list[str]:
        root = f"jsonl:{tmp_path / 'root'}"
        async with open_store(root) as first_store, open_store(root) as thief_store:
            held = HarnessSession("chat", first_store, hold=True)
            await held.add_items([{"role": "user", "content": "a"}])
            taken = await thief_store.load("chat", take_over=True)
            payload = item_payload({"role": "user", "content": "t"}, "m")
            taken.append(payload.type, payload.data, surface_op="append")
            await thief_store.release(taken)
            with pytest.raises(StorageError):
                await held.add_items([{"role": "user", "content": "fenced"}])
            await held.add_items([{"role": "user", "content": "b"}])
            return texts(await held.get_items())

    items = asyncio.run(go())
    assert items[0] == "a" and items[-1] == "b" and "fenced" not in items


def test_store_close_is_clean_after_every_call(tmp_path: Path) -> None:
    async def go() -> None:
        store = SessionStore(open_store(f"jsonl:{tmp_path / 'root'}").backend)
        session = HarnessSession("chat", store)
        await session.add_items([{"role": "user", "content": "a"}])
        await store.close()

    asyncio.run(go())

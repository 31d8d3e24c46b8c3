"""The index across real crashes: a child process indexes a store (a catch-up, or a rebuild)
and is killed with SIGKILL at a random moment, several times over a store that grows and is
compacted between the kills.

After every kill the index must open, and answer without catching up exactly what the query
layer answers over the indexed prefix of each session (stale, never wrong: no row of a
session past its cursor, none missing below it, every classification the one of that
prefix); after a catch-up it answers exactly what the query layer answers over the whole
store.
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from harness.compaction import compact_now
from harness.search import SearchIndex, open_search_index
from harness.stores.jsonl.backend import JsonlBackend
from harness.stores.store import SessionStore
from tests.compaction.helpers import Builder, FixedSummarizer
from tests.search.helpers import all_pages, brute, found

KILLS = int(os.environ.get("HARNESS_SEARCH_KILLS", "5"))
SESSIONS = 24
QUERIES = ("launch code", "marker 3", "o", "检查点")

CHILD = """
import asyncio, sys
from harness.search import open_search_index
from harness.stores.jsonl.backend import JsonlBackend
from harness.stores.store import SessionStore

async def main(root, mode):
    async with SessionStore(JsonlBackend(root, compression="none")) as store:
        async with open_search_index(store) as index:
            print("ready", flush=True)
            await (index.rebuild() if mode == "rebuild" else index.catch_up())
            print("done", flush=True)

asyncio.run(main(sys.argv[1], sys.argv[2]))
"""


def _store(root: Path) -> SessionStore:
    return SessionStore(JsonlBackend(root, compression="none"))


async def _grow(root: Path, rng: random.Random, round_: int) -> None:
    async with _store(root) as store:
        known = {info.id for info in await store.list()}
        for number in range(SESSIONS):
            sid = f"s{number:02d}"
            if sid in known and rng.random() < 0.5:
                continue
            session = await store.load(sid) if sid in known else await store.create(id=sid)
            builder = Builder(session)
            builder.headed = sid in known
            for turn in range(rng.randint(2, 6)):
                builder.closed_turn(
                    f"round {round_} marker {turn}: the launch code is {rng.randint(0, 99)} " * 4,
                    f"noted 检查点 {turn} " * 6,
                    tools=2,
                    output=f"out {turn} " * 40,
                )
            if rng.random() < 0.3:
                await compact_now(session, FixedSummarizer(f"## Summary\n- round {round_}"), retain_tokens=0)
            await store.flush(session)
            await store.release(session)


def _kill_mid_index(root: Path, mode: str, delay: float) -> int | None:
    """Run the child and kill it ``delay`` seconds after it is ready; its exit code."""
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(root), mode],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    assert child.stdout is not None
    assert child.stdout.readline().strip() == b"ready", child.stderr.read() if child.stderr else b""
    time.sleep(delay)
    os.kill(child.pid, signal.SIGKILL)  # its own pid: never a name
    child.wait(timeout=60)
    return child.returncode


async def _check_prefixes(root: Path, index: SearchIndex) -> tuple[int, int]:
    """Without catching up, the index answers as the query layer over each indexed prefix.
    Returns (sessions indexed to their end, sessions the store holds)."""
    async with _store(root) as store:
        infos = await store.list()
        sessions = {info.id: await store.inspect(info.id) for info in infos}
    states = await index.states()
    prefixes = []
    complete = 0
    for sid, state in states.items():
        events = list(sessions[sid].events[: state.cursor])
        assert len(events) == state.cursor
        prefixes.append((sid, events))
        complete += state.cursor == len(sessions[sid].events)
    for text in QUERIES:
        hits, _ = await all_pages(index, text, limit=200, catch_up=False)
        assert found(hits) == brute(prefixes, text), text
    return complete, len(sessions)


def test_a_killed_indexer_leaves_a_stale_index_never_a_wrong_one(tmp_path: Path) -> None:
    root = tmp_path / "root"
    rng = random.Random(int(os.environ.get("HARNESS_SEARCH_SEED", str(random.randrange(1 << 30)))))
    partial = 0
    for round_ in range(KILLS):
        asyncio.run(_grow(root, rng, round_))
        mode = "rebuild" if round_ % 3 == 2 else "catch-up"
        code = _kill_mid_index(root, mode, rng.uniform(0.05, 1.5))
        assert code in (-signal.SIGKILL, 0), code

        async def check() -> None:
            nonlocal partial
            async with _store(root) as store, open_search_index(store) as index:
                complete, total = await _check_prefixes(root, index)
                partial += complete < total
                sessions = [await store.inspect(info.id) for info in await store.list()]
                for text in QUERIES:
                    hits, _ = await all_pages(index, text, limit=200)  # catches up first
                    assert found(hits) == brute(sessions, text), text

        asyncio.run(check())
    assert partial, "no kill landed in the middle of an index run (raise HARNESS_SEARCH_KILLS)"

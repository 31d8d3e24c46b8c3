"""Restore paths compared in one process, interleaved, min of N rounds (issue 17).

For three JSONL logs (1.1 kB assistant messages, packed text chunks, unpacked text
chunks): the bare ``orjson.loads`` of the lines (the floor), ``restore_streamed`` over
the dict stream (``WireStream.lines`` unset: the path before the fast restore) and over
the fast path, and ``read_session_file`` against the exact pipeline it falls back to.

    .venv/bin/python bench/restore_paths.py [ROUNDS]
    .venv/bin/python bench/restore_paths.py --profile    # cProfile: Python calls per event
"""

from __future__ import annotations

import asyncio
import cProfile
import gc
import pstats
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import orjson

from core import chunk_data  # bench/ is on sys.path when run as a script
from harness.events.collector import collector_paused
from harness.stores.jsonl import JsonlBackend
from harness.stores.jsonl.reader import read_log_file, read_session_file
from harness.stores.store import SessionStore, restore_stored, restore_streamed
from storage import build_large


async def build_chunks(root: Path, count: int, pack: bool) -> str:
    store = SessionStore(JsonlBackend(root, "none", pack), write_window_s=3600)
    session = await store.create()
    for _ in range(count // 1000):
        for index in range(1000):
            session.append("assistant/chunk", chunk_data(index))
        await store.flush(session)
    await store.close()
    return session.id


def streamed(root: Path, session_id: str, fast: bool) -> float:
    async def go() -> float:
        log = await JsonlBackend(root, "none").read(session_id)
        assert log.stream is not None
        if not fast:
            log.stream.lines = None
        gc.collect()
        start = time.perf_counter()
        restored = restore_streamed(session_id, log)
        elapsed = time.perf_counter() - start
        assert restored is not None
        return elapsed

    return asyncio.run(go())


def read_file(path: str, fast: bool) -> float:
    gc.collect()
    start = time.perf_counter()
    if fast:
        read_session_file(path)
    else:
        scan = read_log_file(path)
        restore_stored(scan.header.id, scan.stored_log())
    return time.perf_counter() - start


def floor(path: str) -> float:
    lines = Path(path).read_bytes().split(b"\n")[1:-1]
    gc.collect()
    with collector_paused():
        start = time.perf_counter()
        decoded = [orjson.loads(line) for line in lines]
        elapsed = time.perf_counter() - start
    del decoded
    return elapsed


def profile(name: str, root: Path, session_id: str) -> None:
    """Python-level calls per restored event of each path (cProfile; repeatable under load)."""
    (found,) = root.rglob("session.jsonl")
    path = str(found)
    events = len(read_session_file(path).events)
    print(f"{name}: {events} events, Python calls per event (cProfile)")
    for key, run in (
        ("inspect old", lambda: streamed(root, session_id, False)),
        ("inspect new", lambda: streamed(root, session_id, True)),
        ("read_file old", lambda: read_file(path, False)),
        ("read_file new", lambda: read_file(path, True)),
    ):
        profiler = cProfile.Profile()
        profiler.enable()
        run()
        profiler.disable()
        print(f"   {key:14s} {pstats.Stats(profiler).total_calls / events:6.1f}")


def compare(name: str, root: Path, session_id: str, rounds: int) -> None:
    (found,) = root.rglob("session.jsonl")
    path = str(found)
    measures: dict[str, Callable[[], float]] = {
        "floor": lambda: floor(path),
        "inspect old": lambda: streamed(root, session_id, False),
        "inspect new": lambda: streamed(root, session_id, True),
        "read_file old": lambda: read_file(path, False),
        "read_file new": lambda: read_file(path, True),
    }
    best = dict.fromkeys(measures, float("inf"))
    for _ in range(rounds):
        for key, measure in measures.items():
            best[key] = min(best[key], measure())
    lowest = best.pop("floor")
    size = found.stat().st_size / 1e6
    print(f"{name}: {size:.1f} MB; floor (orjson.loads of the lines) {lowest * 1e3:.1f} ms")
    for key, seconds in best.items():
        print(f"   {key:14s} {seconds * 1e3:8.1f} ms  floor/time {lowest / seconds:.2f}x")


def main() -> None:
    profiling = "--profile" in sys.argv[1:]
    numbers = [arg for arg in sys.argv[1:] if arg != "--profile"]
    rounds = int(numbers[0]) if numbers else 5

    def run(name: str, root: Path, session_id: str) -> None:
        if profiling:
            profile(name, root, session_id)
        else:
            compare(name, root, session_id, rounds)

    base = Path(tempfile.mkdtemp(prefix="restore-paths-"))
    try:
        messages, _ = asyncio.run(build_large(lambda r: JsonlBackend(r, "none"), base / "messages", 10.0))
        run("messages (1.1 kB assistant/message)", base / "messages", messages)
        packed = asyncio.run(build_chunks(base / "packed", 50_000, True))
        run("text chunks, packed rows", base / "packed", packed)
        unpacked = asyncio.run(build_chunks(base / "unpacked", 50_000, False))
        run("text chunks, one line each", base / "unpacked", unpacked)
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()

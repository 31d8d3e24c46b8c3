"""Benchmarks of durable storage (issue: Durable storage).

For each backend (JSONL plain, JSONL zstd, SQLite) this prints, in one run:

* durable throughput through ``SessionStore`` with a flush every 1, 10 and 100
  events, next to the floor: a bare loop writing the same lines to a file with
  one fsync per batch;
* restore throughput (``SessionStore.inspect``: read, decode, full validation) of
  a generated session of about 100 MB, next to the floor (read + decode of the
  same lines), and the peak memory of a restore relative to the file size;
* the stored size against the sum of the events' wire sizes.

Nothing is asserted. Targets (issue): JSONL ≥ 150k events/s and SQLite ≥ 100k
events/s at one flush per 100 events; restore ≥ 150 MB/s with peak memory ≤ 2×
the file size; storage linear in events.

Run: ``.venv/bin/python bench/storage.py [--restore-mb 100] [--quick]``.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import harness
from core import message_data  # bench/ is on sys.path when run as a script
from harness.events.json import loads
from harness.stores.backend import Backend
from harness.stores.jsonl.backend import JsonlBackend
from harness.stores.sqlite import SqliteBackend
from harness.stores.store import SessionStore

BACKENDS: dict[str, Callable[[Path], Backend]] = {
    "jsonl": lambda root: JsonlBackend(root / "jsonl", compression="none"),
    "jsonl-zstd": lambda root: JsonlBackend(root / "zstd", compression="zstd"),
    "sqlite": lambda root: SqliteBackend(root / "sessions.db"),
}


def chunk(index: int) -> dict[str, Any]:
    return {"turn": 1, "step": 1, "chunk": {"type": "text-delta", "index": 0, "text": f"word{index} "}}


def write_floor(path: Path, lines: list[bytes], every: int) -> float:
    """Events/s of a bare append + fsync loop over the same lines."""
    start = time.perf_counter()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        for offset in range(0, len(lines), every):
            os.write(fd, b"".join(line + b"\n" for line in lines[offset : offset + every]))
            os.fsync(fd)
    finally:
        os.close(fd)
    return len(lines) / (time.perf_counter() - start)


async def durable_rate(
    make: Callable[[Path], Backend], root: Path, count: int, every: int
) -> tuple[float, int]:
    store = SessionStore(make(root), write_window_s=3600)
    session = await store.create()
    # A realistic mix: mostly small chunks, one larger message every 20 events.
    start = time.perf_counter()
    for index in range(count):
        if index % 20 == 19:
            session.append(
                "assistant/message", message_data(index), surface_op="append", source_event_seqs=[]
            )
        else:
            session.append("assistant/chunk", chunk(index))
        if (index + 1) % every == 0:
            await store.flush(session)
    await store.flush(session)
    elapsed = time.perf_counter() - start
    wire = sum(len(event.encode()) + 1 for event in session.events)
    await store.close()
    return count / elapsed, wire


def tree_size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


async def build_large(make: Callable[[Path], Backend], root: Path, megabytes: float) -> tuple[str, int]:
    store = SessionStore(make(root), write_window_s=3600)
    session = await store.create()
    size = 0
    index = 0
    while size < megabytes * 1e6:
        for _ in range(1000):
            event = session.append(
                "assistant/message", message_data(index), surface_op="append", source_event_seqs=[]
            )
            size += len(event.encode()) + 1
            index += 1
        await store.flush(session)
    await store.close()
    return session.id, size


async def restore_seconds(make: Callable[[Path], Backend], root: Path, session_id: str) -> float:
    store = SessionStore(make(root))
    gc.collect()
    start = time.perf_counter()
    restored = await store.inspect(session_id)
    elapsed = time.perf_counter() - start
    assert len(restored.events) > 1
    await store.close()
    return elapsed


async def restore_peak(make: Callable[[Path], Backend], root: Path, session_id: str) -> int:
    store = SessionStore(make(root))
    gc.collect()
    tracemalloc.start()
    restored = await store.inspect(session_id)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del restored
    await store.close()
    return peak


def decode_floor(lines: list[bytes]) -> float:
    start = time.perf_counter()
    for line in lines:
        loads(line)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--restore-mb", type=float, default=100.0, help="size of the restore session")
    parser.add_argument("--quick", action="store_true", help="fewer events (a smoke run)")
    args = parser.parse_args()
    scale = 10 if args.quick else 1

    with tempfile.TemporaryDirectory(prefix="harness-bench-") as tmp:
        base = Path(tmp)
        sample = harness.Session.create()
        for index in range(100_000 // scale):
            if index % 20 == 19:
                sample.append(
                    "assistant/message", message_data(index), surface_op="append", source_event_seqs=[]
                )
            else:
                sample.append("assistant/chunk", chunk(index))
        lines = [event.encode() for event in sample.events]

        print("durable throughput through SessionStore (events/s; floor = bare write + fsync per batch)")
        for every, count in ((1, 5_000 // scale), (10, 30_000 // scale), (100, 100_000 // scale)):
            floor = write_floor(base / f"floor-{every}.jsonl", lines[:count], every)
            row = [f"  flush every {every:>3}: floor {floor:>9,.0f}"]
            for name, make in BACKENDS.items():
                rate, wire = asyncio.run(durable_rate(make, base / f"{name}-{every}", count, every))
                row.append(f"{name} {rate:>9,.0f} ({rate / floor:.2f}×)")
                if every == 100:
                    stored = tree_size(base / f"{name}-{every}")
                    row.append(f"size {stored / wire:.2f}× wire")
            print("   ".join(row))

        print(f"restore of a ~{args.restore_mb:.0f} MB session (inspect: read, decode, validate)")
        for name, make in BACKENDS.items():
            root = base / f"restore-{name}"
            session_id, wire = asyncio.run(build_large(make, root, args.restore_mb / scale))
            stored = tree_size(root)
            seconds = min(asyncio.run(restore_seconds(make, root, session_id)) for _ in range(2))
            peak = asyncio.run(restore_peak(make, root, session_id))
            print(
                f"  {name:<10} {wire / 1e6 / seconds:>6.0f} MB/s of events ({stored / 1e6:.1f} MB stored, "
                f"{stored / wire:.2f}× wire); peak memory {peak / stored:.2f}× the stored size, "
                f"{peak / wire:.2f}× the wire size"
            )
        (raw_log,) = (base / "restore-jsonl").rglob("session.jsonl")
        start = time.perf_counter()
        raw_lines = raw_log.read_bytes().split(b"\n")[1:-1]
        seconds = decode_floor(raw_lines) + (time.perf_counter() - start)
        size = raw_log.stat().st_size
        print(f"  floor: read + bare decode of the plain file {size / 1e6 / seconds:.0f} MB/s")


if __name__ == "__main__":
    main()

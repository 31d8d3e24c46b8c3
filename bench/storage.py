"""Benchmarks of durable storage (issue: Durable storage).

For each backend (JSONL plain, JSONL zstd, SQLite, and PostgreSQL when a server
answers) this prints, in one run:

* durable throughput through ``SessionStore`` with a flush every 1, 10 and 100
  events, next to the floor: a bare loop writing the same lines to a file with
  one fdatasync per batch (the call the JSONL backend makes). Each figure is the
  median of ``--repeats`` runs (3), with the slowest and fastest in brackets:
  these machines are shared and one run can be 15% off;
* restore throughput (``SessionStore.inspect``: read, decode, full validation) of
  a generated session of about 100 MB, next to the floor (read + decode of the
  same lines), and the peak memory of a restore relative to the file size;
* the stored size against the sum of the events' wire sizes.

Nothing is asserted. Targets (issue): JSONL ≥ 150k events/s and SQLite ≥ 100k
events/s at one flush per 100 events; restore ≥ 150 MB/s with peak memory ≤ 2×
the file size; storage linear in events. PostgreSQL (its issue): ≥ 40k events/s
at one flush per 100 events from one writer, restore ≥ 100 MB/s. Its rows run on
``HARNESS_DATABASE_URL`` when set, else on the local test server
(``postgresql://root@127.0.0.1:5432/test``, then as ``postgres``), each in a fresh
schema dropped afterwards; its "stored" size is the tables' and indexes' size on
the server. ``--no-postgres`` leaves it out.

Run: ``.venv/bin/python bench/storage.py [--restore-mb 100] [--repeats 3] [--quick] [--no-postgres]``.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import hashlib
import os
import statistics
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
PG_CANDIDATES = ("postgresql://root@127.0.0.1:5432/test", "postgresql://postgres@127.0.0.1:5432/test")


class Postgres:
    """The PostgreSQL rows: one fresh schema per bench root, all dropped at the end."""

    def __init__(self, dsn: str) -> None:
        self.dsn = dsn
        self.prefix = "bench_"
        self.schemas: set[str] = set()

    @staticmethod
    def find() -> Postgres | None:
        """The server to bench on, or ``None`` (with a note) when none answers."""
        import psycopg

        explicit = os.environ.get("HARNESS_DATABASE_URL")
        for dsn in (explicit,) if explicit else PG_CANDIDATES:
            try:
                with psycopg.connect(dsn, connect_timeout=3) as conn:
                    conn.execute("SELECT 1")
                return Postgres(dsn)
            except psycopg.Error:
                continue
        print("(no PostgreSQL server answers: its rows are left out)")
        return None

    def schema(self, root: Path) -> str:
        name = self.prefix + hashlib.sha1(str(root).encode()).hexdigest()[:12]
        self.schemas.add(name)
        return name

    def make(self, root: Path) -> Backend:
        from harness.stores.postgres import PostgresBackend

        return PostgresBackend(self.dsn, schema=self.schema(root))

    def size(self, root: Path) -> int:
        """Bytes of the schema's tables, with their indexes and TOAST."""
        import psycopg

        with psycopg.connect(self.dsn, autocommit=True) as conn:
            row = conn.execute(
                "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class AS c "
                "JOIN pg_namespace AS n ON n.oid = c.relnamespace WHERE n.nspname = %s AND c.relkind = 'r'",
                (self.schema(root),),
            ).fetchone()
        return int(row[0]) if row else 0

    def drop(self) -> None:
        import psycopg
        from psycopg import sql

        with psycopg.connect(self.dsn, autocommit=True) as conn:
            for name in sorted(self.schemas):
                conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(name)))


def chunk(index: int) -> dict[str, Any]:
    return {"turn": 1, "step": 1, "chunk": {"type": "text-delta", "index": 0, "text": f"word{index} "}}


def write_floor(path: Path, lines: list[bytes], every: int) -> float:
    """Events/s of a bare append + fdatasync loop over the same lines."""
    start = time.perf_counter()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        for offset in range(0, len(lines), every):
            os.write(fd, b"".join(line + b"\n" for line in lines[offset : offset + every]))
            os.fdatasync(fd)
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
    parser.add_argument("--repeats", type=int, default=3, help="runs per throughput figure (median shown)")
    parser.add_argument("--quick", action="store_true", help="fewer events (a smoke run)")
    parser.add_argument("--no-postgres", action="store_true", help="leave the PostgreSQL rows out")
    args = parser.parse_args()
    scale = 10 if args.quick else 1
    backends = dict(BACKENDS)
    sizes: dict[str, Callable[[Path], int]] = dict.fromkeys(BACKENDS, tree_size)
    postgres = None if args.no_postgres else Postgres.find()
    if postgres is not None:
        backends["postgres"] = postgres.make
        sizes["postgres"] = postgres.size
    try:
        run_all(args.restore_mb, scale, backends, sizes, max(1, args.repeats))
    finally:
        if postgres is not None:
            postgres.drop()


def run_all(
    restore_mb: float,
    scale: int,
    backends: dict[str, Callable[[Path], Backend]],
    sizes: dict[str, Callable[[Path], int]],
    repeats: int = 3,
) -> None:
    """Print every row (see the module docs)."""

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

        print(
            f"durable throughput through SessionStore (events/s, median of {repeats} runs "
            "[slowest-fastest]; floor = bare write + fdatasync per batch)"
        )
        for every, count in ((1, 5_000 // scale), (10, 30_000 // scale), (100, 100_000 // scale)):
            floors = sorted(
                write_floor(base / f"floor-{every}-{attempt}.jsonl", lines[:count], every)
                for attempt in range(repeats)
            )
            floor = statistics.median(floors)
            row = [f"  flush every {every:>3}: floor {floor:>9,.0f}"]
            for name, make in backends.items():
                runs = [
                    asyncio.run(durable_rate(make, base / f"{name}-{every}-{attempt}", count, every))
                    for attempt in range(repeats)
                ]
                rates = sorted(rate for rate, _ in runs)
                rate = statistics.median(rates)
                spread = f" [{rates[0]:,.0f}-{rates[-1]:,.0f}]" if repeats > 1 else ""
                row.append(f"{name} {rate:>9,.0f}{spread} ({rate / floor:.2f}×)")
                if every == 100:
                    stored = sizes[name](base / f"{name}-{every}-0")
                    row.append(f"size {stored / runs[0][1]:.2f}× wire")
            print("   ".join(row))

        print(f"restore of a ~{restore_mb / scale:.0f} MB session (inspect: read, decode, validate)")
        for name, make in backends.items():
            root = base / f"restore-{name}"
            session_id, wire = asyncio.run(build_large(make, root, restore_mb / scale))
            stored = sizes[name](root)
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

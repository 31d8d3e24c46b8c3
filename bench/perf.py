"""The performance targets of issue 17, every row next to its floor, measured in one run.

Each row prints our figure, the floor (or peer) measured in the same process a moment
before, their ratio and the issue's target for that ratio. Nothing is asserted:
machines are shared and noisy; compare ratios of one run, not absolute figures.

Rows (the issue's table, in its order):

* ``append``: ``Session.append`` of a ~900-byte assistant/message event against
  orjson dumps+loads of the same data (``core.bench_append``, batches of 1,000 interleaved
  with the floor's); the median of the batches' time / floor ratios, ≤ 2×;
* ``jsonl_100`` / ``sqlite_100``: durable events/s through ``SessionStore`` with one
  flush per 100 events (``storage.durable_rate``) against a bare write + fdatasync per
  100 of the same lines (``storage.write_floor``); ours / floor, ≥ 0.5× / ≥ 0.35×;
* ``postgres_100``: the same through ``PostgresBackend`` against bare psycopg inserting
  the same lines as rows ``(session_key, seq, line)`` with ``COPY``, one
  transaction per 100 (the fastest bare way); ours / floor, ≥ 0.5×. On the shared server at
  ``postgresql://root@127.0.0.1:5432/test`` (or ``HARNESS_DATABASE_URL``), in fresh
  schemas dropped at the end;
* ``openai_100``: ``HarnessSession.add_items`` (JSONL) with 100 items per call against
  the OpenAI Agents SDK's ``SQLiteSession`` (``peers.openai_batched`` and
  ``agents_session.batched_times``); their time / ours, ≥ 3×. Left out when the
  ``[bench]`` extra is not installed;
* ``restore_inspect`` / ``restore_read_file``: ``SessionStore.inspect`` and
  ``read_session_file`` of a JSONL session of message events against a bare
  ``orjson.loads`` of each of the file's lines (already in memory, with the cyclic
  collector paused as restore pauses it); decode time / restore time, ≥ 1.5×;
* ``restore_sqlite`` / ``restore_postgres``: ``inspect`` on those backends against
  ``inspect`` on JSONL of the same events; JSONL time / theirs, ≥ 0.9×;
* ``restore_peak``: tracemalloc's peak during a JSONL ``inspect`` / the file size, ≤ 1.3×;
* ``live_1000``: 1,000 live sessions on one JSONL store, each appending 100 events
  then all flushed together, round after round: aggregate events/s against one
  session doing the same (``jsonl_100``'s figure); ≥ 0.8×;
* ``list_10000``: ``SessionStore.list()`` of 10,000 stored JSONL sessions, and the
  same at 1,000: time(10k) / (10 × time(1k)) shows linearity (≈ 1×); the figure is printed.

``--profile`` prints instead the cProfile of ``Session.append`` and of the JSONL write path
(append, flush per 100) for message events, with Python-level calls per event, and the
cost of each step of one append next to the floor (see docs/performance.md).
``--quick`` divides the sizes by 10 (sessions too: ``live_100`` and ``list_1000``);
``--json PATH`` also writes every row (value, floor, ratio, target) for a script to
compare across commits (``-`` for stdout; ``bench/perf_compare.py`` puts several side by
side); ``--only a,b`` runs the named rows.

Run: ``.venv/bin/python bench/perf.py [--quick] [--json out.json] [--no-postgres] [--only ROWS] [--profile]``.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import orjson

import harness
from core import bench_append, message_data  # bench/ is on sys.path when run as a script
from harness.events.collector import collector_paused
from harness.events.json import ACCELERATED
from harness.stores.backend import Backend
from harness.stores.jsonl.reader import read_session_file
from harness.stores.store import SessionStore
from storage import (
    BACKENDS,
    Postgres,
    build_large,
    chunk,
    durable_rate,
    restore_peak,
    restore_seconds,
    write_floor,
)

ROWS = (
    "append",
    "jsonl_100",
    "sqlite_100",
    "postgres_100",
    "openai_100",
    "restore",
    "live",
    "list",
)


@dataclass
class Row:
    """One printed row: ``ratio`` is what the target bounds (``≥`` or ``≤``)."""

    name: str
    measure: str
    value: float
    unit: str
    floor: float
    floor_name: str
    ratio: float
    target: str

    def met(self) -> bool:
        op, bound = self.target.split(" ")
        limit = float(bound.rstrip("×"))
        return self.ratio >= limit if op == "≥" else self.ratio <= limit

    def line(self) -> str:
        mark = "ok " if self.met() else "MISS"
        return (
            f"{mark} {self.measure:<58} {self.value:>12,.2f} {self.unit:<9} "
            f"{self.floor_name} {self.floor:,.2f}  → {self.ratio:.2f}×  [target {self.target}]"
        )


@dataclass
class Sizes:
    append_batches: int = 30
    durable: int = 100_000  # events per durable-throughput run
    repeats: int = 3
    restore_mb: float = 100.0
    openai_batches: int = 200
    live_sessions: int = 1_000
    live_rounds: int = 3
    list_sessions: int = 10_000

    @staticmethod
    def make(quick: bool) -> Sizes:
        if not quick:
            return Sizes()
        return Sizes(10, 10_000, 1, 10.0, 20, 100, 3, 1_000)


def report(rows: list[Row], row: Row) -> None:
    rows.append(row)
    print(row.line(), flush=True)


def mixed_lines(count: int) -> list[bytes]:
    """The wire lines of ``storage.durable_rate``'s mix (a message every 20 events, else chunks)."""
    sample = harness.Session.create()
    for index in range(count):
        if index % 20 == 19:
            sample.append("assistant/message", message_data(index), surface_op="append", source_event_seqs=[])
        else:
            sample.append("assistant/chunk", chunk(index))
    return [event.encode() for event in sample.events]


def median_of(runs: int, measure: Callable[[int], float]) -> float:
    return statistics.median(measure(attempt) for attempt in range(runs))


def durable_median(make: Callable[[Path], Backend], root: Path, sizes: Sizes) -> float:
    """Median events/s of ``storage.durable_rate`` at one flush per 100 events."""
    return median_of(
        sizes.repeats,
        lambda attempt: asyncio.run(durable_rate(make, root / str(attempt), sizes.durable, 100))[0],
    )


# ----------------------------------------------------------------------------------------- rows


def append_row(rows: list[Row], sizes: Sizes) -> None:
    figures = bench_append(batches=sizes.append_batches)
    ours, floor = figures["append_message_us"], figures["orjson_floor_us"]
    ratio = figures["message_over_floor"]  # the median of the interleaved batches' ratios
    report(
        rows,
        Row(
            "append",
            f"append, {figures['message_line_bytes']:.0f} B message line (µs/event)",
            ours,
            "µs",
            floor,
            "orjson dumps+loads",
            ratio,
            "≤ 2×",
        ),
    )


def durable_row(
    rows: list[Row], base: Path, name: str, make: Callable[[Path], Backend], sizes: Sizes, target: str
) -> float:
    lines = mixed_lines(sizes.durable)
    floor = median_of(
        sizes.repeats, lambda attempt: write_floor(base / f"floor-{name}-{attempt}.jsonl", lines, 100)
    )
    ours = durable_median(make, base / name, sizes)
    report(
        rows,
        Row(
            f"{name}_100",
            f"durable {name}, 100 events per flush (events/s)",
            ours,
            "events/s",
            floor,
            "write+fdatasync",
            ours / floor,
            target,
        ),
    )
    return ours


def psycopg_floor(dsn: str, schema: str, lines: list[bytes]) -> float:
    """Events/s of bare psycopg writing ``lines`` as event rows (COPY), one transaction per 100."""
    import psycopg
    from psycopg import sql

    texts = [line.decode() for line in lines]
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
        conn.execute(
            sql.SQL(
                "CREATE TABLE {}.events (session_key bigint NOT NULL, seq bigint NOT NULL, "
                "line text NOT NULL, PRIMARY KEY (session_key, seq))"
            ).format(sql.Identifier(schema))
        )
        copy = sql.SQL("COPY {}.events (session_key, seq, line) FROM STDIN").format(sql.Identifier(schema))
        start = time.perf_counter()
        for offset in range(0, len(texts), 100):
            with conn.transaction(), conn.cursor() as cursor, cursor.copy(copy) as rows:
                for seq in range(offset, min(len(texts), offset + 100)):
                    rows.write_row((1, seq, texts[seq]))
        return len(texts) / (time.perf_counter() - start)


def postgres_row(rows: list[Row], base: Path, postgres: Postgres, sizes: Sizes) -> None:
    lines = mixed_lines(sizes.durable)
    floor = median_of(
        sizes.repeats,
        lambda attempt: psycopg_floor(postgres.dsn, postgres.schema(base / f"pg-floor-{attempt}"), lines),
    )
    ours = durable_median(postgres.make, base / "postgres", sizes)
    report(
        rows,
        Row(
            "postgres_100",
            "durable postgres, 100 events per flush (events/s)",
            ours,
            "events/s",
            floor,
            "bare psycopg",
            ours / floor,
            "≥ 0.5×",
        ),
    )


def openai_row(rows: list[Row], base: Path, sizes: Sizes) -> None:
    try:
        import agents  # noqa: F401
    except ImportError:
        print("(OpenAI Agents SDK not installed: pip install '.[bench]'; its row is left out)")
        return
    from agents_session import batched_times
    from peers import openai_batched, openai_item

    root = base / "openai"
    root.mkdir()
    theirs = statistics.median(asyncio.run(openai_batched(root, sizes.openai_batches)))
    gc.collect()
    ours = statistics.median(
        asyncio.run(batched_times(BACKENDS["jsonl"], root / "ours", openai_item, sizes.openai_batches))
    )
    report(
        rows,
        Row(
            "openai_100",
            "HarnessSession(jsonl) add_items, 100 per call (µs/item)",
            ours * 1e6,
            "µs",
            theirs * 1e6,
            "SQLiteSession",
            theirs / ours,
            "≥ 3×",
        ),
    )


def restore_rows(rows: list[Row], base: Path, sizes: Sizes, postgres: Postgres | None) -> None:
    root = base / "restore-jsonl"
    make = BACKENDS["jsonl"]
    session_id, _wire = asyncio.run(build_large(make, root, sizes.restore_mb))
    (log,) = root.rglob("session.jsonl")
    size = log.stat().st_size
    lines = log.read_bytes().split(b"\n")[:-1]

    def decode() -> float:
        gc.collect()
        with collector_paused():  # as restore runs: else the collector rescans the growing heap
            start = time.perf_counter()
            decoded = [orjson.loads(line) for line in lines]
            elapsed = time.perf_counter() - start
        del decoded
        return elapsed

    def read_file() -> float:
        gc.collect()
        start = time.perf_counter()
        session = read_session_file(str(log))
        elapsed = time.perf_counter() - start
        del session
        return elapsed

    floor = min(decode() for _ in range(2))
    inspect = min(asyncio.run(restore_seconds(make, root, session_id)) for _ in range(2))
    read = min(read_file() for _ in range(2))
    megabytes = size / 1e6
    for name, measure, seconds in (
        ("restore_inspect", "restore, SessionStore.inspect of JSONL (MB/s)", inspect),
        ("restore_read_file", "restore, read_session_file (MB/s)", read),
    ):
        report(
            rows,
            Row(
                name,
                measure,
                megabytes / seconds,
                "MB/s",
                megabytes / floor,
                "orjson decode",
                floor / seconds,
                "≥ 1.5×",
            ),
        )
    others: dict[str, Callable[[Path], Backend]] = {"sqlite": BACKENDS["sqlite"]}
    if postgres is not None:
        others["postgres"] = postgres.make
    for name, other in others.items():
        other_root = base / f"restore-{name}"
        other_id, _ = asyncio.run(build_large(other, other_root, sizes.restore_mb))
        seconds = min(asyncio.run(restore_seconds(other, other_root, other_id)) for _ in range(2))
        report(
            rows,
            Row(
                f"restore_{name}",
                f"restore, inspect of {name} (MB/s of JSONL file size)",
                megabytes / seconds,
                "MB/s",
                megabytes / inspect,
                "JSONL inspect",
                inspect / seconds,
                "≥ 0.9×",
            ),
        )
    peak = asyncio.run(restore_peak(make, root, session_id))
    report(
        rows,
        Row(
            "restore_peak",
            "restore, peak memory of a JSONL inspect (MB)",
            peak / 1e6,
            "MB",
            megabytes,
            "file MB",
            peak / size,
            "≤ 1.3×",
        ),
    )


async def live_rate(make: Callable[[Path], Backend], root: Path, sessions: int, rounds: int) -> float:
    """Aggregate events/s of ``sessions`` live sessions on one store, 100 events each per round."""
    store = SessionStore(make(root), write_window_s=3600)
    live = [await store.create() for _ in range(sessions)]
    for session in live:  # publish every session first: the rounds measure appends, not creation
        session.append("assistant/chunk", chunk(0))
    await asyncio.gather(*(store.flush(session) for session in live))
    payloads = [chunk(index) if index % 20 != 19 else message_data(index) for index in range(100)]
    start = time.perf_counter()
    for _ in range(rounds):
        for session in live:
            append = session.append
            for index, data in enumerate(payloads):
                if index % 20 == 19:
                    append("assistant/message", data, surface_op="append", source_event_seqs=[])
                else:
                    append("assistant/chunk", data)
        await asyncio.gather(*(store.flush(session) for session in live))
    elapsed = time.perf_counter() - start
    await store.close()
    return sessions * rounds * 100 / elapsed


def live_row(rows: list[Row], base: Path, sizes: Sizes, single: float | None) -> None:
    make = BACKENDS["jsonl"]
    if single is None:
        single = durable_median(make, base / "single", sizes)
    gc.collect()
    aggregate = asyncio.run(live_rate(make, base / "live", sizes.live_sessions, sizes.live_rounds))
    report(
        rows,
        Row(
            f"live_{sizes.live_sessions}",
            f"{sizes.live_sessions:,} live JSONL sessions, 100 per flush, aggregate (events/s)",
            aggregate,
            "events/s",
            single,
            "one session",
            aggregate / single,
            "≥ 0.8×",
        ),
    )


async def _stored_sessions(make: Callable[[Path], Backend], root: Path, count: int) -> None:
    async with SessionStore(make(root), write_window_s=3600) as store:
        for offset in range(0, count, 500):
            batch = [await store.create() for _ in range(min(500, count - offset))]
            for session in batch:
                session.append("assistant/chunk", chunk(0))
            await asyncio.gather(*(store.flush(session) for session in batch))
            for session in batch:
                await store.release(session)


async def _list_seconds(make: Callable[[Path], Backend], root: Path, count: int) -> float:
    best = float("inf")
    for _ in range(2):
        async with SessionStore(make(root)) as store:
            start = time.perf_counter()
            listed = await store.list()
            best = min(best, time.perf_counter() - start)
            assert len(listed) == count, (len(listed), count)
    return best


def list_row(rows: list[Row], base: Path, sizes: Sizes) -> None:
    make = BACKENDS["jsonl"]
    large, small = sizes.list_sessions, sizes.list_sessions // 10
    asyncio.run(_stored_sessions(make, base / "list-small", small))
    asyncio.run(_stored_sessions(make, base / "list-large", large))
    small_s = asyncio.run(_list_seconds(make, base / "list-small", small))
    large_s = asyncio.run(_list_seconds(make, base / "list-large", large))
    report(
        rows,
        Row(
            f"list_{large}",
            f"list() of {large:,} JSONL sessions (ms)",
            large_s * 1e3,
            "ms",
            10 * small_s * 1e3,
            f"10 × list of {small:,}",
            large_s / (10 * small_s),
            "≤ 1.3×",
        ),
    )


# ----------------------------------------------------------------------------------------- main


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="sizes divided by 10 (a smoke run)")
    parser.add_argument("--json", metavar="PATH", help="also write the rows as JSON ('-' for stdout)")
    parser.add_argument("--no-postgres", action="store_true", help="leave the PostgreSQL rows out")
    parser.add_argument(
        "--profile", action="store_true", help="print the write path's profiles instead of the rows"
    )
    parser.add_argument("--only", help=f"comma-separated rows to run, of: {', '.join(ROWS)}")
    args = parser.parse_args()
    only = set(args.only.split(",")) if args.only else set(ROWS)
    unknown = only - set(ROWS)
    if unknown:
        parser.error(f"unknown rows: {', '.join(sorted(unknown))}")
    sizes = Sizes.make(args.quick)
    if args.profile:
        from perf_profile import profile_write_path

        profile_write_path(2_000 if args.quick else 20_000)
        return
    print(
        f"{platform.node() or 'machine'}: {os.cpu_count()} cores, Python {platform.python_version()}"
        + f", C walk {'on' if ACCELERATED else 'off'}"
        + (" (--quick)" if args.quick else ""),
        flush=True,
    )
    postgres = None
    if not args.no_postgres and only & {"postgres_100", "restore"}:
        postgres = Postgres.find()
        if postgres is not None:
            postgres.prefix = "perf_"  # our own schemas on the shared server, dropped at the end
    rows: list[Row] = []
    try:
        with tempfile.TemporaryDirectory(prefix="harness-perf-") as tmp:
            base = Path(tmp)
            single = None
            if "append" in only:
                append_row(rows, sizes)
            if "jsonl_100" in only:
                single = durable_row(rows, base, "jsonl", BACKENDS["jsonl"], sizes, "≥ 0.5×")
            if "sqlite_100" in only:
                durable_row(rows, base, "sqlite", BACKENDS["sqlite"], sizes, "≥ 0.35×")
            if "postgres_100" in only and postgres is not None:
                postgres_row(rows, base, postgres, sizes)
            if "openai_100" in only:
                openai_row(rows, base, sizes)
            if "restore" in only:
                restore_rows(rows, base, sizes, postgres)
            if "live" in only:
                live_row(rows, base, sizes, single)
            if "list" in only:
                list_row(rows, base, sizes)
    finally:
        if postgres is not None:
            postgres.drop()
    if args.json:
        out: dict[str, Any] = {
            "python": platform.python_version(),
            "cores": os.cpu_count(),
            "accelerated": ACCELERATED,
            "commit": _commit(),
            "quick": args.quick,
            "rows": {row.name: {**asdict(row), "met": row.met()} for row in rows},
        }
        text = json.dumps(out, indent=2, ensure_ascii=False)
        if args.json == "-":
            sys.stdout.write(text + "\n")
        else:
            Path(args.json).write_text(text + "\n")


def _commit() -> str | None:
    """The checkout's commit (None outside a git checkout, e.g. a ``git archive`` tree)."""
    import subprocess

    try:
        done = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=Path(__file__).parent,
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except OSError:
        return None
    return done.stdout.strip() or None if done.returncode == 0 else None


if __name__ == "__main__":
    main()

"""The store's share of the durable rows (``jsonl_100``, ``sqlite_100``): docs/performance.md.

For the mix ``storage.durable_rate`` writes (a message every 20 events, else text chunks),
one flush per 100 events:

* cProfile Python-level calls per event through ``SessionStore``, minus those of a bare
  ``Session.append`` of the same events: what the write path (observer, queue, drain,
  backend append, packing, hand-off) costs per event, in calls;
* µs per event spent appending and spent in ``flush`` (min of ``--rounds`` runs), next to a
  bare write + fdatasync of the same lines per 100 (the rows' floor).

Compare trees by running it with ``PYTHONPATH=<other tree>/src``.

Run: ``.venv/bin/python bench/write_path.py [--events 10000] [--rounds 5] [--backends jsonl,sqlite]``.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import pstats
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import harness
from core import message_data  # bench/ is on sys.path when run as a script
from harness.session.session import Session
from harness.stores.store import SessionStore
from storage import BACKENDS, chunk, write_floor


def _mix(count: int) -> list[dict[str, Any]]:
    return [message_data(index) if index % 20 == 19 else chunk(index) for index in range(count)]


def _append_all(session: Session, payloads: list[dict[str, Any]]) -> Iterator[int]:
    for index, data in enumerate(payloads):
        if index % 20 == 19:
            session.append("assistant/message", data, surface_op="append", source_event_seqs=[])
        else:
            session.append("assistant/chunk", data)
        yield index


async def _through_store(
    name: str, root: Path, payloads: list[dict[str, Any]], profile: cProfile.Profile | None
) -> tuple[float, float]:
    store = SessionStore(BACKENDS[name](root), write_window_s=3600)
    session = await store.create()
    session.append("assistant/chunk", chunk(0))
    await store.flush(session)  # published: the figures are of appends to a live log
    appending = flushing = 0.0
    if profile is not None:
        profile.enable()
    mark = time.perf_counter()
    for index in _append_all(session, payloads):
        if index % 100 == 99:
            now = time.perf_counter()
            appending += now - mark
            await store.flush(session)
            mark = time.perf_counter()
            flushing += mark - now
    if profile is not None:
        profile.disable()
    await store.close()
    return appending / len(payloads) * 1e6, flushing / len(payloads) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--events", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--backends", default="jsonl,sqlite")
    args = parser.parse_args()
    payloads = _mix(args.events)
    print(f"harness from {harness.__file__}")
    bare = cProfile.Profile()
    bare.enable()
    for _ in _append_all(harness.Session.create(), payloads):
        pass
    bare.disable()
    bare_calls = pstats.Stats(bare).total_calls / args.events  # type: ignore[attr-defined]
    sample = harness.Session.create()
    for _ in _append_all(sample, payloads):
        pass
    lines = [event.encode() for event in sample.events]
    with tempfile.TemporaryDirectory(prefix="harness-write-path-") as tmp:
        base = Path(tmp)
        for name in args.backends.split(","):
            profile = cProfile.Profile()
            asyncio.run(_through_store(name, base / f"{name}-profile", payloads, profile))
            calls = pstats.Stats(profile).total_calls / args.events  # type: ignore[attr-defined]
            print(
                f"{name}: {calls:.2f} Python calls per event through the store, {bare_calls:.2f} in a bare "
                f"append: the write path {calls - bare_calls:.2f}"
            )
            best_append = best_flush = best_floor = float("inf")
            for attempt in range(args.rounds):  # interleaved with the floor, min of the rounds
                floor = write_floor(base / f"floor-{name}-{attempt}.jsonl", lines, 100)
                best_floor = min(best_floor, 1e6 / floor)
                appending, flushing = asyncio.run(
                    _through_store(name, base / f"{name}-{attempt}", payloads, None)
                )
                best_append, best_flush = min(best_append, appending), min(best_flush, flushing)
            print(
                f"{name}: µs per event (min of {args.rounds}): append {best_append:.2f}, "
                f"flush {best_flush:.2f}; floor (write + fdatasync per 100) {best_floor:.2f}"
            )


if __name__ == "__main__":
    main()

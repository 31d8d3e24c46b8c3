"""Benchmark of the full-text index (issue 13, targets: index build >= 0.3x the throughput of
``inspect`` of the same data; a search over 10x more indexed events costs < 2x the time).

Builds the agent-shaped session of ``bench/query.py`` (about ``--events`` events, compactions
and prunes included), plants a rare phrase in three events at its end, and stores it in a
plain JSONL root; a second root holds the session cut to a tenth (``--events / 10``, the
same three plants). Then prints, in one run:

* ``inspect`` of the big session (read, decode, full validation) and an index build of it
  from nothing (``rebuild``: read, classify with the query layer, semantic text, fold, FTS5
  trigram insert, one transaction): events per second and the ratio to ``inspect``;
* a search for the rare phrase (three hits) and for a common one (many candidates), on the
  small and the big index, without and with the catch-up check before it (``catch_up=True``
  stats every log file and finds nothing to do), on indexes opened once and warmed up, as a
  viewer keeps one; and the ratio big / small.

Each figure is the fastest of its runs, the runs of the things compared taking turns, so a
burst of load from other processes on a shared machine hits them alike.

Nothing is asserted (shared, noisy machines). Run:
``.venv/bin/python bench/search.py [--events N] [--repeats R] [--compact-every T]``.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import harness
from harness.search import open_search_index
from harness.stores.jsonl.backend import JsonlBackend
from harness.stores.store import SessionStore
from query import build_session  # bench/query.py: run this file as a script from the checkout

RARE = "quokka ledger 7741"
COMMON = "item_123"


def plant(session: harness.Session) -> None:
    """Three events holding the rare phrase, in a turn of their own."""
    session.append("turn/start", {"turn": 10_000})
    for number in range(3):
        session.append(
            "user/message", harness.user_message(f"note {number}: the {RARE} entry"), surface_op="append"
        )
    session.append("turn/end", {"turn": 10_000, "reason": {"kind": "completed"}})


def cut(session: harness.Session, length: int) -> harness.Session:
    """The session's first ``length`` events, closed cleanly, with the plants."""
    events = list(session.events[:length])
    while events and events[-1].type != "turn/end":
        events.pop()
    short = harness.Session.from_restore("bench-query", events, session.header)
    plant(short)
    return short


async def _store(root: Path, session: harness.Session) -> None:
    async with SessionStore(JsonlBackend(root, compression="none")) as store:
        await store.adopt(session)
        await store.flush(session)


def best_seconds(works: list[Callable[[], Awaitable[object]]], repeats: int) -> list[float]:
    """The fastest of ``repeats`` runs of each work, the works taking turns (so that a burst of
    load from other processes hits them alike); the garbage collector off while timing."""
    samples: list[list[float]] = [[] for _ in works]

    async def timed() -> None:
        for _ in range(repeats):
            for position, work in enumerate(works):
                gc.collect()
                gc.disable()
                try:
                    start = time.perf_counter()
                    await work()
                    samples[position].append(time.perf_counter() - start)
                finally:
                    gc.enable()

    asyncio.run(timed())
    return [min(times) for times in samples]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--compact-every", type=int, default=25)
    args = parser.parse_args()

    started = time.perf_counter()
    built = build_session(args.events, args.compact_every)
    small_session = cut(built, args.events // 10)
    plant(built)
    took = time.perf_counter() - started
    print(f"built {len(built.events):,} and {len(small_session.events):,} events in {took:.1f} s")
    with tempfile.TemporaryDirectory() as tmp:
        big, small = Path(tmp) / "big", Path(tmp) / "small"
        asyncio.run(_store(big, built))
        asyncio.run(_store(small, small_session))
        n = len(built.events)

        async def inspect() -> None:
            async with SessionStore(JsonlBackend(big, compression="none")) as store:
                await store.inspect(built.id)

        async def rebuild() -> None:
            async with (
                SessionStore(JsonlBackend(big, compression="none")) as store,
                open_search_index(store) as index,
            ):
                await index.rebuild()

        inspect_s, build_s = best_seconds([inspect, rebuild], args.repeats)
        asyncio.run(_rebuild_small(small))
        size = (big / ".harness-index.sqlite").stat().st_size

        print(f"\n{'':44} {'ms':>9} {'events/s':>12} {'vs inspect':>11}")
        print(
            f"{'inspect (read, decode, validate)':44} {inspect_s * 1e3:9.1f} {n / inspect_s:12,.0f} "
            f"{1.0:10.2f}x"
        )
        print(
            f"{'index build (rebuild from nothing)':44} {build_s * 1e3:9.1f} {n / build_s:12,.0f} "
            f"{inspect_s / build_s:10.2f}x"
        )
        print(f"index file: {size / 1e6:.1f} MB")
        print("target: index build >= 0.3x inspect (not asserted)\n")

        print(f"{'search (an open index, warm)':44} {'small ms':>9} {'big ms':>9} {'big/small':>10}  hits")
        asyncio.run(_searches(small, big, max(args.repeats, 5) * 4))
        print("target: a search over 10x more events < 2x the time (the rare phrase; not asserted)")


async def _searches(small: Path, big: Path, repeats: int) -> None:
    """Each query on the small and the big index, both open and warmed up, taking turns; the
    fastest of ``repeats`` runs each, without and with the catch-up check."""
    stores = [SessionStore(JsonlBackend(root, compression="none")) for root in (small, big)]
    indexes = [open_search_index(store) for store in stores]
    try:
        for text in (RARE, COMMON):
            for catch_up in (False, True):
                hits = [len((await index.search(text, catch_up=catch_up)).hits) for index in indexes]
                best = [float("inf"), float("inf")]
                for _ in range(repeats):
                    for position, index in enumerate(indexes):
                        gc.disable()
                        try:
                            start = time.perf_counter()
                            await index.search(text, limit=20, catch_up=catch_up)
                            best[position] = min(best[position], time.perf_counter() - start)
                        finally:
                            gc.enable()
                label = f"{text!r}" + (" + catch-up check" if catch_up else "")
                print(
                    f"{label:44} {best[0] * 1e3:9.2f} {best[1] * 1e3:9.2f} "
                    f"{best[1] / best[0]:9.2f}x  {hits[0]}/{hits[1]}"
                )
    finally:
        for index in indexes:
            await index.close()
        for store in stores:
            await store.close()


async def _rebuild_small(root: Path) -> None:
    store = SessionStore(JsonlBackend(root, compression="none"))
    async with store, open_search_index(store) as index:
        await index.rebuild()


if __name__ == "__main__":
    main()

"""``HarnessSession`` next to the OpenAI Agents SDK's ``SQLiteSession`` (rows of ``peers.py``).

The same items and the same calls as ``peers.openai_rows`` measures on ``SQLiteSession``: 1 item
per ``add_items`` call (each call durable when it returns: harness flushes, SQLite commits),
100 items per call, and ``get_items()`` of a large session read by a fresh store (ours loads,
validates and restores the log, then reads the Surface; theirs selects and decodes the rows).
Ratios are "their time / our time" (above 1: ours is faster). Needs ``[openai-agents]``.
"""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from harness.stores.backend import Backend
from harness.stores.store import SessionStore
from storage import BACKENDS

__all__ = ["batched_times", "harness_session_rows", "timed_batches"]


def _us(seconds: float) -> str:
    return f"{seconds * 1e6:,.1f} µs"


def _ratio(theirs: float, ours: float) -> str:
    return f"[{theirs / ours:,.2f}× ours]" if ours > 0 else ""


async def _single(make: Callable[[Path], Backend], root: Path, items: list[dict[str, Any]]) -> list[float]:
    from harness.integrations.openai_agents import HarnessSession

    async with SessionStore(make(root)) as store:
        session = HarnessSession("single", store)
        times = []
        for item in items:
            start = time.perf_counter()
            await session.add_items([item])
            times.append(time.perf_counter() - start)
    return times


async def batched_times(
    make: Callable[[Path], Backend], root: Path, item: Callable[[int], dict[str, Any]], batches: int
) -> list[float]:
    """Per-item times (one sample per call) of durable ``add_items`` with 100 items per call."""
    from harness.integrations.openai_agents import HarnessSession

    async with SessionStore(make(root)) as store:
        return await timed_batches(HarnessSession("batched", store).add_items, item, batches)


async def timed_batches(
    add_items: Callable[[list[dict[str, Any]]], Awaitable[object]],
    item: Callable[[int], dict[str, Any]],
    batches: int,
) -> list[float]:
    """Per-item times (one sample per call) of ``batches`` calls of ``add_items`` with 100 items."""
    times = []
    for batch in range(batches):
        chunk = [item(index) for index in range(batch * 100, batch * 100 + 100)]
        start = time.perf_counter()
        await add_items(chunk)
        times.append((time.perf_counter() - start) / 100)
    return times


async def _large(
    make: Callable[[Path], Backend], root: Path, item: Callable[[int], dict[str, Any]], count: int
) -> tuple[float, float]:
    """(get_items by a fresh store, best of 2; a second get_items on the live session)."""
    from harness.integrations.openai_agents import HarnessSession

    async with SessionStore(make(root)) as store:
        session = HarnessSession("large", store, durable=False)
        for offset in range(0, count, 1000):
            await session.add_items([item(index) for index in range(offset, min(count, offset + 1000))])
    cold = float("inf")
    warm = float("inf")
    for _ in range(2):
        gc.collect()
        async with SessionStore(make(root)) as store:
            reader = HarnessSession("large", store)
            start = time.perf_counter()
            got = await reader.get_items()
            cold = min(cold, time.perf_counter() - start)
            assert len(got) == count
            del got
            start = time.perf_counter()
            again = await reader.get_items()
            warm = min(warm, time.perf_counter() - start)
            del again
    return cold, warm


async def harness_session_rows(
    base: Path,
    item: Callable[[int], dict[str, Any]],
    steps: int,
    batches: int,
    large: int,
    theirs: dict[str, float],
) -> None:
    """Print our rows with ratios against ``theirs`` (``single``, ``batched``, ``get`` seconds)."""
    for name in ("jsonl", "sqlite"):
        make = BACKENDS[name]
        root = base / f"harness-session-{name}"
        root.mkdir()
        print(f"HarnessSession over SessionStore({name}), durable add_items:")
        single = statistics.median(await _single(make, root / "single", [item(i) for i in range(steps)]))
        print(
            f"  add_items, 1 per call ({steps:,} calls): median {_us(single)}/item  "
            f"{_ratio(theirs['single'], single)}"
        )
        gc.collect()
        batched = statistics.median(await batched_times(make, root / "batched", item, batches))
        print(
            f"  add_items, 100 per call ({batches * 100:,} items): median {_us(batched)}/item  "
            f"{_ratio(theirs['batched'], batched)}"
        )
        gc.collect()
        cold, warm = await _large(make, root / "large", item, large)
        print(
            f"  get_items() of {large:,} items by a fresh store: {cold:.3f} s  "
            f"{_ratio(theirs['get'], cold)}; again on the live session: {warm:.3f} s  "
            f"{_ratio(theirs['get'], warm)}"
        )

"""``HarnessSessionService`` next to Google ADK's ``DatabaseSessionService`` (rows of ``peers.py``).

The same events and the same calls as ``peers.adk_rows`` measures on ``DatabaseSessionService``
(``sqlite+aiosqlite``): ``append_event`` of each event into one session (each durable when it
returns: harness fsyncs or commits, SQLite commits), then ``get_session`` of all of them by a
fresh service on a fresh store (ours reads and validates the log and rebuilds every ADK event
from its kept JSON; theirs selects and decodes the rows). Ratios are "their time / our time"
(above 1: ours is faster). Needs ``[adk]``.
"""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness.stores.store import SessionStore
from storage import BACKENDS

__all__ = ["harness_service_rows"]


def _us(seconds: float) -> str:
    return f"{seconds * 1e6:,.1f} µs"


def _ratio(theirs: float, ours: float) -> str:
    return f"[{theirs / ours:,.2f}× ours]" if ours > 0 else ""


async def _appends(root: Path, name: str, event: Callable[[int], Any], count: int) -> list[float]:
    from harness.integrations.adk import HarnessSessionService

    async with SessionStore(BACKENDS[name](root)) as store:
        service = HarnessSessionService(store)
        session = await service.create_session(app_name="bench", user_id="user", session_id="bench")
        times = []
        for index in range(count):
            made = event(index)
            start = time.perf_counter()
            await service.append_event(session, made)
            times.append(time.perf_counter() - start)
        await service.close()
    return times


async def _get(root: Path, name: str, count: int) -> float:
    from harness.integrations.adk import HarnessSessionService

    best = float("inf")
    for _ in range(2):
        gc.collect()
        async with SessionStore(BACKENDS[name](root)) as store:
            service = HarnessSessionService(store)
            start = time.perf_counter()
            got = await service.get_session(app_name="bench", user_id="user", session_id="bench")
            best = min(best, time.perf_counter() - start)
            assert got is not None and len(got.events) == count
            del got
            await service.close()
    return best


async def harness_service_rows(
    base: Path, event: Callable[[int], Any], count: int, theirs: dict[str, float]
) -> None:
    """Print our rows with ratios against ``theirs`` (``append`` median and ``get`` seconds)."""
    for name in ("jsonl", "sqlite"):
        root = base / f"harness-adk-{name}"
        root.mkdir()
        times = await _appends(root, name, event, count)
        median = statistics.median(times)
        print(f"HarnessSessionService over SessionStore({name}):")
        print(
            f"  append_event, durable, {count:,} events in one session: median {_us(median)}, "
            f"mean {_us(statistics.mean(times))}  {_ratio(theirs['append'], median)}"
        )
        best = await _get(root, name, count)
        print(
            f"  get_session of {count:,} events by a fresh store: {best:.3f} s  {_ratio(theirs['get'], best)}"
        )

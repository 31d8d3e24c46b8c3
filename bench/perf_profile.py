"""The profiles behind docs/performance.md: ``bench/perf.py --profile`` prints them.

* cProfile of ``Session.append`` for ~900-byte assistant/message events, and of the JSONL
  write path (``SessionStore`` append, one flush per 100 events, the worker thread's
  write + fdatasync), each with its Python-level calls per event and its top functions;
* the cost of each step one append takes (lossless walk, shape check, call id check,
  snapshot encoding) next to the orjson dumps+loads floor, min of interleaved rounds.
"""

from __future__ import annotations

import asyncio
import cProfile
import pstats
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

import harness
from core import message_data  # bench/ is on sys.path when run as a script
from harness.stores.store import SessionStore
from storage import BACKENDS, chunk

__all__ = ["append_steps", "profile_write_path"]


def _print_profile(profile: cProfile.Profile, events: int, title: str, top: int) -> None:
    stats = pstats.Stats(profile)
    print(f"{title}: {stats.total_calls / events:.1f} Python-level calls per event")  # type: ignore[attr-defined]
    stats.sort_stats("tottime").print_stats(top)


async def _profiled_store(root: Path, payloads: list[dict[str, Any]]) -> cProfile.Profile:
    store = SessionStore(BACKENDS["jsonl"](root), write_window_s=3600)
    session = await store.create()
    session.append("assistant/chunk", chunk(0))
    await store.flush(session)  # publish first: the profile is of appends to a live log
    profile = cProfile.Profile()
    profile.enable()
    for index, data in enumerate(payloads):
        session.append("assistant/message", data, surface_op="append", source_event_seqs=[])
        if index % 100 == 99:
            await store.flush(session)
    profile.disable()
    await store.close()
    return profile


def append_steps(data: dict[str, Any], rounds: int = 15, number: int = 5_000) -> dict[str, float]:
    """µs per call of each step ``Session.append`` takes for ``data`` (min of interleaved rounds)."""
    from harness.events.json import check_json, dumps_kept, encode_lossless
    from harness.messages.call_ids import CALL_ID_CHECKS
    from harness.messages.shapes import assistant_message_ok, message_event_problem

    call_ids = CALL_ID_CHECKS["assistant/message"]
    session = harness.Session.create()
    steps: dict[str, Callable[[], object]] = {
        "floor: orjson.loads(orjson.dumps(data))": lambda: orjson.loads(orjson.dumps(data)),
        "encode_lossless (C-level proof + snapshot)": lambda: encode_lossless(data),
        "check_json (lossless walk, its fallback)": lambda: check_json(data),
        "assistant_message_ok (shape + call ids)": lambda: assistant_message_ok(data),
        "message_event_problem (shape, FORMAT §7.2)": lambda: message_event_problem(
            "assistant/message", data
        ),
        "call id check": lambda: call_ids(data),
        "dumps_kept (snapshot)": lambda: dumps_kept(data),
        "whole append": lambda: session.append(
            "assistant/message", data, surface_op="append", source_event_seqs=[]
        ),
    }
    best = dict.fromkeys(steps, float("inf"))
    for _ in range(rounds):
        for name, step in steps.items():
            start = time.perf_counter()
            for _ in range(number):
                step()
            best[name] = min(best[name], (time.perf_counter() - start) / number * 1e6)
    return best


def profile_write_path(events: int) -> None:
    """Print the append and JSONL write path's profiles and the per-step costs of one append."""
    payloads = [message_data(index) for index in range(events)]
    session = harness.Session.create()
    profile = cProfile.Profile()
    profile.enable()
    for data in payloads:
        session.append("assistant/message", data, surface_op="append", source_event_seqs=[])
    profile.disable()
    _print_profile(profile, events, f"Session.append of {events:,} message events (cProfile)", 15)
    with tempfile.TemporaryDirectory(prefix="harness-perf-") as tmp:
        profile = asyncio.run(_profiled_store(Path(tmp), payloads))
    _print_profile(profile, events, "SessionStore(jsonl): append, flush per 100 (cProfile)", 25)
    steps = append_steps(payloads[0])
    floor = steps["floor: orjson.loads(orjson.dumps(data))"]
    print("one append's steps, µs per call (min of 15 interleaved rounds) and / floor:")
    for name, figure in steps.items():
        print(f"  {name:<45} {figure:6.2f} µs  {figure / floor:5.2f}×")

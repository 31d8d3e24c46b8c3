"""Benchmark of the query layer (issue 13, target: classification + filter over a 100k-event
session at >= 0.5x the throughput of ``inspect`` of that session).

Builds an agent-shaped session of about ``--events`` events (turns and steps, streamed chunks,
assistant messages citing them, tool calls and results, todos, approvals, a manual compaction
every ``--compact-every`` turns and a prune of long tool results), stores it in a plain JSONL
root, then prints, in one run, as events per second and as a ratio to ``inspect``:

* ``inspect``: ``SessionStore.inspect`` of the stored session (read, decode, full validation:
  what every reader pays to get the session at all);
* classification: ``QueryIndex`` over the restored session (``fold_surface`` plus the pass
  over turns, steps and compaction brackets) and every event's classification;
* classification + a metadata filter (types, classification, turn range): a fresh index, then
  ``filter_events``;
* classification + a text filter: a fresh index, then a literal needle over every event's
  semantic text (the costliest clause: each event with text is decoded);

each the median of ``--repeats`` runs with the garbage collector off while timing. A ratio of
1.0 means as fast as ``inspect``. Nothing is asserted (shared, noisy machines).

Run: ``.venv/bin/python bench/query.py [--events N] [--repeats R] [--compact-every T]``.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import harness
from harness.compaction import ExtractiveSummarizer, PrunerConfig, compact_now, prune_tool_results
from harness.query import EventFilter, EventRecord, QueryIndex, Range, filter_events
from harness.stores.jsonl.backend import JsonlBackend
from harness.stores.store import SessionStore

PROVIDER = "deepseek-official"
MODEL = "deepseek-v4-flash"
TOOLS = [{"name": "run_shell", "description": "Run a command.", "parameters": {"type": "object"}}]
PRUNER = PrunerConfig(threshold_chars=1200, head_chars=400, tail_chars=200)


def _turn(session: harness.Session, rng: random.Random, turn: int, calls: list[int]) -> None:
    session.append("turn/start", {"turn": turn})
    for step in range(1, rng.randint(2, 4) + 1):
        session.append("step/start", {"turn": turn, "step": step})
        if step == 1:
            text = (
                f"Turn {turn}: look at module_{rng.randint(1, 400)} and check limit {rng.randint(1, 9999)}. "
            )
            session.append("user/message", harness.user_message(text * 3), surface_op="append")
        if turn == 1 and step == 1:
            header = harness.EpochHeader.build(
                provider=PROVIDER, model=MODEL, system="Be brief.", tools=TOOLS
            )
            session.append("request/header", {"header": dict(header.raw), "reason": "initial"})
            session.append(
                "request/context", {"provider": PROVIDER, "model": MODEL, "contextWindow": 1_000_000}
            )
        words = [f"word{rng.randint(1, 5000)} " for _ in range(rng.randint(4, 12))]
        chunks = [
            session.append(
                "assistant/chunk",
                {"turn": turn, "step": step, "chunk": {"type": "text-delta", "index": 0, "text": word}},
            ).seq
            for word in words
        ]
        calls[0] += 1
        call_id = f"call-{calls[0]}"
        arguments = f'{{"command": "grep -n item_{rng.randint(1, 999)} src/"}}'
        blocks = [
            harness.text_block("".join(words)),
            harness.tool_call_block(call_id, "run_shell", arguments),
        ]
        message = harness.assistant_message(blocks, provider=PROVIDER, model=MODEL)
        session.append(
            "assistant/message",
            {"turn": turn, "step": step, "message": message},
            surface_op="append",
            source_event_seqs=chunks,
        )
        call = session.append(
            "tool/call",
            {"turn": turn, "step": step, "callId": call_id, "name": "run_shell", "arguments": arguments},
        )
        if rng.random() < 0.1:
            session.append(
                "approval/asked", {"id": f"ap-{calls[0]}", "toolName": "run_shell", "callId": call_id}
            )
            session.append("approval/decided", {"id": f"ap-{calls[0]}", "outcome": "allowed-once"})
        output = "".join(
            f"src/m{rng.randint(1, 99)}.py:{i}: item = {rng.random():.6f}\n"
            for i in range(rng.randint(2, 60))
        )
        session.append(
            "tool/result",
            {"turn": turn, "step": step, "message": harness.tool_result_message(call_id, output)},
            surface_op="append",
            source_event_seqs=[call.seq],
        )
        if rng.random() < 0.2:
            session.append("todo/write", {"todos": [{"content": f"check item_{turn}", "status": "pending"}]})
        session.append("step/end", {"turn": turn, "step": step})
    session.append("turn/end", {"turn": turn, "reason": {"kind": "completed"}})


def build_session(target: int, compact_every: int, seed: int = 13) -> harness.Session:
    """An agent-shaped session of about ``target`` events (see the module doc)."""
    rng = random.Random(seed)
    clock = iter(range(1_700_000_000_000, 1_800_000_000_000, 37))
    session = harness.Session.create(
        {"version": 0, "id": "bench-query", "createdAt": 1}, clock=lambda: next(clock)
    )
    calls = [0]
    turn = 0
    summarizer = ExtractiveSummarizer()
    while len(session.events) < target:
        turn += 1
        _turn(session, rng, turn, calls)
        if compact_every and turn % compact_every == 0:
            prune_tool_results(session, PRUNER)
            asyncio.run(compact_now(session, summarizer, retain_tokens=2_000))
    return session


def median_seconds(work: Callable[[], object], repeats: int) -> float:
    samples = []
    for _ in range(repeats):
        gc.collect()
        gc.disable()
        try:
            start = time.perf_counter()
            work()
            samples.append(time.perf_counter() - start)
        finally:
            gc.enable()
    return statistics.median(samples)


async def _store(root: Path, session: harness.Session) -> None:
    store = SessionStore(JsonlBackend(root, compression="none"))
    await store.adopt(session)
    await store.flush(session)
    await store.close()


async def _inspect(root: Path, session_id: str) -> harness.Session:
    store = SessionStore(JsonlBackend(root, compression="none"))
    try:
        return await store.inspect(session_id)
    finally:
        await store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--compact-every", type=int, default=25)
    args = parser.parse_args()

    started = time.perf_counter()
    built = build_session(args.events, args.compact_every)
    print(f"built {len(built.events):,} events in {time.perf_counter() - started:.1f} s")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        asyncio.run(_store(root, built))
        size = sum(path.stat().st_size for path in root.rglob("*") if path.is_file())
        session = asyncio.run(_inspect(root, built.id))
        n = len(session.events)
        counts = QueryIndex(session.events).counts()
        print(
            f"stored {size / 1e6:.1f} MB (plain JSONL); {n:,} events: "
            + ", ".join(f"{k} {v:,}" for k, v in counts.items())
        )
        inspect = median_seconds(lambda: asyncio.run(_inspect(root, built.id)), args.repeats)

    metadata = EventFilter(
        types=("tool/result", "user/message"), classifications=("shadowed",), seqs=(Range(n // 4, None),)
    )
    text = EventFilter(text=("item_123 src/",))

    def classification() -> tuple[str, ...]:
        return QueryIndex(session.events).classifications()

    def with_metadata() -> list[EventRecord]:
        return filter_events(QueryIndex(session.events), metadata)

    def with_text() -> list[EventRecord]:
        return filter_events(QueryIndex(session.events), text)

    rows = [
        ("inspect (read, decode, validate)", inspect, None),
        ("classification (QueryIndex)", median_seconds(classification, args.repeats), None),
        (
            "classification + metadata filter",
            median_seconds(with_metadata, args.repeats),
            len(with_metadata()),
        ),
        ("classification + text filter", median_seconds(with_text, args.repeats), len(with_text())),
    ]
    print(f"\n{'':36} {'ms':>9} {'events/s':>12} {'vs inspect':>11}  hits")
    for name, seconds, hits in rows:
        ratio = inspect / seconds
        shown = "" if hits is None else hits
        print(f"{name:36} {seconds * 1e3:9.1f} {n / seconds:12,.0f} {ratio:10.2f}x  {shown}")
    print("\ntarget: classification + filter >= 0.5x inspect (not asserted)")


if __name__ == "__main__":
    main()

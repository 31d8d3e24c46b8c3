"""Benchmark of time travel (issue 13, target: ``surface_at`` / ``request_at`` at any seq of a
100k-event session without re-reading the store, < 2× the cost of ``derive_messages`` at the end).

Builds an agent-shaped session of ``--events`` events in memory (turns and steps, streamed
chunks, tool calls and results, a request header and context, a compaction every few turns and
tool-result prunes), then prints, in one run:

* the baseline: ``derive_messages`` at the end on a freshly restored copy (its first, full
  projection; the restore itself is not timed);
* the one-time fold: ``TimeTravel(session)`` plus its first query (folds the whole log);
  unlike ``derive_messages`` it visits every event, not only the nodes left at the end;
* per query, at random seqs over the whole log: ``surface_at`` / ``messages_at`` /
  ``request_at`` on a generation not memoised yet (cold: one pass over the node records,
  plus first projections for ``messages_at``), and again once warm (the same generation);

each as milliseconds and as a ratio to the baseline (the collector is off while timing).
A cold query projects the nodes of the Surface *at that seq*, which can hold more nodes than
the Surface at the end (``--compact-every 0``: no compaction, the largest baseline). Nothing is
asserted (shared, noisy machines).

Run: ``.venv/bin/python bench/query_timetravel.py [--events N] [--queries Q] [--compact-every T]``.
"""

from __future__ import annotations

import argparse
import gc
import random
import statistics
import time
from collections.abc import Callable
from functools import partial
from typing import Any

import harness
from harness.events.json import loads
from harness.query.timetravel import TimeTravel

TOOLS = [{"name": "read_file", "description": "Read a file.", "parameters": {"type": "object"}}]


def build_session(target: int, seed: int = 7, compact_every: int = 40) -> harness.Session:
    """An agent-shaped log of about ``target`` events (see the module doc)."""
    rng = random.Random(seed)
    session = harness.Session.create()
    header = harness.EpochHeader.build(
        provider="deepseek-official", model="deepseek-v4-flash", system="You are a coding agent.", tools=TOOLS
    )
    turn = 0
    call = 0
    while len(session.events) < target:
        turn += 1
        session.append("turn/start", {"turn": turn})
        for step in range(1, rng.randint(2, 4) + 1):
            session.append("step/start", {"turn": turn, "step": step})
            if step == 1:
                text = f"turn {turn}: please look at module {rng.randint(1, 99)} " * 4
                session.append("user/message", harness.user_message(text), surface_op="append")
            if turn == 1 and step == 1:
                session.append("request/header", {"header": dict(header.raw), "reason": "initial"})
                session.append(
                    "request/context", {"provider": "deepseek-official", "model": "deepseek-v4-flash"}
                )
            chunks = []
            for index in range(rng.randint(6, 14)):
                chunk = {"type": "text-delta", "index": 0, "text": f"tok{index} "}
                chunks.append(
                    session.append("assistant/chunk", {"turn": turn, "step": step, "chunk": chunk}).seq
                )
            last = step > 2
            call += 1
            blocks = [harness.text_block(f"step {step} of turn {turn} " * 6)]
            if not last:
                blocks.append(harness.tool_call_block(f"call-{call}", "read_file", '{"path":"a.py"}'))
            message = harness.assistant_message(
                blocks, provider="deepseek-official", model="deepseek-v4-flash"
            )
            data = {
                "turn": turn,
                "step": step,
                "message": message,
                "usage": {"inputTokens": 9, "outputTokens": 3},
            }
            session.append("assistant/message", data, surface_op="append", source_event_seqs=chunks)
            if not last:
                tool_call = session.append(
                    "tool/call",
                    {
                        "turn": turn,
                        "step": step,
                        "callId": f"call-{call}",
                        "name": "read_file",
                        "arguments": "{}",
                    },
                )
                body = harness.tool_result_message(f"call-{call}", [harness.text_block("line\n" * 40)])
                result = session.append(
                    "tool/result",
                    {"turn": turn, "step": step, "message": body},
                    surface_op="append",
                    source_event_seqs=[tool_call.seq],
                )
                if rng.random() < 0.2:  # a prune: the same result with a shorter content
                    pruned = harness.thaw(result.data)
                    pruned["message"]["content"][0]["content"] = [harness.text_block("line\n[pruned]")]
                    session.append(
                        "compaction/prune",
                        {
                            "shadowedRange": {"start": result.seq, "end": result.seq},
                            "shadowedSeqs": [result.seq],
                        },
                    )
                    session.append(
                        "tool/result",
                        pruned,
                        surface_op=harness.Replace(result.seq, result.seq),
                        source_event_seqs=[result.seq],
                    )
            session.append("step/end", {"turn": turn, "step": step})
        session.append("turn/end", {"turn": turn, "reason": {"kind": "completed"}})
        if (
            compact_every and turn % compact_every == 0
        ):  # a compaction of the head, at a balanced cut (a turn boundary)
            nodes = list(session.surface.nodes)
            keep = len(nodes) // 2
            start = session.append("compaction/start", {"compactionId": f"c{turn}", "turn": None})
            summary = session.append("compaction/summary", {"compactionId": f"c{turn}", "summary": "..."})
            session.append(
                "user/message",
                harness.user_message(f"<compacted-summary>turns up to {turn}</compacted-summary>"),
                surface_op=harness.Replace(nodes[0], nodes[-keep - 1]),
                source_event_seqs=[start.seq, summary.seq, *nodes[: len(nodes) - keep]],
            )
            session.append("compaction/end", {"compactionId": f"c{turn}", "turn": None})
    return session


def timed(work: Callable[[], Any]) -> float:
    """Wall time of ``work()``, with the cyclic collector off (its pauses over a 100k-event
    heap would land on whichever call happens to trigger them)."""
    gc.disable()
    try:
        start = time.perf_counter()
        work()
        return time.perf_counter() - start
    finally:
        gc.enable()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=40)
    parser.add_argument("--compact-every", type=int, default=40, help="turns between compactions (0: none)")
    args = parser.parse_args()

    session = build_session(args.events, compact_every=args.compact_every)
    events = len(session.events)
    lines = [harness.encode_event(event) for event in session.events]
    fold = harness.fold_surface(list(session.events))
    print(
        f"session: {events} events, {len(fold.nodes)} Surface nodes at the end, "
        f"{fold.replace_generation} replaces, {sum(len(line) for line in lines) / 1e6:.1f} MB"
    )

    def cold_derive() -> float:
        restored = harness.Session.from_decoded(session.id, [loads(line) for line in lines], session.header)
        gc.collect()
        elapsed = timed(restored.derive_messages)
        del restored
        return elapsed

    derive_s = min(cold_derive() for _ in range(3))
    print(f"baseline: derive_messages at the end (fresh restore, first call): {derive_s * 1e3:.1f} ms")

    def first_fold() -> float:
        gc.collect()
        return timed(lambda: TimeTravel(session).surface_at(events - 1))

    fold_s = min(first_fold() for _ in range(3))
    ratio = fold_s / derive_s
    print(f"one-time fold: TimeTravel(session) + first surface_at: {fold_s * 1e3:.1f} ms ({ratio:.2f}×)")

    rng = random.Random(11)
    points = TimeTravel(session).request_points()
    seqs = [rng.randrange(events) for _ in range(args.queries)]
    at_points = [rng.choice(points) for _ in range(args.queries)]
    rows: list[tuple[str, list[float]]] = []
    for name, where in (("surface_at", seqs), ("messages_at", seqs), ("request_at", at_points)):
        fresh = TimeTravel(session)
        fresh.header_at(events - 1)  # the one-time fold is paid above; what follows is per query
        method: Callable[[int], Any] = getattr(fresh, name)
        cold = [timed(partial(method, seq)) for seq in where]
        warm = [timed(partial(method, seq)) for seq in where]
        rows.append((f"{name} (first in its generation)", cold))
        rows.append((f"{name} (warm)", warm))
    sizes = sorted(len(fold_at.nodes) for fold_at in map(TimeTravel(session).surface_at, seqs))
    print(
        f"per query, {args.queries} random seqs (request_at: random request points of {len(points)}); "
        f"Surface there: median {sizes[len(sizes) // 2]} nodes, max {sizes[-1]}:"
    )
    for label, samples in rows:
        median = statistics.median(samples)
        worst = max(samples)
        print(
            f"  {label:38s} median {median * 1e3:8.2f} ms ({median / derive_s:.2f}×)   "
            f"max {worst * 1e3:8.2f} ms ({worst / derive_s:.2f}×)   [target < 2×]"
        )


if __name__ == "__main__":
    main()

"""The process the crash tests kill: it appends through a ``SessionStore`` (JSONL) and compacts.

``python -m tests.compaction.crash_child block ROOT``: writes three turns, flushes, starts a
manual compaction whose summarizer prints ``summarizing`` and then waits forever.

``python -m tests.compaction.crash_child loop ROOT SEED``: loads (or creates) the session and
alternates a turn and a manual compaction (whose summarizer pauses a little) without explicit
flushes (write-behind only), printing a line after each compaction, until it is killed.
"""

from __future__ import annotations

import asyncio
import random
import sys

from harness.compaction import ExtractiveSummarizer, Summary, SummaryRequest, compact_now
from harness.errors import SessionNotFound
from harness.stores.jsonl.backend import JsonlBackend
from harness.stores.store import SessionStore
from tests.compaction.helpers import Builder

SESSION_ID = "crash-compaction"


class StuckSummarizer:
    """Says it started, then never finishes."""

    async def summarize(self, request: SummaryRequest) -> Summary:
        print("summarizing", flush=True)
        await asyncio.Event().wait()
        raise AssertionError("unreachable")


class SlowSummarizer:
    """The extractive digest after a short random pause, so kills land inside the bracket too."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.inner = ExtractiveSummarizer()

    async def summarize(self, request: SummaryRequest) -> Summary:
        await asyncio.sleep(self.rng.uniform(0, 0.004))
        return await self.inner.summarize(request)


def add_turn(builder: Builder, index: int) -> None:
    builder.turn = sum(1 for event in builder.session.events if event.type == "turn/start")
    builder.headed = builder.headed or any(e.type == "request/header" for e in builder.session.events)
    builder.closed_turn(
        f"turn {index}: please check file src/app/mod_{index}.py " + "and the numbers " * 30,
        f"turn {index} is done: " + "all numbers check out " * 30,
        tools=1,
        output=f"output of turn {index} " * 40,
    )


async def block(root: str) -> None:
    store = SessionStore(JsonlBackend(root, compression="none"), write_window_s=0.001)
    session = await store.create(id=SESSION_ID)
    builder = Builder(session)
    for index in range(3):
        add_turn(builder, index)
    await store.flush(session)
    await compact_now(session, StuckSummarizer(), checkpoint=store.flush)


async def loop(root: str, seed: int) -> None:
    rng = random.Random(seed)
    store = SessionStore(JsonlBackend(root, compression="none"), write_window_s=0.001)
    try:
        session = await store.load(SESSION_ID)
    except SessionNotFound:
        session = await store.create(id=SESSION_ID)
    builder = Builder(session)
    summarizer = SlowSummarizer(rng)
    print("ready", flush=True)
    index = 0
    while True:
        index += 1
        add_turn(builder, index)
        await compact_now(session, summarizer)
        print(f"compacted {len(session.events)}", flush=True)
        await asyncio.sleep(rng.uniform(0, 0.003))  # let background batches run


def main() -> None:
    mode, root = sys.argv[1], sys.argv[2]
    if mode == "block":
        asyncio.run(block(root))
    else:
        asyncio.run(loop(root, int(sys.argv[3])))


if __name__ == "__main__":
    main()

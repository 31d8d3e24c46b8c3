"""``HarnessSession.run_compaction`` (issue 15, item 1): harness's locked compaction transaction,
next to the SDK's own ``OpenAIResponsesCompactionSession`` on the two upstream bugs.

openai-agents-python #3116: history is lost when a write fails after the compaction's clear.
openai-agents-python #4679: items written while a compaction is in flight are dropped.
Each test first shows the bug on the SDK's session over the SDK's ``SQLiteSession`` (the
assertion that their history was lost is *expected to hold*: if upstream fixes the bug, that
assertion fails and tells us), then runs the same story on ours.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from agents.memory import OpenAIResponsesCompactionSession, SQLiteSession

from harness.compaction.summarizer import Summary, SummaryRequest
from harness.errors import CompactionPersistenceFailed, PersistenceFailed, SummaryFailed
from harness.events.event import Event
from harness.integrations.openai_agents import HarnessSession, default_should_trigger_compaction
from harness.stores.backend import Backend
from harness.stores.faults import DelegatingBackend
from harness.stores.memory import MemoryBackend
from harness.stores.store import SessionStore
from tests.compaction.helpers import BlockingSummarizer, FailingSummarizer, FixedSummarizer


def history(turns: int = 6) -> list[Any]:
    items: list[dict[str, Any]] = []
    for n in range(turns):
        items.append({"role": "user", "content": f"question {n}: " + "why " * 30})
        items.append({"type": "function_call", "call_id": f"c{n}", "name": "look", "arguments": "{}"})
        items.append({"type": "function_call_output", "call_id": f"c{n}", "output": "found " * 40})
        items.append({"role": "assistant", "content": f"answer {n}: " + "because " * 30})
    return items


LATE: Any = {"role": "user", "content": "written while the compaction was in flight"}
COMPACTED: Any = [{"type": "compaction", "encrypted_content": "opaque-summary"}]


class FakeResponses:
    """The ``client.responses`` of a fake OpenAI client: ``compact`` returns ``COMPACTED``,
    after ``during()`` ran (while "the request is in flight")."""

    def __init__(self) -> None:
        self.during: Any = None

    async def compact(self, **_: Any) -> Any:
        if self.during is not None:
            await self.during()
        return SimpleNamespace(output=list(COMPACTED), usage=None)


def fake_client() -> Any:
    return SimpleNamespace(responses=FakeResponses())


class FlakySQLiteSession(SQLiteSession):
    """The SDK's SQLite store whose writes fail while ``down`` (a full disk, a lost connection):
    deletes still succeed, inserts raise."""

    down = False

    async def add_items(self, items: list[Any]) -> None:
        if self.down:
            raise OSError(28, "No space left on device (injected)")
        await super().add_items(items)


class Outage(DelegatingBackend):
    """A harness backend whose appends fail while ``down``."""

    def __init__(self, inner: Backend) -> None:
        super().__init__(inner)
        self.down = False

    async def append(self, session_id: str, batch: Any) -> None:
        if self.down:
            raise OSError(28, "No space left on device (injected)")
        await self.inner.append(session_id, batch)

    async def close(self) -> None:
        pass  # the inner backend outlives this store: a "restarted process" reads it again


class DownWhileSummarizing:
    """Summarizes, and takes the backend down meanwhile (after the lock was made durable)."""

    def __init__(self, backend: Outage) -> None:
        self.backend = backend

    async def summarize(self, request: SummaryRequest) -> Summary:
        self.backend.down = True
        return Summary(texts=("short summary",), provider="test", model="down")


def dumps(items: list[Any]) -> str:
    return json.dumps(items, sort_keys=True)


# ---- #3116: a write that fails after the clear ------------------------------------------


def test_upstream_3116_their_history_is_lost_when_the_write_after_the_clear_fails(tmp_path: Path) -> None:
    async def go() -> list[Any]:
        store = FlakySQLiteSession("s", tmp_path / "sdk.db")
        await store.add_items(history())
        client = fake_client()

        async def disk_fills() -> None:
            store.down = True

        client.responses.during = disk_fills
        session = OpenAIResponsesCompactionSession("s", store, client=client)
        with pytest.raises(OSError, match="No space left"):
            await session.run_compaction({"force": True})
        store.down = False  # the disk is back: what is left?
        return await SQLiteSession("s", tmp_path / "sdk.db").get_items()

    left = asyncio.run(go())
    assert left == []  # upstream bug #3116 reproduced: their clear committed, the history is gone


def test_ours_loses_nothing_when_the_writes_fail_during_compaction() -> None:
    original = history()

    async def go() -> dict[str, Any]:
        inner = MemoryBackend()
        backend = Outage(inner)
        store = SessionStore(backend)
        session = HarnessSession("s", store, summarizer=DownWhileSummarizing(backend))
        await session.add_items(original)
        with pytest.raises(CompactionPersistenceFailed):
            await session.run_compaction({"force": True})
        out: dict[str, Any] = {"in_memory": await session.get_items()}
        # the process ends here, before the disk is back (its last flush fails too, and its
        # ownership goes with it): a new process reads what was written
        with contextlib.suppress(PersistenceFailed):
            await store.close()
        restarted = HarnessSession("s", SessionStore(inner))
        out["after_crash"] = await restarted.get_items()
        out["crash_types"] = [e.type for e in (await restarted.session()).events]
        return out

    out = asyncio.run(go())
    assert dumps(out["after_crash"]) == dumps(original)  # the items, and only the lock, were durable
    assert out["crash_types"][-2:] == ["compaction/start", "session/end-seed"]
    # the live process drops the compaction it could not write: it reads what is stored
    assert dumps(out["in_memory"]) == dumps(original)


def test_ours_keeps_the_history_exactly_when_the_summary_fails() -> None:
    original = history()

    async def go() -> tuple[list[Any], list[str]]:
        session = HarnessSession(
            "s", SessionStore(MemoryBackend()), summarizer=FailingSummarizer(RuntimeError("model down"))
        )
        await session.add_items(original)
        with pytest.raises(SummaryFailed, match="model down"):
            await session.run_compaction({"force": True})
        live = await session.session()
        return await session.get_items(), [e.type for e in live.events[len(original) :]]

    items, bracket = asyncio.run(go())
    assert dumps(items) == dumps(original)
    assert bracket == ["compaction/start", "compaction/end"]


# ---- #4679: items written while the compaction is in flight ------------------------------


def test_upstream_4679_their_compaction_drops_items_written_during_it(tmp_path: Path) -> None:
    async def go() -> list[Any]:
        store = SQLiteSession("s", tmp_path / "sdk.db")
        await store.add_items(history())
        client = fake_client()

        async def another_worker_writes() -> None:  # another process appends to the same session
            await SQLiteSession("s", tmp_path / "sdk.db").add_items([LATE])

        client.responses.during = another_worker_writes
        session = OpenAIResponsesCompactionSession("s", store, client=client)
        await session.run_compaction({"force": True})
        return await SQLiteSession("s", tmp_path / "sdk.db").get_items()

    left = asyncio.run(go())
    assert LATE not in left  # upstream bug #4679 reproduced: the late item is gone
    assert left == COMPACTED


def test_ours_keeps_items_written_during_the_compaction() -> None:
    original = history()

    async def go() -> tuple[list[Any], list[Any], Any]:
        store = SessionStore(MemoryBackend())
        summarizer = BlockingSummarizer()
        session = HarnessSession("s", store, summarizer=summarizer)
        await session.add_items(original)
        compaction = asyncio.ensure_future(session.run_compaction({"force": True}))
        await summarizer.started.wait()
        await HarnessSession("s", store).add_items([LATE])  # another writer of the same session
        summarizer.release.set()
        result = await compaction
        live = await session.get_items()
        await store.close()  # the process ends; a new one reads the session
        restarted = HarnessSession("s", SessionStore(store.backend))
        return live, await restarted.get_items(), result

    live, reloaded, result = asyncio.run(go())
    assert result is not None  # the compaction committed
    assert "released" in live[0]["content"]
    kept = live[1:-1]
    assert kept and dumps(kept) == dumps(original[len(original) - len(kept) :])
    assert live[-1] == LATE
    assert dumps(reloaded) == dumps(live)


def test_a_clear_during_our_compaction_wins_and_the_compaction_gives_way() -> None:
    async def go() -> tuple[list[Any], Any, list[str]]:
        summarizer = BlockingSummarizer()
        session = HarnessSession("s", SessionStore(MemoryBackend()), summarizer=summarizer)
        await session.add_items(history())
        compaction = asyncio.ensure_future(session.run_compaction({"force": True}))
        await summarizer.started.wait()
        await session.clear_session()
        summarizer.release.set()
        result = await compaction
        live = await session.session()
        return await session.get_items(), result, [e.type for e in live.events[-3:]]

    items, result, tail = asyncio.run(go())
    assert items == []
    assert result is None  # skipped: the span it summarized was no longer current
    assert tail == ["compaction/start", "assistant/message", "compaction/end"]


# ---- the decision and what a committed compaction leaves ---------------------------------


def test_unforced_compaction_follows_the_sdks_threshold_hook() -> None:
    async def go(count: int, hook: Any) -> Any:
        session = HarnessSession(
            "s", SessionStore(MemoryBackend()), summarizer=FixedSummarizer(), should_trigger_compaction=hook
        )
        await session.add_items(history(count))
        return await session.run_compaction()

    assert asyncio.run(go(3, default_should_trigger_compaction)) is None  # 9 candidates: below 10
    assert asyncio.run(go(6, default_should_trigger_compaction)) is not None
    assert asyncio.run(go(6, None)) is None  # no hook: the runner's unforced calls do nothing


def test_a_committed_compaction_keeps_every_event_and_pairs_calls() -> None:
    original = history()

    async def go() -> tuple[list[Any], list[Event], int]:
        session = HarnessSession("s", SessionStore(MemoryBackend()), summarizer=FixedSummarizer())
        await session.add_items(original)
        result = await session.run_compaction({"force": True})
        assert result is not None
        live = await session.session()
        return await session.get_items(), list(live.events), result.checkpoint_seq

    items, events, checkpoint = asyncio.run(go())
    assert [e.type for e in events[len(original) :]] == [
        "compaction/start",
        "compaction/summary",
        "user/message",
        "compaction/end",
    ]
    assert events[checkpoint].source_event_seqs is not None
    assert items[0] == {"role": "user", "content": items[0]["content"]}
    kept = items[1:]
    calls = {i["call_id"] for i in kept if i.get("type") == "function_call"}
    outputs = {i["call_id"] for i in kept if i.get("type") == "function_call_output"}
    assert outputs <= calls

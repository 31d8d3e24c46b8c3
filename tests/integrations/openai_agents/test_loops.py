"""One ``HarnessSession`` from several event loops and threads (``Runner.run_sync`` makes a
loop per call; threads run loops of their own): every call lands, once, durably."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from agents import Agent, ModelSettings, Runner
from agents.items import ModelResponse, TResponseInputItem
from agents.models.interface import Model
from agents.usage import Usage
from openai.types.responses import ResponseOutputMessage, ResponseOutputText

from harness.errors import StorageError
from harness.integrations.openai_agents import HarnessSession
from harness.stores.jsonl.backend import JsonlBackend
from harness.stores.memory import MemoryBackend
from harness.stores.store import SessionStore
from tests.compaction.helpers import BlockingSummarizer


def user(text: str) -> Any:
    return {"role": "user", "content": text}


def jsonl_store(root: Path, **kwargs: Any) -> SessionStore:
    return SessionStore(JsonlBackend(root, compression="none"), **kwargs)


def reloaded(root: Path) -> list[Any]:
    async def go() -> list[Any]:
        async with jsonl_store(root) as store:
            return await HarnessSession("chat", store).get_items()

    return asyncio.run(go())


def in_thread(session: HarnessSession, items: list[Any]) -> None:
    """``add_items`` from a thread with an event loop of its own."""
    loop = asyncio.new_event_loop()
    try:
        loop.run_until_complete(session.add_items(items))
    finally:
        loop.close()


class CountingModel(Model):
    """Answers each turn with how many input items it was given (no API call)."""

    async def get_response(
        self,
        system_instructions: str | None,
        input: str | list[TResponseInputItem],
        model_settings: ModelSettings,
        tools: list[Any],
        output_schema: Any,
        handoffs: list[Any],
        tracing: Any,
        *,
        previous_response_id: str | None,
        conversation_id: str | None,
        prompt: Any,
    ) -> ModelResponse:
        count = 1 if isinstance(input, str) else len(input)
        message = ResponseOutputMessage(
            type="message", id=f"msg_{count}", role="assistant", status="completed",
            content=[ResponseOutputText(type="output_text", text=f"saw {count}", annotations=[])],
        )  # fmt: skip
        return ModelResponse(output=[message], usage=Usage(requests=1), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        raise NotImplementedError


def test_runner_run_sync_twice_with_one_session(tmp_path: Path) -> None:
    store = jsonl_store(tmp_path)
    session = HarnessSession("chat", store)
    agent: Agent[Any] = Agent(name="counter", model=CountingModel())
    first = Runner.run_sync(agent, "one", session=session)
    second = Runner.run_sync(agent, "two", session=session)  # a new event loop
    assert (first.final_output, second.final_output) == ("saw 1", "saw 3")  # it saw turn one
    asyncio.run(store.close())  # from a third loop
    items = reloaded(tmp_path)
    assert [item.get("role") for item in items] == ["user", "assistant", "user", "assistant"]
    assert [items[0]["content"], items[2]["content"]] == ["one", "two"]


def test_add_items_from_two_asyncio_runs_and_from_threads(tmp_path: Path) -> None:
    store = jsonl_store(tmp_path)
    session = HarnessSession("chat", store)
    asyncio.run(session.add_items([user("run 1")]))
    asyncio.run(session.add_items([user("run 2")]))
    thread = threading.Thread(target=in_thread, args=(session, [user("thread")]))
    thread.start()
    thread.join()
    with ThreadPoolExecutor(max_workers=5) as pool:  # five loops at once
        list(pool.map(lambda n: in_thread(session, [user(f"pool {n}")]), range(10)))
    live: list[Any] = asyncio.run(session.get_items())
    asyncio.run(store.close())
    texts = [item["content"] for item in reloaded(tmp_path)]
    assert texts[:3] == ["run 1", "run 2", "thread"]
    assert sorted(texts[3:]) == sorted(f"pool {n}" for n in range(10))  # each once
    assert [item["content"] for item in live] == texts


def test_the_first_loop_still_closes_its_store_after_a_thread_used_it(tmp_path: Path) -> None:
    async def go() -> None:
        async with jsonl_store(tmp_path) as store:
            session = HarnessSession("chat", store)
            await session.add_items([user("main")])
            await asyncio.to_thread(in_thread, session, [user("thread")])
            await session.add_items([user("main again")])  # the store comes back to this loop

    asyncio.run(go())
    assert [item["content"] for item in reloaded(tmp_path)] == ["main", "thread", "main again"]


def test_pending_items_follow_the_store_to_the_next_loop(tmp_path: Path) -> None:
    store = jsonl_store(tmp_path, write_window_s=60)
    session = HarnessSession("chat", store, durable=False)
    asyncio.run(session.add_items([user("batched")]))  # its loop closes with the write pending
    live = asyncio.run(session.session())
    assert store.pending(live) == 1
    asyncio.run(session.flush())  # another loop writes it
    assert store.pending(live) == 0
    asyncio.run(store.close())
    assert reloaded(tmp_path) == [user("batched")]


def test_a_thread_waits_for_a_compaction_in_flight_and_its_item_is_kept() -> None:
    history = [user(f"question {n} " + "why " * 40) for n in range(8)]
    late = user("from a thread during the compaction")

    async def go() -> tuple[Any, list[Any], bool]:
        summarizer = BlockingSummarizer()
        store = SessionStore(MemoryBackend())
        session = HarnessSession("s", store, summarizer=summarizer)
        await session.add_items(history)
        compaction = asyncio.ensure_future(session.run_compaction({"force": True}))
        await summarizer.started.wait()
        writer = threading.Thread(target=in_thread, args=(HarnessSession("s", store), [late]))
        writer.start()
        await asyncio.sleep(0.05)
        waited = writer.is_alive()  # its loop waits (not blocked) while ours compacts
        summarizer.release.set()
        result = await compaction
        await asyncio.to_thread(writer.join)
        return result, await session.get_items(), waited

    result, items, waited = asyncio.run(go())
    assert result is not None  # the compaction committed
    assert waited
    assert "released" in items[0]["content"]
    assert items[-1] == late
    assert json.dumps(items).count(late["content"]) == 1


TEXT: Any = {
    "id": "u-1",
    "role": "user",
    "content": [{"type": "text", "text": "x"}],
    "source": {"kind": "user"},
}


class HeldBackend(MemoryBackend):
    """A memory backend whose appends wait until ``go`` is set (``started`` when one waits)."""

    def __init__(self) -> None:
        super().__init__()
        self.started = threading.Event()
        self.go = threading.Event()

    async def append(self, session_id: str, batch: Any) -> None:
        self.started.set()
        await asyncio.to_thread(self.go.wait)
        await super().append(session_id, batch)


def test_the_store_refuses_to_change_loops_while_a_write_runs() -> None:
    backend = HeldBackend()
    store = SessionStore(backend)
    other = asyncio.new_event_loop()

    async def go() -> tuple[bool, bool]:
        session = await store.create(id="s")
        session.append("user/message", TEXT, surface_op="append")
        flushing = asyncio.ensure_future(store.flush(session))
        await asyncio.to_thread(backend.started.wait)
        during = store.rebind_loop(other)
        backend.go.set()
        await flushing
        return during, store.rebind_loop(asyncio.get_running_loop())

    try:
        assert asyncio.run(go()) == (False, True)
    finally:
        other.close()


def test_a_flush_from_another_loop_with_pending_events_is_refused_and_keeps_them() -> None:
    store = SessionStore(MemoryBackend(), write_window_s=60)

    async def first() -> Any:
        session = await store.create(id="s")
        session.append("user/message", TEXT, surface_op="append")
        return session

    session = asyncio.run(first())
    with pytest.raises(StorageError, match="written by another event loop"):
        asyncio.run(store.flush(session))
    assert store.pending(session) == 1


def test_a_call_suspended_in_a_stopped_loop_is_refused_not_waited_for() -> None:
    backend = HeldBackend()
    session = HarnessSession("s", SessionStore(backend))
    stopped = asyncio.new_event_loop()
    try:
        adding = stopped.create_task(session.add_items([user("held")]))
        stopped.run_until_complete(asyncio.to_thread(backend.started.wait))  # then the loop stops
        with pytest.raises(StorageError, match="stopped"):
            asyncio.run(session.add_items([user("elsewhere")]))
        backend.go.set()
        stopped.run_until_complete(adding)
    finally:
        stopped.close()
    items: list[Any] = asyncio.run(session.get_items())
    assert [item["content"] for item in items] == ["held"]

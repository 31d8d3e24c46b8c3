"""``HarnessSession``: the SDK's Session protocol over a harness store (issue 15, item 1)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest
from agents.memory.session import (
    OpenAIResponsesCompactionAwareSession,
    Session,
    _session_accepts_wrapper,
)
from agents.memory.session_settings import SessionSettings

from harness.compaction.prune import PRUNE_MARKER, prune_tool_results
from harness.errors import InvalidEventData, InvalidMessage, PersistenceFailed, StorageError
from harness.events.event import Replace
from harness.integrations.openai_agents import HarnessSession
from harness.stores.faults import FaultyBackend
from harness.stores.jsonl.backend import JsonlBackend
from harness.stores.memory import MemoryBackend
from harness.stores.store import SessionStore

T = TypeVar("T")

USER: Any = {"role": "user", "content": "count the lines of a.txt"}
CALL: Any = {
    "type": "function_call",
    "call_id": "call_1",
    "name": "wc",
    "arguments": '{"path":"a.txt"}',
    "id": "fc_1",
}
OUTPUT: Any = {"type": "function_call_output", "call_id": "call_1", "output": "42 a.txt"}
REASONING: Any = {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "use wc"}]}
ANSWER: Any = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "status": "completed",
    "content": [{"type": "output_text", "text": "a.txt has 42 lines", "annotations": [], "logprobs": []}],
}
# types harness has no equivalent of, with nesting, unicode, numbers and key orders to keep
UNKNOWN: Any = [
    {
        "type": "web_search_call",
        "id": "ws_1",
        "status": "completed",
        "action": {"type": "search", "query": "ß ✓"},
    },
    {
        "type": "mcp_list_tools",
        "id": "mcp_1",
        "server_label": "x",
        "tools": [{"name": "t", "input_schema": {}}],
    },
    {"type": "compaction", "encrypted_content": "gAAAA…", "id": "cmp_1"},
    {"id": "img_1", "type": "image_generation_call", "result": None, "status": "in_progress", "n": 1.5},
    {"type": "mcp_approval_response", "approval_request_id": "a1", "approve": True},
    {"type": "item_reference", "id": "msg_0"},
]
HISTORY: Any = [USER, REASONING, CALL, OUTPUT, ANSWER]


def run(make: Callable[[], Awaitable[T]]) -> T:
    return asyncio.run(make())  # type: ignore[arg-type]


def jsonl_store(root: Path) -> SessionStore:
    return SessionStore(JsonlBackend(root, compression="none"))


def test_it_is_the_sdks_session_and_compaction_aware_session() -> None:
    session = HarnessSession("s", SessionStore(MemoryBackend()))
    assert isinstance(session, Session)
    assert isinstance(session, OpenAIResponsesCompactionAwareSession)
    assert _session_accepts_wrapper(session)  # the runner passes its RunContextWrapper
    assert session.session_settings == SessionSettings()


def test_every_item_round_trips_byte_equal_and_reloads_from_disk(tmp_path: Path) -> None:
    items = [*HISTORY, *UNKNOWN]

    async def go() -> tuple[list[Any], list[Any]]:
        async with jsonl_store(tmp_path) as store:
            session = HarnessSession("chat", store)
            await session.add_items(items)
            got = await session.get_items()
        async with jsonl_store(tmp_path) as store:
            again = await HarnessSession("chat", store).get_items()
        return got, again

    got, again = run(go)
    dump = json.dumps(items, ensure_ascii=False)
    assert json.dumps(got, ensure_ascii=False) == dump
    assert json.dumps(again, ensure_ascii=False) == dump


def test_items_become_native_message_events(tmp_path: Path) -> None:
    async def go() -> list[Any]:
        async with jsonl_store(tmp_path) as store:
            session = HarnessSession("chat", store, model="gpt-test")
            await session.add_items([*HISTORY, UNKNOWN[0]])
            live = await session.session()
            return [(event.type, event.data) for event in live.events]

    events = run(go)
    assert [kind for kind, _ in events] == [
        "user/message",
        "assistant/message",
        "assistant/message",
        "tool/result",
        "assistant/message",
        "assistant/message",
    ]
    assert events[0][1]["content"] == [{"type": "text", "text": USER["content"]}]
    assert events[1][1]["message"]["content"] == [{"type": "reasoning", "text": "use wc"}]
    assert events[2][1]["message"]["content"] == [
        {"type": "tool-call", "id": "call_1", "name": "wc", "arguments": '{"path":"a.txt"}'}
    ]
    assert events[2][1]["message"]["source"] == {
        "kind": "model",
        "provider": "openai-agents",
        "model": "gpt-test",
    }
    result = events[3][1]["message"]
    assert result["source"] == {"kind": "tool", "callId": "call_1"}
    assert result["content"][0]["content"] == [{"type": "text", "text": "42 a.txt"}]
    assert events[4][1]["message"]["content"] == [{"type": "text", "text": "a.txt has 42 lines"}]
    assert events[5][1]["message"]["content"] == [{"type": "openai-item", "itemType": "web_search_call"}]


def test_the_output_cites_its_call_event() -> None:
    async def go() -> tuple[int, tuple[int, ...] | None]:
        session = HarnessSession("s", SessionStore(MemoryBackend()))
        await session.add_items([USER, CALL])
        await session.add_items([OUTPUT])
        live = await session.session()
        return live.events[1].seq, live.events[2].source_event_seqs

    call_seq, sources = run(go)
    assert sources == (call_seq,)


def test_the_output_cites_a_call_added_before_a_reload(tmp_path: Path) -> None:
    async def go() -> tuple[int, tuple[int, ...] | None]:
        async with jsonl_store(tmp_path) as store:
            await HarnessSession("chat", store).add_items([USER, CALL])
        async with jsonl_store(tmp_path) as store:
            session = HarnessSession("chat", store)
            await session.add_items([OUTPUT])
            live = await session.session()
            return live.events[1].seq, live.events[-1].source_event_seqs

    call_seq, sources = run(go)
    assert sources == (call_seq,)


@pytest.mark.parametrize(
    ("bad", "error"),
    [
        ("just text", InvalidMessage),
        ({"role": "user", "content": float("nan")}, InvalidEventData),
        ({"role": "user", "content": [{"type": "input_text", "text": "x", "n": -0.0}]}, InvalidEventData),
        ({"role": "user", "content": ("a", "tuple")}, InvalidEventData),
    ],
)
def test_a_bad_item_refuses_the_whole_batch_and_adds_nothing(bad: object, error: type[Exception]) -> None:
    async def go() -> tuple[list[Any], int]:
        session = HarnessSession("s", SessionStore(MemoryBackend()))
        await session.add_items([USER])
        with pytest.raises(error):
            await session.add_items([ANSWER, bad])  # type: ignore[list-item]
        live = await session.session()
        return await session.get_items(), len(live.events)

    items, length = run(go)
    assert items == [USER]
    assert length == 1


def test_limit_returns_the_latest_items_and_never_an_output_without_its_call() -> None:
    async def go() -> dict[int, list[Any]]:
        session = HarnessSession("s", SessionStore(MemoryBackend()))
        await session.add_items(HISTORY)
        return {n: await session.get_items(n) for n in (0, 1, 2, 3, 5, 9)}

    got = run(go)
    assert got[0] == []
    assert got[1] == [ANSWER]
    assert got[2] == [ANSWER]  # the window [OUTPUT, ANSWER] would split call_1 from its output
    assert got[3] == [CALL, OUTPUT, ANSWER]
    assert got[5] == HISTORY
    assert got[9] == HISTORY


def test_session_settings_limit_is_the_default_limit() -> None:
    async def go() -> tuple[list[Any], list[Any]]:
        session = HarnessSession("s", SessionStore(MemoryBackend()), session_settings={"limit": 3})
        await session.add_items(HISTORY)
        return await session.get_items(), await session.get_items(5)

    default, explicit = run(go)
    assert default == [CALL, OUTPUT, ANSWER]
    assert explicit == HISTORY


def test_pop_and_clear_never_delete_an_event(tmp_path: Path) -> None:
    async def go() -> dict[str, Any]:
        out: dict[str, Any] = {}
        async with jsonl_store(tmp_path) as store:
            session = HarnessSession("chat", store)
            await session.add_items(HISTORY)
            out["popped"] = [await session.pop_item(), await session.pop_item()]
            out["after_pop"] = await session.get_items()
            live = await session.session()
            out["pop_events"] = [(e.type, e.surface_op, e.source_event_seqs) for e in live.events[5:]]
            await session.clear_session()
            out["after_clear"] = await session.get_items()
            out["pop_empty"] = await session.pop_item()
            await session.clear_session()  # nothing left: writes nothing
            await session.add_items([USER])
            out["after_add"] = await session.get_items()
            out["types"] = [e.type for e in live.events]
            out["originals"] = [e.data_json for e in live.events[:5]]
        async with jsonl_store(tmp_path) as store:
            again = HarnessSession("chat", store)
            out["reloaded"] = await again.get_items()
            reloaded = await again.session()
            out["reloaded_originals"] = [e.data_json for e in reloaded.events[:5]]
            out["messages"] = [m.role for m in reloaded.derive_messages()]
        return out

    out = run(go)
    assert out["popped"] == [ANSWER, OUTPUT]
    assert out["after_pop"] == [USER, REASONING, CALL]
    # the second pop replaced the output and the first tombstone: one node stands for both
    assert out["pop_events"] == [
        ("assistant/message", Replace(4, 4), (4,)),
        ("assistant/message", Replace(3, 5), (3, 5)),
    ]
    assert out["after_clear"] == []
    assert out["pop_empty"] is None
    assert out["after_add"] == [USER]
    assert out["types"].count("assistant/message") == 3 + 3  # 3 items, 2 pops, 1 clear
    assert out["reloaded"] == [USER]
    assert out["reloaded_originals"] == out["originals"]  # the removed items are still in the log
    assert out["messages"] == ["user"]  # the tombstones project to no message


def test_durable_by_default_and_batched_when_asked() -> None:
    async def go(durable: bool) -> tuple[int, int, bool]:
        store = SessionStore(MemoryBackend(), write_window_s=60)
        session = HarnessSession("s", store, durable=durable)
        await session.add_items(HISTORY)
        live = await session.session()
        pending = store.pending(live) if store.is_live(live) else 0
        await session.flush()
        after = store.pending(live) if store.is_live(live) else 0
        return pending, after, store.is_live(live)

    assert run(lambda: go(True)) == (0, 0, False)  # owned only while a call runs
    assert run(lambda: go(False)) == (5, 0, True)  # batched: held until close()


def test_durable_false_needs_hold_and_wait_is_checked() -> None:
    store = SessionStore(MemoryBackend())
    with pytest.raises(ValueError, match="needs hold=True"):
        HarnessSession("s", store, durable=False, hold=False)
    for wait in (-1, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="wait must be"):
            HarnessSession("s", store, wait=wait)


def test_close_lets_a_held_session_go() -> None:
    async def go() -> tuple[bool, bool, list[Any]]:
        backend = MemoryBackend()
        store = SessionStore(backend)
        held = HarnessSession("s", store, hold=True)
        await held.add_items([USER])
        live = await held.session()
        before = store.is_live(live)
        await held.close()
        other = HarnessSession("s", SessionStore(backend), wait=0)
        await other.add_items([ANSWER])  # a second store may take it now
        return before, store.is_live(live), await held.get_items()

    before, after, items = run(go)
    assert before and not after
    assert items == [USER, ANSWER]  # the next call takes it again, up to date


def test_a_failed_flush_raises_and_keeps_nothing_unstored() -> None:
    async def go() -> tuple[list[Any], list[Any], list[Any]]:
        backend = FaultyBackend(MemoryBackend())
        store = SessionStore(backend)
        session = HarnessSession("s", store)
        await session.add_items([USER])
        backend.fail_next_append()
        with pytest.raises((OSError, StorageError, PersistenceFailed)):
            await session.add_items([ANSWER])
        items = await session.get_items()  # the failed item is not shown: it is not stored
        await session.add_items([ANSWER])  # the caller retries: stored once
        log = await backend.read("s")
        types = [e["type"] if isinstance(e, dict) else e.type for e in log.events]
        return items, await session.get_items(), types

    items, after, stored = run(go)
    assert items == [USER]
    assert after == [USER, ANSWER]
    # the dropped view is loaded afresh, and a load marks where it resumed (SPEC: end-seed)
    assert stored == ["user/message", "session/end-seed", "assistant/message"]


def test_two_objects_on_one_store_share_the_session() -> None:
    async def go() -> list[Any]:
        store = SessionStore(MemoryBackend())
        first = HarnessSession("s", store)
        await first.add_items([USER])
        second = HarnessSession("s", store)
        await second.add_items([ANSWER])
        return await first.get_items()

    assert run(go) == [USER, ANSWER]


def test_concurrent_first_use_opens_the_session_once() -> None:
    async def go() -> list[Any]:
        session = HarnessSession("s", SessionStore(MemoryBackend()))
        await asyncio.gather(session.add_items([USER]), session.add_items([ANSWER]))
        return await session.get_items()

    items = run(go)
    assert sorted(json.dumps(i) for i in items) == sorted(json.dumps(i) for i in [USER, ANSWER])


def test_import_harness_does_not_import_the_sdk() -> None:
    code = "import sys, harness; harness.SessionStore; print('agents' in sys.modules)"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert done.stdout.strip() == "False"


def test_get_items_follows_a_pruned_tool_result_on_the_surface() -> None:
    big: Any = {"type": "custom_tool_call_output", "call_id": "c9", "output": "x" * 20_000, "extra": 1}
    call: Any = {"type": "custom_tool_call", "call_id": "c9", "name": "dump", "input": "all"}

    async def go() -> tuple[list[Any], int]:
        session = HarnessSession("s", SessionStore(MemoryBackend()), hold=True)
        await session.add_items([USER, call, big])
        replaced = prune_tool_results(await session.session())
        return await session.get_items(), len(replaced)

    items, replaced = run(go)
    assert replaced == 1
    assert items[:2] == [USER, call]
    pruned = items[2]
    assert {**pruned, "output": None} == {**big, "output": None}  # the item, with the pruned output
    assert PRUNE_MARKER in pruned["output"] and len(pruned["output"]) < 20_000

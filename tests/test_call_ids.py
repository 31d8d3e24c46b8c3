"""Whatever harness writes, harness and dsh read: tool call ids (issue 12, item 3's write side).

``load`` refuses an open turn whose pending call has no usable id, since its crash repair
would need a ``tool/result`` with ``callId: ""``, which neither harness nor dsh loads. So
harness must never write such a call: the stream assembly mints an id for a tool-call
block that arrived without one, and ``Session.append`` and the builders refuse an
unusable id (missing, ``""``, not a string) with ``InvalidEventData`` naming the path.
"""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import harness
from harness.agent.approval import ApprovalRequest
from harness.agent.assembly import StreamAssembly
from harness.agent.loop import Agent, AgentSettings
from harness.errors import InvalidEventData
from harness.messages.stream import BlockEnd, BlockStart, Finish, FinishToolCalls, StreamChunk, ToolCallDelta
from harness.session.repair import TOOL_OUTCOME_UNKNOWN_TEXT
from harness.stores.jsonl import JsonlBackend
from harness.stores.store import SessionStore
from harness.testing.scripted import EchoTool, ScriptedProvider, text_reply
from harness.tools.base import ToolContext, ToolOutcome

MISSING: Any = object()
BAD_IDS = [MISSING, "", 7, None, 1.5, ["c1"]]
BAD_IDS_NAMES = ["missing", "empty", "int", "null", "float", "array"]


def present(**fields: Any) -> dict[str, Any]:
    return {key: value for key, value in fields.items() if value is not MISSING}


def open_step() -> harness.Session:
    session = harness.Session.create()
    session.append("turn/start", {"turn": 1})
    session.append("step/start", {"turn": 1, "step": 1})
    session.append("user/message", harness.user_message("hi"), surface_op="append")
    return session


def assistant_data(*blocks: Mapping[str, Any]) -> dict[str, Any]:
    message = {
        "id": "a-1",
        "role": "assistant",
        "source": {"kind": "model", "provider": "p", "model": "m"},
        "content": list(blocks),
    }
    return {"turn": 1, "step": 1, "message": message}


def call_block(call_id: Any) -> dict[str, Any]:
    return present(type="tool-call", id=call_id, name="bash", arguments="{}")


def result_data(call_id: Any, tool_call_id: Any) -> dict[str, Any]:
    block = present(type="tool-result", toolCallId=tool_call_id, content=[{"type": "text", "text": "ok"}])
    message = {
        "id": "t-1",
        "role": "user",
        "source": present(kind="tool", callId=call_id),
        "content": [block],
    }
    return {"turn": 1, "step": 1, "message": message}


def refused(session: harness.Session, path: str, kind: str, data: Any, **options: Any) -> None:
    """``append`` refuses with ``InvalidEventData`` at ``path`` and changes nothing."""
    before = (list(session.events), list(session.surface.nodes), len(session.derive_messages()))
    with pytest.raises(InvalidEventData) as caught:
        session.append(kind, data, **options)
    assert caught.value.path == path
    assert "non-empty string" in caught.value.reason or "must equal" in caught.value.reason
    assert (list(session.events), list(session.surface.nodes), len(session.derive_messages())) == before


# ---- Session.append ---------------------------------------------------------------------------


@pytest.mark.parametrize("call_id", BAD_IDS, ids=BAD_IDS_NAMES)
def test_append_refuses_a_tool_call_without_a_usable_id(call_id: Any) -> None:
    session = open_step()
    data = present(turn=1, step=1, callId=call_id, name="bash", arguments="{}")
    refused(session, "data.callId", "tool/call", data)


@pytest.mark.parametrize("call_id", BAD_IDS, ids=BAD_IDS_NAMES)
def test_append_refuses_an_assistant_tool_call_block_without_a_usable_id(call_id: Any) -> None:
    session = open_step()
    data = assistant_data({"type": "text", "text": "let me look"}, call_block("c1"), call_block(call_id))
    refused(
        session,
        "data.message.content[2].id",
        "assistant/message",
        data,
        surface_op="append",
        source_event_seqs=[],
    )


@pytest.mark.parametrize("call_id", BAD_IDS, ids=BAD_IDS_NAMES)
def test_append_refuses_a_tool_result_without_a_usable_call_id(call_id: Any) -> None:
    session = open_step()
    data = result_data(call_id, call_id)
    refused(session, "data.message.source.callId", "tool/result", data, surface_op="append")


def test_append_refuses_a_tool_result_whose_block_answers_another_call() -> None:
    # load refuses it ("mismatched tool call ids"), harness and dsh alike
    session = open_step()
    for tool_call_id in ("c2", "", MISSING):
        data = result_data("c1", tool_call_id)
        refused(session, "data.message.content[0].toolCallId", "tool/result", data, surface_op="append")


@pytest.mark.parametrize("call_id", [v for v in BAD_IDS if v is not MISSING], ids=BAD_IDS_NAMES[1:])
def test_append_refuses_an_approval_asked_with_an_unusable_call_id(call_id: Any) -> None:
    session = open_step()
    refused(session, "data.callId", "approval/asked", {"id": "ap-1", "toolName": "bash", "callId": call_id})


def test_usable_ids_and_an_approval_without_a_call_id_still_append() -> None:
    session = open_step()
    session.append(
        "assistant/message",
        assistant_data({"type": "text", "text": "t"}, call_block("c1")),
        surface_op="append",
        source_event_seqs=[],
    )
    call = session.append(
        "tool/call", {"turn": 1, "step": 1, "callId": "c1", "name": "bash", "arguments": "{}"}
    )
    session.append("approval/asked", {"id": "ap-1", "toolName": "bash"})  # callId is optional (FORMAT)
    session.append("approval/decided", {"id": "ap-1", "outcome": "allowed-once"})
    session.append("tool/result", result_data("c1", "c1"), surface_op="append", source_event_seqs=[call.seq])
    session.append("step/end", {"turn": 1, "step": 1})
    session.append("turn/end", {"turn": 1, "reason": {"kind": "completed"}})
    harness.Session.from_restore(session.id, list(session.events), session.header)


def test_the_reported_sequence_can_no_longer_poison_a_session(tmp_path: Path) -> None:
    # The sequence of the report: the builder refuses the empty id; a hand-made block is
    # refused at append; what did reach the log still loads after a crash.
    async def scenario() -> harness.Session:
        async with SessionStore(JsonlBackend(tmp_path, "none", threaded=False)) as store:
            session = await store.create()
            session.append("turn/start", {"turn": 1})
            session.append("step/start", {"turn": 1, "step": 1})
            session.append("user/message", harness.user_message("hi"), surface_op="append")
            with pytest.raises(InvalidEventData) as caught:
                harness.tool_call_block("", "bash", "{}")
            assert caught.value.path == "call_id"
            reply = harness.assistant_message([call_block("")], provider="p", model="m")
            with pytest.raises(InvalidEventData):
                session.append(
                    "assistant/message",
                    {"turn": 1, "step": 1, "message": reply},
                    surface_op="append",
                    source_event_seqs=[],
                )
            with pytest.raises(InvalidEventData):
                session.append(
                    "tool/call", {"turn": 1, "step": 1, "callId": "", "name": "bash", "arguments": "{}"}
                )
            await store.flush(session)
            sid = session.id
        async with SessionStore(JsonlBackend(tmp_path, "none", threaded=False)) as store:  # "after the crash"
            return await store.load(sid)

    loaded = asyncio.run(scenario())
    closers = ["step/end", "turn/end", "harness/repair", "session/end-seed"]
    assert [e.type for e in loaded.events][-4:] == closers


# ---- builders ---------------------------------------------------------------------------------


@pytest.mark.parametrize("call_id", [v for v in BAD_IDS if v is not MISSING], ids=BAD_IDS_NAMES[1:])
def test_builders_refuse_an_unusable_call_id(call_id: Any) -> None:
    with pytest.raises(InvalidEventData, match="non-empty string") as caught:
        harness.tool_call_block(call_id, "bash", "{}")
    assert caught.value.path == "call_id"
    with pytest.raises(InvalidEventData, match="non-empty string") as caught:
        harness.tool_result_message(call_id, "ok")
    assert caught.value.path == "call_id"


def test_builders_keep_a_usable_call_id() -> None:
    assert harness.tool_call_block("c1", "bash", "{}")["id"] == "c1"
    message = harness.tool_result_message("c1", "ok")
    assert message["source"]["callId"] == "c1" and message["content"][0]["toolCallId"] == "c1"


# ---- the stream assembly ----------------------------------------------------------------------


def idless_calls(*names: str, close: bool = True, closed_id: Any = MISSING) -> list[StreamChunk]:
    """A provider's stream of tool calls that carry no id (``id=""`` on every delta)."""
    chunks: list[StreamChunk] = []
    for index, name in enumerate(names):
        chunks.append(BlockStart(index, "tool-call"))
        chunks.append(ToolCallDelta(index=index, id="", name=name, arguments_delta="{"))
        chunks.append(ToolCallDelta(index=index, id="", arguments_delta="}"))
        if close:
            chunks.append(BlockEnd(index, present(type="tool-call", id=closed_id, name=name, arguments="{}")))
    chunks.append(Finish(FinishToolCalls()))
    return chunks


def assembled(chunks: list[StreamChunk]) -> StreamAssembly:
    assembly = StreamAssembly()
    for chunk in chunks:
        assembly.feed(chunk)
    return assembly


@pytest.mark.parametrize(
    ("close", "closed_id"),
    [(False, MISSING), (True, MISSING), (True, ""), (True, 7)],
    ids=["deltas-only", "closed-without-id", "closed-empty-id", "closed-numeric-id"],
)
def test_the_assembly_mints_one_unique_stable_id_per_idless_call(close: bool, closed_id: Any) -> None:
    assembly = assembled(idless_calls("look", "write", close=close, closed_id=closed_id))
    first = assembly.content()
    ids = [block["id"] for block in first]
    assert all(isinstance(call_id, str) and call_id for call_id in ids)
    assert ids[0].startswith("call-0-") and ids[1].startswith("call-1-")
    assert len(set(ids)) == 2
    assert [block["id"] for block in assembly.content()] == ids  # read again: the same ids
    other = assembled(idless_calls("look", "write", close=close, closed_id=closed_id)).content()
    assert not {block["id"] for block in other} & set(ids)  # another response: other ids
    assert [block["name"] for block in first] == ["look", "write"]
    assert [block["arguments"] for block in first] == ["{}", "{}"]


def test_the_assembly_keeps_the_providers_id() -> None:
    chunks: list[StreamChunk] = [
        BlockStart(0, "tool-call"),
        ToolCallDelta(index=0, id="", name="look", arguments_delta="{"),
        ToolCallDelta(index=0, id="call_9", arguments_delta="}"),  # the id arrives late
        BlockStart(1, "tool-call"),
        ToolCallDelta(index=1, id="call_a", name="look", arguments_delta="{}"),
        BlockEnd(1, {"type": "tool-call", "name": "look", "arguments": "{}"}),  # closed without it
        BlockStart(2, "tool-call"),
        ToolCallDelta(index=2, id="x", name="look", arguments_delta="{}"),
        BlockEnd(2, {"type": "tool-call", "id": "call_b", "name": "look", "arguments": "{}"}),
        Finish(FinishToolCalls()),
    ]
    assert [block["id"] for block in assembled(chunks).content()] == ["call_9", "call_a", "call_b"]


# ---- a run without provider ids, crashed mid-call, then loaded --------------------------------


class CrashImage(EchoTool):
    """While it runs, copies the store's root: the files a crash at that moment leaves."""

    def __init__(self, name: str, root: Path, image: Path, **options: Any) -> None:
        super().__init__(name, **options)
        self.root, self.image = root, image
        self.call_ids: list[str] = []

    async def run(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolOutcome:
        self.call_ids.append(context.call_id)
        if not self.image.exists():
            shutil.copytree(self.root, self.image)
        return await super().run(arguments, context)


class Allow:
    async def decide(self, request: ApprovalRequest) -> Any:
        return "allowed-once"


def crashed_run(tmp_path: Path, *, changes_world: bool) -> tuple[harness.Session, CrashImage, Path]:
    root, image = tmp_path / "live", tmp_path / "crashed"
    tool = CrashImage("look", root, image, changes_world=changes_world)

    async def scenario() -> harness.Session:
        async with SessionStore(JsonlBackend(root, "none", threaded=False)) as store:
            session = await store.create()
            provider = ScriptedProvider([idless_calls("look", close=False), text_reply("done")])
            agent = Agent(
                session,
                provider,
                [tool],
                AgentSettings(model="m-1"),
                workspace=tmp_path,
                checkpoint=store.flush,
                approver=Allow(),
                record_baseline=False,
            )
            outcome = await agent.run_turn("look around")
            assert outcome.kind == "completed"
            return session

    session = asyncio.run(scenario())
    assert image.exists()
    return session, tool, image


def reopen(root: Path, sid: str, *, inspect: bool = False) -> harness.Session:
    async def scenario() -> harness.Session:
        async with SessionStore(JsonlBackend(root, "none", threaded=False)) as store:
            return await (store.inspect(sid) if inspect else store.load(sid))

    return asyncio.run(scenario())


@pytest.mark.parametrize("changes_world", [False, True], ids=["read-only", "approved"])
def test_a_run_whose_provider_gives_no_call_ids_survives_a_crash_mid_call(
    tmp_path: Path, changes_world: bool
) -> None:
    live, tool, image = crashed_run(tmp_path, changes_world=changes_world)
    # The crash image (flushed up to the running call) loads: repair answers the call ...
    loaded = reopen(image, live.id)
    closers = ["step/end", "turn/end", "harness/repair", "session/end-seed"]
    assert [e.type for e in loaded.events][-4:] == closers
    repaired = [e for e in loaded.events if e.type == "tool/result"]
    assert len(repaired) == 1 and repaired[0].data["error"]["code"] == "TOOL_OUTCOME_UNKNOWN"
    assert repaired[0].data["message"]["content"][0]["content"][0]["text"] == TOOL_OUTCOME_UNKNOWN_TEXT
    # ... and what it committed reloads and inspects with nothing left to repair.
    again = reopen(image, live.id)
    assert [e.to_json() for e in again.events][:-1] == [e.to_json() for e in loaded.events][:-1]
    assert [e.type for e in reopen(image, live.id, inspect=True).events] == [e.type for e in loaded.events]
    # One minted id pairs the block, tool/call, approval and result, live and repaired.
    message = next(e for e in live.events if e.type == "assistant/message")
    (block,) = message.data["message"]["content"]
    call_id = block["id"]
    assert isinstance(call_id, str) and call_id
    assert tool.call_ids == [call_id]
    assert [e.data["callId"] for e in live.events if e.type == "tool/call"] == [call_id]
    assert [e.data["callId"] for e in live.events if e.type == "approval/asked"] == (
        [call_id] if changes_world else []
    )
    results = [e for e in live.events if e.type == "tool/result"]
    assert [r.data["message"]["source"]["callId"] for r in results] == [call_id]
    assert [r.data["message"]["source"]["callId"] for r in repaired] == [call_id]
    # The finished live session loads too.
    assert reopen(tmp_path / "live", live.id).events[-2].type == "turn/end"


# ---- property: append accepts a call id exactly when a crash repair could cite it -------------

JSON_IDS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=8),
    st.lists(st.text(max_size=3), max_size=2),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)


@settings(max_examples=150, deadline=None)
@given(
    call_id=JSON_IDS,
    kind=st.sampled_from(["tool/call", "assistant/message", "tool/result", "approval/asked"]),
)
def test_append_accepts_a_call_id_exactly_when_it_is_a_non_empty_string(call_id: Any, kind: str) -> None:
    session = open_step()
    if kind == "tool/call":
        data: Any = {"turn": 1, "step": 1, "callId": call_id, "name": "bash", "arguments": "{}"}
    elif kind == "assistant/message":
        data = assistant_data(call_block(call_id))
    elif kind == "tool/result":
        data = result_data(call_id, call_id)
    else:
        data = {"id": "ap-1", "toolName": "bash", "callId": call_id}
    options: dict[str, Any] = {"surface_op": "append"} if kind in ("assistant/message", "tool/result") else {}
    usable = isinstance(call_id, str) and call_id != ""
    try:
        session.append(kind, data, **options)
    except InvalidEventData:
        assert not usable
    else:
        assert usable

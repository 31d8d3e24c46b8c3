"""Whatever state a crash or a cancel left in the log, the request built from it is one the
model API accepts: every tool call answered before the next message, and only text that
UTF-8 can carry. The log itself is never rewritten."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

import harness
from harness.cli import app
from harness.messages.model import Message, assistant_message, tool_call_block, tool_result_message
from harness.providers.serialize import serialize_messages
from harness.session.request import UNANSWERED_CALL_TEXT, build_request, sendable_messages
from harness.stores.jsonl.backend import JsonlBackend
from harness.stores.store import SessionStore
from harness.testing.fake_deepseek import FakeDeepSeek, Reply
from tests.agent.cli_support import stored as load

KEY = "sk-test-request-guard-31"
MODEL = {"provider": "deepseek-official", "model": "deepseek-v4-flash"}
HEADER = harness.EpochHeader.build(provider="deepseek-official", model="deepseek-v4-flash")


def assert_every_call_answered(messages: list[Any]) -> None:
    """The wire shape the DeepSeek API accepts: each assistant ``tool_calls`` message is
    followed by a ``tool`` reply for each of its calls before any other message."""
    for index, message in enumerate(messages):
        if message["role"] != "assistant" or not message.get("tool_calls"):
            continue
        replies = set()
        for later in messages[index + 1 :]:
            if later["role"] != "tool":
                break
            replies.add(later["tool_call_id"])
        assert {call["id"] for call in message["tool_calls"]} <= replies, messages



def save(root: Path, session: harness.Session) -> None:
    async def go() -> None:
        store = SessionStore(JsonlBackend(root))
        live = await store.create(session.header)
        for event in session.events:
            live.append(
                event.type, event.data, surface_op=event.surface_op, source_event_seqs=event.source_event_seqs
            )
        await store.close()

    asyncio.run(go())


def left_by_a_cancelled_approval(cwd: str) -> harness.Session:
    """The log the old chat left after a double Ctrl-C at the approval prompt: a call, its
    question and a ``cancelled`` decision, then ``step/end`` and nothing more."""
    session = harness.Session.create(harness.SessionHeader.new(cwd=cwd))
    session.append("turn/start", {"turn": 1})
    session.append("step/start", {"turn": 1, "step": 1})
    session.append("user/message", harness.user_message("write x"), surface_op="append")
    arguments = '{"path":"x.txt","content":"no"}'
    reply = assistant_message([tool_call_block("c1", "write_file", arguments)], **MODEL)
    data = {"turn": 1, "step": 1, "message": reply}
    session.append("assistant/message", data, surface_op="append", source_event_seqs=[])
    session.append(
        "tool/call", {"turn": 1, "step": 1, "callId": "c1", "name": "write_file", "arguments": arguments}
    )
    session.append("approval/asked", {"id": "approval-1", "toolName": "write_file", "callId": "c1"})
    session.append("approval/decided", {"id": "approval-1", "outcome": "cancelled"})
    session.append("step/end", {"turn": 1, "step": 1})
    return session


def test_a_call_the_log_left_unanswered_gets_a_placeholder_reply_in_the_request(tmp_path: Path) -> None:
    session = left_by_a_cancelled_approval(str(tmp_path))
    session.append("turn/end", {"turn": 1, "reason": {"kind": "interrupted"}})
    session.append("turn/start", {"turn": 2})
    session.append("step/start", {"turn": 2, "step": 1})
    session.append("user/message", harness.user_message("carry on"), surface_op="append")
    before = [e.data for e in session.events]
    options = build_request(session, HEADER)
    wire = serialize_messages(None, options.messages)
    assert [m["role"] for m in wire] == ["user", "assistant", "tool", "user"]
    assert wire[2] == {"role": "tool", "tool_call_id": "c1", "content": UNANSWERED_CALL_TEXT}
    assert_every_call_answered(wire)
    assert [e.data for e in session.events] == before  # the log is untouched
    assert build_request(session, HEADER).messages == options.messages  # the same every time


def test_resume_after_the_old_chat_left_a_call_unanswered_sends_a_well_formed_request(
    tmp_path: Path,
) -> None:
    root, workspace = tmp_path / "sessions", tmp_path / "ws"
    workspace.mkdir()
    session = left_by_a_cancelled_approval(str(workspace))
    save(root, session)
    with FakeDeepSeek([Reply.text("I did not write it.")], api_key=KEY) as server:
        env: dict[str, str | None] = {k: None for k in os.environ if "proxy" in k.lower()}
        env.update(DEEPSEEK_BASE_URL=server.base_url, DEEPSEEK_API_KEY=KEY)
        result = CliRunner().invoke(
            app,
            ["--store", str(root), "resume", session.id, "-w", str(workspace), "--yes", "--json"],
            env=env,
            catch_exceptions=False,
        )
        sent = server.requests
    assert result.exit_code == 0, result.output
    (request,) = sent
    assert [m["role"] for m in request.messages] == ["system", "user", "assistant", "tool", "user"]
    assert_every_call_answered(request.messages)
    stored = load(root, session.id)
    assert [e.data["reason"]["kind"] for e in stored.events if e.type == "turn/end"] == [
        "interrupted",
        "completed",
    ]
    # the log holds no made-up result for c1: the placeholder lives in requests only
    assert not any(e.type == "tool/result" for e in stored.events)


def test_a_stored_unpaired_surrogate_is_sent_as_a_replacement_character() -> None:
    text = "bad \udcff and a pair \ud83d\ude00"
    raw = dict(harness.user_message("placeholder"))
    raw["content"] = [{"type": "text", "text": text}]
    session = harness.Session.create()
    session.append("user/message", raw, surface_op="append")  # the log may hold it (dsh writes such)
    (message,) = build_request(session, HEADER).messages
    assert message.text == "bad \ufffd and a pair \U0001f600"
    assert message.id == raw["id"]
    json.dumps(serialize_messages(None, [message]), ensure_ascii=False).encode("utf-8")  # sendable
    assert "bad \udcff" in session.derive_messages()[0].text  # the log keeps what it holds


# ---- property: any mix of calls and results serializes well-formed ------------------------


@st.composite
def histories(draw: Any) -> list[Message]:
    messages: list[Message] = []
    serial = 0
    for _ in range(draw(st.integers(0, 6))):
        kind = draw(st.sampled_from(["user", "assistant", "calls"]))
        if kind == "user":
            messages.append(Message(harness.user_message(draw(st.sampled_from(["hi", "go on", "x"])))))
        elif kind == "assistant":
            messages.append(Message(assistant_message("ok", **MODEL)))
        else:
            ids = [f"c{serial + i}" for i in range(draw(st.integers(1, 3)))]
            serial += len(ids)
            calls = [tool_call_block(call, "read_file", "{}") for call in ids]
            messages.append(Message(assistant_message(calls, **MODEL)))
            answered = draw(st.lists(st.sampled_from(ids), unique=True))
            replies = [tool_result_message(call, "done") for call in answered]
            if replies and draw(st.booleans()):  # all in one message, maybe with text after them
                blocks: list[Any] = [block for reply in replies for block in reply["content"]]
                if draw(st.booleans()):
                    blocks.append({"type": "text", "text": "and a note"})
                replies = [harness.user_message(blocks)]
            messages.extend(Message(reply) for reply in replies)
    return messages


@settings(max_examples=300, deadline=None)
@given(histories())
def test_any_history_of_calls_and_results_is_sent_well_formed(messages: list[Message]) -> None:
    sent = sendable_messages(messages)
    wire = serialize_messages("system", sent)
    assert_every_call_answered(wire)
    # nothing is dropped or reordered: the originals are a subsequence, placeholders aside
    kept = [m for m in sent if not m.id.startswith("unanswered-")]
    assert kept == list(messages)
    calls = {b.raw["id"] for m in messages for b in m.content if b.type == "tool-call"}
    results = {b.raw["toolCallId"] for m in messages for b in m.content if b.type == "tool-result"}
    if calls <= results:
        assert list(sent) == list(messages)  # a well-formed history passes through as it is

"""The typed message model (FORMAT §3–4): views, builders, chunks and reasons."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

import harness
from harness.events.json import dumps, loads
from harness.messages.model import (
    ImageBlock,
    ModelSource,
    PluginSource,
    ReasoningBlock,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    ToolSource,
    UnknownBlock,
    UnknownSource,
    UserSource,
)
from harness.messages.stream import (
    Aborted,
    BlockStart,
    Completed,
    Finish,
    FinishError,
    Interrupted,
    TextDelta,
    ToolCallDelta,
    UnknownTurnEnd,
    UsageChunk,
    chunk_from_json,
    finish_reason_from_json,
    turn_end_reason_from_json,
)


def restored_message(message: dict[str, Any]) -> harness.Message:
    session = harness.Session.create()
    session.append("user/message", message, surface_op="append")
    restored = harness.Session.from_restore(
        session.id, [loads(harness.encode_event(e)) for e in session.events], session.header
    )
    (only,) = restored.derive_messages()
    return only


def test_unknown_blocks_sources_and_fields_survive_restore() -> None:
    message = {
        "content": [
            {"type": "text", "text": "hi", "cacheHint": "x"},
            {"type": "hologram", "frames": [1, 2]},
            {"type": "image", "attachment": {"attachmentId": "a", "mediaType": "image/png", "bytes": 3}},
        ],
        "source": {"kind": "kiosk", "terminal": 7},
        "role": "user",
        "id": "u-1",
        "extra": {"kept": True},
    }
    view = restored_message(message)
    assert dumps(view.raw) == dumps(message)
    text, unknown, image = view.content
    assert type(text) is TextBlock and text.text == "hi" and text.get("cacheHint") == "x"
    assert type(unknown) is UnknownBlock and unknown.type == "hologram" and unknown.raw["frames"] == [1, 2]
    assert type(image) is ImageBlock and image.attachment["attachmentId"] == "a"
    assert type(view.source) is UnknownSource and view.source.kind == "kiosk"


def test_builders_and_views() -> None:
    user = harness.Message(harness.user_message("hello", id="u"))
    assert (user.id, user.role, user.text) == ("u", "user", "hello")
    assert type(user.source) is UserSource
    plugin = harness.Message(
        harness.user_message("x", source={"kind": "plugin", "plugin": "p", "form": "notice"})
    )
    assert (
        type(plugin.source) is PluginSource and plugin.source.plugin == "p" and plugin.source.form == "notice"
    )
    call = harness.tool_call_block("c1", "bash", '{"cmd":"ls"}')
    reply = harness.Message(
        harness.assistant_message([{"type": "reasoning", "text": "hm"}, call], provider="p", model="m")
    )
    reasoning, tool_call = reply.content
    assert type(reasoning) is ReasoningBlock and reasoning.text == "hm"
    assert type(tool_call) is ToolCallBlock and (tool_call.id, tool_call.name) == ("c1", "bash")
    assert type(reply.source) is ModelSource and (reply.source.provider, reply.source.model) == ("p", "m")
    result = harness.Message(harness.tool_result_message("c1", "out", is_error=True))
    (block,) = result.content
    assert type(block) is ToolResultBlock and block.is_error and block.tool_call_id == "c1"
    assert type(block.content[0]) is TextBlock
    assert type(result.source) is ToolSource and result.source.call_id == "c1"


def test_builder_refuses_bad_content() -> None:
    with pytest.raises(harness.InvalidEventData):
        harness.user_message([{"type": "text", "text": float("nan")}])


@pytest.mark.parametrize(
    "chunk",
    [
        {"type": "block-start", "index": 0, "blockType": "tool-call"},
        {"type": "text-delta", "index": 1, "text": "Hel"},
        {"type": "reasoning-delta", "index": 0, "text": ""},
        {"type": "tool-call-delta", "index": 0, "id": "call_x1", "name": "bash", "argumentsDelta": ""},
        {"type": "tool-call-delta", "index": 0, "id": "call_x1", "argumentsDelta": "{}"},
        {"type": "block-end", "index": 0, "block": {"type": "text", "text": "hi"}},
        {"type": "usage", "usage": {"inputTokens": 120, "outputTokens": 14, "cacheReadTokens": 64}},
        {"type": "finish", "reason": {"kind": "tool-calls"}},
        {
            "type": "finish",
            "reason": {"kind": "error", "failure": {"message": "boom", "code": "SERVER", "status": 500}},
        },
    ],
)
def test_stream_chunks_round_trip_in_wire_order(chunk: dict[str, Any]) -> None:
    parsed = chunk_from_json(chunk)
    assert dumps(parsed.to_json()) == dumps(chunk)


def test_stream_chunk_types() -> None:
    assert chunk_from_json({"type": "text-delta", "index": 1, "text": "a"}) == TextDelta(index=1, text="a")
    assert BlockStart(index=0, block_type="text").to_json() == {
        "type": "block-start",
        "index": 0,
        "blockType": "text",
    }
    delta = ToolCallDelta(index=0, id="c", arguments_delta="")
    assert delta.to_json() == {"type": "tool-call-delta", "index": 0, "id": "c", "argumentsDelta": ""}
    usage = chunk_from_json({"type": "usage", "usage": {"inputTokens": 1, "outputTokens": 2}})
    assert isinstance(usage, UsageChunk) and usage.usage.total == 3
    finish = chunk_from_json(
        {"type": "finish", "reason": {"kind": "error", "failure": {"message": "m", "code": "X"}}}
    )
    assert (
        isinstance(finish, Finish)
        and isinstance(finish.reason, FinishError)
        and finish.reason.failure.code == "X"
    )
    assert isinstance(finish_reason_from_json({"kind": "stop"}), msgspec.Struct)


@pytest.mark.parametrize(
    "chunk",
    [
        {"type": "text-delta", "index": "0", "text": "a"},
        {"type": "warp-delta", "index": 0},
        {"type": "finish", "reason": {"kind": "bored"}},
        {"type": "tool-call-delta", "index": 0, "id": "c"},
    ],
)
def test_malformed_stream_chunks_are_refused(chunk: dict[str, Any]) -> None:
    with pytest.raises(msgspec.ValidationError):
        chunk_from_json(chunk)


def test_turn_end_reasons_are_an_open_union() -> None:
    assert turn_end_reason_from_json({"kind": "completed"}) == Completed()
    assert turn_end_reason_from_json({"kind": "interrupted"}) == Interrupted()
    aborted = turn_end_reason_from_json({"kind": "aborted", "reason": {"kind": "user"}})
    assert isinstance(aborted, Aborted) and aborted.reason == {"kind": "user"}
    unknown = turn_end_reason_from_json({"kind": "eclipse", "when": 3})
    assert isinstance(unknown, UnknownTurnEnd) and unknown.kind == "eclipse"
    assert unknown.to_json() == {"kind": "eclipse", "when": 3}
    assert Interrupted().to_json() == {"kind": "interrupted"}


def test_token_usage_round_trip() -> None:
    usage = harness.TokenUsage.from_json({"inputTokens": 120, "outputTokens": 14, "cacheReadTokens": 64})
    assert usage.total == 198
    assert dumps(usage.to_json()) == b'{"inputTokens":120,"outputTokens":14,"cacheReadTokens":64}'

"""The turn's own records (harness.messages.records): built with dsh's key order, read from
data of any shape without raising."""

from __future__ import annotations

from typing import Any

import pytest

from harness.events.event import Event
from harness.messages.records import (
    answered_call_id,
    assistant_record,
    chunk_record,
    step_bound,
    tool_call_ids,
    tool_call_record,
    tool_result_record,
    turn_end,
    turn_start,
)


def _keys(data: dict[str, Any]) -> list[str]:
    return list(data)


def test_builders_write_the_keys_in_dshs_order() -> None:
    assert _keys(turn_start(1)) == ["turn"]
    assert _keys(turn_end(1, {"kind": "completed"})) == ["turn", "reason"]
    assert _keys(step_bound(1, 2)) == ["turn", "step"]
    assert _keys(chunk_record(1, 2, {"type": "text-delta", "text": "x"})) == ["turn", "step", "chunk"]
    assert _keys(assistant_record(1, 2, {}, usage={"inputTokens": 1}, interrupted=True)) == [
        "turn",
        "step",
        "message",
        "usage",
        "interrupted",
    ]
    assert _keys(tool_call_record(1, 2, "c1", "read_file", "{}")) == [
        "turn",
        "step",
        "callId",
        "name",
        "arguments",
    ]
    assert _keys(tool_result_record(1, 2, {}, error={"name": "E", "code": "C"}, meta={"a": 1})) == [
        "turn",
        "step",
        "message",
        "error",
        "meta",
    ]


def test_optional_keys_are_left_out_unless_given() -> None:
    assert assistant_record(1, 1, {}) == {"turn": 1, "step": 1, "message": {}}
    assert tool_result_record(1, 1, {}) == {"turn": 1, "step": 1, "message": {}}
    encoded = Event.create("tool/result", 0, 0, tool_result_record(1, 1, {"id": "m"})).data_json
    assert encoded == b'{"turn":1,"step":1,"message":{"id":"m"}}'


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({"message": {"source": {"kind": "tool", "callId": "c1"}}}, "c1"),
        ({"message": {"source": {"kind": "tool", "callId": 7}}}, 7),
        ({"message": {"source": "tool"}}, None),
        ({"message": None}, None),
        ([], None),
        (None, None),
    ],
)
def test_answered_call_id_reads_any_shape(data: Any, expected: Any) -> None:
    assert answered_call_id(data) == expected


def test_tool_call_ids_keep_what_is_stored_and_skip_other_blocks() -> None:
    message = {
        "content": [
            {"type": "text", "text": "x"},
            {"type": "tool-call", "id": "a"},
            {"type": "tool-call"},
            "not a block",
            {"type": "tool-call", "id": ["odd"]},
        ]
    }
    assert tool_call_ids(message) == ["a", None, ["odd"]]
    assert tool_call_ids({"content": "text"}) == []
    assert tool_call_ids(None) == []

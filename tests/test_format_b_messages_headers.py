"""FORMAT §13 group B (cases 13–18): message and request-header shapes on seed/append.

The seed checks are FORMAT §7.2 steps 1–8 (first failure wins); the append checks are
FORMAT §7.5. The load-time refusal of a stored ``mode/set`` (case 18) is a rule of the
persistence load pipeline (§7.4) and belongs to the storage test suite.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any, cast

import pytest

from harness import (
    Event,
    InvalidEvent,
    InvalidEventData,
    InvalidSeed,
    Session,
    encode_event,
    fold_request_header,
)

SID = "s"
HEADER: dict[str, Any] = {"version": 0, "id": SID, "createdAt": 1}
CLOCK_MS = 4242

USER_MESSAGE: dict[str, Any] = {
    "content": [{"type": "text", "text": "count lines in a.txt"}],
    "source": {"kind": "user"},
    "role": "user",
    "id": "u-1",
}
ASSISTANT_MESSAGE: dict[str, Any] = {
    "role": "assistant",
    "content": [{"type": "tool-call", "id": "call_x1", "name": "bash", "arguments": '{"cmd":"wc -l a.txt"}'}],
    "source": {"kind": "model", "provider": "deepseek-official", "model": "deepseek-v4-flash"},
    "id": "a-1",
}
TOOL_RESULT_MESSAGE: dict[str, Any] = {
    "source": {"kind": "tool", "callId": "call_x1"},
    "content": [
        {
            "type": "tool-result",
            "toolCallId": "call_x1",
            "content": [{"type": "text", "text": "42 a.txt"}],
            "isError": False,
        }
    ],
    "role": "user",
    "id": "t-1",
}
REQUEST_HEADER: dict[str, Any] = {
    "header": {
        "config": {
            "provider": "deepseek-official",
            "model": "deepseek-v4-flash",
            "maxTokens": 256000,
            "reasoningEffort": "high",
        },
        "adapterDefaults": {"reasoningEffort": True, "maxTokens": True},
        "system": "You are a coding agent.",
        "tools": [{"name": "bash", "description": "Run a command", "parameters": {"type": "object"}}],
    },
    "reason": "initial",
}

# FORMAT §4's constructed example turn, verbatim.
EXAMPLE_TURN: list[dict[str, Any]] = [
    {"type": "turn/start", "seq": 0, "time": 1000, "data": {"turn": 1}},
    {"type": "step/start", "seq": 1, "time": 1001, "data": {"turn": 1, "step": 1}},
    {"type": "user/message", "seq": 2, "time": 1001, "data": USER_MESSAGE, "surfaceOp": "append"},
    {"type": "request/header", "seq": 3, "time": 1002, "data": REQUEST_HEADER},
    {
        "type": "request/context",
        "seq": 4,
        "time": 1002,
        "data": {"provider": "deepseek-official", "model": "deepseek-v4-flash", "contextWindow": 1000000},
    },
    {
        "type": "assistant/chunk",
        "seq": 5,
        "time": 1100,
        "data": {
            "turn": 1,
            "step": 1,
            "chunk": {"type": "block-start", "index": 0, "blockType": "tool-call"},
        },
    },
    {
        "type": "assistant/chunk",
        "seq": 6,
        "time": 1100,
        "data": {
            "turn": 1,
            "step": 1,
            "chunk": {
                "type": "tool-call-delta",
                "index": 0,
                "id": "call_x1",
                "name": "bash",
                "argumentsDelta": '{"cmd":"wc -l a.txt"}',
            },
        },
    },
    {
        "type": "assistant/chunk",
        "seq": 7,
        "time": 1101,
        "data": {
            "turn": 1,
            "step": 1,
            "chunk": {"type": "block-end", "index": 0, "block": ASSISTANT_MESSAGE["content"][0]},
        },
    },
    {
        "type": "assistant/chunk",
        "seq": 8,
        "time": 1101,
        "data": {
            "turn": 1,
            "step": 1,
            "chunk": {
                "type": "usage",
                "usage": {"inputTokens": 120, "outputTokens": 14, "cacheReadTokens": 64},
            },
        },
    },
    {
        "type": "assistant/chunk",
        "seq": 9,
        "time": 1101,
        "data": {"turn": 1, "step": 1, "chunk": {"type": "finish", "reason": {"kind": "tool-calls"}}},
    },
    {
        "type": "assistant/message",
        "seq": 10,
        "time": 1101,
        "data": {
            "turn": 1,
            "step": 1,
            "message": ASSISTANT_MESSAGE,
            "usage": {"inputTokens": 120, "outputTokens": 14, "cacheReadTokens": 64},
        },
        "sourceEventSeqs": [5, 6, 7, 8, 9],
        "surfaceOp": "append",
    },
    {
        "type": "tool/call",
        "seq": 11,
        "time": 1102,
        "data": {
            "turn": 1,
            "step": 1,
            "callId": "call_x1",
            "name": "bash",
            "arguments": '{"cmd":"wc -l a.txt"}',
        },
    },
    {
        "type": "tool/result",
        "seq": 12,
        "time": 1150,
        "data": {"turn": 1, "step": 1, "message": TOOL_RESULT_MESSAGE},
        "sourceEventSeqs": [11],
        "surfaceOp": "append",
    },
    {"type": "step/end", "seq": 13, "time": 1151, "data": {"turn": 1, "step": 1}},
    {"type": "turn/end", "seq": 14, "time": 1152, "data": {"turn": 1, "reason": {"kind": "completed"}}},
]


def _clock() -> int:
    return CLOCK_MS


def _restore(seed: list[dict[str, Any]]) -> Session:
    return Session.from_restore(SID, seed, HEADER, clock=_clock)


def _seed_error(seed: list[dict[str, Any]]) -> InvalidSeed:
    with pytest.raises(InvalidSeed) as info:
        _restore(seed)
    assert type(info.value) is InvalidSeed
    return info.value


def _wire(event: Event) -> Any:
    return json.loads(encode_event(event))


def _prefix() -> list[dict[str, Any]]:
    """A valid two-event prefix so the event under test sits at index 2."""
    return copy.deepcopy(EXAMPLE_TURN[:2])


def _user_event(seq: int, data: Any) -> dict[str, Any]:
    return {"type": "user/message", "seq": seq, "time": 1001, "data": data, "surfaceOp": "append"}


def _assistant_event(seq: int, data: Any) -> dict[str, Any]:
    return {
        "type": "assistant/message",
        "seq": seq,
        "time": 1101,
        "data": data,
        "sourceEventSeqs": [],
        "surfaceOp": "append",
    }


def _tool_result_event(seq: int, message: Any) -> dict[str, Any]:
    return {
        "type": "tool/result",
        "seq": seq,
        "time": 1150,
        "data": {"turn": 1, "step": 1, "message": message},
        "surfaceOp": "append",
    }


def _request_header_event(seq: int, data: Any) -> dict[str, Any]:
    return {"type": "request/header", "seq": seq, "time": 1002, "data": data}


def _with(base: dict[str, Any], edit: Callable[[dict[str, Any]], object]) -> dict[str, Any]:
    out = copy.deepcopy(base)
    edit(out)
    return out


def _log_state(session: Session) -> tuple[list[bytes], list[int], int, int]:
    return (
        [encode_event(e) for e in session.events],
        list(session.surface.nodes),
        session.surface.replace_generation,
        len(session.derive_messages()),
    )


def test_b00_format_example_turn_restores_verbatim() -> None:
    """13–17. (valid counterpart) the FORMAT §4 example turn restores with every event kept verbatim."""
    session = _restore(copy.deepcopy(EXAMPLE_TURN))
    assert [_wire(e) for e in session.events[:15]] == EXAMPLE_TURN
    assert session.first_live_seq == 15
    assert session.events[15].type == "session/end-seed"
    assert list(session.surface.nodes) == [2, 10, 12]
    assert [m.id for m in session.derive_messages()] == ["u-1", "a-1", "t-1"]


# ---- case 13 -----------------------------------------------------------------------------


def _drop(key: str) -> Callable[[dict[str, Any]], object]:
    return lambda m: m.pop(key)


def _set(key: str, value: Any) -> Callable[[dict[str, Any]], object]:
    return lambda m: m.__setitem__(key, value)


_BAD_USER_MESSAGES: list[tuple[str, Any, str]] = [
    ("data-null", None, "lacks an identified message"),
    ("data-string", "hi", "lacks an identified message"),
    ("id-missing", _with(USER_MESSAGE, _drop("id")), "lacks an identified message"),
    ("id-empty", _with(USER_MESSAGE, _set("id", "")), "lacks an identified message"),
    ("id-number", _with(USER_MESSAGE, _set("id", 1)), "lacks an identified message"),
    ("role-assistant", _with(USER_MESSAGE, _set("role", "assistant")), "role"),
    ("role-missing", _with(USER_MESSAGE, _drop("role")), "role"),
    ("source-null", _with(USER_MESSAGE, _set("source", None)), "invalid source"),
    ("source-no-kind", _with(USER_MESSAGE, _set("source", {})), "invalid source"),
    ("source-empty-kind", _with(USER_MESSAGE, _set("source", {"kind": ""})), "invalid source"),
    ("content-x", _with(USER_MESSAGE, _set("content", "x")), "invalid content"),
    ("content-null", _with(USER_MESSAGE, _set("content", None)), "invalid content"),
]


@pytest.mark.parametrize(
    ("label", "data", "fragment"), _BAD_USER_MESSAGES, ids=[label for label, _, _ in _BAD_USER_MESSAGES]
)
def test_b13_user_message_shape_refused(label: str, data: Any, fragment: str) -> None:
    """13. user/message `data:null` → "lacks an identified message"; role `assistant` → role error; `source:null` → "invalid source"; `content:"x"` → "invalid content"."""  # noqa: E501
    err = _seed_error([*_prefix(), _user_event(2, data)])
    assert err.index == 2
    assert err.rule == "message"
    assert "seed user/message at index 2" in str(err)
    assert fragment in str(err)


def test_b13_message_check_precedes_contiguity() -> None:
    """13. (order, FORMAT §7.2) message shape (step 5) is checked before seq contiguity (step 7)."""
    err = _seed_error([*_prefix(), _user_event(9, None)])
    assert err.index == 2
    assert err.rule == "message"
    assert "lacks an identified message" in str(err)


def test_b13_envelope_precedes_message_check() -> None:
    """13. (order, FORMAT §7.2) the envelope (step 3) is checked before the message shape (step 5)."""
    bad = {**_user_event(2, None), "extra": True}
    err = _seed_error([*_prefix(), bad])
    assert err.index == 2
    assert err.rule == "envelope"
    assert "invalid event envelope" in str(err)


@pytest.mark.parametrize(
    "message",
    [
        USER_MESSAGE,
        _with(USER_MESSAGE, _set("source", {"kind": "plugin", "plugin": "compact", "compactionId": "c"})),
        _with(USER_MESSAGE, _set("content", [])),
        _with(USER_MESSAGE, _set("content", [{"type": "future-block", "x": 1}])),
    ],
    ids=["plain", "plugin-source", "empty-content", "unknown-block"],
)
def test_b13_user_message_valid_round_trips(message: dict[str, Any]) -> None:
    """13. (valid counterpart) an identified user message with any source kind round-trips."""
    event = _user_event(2, message)
    session = _restore([*_prefix(), event])
    assert _wire(session.events[2]) == event
    assert list(session.surface.nodes) == [2]


# ---- case 14 -----------------------------------------------------------------------------

_BAD_ASSISTANT_DATA: list[tuple[str, Any, str]] = [
    (
        "user-source",
        {"turn": 1, "step": 1, "message": _with(ASSISTANT_MESSAGE, _set("source", {"kind": "user"}))},
        "must have model source",
    ),
    (
        "model-source-no-provider",
        {
            "turn": 1,
            "step": 1,
            "message": _with(ASSISTANT_MESSAGE, _set("source", {"kind": "model", "model": "m"})),
        },
        "must have model source",
    ),
    (
        "model-source-empty-model",
        {
            "turn": 1,
            "step": 1,
            "message": _with(
                ASSISTANT_MESSAGE, _set("source", {"kind": "model", "provider": "p", "model": ""})
            ),
        },
        "must have model source",
    ),
    (
        "legacy-turn-step-content",
        {"turn": 1, "step": 1, "content": [{"type": "text", "text": "hi"}]},
        "lacks an identified message",
    ),
    ("data-null", None, "lacks an identified message"),
    (
        "role-user",
        {"turn": 1, "step": 1, "message": _with(ASSISTANT_MESSAGE, _set("role", "user"))},
        "role",
    ),
    (
        "source-null",
        {"turn": 1, "step": 1, "message": _with(ASSISTANT_MESSAGE, _set("source", None))},
        "invalid source",
    ),
    (
        "content-x",
        {"turn": 1, "step": 1, "message": _with(ASSISTANT_MESSAGE, _set("content", "x"))},
        "invalid content",
    ),
]


@pytest.mark.parametrize(
    ("label", "data", "fragment"), _BAD_ASSISTANT_DATA, ids=[label for label, _, _ in _BAD_ASSISTANT_DATA]
)
def test_b14_assistant_message_shape_refused(label: str, data: Any, fragment: str) -> None:
    """14. assistant/message with user source → "must have model source"; legacy `{turn,step,content}` seeded directly → "lacks an identified message"."""  # noqa: E501
    err = _seed_error([*_prefix(), _assistant_event(2, data)])
    assert err.index == 2
    assert err.rule == "message"
    assert "seed assistant/message at index 2" in str(err)
    assert fragment in str(err)


def test_b14_assistant_message_valid_round_trips() -> None:
    """14. (valid counterpart) an assistant message with a model source (and replayState) round-trips."""
    message = _with(
        ASSISTANT_MESSAGE,
        _set("source", {**ASSISTANT_MESSAGE["source"], "replayState": {"opaque": [1, 2]}}),
    )
    event = _assistant_event(2, {"turn": 1, "step": 1, "message": message, "interrupted": True})
    session = _restore([*_prefix(), event])
    assert _wire(session.events[2]) == event
    assert list(session.surface.nodes) == [2]


# ---- case 15 -----------------------------------------------------------------------------


def _tool_result_content(message: dict[str, Any], content: Any) -> None:
    message["content"] = content


_BAD_TOOL_RESULTS: list[tuple[str, Any, str]] = [
    ("user-source", _with(TOOL_RESULT_MESSAGE, _set("source", {"kind": "user"})), "must have tool source"),
    (
        "tool-source-no-callId",
        _with(TOOL_RESULT_MESSAGE, _set("source", {"kind": "tool"})),
        "must have tool source",
    ),
    (
        "tool-source-empty-callId",
        _with(TOOL_RESULT_MESSAGE, _set("source", {"kind": "tool", "callId": ""})),
        "must have tool source",
    ),
    (
        "text-only-content",
        _with(TOOL_RESULT_MESSAGE, _set("content", [{"type": "text", "text": "42 a.txt"}])),
        "must contain one tool-result block",
    ),
    ("empty-content", _with(TOOL_RESULT_MESSAGE, _set("content", [])), "must contain one tool-result block"),
    (
        "two-tool-result-blocks",
        _with(TOOL_RESULT_MESSAGE, _set("content", TOOL_RESULT_MESSAGE["content"] * 2)),
        "must contain one tool-result block",
    ),
    (
        "inner-content-not-array",
        _with(
            TOOL_RESULT_MESSAGE,
            _set("content", [{**TOOL_RESULT_MESSAGE["content"][0], "content": "42 a.txt"}]),
        ),
        "must contain one tool-result block",
    ),
    (
        "mismatched-ids",
        _with(
            TOOL_RESULT_MESSAGE,
            _set("content", [{**TOOL_RESULT_MESSAGE["content"][0], "toolCallId": "call_other"}]),
        ),
        "mismatched tool call ids",
    ),
    ("role-assistant", _with(TOOL_RESULT_MESSAGE, _set("role", "assistant")), "role"),
    ("no-id", _with(TOOL_RESULT_MESSAGE, _drop("id")), "lacks an identified message"),
]


@pytest.mark.parametrize(
    ("label", "message", "fragment"), _BAD_TOOL_RESULTS, ids=[label for label, _, _ in _BAD_TOOL_RESULTS]
)
def test_b15_tool_result_shape_refused(label: str, message: Any, fragment: str) -> None:
    """15. tool/result with user source → "must have tool source"; text-only content → "must contain one tool-result block"; differing call ids → "mismatched tool call ids"."""  # noqa: E501
    err = _seed_error([*_prefix(), _tool_result_event(2, message)])
    assert err.index == 2
    assert err.rule == "message"
    assert "seed tool/result at index 2" in str(err)
    assert fragment in str(err)


def test_b15_tool_result_valid_round_trips() -> None:
    """15. (valid counterpart) a tool result whose block id equals its source callId round-trips."""
    event = _tool_result_event(2, TOOL_RESULT_MESSAGE)
    event["data"] = {**event["data"], "error": {"name": "E", "code": "C"}, "meta": {"k": [1, None]}}
    session = _restore([*_prefix(), event])
    assert _wire(session.events[2]) == event
    assert [m.id for m in session.derive_messages()] == ["t-1"]


# ---- case 16 -----------------------------------------------------------------------------


_ABSENT: Any = object()


def _config(**changes: Any) -> dict[str, Any]:
    config: dict[str, Any] = {"provider": "deepseek-official", "model": "deepseek-v4-flash"}
    for key, value in changes.items():
        if value is _ABSENT:
            config.pop(key, None)
        else:
            config[key] = value
    return config


_BAD_PROVIDER_MODEL: list[tuple[str, Any]] = [
    ("no-provider", {"header": {"config": _config(provider=_ABSENT)}, "reason": "initial"}),
    ("no-model", {"header": {"config": _config(model=_ABSENT)}, "reason": "initial"}),
    ("empty-provider", {"header": {"config": _config(provider="")}, "reason": "initial"}),
    ("provider-number", {"header": {"config": _config(provider=1)}, "reason": "initial"}),
    ("header-x", {"header": "x", "reason": "initial"}),
    ("header-null", {"header": None, "reason": "initial"}),
    ("no-header", {"reason": "initial"}),
    ("config-missing", {"header": {}, "reason": "initial"}),
    ("data-null", None),
]


@pytest.mark.parametrize(
    ("label", "data"), _BAD_PROVIDER_MODEL, ids=[label for label, _ in _BAD_PROVIDER_MODEL]
)
def test_b16_request_header_lacks_provider_model(label: str, data: Any) -> None:
    """16. request/header without provider, or `header:"x"` → "lacks provider/model"."""
    err = _seed_error([*_prefix(), _request_header_event(2, data)])
    assert err.index == 2
    assert err.rule == "request-header"
    assert "seed request/header at index 2" in str(err)
    assert "lacks provider/model" in str(err)


@pytest.mark.parametrize("effort", ["", 1, None, True, ["high"]], ids=repr)
def test_b16_request_header_bad_reasoning_effort(effort: Any) -> None:
    """16. `reasoningEffort` `""`/`1` → invalid."""
    data = {"header": {"config": _config(reasoningEffort=effort)}, "reason": "initial"}
    err = _seed_error([*_prefix(), _request_header_event(2, data)])
    assert err.index == 2
    assert err.rule == "request-header"
    assert "seed request/header at index 2" in str(err)
    assert "invalid reasoningEffort" in str(err)


@pytest.mark.parametrize("effort", ["high", "turbo-experimental", "x"])
def test_b16_opaque_effort_round_trips(effort: str) -> None:
    """16. opaque non-empty effort round-trips."""
    event = _request_header_event(
        2, {"header": {"config": _config(reasoningEffort=effort)}, "reason": "change"}
    )
    session = _restore([*_prefix(), event])
    assert _wire(session.events[2]) == event
    header = fold_request_header(session.events)
    assert header is not None
    assert header.config["reasoningEffort"] == effort

    live = Session.create(HEADER, clock=_clock)
    appended = live.append("request/header", event["data"])
    assert _wire(appended)["data"] == event["data"]


# ---- case 17 -----------------------------------------------------------------------------

_BAD_ADAPTER_DEFAULTS: list[tuple[str, dict[str, Any], Any]] = [
    ("null", _config(maxTokens=256000), None),
    ("array", _config(maxTokens=256000), []),
    ("string", _config(maxTokens=256000), "maxTokens"),
    ("unknown-key", _config(maxTokens=256000), {"unknown": True}),
    ("maxTokens-false", _config(maxTokens=256000), {"maxTokens": False}),
    ("maxTokens-1", _config(maxTokens=256000), {"maxTokens": 1}),
    ("effort-marked-absent", _config(maxTokens=256000), {"reasoningEffort": True}),
    ("maxTokens-marked-absent", _config(reasoningEffort="high"), {"maxTokens": True}),
]


@pytest.mark.parametrize(
    ("label", "config", "markers"),
    _BAD_ADAPTER_DEFAULTS,
    ids=[label for label, _, _ in _BAD_ADAPTER_DEFAULTS],
)
def test_b17_request_header_bad_adapter_defaults(label: str, config: dict[str, Any], markers: Any) -> None:
    """17. adapterDefaults `null`, `[]`, `{unknown:true}`, `{maxTokens:false}`, `{reasoningEffort:true}` without config effort → invalid."""  # noqa: E501
    data = {"header": {"config": config, "adapterDefaults": markers}, "reason": "initial"}
    err = _seed_error([*_prefix(), _request_header_event(2, data)])
    assert err.index == 2
    assert err.rule == "request-header"
    assert "seed request/header at index 2" in str(err)
    assert "invalid adapterDefaults" in str(err)


@pytest.mark.parametrize(
    ("config", "markers"),
    [
        (_config(maxTokens=256000), {"maxTokens": True}),
        (_config(maxTokens=256000, reasoningEffort="high"), {"reasoningEffort": True, "maxTokens": True}),
        (_config(reasoningEffort="max"), {"reasoningEffort": True}),
        (_config(), {}),
    ],
    ids=["maxTokens", "both", "effort", "empty"],
)
def test_b17_adapter_defaults_round_trip(config: dict[str, Any], markers: dict[str, Any]) -> None:
    """17. `{maxTokens:true}` with config maxTokens → round-trips."""
    event = _request_header_event(
        2, {"header": {"config": config, "adapterDefaults": markers}, "reason": "initial"}
    )
    session = _restore([*_prefix(), event])
    assert _wire(session.events[2]) == event
    header = fold_request_header(session.events)
    assert header is not None
    assert dict(header.adapter_defaults) == markers
    assert dict(header.config) == config


# ---- case 18 -----------------------------------------------------------------------------


def test_b18_seed_request_header_delta_refused() -> None:
    """18. `request/header-delta` (seed) → rejected."""
    delta = {"type": "request/header-delta", "seq": 2, "time": 1002, "data": {"config": {"model": "m"}}}
    err = _seed_error([*_prefix(), delta])
    assert err.index == 2
    assert err.rule == "legacy"
    assert "unsupported legacy request/header-delta format" in str(err)


def test_b18_seed_header_delta_checked_before_envelope() -> None:
    """18. (order, FORMAT §7.2) the legacy delta type (step 2) wins over a bad envelope (step 3)."""
    delta = {"type": "request/header-delta", "seq": "x", "time": 1002, "data": {}, "extra": 1}
    err = _seed_error([*_prefix(), delta])
    assert err.index == 2
    assert err.rule == "legacy"
    assert "unsupported legacy request/header-delta format" in str(err)


def test_b18_seed_lossless_checked_before_header_delta() -> None:
    """18. (order, FORMAT §7.2) losslessness (step 1) is checked before the legacy delta type (step 2)."""
    delta = {"type": "request/header-delta", "seq": 2, "time": 1002, "data": {"x": float("nan")}}
    err = _seed_error([*_prefix(), delta])
    assert err.index == 2
    assert err.rule == "lossless"
    assert "seed event at index 2 is not losslessly JSON-serializable" in str(err)


def test_b18_seed_fallback_reason_refused() -> None:
    """18. reason `fallback` (seed) → rejected."""
    event = _request_header_event(2, {**REQUEST_HEADER, "reason": "fallback"})
    err = _seed_error([*_prefix(), event])
    assert err.index == 2
    assert err.rule == "legacy"
    assert "unsupported legacy request/header reason" in str(err)


def test_b18_seed_fallback_checked_before_contiguity() -> None:
    """18. (order, FORMAT §7.2) the fallback reason (step 6) is checked before contiguity (step 7)."""
    event = _request_header_event(7, {**REQUEST_HEADER, "reason": "fallback"})
    err = _seed_error([*_prefix(), event])
    assert err.index == 2
    assert err.rule == "legacy"


def test_b18_seed_header_shape_checked_before_fallback() -> None:
    """18. (order, FORMAT §7.2) the request/header shape (step 4) is checked before the fallback reason (step 6)."""  # noqa: E501
    event = _request_header_event(2, {"header": {"config": {}}, "reason": "fallback"})
    err = _seed_error([*_prefix(), event])
    assert err.index == 2
    assert err.rule == "request-header"
    assert "lacks provider/model" in str(err)


@pytest.mark.parametrize(
    ("kind", "data"),
    [
        ("request/header-delta", {"config": {"model": "m"}}),
        ("request/header", {**REQUEST_HEADER, "reason": "fallback"}),
    ],
    ids=["header-delta", "fallback"],
)
def test_b18_append_legacy_request_header_refused(kind: str, data: dict[str, Any]) -> None:
    """18. `request/header-delta` or reason `fallback` (append) → rejected; the log is unchanged."""
    session = Session.create(HEADER, clock=_clock)
    for event in EXAMPLE_TURN[:3]:
        session.append(
            event["type"],
            event["data"],
            surface_op=cast(Any, event.get("surfaceOp")),
            source_event_seqs=event.get("sourceEventSeqs"),
        )
    seen: list[int] = []
    session.subscribe(lambda e: seen.append(e.seq))
    before = _log_state(session)

    with pytest.raises(InvalidEvent) as info:
        session.append(kind, data)
    assert type(info.value) is InvalidEvent
    fragment = (
        "unsupported legacy request/header-delta format"
        if kind == "request/header-delta"
        else "unsupported legacy request/header reason"
    )
    assert fragment in str(info.value)
    assert _log_state(session) == before
    assert seen == []

    # the next valid append still lands at the next seq
    assert session.append("request/header", REQUEST_HEADER).seq == 3
    assert seen == [3]


@pytest.mark.parametrize("reason", ["initial", "resume", "change"])
def test_b18_current_request_header_reasons_accepted(reason: str) -> None:
    """18. (valid counterpart) reasons `initial`/`resume`/`change` are accepted on seed and append."""
    data = {**REQUEST_HEADER, "reason": reason}
    event = _request_header_event(2, data)
    session = _restore([*_prefix(), event])
    assert _wire(session.events[2]) == event
    appended = session.append("request/header", data)
    assert _wire(appended)["data"] == data


def test_b18_mode_set_seed_accepted_in_memory() -> None:
    """18. stored `mode/set` → load rejected is a persistence rule (§7.4); direct in-memory seeding accepts it (§2, §7.2)."""  # noqa: E501
    event = {"type": "mode/set", "seq": 2, "time": 1002, "data": {"mode": "plan"}}
    session = _restore([*_prefix(), event])
    assert _wire(session.events[2]) == event


# ---- append refuses what restore refuses (harness is stricter than dsh's §7.5) ---------------

_APPEND_SHAPE_CASES: list[tuple[str, str, Any, str]] = [
    *(("user/message", label, data, fragment) for label, data, fragment in _BAD_USER_MESSAGES),
    *(("assistant/message", label, data, fragment) for label, data, fragment in _BAD_ASSISTANT_DATA),
    *(
        ("tool/result", label, {"turn": 1, "step": 1, "message": message}, fragment)
        for label, message, fragment in _BAD_TOOL_RESULTS
    ),
    *(("request/header", label, data, "lacks provider/model") for label, data in _BAD_PROVIDER_MODEL),
    (
        "request/header",
        "bad-effort",
        {"header": {"config": _config(reasoningEffort="")}, "reason": "initial"},
        "invalid reasoningEffort",
    ),
    (
        "request/header",
        "bad-marker",
        {"header": {"config": _config(), "adapterDefaults": {"maxTokens": 1}}, "reason": "initial"},
        "invalid adapterDefaults",
    ),
]


@pytest.mark.parametrize(
    ("kind", "label", "data", "fragment"),
    _APPEND_SHAPE_CASES,
    ids=[f"{kind}-{label}" for kind, label, _, _ in _APPEND_SHAPE_CASES],
)
def test_append_refuses_every_shape_restore_refuses(kind: str, label: str, data: Any, fragment: str) -> None:
    """A live append of a message or request header that restore would refuse (FORMAT §7.2 steps
    4-5) is refused with the same reason, and nothing changes: a log harness writes always loads.
    (dsh skips these checks on append, §7.5; a log holding such an event then fails to load.)"""
    session = Session.create(HEADER, clock=_clock)
    for event in EXAMPLE_TURN[:2]:
        session.append(event["type"], event["data"])
    seen: list[int] = []
    session.subscribe(lambda e: seen.append(e.seq))
    before = _log_state(session)
    op: Any = "append" if kind != "request/header" else None
    with pytest.raises(InvalidEvent) as info:
        session.append(kind, copy.deepcopy(data), surface_op=op, source_event_seqs=[] if op else None)
    if isinstance(info.value, InvalidEventData):  # the call-id check (test_call_ids) came first
        assert "allId" in info.value.path
    else:
        assert fragment in str(info.value) and "would not load" in str(info.value)
    assert _log_state(session) == before and seen == []
    event = {"type": kind, "seq": 2, "time": 1, "data": data} | ({"surfaceOp": "append"} if op else {})
    _seed_error([*_prefix(), event])  # restore refuses the same event


def test_append_accepts_every_valid_shape_of_the_example_turn() -> None:
    """The valid counterpart: the FORMAT §4 example turn appends event by event."""
    session = Session.create(HEADER, clock=_clock)
    for event in EXAMPLE_TURN:
        session.append(
            event["type"],
            event["data"],
            surface_op=cast(Any, event.get("surfaceOp")),
            source_event_seqs=event.get("sourceEventSeqs"),
        )
    assert [m.id for m in session.derive_messages()] == ["u-1", "a-1", "t-1"]

"""The two other shortcuts of ``Session.append`` decide exactly as the code they skip.

* ``assistant_message_ok`` (one pass over a model reply) is True only when both the shape
  check and the tool call id check find nothing;
* the plain Surface append (``surface_op="append"`` with no sources, or an assistant
  message's empty list) commits what ``SurfaceManager.check`` + ``apply`` commit, and
  everything else still goes through them (same events, same Surface, same errors).
"""

from __future__ import annotations

import os
from typing import Any

import hypothesis.strategies as st
import pytest
from hypothesis import HealthCheck, given, settings

import harness
import harness.session.session as session_module
from harness.errors import InvalidEvent
from harness.events.event import Replace
from harness.events.json import FrozenDict, FrozenList
from harness.messages.call_ids import CALL_ID_CHECKS
from harness.messages.shapes import assistant_message_ok, message_event_problem
from harness.surface.manager import SurfaceManager

SETTINGS = settings(
    max_examples=int(os.environ.get("HARNESS_PROPERTY_EXAMPLES", "400")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

ODD: st.SearchStrategy[Any] = st.sampled_from(
    [None, "", 0, 1, True, [], {}, ("a",), FrozenList(["a"]), FrozenDict(a=1), "x", "model"]
)


ABSENT = object()
FIELDS = [
    ("message",),
    ("message", "id"),
    ("message", "role"),
    ("message", "source"),
    ("message", "content"),
    ("message", "source", "kind"),
    ("message", "source", "provider"),
    ("message", "source", "model"),
    ("message", "content", 0),
    ("message", "content", 0, "type"),
    ("message", "content", 0, "id"),
    ("message", "content", 1, "type"),
    ("message", "content", 1, "id"),
]
REPLACEMENTS = st.one_of(
    st.sampled_from(["", None]), ODD, st.just(ABSENT), st.sampled_from(["tool-call", "user", "text", "tool"])
)


def _valid() -> dict[str, Any]:
    source = {"kind": "model", "provider": "p", "model": "m"}
    content = [
        {"type": "text", "text": "hi"},
        {"type": "tool-call", "id": "c1", "name": "n", "arguments": "{}"},
    ]
    return {"message": {"role": "assistant", "id": "m-1", "source": source, "content": content}, "usage": {}}


def _mutate(data: Any, path: tuple[Any, ...], value: Any) -> None:
    target = data
    for part in path[:-1]:
        try:
            target = target[part]
        except (KeyError, IndexError, TypeError):
            return
    if type(target) is dict:
        if value is ABSENT:
            target.pop(path[-1], None)
        else:
            target[path[-1]] = value
    elif type(target) is list and type(path[-1]) is int and path[-1] < len(target):
        if value is ABSENT:
            del target[path[-1]]
        else:
            target[path[-1]] = value


@st.composite
def payloads(draw: st.DrawFn) -> Any:
    data: Any = _valid()
    for path, value in draw(st.lists(st.tuples(st.sampled_from(FIELDS), REPLACEMENTS), max_size=2)):
        _mutate(data, path, value)
    wrap = draw(
        st.sampled_from(["dict", "dict", "dict", "frozen-content", "tuple-content", "frozen", "none"])
    )
    message = data.get("message") if type(data) is dict else None
    if wrap == "frozen-content" and type(message) is dict and type(message.get("content")) is list:
        message["content"] = [FrozenDict(b) if type(b) is dict else b for b in message["content"]]
    elif wrap == "tuple-content" and type(message) is dict and type(message.get("content")) is list:
        message["content"] = tuple(message["content"])
    elif wrap == "frozen":
        return FrozenDict(data)
    elif wrap == "none":
        return None
    return data


@SETTINGS
@given(payloads())
def test_assistant_message_ok_only_when_both_checks_pass(data: Any) -> None:
    if assistant_message_ok(data):
        assert message_event_problem("assistant/message", data) is None
        assert CALL_ID_CHECKS["assistant/message"](data) is None


def test_assistant_message_ok_accepts_plain_replies() -> None:
    source = {"kind": "model", "provider": "p", "model": "m"}
    for content in ([], [{"type": "text", "text": "x"}], [{"type": "tool-call", "id": "c1", "name": "n"}]):
        data = {"message": {"role": "assistant", "id": "m", "source": source, "content": content}}
        assert assistant_message_ok(data)
    bad = {"message": {"role": "assistant", "id": "m", "source": source, "content": [{"type": "tool-call"}]}}
    assert not assistant_message_ok(bad)
    assert CALL_ID_CHECKS["assistant/message"](bad) is not None


# ---- the plain Surface append -----------------------------------------------------------------


def _message(kind: str, index: int) -> dict[str, Any]:
    if kind == "assistant/message":
        source = {"kind": "model", "provider": "p", "model": "m"}
        return {"message": {"role": "assistant", "id": f"a{index}", "source": source, "content": []}}
    if kind == "tool/result":
        return {
            "message": {
                "role": "user",
                "id": f"t{index}",
                "source": {"kind": "tool", "callId": "c1"},
                "content": [{"type": "tool-result", "toolCallId": "c1", "content": []}],
            }
        }
    if kind == "user/message":
        return {"role": "user", "id": f"u{index}", "source": {"kind": "user"}, "content": []}
    return {"x": index}


class AppendText(str):
    pass


class Seqs(list):  # type: ignore[type-arg]
    pass


class Bomb:
    """Truth, equality and length all raise: the shortcut must not touch them."""

    def __bool__(self) -> bool:
        raise RuntimeError("bool")

    def __eq__(self, other: object) -> bool:
        raise RuntimeError("eq")

    def __len__(self) -> int:
        raise RuntimeError("len")

    __hash__ = object.__hash__


OPS: list[Any] = [Bomb(), "append", AppendText("append"), None, "replace", {"op": "append"}, 0, Replace(0, 0)]
SOURCES: list[Any] = [Bomb(), None, [], (), [0], (0,), Seqs(), "", [0, 0], [-1], [99], {}, FrozenList()]
KINDS = ["assistant/message", "user/message", "tool/result", "assistant/chunk"]


def _run(fast: bool, steps: list[tuple[str, Any, Any]]) -> list[Any]:
    with pytest.MonkeyPatch.context() as patch:
        if not fast:  # the shortcut compares with session.APPEND: a sentinel turns it off
            patch.setattr(session_module, "APPEND", object())
        session = harness.Session.create({"version": 0, "id": "s", "createdAt": 1}, clock=lambda: 7)
        outcomes: list[Any] = []
        for index, (kind, op, sources) in enumerate(steps):
            try:
                event = session.append(kind, _message(kind, index), surface_op=op, source_event_seqs=sources)
            except (InvalidEvent, RuntimeError) as error:
                outcomes.append((type(error), str(error)))
                continue
            outcomes.append(
                (
                    event.type,
                    event.seq,
                    event.data_json,
                    event.surface_op,
                    event.source_event_seqs,
                    event.ignorable,
                )
            )
            assert type(event.surface_op) is not AppendText
        outcomes.append(
            (list(session.surface.nodes), session.surface.replace_generation, len(session.events))
        )
        outcomes.append([message.to_json() for message in session.derive_messages()])
        return outcomes


@SETTINGS
@given(
    st.lists(st.tuples(st.sampled_from(KINDS), st.sampled_from(OPS), st.sampled_from(SOURCES)), max_size=8)
)
def test_plain_surface_append_commits_what_check_and_apply_commit(steps: list[tuple[str, Any, Any]]) -> None:
    assert _run(True, steps) == _run(False, steps)


def test_the_shortcut_is_taken() -> None:
    """Not vacuous: with it turned off, a plain append goes through ``SurfaceManager.check``."""
    calls: list[str] = []
    original = SurfaceManager.check

    def spy(self: Any, *args: Any) -> Any:
        calls.append(args[0])
        return original(self, *args)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(SurfaceManager, "check", spy)
        session = harness.Session.create()
        session.append("assistant/message", _message("assistant/message", 0), surface_op="append")
        session.append(
            "assistant/message", _message("assistant/message", 1), surface_op="append", source_event_seqs=[]
        )
        session.append("user/message", _message("user/message", 2), surface_op="append")
        assert calls == []
        session.append("tool/result", _message("tool/result", 3), surface_op="append", source_event_seqs=[0])
        assert calls == ["tool/result"]


# ---- message ids ------------------------------------------------------------------------------


@SETTINGS
@given(st.binary(min_size=16, max_size=16))
def test_message_ids_are_what_uuid4_writes(raw: bytes) -> None:
    import uuid

    from harness.messages.model import _uuid4_text

    assert _uuid4_text(raw) == str(uuid.UUID(bytes=raw, version=4))


def test_new_message_id_is_a_fresh_uuid4() -> None:
    import uuid

    from harness.messages.model import new_message_id

    ids = {new_message_id() for _ in range(200)}
    assert len(ids) == 200
    for text in ids:
        parsed = uuid.UUID(text)
        assert parsed.version == 4 and parsed.variant == uuid.RFC_4122 and str(parsed) == text

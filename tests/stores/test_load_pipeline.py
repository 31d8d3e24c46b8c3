"""The load pipeline after a backend read (FORMAT §7.4, §7.6): refusals, legacy shapes, repair."""

from __future__ import annotations

from typing import Any

import pytest

import harness
from harness.errors import CorruptSession, UnsupportedFormat
from harness.session.header import SessionHeader
from harness.stores.backend import StoredLog
from harness.stores.store import restore_stored

SID = "legacy-1"
HEADER = SessionHeader(id=SID, created_at=1, delegation_depth=0)


def log(*events: dict[str, Any]) -> StoredLog:
    return StoredLog(HEADER, [dict(e) for e in events], location="/tmp/x/session.jsonl")


def ev(seq: int, kind: str, data: Any, **extra: Any) -> dict[str, Any]:
    return {"type": kind, "seq": seq, "time": 1000 + seq, "data": data, **extra}


def test_a11_unknown_type_is_refused_naming_it_and_the_raw_log() -> None:
    with pytest.raises(UnsupportedFormat, match=r"future/event.*raw log: /tmp/x/session.jsonl"):
        restore_stored(SID, log(ev(0, "future/event", {})))


def test_a11_unknown_ignorable_type_loads_and_is_kept() -> None:
    session, closers = restore_stored(SID, log(ev(0, "future/event", {"x": 1}, ignorable=True)))
    assert closers == []
    assert session.events[0].type == "future/event" and session.events[0].ignorable
    assert session.events[1].type == "session/end-seed"


@pytest.mark.parametrize(
    "event",
    [
        ev(0, "mode/set", {"mode": "plan"}),
        ev(0, "request/header-delta", {}),
        ev(
            0, "request/header", {"header": {"config": {"provider": "p", "model": "m"}}, "reason": "fallback"}
        ),
    ],
)
def test_b18_retired_formats_refuse_the_whole_log(event: dict[str, Any]) -> None:
    with pytest.raises(UnsupportedFormat, match="retired"):
        restore_stored(SID, log(ev(0, "turn/start", {"turn": 1}), {**event, "seq": 1}))


def test_invalid_stored_log_is_corruption_naming_the_session() -> None:
    bad = ev(0, "user/message", {"content": [], "source": {"kind": "user"}, "role": "assistant", "id": "u"})
    bad["surfaceOp"] = "append"
    with pytest.raises(CorruptSession, match=r"stored session .legacy-1. failed validation: .*role"):
        restore_stored(SID, log(bad))


def test_header_for_another_session_is_corruption() -> None:
    other = StoredLog(SessionHeader(id="someone-else", created_at=1), [])
    with pytest.raises(CorruptSession, match="someone-else"):
        restore_stored(SID, other)


def test_legacy_shapes_are_normalized_on_load() -> None:
    """FORMAT §7.6: pre-identity messages, steering messages, legacy turn-end reasons, trigger."""
    session, closers = restore_stored(
        SID,
        log(
            ev(0, "turn/start", {"turn": 1, "trigger": {"kind": "user"}}),
            ev(1, "step/start", {"turn": 1, "step": 1}),
            ev(
                2,
                "user/message",
                {"content": [{"type": "text", "text": "hi"}], "source": {"kind": "user"}},
                surfaceOp="append",
            ),
            ev(
                3,
                "steering/message",
                {
                    "turn": 1,
                    "message": {
                        "content": [{"type": "text", "text": "also this"}],
                        "source": {"kind": "user"},
                        "role": "user",
                        "id": "steer-1",
                    },
                },
                surfaceOp="append",
            ),
            ev(
                4,
                "assistant/message",
                {
                    "turn": 1,
                    "step": 1,
                    "content": [{"type": "tool-call", "id": "c1", "name": "bash", "arguments": "{}"}],
                    "provenance": {"provider": "p", "model": "m"},
                },
                surfaceOp="append",
                sourceEventSeqs=[],
            ),
            ev(5, "tool/call", {"turn": 1, "step": 1, "callId": "c1", "name": "bash", "arguments": "{}"}),
            ev(
                6,
                "tool/result",
                {
                    "turn": 1,
                    "step": 1,
                    "callId": "c1",
                    "content": [{"type": "text", "text": "ok"}],
                    "isError": False,
                },
                surfaceOp="append",
                sourceEventSeqs=[5],
            ),
            ev(
                7,
                "tool/result",
                {
                    "turn": 1,
                    "step": 1,
                    "callId": "c1",
                    "content": [{"type": "text", "text": "o"}],
                    "isError": False,
                },
                surfaceOp={"op": "replace", "start": 6, "end": 6},
                sourceEventSeqs=[6],
            ),
            ev(8, "step/end", {"turn": 1, "step": 1}),
            ev(9, "turn/end", {"turn": 1, "reason": {"kind": "aborted"}}),
            ev(10, "turn/start", {"turn": 2}),
            ev(11, "turn/end", {"turn": 2, "reason": {"kind": "error", "step": 1, "message": "boom"}}),
            ev(12, "turn/start", {"turn": 3}),
            ev(
                13,
                "turn/end",
                {
                    "turn": 3,
                    "reason": {"kind": "error", "step": 1, "failure": {"message": "x", "code": "SERVER"}},
                },
            ),
            ev(14, "turn/start", {"turn": 4}),
            ev(15, "turn/end", {"turn": 4, "reason": {"kind": "disposed"}}),
        ),
    )
    assert closers == []
    events = list(session.events)
    assert dict(events[0].data) == {"turn": 1}
    assert events[2].data["id"] == "legacy-message:legacy-1:2" and events[2].data["role"] == "user"
    assert events[3].type == "user/message" and events[3].data["id"] == "steer-1"
    message = events[4].data["message"]
    assert message["id"] == "legacy-message:legacy-1:4"
    assert harness.thaw(message["source"]) == {"provider": "p", "model": "m", "kind": "model"}
    result = events[6].data["message"]
    assert result["source"]["callId"] == "c1" and result["content"][0]["toolCallId"] == "c1"
    assert events[7].data["message"]["id"] == result["id"]  # a rewrite keeps the id it replaces
    assert harness.thaw(events[9].data["reason"]) == {"kind": "aborted", "reason": {"kind": "legacy"}}
    assert harness.thaw(events[11].data["reason"]) == {
        "kind": "error",
        "error": {"message": "boom", "code": "UNKNOWN"},
    }
    assert harness.thaw(events[13].data["reason"]) == {
        "kind": "error",
        "error": {"message": "x", "code": "SERVER"},
    }
    assert harness.thaw(events[15].data["reason"]) == {"kind": "aborted", "reason": {"kind": "disposed"}}
    assert [m.id for m in session.derive_messages()] == [
        "legacy-message:legacy-1:2",
        "steer-1",
        "legacy-message:legacy-1:4",
        result["id"],
    ]


def test_closers_come_before_the_end_seed_and_count_in_first_live_seq() -> None:
    session, closers = restore_stored(
        SID, log(ev(0, "turn/start", {"turn": 1}), ev(1, "step/start", {"turn": 1, "step": 1}))
    )
    assert [c.type for c in closers] == ["step/end", "turn/end"]
    assert [e.type for e in session.events] == [
        "turn/start",
        "step/start",
        "step/end",
        "turn/end",
        "session/end-seed",
    ]
    assert session.first_live_seq == 4

"""FORMAT §13 group E (cases 36–44): crash repair closers (FORMAT §8).

Logs are built through ``Session.create`` + ``append`` (or ``from_restore``); every
set of closers is then shown to be acceptable to the Surface and message-shape
rules by appending it and by restoring ``log + closers`` as a seed.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from typing import Any

from harness import (
    Event,
    Session,
    assistant_message,
    repair_closers,
    thaw,
    tool_call_block,
    tool_result_message,
    user_message,
)
from harness.session.repair import TOOL_NOT_STARTED_TEXT, TOOL_OUTCOME_UNKNOWN_TEXT

SESSION_ID = "repair-e"
HEADER: dict[str, Any] = {"version": 0, "id": SESSION_ID, "createdAt": 1}


# ---- local helpers ----------------------------------------------------------------------


def ticking(start: int = 1000, step: int = 7) -> Callable[[], int]:
    counter = itertools.count(start, step)
    return lambda: next(counter)


def new_session() -> Session:
    return Session.create(dict(HEADER), clock=ticking())


def turn_start(session: Session, turn: int = 1) -> Event:
    return session.append("turn/start", {"turn": turn})


def turn_end(session: Session, turn: int = 1) -> Event:
    return session.append("turn/end", {"turn": turn, "reason": {"kind": "completed"}})


def step_start(session: Session, turn: int = 1, step: int = 1) -> Event:
    return session.append("step/start", {"turn": turn, "step": step})


def step_end(session: Session, turn: int = 1, step: int = 1) -> Event:
    return session.append("step/end", {"turn": turn, "step": step})


def user(session: Session, text: str = "please") -> Event:
    return session.append("user/message", user_message(text, id=f"u-{len(session)}"), surface_op="append")


def calls(session: Session, *call_ids: str, turn: int = 1, step: int = 1) -> Event:
    """An assistant/message whose content is one tool-call block per id, in order."""
    message = assistant_message(
        [tool_call_block(call_id, "bash", '{"cmd":"ls"}') for call_id in call_ids],
        provider="deepseek-official",
        model="deepseek-v4-flash",
        id=f"a-{len(session)}",
    )
    return session.append(
        "assistant/message", {"turn": turn, "step": step, "message": message}, surface_op="append"
    )


def tool_call(session: Session, call_id: str, turn: int = 1, step: int = 1) -> Event:
    return session.append(
        "tool/call",
        {"turn": turn, "step": step, "callId": call_id, "name": "bash", "arguments": '{"cmd":"ls"}'},
    )


def tool_result(session: Session, call_id: str, call_seq: int, turn: int = 1, step: int = 1) -> Event:
    message = tool_result_message(call_id, "done", is_error=False, id=f"t-{len(session)}")
    return session.append(
        "tool/result",
        {"turn": turn, "step": step, "message": message},
        surface_op="append",
        source_event_seqs=[call_seq],
    )


def expected_result_data(call_id: str, seq: int, *, turn: int, step: int, started: bool) -> dict[str, Any]:
    return {
        "turn": turn,
        "step": step,
        "message": {
            "id": f"interrupted-tool-result-{call_id}-{seq}",
            "role": "user",
            "source": {"kind": "tool", "callId": call_id},
            "content": [
                {
                    "type": "tool-result",
                    "toolCallId": call_id,
                    "isError": True,
                    "content": [
                        {
                            "type": "text",
                            "text": TOOL_OUTCOME_UNKNOWN_TEXT if started else TOOL_NOT_STARTED_TEXT,
                        }
                    ],
                }
            ],
        },
        "error": (
            {"name": "ToolOutcomeUnknownError", "code": "TOOL_OUTCOME_UNKNOWN"}
            if started
            else {"name": "ToolNotStartedError", "code": "TOOL_NOT_STARTED"}
        ),
    }


def summary(closers: Sequence[Event]) -> list[tuple[str, int]]:
    return [(event.type, event.seq) for event in closers]


def assert_common(session: Session, closers: Sequence[Event]) -> None:
    """Seqs continue the log, every time is the last event's, and the log is not touched."""
    last = session.events[-1]
    assert [event.seq for event in closers] == list(range(last.seq + 1, last.seq + 1 + len(closers)))
    assert all(event.time == last.time for event in closers)
    assert closers[-1].type == "turn/end"
    for event in closers:
        if event.type == "tool/result":
            assert event.surface_op == "append"
            assert event.to_json()["surfaceOp"] == "append"
        else:
            assert event.surface_op is None
            assert event.source_event_seqs is None


def assert_accepted(session: Session, closers: Sequence[Event]) -> None:
    """The closers pass the seed rules (message shapes + Surface) and the append rules."""
    log = [event.to_json() for event in session.events]
    seed = [*log, *(closer.to_json() for closer in closers)]
    restored = Session.from_restore(SESSION_ID, seed, dict(HEADER), clock=lambda: 1)
    assert [event.to_json() for event in restored.events[: len(seed)]] == seed
    assert restored.events[-1].type == "session/end-seed"
    assert repair_closers(restored.events) == []

    nodes_before = list(session.surface.nodes)
    for closer in closers:
        appended = session.append(
            closer.type,
            closer.data,
            surface_op=closer.surface_op,
            source_event_seqs=closer.source_event_seqs,
        )
        assert appended.seq == closer.seq
        assert appended.data == closer.data
        assert appended.source_event_seqs == closer.source_event_seqs
    results = [closer.seq for closer in closers if closer.type == "tool/result"]
    assert list(session.surface.nodes) == nodes_before + results
    assert repair_closers(session.events) == []


# ---- case 36 ----------------------------------------------------------------------------


def test_e36_open_turn_gets_interrupted_turn_end() -> None:
    """36. `[turn/start]` → `turn/end{interrupted}@1`."""
    session = new_session()
    start = turn_start(session)
    closers = repair_closers(session.events)
    assert summary(closers) == [("turn/end", 1)]
    [end] = closers
    assert end.time == start.time
    assert thaw(end.data) == {"turn": 1, "reason": {"kind": "interrupted"}}
    assert end.to_json() == {"type": "turn/end", "seq": 1, "time": start.time, "data": end.data}
    assert len(session.events) == 1  # committed events are never rewritten
    assert_common(session, closers)
    assert_accepted(session, closers)


def test_e36_turn_number_is_kept() -> None:
    """36. `[turn/start]` → `turn/end{interrupted}@1` (for the open turn's number)."""
    session = new_session()
    turn_start(session, 1)
    turn_end(session, 1)
    turn_start(session, 2)
    closers = repair_closers(session.events)
    assert summary(closers) == [("turn/end", 3)]
    assert thaw(closers[0].data) == {"turn": 2, "reason": {"kind": "interrupted"}}


# ---- case 37 ----------------------------------------------------------------------------


def test_e37_open_step_gets_step_end_then_turn_end() -> None:
    """37. `[turn/start, step/start]` → `step/end@2`, `turn/end@3`."""
    session = new_session()
    turn_start(session)
    step_start(session)
    closers = repair_closers(session.events)
    assert summary(closers) == [("step/end", 2), ("turn/end", 3)]
    assert thaw(closers[0].data) == {"turn": 1, "step": 1}
    assert thaw(closers[1].data) == {"turn": 1, "reason": {"kind": "interrupted"}}
    assert_common(session, closers)
    assert_accepted(session, closers)


def test_e37_step_number_is_the_open_step() -> None:
    """37. `[turn/start, step/start]` → `step/end@2`, `turn/end@3` (closing the open step)."""
    session = new_session()
    turn_start(session)
    step_start(session, step=1)
    step_end(session, step=1)
    step_start(session, step=2)
    closers = repair_closers(session.events)
    assert summary(closers) == [("step/end", 4), ("turn/end", 5)]
    assert thaw(closers[0].data) == {"turn": 1, "step": 2}


# ---- case 38 ----------------------------------------------------------------------------


def test_e38_pending_call_without_tool_call_is_not_started() -> None:
    """38. Pending tool-call without `tool/call` → TOOL_NOT_STARTED result (no sources, isError, hash-matching text), step/end, turn/end; time = last time."""  # noqa: E501
    session = new_session()
    turn_start(session)
    step_start(session)
    user(session)
    calls(session, "call_x1")
    closers = repair_closers(session.events)
    assert summary(closers) == [("tool/result", 4), ("step/end", 5), ("turn/end", 6)]
    result = closers[0]
    assert thaw(result.data) == expected_result_data("call_x1", 4, turn=1, step=1, started=False)
    assert result.source_event_seqs is None
    assert "sourceEventSeqs" not in result.to_json()
    assert result.data["message"]["content"][0]["isError"] is True
    assert result.data["message"]["id"] == "interrupted-tool-result-call_x1-4"
    # Our own wording, with the meaning FORMAT gives (never ran; retry if needed).
    assert result.data["message"]["content"][0]["content"][0]["text"] == TOOL_NOT_STARTED_TEXT
    assert TOOL_NOT_STARTED_TEXT.strip()
    assert all(event.time == session.events[-1].time for event in closers)
    assert_common(session, closers)
    assert_accepted(session, closers)


# ---- case 39 ----------------------------------------------------------------------------


def test_e39_started_call_has_unknown_outcome() -> None:
    """39. Same with `tool/call@3` → TOOL_OUTCOME_UNKNOWN, `sourceEventSeqs:[3]`, `surfaceOp:"append"`."""
    session = new_session()
    turn_start(session)
    step_start(session)
    calls(session, "call_x1")
    call = tool_call(session, "call_x1")
    assert call.seq == 3
    closers = repair_closers(session.events)
    assert summary(closers) == [("tool/result", 4), ("step/end", 5), ("turn/end", 6)]
    result = closers[0]
    assert thaw(result.data) == expected_result_data("call_x1", 4, turn=1, step=1, started=True)
    assert result.source_event_seqs == (3,)
    assert result.surface_op == "append"
    wire = result.to_json()
    assert wire["sourceEventSeqs"] == [3]
    assert wire["surfaceOp"] == "append"
    assert result.data["message"]["content"][0]["content"][0]["text"] == TOOL_OUTCOME_UNKNOWN_TEXT
    assert result.time == call.time
    assert_common(session, closers)
    assert_accepted(session, closers)


def test_e39_restored_log_is_repaired_the_same_way() -> None:
    """39. Same with `tool/call@3` → TOOL_OUTCOME_UNKNOWN, `sourceEventSeqs:[3]`, `surfaceOp:"append"` (restored log)."""  # noqa: E501
    live = new_session()
    turn_start(live)
    step_start(live)
    calls(live, "call_x1")
    tool_call(live, "call_x1")
    # A restored session ends with its end-seed; repair runs on the stored events.
    restored = Session.from_restore(SESSION_ID, [e.to_json() for e in live.events], dict(HEADER))
    stored = list(restored.events[: len(live.events)])
    closers = repair_closers(stored)
    assert closers == repair_closers(live.events)
    assert closers[0].source_event_seqs == (3,)


# ---- case 40 ----------------------------------------------------------------------------


def test_e40_answered_call_needs_only_step_and_turn_end() -> None:
    """40. Call already answered → step/end + turn/end only; call whose step ended → turn/end only."""
    session = new_session()
    turn_start(session)
    step_start(session)
    calls(session, "c-1")
    call = tool_call(session, "c-1")
    tool_result(session, "c-1", call.seq)
    closers = repair_closers(session.events)
    assert summary(closers) == [("step/end", 5), ("turn/end", 6)]
    assert_common(session, closers)
    assert_accepted(session, closers)


def test_e40_call_whose_step_ended_needs_only_turn_end() -> None:
    """40. … call whose step ended → turn/end only."""
    session = new_session()
    turn_start(session)
    step_start(session)
    calls(session, "c-1")
    tool_call(session, "c-1")
    step_end(session)
    closers = repair_closers(session.events)
    assert summary(closers) == [("turn/end", 5)]
    assert_common(session, closers)
    assert_accepted(session, closers)


def test_e40_answer_without_tool_call_also_clears_the_call() -> None:
    """40. Call already answered → step/end + turn/end only (a result removes its `source.callId`)."""
    session = new_session()
    turn_start(session)
    step_start(session)
    message_event = calls(session, "c-1")
    tool_result(session, "c-1", message_event.seq)
    assert summary(repair_closers(session.events)) == [("step/end", 4), ("turn/end", 5)]


# ---- case 41 ----------------------------------------------------------------------------


def test_e41_only_the_open_turn_is_repaired() -> None:
    """41. Answered call in an earlier turn + unanswered `new-call` in the open turn → one result, for `new-call`."""  # noqa: E501
    session = new_session()
    turn_start(session, 1)
    step_start(session, 1, 1)
    calls(session, "old-call", turn=1, step=1)
    old = tool_call(session, "old-call", 1, 1)
    tool_result(session, "old-call", old.seq, 1, 1)
    step_end(session, 1, 1)
    turn_end(session, 1)
    turn_start(session, 2)
    step_start(session, 2, 1)
    step_end(session, 2, 1)
    step_start(session, 2, 2)
    calls(session, "new-call", turn=2, step=2)
    assert len(session) == 12
    closers = repair_closers(session.events)
    assert summary(closers) == [("tool/result", 12), ("step/end", 13), ("turn/end", 14)]
    assert thaw(closers[0].data) == expected_result_data("new-call", 12, turn=2, step=2, started=False)
    assert thaw(closers[1].data) == {"turn": 2, "step": 2}
    assert thaw(closers[2].data) == {"turn": 2, "reason": {"kind": "interrupted"}}
    assert_common(session, closers)
    assert_accepted(session, closers)


def test_e41_unanswered_call_of_a_closed_turn_is_not_repaired() -> None:
    """41. … earlier turns are not repaired (FORMAT §8)."""
    session = new_session()
    turn_start(session, 1)
    step_start(session, 1, 1)
    calls(session, "lost-call", turn=1, step=1)
    turn_end(session, 1)
    turn_start(session, 2)
    closers = repair_closers(session.events)
    assert summary(closers) == [("turn/end", 5)]


# ---- case 42 ----------------------------------------------------------------------------


def test_e42_two_calls_one_answered() -> None:
    """42. Two calls, one answered → one result; several unanswered → one each in block order."""
    session = new_session()
    turn_start(session)
    step_start(session)
    calls(session, "c-1", "c-2")
    first = tool_call(session, "c-1")
    tool_result(session, "c-1", first.seq)
    tool_call(session, "c-2")
    closers = repair_closers(session.events)
    assert summary(closers) == [("tool/result", 6), ("step/end", 7), ("turn/end", 8)]
    assert thaw(closers[0].data) == expected_result_data("c-2", 6, turn=1, step=1, started=True)
    assert closers[0].source_event_seqs == (5,)
    assert_common(session, closers)
    assert_accepted(session, closers)


def test_e42_several_unanswered_calls_in_block_order() -> None:
    """42. … several unanswered → one each in block order."""
    session = new_session()
    turn_start(session)
    step_start(session)
    calls(session, "z-call", "a-call", "m-call")
    # tool/call events in another order do not change the block order.
    a_seq = tool_call(session, "a-call").seq
    z_seq = tool_call(session, "z-call").seq
    closers = repair_closers(session.events)
    assert summary(closers) == [
        ("tool/result", 5),
        ("tool/result", 6),
        ("tool/result", 7),
        ("step/end", 8),
        ("turn/end", 9),
    ]
    assert [c.data["message"]["source"]["callId"] for c in closers[:3]] == ["z-call", "a-call", "m-call"]
    assert thaw(closers[0].data) == expected_result_data("z-call", 5, turn=1, step=1, started=True)
    assert thaw(closers[1].data) == expected_result_data("a-call", 6, turn=1, step=1, started=True)
    assert thaw(closers[2].data) == expected_result_data("m-call", 7, turn=1, step=1, started=False)
    assert [c.source_event_seqs for c in closers[:3]] == [(z_seq,), (a_seq,), None]
    assert [c.data["message"]["id"] for c in closers[:3]] == [
        "interrupted-tool-result-z-call-5",
        "interrupted-tool-result-a-call-6",
        "interrupted-tool-result-m-call-7",
    ]
    assert_common(session, closers)
    assert_accepted(session, closers)


# ---- case 43 ----------------------------------------------------------------------------


def test_e43_tool_call_without_block_gets_no_result() -> None:
    """43. `tool/call` without a registering block → no result."""
    session = new_session()
    turn_start(session)
    step_start(session)
    calls(session, "real")
    tool_call(session, "ghost")
    session.append(
        "tool/result",
        {"turn": 1, "step": 1, "message": tool_result_message("real", "x", id="t-r")},
        surface_op="append",
    )
    closers = repair_closers(session.events)
    assert summary(closers) == [("step/end", 5), ("turn/end", 6)]
    assert_common(session, closers)
    assert_accepted(session, closers)


def test_e43_tool_call_with_non_string_call_id_is_ignored() -> None:
    """43. `tool/call` without a registering block → no result (whatever its `callId` holds)."""
    session = new_session()
    turn_start(session)
    step_start(session)
    # append refuses such ids (a foreign writer's log may hold them): build the events
    odd = [
        Event.create(type="tool/call", seq=seq, time=1, data=data)
        for seq, data in enumerate(
            [
                {"turn": 1, "step": 1, "callId": {"odd": 1}, "name": "bash", "arguments": "{}"},
                {"turn": 1, "step": 1, "callId": ["odd"], "name": "bash", "arguments": "{}"},
            ],
            len(session),
        )
    ]
    closers = repair_closers([*session.events, *odd])
    assert summary(closers) == [("step/end", 4), ("turn/end", 5)]


# ---- case 44 ----------------------------------------------------------------------------


def test_e44_empty_log_has_no_closers() -> None:
    """44. Balanced or empty log → no closers."""
    assert repair_closers([]) == []
    assert repair_closers(new_session().events) == []
    restored = Session.from_restore(SESSION_ID, [], dict(HEADER))
    assert repair_closers(restored.events) == []


def test_e44_balanced_log_has_no_closers() -> None:
    """44. Balanced or empty log → no closers."""
    session = new_session()
    turn_start(session)
    step_start(session)
    user(session)
    calls(session, "c-1")
    call = tool_call(session, "c-1")
    tool_result(session, "c-1", call.seq)
    step_end(session)
    turn_end(session)
    assert repair_closers(session.events) == []
    # Events after the last turn are not repaired either.
    session.append("session/title", {"title": "demo"})
    user(session, "queued for later")
    assert repair_closers(session.events) == []
    restored = Session.from_restore(SESSION_ID, [e.to_json() for e in session.events], dict(HEADER))
    assert repair_closers(restored.events) == []

"""Crash repair: the events that close a turn a crash left open (FORMAT §8).

``repair_closers(events)`` never rewrites a committed event. It returns new events
(seqs continuing the log, ``time`` equal to the last event's) that a store commits
before the session is resumed: a synthetic ``tool/result`` per tool call of the
open step that has no result, then ``step/end`` if a step is open, then
``turn/end`` with reason ``interrupted``. The texts the model will read are our own.

The closers carry the log's values as they are (a pending call's id, the turn and
step numbers), as in the reference: when one of those is unusable (a call without a
non-empty string id, a turn that is not a positive integer) the closers do not load,
and a restore refuses the session rather than commit them (``Session.from_stored``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from harness.events.event import APPEND, Event
from harness.events.json import FrozenDict, FrozenList
from harness.messages.records import answered_call_id, step_bound, tool_call_ids, tool_result_record, turn_end

__all__ = ["REPAIR_NOTE", "TOOL_NOT_STARTED_TEXT", "TOOL_OUTCOME_UNKNOWN_TEXT", "repair_closers"]

REPAIR_NOTE: Final = "harness/repair"
"""The ignorable event a store's crash repair commits after the closers: whose turn it closed
(``previousOwner``), who closed it (``repairedBy``) and why it could (``reason``:
``owner-gone`` or ``taken-over``). dsh keeps it and reads past it (it is ignorable)."""

TOOL_OUTCOME_UNKNOWN_TEXT: Final = (
    "This tool call started before the session was interrupted, but no result was saved, so its outcome "
    "is unknown: it may have run fully, partly, or not at all. Repeat it only if it is read-only or safe "
    "to run twice. Otherwise check the current state first (files, processes, remote systems) or ask the "
    "user. Do not simply run it again."
)
TOOL_NOT_STARTED_TEXT: Final = (
    "The session was interrupted before this tool call started, so it never ran. Call it again if it is "
    "still needed."
)


_OPEN_NONE: Final = object()  # "no turn is open" (a turn's number may itself be null)


class _Pending:
    __slots__ = ("call_id", "call_seq", "step")

    def __init__(self, call_id: Any, step: Any) -> None:
        self.call_id = call_id
        self.step = step
        self.call_seq: int | None = None


def _key(call_id: Any) -> Any:
    # Pending calls are keyed by id; an unhashable (object or array) id keys by its text.
    return call_id if isinstance(call_id, str | int | float | None) else repr(call_id)


def repair_closers(events: Sequence[Event]) -> list[Event]:
    """The closers for a trailing open turn, or ``[]`` when no turn is open."""
    # Only the last turn can be open, and the scan state resets at every turn/start,
    # so the scan starts at the last turn boundary (found by type alone: no decoding).
    start = None
    for index in range(len(events) - 1, -1, -1):
        kind = events[index].type
        if kind == "turn/end":
            return []
        if kind == "turn/start":
            start = index
            break
    if start is None:
        return []
    turn: Any = _OPEN_NONE
    step: Any = None
    pending: dict[Any, _Pending] = {}
    for event in events[start:]:
        kind = event.type
        data = event.data if isinstance(event.data, Mapping) else FrozenDict()
        if kind == "turn/start":
            # As in the reference, a turn numbered null reads as no open turn; one
            # without a number gets closers numbered null, which a restore refuses.
            turn = data.get("turn")
            if turn is None and "turn" in data:
                turn = _OPEN_NONE
            step = None
            pending.clear()
        elif kind == "turn/end":
            turn, step = _OPEN_NONE, None
            pending.clear()
        elif kind == "step/start":
            step = data.get("step")
        elif kind == "step/end":
            step = None
            pending.clear()
        elif kind == "assistant/message":
            for call_id in tool_call_ids(data.get("message")):
                pending[_key(call_id)] = _Pending(call_id, data.get("step"))
        elif kind == "tool/call":
            call = pending.get(_key(data.get("callId")))
            if call is not None:
                call.call_seq = event.seq
        elif kind == "tool/result":
            pending.pop(_key(answered_call_id(data)), None)
    if turn is _OPEN_NONE or not events:
        return []
    last = events[-1]
    seq, now = last.seq + 1, last.time
    closers: list[Event] = []
    for call in pending.values():
        started = call.call_seq is not None
        message = FrozenDict(
            id=f"interrupted-tool-result-{call.call_id}-{seq}",
            role="user",
            source=FrozenDict(kind="tool", callId=call.call_id),
            content=FrozenList(
                [
                    FrozenDict(
                        type="tool-result",
                        toolCallId=call.call_id,
                        isError=True,
                        content=FrozenList(
                            [
                                FrozenDict(
                                    type="text",
                                    text=TOOL_OUTCOME_UNKNOWN_TEXT if started else TOOL_NOT_STARTED_TEXT,
                                )
                            ]
                        ),
                    )
                ]
            ),
        )
        error = (
            FrozenDict(name="ToolOutcomeUnknownError", code="TOOL_OUTCOME_UNKNOWN")
            if started
            else FrozenDict(name="ToolNotStartedError", code="TOOL_NOT_STARTED")
        )
        closers.append(
            Event.create(
                type="tool/result",
                seq=seq,
                time=now,
                data=tool_result_record(turn, call.step, message, error=error),
                surface_op=APPEND,
                source_event_seqs=(call.call_seq,) if call.call_seq is not None else None,
            )
        )
        seq += 1
    if step is not None:
        closers.append(Event.create(type="step/end", seq=seq, time=now, data=step_bound(turn, step)))
        seq += 1
    closers.append(
        Event.create(
            type="turn/end",
            seq=seq,
            time=now,
            data=turn_end(turn, {"kind": "interrupted"}),
        )
    )
    return closers

"""The data of the turn's own records, built and read in one place (FORMAT §4).

The builders return the dict an append takes, with its keys in the order dsh writes them:
``turn_start`` (``turn/start``), ``turn_end``, ``step_bound`` (``step/start`` and
``step/end``), ``chunk_record``, ``assistant_record``, ``tool_call_record`` and
``tool_result_record``. The read views take data of any shape and never raise:
``answered_call_id`` (the call a ``tool/result`` answers) and ``tool_call_ids`` (the calls an
assistant message asks for).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = [
    "answered_call_id",
    "assistant_record",
    "chunk_record",
    "step_bound",
    "tool_call_ids",
    "tool_call_record",
    "tool_result_record",
    "turn_end",
    "turn_start",
]


def turn_start(turn: int) -> dict[str, Any]:
    """``turn/start`` data."""
    return {"turn": turn}


def turn_end(turn: Any, reason: Mapping[str, Any]) -> dict[str, Any]:
    """``turn/end`` data: the turn and why it ended (a ``TurnEndReason`` as JSON)."""
    return {"turn": turn, "reason": reason}


def step_bound(turn: Any, step: Any) -> dict[str, Any]:
    """``step/start`` or ``step/end`` data."""
    return {"turn": turn, "step": step}


def chunk_record(turn: int, step: int, chunk: Mapping[str, Any]) -> dict[str, Any]:
    """``assistant/chunk`` data: one stream chunk as JSON."""
    return {"turn": turn, "step": step, "chunk": chunk}


def assistant_record(
    turn: int, step: int, message: Mapping[str, Any], *, usage: Any = None, interrupted: bool = False
) -> dict[str, Any]:
    """``assistant/message`` data; ``usage`` and ``interrupted`` only when given."""
    data: dict[str, Any] = {"turn": turn, "step": step, "message": message}
    if usage is not None:
        data["usage"] = usage
    if interrupted:
        data["interrupted"] = True
    return data


def tool_call_record(turn: int, step: int, call_id: str, name: str, arguments: Any) -> dict[str, Any]:
    """``tool/call`` data: the call about to run."""
    return {"turn": turn, "step": step, "callId": call_id, "name": name, "arguments": arguments}


def tool_result_record(
    turn: Any, step: Any, message: Mapping[str, Any], *, error: Any = None, meta: Any = None
) -> dict[str, Any]:
    """``tool/result`` data; ``error`` (``{name, code}``) and ``meta`` only when given."""
    data: dict[str, Any] = {"turn": turn, "step": step, "message": message}
    if error is not None:
        data["error"] = error
    if meta is not None:
        data["meta"] = meta
    return data


def answered_call_id(data: Any) -> Any:
    """The ``callId`` of a ``tool/result``'s message source as stored, or None."""
    message = data.get("message") if isinstance(data, Mapping) else None
    source = message.get("source") if isinstance(message, Mapping) else None
    return source.get("callId") if isinstance(source, Mapping) else None


def tool_call_ids(message: Any) -> list[Any]:
    """The ids of a message's ``tool-call`` blocks, as stored (None where one has none)."""
    content = message.get("content") if isinstance(message, Mapping) else None
    if not isinstance(content, list | tuple):
        return []
    return [
        block.get("id")
        for block in content
        if isinstance(block, Mapping) and block.get("type") == "tool-call"
    ]

"""Tool-call ids on the write side: whatever harness writes, harness and dsh load.

A call id pairs an assistant ``tool-call`` block with its ``tool/call``, its
``approval/asked`` and its ``tool/result``. Crash repair answers a pending call
with a ``tool/result`` citing that id, and a ``tool/result`` without a non-empty
string ``callId`` does not load (FORMAT §7.2, in harness and in dsh). So an id
that is missing, ``""`` or not a string would leave a log that a crash poisons;
``Session.append`` refuses it with ``call_id_problem``.
"""

from __future__ import annotations

from typing import Any, Final

__all__ = ["CALL_ID_TYPES", "call_id_problem", "usable_call_id"]

CALL_ID_TYPES: Final = frozenset({"assistant/message", "tool/call", "tool/result", "approval/asked"})
"""The event types whose data carries call ids (only these pay for the check)."""


def usable_call_id(value: object) -> bool:
    """Whether ``value`` can pair a call with its result: a non-empty string."""
    return type(value) is str and value != ""


_ABSENT: Final = object()
_ARRAY: Final = (list, tuple)


def _problem(path: str, value: object) -> tuple[str, str]:
    shown = "missing" if value is _ABSENT else repr(value)
    return path, f"a tool call id must be a non-empty string, got {shown}"


def call_id_problem(kind: str, data: Any) -> tuple[str, str] | None:
    """``(path, reason)`` of the first unusable call id in an event's data, or ``None``.

    ``data`` is lossless JSON (already checked). Checked: ``tool/call`` ``callId``;
    ``approval/asked`` ``callId`` when present (it is optional); the ``id`` of every
    ``tool-call`` block of an ``assistant/message``; the ``source.callId`` of a
    ``tool/result`` and the ``toolCallId`` of its blocks, which must equal it.
    Other event types and shapes are left to the rules that own them.
    """
    if not isinstance(data, dict):
        return None
    if kind == "assistant/message":
        message = data.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, _ARRAY):
            for index, block in enumerate(content):
                if isinstance(block, dict) and block.get("type") == "tool-call":
                    value = block.get("id", _ABSENT)
                    if not usable_call_id(value):
                        return _problem(f"data.message.content[{index}].id", value)
        return None
    if kind == "tool/call":
        value = data.get("callId", _ABSENT)
        return None if usable_call_id(value) else _problem("data.callId", value)
    if kind == "approval/asked":
        value = data.get("callId", _ABSENT)
        return None if value is _ABSENT or usable_call_id(value) else _problem("data.callId", value)
    if kind == "tool/result":
        return _result_problem(data)
    return None


def _result_problem(data: dict[str, Any]) -> tuple[str, str] | None:
    message = data.get("message")
    source = message.get("source") if isinstance(message, dict) else None
    call_id = source.get("callId", _ABSENT) if isinstance(source, dict) else _ABSENT
    if not usable_call_id(call_id):
        return _problem("data.message.source.callId", call_id)
    assert isinstance(message, dict)
    content = message.get("content")
    if isinstance(content, _ARRAY):
        for index, block in enumerate(content):
            if isinstance(block, dict) and block.get("type") == "tool-result":
                value = block.get("toolCallId", _ABSENT)
                if value != call_id:
                    shown = "missing" if value is _ABSENT else repr(value)
                    return (
                        f"data.message.content[{index}].toolCallId",
                        f"must equal the source's callId {call_id!r}, got {shown}",
                    )
    return None

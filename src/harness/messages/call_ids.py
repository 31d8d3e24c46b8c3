"""Tool-call ids on the write side: whatever harness writes, harness and dsh load.

A call id pairs an assistant ``tool-call`` block with its ``tool/call``, its
``approval/asked`` and its ``tool/result``. Crash repair answers a pending call
with a ``tool/result`` citing that id, and a ``tool/result`` without a non-empty
string ``callId`` does not load (FORMAT §7.2, in harness and in dsh). So an id
that is missing, ``""`` or not a string would leave a log that a crash poisons;
``Session.append`` refuses it (``CALL_ID_CHECKS``), so do the builders.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from harness.errors import InvalidEventData

__all__ = ["CALL_ID_CHECKS", "call_id_problem", "require_call_id", "usable_call_id"]


def usable_call_id(value: object) -> bool:
    """Whether ``value`` can pair a call with its result: a non-empty string."""
    return type(value) is str and value != ""


def require_call_id(call_id: object, path: str = "call_id") -> None:
    """Raise ``InvalidEventData`` at ``path`` unless ``call_id`` is a usable call id."""
    if not usable_call_id(call_id):
        raise InvalidEventData(path, f"a tool call id must be a non-empty string, got {call_id!r}")


_ABSENT: Final = object()
_ARRAY: Final = (list, tuple)


def _problem(path: str, value: object) -> tuple[str, str]:
    shown = "missing" if value is _ABSENT else repr(value)
    return path, f"a tool call id must be a non-empty string, got {shown}"


def _assistant_message(data: Any) -> tuple[str, str] | None:
    # The hot one (every model reply): a plain walk, no index kept until a block fails.
    try:
        content = data["message"]["content"]
    except (KeyError, TypeError, IndexError):
        return None  # not a message: the Surface and seed rules own that
    if type(content) is str:
        return None
    try:
        for block in content:
            if isinstance(block, dict) and block.get("type") == "tool-call":
                value = block.get("id", _ABSENT)
                if type(value) is not str or not value:
                    index = next(i for i, item in enumerate(content) if item is block)
                    return _problem(f"data.message.content[{index}].id", value)
    except TypeError:
        return None  # content is not an array
    return None


def _tool_call(data: Any) -> tuple[str, str] | None:
    value = data.get("callId", _ABSENT) if isinstance(data, dict) else _ABSENT
    return None if type(value) is str and value else _problem("data.callId", value)


def _approval_asked(data: Any) -> tuple[str, str] | None:
    value = data.get("callId", _ABSENT) if isinstance(data, dict) else _ABSENT
    if value is _ABSENT or (type(value) is str and value):
        return None
    return _problem("data.callId", value)


def _tool_result(data: Any) -> tuple[str, str] | None:
    try:
        message = data["message"]
        call_id = message["source"].get("callId", _ABSENT)
    except (KeyError, TypeError, IndexError, AttributeError):
        return _problem("data.message.source.callId", _ABSENT)
    if type(call_id) is not str or not call_id:
        return _problem("data.message.source.callId", call_id)
    content = message.get("content")
    if not isinstance(content, _ARRAY):
        return None
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


CALL_ID_CHECKS: Final[Mapping[str, Callable[[Any], tuple[str, str] | None]]] = {
    "assistant/message": _assistant_message,
    "tool/call": _tool_call,
    "tool/result": _tool_result,
    "approval/asked": _approval_asked,
}
"""Per event type, the check of its call ids: ``(path, reason)`` of the first unusable
one, or ``None``. Only these types carry call ids, so only they pay for a check."""


def call_id_problem(kind: str, data: Any) -> tuple[str, str] | None:
    """``(path, reason)`` of the first unusable call id in an event's data, or ``None``.

    ``data`` is lossless JSON (already checked). Checked: ``tool/call`` ``callId``;
    ``approval/asked`` ``callId`` when present (it is optional); the ``id`` of every
    ``tool-call`` block of an ``assistant/message``; the ``source.callId`` of a
    ``tool/result`` and the ``toolCallId`` of its blocks, which must equal it.
    Other event types and shapes are left to the rules that own them.
    """
    check = CALL_ID_CHECKS.get(kind)
    return None if check is None else check(data)

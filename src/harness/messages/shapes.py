"""Seed-time shape checks of message and request-header events (FORMAT §7.2 steps 4–5).

These run when a log is restored or loaded. dsh skips them on live appends (FORMAT §7.5);
harness's ``Session.append`` runs them too, so that no log it writes fails them on load.
Each function returns the reason a payload is refused, or ``None``. Payloads are
JSON values as harness holds them (JSON objects are ``dict``/``FrozenDict``).
"""

from __future__ import annotations

from typing import Any

__all__ = ["assistant_message_ok", "message_event_problem", "request_header_problem"]

_ARRAY = (list, tuple)


def _non_empty_str(value: object) -> bool:
    return type(value) is str and value != ""


def request_header_problem(data: Any) -> str | None:
    """Why a ``request/header`` payload is malformed, or ``None``."""
    header = data.get("header") if isinstance(data, dict) else None
    config = header.get("config") if isinstance(header, dict) else None
    if not isinstance(config, dict) or not _non_empty_str(config.get("provider")) or not _non_empty_str(
        config.get("model")
    ):
        return "lacks provider/model in its config"
    assert isinstance(header, dict)
    if "reasoningEffort" in config and not _non_empty_str(config["reasoningEffort"]):
        return "has an invalid reasoningEffort (must be a non-empty string)"
    if "adapterDefaults" in header:
        markers = header["adapterDefaults"]
        if not isinstance(markers, dict):
            return "has invalid adapterDefaults (must be an object)"
        for key, value in markers.items():
            if key not in ("reasoningEffort", "maxTokens"):
                return f"has invalid adapterDefaults (unknown marker {key!r})"
            if value is not True:
                return f"has invalid adapterDefaults ({key} must be true)"
            if key not in config:
                return f"has invalid adapterDefaults ({key} is marked but absent from the config)"
    return None


def message_event_problem(kind: str, data: Any) -> str | None:
    """Why the message carried by a Surface event is malformed, or ``None``.

    ``kind`` is ``user/message``, ``assistant/message`` or ``tool/result``.
    """
    message = data if kind == "user/message" else (data.get("message") if isinstance(data, dict) else None)
    if not isinstance(message, dict) or not _non_empty_str(message.get("id")):
        return "lacks an identified message"
    expected_role = "assistant" if kind == "assistant/message" else "user"
    if message.get("role") != expected_role:
        return f"must have role {expected_role!r}"
    source = message.get("source")
    if not isinstance(source, dict) or not _non_empty_str(source.get("kind")):
        return "has an invalid source"
    content = message.get("content")
    if not isinstance(content, _ARRAY):
        return "has invalid content (must be an array)"
    if kind == "assistant/message":
        if source.get("kind") != "model" or not _non_empty_str(source.get("provider")) or not _non_empty_str(
            source.get("model")
        ):
            return "must have model source with provider and model"
    elif kind == "tool/result":
        call_id = source.get("callId")
        if source.get("kind") != "tool" or not _non_empty_str(call_id):
            return "must have tool source with a callId"
        if (
            len(content) != 1
            or not isinstance(content[0], dict)
            or content[0].get("type") != "tool-result"
            or not isinstance(content[0].get("content"), _ARRAY)
        ):
            return "must contain one tool-result block"
        if content[0].get("toolCallId") != call_id:
            return "has mismatched tool call ids"
    return None


def assistant_message_ok(data: Any) -> bool:
    """True only when an ``assistant/message`` payload passes both write-side checks:
    ``message_event_problem("assistant/message", data)`` and the tool call id check
    (``CALL_ID_CHECKS``) both return ``None``. One pass over plain ``dict``/``list``/``str``
    values; False means "not decided here" (run the two checks, which name the problem).
    """
    if type(data) is not dict:
        return False
    message = data.get("message")
    if type(message) is not dict:
        return False
    identifier = message.get("id")
    role = message.get("role")
    source = message.get("source")
    content = message.get("content")
    if type(identifier) is not str or not identifier or type(role) is not str or role != "assistant":
        return False
    if type(source) is not dict or type(content) is not list:
        return False
    kind = source.get("kind")
    provider = source.get("provider")
    model = source.get("model")
    if type(kind) is not str or kind != "model" or type(provider) is not str or not provider:
        return False
    if type(model) is not str or not model:
        return False
    for block in content:
        if type(block) is not dict:
            return False
        block_type = block.get("type")
        if type(block_type) is not str:
            return False
        if block_type == "tool-call":
            call_id = block.get("id")
            if type(call_id) is not str or not call_id:
                return False
    return True

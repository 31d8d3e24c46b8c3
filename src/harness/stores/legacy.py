"""The load pipeline's format checks and legacy normalisation (FORMAT §7.4, §7.6).

Read side only: stored logs from older dsh builds are brought to the current
shapes before restore; nothing here is ever written back.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness.errors import UnsupportedFormat
from harness.events.vocabulary import KNOWN_EVENT_TYPES, LEGACY_REFUSED_TYPES

__all__ = ["is_current", "legacy_message_id", "normalize_legacy", "refuse_retired", "refuse_unknown"]


def legacy_message_id(session_id: str, seq: int) -> str:
    """The id given to a pre-identity message: ``legacy-message:<sessionId>:<seq>``."""
    return f"legacy-message:{session_id}:{seq}"


def refuse_retired(session_id: str, events: list[dict[str, Any]], location: str | None) -> None:
    """Refuse retired formats: ``request/header-delta``, ``mode/set``, reason ``fallback``."""
    suffix = f" (raw log: {location})" if location else ""
    for event in events:
        kind = event.get("type")
        seq = event.get("seq")
        if kind in LEGACY_REFUSED_TYPES:
            raise UnsupportedFormat(
                f"stored session {session_id!r} holds the retired event type {kind!r} at seq {seq}{suffix}"
            )
        data = event.get("data")
        if kind == "request/header" and isinstance(data, Mapping) and data.get("reason") == "fallback":
            raise UnsupportedFormat(
                f"stored session {session_id!r} holds the retired request/header reason 'fallback' "
                f"at seq {seq}{suffix}"
            )


def refuse_unknown(session_id: str, events: list[dict[str, Any]], location: str | None) -> None:
    """Refuse event types this harness does not know unless they are marked ignorable."""
    suffix = f" (raw log: {location})" if location else ""
    for event in events:
        kind = event.get("type")
        if kind not in KNOWN_EVENT_TYPES and event.get("ignorable") is not True:
            raise UnsupportedFormat(
                f"stored session {session_id!r} holds event type {kind!r} at seq {event.get('seq')}, "
                f"which this harness does not know and which is not marked ignorable{suffix}"
            )


def _turn_end_reason(reason: Any) -> Any:
    if reason == "aborted":
        return {"kind": "aborted", "reason": {"kind": "legacy"}}
    if reason == "disposed":
        return {"kind": "aborted", "reason": {"kind": "disposed"}}
    if not isinstance(reason, dict):
        return reason
    kind = reason.get("kind")
    if kind == "aborted" and "reason" not in reason:
        return {**reason, "reason": {"kind": "legacy"}}
    if kind == "disposed":
        return {"kind": "aborted", "reason": {"kind": "disposed"}}
    if kind == "error" and "error" not in reason:
        if "failure" in reason:
            return {"kind": "error", "error": reason["failure"]}
        if "message" in reason:
            return {
                "kind": "error",
                "error": {"message": reason["message"], "code": reason.get("code", "UNKNOWN")},
            }
    return reason


def normalize_legacy(session_id: str, events: list[dict[str, Any]]) -> None:
    """Rewrite legacy shapes in place (FORMAT §7.6). Current shapes are left untouched."""
    message_ids: dict[int, str] = {}
    for event in events:
        kind = event.get("type")
        data = event.get("data")
        seq = event.get("seq")
        if not isinstance(data, dict) or not isinstance(seq, int):
            continue
        if kind == "turn/start" and "trigger" in data:
            del data["trigger"]
        elif kind == "turn/end" and "reason" in data:
            data["reason"] = _turn_end_reason(data["reason"])
        elif kind == "steering/message":
            event["type"] = "user/message"
            message = data.get("message")
            if isinstance(message, dict):
                event["data"] = data = message
            event.setdefault("surfaceOp", "append")
            kind = "user/message"
        if kind == "user/message" and "id" not in data and "content" in data:
            data.pop("turn", None)
            data["role"] = "user"
            data["id"] = legacy_message_id(session_id, seq)
        elif kind == "assistant/message" and "message" not in data and "content" in data:
            provenance = data.pop("provenance", {})
            source = {**provenance, "kind": "model"} if isinstance(provenance, dict) else {"kind": "model"}
            data["message"] = {
                "id": legacy_message_id(session_id, seq),
                "role": "assistant",
                "content": data.pop("content"),
                "source": source,
            }
        elif kind == "tool/result" and "message" not in data and "callId" in data:
            call_id = data.pop("callId")
            block: dict[str, Any] = {
                "type": "tool-result",
                "toolCallId": call_id,
                "content": data.pop("content", []),
            }
            if "isError" in data:
                block["isError"] = data.pop("isError")
            op = event.get("surfaceOp")
            replaced = op.get("start") if isinstance(op, dict) else None
            message_id = message_ids.get(replaced) if isinstance(replaced, int) else None
            data["message"] = {
                "id": message_id or legacy_message_id(session_id, seq),
                "role": "user",
                "source": {"kind": "tool", "callId": call_id},
                "content": [block],
            }
        message = data if kind == "user/message" else data.get("message")
        if isinstance(message, dict) and isinstance(message.get("id"), str):
            message_ids[seq] = message["id"]


def is_current(event: dict[str, Any]) -> bool:
    """True when the three passes above would leave ``event`` alone: nothing retired,
    no legacy shape to rewrite, a known (or ignorable) type.

    A streamed restore checks each event with this and hands any other log to the
    exact pipeline, so the passes keep their whole-log order of refusals.
    """
    kind = event.get("type")
    if kind in LEGACY_REFUSED_TYPES or kind == "steering/message":
        return False
    data = event.get("data")
    if isinstance(data, dict):
        if kind == "user/message":
            if "id" not in data and "content" in data:
                return False
        elif kind == "assistant/message":
            if "message" not in data and "content" in data:
                return False
        elif kind == "tool/result":
            if "message" not in data and "callId" in data:
                return False
        elif kind == "turn/start":
            if "trigger" in data:
                return False
        elif kind == "turn/end":
            if "reason" in data and _turn_end_reason(data["reason"]) is not data["reason"]:
                return False
        elif kind == "request/header" and data.get("reason") == "fallback":
            return False
    return kind in KNOWN_EVENT_TYPES or event.get("ignorable") is True

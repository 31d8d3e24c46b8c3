"""The load pipeline's format checks and legacy normalisation (FORMAT §7.4, §7.6).

Read side only: stored logs from older dsh builds are brought to the current
shapes before restore; nothing here is ever written back. The rules are the
reference's (its legacy migration): a record that looks legacy but is not exactly
one of the old shapes is refused as malformed rather than guessed at, and a
current-looking record is left for the seed validation to judge.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from harness.errors import InvalidSeed, UnsupportedFormat
from harness.events.envelope import as_safe_int
from harness.events.event import Event
from harness.events.vocabulary import KNOWN_EVENT_TYPES, LEGACY_REFUSED_TYPES, SURFACE_TYPES
from harness.messages.shapes import message_event_problem

__all__ = [
    "check_closers",
    "is_current",
    "legacy_message_id",
    "normalize_legacy",
    "refuse_retired",
    "refuse_unknown",
]

_STEERING: Final = "steering/message"
_PLAIN_REASONS: Final = frozenset({"completed", "blocked", "max-tokens", "interrupted"})
_FAILURE_KEYS: Final = frozenset({"message", "code", "status", "providerRetryAfterMs", "requestId"})


def legacy_message_id(session_id: str, seq: int) -> str:
    """The id given to a pre-identity message: ``legacy-message:<sessionId>:<seq>``."""
    return f"legacy-message:{session_id}:{seq}"


def refuse_retired(session_id: str, events: list[dict[str, Any]], location: str | None) -> None:
    """Refuse retired formats: ``request/header-delta``, ``mode/set``, reason ``fallback``."""
    suffix = f" (raw log: {location})" if location else ""
    for event in events:
        kind = event.get("type")
        seq = event.get("seq")
        if type(kind) is str and kind in LEGACY_REFUSED_TYPES:  # an array or object type is unhashable
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
        known = type(kind) is str and kind in KNOWN_EVENT_TYPES
        if not known and event.get("ignorable") is not True:
            raise UnsupportedFormat(
                f"stored session {session_id!r} holds event type {kind!r} at seq {event.get('seq')}, "
                f"which this harness does not know and which is not marked ignorable{suffix}"
            )


_SCANNED_BY_REPAIR: Final = frozenset({"turn/start", "step/start", "tool/call"})


def refuse_null_boundaries(events: list[dict[str, Any]]) -> None:
    """Refuse a ``turn/start``, ``step/start`` or ``tool/call`` whose data is ``null``.

    dsh's crash-repair scan reads ``data.turn``/``data.step``/``data.callId`` of every
    such event in the log, so it refuses the whole session as corrupt; harness does too.
    """
    for index, event in enumerate(events):
        kind = event.get("type")
        if event.get("data", False) is None and type(kind) is str and kind in _SCANNED_BY_REPAIR:
            raise InvalidSeed(
                f"{kind} at seq {event.get('seq')} has null data (it must be an object)",
                index=index,
                rule="data",
            )


class _Malformed(Exception):
    """A record of a legacy type that is none of the legacy shapes; the text says why."""


def _only_keys(record: Mapping[str, Any], required: Iterable[str], optional: Iterable[str] = ()) -> bool:
    required = tuple(required)
    allowed = {*required, *optional}
    return all(key in allowed for key in record) and all(key in record for key in required)


def _turn_number(value: Any) -> bool:
    number = as_safe_int(value, negative_zero=True)
    return number is not None and number >= 1


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _legacy_turn_start(data: dict[str, Any]) -> dict[str, Any] | None:
    """The current data of a ``turn/start`` carrying the retired ``trigger``, or ``None``."""
    if "trigger" not in data:
        return None
    trigger = data["trigger"]
    if not _turn_number(data.get("turn")):
        raise _Malformed("its turn must be a safe integer of at least 1")
    if not _only_keys(data, ("turn", "trigger")):
        raise _Malformed("it may hold only turn and trigger")
    if not isinstance(trigger, dict) or type(trigger.get("kind")) is not str or not trigger["kind"]:
        raise _Malformed("its trigger must be an object with a non-empty kind")
    return {"turn": data["turn"]}


def _legacy_error_reason(reason: dict[str, Any]) -> dict[str, Any]:
    step = as_safe_int(reason.get("step"), negative_zero=True)
    if step is None or step < 0:
        raise _Malformed("an error reason without an error needs a non-negative integer step")
    failure = reason.get("failure")
    if (
        isinstance(failure, dict)
        and _only_keys(reason, ("kind", "step", "failure"))
        and _only_keys(failure, ("message", "code"), _FAILURE_KEYS)
        and type(failure["message"]) is str
        and type(failure["code"]) is str
        and ("status" not in failure or _is_number(failure["status"]))
        and ("providerRetryAfterMs" not in failure or _is_number(failure["providerRetryAfterMs"]))
        and ("requestId" not in failure or type(failure["requestId"]) is str)
    ):
        return {"kind": "error", "error": failure}
    keys = ("kind", "step", "message", "code") if "code" in reason else ("kind", "step", "message")
    if not _only_keys(reason, keys) or type(reason["message"]) is not str:
        raise _Malformed("an error reason needs a failure {message, code} or a string message")
    code = reason.get("code", "UNKNOWN")
    if type(code) is not str:
        raise _Malformed("an error reason's code must be a string")
    return {"kind": "error", "error": {"message": reason["message"], "code": code}}


def _legacy_turn_end(data: dict[str, Any]) -> dict[str, Any] | None:
    """The current data of an old ``turn/end``, or ``None`` when it is current as it stands.

    Every ``turn/end`` whose data is an object is checked, as in the reference.
    """
    reason = data.get("reason")
    if not _turn_number(data.get("turn")):
        raise _Malformed("its turn must be a safe integer of at least 1")
    if not _only_keys(data, ("turn", "reason")):
        raise _Malformed("it may hold only turn and reason")
    if not isinstance(reason, dict) or type(reason.get("kind")) is not str:
        raise _Malformed("its reason must be an object with a string kind")
    kind = reason["kind"]
    if kind in _PLAIN_REASONS:
        if not _only_keys(reason, ("kind",)):
            raise _Malformed(f"a {kind} reason may hold only its kind")
        return None
    if kind == "aborted":
        if "reason" in reason:
            return None
        if not _only_keys(reason, ("kind",)):
            raise _Malformed("an aborted reason may hold only its kind and reason")
        current: dict[str, Any] = {"kind": "aborted", "reason": {"kind": "legacy"}}
    elif kind == "disposed":
        if not _only_keys(reason, ("kind",)):
            raise _Malformed("a disposed reason may hold only its kind")
        current = {"kind": "aborted", "reason": {"kind": "disposed"}}
    elif kind == "error":
        if "error" in reason:
            return None
        current = _legacy_error_reason(reason)
    else:
        return None
    return {**data, "reason": current}


def _legacy_steering(session_id: str, seq: int, data: Any) -> Any:
    """The ``user/message`` data of a retired ``steering/message``."""
    if not isinstance(data, dict):
        raise _Malformed("its data must be an object")
    turn_ok = as_safe_int(data.get("turn"), negative_zero=True) is not None
    if isinstance(data.get("message"), dict) and turn_ok and _only_keys(data, ("turn", "message")):
        return data["message"]
    if not turn_ok or not _only_keys(data, ("turn", "content", "source")):
        raise _Malformed("it must be {turn, message} or {turn, content, source}")
    message = {key: value for key, value in data.items() if key != "turn"}
    return {**message, "id": legacy_message_id(session_id, seq), "role": "user"}


def _pre_identity_user(data: dict[str, Any]) -> bool:
    return (
        "id" not in data
        and "role" not in data
        and "message" not in data
        and "content" in data
        and "source" in data
    )


def _pre_identity_assistant(data: dict[str, Any]) -> bool:
    return "message" not in data and "content" in data and "provenance" in data


def _pre_identity_result(data: dict[str, Any]) -> bool:
    return "message" not in data and "callId" in data and "content" in data and "isError" in data


def _replaced_start(event: dict[str, Any]) -> int | float | None:
    op = event.get("surfaceOp")
    if isinstance(op, dict) and op.get("op") == "replace" and _is_number(op.get("start")):
        start: int | float = op["start"]
        return start
    return None


def _upgrade_message(
    session_id: str, event: dict[str, Any], kind: Any, seq: int, message_ids: dict[Any, str]
) -> None:
    """Bring a pre-identity message event to the current wrapper shape, in place."""
    data = event.get("data")
    if not isinstance(data, dict):
        return
    if kind == "user/message" and _pre_identity_user(data):
        event["data"] = {**data, "id": legacy_message_id(session_id, seq), "role": "user"}
    elif kind == "assistant/message" and _pre_identity_assistant(data):
        rest = {key: value for key, value in data.items() if key not in ("content", "provenance")}
        provenance = data["provenance"]
        source = {**provenance, "kind": "model"} if isinstance(provenance, dict) else {"kind": "model"}
        rest["message"] = {
            "id": legacy_message_id(session_id, seq),
            "role": "assistant",
            "content": data["content"],
            "source": source,
        }
        event["data"] = rest
    elif kind == "tool/result" and _pre_identity_result(data):
        call_id = data["callId"]
        rest = {key: value for key, value in data.items() if key not in ("callId", "content", "isError")}
        start = _replaced_start(event)
        message: dict[str, Any] = {}
        # A rewrite keeps the id of the message it replaces; one it cannot find leaves
        # the message without an id, which the message check then refuses.
        if start is None:
            message["id"] = legacy_message_id(session_id, seq)
        elif start in message_ids:
            message["id"] = message_ids[start]
        message["role"] = "user"
        block = {"type": "tool-result", "toolCallId": call_id, "content": data["content"]}
        message["content"] = [{**block, "isError": data["isError"]}]
        message["source"] = {"kind": "tool", "callId": call_id}
        rest["message"] = message
        event["data"] = rest


def normalize_legacy(session_id: str, events: list[dict[str, Any]]) -> None:
    """Rewrite legacy shapes in place (FORMAT §7.6) and check each message event's shape
    (§7.2 step 5), event by event. Current shapes are left untouched.

    Raises ``InvalidSeed`` (rule ``legacy`` or ``message``) for a record of a legacy type
    that is none of the legacy shapes and for a malformed message.
    """
    message_ids: dict[Any, str] = {}
    for event in events:
        kind = event.get("type")
        seq = event.get("seq")
        data = event.get("data")
        try:
            if kind == "turn/start" and isinstance(data, dict):
                upgraded = _legacy_turn_start(data)
                if upgraded is not None:
                    event["data"] = upgraded
            elif kind == "turn/end" and isinstance(data, dict):
                upgraded = _legacy_turn_end(data)
                if upgraded is not None:
                    event["data"] = upgraded
            elif kind == _STEERING:
                event["data"] = _legacy_steering(session_id, _seq_of(seq), data)
                event["type"] = kind = "user/message"
        except _Malformed as why:
            raise InvalidSeed(
                f"malformed pre-react-loop {kind} at seq {seq}: {why}", index=_index_of(seq), rule="legacy"
            ) from None
        if type(kind) is not str or kind not in SURFACE_TYPES:
            continue
        _upgrade_message(session_id, event, kind, _seq_of(seq), message_ids)
        upgraded_data: Any = event.get("data")  # no data: a malformed message, not a KeyError
        problem = message_event_problem(kind, upgraded_data)
        if problem is not None:
            raise InvalidSeed(f"{kind} at seq {seq} {problem}", index=_index_of(seq), rule="message")
        message = upgraded_data if kind == "user/message" else upgraded_data["message"]
        message_ids[seq] = message["id"]


def _seq_of(seq: Any) -> int:
    number = as_safe_int(seq, negative_zero=True)
    return number if number is not None else -1


def _index_of(seq: Any) -> int | None:
    number = as_safe_int(seq, negative_zero=True)
    return number if number is not None and number >= 0 else None


def is_current(event: dict[str, Any]) -> bool:
    """True when ``normalize_legacy`` and the format refusals would leave ``event`` alone:
    nothing retired, no legacy shape to rewrite or refuse, a known (or ignorable) type.

    A streamed restore checks each event with this and hands any other log to the
    exact pipeline, so the passes keep their whole-log order of refusals.
    """
    kind = event.get("type")
    if type(kind) is not str or kind in LEGACY_REFUSED_TYPES or kind == _STEERING:
        return False
    data = event.get("data")
    if data is None and kind in _SCANNED_BY_REPAIR:
        return False
    if isinstance(data, dict):
        if kind == "user/message":
            if _pre_identity_user(data):
                return False
        elif kind == "assistant/message":
            if _pre_identity_assistant(data):
                return False
        elif kind == "tool/result":
            if _pre_identity_result(data):
                return False
        elif kind == "turn/start":
            if "trigger" in data:
                return False
        elif kind == "turn/end":
            try:
                if _legacy_turn_end(data) is not None:
                    return False
            except _Malformed:
                return False
        elif kind == "request/header" and data.get("reason") == "fallback":
            return False
    return kind in KNOWN_EVENT_TYPES or event.get("ignorable") is True


def check_closers(closers: Sequence[Event]) -> None:
    """Refuse crash-repair closers that a later load would not take as they are.

    ``Session.from_stored`` already held them to the seed rules; this holds them to
    the load pipeline's own passes too (a ``turn/end`` for a turn that is not a
    positive integer is malformed on reload), so a committed repair always reloads.
    Raises ``InvalidSeed`` (rule ``repair``).
    """
    for closer in closers:
        wire = closer.to_json()
        why = "it is not in the current format"
        if wire["type"] == "turn/end" and isinstance(wire["data"], dict):
            try:
                _legacy_turn_end(wire["data"])
            except _Malformed as malformed:
                why = str(malformed)
        if not is_current(wire):
            raise InvalidSeed(
                f"the turn left open cannot be closed by crash repair into a log that loads: "
                f"its {closer.type} closer at seq {closer.seq} would be refused ({why})",
                index=closer.seq,
                rule="repair",
            )

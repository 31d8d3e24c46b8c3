"""Request building: the header in force and the frozen ``GenerateOptions`` (SPEC §3).

Every request is well-formed whatever the log holds (``sendable_messages``): the model API
refuses an assistant ``tool_calls`` message that is not followed by a reply to each call, and
no request can carry text that is not valid UTF-8. A crash or a cancel may leave a call with
no recorded result in a closed step (FORMAT §8 repairs only the open one), and a log written
elsewhere may hold unpaired surrogates (JavaScript strings can). The log is the truth and is
never rewritten: the request answers such a call with a placeholder result and sends U+FFFD
for each unpaired surrogate, the same way every time, so a request is still rebuilt exactly
from the log alone.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import orjson

from harness.errors import NoRequestHeader
from harness.events.event import Event
from harness.events.json import FrozenDict, snapshot
from harness.messages.model import Message, sendable, tool_result_message
from harness.messages.request import EpochHeader, GenerateOptions

__all__ = [
    "UNANSWERED_CALL_TEXT",
    "NoRequestHeader",
    "RequestSource",
    "build_request",
    "fold_request_header",
    "sendable_messages",
]

logger = logging.getLogger("harness.session")

UNANSWERED_CALL_TEXT = (
    "No result was recorded for this call (the session was interrupted): whether it ran, and "
    "what it did, is unknown. Check before relying on or repeating its effects."
)
"""The placeholder result a request sends for a tool call the log never answered."""


class RequestSource(Protocol):
    """What ``build_request`` reads: a ``Session``, or a view of one as it was at some seq
    (``harness.query.timetravel``), so past requests are built by this same code."""

    @property
    def id(self) -> str: ...

    @property
    def events(self) -> Sequence[Event]: ...

    def derive_messages(self) -> Sequence[Message]: ...


def fold_request_header(events: Sequence[Event]) -> EpochHeader | None:
    """The header in force: the one of the latest ``request/header`` event, if any."""
    for index in range(len(events) - 1, -1, -1):
        event = events[index]
        if event.type == "request/header":
            data = event.data
            header = data.get("header") if isinstance(data, Mapping) else None
            if isinstance(header, Mapping):
                return EpochHeader(header)
    return None


def build_request(
    session: RequestSource,
    header: EpochHeader | None = None,
    *,
    purpose: str | None = None,
) -> GenerateOptions:
    """Freeze the header (given, else the one in force) and the derived messages, made
    well-formed by ``sendable_messages``."""
    if header is None:
        header = fold_request_header(session.events)
        if header is None:
            raise NoRequestHeader(f"session {session.id} has no request/header yet and none was given")
    if not _is_utf8(header.raw):
        _warn_once(session.id, "header", "the request header holds text that is not valid UTF-8")
        header = EpochHeader(_sendable_json(header.raw))
    return GenerateOptions(
        header=header,
        messages=sendable_messages(session.derive_messages(), session_id=session.id),
        session_id=session.id,
        purpose=purpose,
    )


def sendable_messages(messages: Sequence[Message], *, session_id: str | None = None) -> tuple[Message, ...]:
    """``messages`` as a model API accepts them: each assistant tool call answered by a
    tool result before the next message that is not one (a placeholder result,
    ``UNANSWERED_CALL_TEXT``, stands in for a missing one), and every unpaired surrogate
    sent as U+FFFD. Messages that need neither are passed through as they are."""
    out: list[Message] = []
    pending: list[str] = []  # calls of the latest assistant message not answered yet

    def answer_pending() -> None:
        for call in pending:
            text = f"tool call {call} has no recorded result; the request answers it with a placeholder"
            _warn_once(session_id, call, text)
            reply = tool_result_message(call, UNANSWERED_CALL_TEXT, is_error=True, id=f"unanswered-{call}")
            out.append(Message(reply))
        pending.clear()

    # One pass over the raw JSON (this runs before every request; the views cost more).
    for message in messages:
        raw = message.raw
        content = [block for block in raw.get("content") or () if isinstance(block, Mapping)]
        if raw.get("role") == "assistant":
            answer_pending()
            out.append(message)
            pending.extend(str(b.get("id", "")) for b in content if b.get("type") == "tool-call")
            continue
        if pending:
            results = [str(b.get("toolCallId", "")) for b in content if b.get("type") == "tool-result"]
            pending[:] = [call for call in pending if call not in results]
            # A message with no results ends the replies; so does one that holds something
            # else too (its tool entries go out before its text): the placeholders go first.
            if not results or len(results) < len(content):
                answer_pending()
        out.append(message)
    answer_pending()
    if not _is_utf8([message.raw for message in out]):
        out = [_sendable_message(message, session_id) for message in out]
    return tuple(out)


def _is_utf8(value: Any) -> bool:
    """Whether ``value`` encodes as UTF-8 JSON: one fast pass (orjson refuses surrogates)."""
    try:
        orjson.dumps(value, default=_tuple_as_list)
    except TypeError as error:
        if "surrogates" in str(error):
            return False
        raise
    return True


def _tuple_as_list(value: Any) -> Any:
    if isinstance(value, tuple):  # FrozenList
        return list(value)
    raise TypeError(f"{type(value).__name__} is not a JSON value")


def _sendable_json(value: Any) -> Any:
    if isinstance(value, str):
        return sendable(value)
    if isinstance(value, Mapping):
        return {key: _sendable_json(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_sendable_json(item) for item in value]
    return value


def _sendable_message(message: Message, session_id: str | None) -> Message:
    if _is_utf8(message.raw):
        return message
    _warn_once(
        session_id,
        message.id,
        f"message {message.id} holds text that is not valid UTF-8; it is sent with U+FFFD in its place",
    )
    fixed = snapshot(_sendable_json(message.raw), "message")
    assert isinstance(fixed, FrozenDict)
    return Message(fixed)


_warned: set[tuple[str | None, str]] = set()


def _warn_once(session_id: str | None, key: str, text: str) -> None:
    """Log ``text`` once per session and key (every later request would repeat it)."""
    if (session_id, key) in _warned:
        return
    if len(_warned) > 4096:
        _warned.clear()
    _warned.add((session_id, key))
    logger.warning("session %s: %s", session_id, text)

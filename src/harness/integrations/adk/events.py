"""Google ADK events <-> harness events (``docs/integrations/adk.md``).

Every ADK ``Event`` a session service stores becomes one Surface event, so the log stays a
format-v0 session that ``harness log``, ``search`` and dsh read as a conversation:

* an event whose ``author`` is ``user`` is a ``user/message`` (source ``user``), any other an
  ``assistant/message`` (source ``model``, provider ``google-adk``, model = the author);
* its native content is a text block per text part (a ``reasoning`` block for a thought), a
  ``tool-call`` block per function call (its id, name and arguments as JSON text), and one
  unknown ``adk-part`` block, naming the part and its function, for any other part;
* an event that is one function response is a ``tool/result`` instead (source ``tool``, its
  call id; the response as JSON text), so ``harness log``, ``surface``, ``search``, the viewer
  and the OpenTelemetry export show ADK tool calls and results as they show harness's own;
* the event itself is kept verbatim (``adkEvent``: its JSON form, ``exclude_none``, as ADK's
  own database services store it) on the message of a ``user/message`` and on the data of an
  ``assistant/message``, so ``get_session`` returns exactly what was appended;
* an event carrying an ``EventCompaction`` *replaces* on the Surface the nodes of the events
  whose timestamps lie in its range, with its summary as content (FORMAT §6): the log keeps
  every event, and the model-visible history is the compacted one.

The session's own records are log-only and ``ignorable``: ``adk/session`` (who the session is,
its initial state) opens each session's log, and ``adk/state`` holds one app- or user-state
delta in the logs of the shared state (``state.py``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

import orjson
from google.adk.events.event import Event as AdkEvent

from harness.events.event import APPEND, Event, Replace, SurfaceOp
from harness.messages.model import new_message_id

__all__ = [
    "EVENT_KEY",
    "PART_BLOCK",
    "PROVIDER",
    "SESSION_RECORD",
    "STATE_RECORD",
    "EventPayload",
    "adk_event_of",
    "event_payload",
    "wire_of",
]

EVENT_KEY: Final = "adkEvent"
"""Where the verbatim ADK event (its JSON form) is kept."""
PROVIDER: Final = "google-adk"
"""The provider in the model source of assistant messages."""
PART_BLOCK: Final = "adk-part"
"""The unknown content block that stands for a part harness has no equivalent of."""
SESSION_RECORD: Final = "adk/session"
"""The log-only record that opens a session's log (app, user, id, initial state, create time)."""
STATE_RECORD: Final = "adk/state"
"""The log-only record of one app- or user-state delta (in the shared-state logs)."""

_PART_KINDS: Final = (
    "function_call",
    "function_response",
    "inline_data",
    "file_data",
    "executable_code",
    "code_execution_result",
    "video_metadata",
)


class EventPayload:
    """What one ADK event appends: the event type, its data, its Surface op and what it cites."""

    __slots__ = ("cites", "data", "op", "type")

    def __init__(self, type: str, data: dict[str, Any], op: SurfaceOp, cites: list[int] | None) -> None:
        self.type = type
        self.data = data
        self.op = op
        self.cites = cites


def _json_text(value: object) -> str:
    return orjson.dumps(value).decode()


def _call_id(call: object) -> str | None:
    """The id of a function call or response part, when it has a usable one."""
    identifier = call.get("id") if isinstance(call, Mapping) else None
    return identifier if isinstance(identifier, str) and identifier else None


def _blocks(parts: object) -> list[dict[str, Any]]:
    """Native blocks for a content's parts (JSON form of ``google.genai.types.Part``)."""
    blocks: list[dict[str, Any]] = []
    for part in parts if isinstance(parts, list) else ():
        if not isinstance(part, Mapping):
            continue
        text = part.get("text")
        if isinstance(text, str):
            blocks.append({"type": "reasoning" if part.get("thought") is True else "text", "text": text})
            continue
        kind = next((name for name in _PART_KINDS if part.get(name) is not None), None)
        call = part.get(kind) if kind in ("function_call", "function_response") else None
        name = call.get("name") if isinstance(call, Mapping) else None
        if kind == "function_call" and isinstance(name, str) and (identifier := _call_id(call)):
            assert isinstance(call, Mapping)
            arguments = _json_text(call.get("args") or {})
            blocks.append({"type": "tool-call", "id": identifier, "name": name, "arguments": arguments})
            continue
        block: dict[str, Any] = {"type": PART_BLOCK, "part": kind}
        if isinstance(name, str):
            block["name"] = name
        blocks.append(block)
    return blocks


def _lone_response(parts: object) -> tuple[str, Any] | None:
    """``(call id, response)`` of a content that is exactly one identified function response."""
    if not isinstance(parts, list) or len(parts) != 1 or not isinstance(parts[0], Mapping):
        return None
    response = parts[0].get("function_response")
    identifier = _call_id(response)
    if identifier is None or any(parts[0].get(key) is not None for key in ("text", "function_call")):
        return None
    assert isinstance(response, Mapping)
    return identifier, response.get("response")


def _content_of(wire: Mapping[str, Any]) -> object:
    content = wire.get("content")
    if isinstance(content, Mapping):
        return content.get("parts")
    actions = wire.get("actions")
    compaction = actions.get("compaction") if isinstance(actions, Mapping) else None
    summary = compaction.get("compacted_content") if isinstance(compaction, Mapping) else None
    return summary.get("parts") if isinstance(summary, Mapping) else None


def _compacted(
    wire: Mapping[str, Any], nodes: Sequence[int], timestamps: Mapping[int, float]
) -> tuple[SurfaceOp, list[int] | None]:
    """The Surface op of an event: a replace of the nodes its compaction covers, else append."""
    actions = wire.get("actions")
    compaction = actions.get("compaction") if isinstance(actions, Mapping) else None
    if not isinstance(compaction, Mapping):
        return APPEND, None
    start, end = compaction.get("start_timestamp"), compaction.get("end_timestamp")
    if not isinstance(start, int | float) or not isinstance(end, int | float):
        return APPEND, None
    covered = [
        position
        for position, seq in enumerate(nodes)
        if seq in timestamps and start <= timestamps[seq] <= end
    ]
    if not covered:
        return APPEND, None
    shadowed = list(nodes[covered[0] : covered[-1] + 1])
    return Replace(shadowed[0], shadowed[-1]), shadowed


def event_payload(
    event: AdkEvent, nodes: Sequence[int], timestamps: Mapping[int, float]
) -> tuple[EventPayload, dict[str, Any]]:
    """The harness event ``event`` becomes, and its JSON form (what is kept verbatim).

    ``nodes`` are the session's current Surface node seqs and ``timestamps`` the ADK
    timestamp of each node that holds an ADK event: a compaction replaces those in its range.
    """
    wire: dict[str, Any] = event.model_dump(mode="json", exclude_none=True)
    parts = _content_of(wire)
    op, cites = _compacted(wire, nodes, timestamps)
    lone = _lone_response(parts) if event.author != "user" and op is APPEND else None
    if lone is not None:
        identifier, response = lone
        result = {
            "type": "tool-result",
            "toolCallId": identifier,
            "content": [{"type": "text", "text": _json_text(response)}],
        }
        message = {
            "role": "user",
            "content": [result],
            "source": {"kind": "tool", "callId": identifier},
            "id": new_message_id(),
        }
        return EventPayload("tool/result", {"message": message, EVENT_KEY: wire}, op, cites), wire
    blocks = _blocks(parts)
    if event.author == "user":
        message = {"content": blocks, "source": {"kind": "user"}, "role": "user", "id": new_message_id()}
        message[EVENT_KEY] = wire
        return EventPayload("user/message", message, op, cites), wire
    model = event.author or "agent"
    message = {
        "role": "assistant",
        "content": blocks,
        "source": {"kind": "model", "provider": PROVIDER, "model": model},
        "id": new_message_id(),
    }
    return EventPayload("assistant/message", {"message": message, EVENT_KEY: wire}, op, cites), wire


def wire_of(event: Event) -> dict[str, Any] | None:
    """The kept JSON form of the ADK event a harness event holds, or None (not an ADK event)."""
    if event.type not in ("user/message", "assistant/message", "tool/result"):
        return None
    data = orjson.loads(event.data_json)  # the message of a user/message; the data of the others
    kept = data.get(EVENT_KEY) if isinstance(data, dict) else None
    return kept if isinstance(kept, dict) else None


def adk_event_of(event: Event) -> AdkEvent | None:
    """The ADK event a harness event holds (a fresh object), or None."""
    wire = wire_of(event)
    return None if wire is None else AdkEvent.model_validate(wire)

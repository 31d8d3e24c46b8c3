"""OpenAI Agents SDK items <-> harness message events (``docs/integrations/openai-agents.md``).

Every item the SDK stores becomes one Surface event, so the log stays a format-v0 session
that ``harness log`` and dsh read as a conversation:

========================================  ===================  =====================================
item                                      event                native content (what tools display)
========================================  ===================  =====================================
message, role ``user``                    ``user/message``     text blocks (source ``user``)
message, role ``system`` / ``developer``  ``user/message``     text blocks (source ``plugin``)
message, role ``assistant``               ``assistant/message`` text blocks (refusals as text)
``*_call`` with a ``call_id``             ``assistant/message`` one ``tool-call`` block
``*_call_output`` with a ``call_id``      ``tool/result``      one ``tool-result`` block
``reasoning``                             ``assistant/message`` a ``reasoning`` block per summary
any other item                            ``assistant/message`` one unknown ``openai-item`` block
                                          (``user/message`` for ``*_output`` / ``*_response``)
========================================  ===================  =====================================

The item itself is kept verbatim next to the native content (``openaiItem``: on the message of
a ``user/message``, whose data is the message, and on the event data of the other two), so an
appended item comes back from ``get_items`` byte for byte, whatever its type. A node that a
Surface replace put there (a compaction checkpoint, a pruned tool result) has no stored item:
its item is derived from its native content. A node marked ``openaiAgentsOp`` is a tombstone
written by ``pop_item`` / ``clear_session`` and stands for no item.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import orjson

from harness.errors import InvalidMessage
from harness.events.event import Event
from harness.events.json import check_json, dumps
from harness.messages.model import new_message_id

__all__ = [
    "ITEM_KEY",
    "OP_KEY",
    "PLUGIN",
    "EventPayload",
    "call_id_of_output",
    "derive_item",
    "item_payload",
    "tombstone_payload",
]

ITEM_KEY: Final = "openaiItem"
"""Where the verbatim item is kept."""
OP_KEY: Final = "openaiAgentsOp"
"""Marks a tombstone (``pop_item`` / ``clear_session``): a node that stands for no item."""
PLUGIN: Final = "openai-agents"
"""The plugin name in sources and in tombstones' model source."""
ITEM_BLOCK: Final = "openai-item"
"""The unknown content block that stands for an item harness has no equivalent of."""
PART_BLOCK: Final = "openai-part"
"""The unknown content block that stands for a non-text content part (an image, a file)."""

_TEXT_PARTS: Final = frozenset({"input_text", "output_text", "text", "summary_text", "reasoning_text"})


class EventPayload:
    """What one item appends: the event type, its data and the call it answers (if any)."""

    __slots__ = ("answers", "data", "type")

    def __init__(self, type: str, data: dict[str, Any], answers: str | None) -> None:
        self.type = type
        self.data = data
        self.answers = answers


def _text_blocks(content: object) -> list[dict[str, Any]]:
    """Native blocks for a message's content: a string, or a list of content parts."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    blocks: list[dict[str, Any]] = []
    if isinstance(content, list):
        for part in content:
            if not isinstance(part, Mapping):
                continue
            kind = part.get("type")
            if kind in _TEXT_PARTS and isinstance(part.get("text"), str):
                blocks.append({"type": "text", "text": part["text"]})
            elif kind == "refusal" and isinstance(part.get("refusal"), str):
                blocks.append({"type": "text", "text": part["refusal"]})
            else:
                blocks.append({"type": PART_BLOCK, "part": kind if isinstance(kind, str) else None})
    return blocks


def _output_text(output: object) -> list[dict[str, Any]]:
    """The native content of a tool output (a string, or a list of output parts)."""
    if isinstance(output, str):
        return [{"type": "text", "text": output}]
    if isinstance(output, list):
        return _text_blocks(output)
    return [{"type": "text", "text": dumps(output).decode("utf-8")}]


def _call_arguments(item: Mapping[str, Any]) -> str:
    for key in ("arguments", "input"):
        if isinstance(item.get(key), str):
            return str(item[key])
    action = item.get("action")
    return dumps(action).decode("utf-8") if action is not None else "{}"


def _model_message(content: list[dict[str, Any]], model: str) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": content,
        "source": {"kind": "model", "provider": PLUGIN, "model": model},
        "id": new_message_id(),
    }


def _user_message(content: list[dict[str, Any]], source: dict[str, Any], item: Any) -> dict[str, Any]:
    return {"content": content, "source": source, "role": "user", "id": new_message_id(), ITEM_KEY: item}


def item_payload(item: object, model: str) -> EventPayload:
    """The event one item becomes. ``InvalidMessage`` for an item that is not a JSON object,
    ``InvalidEventData`` (naming the path) for one that is not lossless JSON."""
    if not isinstance(item, dict):
        raise InvalidMessage(f"a session item must be a JSON object, got {type(item).__name__}", path="item")
    check_json(item, "item")  # InvalidEventData naming the path (item.content[0].text)
    kind = item.get("type")
    role = item.get("role")
    call_id = item.get("call_id")
    has_call_id = isinstance(call_id, str) and call_id != ""
    if role is not None and kind in (None, "message"):
        blocks = _text_blocks(item.get("content"))
        if role == "assistant":
            return EventPayload(
                "assistant/message", {"message": _model_message(blocks, model), ITEM_KEY: item}, None
            )
        source: dict[str, Any] = {"kind": "user"} if role == "user" else {"kind": "plugin", "plugin": PLUGIN}
        return EventPayload("user/message", _user_message(blocks, source, item), None)
    if isinstance(kind, str) and kind.endswith("_call_output") and has_call_id:
        message = {
            "source": {"kind": "tool", "callId": call_id},
            "content": [
                {"type": "tool-result", "toolCallId": call_id, "content": _output_text(item.get("output"))}
            ],
            "role": "user",
            "id": new_message_id(),
        }
        return EventPayload("tool/result", {"message": message, ITEM_KEY: item}, str(call_id))
    if isinstance(kind, str) and kind.endswith("_call") and has_call_id:
        name = item.get("name") if isinstance(item.get("name"), str) and item.get("name") else kind
        block = {"type": "tool-call", "id": call_id, "name": name, "arguments": _call_arguments(item)}
        return EventPayload(
            "assistant/message", {"message": _model_message([block], model), ITEM_KEY: item}, None
        )
    if kind == "reasoning":
        summaries = item.get("summary")
        blocks = [
            {"type": "reasoning", "text": part["text"]}
            for part in (summaries if isinstance(summaries, list) else [])
            if isinstance(part, Mapping) and isinstance(part.get("text"), str)
        ] or [{"type": ITEM_BLOCK, "itemType": "reasoning"}]
        return EventPayload(
            "assistant/message", {"message": _model_message(blocks, model), ITEM_KEY: item}, None
        )
    marker = [{"type": ITEM_BLOCK, "itemType": kind if isinstance(kind, str) else None}]
    if isinstance(kind, str) and (kind.endswith("_output") or kind.endswith("_response")):
        return EventPayload(
            "user/message", _user_message(marker, {"kind": "plugin", "plugin": PLUGIN}, item), None
        )
    return EventPayload("assistant/message", {"message": _model_message(marker, model), ITEM_KEY: item}, None)


def tombstone_payload(op: str, removed: int, model: str = "session") -> dict[str, Any]:
    """The data of the ``assistant/message`` that replaces the nodes ``op`` removed.

    Its content is empty, so it projects to no message in harness or dsh (FORMAT §6): the
    model history of both then matches ``get_items``. The removed events stay in the log.
    """
    message = _model_message([], model)
    return {"message": message, OP_KEY: {"op": op, "removed": removed}}


def _joined_text(content: object) -> str:
    parts: list[str] = []
    if isinstance(content, list):
        for block in content:
            if (
                isinstance(block, Mapping)
                and block.get("type") == "text"
                and isinstance(block.get("text"), str)
            ):
                parts.append(block["text"])
    return "".join(parts)


def derive_item(event: Event) -> dict[str, Any] | None:
    """The item a Surface node stands for (a fresh, mutable value), or None (a tombstone).

    An appended node returns its kept item exactly; a node put there by a replace (a
    compaction checkpoint, a pruned tool result) is derived from what it says now.
    """
    data = orjson.loads(event.data_json) if event.data_json[:1] == b"{" else None
    if not isinstance(data, dict):
        return None
    if OP_KEY in data:
        return None
    kind = event.type
    message = data if kind == "user/message" else data.get("message")
    if not isinstance(message, dict):
        return None
    if event.surface_op == "append":
        kept = (message if kind == "user/message" else data).get(ITEM_KEY)
        if isinstance(kept, dict):
            return kept
    if kind == "tool/result":
        content = message.get("content")
        block = content[0] if isinstance(content, list) and content and isinstance(content[0], dict) else {}
        output = _joined_text(block.get("content"))
        kept = data.get(ITEM_KEY)
        if isinstance(kept, dict):  # a rewritten result (the pruner): the item with the new output
            return {**kept, "output": output}
        return {"type": "function_call_output", "call_id": block.get("toolCallId", ""), "output": output}
    if kind == "assistant/message":
        text = _joined_text(message.get("content"))
        if not text:
            return None
        return {"role": "assistant", "content": text}
    return {"role": "user", "content": _joined_text(message.get("content"))}


def call_id_of_output(item: Mapping[str, Any]) -> str | None:
    """The ``call_id`` an output item answers (``*_call_output`` with a call id), else None."""
    kind = item.get("type")
    call_id = item.get("call_id")
    if isinstance(kind, str) and kind.endswith("_call_output") and isinstance(call_id, str) and call_id:
        return call_id
    return None


def call_id_of_call(item: Mapping[str, Any]) -> str | None:
    """The ``call_id`` a call item opens (``*_call`` with a call id), else None."""
    kind = item.get("type")
    call_id = item.get("call_id")
    if isinstance(kind, str) and kind.endswith("_call") and isinstance(call_id, str) and call_id:
        return call_id
    return None

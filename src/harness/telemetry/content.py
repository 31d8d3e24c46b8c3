"""Message content in the conventions' JSON shapes, with every credential redacted.

Content is opt-in (the GenAI conventions' ``gen_ai.input.messages`` and friends are Opt-In
attributes). Whatever is captured passes through the project's one credential filter
(``harness.compaction.cues.redact``: API keys, tokens, private keys, ``password=`` values,
passwords in database URLs) string by string, and a JSON object value whose key names a
credential (``"password": "..."``) is replaced whole, before the JSON text is written: redacting
the finished text could cut a JSON string in half.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

import orjson

from harness.compaction.cues import REDACTED, redact

__all__ = ["clean", "content_json", "message_parts", "tool_arguments", "tool_result_text"]

_CREDENTIAL_KEY: Final = re.compile(
    r"(?i)[\w.-]*(?:password|passwd|pwd|secret|token|api[_-]?key|access[_-]?key|credentials?|authorization)[\w.-]*"
)


def clean(value: Any) -> Any:
    """``value`` (JSON) with every string redacted and every credential-named string value masked."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for key, item in value.items():
            name = str(key)
            if isinstance(item, str) and _CREDENTIAL_KEY.fullmatch(name):
                out[redact(name)] = REDACTED
            else:
                out[redact(name)] = clean(item)
        return out
    if isinstance(value, (list, tuple)):
        return [clean(item) for item in value]
    return value


def content_json(value: Any) -> str:
    """``value`` cleaned and written as compact JSON text (an attribute value)."""
    return orjson.dumps(clean(value)).decode()


def tool_arguments(arguments: Any) -> Any:
    """A tool call's raw JSON argument text as an object when it parses, else the text."""
    if isinstance(arguments, str):
        try:
            return orjson.loads(arguments)
        except orjson.JSONDecodeError:
            return arguments
    return arguments


def _block_text(blocks: Any) -> str:
    if not isinstance(blocks, (list, tuple)):
        return ""
    parts = [str(b.get("text", "")) for b in blocks if isinstance(b, Mapping) and b.get("type") == "text"]
    return "\n".join(parts)


def tool_result_text(message: Any) -> str:
    """The text of a tool result message's one ``tool-result`` block."""
    if not isinstance(message, Mapping):
        return ""
    for block in message.get("content") or ():
        if isinstance(block, Mapping) and block.get("type") == "tool-result":
            return _block_text(block.get("content"))
    return ""


def _part(block: Mapping[str, Any]) -> dict[str, Any]:
    kind = block.get("type")
    if kind == "text":
        return {"type": "text", "content": str(block.get("text", ""))}
    if kind == "reasoning":
        return {"type": "reasoning", "content": str(block.get("text", ""))}
    if kind == "tool-call":
        return {
            "type": "tool_call",
            "id": block.get("id"),
            "name": block.get("name"),
            "arguments": tool_arguments(block.get("arguments")),
        }
    if kind == "tool-result":
        return {
            "type": "tool_call_response",
            "id": block.get("toolCallId"),
            "response": _block_text(block.get("content")),
        }
    return {"type": str(kind)}  # an image or a block harness does not know: its kind only


def message_parts(message: Any, *, finish_reason: str | None = None) -> dict[str, Any] | None:
    """A log message as the conventions' ``{role, parts[, finish_reason]}`` (None if not one)."""
    if not isinstance(message, Mapping):
        return None
    blocks = [b for b in message.get("content") or () if isinstance(b, Mapping)]
    source = message.get("source")
    role = str(message.get("role", "user"))
    if isinstance(source, Mapping) and source.get("kind") == "tool":
        role = "tool"
    out: dict[str, Any] = {"role": role, "parts": [_part(b) for b in blocks]}
    if finish_reason is not None:
        out["finish_reason"] = finish_reason
    return out

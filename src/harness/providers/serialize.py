"""Request building for OpenAI-compatible chat completions (FORMAT §12).

Turns a frozen ``GenerateOptions`` into the JSON body of ``POST /chat/completions``:

* body keys in a fixed order — ``model, messages, stream, stream_options``, then the optional
  ``thinking, reasoning_effort, tools, temperature, max_tokens, stop`` — each optional key left
  out when it has no value;
* reasoning efforts ``off/low/high/max`` map to ``thinking`` (+ ``reasoning_effort``); any other
  value is refused with ``UNSUPPORTED_REASONING_EFFORT``; the ``session-title`` purpose forces
  thinking off;
* messages: the system prompt first; user text blocks concatenated; each tool result becomes a
  ``role: tool`` entry (``(no output)`` when empty); assistant messages carry their text, all of
  their reasoning as ``reasoning_content`` and their tool calls.

Everything here is pure: no I/O, no secrets.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from harness.events.json import thaw
from harness.messages.model import (
    LlmFailure,
    Message,
    ReasoningBlock,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
)
from harness.messages.request import GenerateOptions

__all__ = [
    "EFFORTS",
    "NO_OUTPUT",
    "RequestRefused",
    "build_body",
    "serialize_messages",
    "serialize_tools",
    "thinking_fields",
]

EFFORTS = ("off", "low", "high", "max")
"""The reasoning efforts the DeepSeek API understands."""

NO_OUTPUT = "(no output)"
"""What a tool result with no text is sent as."""

TITLE_PURPOSE = "session-title"


class RequestRefused(Exception):
    """The request cannot be sent; ``failure`` is the error finish to report instead."""

    def __init__(self, failure: LlmFailure) -> None:
        super().__init__(failure.message)
        self.failure = failure


def thinking_fields(effort: Any, *, purpose: str | None, reasoning: bool = True) -> dict[str, Any]:
    """The ``thinking`` / ``reasoning_effort`` body fields for ``effort``.

    ``reasoning=False`` is a deployment without thinking: it accepts only ``off`` and sends
    neither field (so plain OpenAI-compatible endpoints never see them). Raises
    ``RequestRefused`` (code ``UNSUPPORTED_REASONING_EFFORT``) for any other value.
    """
    if purpose == TITLE_PURPOSE:
        return {"thinking": {"type": "disabled"}} if reasoning else {}
    allowed = EFFORTS if reasoning else ("off",)
    if not isinstance(effort, str) or effort not in allowed:
        raise RequestRefused(
            LlmFailure(
                message=f"reasoning effort {effort!r} is not supported (use one of {', '.join(allowed)})",
                code="UNSUPPORTED_REASONING_EFFORT",
            )
        )
    if not reasoning:
        return {}
    if effort == "off":
        return {"thinking": {"type": "disabled"}}
    return {"thinking": {"type": "enabled"}, "reasoning_effort": effort}


def serialize_tools(tools: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Header tools (``{name, description, parameters}``) as chat-completions function tools."""
    out: list[dict[str, Any]] = []
    for tool in tools:
        function: dict[str, Any] = {"name": tool.get("name", "")}
        if tool.get("description") is not None:
            function["description"] = tool.get("description")
        if tool.get("parameters") is not None:
            function["parameters"] = thaw(tool.get("parameters"))
        out.append({"type": "function", "function": function})
    return out


def _text_of(blocks: Iterable[Any]) -> str:
    return "".join(block.text for block in blocks if type(block) is TextBlock)


def _tool_entry(block: ToolResultBlock) -> dict[str, Any]:
    text = _text_of(block.content)
    return {"role": "tool", "tool_call_id": block.tool_call_id, "content": text or NO_OUTPUT}


def _assistant_entry(message: Message) -> dict[str, Any]:
    blocks = message.content
    entry: dict[str, Any] = {"role": "assistant", "content": _text_of(blocks)}
    reasoning = [block.text for block in blocks if type(block) is ReasoningBlock]
    if reasoning:
        entry["reasoning_content"] = "".join(reasoning)
    calls = [
        {
            "id": block.id,
            "type": "function",
            "function": {"name": block.name, "arguments": block.arguments},
        }
        for block in blocks
        if type(block) is ToolCallBlock
    ]
    if calls:
        entry["tool_calls"] = calls
    return entry


def serialize_messages(system: str | None, messages: Iterable[Message]) -> list[dict[str, Any]]:
    """The ``messages`` array: the system prompt first, then each message in order."""
    out: list[dict[str, Any]] = []
    if system:
        out.append({"role": "system", "content": system})
    for message in messages:
        role = message.role
        if role == "assistant":
            out.append(_assistant_entry(message))
            continue
        blocks = message.content
        results = [block for block in blocks if type(block) is ToolResultBlock]
        out.extend(_tool_entry(block) for block in results)
        if results and not any(type(block) is TextBlock for block in blocks):
            continue  # a tool-results-only message has no user entry
        out.append({"role": "system" if role == "system" else "user", "content": _text_of(blocks)})
    return out


def build_body(options: GenerateOptions, *, reasoning: bool = True) -> dict[str, Any]:
    """The chat-completions body for ``options`` (whose header is already materialized).

    Raises ``RequestRefused`` when the request cannot be expressed (an unsupported effort).
    """
    config = options.config
    body: dict[str, Any] = {
        "model": config.get("model", ""),
        "messages": serialize_messages(options.system, options.messages),
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    body.update(thinking_fields(config.get("reasoningEffort"), purpose=options.purpose, reasoning=reasoning))
    if options.tools:
        body["tools"] = serialize_tools(options.tools)
    if config.get("temperature") is not None:
        body["temperature"] = config.get("temperature")
    if config.get("maxTokens") is not None:
        body["max_tokens"] = config.get("maxTokens")
    if config.get("stop") is not None:
        body["stop"] = thaw(config.get("stop"))
    return body

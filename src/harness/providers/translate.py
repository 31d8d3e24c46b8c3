"""Chat-completions stream deltas → harness stream chunks (FORMAT §3, §12).

``StreamTranslator`` is fed one decoded SSE ``data`` object at a time and returns the chunks
it produces; ``done()`` is called at ``[DONE]`` and returns the closing chunks.

* Harness block indexes are given in order of first appearance: the reasoning block, the text
  block and each tool call (by its provider-side index) get the next free index the first time
  they carry something. An empty ``reasoning_content`` (DeepSeek's first delta) opens nothing.
* Every delta repeats its tool call's id; the name travels with the first delta only.
* At ``[DONE]``: one ``block-end`` per block in index order, then ``usage`` (when reported),
  then ``finish``. ``stop``/``tool_calls``/``length`` map to stop/tool-calls/max-tokens; any
  other reason is an error finish with the reason upper-cased as its code; ``stop`` with no
  block at all is an error finish ``EMPTY_RESPONSE``.

A delta of the wrong shape raises ``MalformedStream``; the caller reports it as
``MALFORMED_RESPONSE``. An ``{"error": ...}`` event raises ``StreamReportedError`` (reported as
``SERVER``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness.events.json import FrozenDict
from harness.messages.model import LlmFailure, TokenUsage, reasoning_block, text_block, tool_call_block
from harness.messages.stream import (
    BlockEnd,
    BlockStart,
    Finish,
    FinishError,
    FinishMaxTokens,
    FinishReason,
    FinishStop,
    FinishToolCalls,
    ReasoningDelta,
    StreamChunk,
    TextDelta,
    ToolCallDelta,
    UsageChunk,
)

__all__ = [
    "MalformedStream",
    "StreamReportedError",
    "StreamTranslator",
    "finish_reason_for",
    "usage_from_json",
]


class MalformedStream(Exception):
    """A stream event that is not a well-formed chat-completions chunk."""


class StreamReportedError(Exception):
    """The provider sent an ``{"error": ...}`` event in place of a chunk."""


def _count(raw: Mapping[str, Any], key: str) -> int | None:
    value = raw.get(key)
    return value if type(value) is int and value >= 0 else None


def usage_from_json(raw: Any) -> TokenUsage | None:
    """FORMAT §12 usage mapping; ``None`` when ``raw`` holds no usable counts.

    ``cacheRead = prompt_tokens_details.cached_tokens ?? prompt_cache_hit_tokens``;
    ``inputTokens = prompt_tokens − cacheRead``; ``outputTokens = completion_tokens``;
    ``reasoningTokens`` from ``completion_tokens_details.reasoning_tokens``.
    """
    if not isinstance(raw, Mapping):
        return None
    prompt = _count(raw, "prompt_tokens")
    completion = _count(raw, "completion_tokens")
    if prompt is None and completion is None:
        return None
    details = raw.get("prompt_tokens_details")
    cache_read = _count(details, "cached_tokens") if isinstance(details, Mapping) else None
    if cache_read is None:
        cache_read = _count(raw, "prompt_cache_hit_tokens")
    output_details = raw.get("completion_tokens_details")
    reasoning = _count(output_details, "reasoning_tokens") if isinstance(output_details, Mapping) else None
    return TokenUsage(
        input_tokens=max((prompt or 0) - (cache_read or 0), 0),
        output_tokens=completion or 0,
        cache_read_tokens=cache_read,
        reasoning_tokens=reasoning,
    )


def finish_reason_for(reason: str | None, *, has_blocks: bool) -> FinishReason:
    """The harness finish reason for a provider ``finish_reason`` seen before ``[DONE]``."""
    if reason in (None, "stop"):
        if not has_blocks:
            return FinishError(LlmFailure(message="the model returned no content", code="EMPTY_RESPONSE"))
        return FinishStop()
    if reason == "tool_calls":
        return FinishToolCalls()
    if reason == "length":
        return FinishMaxTokens()
    return FinishError(
        LlmFailure(message=f"the model stopped with finish_reason {reason!r}", code=reason.upper())
    )


class _Block:
    __slots__ = ("call_id", "index", "kind", "name", "parts")

    def __init__(self, index: int, kind: str, call_id: str = "", name: str = "") -> None:
        self.index = index
        self.kind = kind
        self.call_id = call_id
        self.name = name
        self.parts: list[str] = []

    def to_json(self) -> FrozenDict:
        text = "".join(self.parts)
        if self.kind == "tool-call":
            return tool_call_block(self.call_id, self.name, text)
        if self.kind == "reasoning":
            return reasoning_block(text)
        return text_block(text)


def _optional_str(raw: Mapping[str, Any], key: str) -> str | None:
    value = raw.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise MalformedStream(f"{key} is {type(value).__name__}, not a string")
    return value


class StreamTranslator:
    """Stateful translation of one response's stream (see the module doc)."""

    def __init__(self) -> None:
        self._blocks: list[_Block] = []
        self._reasoning: _Block | None = None
        self._text: _Block | None = None
        self._tools: dict[int, _Block] = {}
        self._finish_reason: str | None = None
        self._usage: TokenUsage | None = None

    @property
    def usage(self) -> TokenUsage | None:
        """The usage reported so far, if any."""
        return self._usage

    def _open(self, kind: str, out: list[StreamChunk], call_id: str = "", name: str = "") -> _Block:
        block = _Block(len(self._blocks), kind, call_id, name)
        self._blocks.append(block)
        out.append(BlockStart(block.index, kind))
        return block

    def feed(self, data: Any) -> list[StreamChunk]:
        """Translate one decoded ``data`` object; raises ``MalformedStream`` on a bad shape."""
        if not isinstance(data, Mapping):
            raise MalformedStream(f"a stream event is {type(data).__name__}, not an object")
        error = data.get("error")
        if error is not None and data.get("choices") is None:
            message = error.get("message") if isinstance(error, Mapping) else error
            raise StreamReportedError(str(message or "the provider reported an error"))
        out: list[StreamChunk] = []
        usage = usage_from_json(data.get("usage"))
        if usage is not None:
            self._usage = usage
        choices = data.get("choices")
        if choices is None:
            return out
        if not isinstance(choices, list | tuple):
            raise MalformedStream("choices is not an array")
        for choice in choices:
            if not isinstance(choice, Mapping):
                raise MalformedStream("a choice is not an object")
            if choice.get("index", 0) != 0:
                continue  # only the first choice is ever requested
            delta = choice.get("delta")
            if delta is not None:
                if not isinstance(delta, Mapping):
                    raise MalformedStream("delta is not an object")
                self._delta(delta, out)
            reason = _optional_str(choice, "finish_reason")
            if reason:
                self._finish_reason = reason
        return out

    def _delta(self, delta: Mapping[str, Any], out: list[StreamChunk]) -> None:
        reasoning = _optional_str(delta, "reasoning_content")
        if reasoning:
            if self._reasoning is None:
                self._reasoning = self._open("reasoning", out)
            self._reasoning.parts.append(reasoning)
            out.append(ReasoningDelta(self._reasoning.index, reasoning))
        content = _optional_str(delta, "content")
        if content:
            if self._text is None:
                self._text = self._open("text", out)
            self._text.parts.append(content)
            out.append(TextDelta(self._text.index, content))
        calls = delta.get("tool_calls")
        if calls is None:
            return
        if not isinstance(calls, list | tuple):
            raise MalformedStream("tool_calls is not an array")
        for position, call in enumerate(calls):
            if not isinstance(call, Mapping):
                raise MalformedStream("a tool call delta is not an object")
            self._tool_delta(call, position, out)

    def _tool_delta(self, call: Mapping[str, Any], position: int, out: list[StreamChunk]) -> None:
        key = call.get("index", position)
        if type(key) is not int:
            raise MalformedStream("a tool call index is not an integer")
        function = call.get("function") or {}
        if not isinstance(function, Mapping):
            raise MalformedStream("a tool call function is not an object")
        name = _optional_str(function, "name")
        arguments = _optional_str(function, "arguments") or ""
        block = self._tools.get(key)
        if block is None:
            call_id = _optional_str(call, "id") or f"call_{key}"
            block = self._open("tool-call", out, call_id, name or "")
            self._tools[key] = block
            block.parts.append(arguments)
            out.append(ToolCallDelta(index=block.index, id=call_id, name=name, arguments_delta=arguments))
            return
        learned = name if name and not block.name else None
        if learned is not None:
            block.name = learned
        elif not arguments:
            return
        block.parts.append(arguments)
        out.append(
            ToolCallDelta(index=block.index, id=block.call_id, name=learned, arguments_delta=arguments)
        )

    def done(self) -> list[StreamChunk]:
        """The closing chunks at ``[DONE]``: block-ends, usage, finish."""
        out: list[StreamChunk] = [BlockEnd(block.index, block.to_json()) for block in self._blocks]
        if self._usage is not None:
            out.append(UsageChunk(self._usage))
        out.append(Finish(finish_reason_for(self._finish_reason, has_blocks=bool(self._blocks))))
        return out

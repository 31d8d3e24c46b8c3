"""Assembling a streamed response into message content (FORMAT §3 "Assembly").

Blocks keep the order in which their index first appeared. A ``block-end`` carries
the authoritative block (the first close of an index wins); a block that never closed
is built from its deltas. A ``max-tokens`` finish drops every tool-call block; an
interrupted stream keeps only text and reasoning blocks whose text is not blank.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness.events.json import FrozenDict, thaw
from harness.messages.model import TokenUsage
from harness.messages.stream import (
    BlockEnd,
    BlockStart,
    Finish,
    FinishReason,
    ReasoningDelta,
    StreamChunk,
    TextDelta,
    ToolCallDelta,
    UsageChunk,
)

__all__ = ["StreamAssembly"]


class _Open:
    __slots__ = ("arguments", "closed", "id", "kind", "name", "text")

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.text: list[str] = []
        self.id = ""
        self.name = ""
        self.arguments: list[str] = []
        self.closed: Mapping[str, Any] | None = None

    def block(self) -> dict[str, Any]:
        if self.closed is not None:
            return dict(thaw(self.closed))
        if self.kind == "tool-call":
            arguments = "".join(self.arguments)
            return {"type": "tool-call", "id": self.id, "name": self.name, "arguments": arguments}
        return {"type": self.kind, "text": "".join(self.text)}


class StreamAssembly:
    """Feed it the chunks of one attempt; read the content, usage and finish reason."""

    def __init__(self) -> None:
        self._blocks: dict[int, _Open] = {}
        self.usage: TokenUsage | None = None
        self.finish: FinishReason | None = None

    def _open(self, index: int, kind: str) -> _Open:
        block = self._blocks.get(index)
        if block is None:
            block = self._blocks[index] = _Open(kind)
        return block

    def feed(self, chunk: StreamChunk) -> None:
        """Take one chunk into account."""
        if isinstance(chunk, BlockStart):
            self._open(chunk.index, chunk.block_type)
        elif isinstance(chunk, TextDelta):
            self._open(chunk.index, "text").text.append(chunk.text)
        elif isinstance(chunk, ReasoningDelta):
            self._open(chunk.index, "reasoning").text.append(chunk.text)
        elif isinstance(chunk, ToolCallDelta):
            block = self._open(chunk.index, "tool-call")
            block.id = block.id or chunk.id
            if chunk.name:
                block.name = chunk.name
            block.arguments.append(chunk.arguments_delta)
        elif isinstance(chunk, BlockEnd):
            block = self._open(chunk.index, _kind_of(chunk.block))
            if block.closed is None and isinstance(chunk.block, Mapping):
                block.closed = FrozenDict(chunk.block)
        elif isinstance(chunk, UsageChunk):
            self.usage = chunk.usage
        elif isinstance(chunk, Finish):
            self.finish = chunk.reason

    def content(self, *, max_tokens: bool = False, interrupted: bool = False) -> list[dict[str, Any]]:
        """The message content so far, under the assembly rules of the finish given."""
        blocks = [open_block.block() for open_block in self._blocks.values()]
        if interrupted:
            return [
                block
                for block in blocks
                if block.get("type") in ("text", "reasoning") and str(block.get("text", "")).strip()
            ]
        if max_tokens:
            return [block for block in blocks if block.get("type") != "tool-call"]
        return blocks


def _kind_of(block: object) -> str:
    if isinstance(block, Mapping) and isinstance(block.get("type"), str):
        return str(block["type"])
    return "text"

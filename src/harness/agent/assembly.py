"""Assembling a streamed response into message content (FORMAT §3 "Assembly").

Blocks keep the order in which their index first appeared. A ``block-end`` carries
the authoritative block (the first close of an index wins); a block that never closed
is built from its deltas. A ``max-tokens`` finish drops every tool-call block; an
interrupted stream keeps only text and reasoning blocks whose text is not blank.

A tool-call block whose stream gave it no usable id (missing, ``""``, not a string)
gets one minted here, ``call-<index>-<random hex>``, unique in the session, and the
same id every time the content is read: the loop's ``tool/call``, approval and
``tool/result`` all take the block's id, and a log holding an unusable one would
not load after a crash (see ``harness.messages.call_ids``).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from harness.events.json import FrozenDict, thaw
from harness.messages.call_ids import usable_call_id
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

__all__ = ["StreamAssembly", "mint_call_id"]


def mint_call_id(index: int) -> str:
    """A fresh call id for the tool-call block at ``index`` that arrived without one."""
    return f"call-{index}-{uuid.uuid4().hex[:16]}"


class _Open:
    __slots__ = ("arguments", "closed", "id", "index", "kind", "minted", "name", "text")

    def __init__(self, index: int, kind: str) -> None:
        self.index = index
        self.kind = kind
        self.text: list[str] = []
        self.id = ""
        self.minted = ""
        self.name = ""
        self.arguments: list[str] = []
        self.closed: Mapping[str, Any] | None = None

    def call_id(self, given: object) -> str:
        """``given`` when usable, else the id the deltas carried, else one minted once."""
        if usable_call_id(given):
            assert isinstance(given, str)
            return given
        if self.id:
            return self.id
        if not self.minted:
            self.minted = mint_call_id(self.index)
        return self.minted

    def block(self) -> dict[str, Any]:
        if self.closed is not None:
            block = dict(thaw(self.closed))
            if block.get("type") == "tool-call" and not usable_call_id(block.get("id")):
                block["id"] = self.call_id(block.get("id"))
            return block
        if self.kind == "tool-call":
            arguments = "".join(self.arguments)
            return {"type": "tool-call", "id": self.call_id(None), "name": self.name, "arguments": arguments}
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
            block = self._blocks[index] = _Open(index, kind)
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
            if not block.id and usable_call_id(chunk.id):
                block.id = chunk.id
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

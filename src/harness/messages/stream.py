"""Stream chunks, finish reasons and turn-end reasons (FORMAT §3, §4), typed.

Each type converts to and from its wire JSON (``to_json`` / ``*_from_json``) with
FORMAT's key names and order. Turn-end reasons are an open union on ``kind``: a
kind this version does not know is kept whole as ``UnknownTurnEnd``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeAlias

import msgspec

from harness.events.json import FrozenDict, adopt, thaw
from harness.messages.model import LlmFailure, TokenUsage

__all__ = [
    "Aborted",
    "BlockEnd",
    "BlockStart",
    "Blocked",
    "Completed",
    "Finish",
    "FinishReason",
    "Interrupted",
    "MaxTokens",
    "ReasoningDelta",
    "StreamChunk",
    "TextDelta",
    "ToolCallDelta",
    "TurnEndError",
    "TurnEndReason",
    "UnknownTurnEnd",
    "UsageChunk",
    "chunk_from_json",
    "finish_reason_from_json",
    "turn_end_reason_from_json",
]


class _Wire(msgspec.Struct, frozen=True, rename="camel", omit_defaults=True, tag_field="type"):
    def to_json(self) -> FrozenDict:
        """The wire JSON (read-only)."""
        return adopt(msgspec.to_builtins(self))  # type: ignore[no-any-return]


# ---- finish reasons (tagged by "kind") ----------------------------------------------------


class _Kind(msgspec.Struct, frozen=True, rename="camel", omit_defaults=True, tag_field="kind"):
    def to_json(self) -> FrozenDict:
        return adopt(msgspec.to_builtins(self))  # type: ignore[no-any-return]


class FinishStop(_Kind, frozen=True, tag="stop"):
    """The model finished its answer."""


class FinishToolCalls(_Kind, frozen=True, tag="tool-calls"):
    """The model stopped to call tools."""


class FinishMaxTokens(_Kind, frozen=True, tag="max-tokens"):
    """The output cap truncated the answer."""


class FinishAborted(_Kind, frozen=True, tag="aborted"):
    """The request was cancelled."""

    failure: LlmFailure


class FinishError(_Kind, frozen=True, tag="error"):
    """The request failed."""

    failure: LlmFailure


FinishReason: TypeAlias = FinishStop | FinishToolCalls | FinishMaxTokens | FinishAborted | FinishError


def finish_reason_from_json(raw: Any) -> FinishReason:
    """Parse a finish reason; raises ``msgspec.ValidationError`` on a malformed one."""
    return msgspec.convert(thaw(raw), FinishReason)  # type: ignore[no-any-return]


# ---- stream chunks (tagged by "type") ----------------------------------------------------


class BlockStart(_Wire, frozen=True, tag="block-start"):
    """Opens block ``index`` of the message being streamed, of type ``block_type``."""

    index: int
    block_type: str


class TextDelta(_Wire, frozen=True, tag="text-delta"):
    """More text for the text block ``index``."""

    index: int
    text: str


class ReasoningDelta(_Wire, frozen=True, tag="reasoning-delta"):
    """More text for the reasoning block ``index``."""

    index: int
    text: str


class ToolCallDelta(_Wire, frozen=True, tag="tool-call-delta", kw_only=True):
    """More of the tool call ``id`` in block ``index``: its ``name`` (when known) and the next
    piece of its JSON ``arguments``."""

    index: int
    id: str
    name: str | None = None
    arguments_delta: str


class BlockEnd(_Wire, frozen=True, tag="block-end"):
    """Closes block ``index``; ``block`` is authoritative (first close wins)."""

    index: int
    block: Any


class UsageChunk(_Wire, frozen=True, tag="usage"):
    """The token usage the provider reported for the request."""

    usage: TokenUsage


class Finish(_Wire, frozen=True, tag="finish"):
    """The last chunk of a stream; nothing follows it."""

    reason: FinishReason
    replay_state: Any = None


StreamChunk: TypeAlias = (
    BlockStart | TextDelta | ReasoningDelta | ToolCallDelta | BlockEnd | UsageChunk | Finish
)


def chunk_from_json(raw: Any) -> StreamChunk:
    """Parse one stream chunk; raises ``msgspec.ValidationError`` on a malformed one."""
    return msgspec.convert(thaw(raw), StreamChunk)  # type: ignore[no-any-return]


# ---- turn-end reasons (open union on "kind") ---------------------------------------------


class Completed(_Kind, frozen=True, tag="completed"):
    """The turn ended normally."""


class Aborted(_Kind, frozen=True, tag="aborted"):
    """Cancelled: ``reason`` is ``{kind: user|parent|hook|disposed|legacy, ...}``."""

    reason: Any


class Blocked(_Kind, frozen=True, tag="blocked"):
    """A policy blocked the turn."""


class TurnEndError(_Kind, frozen=True, tag="error"):
    """The turn failed; non-LLM errors use code ``UNKNOWN``."""

    error: LlmFailure


class MaxTokens(_Kind, frozen=True, tag="max-tokens"):
    """A step was truncated by the output cap (sticky for the whole turn)."""


class Interrupted(_Kind, frozen=True, tag="interrupted"):
    """Written only by crash repair."""


class UnknownTurnEnd(msgspec.Struct, frozen=True):
    """A turn-end reason of a kind this version does not know, kept whole."""

    raw: Any

    @property
    def kind(self) -> str:
        return str(self.raw.get("kind", "")) if isinstance(self.raw, Mapping) else ""

    def to_json(self) -> Any:
        return self.raw


TurnEndReason: TypeAlias = (
    Completed | Aborted | Blocked | TurnEndError | MaxTokens | Interrupted | UnknownTurnEnd
)

_KNOWN_TURN_END = Completed | Aborted | Blocked | TurnEndError | MaxTokens | Interrupted
_TURN_END_KINDS = frozenset({"completed", "aborted", "blocked", "error", "max-tokens", "interrupted"})


def turn_end_reason_from_json(raw: Any) -> TurnEndReason:
    """Parse a turn-end reason; unknown kinds come back as ``UnknownTurnEnd``."""
    if isinstance(raw, Mapping) and raw.get("kind") in _TURN_END_KINDS:
        return msgspec.convert(thaw(raw), _KNOWN_TURN_END)  # type: ignore[no-any-return]
    return UnknownTurnEnd(raw)

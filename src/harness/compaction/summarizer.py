"""The summarizer seam: what a compaction hands a summarizer and what it gets back."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

import msgspec

from harness.messages.model import Message, TokenUsage
from harness.messages.request import EpochHeader
from harness.session.session import Session

__all__ = ["Summarizer", "Summary", "SummaryRequest"]


class SummaryRequest(msgspec.Struct, frozen=True, kw_only=True):
    """What to summarize: the shadowed nodes' messages (in Surface order, a head prefix of the
    last request), their seqs, the request header in force (system prompt, tools, route), the
    session (read it, never append to it) and the cancel signal to honour."""

    session: Session
    compaction_id: str
    messages: tuple[Message, ...]
    seqs: tuple[int, ...]
    header: EpochHeader | None
    tokens: int
    cancel: asyncio.Event | None = None


class Summary(msgspec.Struct, frozen=True, kw_only=True):
    """A summarizer's result.

    ``texts`` become the checkpoint's text blocks; ``provider``/``model`` name what made it;
    ``raw_output`` (every output block) and ``llm_stream_call=True`` record a model call;
    ``max_tokens`` and ``usage`` its cap and reported usage.
    """

    texts: tuple[str, ...]
    provider: str
    model: str
    raw_output: tuple[Mapping[str, Any], ...] | None = None
    llm_stream_call: bool = False
    max_tokens: int | None = None
    usage: TokenUsage | None = None

    @property
    def text(self) -> str:
        """The summary as one string (the text blocks joined)."""
        return "".join(self.texts)


@runtime_checkable
class Summarizer(Protocol):
    """Turns a span of the conversation into a summary. Raise to fail (any exception; a
    ``SummaryFailed`` can name a ``reason``); honour ``request.cancel`` promptly."""

    async def summarize(self, request: SummaryRequest) -> Summary:
        """The summary of ``request.messages``."""
        ...

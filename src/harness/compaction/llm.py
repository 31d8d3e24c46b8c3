"""``LlmSummarizer``: the summary is written by a model (FORMAT §11.6).

The request replays the conversation as the last request sent it — the header's system
prompt and tool schemas, then the shadowed nodes' messages, which are a head prefix of the
last request's messages because compaction is head-anchored — and ends with one more user
message carrying our compaction instruction. A provider with a prefix cache can therefore
reuse everything but the instruction. ``purpose="compaction"`` lets the provider mark the
call (DeepSeek sends ``x-deepseek-harness-compact: 1``); the body itself is an ordinary one.

The config carries the route, the model and ``maxTokens`` (8192 by default) and no effort or
temperature of its own (the provider fills in its defaults). The target is the configured
model, else the model of the header in force (which must be on this provider's route).

Only text output becomes the summary. An error or aborted finish fails with the provider's
code, a ``max-tokens`` finish with ``MAX_TOKENS``, an image block with ``UNSUPPORTED_CONTENT``,
and output without non-blank text (reasoning only, say) with ``EMPTY_SUMMARY``. Every output
block is recorded as ``rawOutput`` with ``llmStreamCall: true``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from harness.compaction.summarizer import Summary, SummaryRequest
from harness.errors import SummaryFailed
from harness.events.json import thaw
from harness.messages.model import Message, TokenUsage, text_block, user_message
from harness.messages.request import EpochHeader, GenerateOptions
from harness.messages.stream import (
    BlockEnd,
    BlockStart,
    Finish,
    FinishAborted,
    FinishError,
    FinishMaxTokens,
    ReasoningDelta,
    StreamChunk,
    TextDelta,
    ToolCallDelta,
    UsageChunk,
)
from harness.providers.base import Provider

__all__ = ["COMPACTION_INSTRUCTION", "DEFAULT_SUMMARY_MAX_TOKENS", "SECTION_HEADINGS", "LlmSummarizer"]

DEFAULT_SUMMARY_MAX_TOKENS: Final = 8192

SECTION_HEADINGS: Final = (
    "## Primary Request and Intent",
    "## Key Technical Concepts",
    "## Files and Code",
    "## Errors and Fixes",
    "## Pending Jobs",
    "## Current Work",
    "## Next Step",
    "## Critical Context",
)
"""The summary's sections, in the order FORMAT §11.6 gives."""

INSTRUCTION_PLUGIN: Final = "dsh-compaction-basic"

COMPACTION_INSTRUCTION: Final = (
    "Stop the task for a moment. Your job now is different: write a compact working record of "
    "everything in the conversation above, so that a fresh assistant with no other memory can "
    "pick the work up exactly where it stands.\n\n"
    "Answer with these Markdown sections only, every one of them, in this order:\n\n"
    + "\n".join(SECTION_HEADINGS)
    + "\n\n"
    "What goes where: the user's goals and every explicit instruction, correction or preference "
    "(in their own words when the wording matters) under Primary Request and Intent; the "
    "languages, libraries, designs and conventions in use under Key Technical Concepts; each "
    "file touched or inspected, with its exact path and what matters about it, under Files and "
    "Code; each error met and what was done about it under Errors and Fixes; work that was asked "
    "for and is not finished under Pending Jobs; what was being done at the very end under "
    "Current Work; the one action that should come next under Next Step; decisions with their "
    "reasons, constraints, open questions and any data needed to continue under Critical "
    "Context.\n\n"
    "Style: short bullet points, not paragraphs. Write (none) under a section that has nothing. "
    "Copy file paths, commands, identifiers, numbers and error messages exactly as they "
    "appeared. Write the record as plain notes about the work: do not say that it is a summary "
    "or that anything was shortened. Reply with text only and call no tools. If a "
    "<compacted-summary> block appears above, it is an older record: fold whatever in it is "
    "still true into your sections, drop what is outdated, and do not copy it over as a whole."
)
"""The instruction appended as the last user message of the summarizer request (our wording)."""


class _Collected:
    __slots__ = ("blocks", "finish", "order", "usage")

    def __init__(self) -> None:
        self.blocks: dict[int, dict[str, Any]] = {}
        self.order: list[int] = []
        self.usage: TokenUsage | None = None
        self.finish: Finish | None = None

    def _open(self, index: int, kind: str) -> dict[str, Any]:
        block = self.blocks.get(index)
        if block is None:
            block = {"type": kind, "text": "", "closed": False}
            self.blocks[index] = block
            self.order.append(index)
        return block

    def feed(self, chunk: StreamChunk) -> None:
        if isinstance(chunk, BlockStart):
            self._open(chunk.index, chunk.block_type)
        elif isinstance(chunk, TextDelta | ReasoningDelta):
            block = self._open(chunk.index, "text" if isinstance(chunk, TextDelta) else "reasoning")
            if not block["closed"]:
                block["text"] += chunk.text
        elif isinstance(chunk, ToolCallDelta):
            self._open(chunk.index, "tool-call")
        elif isinstance(chunk, BlockEnd):
            block = self._open(chunk.index, "unknown")
            if not block["closed"]:
                final = thaw(chunk.block) if isinstance(chunk.block, Mapping) else {"type": "unknown"}
                block.clear()
                block.update(final)
                block["closed"] = True
        elif isinstance(chunk, UsageChunk):
            self.usage = chunk.usage
        elif isinstance(chunk, Finish):
            self.finish = chunk

    def output(self) -> list[dict[str, Any]]:
        out = []
        for index in self.order:
            block = {key: value for key, value in self.blocks[index].items() if key != "closed"}
            out.append(block)
        return out


class LlmSummarizer:
    """A ``Summarizer`` that asks ``provider`` for the summary (see the module doc).

    ``model``: the model to use (default: the model of the header in force); ``max_tokens``:
    the output cap of the call; ``instruction``: the final user message (default: ours).
    """

    def __init__(
        self,
        provider: Provider,
        *,
        model: str | None = None,
        max_tokens: int = DEFAULT_SUMMARY_MAX_TOKENS,
        instruction: str = COMPACTION_INSTRUCTION,
    ) -> None:
        if max_tokens <= 0:
            raise ValueError("max_tokens must be positive")
        self.provider = provider
        self.model = model
        self.max_tokens = max_tokens
        self.instruction = instruction

    def __repr__(self) -> str:
        return f"LlmSummarizer({self.provider.route!r}, model={self.model!r})"

    def build_request(self, request: SummaryRequest) -> GenerateOptions:
        """The ``GenerateOptions`` of the summarizer call for ``request``."""
        header = request.header
        route = self.provider.route
        model = self.model
        if model is None and header is not None and header.provider == route:
            model = header.model
        if not model:
            raise SummaryFailed(
                f"no model to summarize with: configure one, or make a request on route {route!r} first",
                reason="NO_TARGET",
            )
        raw: dict[str, Any] = {"config": {"provider": route, "model": model, "maxTokens": self.max_tokens}}
        if header is not None and header.system:
            raw["system"] = header.system
        if header is not None and header.tools:
            raw["tools"] = [thaw(tool) for tool in header.tools]
        instruction = Message(
            user_message(
                [text_block(self.instruction)], source={"kind": "plugin", "plugin": INSTRUCTION_PLUGIN}
            )
        )
        return GenerateOptions(
            header=EpochHeader(raw),
            messages=(*request.messages, instruction),
            session_id=request.session.id,
            purpose="compaction",
        )

    async def summarize(self, request: SummaryRequest) -> Summary:
        """Stream one summarizer call and check its output (see the module doc)."""
        options = self.build_request(request)
        collected = _Collected()
        stream = self.provider.stream(options, cancel=request.cancel)
        try:
            async for chunk in stream:
                collected.feed(chunk)
                if isinstance(chunk, Finish):
                    break
        finally:
            close = getattr(stream, "aclose", None)
            if close is not None:
                await close()
        finish = collected.finish
        if finish is None:
            raise SummaryFailed("the summarizer stream ended without a finish", reason="STREAM_CLOSED")
        reason = finish.reason
        if isinstance(reason, FinishError | FinishAborted):
            failure = reason.failure
            raise SummaryFailed(f"{failure.code}: {failure.message}", reason=failure.code)
        if isinstance(reason, FinishMaxTokens):
            raise SummaryFailed("MAX_TOKENS: the summary was cut off by its output cap", reason="MAX_TOKENS")
        output = collected.output()
        if any(block.get("type") == "image" for block in output):
            raise SummaryFailed(
                "UNSUPPORTED_CONTENT: the summarizer answered with an image", reason="UNSUPPORTED_CONTENT"
            )
        texts = tuple(
            block["text"]
            for block in output
            if block.get("type") == "text" and isinstance(block.get("text"), str)
        )
        if not any(text.strip() for text in texts):
            raise SummaryFailed("EMPTY_SUMMARY: the summarizer returned no text", reason="EMPTY_SUMMARY")
        config = options.header.config
        return Summary(
            texts=texts,
            provider=str(config.get("provider")),
            model=str(config.get("model")),
            raw_output=tuple(output),
            llm_stream_call=True,
            max_tokens=self.max_tokens,
            usage=collected.usage,
        )

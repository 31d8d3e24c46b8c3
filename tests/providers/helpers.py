"""Helpers for the provider tests: request builders, a stream collector and contract checks."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

from harness.messages.model import Message, user_message
from harness.messages.request import EpochHeader, GenerateOptions
from harness.messages.stream import (
    BlockEnd,
    BlockStart,
    Finish,
    FinishAborted,
    FinishError,
    ReasoningDelta,
    StreamChunk,
    TextDelta,
    ToolCallDelta,
    UsageChunk,
)
from harness.providers.deepseek import DeepSeekProvider

T = TypeVar("T")

API_KEY = "sk-test-6f1d2c3b4a59e8d7"
"""The key every provider test uses; it must never leave the HTTP Authorization header."""


def run(work: Awaitable[T]) -> T:
    """Run one coroutine to completion on a fresh event loop."""

    async def main() -> T:
        return await work

    return asyncio.run(main())


class Sleeps:
    """An injected ``sleep`` that records the delays and returns at once."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)


MakeProvider = Callable[..., DeepSeekProvider]
"""A factory for providers on the test's fake server."""


def header(**kwargs: Any) -> EpochHeader:
    """A DeepSeek request header (defaults: flash model, a system prompt)."""
    kwargs.setdefault("provider", "deepseek-official")
    kwargs.setdefault("model", "deepseek-v4-flash")
    kwargs.setdefault("system", "You are a test agent.")
    return EpochHeader.build(**kwargs)


def options(
    messages: Sequence[Any] = (),
    *,
    head: EpochHeader | None = None,
    session_id: str | None = "session-1",
    purpose: str | None = None,
) -> GenerateOptions:
    """Request options; plain strings become user messages."""
    views = tuple(
        Message(user_message(item)) if isinstance(item, str) else Message(item) for item in messages or ["hi"]
    )
    return GenerateOptions(header=head or header(), messages=views, session_id=session_id, purpose=purpose)


async def collect(
    provider: DeepSeekProvider, request: GenerateOptions, cancel: asyncio.Event | None = None
) -> list[StreamChunk]:
    """Every chunk of one stream, after checking the stream contract of ``Provider``."""
    chunks = [chunk async for chunk in provider.stream(request, cancel=cancel)]
    check_contract(chunks)
    return chunks


def check_contract(chunks: Sequence[StreamChunk]) -> None:
    """FORMAT §3 order: starts before deltas, deltas before ends, usage once before the one finish."""
    assert chunks and isinstance(chunks[-1], Finish), "a stream ends with exactly one finish"
    assert sum(isinstance(chunk, Finish) for chunk in chunks) == 1
    assert sum(isinstance(chunk, UsageChunk) for chunk in chunks) <= 1
    started: set[int] = set()
    ended: set[int] = set()
    for chunk in chunks:
        if isinstance(chunk, BlockStart):
            assert chunk.index == len(started), "block indexes follow first appearance"
            started.add(chunk.index)
        elif isinstance(chunk, TextDelta | ReasoningDelta | ToolCallDelta):
            assert chunk.index in started and chunk.index not in ended
        elif isinstance(chunk, BlockEnd):
            assert chunk.index in started and chunk.index not in ended
            ended.add(chunk.index)
        elif isinstance(chunk, UsageChunk):
            assert not any(isinstance(c, Finish) for c in chunks[: chunks.index(chunk)])


def finish_of(chunks: Sequence[StreamChunk]) -> Finish:
    last = chunks[-1]
    assert isinstance(last, Finish)
    return last


def failure_code(chunks: Sequence[StreamChunk]) -> str:
    """The code of an error or aborted finish."""
    reason = finish_of(chunks).reason
    assert isinstance(reason, FinishError | FinishAborted), reason
    return reason.failure.code


def blocks(chunks: Sequence[StreamChunk]) -> list[dict[str, Any]]:
    """The authoritative blocks (block-end), as plain JSON, in index order."""
    return [json.loads(json.dumps(chunk.block)) for chunk in chunks if isinstance(chunk, BlockEnd)]


def wire(chunks: Sequence[StreamChunk]) -> list[Any]:
    """The chunks as their wire JSON (what an ``assistant/chunk`` event would hold)."""
    return [json.loads(json.dumps(chunk.to_json())) for chunk in chunks]

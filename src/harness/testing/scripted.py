"""A scripted, in-process ``Provider`` and a simple tool, for tests of agents built on harness.

``ScriptedProvider(replies)`` plays one reply (a list of stream chunks) per request and
records each request; ``text_reply``, ``calls_reply`` and ``error_reply`` build replies.
A reply given as ``"hang"`` streams a first chunk, then waits for the request's cancel.
``EchoTool`` returns its arguments. No network, no server: for a test of the HTTP path use
``FakeDeepSeek``.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

from harness.messages.model import LlmFailure, TokenUsage
from harness.messages.request import EpochHeader, GenerateOptions
from harness.messages.stream import (
    BlockEnd,
    BlockStart,
    Finish,
    FinishAborted,
    FinishError,
    FinishMaxTokens,
    FinishStop,
    FinishToolCalls,
    StreamChunk,
    TextDelta,
    ToolCallDelta,
    UsageChunk,
)
from harness.tools.base import ToolContext, ToolOutcome, ToolSpec

ROUTE = "scripted"


__all__ = ["ROUTE", "EchoTool", "ScriptedProvider", "calls_reply", "error_reply", "text_reply"]


def text_reply(*pieces: str, usage: bool = True) -> list[StreamChunk]:
    """A text answer streamed in ``pieces`` (with a usage chunk unless ``usage`` is False)."""
    chunks: list[StreamChunk] = [BlockStart(0, "text")]
    chunks += [TextDelta(0, piece) for piece in pieces]
    chunks.append(BlockEnd(0, {"type": "text", "text": "".join(pieces)}))
    if usage:
        chunks.append(UsageChunk(TokenUsage(input_tokens=10, output_tokens=len(pieces))))
    chunks.append(Finish(FinishStop()))
    return chunks


def calls_reply(*calls: tuple[str, str, str], max_tokens: bool = False) -> list[StreamChunk]:
    """Tool calls ``(id, name, arguments JSON)``; ``max_tokens``: cut off by the token limit."""
    chunks: list[StreamChunk] = []
    for index, (call_id, name, arguments) in enumerate(calls):
        chunks.append(BlockStart(index, "tool-call"))
        chunks.append(ToolCallDelta(index=index, id=call_id, name=name, arguments_delta=arguments))
        block = {"type": "tool-call", "id": call_id, "name": name, "arguments": arguments}
        chunks.append(BlockEnd(index, block))
    chunks.append(Finish(FinishMaxTokens() if max_tokens else FinishToolCalls()))
    return chunks


def error_reply(code: str = "SERVER") -> list[StreamChunk]:
    """A failed model request (``code`` as a provider reports it)."""
    return [Finish(FinishError(LlmFailure(message="the model failed", code=code, status=500)))]


class ScriptedProvider:
    """Plays one scripted reply per request; records every request (``requests``). A reply
    that is ``"hang"`` streams its first chunk then waits for cancel. ``window`` is the context
    window it reports, ``route`` its provider route; ``default_max_tokens`` is filled into a
    request header that sets none, as a real adapter's default would be (``None``: headers
    are sent as given)."""

    def __init__(
        self,
        replies: Sequence[Sequence[StreamChunk] | str] = (),
        *,
        window: int = 1000,
        route: str = ROUTE,
        default_max_tokens: int | None = 4096,
    ) -> None:
        self.replies = list(replies)
        self.requests: list[GenerateOptions] = []
        self.window = window
        self._route = route
        self._max_tokens = default_max_tokens

    @property
    def route(self) -> str:
        return self._route

    def materialize(self, header: EpochHeader) -> EpochHeader:
        if self._max_tokens is None:
            return header
        raw = dict(header.raw)
        config = dict(raw["config"])
        if "maxTokens" not in config:
            config["maxTokens"] = self._max_tokens
            raw["adapterDefaults"] = {**dict(raw.get("adapterDefaults", {})), "maxTokens": True}
        raw["config"] = config
        return EpochHeader(raw)

    def context_window(self, model: str) -> int | None:
        return self.window

    async def stream(
        self, options: GenerateOptions, *, cancel: asyncio.Event | None = None
    ) -> AsyncIterator[StreamChunk]:
        self.requests.append(options)
        reply = self.replies.pop(0)
        if isinstance(reply, str):  # "hang"
            yield BlockStart(0, "text")
            yield TextDelta(0, "partial answer")
            assert cancel is not None
            await cancel.wait()
            yield Finish(FinishAborted(LlmFailure(message="cancelled", code="ABORTED")))
            return
        for chunk in reply:
            await asyncio.sleep(0)
            yield chunk

    async def aclose(self) -> None:
        return None


class EchoTool:
    """Returns its arguments; ``delay`` lets later calls finish first."""

    def __init__(
        self, name: str, *, changes_world: bool = False, exclusive: bool = False, delay: float = 0.0
    ) -> None:
        self._spec = ToolSpec(name, f"echo ({name})", {"type": "object"})
        self._changes = changes_world
        self._exclusive = exclusive
        self.delay = delay
        self.ran: list[Mapping[str, Any]] = []

    @property
    def spec(self) -> ToolSpec:
        return self._spec

    @property
    def changes_world(self) -> bool:
        return self._changes

    @property
    def exclusive(self) -> bool:
        return self._exclusive

    async def run(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolOutcome:
        self.ran.append(arguments)
        if self.delay:
            await asyncio.sleep(self.delay)
        return ToolOutcome(f"{self._spec.name}: {dict(arguments)}", meta={"echo": True})

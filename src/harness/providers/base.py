"""The provider protocol: how the agent loop talks to a model (SPEC §6, FORMAT §12).

A provider turns one frozen request (``GenerateOptions``: the epoch header in force
plus the derived messages) into a stream of typed chunks (``harness.messages.stream``).

The stream contract, which the agent loop relies on:

* chunks come in FORMAT §3 order: ``block-start`` before a block's deltas, its
  ``block-end`` (authoritative block) after them, ``usage`` at most once, and exactly
  one ``finish`` last; nothing follows ``finish``;
* failures never raise out of ``stream``: an HTTP error, a transport failure, a cut or
  malformed stream each end the stream with ``Finish(FinishError(LlmFailure))`` carrying
  a FORMAT §12 code (``AUTH``, ``RATE_LIMIT``, ``CONTEXT_WINDOW_EXCEEDED``, ``SERVER``,
  ``TRANSPORT``, ``STREAM_CLOSED``, ``MALFORMED_RESPONSE``, ``TIMEOUT`` …);
* retries (``RATE_LIMIT``, ``SERVER``, ``TRANSPORT``; backoff honouring Retry-After)
  happen inside the provider and only before the first chunk was yielded — unless the
  caller runs them itself: a ``RetryingProvider`` exposes its ``retry_policy`` and streams
  one attempt when called with ``retry=False``. The agent loop does that, so that every
  retry is recorded (``llm/retry``, ``llm/retry-started``) and visible while it waits;
* when ``cancel`` is set the stream stops promptly and ends with
  ``Finish(FinishAborted(LlmFailure(code="ABORTED")))``.

Secrets (API keys, auth headers) never appear in a chunk, an error message or a log line.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Protocol, runtime_checkable

from harness.messages.request import EpochHeader, GenerateOptions
from harness.messages.stream import StreamChunk
from harness.providers.retry import RetryPolicy

__all__ = ["Provider", "RetryingProvider"]


@runtime_checkable
class Provider(Protocol):
    """A model endpoint the agent loop can stream from."""

    @property
    def route(self) -> str:
        """The provider id written into ``config.provider`` (e.g. ``deepseek-official``)."""
        ...

    def materialize(self, header: EpochHeader) -> EpochHeader:
        """The header with this provider's defaults filled in (e.g. ``maxTokens`` and
        ``reasoningEffort``), each marked in ``adapterDefaults`` (FORMAT §4, §12).
        Idempotent: materializing a materialized header changes nothing."""
        ...

    def context_window(self, model: str) -> int | None:
        """The context window of ``model`` in tokens, when known."""
        ...

    def stream(
        self, options: GenerateOptions, *, cancel: asyncio.Event | None = None
    ) -> AsyncIterator[StreamChunk]:
        """Stream one model response (see the module doc for the contract)."""
        ...

    async def aclose(self) -> None:
        """Release connections."""
        ...



@runtime_checkable
class RetryingProvider(Provider, Protocol):
    """A provider whose retries its caller may run (and record) instead (see the module doc)."""

    @property
    def retry_policy(self) -> RetryPolicy:
        """The retry policy this provider's requests are under."""
        ...

    def stream(
        self, options: GenerateOptions, *, cancel: asyncio.Event | None = None, retry: bool = True
    ) -> AsyncIterator[StreamChunk]:
        """Stream one response; with ``retry=False`` exactly one attempt is made."""
        ...

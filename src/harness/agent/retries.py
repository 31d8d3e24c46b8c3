"""Model-request retries run by the agent loop, recorded as dsh records them.

When a request attempt fails with a code its provider's ``RetryPolicy`` retries, the failed
attempt's chunks stay in the log (no message is written for it) and, in the same step::

    llm/retry          {retryId, turn, step, provider, mode, policyKey, retry, maxRetries,
                        delayMs, failure}      -- made durable before the wait
    (the wait: cancellable)
    llm/retry-started  {retryId, turn, step, retry}   -- then the next attempt

``retry`` counts from 1 across every ``llm/retry`` of the same turn, step, provider and
``policyKey``; the chain keeps its first ``retryId``. ``provider`` is the route of the request
header in force. A cancel during the wait writes no ``llm/retry-started``: the turn ends
``aborted``. Both records are log-only, so the request rebuilt from the log is unchanged.
"""

from __future__ import annotations

import asyncio
import math
import random
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from harness.events.event import Event
from harness.messages.model import LlmFailure
from harness.providers.retry import RetryPolicy
from harness.session.request import fold_request_header
from harness.session.session import Session

__all__ = ["LLM_RETRY", "LLM_RETRY_STARTED", "RetryRunner", "Sleep"]

LLM_RETRY = "llm/retry"
LLM_RETRY_STARTED = "llm/retry-started"

Sleep = Callable[[float], Awaitable[None]]
"""Waits the given number of seconds (``asyncio.sleep``; tests pass one that returns at once)."""


@dataclass(frozen=True, slots=True)
class _Scheduled:
    retry_id: str
    retry: int
    delay_ms: int


class RetryRunner:
    """Decides, records and waits out one retry after a failed attempt (see the module doc)."""

    def __init__(self, policy: RetryPolicy, *, sleep: Sleep | None = None, rng: random.Random | None = None):
        self.policy = policy
        self._sleep = sleep or asyncio.sleep
        self._rng = rng or random.Random()

    async def retry(
        self,
        session: Session,
        turn: int,
        step: int,
        failure: LlmFailure,
        *,
        cancel: asyncio.Event,
        durable: Callable[[], Awaitable[None]],
    ) -> bool | None:
        """``True``: waited, send the request again. ``False``: no retry, the failure stands.
        ``None``: cancelled during the wait. ``durable`` makes the ``llm/retry`` record durable
        before the wait (its failure propagates)."""
        header = fold_request_header(session.events)
        if header is None or cancel.is_set():
            return False
        provider = header.provider
        scheduled = self._schedule(session.events, turn, step, provider, failure)
        if scheduled is None:
            return False
        data: dict[str, Any] = {
            "retryId": scheduled.retry_id,
            "turn": turn,
            "step": step,
            "provider": provider,
            "mode": self.policy.mode,
            "policyKey": self.policy.key,
            "retry": scheduled.retry,
            "maxRetries": self.policy.max_retries,
            "delayMs": scheduled.delay_ms,
            "failure": dict(failure.to_json()),
        }
        session.append(LLM_RETRY, data)
        await durable()
        if not await self._wait(scheduled.delay_ms / 1000, cancel):
            return None
        started = {"retryId": scheduled.retry_id, "turn": turn, "step": step, "retry": scheduled.retry}
        session.append(LLM_RETRY_STARTED, started)
        return True

    def _schedule(
        self, events: Sequence[Event], turn: int, step: int, provider: str, failure: LlmFailure
    ) -> _Scheduled | None:
        prior = _prior_retry(events, turn, step, provider, self.policy.key)
        previous = prior.get("retry", 0) if prior is not None else 0
        if type(previous) is not int:
            previous = 0
        delay = self.policy.delay_s(previous, failure, self._rng)
        if delay is None:
            return None
        retry_id = prior.get("retryId") if prior is not None else None
        if not isinstance(retry_id, str) or not retry_id:
            retry_id = str(uuid.uuid4())
        return _Scheduled(retry_id, previous + 1, max(0, math.ceil(delay * 1000)))

    async def _wait(self, seconds: float, cancel: asyncio.Event) -> bool:
        """Sleep ``seconds`` unless ``cancel`` comes first; ``True`` when the wait completed."""
        if cancel.is_set():
            return False
        sleeper = asyncio.ensure_future(self._sleep(seconds))
        waiter = asyncio.ensure_future(cancel.wait())
        try:
            await asyncio.wait({sleeper, waiter}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (sleeper, waiter):
                if not task.done():
                    task.cancel()
            await asyncio.gather(sleeper, waiter, return_exceptions=True)
        if cancel.is_set():
            return False
        sleeper.result()  # a failing sleep is a bug to report, not a completed wait
        return True


def _prior_retry(
    events: Sequence[Event], turn: int, step: int, provider: str, key: str
) -> Mapping[str, Any] | None:
    """The last ``llm/retry`` of this turn, step, provider and policy, if any."""
    for index in range(len(events) - 1, -1, -1):
        event = events[index]
        if event.type == "turn/start":
            return None  # a chain never crosses its turn
        if event.type != LLM_RETRY or not isinstance(event.data, Mapping):
            continue
        data = event.data
        if (data.get("turn"), data.get("step"), data.get("provider"), data.get("policyKey")) == (
            turn,
            step,
            provider,
            key,
        ):
            return data
    return None

"""Retry policy: which failures are retried and how long to wait before the next attempt.

By default ``RATE_LIMIT``, ``SERVER`` and ``TRANSPORT`` are retried. A provider ``Retry-After``
is honoured as given (a delay longer than ``max_retry_after_s`` ends the retries, so the caller
sees the failure and its ``providerRetryAfterMs``); otherwise the delay is exponential
(``base_delay_s · 2^attempt``, capped at ``max_delay_s``) with jitter in ``[½, 1]`` of it.

A provider owns its policy; the agent loop executes it and records each retry as
``llm/retry`` (before the wait) and ``llm/retry-started`` (after it), as dsh does. ``key``
is the policy's canonical identity written into those records: retry numbers continue
only across records with the same provider and key.
"""

from __future__ import annotations

import json
import math
import random
from dataclasses import dataclass, field

from harness.errors import ProviderConfigError
from harness.messages.model import LlmFailure
from harness.providers.failures import RETRYABLE

__all__ = ["MAX_DELAY_MS", "RetryPolicy"]

MAX_DELAY_MS = 2_147_483_647
"""The longest wait a retry record may carry: dsh refuses an ``llm/retry`` whose ``delayMs``
is above it (its timers' limit, 2^31 - 1 ms, about 24.8 days)."""


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How many times to retry, which failure codes, and how long to back off."""

    max_retries: int = 3
    base_delay_s: float = 0.5
    max_delay_s: float = 30.0
    max_retry_after_s: float = 120.0
    codes: frozenset[str] = field(default=RETRYABLE)

    def __post_init__(self) -> None:
        """Refuse a policy whose records dsh could not read, or whose waits cannot be computed:
        ``ProviderConfigError`` naming the field."""
        retries = self.max_retries
        if type(retries) is not int or not 0 <= retries <= 2**53 - 1:
            raise ProviderConfigError(f"max_retries must be a whole number from 0, got {retries!r}")
        for name in ("base_delay_s", "max_delay_s", "max_retry_after_s"):
            value = getattr(self, name)
            if (
                isinstance(value, bool)
                or not isinstance(value, int | float)
                or not math.isfinite(value)
                or not 0 <= value * 1000 <= MAX_DELAY_MS
            ):
                raise ProviderConfigError(
                    f"{name} must be a number of seconds from 0 to {MAX_DELAY_MS / 1000:g}, got {value!r}"
                )
        if isinstance(self.codes, str) or not all(isinstance(code, str) and code for code in self.codes):
            shown = sorted(map(repr, self.codes))
            raise ProviderConfigError(f"codes must be non-empty failure codes, got {shown}")

    @property
    def mode(self) -> str:
        """Always ``normal``: a finite budget of retries (dsh also knows ``always``)."""
        return "normal"

    @property
    def key(self) -> str:
        """The canonical identity of every behaviour-affecting field, as compact JSON."""
        fields = [
            self.mode,
            self.max_retries,
            sorted(self.codes),
            round(self.base_delay_s * 1000),
            round(self.max_delay_s * 1000),
            round(self.max_retry_after_s * 1000),
        ]
        return json.dumps(fields, separators=(",", ":"))

    def delay_s(self, attempt: int, failure: LlmFailure, rng: random.Random) -> float | None:
        """Seconds to wait before retry number ``attempt + 1``, or ``None`` to give up.

        ``attempt`` counts the retries already made (0 before the first retry).
        """
        if failure.code not in self.codes or attempt >= self.max_retries:
            return None
        if failure.provider_retry_after_ms is not None:
            seconds = failure.provider_retry_after_ms / 1000
            return seconds if seconds <= self.max_retry_after_s else None
        ceiling = min(self.base_delay_s * (2.0**attempt), self.max_delay_s)
        return ceiling * (0.5 + 0.5 * rng.random())

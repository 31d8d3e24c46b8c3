"""The compaction policy (FORMAT §11.3): when to compact and how much to keep.

Defaults: ``threshold_ratio 0.8``, ``retain_ratio 0.16`` (or an absolute ``retain_tokens``;
the two are exclusive), summary ``max_tokens 8192``, ``compaction_retries 1``,
``max_overflow_retries 1``, ``auto True``. For a context window W the threshold is
``floor(W·threshold_ratio)`` and the retained tail ``floor(W·retain_ratio)`` (or
``retain_tokens``), which must be below the threshold: a 1,000,000-token DeepSeek window gives
800,000 / 160,000.
"""

from __future__ import annotations

import math
from typing import Final

import msgspec

from harness.compaction.meter import DEFAULT_METER, TokenMeter
from harness.errors import CompactionConfigError
from harness.session.session import Session

__all__ = ["DEFAULT_RETAIN_RATIO", "Budgets", "CompactionPolicy", "should_compact"]

DEFAULT_RETAIN_RATIO: Final = 0.16


class Budgets(msgspec.Struct, frozen=True):
    """A policy resolved for one context window: compact at ``threshold`` tokens, keep ``retain``."""

    window: int
    threshold: int
    retain: int


class CompactionPolicy(msgspec.Struct, frozen=True, kw_only=True):
    """Thresholds, retention and retry counts (see the module doc). Invalid settings raise
    ``CompactionConfigError`` at construction."""

    threshold_ratio: float = 0.8
    retain_ratio: float | None = None
    retain_tokens: int | None = None
    max_tokens: int = 8192
    compaction_retries: int = 1
    max_overflow_retries: int = 1
    auto: bool = True

    def __post_init__(self) -> None:
        if not 0 < self.threshold_ratio <= 1:
            raise CompactionConfigError(f"threshold_ratio must be in (0, 1], got {self.threshold_ratio}")
        if self.retain_ratio is not None and self.retain_tokens is not None:
            raise CompactionConfigError("give retain_ratio or retain_tokens, not both")
        if self.retain_ratio is not None and not 0 <= self.retain_ratio < self.threshold_ratio:
            raise CompactionConfigError(
                f"retain_ratio ({self.retain_ratio}) must be at least 0 and below threshold_ratio "
                f"({self.threshold_ratio})"
            )
        if (
            self.retain_ratio is None
            and self.retain_tokens is None
            and self.threshold_ratio <= DEFAULT_RETAIN_RATIO
        ):
            raise CompactionConfigError(
                f"the default retain_ratio {DEFAULT_RETAIN_RATIO} must be below threshold_ratio "
                f"({self.threshold_ratio}); set retain_ratio or retain_tokens"
            )
        if self.retain_tokens is not None and self.retain_tokens < 0:
            raise CompactionConfigError("retain_tokens must not be negative")
        if self.max_tokens <= 0:
            raise CompactionConfigError("max_tokens must be positive")
        if self.compaction_retries < 0 or self.max_overflow_retries < 0:
            raise CompactionConfigError("retry counts must not be negative")

    def budgets(self, context_window: int) -> Budgets:
        """The absolute budgets for ``context_window`` tokens."""
        if context_window <= 0:
            raise CompactionConfigError(f"context window must be positive, got {context_window}")
        threshold = math.floor(context_window * self.threshold_ratio)
        if self.retain_tokens is not None:
            retain = self.retain_tokens
        else:
            ratio = self.retain_ratio if self.retain_ratio is not None else DEFAULT_RETAIN_RATIO
            retain = math.floor(context_window * ratio)
        if retain >= threshold:
            raise CompactionConfigError(
                f"retained tail ({retain} tokens) must be below the threshold ({threshold} tokens) "
                f"for a {context_window}-token window"
            )
        return Budgets(context_window, threshold, retain)


def should_compact(
    session: Session, context_window: int, threshold: float = 0.8, *, meter: TokenMeter | None = None
) -> bool:
    """Whether the next request's pressure has reached ``floor(context_window·threshold)``."""
    if context_window <= 0:
        raise CompactionConfigError(f"context window must be positive, got {context_window}")
    limit = math.floor(context_window * threshold)
    return (meter or DEFAULT_METER).measure(session).total >= limit

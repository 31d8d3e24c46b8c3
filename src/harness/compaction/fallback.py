"""``FallbackSummarizer``: the model's summary, or the offline one when the model fails."""

from __future__ import annotations

import logging

from harness.compaction.summarizer import Summarizer, Summary, SummaryRequest
from harness.errors import SummaryFailed

__all__ = ["FallbackSummarizer"]

logger = logging.getLogger("harness.compaction")


class FallbackSummarizer:
    """``primary`` (the model); when it fails, ``fallback`` (offline) — for automatic compaction,
    where nobody can be asked."""

    def __init__(self, primary: Summarizer, fallback: Summarizer) -> None:
        self.primary = primary
        self.fallback = fallback

    async def summarize(self, request: SummaryRequest) -> Summary:
        """The primary's summary; the fallback's when the primary raises ``SummaryFailed``."""
        try:
            return await self.primary.summarize(request)
        except SummaryFailed as error:
            logger.warning("model summary failed (%s); using the extractive summary", error)
            return await self.fallback.summarize(request)

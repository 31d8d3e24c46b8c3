"""The three ways in: automatic at pre-step, overflow recovery, manual (FORMAT §11.3, §11.4).

* ``compact_if_needed`` — call at each pre-step inside the open turn. Below the threshold it
  does nothing; above it prunes oversized tool results, re-measures, then runs up to
  ``compaction_retries + 1`` automatic compactions keeping ``retain`` tokens until the
  pressure is below the threshold. Failures come back in the outcome (log them and go on);
  only cancellation raises.
* ``OverflowRecovery.recover`` — call when a request failed with ``CONTEXT_WINDOW_EXCEEDED``.
  It prunes, then compacts everything but the last balanced unit, and says ``retry`` when the
  Surface's replace generation advanced (a landed prune suffices). At most
  ``max_overflow_retries`` times per successful response.
* ``compact_now`` — the manual command: only when idle (no open turn; bracket ``turn: null``),
  keeps only the last balanced unit, writes nothing when there is nothing to compact.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Final

import msgspec

from harness.compaction.meter import DEFAULT_METER, TokenMeter
from harness.compaction.policy import CompactionPolicy
from harness.compaction.prune import DEFAULT_PRUNER, PrunerConfig, prune_tool_results
from harness.compaction.region import select_compactable_range
from harness.compaction.state import live_compaction_start, open_turn
from harness.compaction.summarizer import Summarizer
from harness.compaction.transaction import Checkpoint, CompactionResult, compact
from harness.errors import CompactionBusy, CompactionCancelled, CompactionError
from harness.session.request import fold_request_header
from harness.session.session import Session

__all__ = [
    "CONTEXT_WINDOW_EXCEEDED",
    "AutoOutcome",
    "OverflowOutcome",
    "OverflowRecovery",
    "compact_if_needed",
    "compact_now",
]

logger = logging.getLogger("harness.compaction")

CONTEXT_WINDOW_EXCEEDED: Final = "CONTEXT_WINDOW_EXCEEDED"


class AutoOutcome(msgspec.Struct, frozen=True, kw_only=True):
    """What ``compact_if_needed`` did: ``action`` is ``skipped`` (``reason`` says why),
    ``below`` (under the threshold, nothing done), ``pruned`` (pruning was enough),
    ``compacted`` or ``failed`` (``error`` set; earlier prunes/compactions may have landed)."""

    action: str
    reason: str | None = None
    pressure_before: int | None = None
    pressure_after: int | None = None
    threshold: int | None = None
    pruned: tuple[int, ...] = ()
    results: tuple[CompactionResult, ...] = ()
    error: CompactionError | None = None


async def compact_if_needed(
    session: Session,
    summarizer: Summarizer,
    *,
    context_window: int | None,
    policy: CompactionPolicy | None = None,
    pruner: PrunerConfig | None = DEFAULT_PRUNER,
    checkpoint: Checkpoint | None = None,
    cancel: asyncio.Event | None = None,
    meter: TokenMeter | None = None,
) -> AutoOutcome:
    """Automatic compaction at pre-step (see the module doc). ``context_window`` is the
    provider's window for the model in force (``None``: skipped); ``pruner=None`` skips the
    pruner. Raises only ``CompactionCancelled`` / ``asyncio.CancelledError``."""
    policy = policy or CompactionPolicy()
    meter = meter or DEFAULT_METER
    if not policy.auto:
        return AutoOutcome(action="skipped", reason="automatic compaction is off")
    if cancel is not None and cancel.is_set():
        return AutoOutcome(action="skipped", reason="cancelled")
    if fold_request_header(session.events) is None:
        return AutoOutcome(action="skipped", reason="no request route yet")
    if context_window is None:
        return AutoOutcome(action="skipped", reason="the model's context window is unknown")
    try:
        budgets = policy.budgets(context_window)
    except CompactionError as error:
        return AutoOutcome(action="failed", error=error)
    before = meter.measure(session).total
    if before < budgets.threshold:
        return AutoOutcome(
            action="below", pressure_before=before, pressure_after=before, threshold=budgets.threshold
        )
    live = live_compaction_start(session.events)
    if live is not None:
        busy = CompactionBusy(f"compaction lock is already active (compaction/start at seq {live.seq})")
        return AutoOutcome(action="failed", pressure_before=before, threshold=budgets.threshold, error=busy)
    if open_turn(session.events) is None:
        idle = CompactionError("automatic compaction needs an open turn: no open turn", code="state")
        return AutoOutcome(action="failed", pressure_before=before, threshold=budgets.threshold, error=idle)
    pruned = tuple(prune_tool_results(session, pruner)) if pruner is not None else ()
    pressure = meter.measure(session).total
    if pressure < budgets.threshold:
        return AutoOutcome(
            action="pruned",
            pressure_before=before,
            pressure_after=pressure,
            threshold=budgets.threshold,
            pruned=pruned,
        )
    results: list[CompactionResult] = []
    attempts = 0
    failure: CompactionError | None = None
    for _ in range(policy.compaction_retries + 1):
        region = select_compactable_range(session, budgets.retain, meter=meter)
        if region is None:
            break
        attempts += 1
        try:
            results.append(
                await compact(
                    session,
                    region.start,
                    region.end,
                    summarizer,
                    mode="automatic",
                    checkpoint=checkpoint,
                    cancel=cancel,
                    meter=meter,
                )
            )
        except CompactionCancelled:
            raise
        except CompactionError as error:
            failure = error
            break
        pressure = meter.measure(session).total
        if pressure < budgets.threshold:
            return AutoOutcome(
                action="compacted",
                pressure_before=before,
                pressure_after=pressure,
                threshold=budgets.threshold,
                pruned=pruned,
                results=tuple(results),
            )
    if failure is None:
        if attempts:
            message = f"still above threshold after {attempts} compaction attempts"
        else:
            message = "still above threshold and nothing can be compacted"
        failure = CompactionError(message, code="threshold")
    logger.warning("session %s: automatic compaction: %s", session.id, failure)
    return AutoOutcome(
        action="failed",
        pressure_before=before,
        pressure_after=meter.measure(session).total,
        threshold=budgets.threshold,
        pruned=pruned,
        results=tuple(results),
        error=failure,
    )


class OverflowOutcome(msgspec.Struct, frozen=True, kw_only=True):
    """What overflow recovery did. ``retry`` is true when the Surface shrank (a replace landed):
    re-send the request. Otherwise keep the provider's failure."""

    retry: bool
    reason: str | None = None
    pruned: tuple[int, ...] = ()
    result: CompactionResult | None = None
    error: CompactionError | None = None


class OverflowRecovery:
    """Overflow recovery for one agent: counts retries since the last successful response.

    Keep one per agent loop and call ``recover`` after each failed request.
    """

    def __init__(
        self,
        policy: CompactionPolicy | None = None,
        *,
        pruner: PrunerConfig | None = DEFAULT_PRUNER,
        meter: TokenMeter | None = None,
    ) -> None:
        self.policy = policy or CompactionPolicy()
        self.pruner = pruner
        self.meter = meter or DEFAULT_METER
        self._anchor: tuple[int, int] | None = None
        self._retries = 0

    @staticmethod
    def _anchor_of(session: Session) -> tuple[int, int]:
        """The latest ``assistant/message`` seq and the latest turn boundary seq: when either
        moves, a response succeeded or the session went idle, and the count starts again."""
        events = session.events
        message = boundary = -1
        for index in range(len(events) - 1, -1, -1):
            kind = events[index].type
            if message < 0 and kind == "assistant/message":
                message = index
            if boundary < 0 and kind in ("turn/start", "turn/end"):
                boundary = index
            if message >= 0 and boundary >= 0:
                break
        return message, boundary

    async def recover(
        self,
        session: Session,
        failure_code: str,
        summarizer: Summarizer,
        *,
        checkpoint: Checkpoint | None = None,
        cancel: asyncio.Event | None = None,
    ) -> OverflowOutcome:
        """Try to make room after a failed request (see the module doc)."""
        if failure_code != CONTEXT_WINDOW_EXCEEDED:
            return OverflowOutcome(retry=False, reason=f"not a context overflow ({failure_code})")
        if cancel is not None and cancel.is_set():
            return OverflowOutcome(retry=False, reason="cancelled")
        if fold_request_header(session.events) is None:
            return OverflowOutcome(retry=False, reason="no request route yet")
        anchor = self._anchor_of(session)
        if anchor != self._anchor:
            self._anchor, self._retries = anchor, 0
        if self._retries >= self.policy.max_overflow_retries:
            return OverflowOutcome(retry=False, reason=f"overflow retries exhausted ({self._retries})")
        if live_compaction_start(session.events) is not None:
            busy = CompactionBusy("compaction lock is already active")
            return OverflowOutcome(retry=False, reason="locked", error=busy)
        self._retries += 1
        generation = session.surface.replace_generation
        pruned = tuple(prune_tool_results(session, self.pruner)) if self.pruner is not None else ()
        result: CompactionResult | None = None
        error: CompactionError | None = None
        region = select_compactable_range(session, 0, meter=self.meter)
        if region is not None:
            try:
                result = await compact(
                    session,
                    region.start,
                    region.end,
                    summarizer,
                    mode="automatic",
                    checkpoint=checkpoint,
                    cancel=cancel,
                    meter=self.meter,
                )
            except CompactionCancelled as cancelled:
                return OverflowOutcome(retry=False, reason="cancelled", pruned=pruned, error=cancelled)
            except CompactionError as failed:
                error = failed
                logger.warning("session %s: overflow compaction failed: %s", session.id, failed)
        advanced = session.surface.replace_generation > generation
        reason = None if advanced else "nothing could be compacted"
        return OverflowOutcome(retry=advanced, reason=reason, pruned=pruned, result=result, error=error)


async def compact_now(
    session: Session,
    summarizer: Summarizer,
    *,
    checkpoint: Checkpoint | None = None,
    cancel: asyncio.Event | None = None,
    source_command_id: str | None = None,
    retain_tokens: int = 0,
    meter: TokenMeter | None = None,
) -> CompactionResult | None:
    """Manual compaction (``harness compact`` / ``/compact``): only when idle.

    Raises ``CompactionBusy`` when a turn is open or a live lock exists (nothing written);
    returns ``None`` (nothing written) when no balanced span can be compacted; otherwise the
    committed result, after ``checkpoint`` made it durable. Other failures raise by phase
    after the bracket was closed and flushed.
    """
    events = session.events
    turn = open_turn(events)
    if turn is not None:
        raise CompactionBusy(f"manual compaction needs an idle session: turn {turn} is open")
    live = live_compaction_start(events)
    if live is not None:
        raise CompactionBusy(f"compaction lock is already active (compaction/start at seq {live.seq})")
    region = select_compactable_range(session, retain_tokens, meter=meter)
    if region is None:
        return None
    return await compact(
        session,
        region.start,
        region.end,
        summarizer,
        mode="manual",
        checkpoint=checkpoint,
        cancel=cancel,
        source_command_id=source_command_id,
        meter=meter,
    )

"""Compaction: shorten what the model sees without erasing what happened (SPEC §5, FORMAT §11).

A compaction replaces a head-anchored, tool-pair-balanced span of the Surface with one
checkpoint user message, inside a bracket that the log itself records::

    compaction/start (the lock) → [summarize] → compaction/summary
        → user/message (Replace(start, end), sources [start, summary, *shadowed]) → compaction/end

Modules: ``meter`` (prices and pressure), ``region`` (selection and validation), ``state``
(open turn, live or stale lock), ``transaction`` (``compact``), ``checkpoint`` (the checkpoint
message), ``summarizer`` (the protocol), ``llm`` (``LlmSummarizer``), ``extractive``
(``ExtractiveSummarizer``), ``fallback`` (``FallbackSummarizer``: the model, else offline),
``prune`` (the tool-result pruner), ``policy`` (thresholds), ``triggers`` (automatic, overflow,
manual), ``probes`` / ``retention`` / ``synthetic`` / ``probesets`` / ``recall`` (the retention
evaluation, docs/compaction-retention.md), ``cues`` (the extractive digest's phrasing rules).
Every name here is imported on first use (``retention`` imports ``rich``).

How the agent loop uses it
--------------------------

Build once per agent: ``policy = CompactionPolicy()``; ``summarizer = LlmSummarizer(provider,
max_tokens=policy.max_tokens)`` when a model is configured, else ``ExtractiveSummarizer()``;
``overflow = OverflowRecovery(policy)``; ``checkpoint = store.flush`` (or ``None`` in memory).

**Automatic (pre-step).** Inside the open turn, before each ``step/start`` (so after
``turn/start`` for step 1 and after ``step/end`` for the next ones), unless cancelled::

    header = fold_request_header(session.events)           # None before the first request
    window = provider.context_window(header.model) if header else None
    outcome = await compact_if_needed(session, summarizer, context_window=window,
                                      policy=policy, checkpoint=checkpoint, cancel=cancel)
    if outcome.error is not None:
        log it and go on (FORMAT: pressure failures are only logged)
    # CompactionCancelled / asyncio.CancelledError propagate: end the turn aborted.

**Overflow.** When a request's stream ends ``FinishError`` with code
``CONTEXT_WINDOW_EXCEEDED`` (its chunks stay in the log, no assistant message is written)::

    outcome = await overflow.recover(session, failure.code, summarizer,
                                     checkpoint=checkpoint, cancel=cancel)
    if outcome.retry:
        rebuild the request (build_request(session)) and stream again in the same step
    else:
        end the turn with the original failure

``recover`` allows ``policy.max_overflow_retries`` retries until the next assistant message.

**Manual** (``harness compact ID``, ``/compact``), only between turns::

    try:
        result = await compact_now(session, summarizer, checkpoint=store.flush,
                                   source_command_id=command_id)
    except CompactionBusy: a turn is open or a live compaction lock exists (nothing written)
    except CompactionError as error: failed in phase error.code (the bracket was closed
                                      with the error and flushed)
    result is None: nothing to compact (nothing written)

The caller must not start a turn while ``compact_now`` runs (a turn boundary inside the
bracket makes it fail as ``changed``). ``compact`` itself (explicit region) is available for
tools and tests.

Durability: ``checkpoint`` is called right after ``compaction/start`` (the lock is durable
before the summarizer runs) and after ``compaction/end`` (success or failure), so a returned
``compact_now`` is on disk. A crash mid-summary leaves an unmatched start; the next load's
``session/end-seed`` makes it stale and a new compaction proceeds.

"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness._lazy import lazy_exports

if TYPE_CHECKING:
    from harness.compaction.checkpoint import PREAMBLE, checkpoint_message, is_checkpoint_message
    from harness.compaction.extractive import ExtractiveSummarizer
    from harness.compaction.fallback import FallbackSummarizer
    from harness.compaction.llm import COMPACTION_INSTRUCTION, SECTION_HEADINGS, LlmSummarizer
    from harness.compaction.meter import DEFAULT_METER, Measurement, SurfaceNode, TokenMeter, measure
    from harness.compaction.policy import Budgets, CompactionPolicy, should_compact
    from harness.compaction.probes import (
        PROBE_KINDS,
        PROBE_STATUSES,
        Probe,
        ProbeKind,
        ProbeStatus,
        surface_text,
    )
    from harness.compaction.probesets import (
        BUILTIN_PROBESETS,
        ProbeCase,
        ProbeSet,
        builtin_probeset,
        load_probeset_file,
        probeset_from_json,
    )
    from harness.compaction.prune import DEFAULT_PRUNER, PRUNE_MARKER, PrunerConfig, prune_tool_results
    from harness.compaction.recall import Recall, recall_probe
    from harness.compaction.region import Region, check_region, select_compactable_range
    from harness.compaction.retention import (
        EvalReport,
        RetentionReport,
        eval_compaction_report,
        evaluate_retention,
    )
    from harness.compaction.state import live_compaction_start, open_turn, stale_compaction_starts
    from harness.compaction.summarizer import Summarizer, Summary, SummaryRequest
    from harness.compaction.synthetic import SyntheticSession, generate_session, generate_sessions
    from harness.compaction.transaction import Checkpoint, CompactionResult, compact, error_chain
    from harness.compaction.triggers import (
        CONTEXT_WINDOW_EXCEEDED,
        AutoOutcome,
        OverflowOutcome,
        OverflowRecovery,
        compact_if_needed,
        compact_now,
    )
    from harness.errors import (
        CommitFailed,
        CompactionBusy,
        CompactionCancelled,
        CompactionChanged,
        CompactionConfigError,
        CompactionError,
        CompactionPersistenceFailed,
        InvalidProbe,
        InvalidRegion,
        SummaryFailed,
    )

__all__ = [
    "BUILTIN_PROBESETS",
    "COMPACTION_INSTRUCTION",
    "CONTEXT_WINDOW_EXCEEDED",
    "DEFAULT_METER",
    "DEFAULT_PRUNER",
    "PREAMBLE",
    "PROBE_KINDS",
    "PROBE_STATUSES",
    "PRUNE_MARKER",
    "SECTION_HEADINGS",
    "AutoOutcome",
    "Budgets",
    "Checkpoint",
    "CommitFailed",
    "CompactionBusy",
    "CompactionCancelled",
    "CompactionChanged",
    "CompactionConfigError",
    "CompactionError",
    "CompactionPersistenceFailed",
    "CompactionPolicy",
    "CompactionResult",
    "EvalReport",
    "ExtractiveSummarizer",
    "FallbackSummarizer",
    "InvalidProbe",
    "InvalidRegion",
    "LlmSummarizer",
    "Measurement",
    "OverflowOutcome",
    "OverflowRecovery",
    "Probe",
    "ProbeCase",
    "ProbeKind",
    "ProbeSet",
    "ProbeStatus",
    "PrunerConfig",
    "Recall",
    "Region",
    "RetentionReport",
    "Summarizer",
    "Summary",
    "SummaryFailed",
    "SummaryRequest",
    "SurfaceNode",
    "SyntheticSession",
    "TokenMeter",
    "builtin_probeset",
    "check_region",
    "checkpoint_message",
    "compact",
    "compact_if_needed",
    "compact_now",
    "error_chain",
    "eval_compaction_report",
    "evaluate_retention",
    "generate_session",
    "generate_sessions",
    "is_checkpoint_message",
    "live_compaction_start",
    "load_probeset_file",
    "measure",
    "open_turn",
    "probeset_from_json",
    "prune_tool_results",
    "recall_probe",
    "select_compactable_range",
    "should_compact",
    "stale_compaction_starts",
    "surface_text",
]

_EXPORTS = {
    "harness.compaction.checkpoint": ("PREAMBLE", "checkpoint_message", "is_checkpoint_message"),
    "harness.compaction.extractive": ("ExtractiveSummarizer",),
    "harness.compaction.fallback": ("FallbackSummarizer",),
    "harness.compaction.llm": ("COMPACTION_INSTRUCTION", "SECTION_HEADINGS", "LlmSummarizer"),
    "harness.compaction.meter": ("DEFAULT_METER", "Measurement", "SurfaceNode", "TokenMeter", "measure"),
    "harness.compaction.policy": ("Budgets", "CompactionPolicy", "should_compact"),
    "harness.compaction.probes": (
        "PROBE_KINDS",
        "PROBE_STATUSES",
        "Probe",
        "ProbeKind",
        "ProbeStatus",
        "surface_text",
    ),
    "harness.compaction.probesets": (
        "BUILTIN_PROBESETS",
        "ProbeCase",
        "ProbeSet",
        "builtin_probeset",
        "load_probeset_file",
        "probeset_from_json",
    ),
    "harness.compaction.recall": ("Recall", "recall_probe"),
    "harness.compaction.prune": ("DEFAULT_PRUNER", "PRUNE_MARKER", "PrunerConfig", "prune_tool_results"),
    "harness.compaction.region": ("Region", "check_region", "select_compactable_range"),
    "harness.compaction.retention": (
        "EvalReport",
        "RetentionReport",
        "eval_compaction_report",
        "evaluate_retention",
    ),
    "harness.compaction.state": ("live_compaction_start", "open_turn", "stale_compaction_starts"),
    "harness.compaction.summarizer": ("Summarizer", "Summary", "SummaryRequest"),
    "harness.compaction.synthetic": ("SyntheticSession", "generate_session", "generate_sessions"),
    "harness.compaction.transaction": ("Checkpoint", "CompactionResult", "compact", "error_chain"),
    "harness.compaction.triggers": (
        "CONTEXT_WINDOW_EXCEEDED",
        "AutoOutcome",
        "OverflowOutcome",
        "OverflowRecovery",
        "compact_if_needed",
        "compact_now",
    ),
    "harness.errors": (
        "CommitFailed",
        "CompactionBusy",
        "CompactionCancelled",
        "CompactionChanged",
        "CompactionConfigError",
        "CompactionError",
        "CompactionPersistenceFailed",
        "InvalidProbe",
        "InvalidRegion",
        "SummaryFailed",
    ),
}

if not TYPE_CHECKING:  # at run time each name is imported on first use (PEP 562)
    __getattr__, __dir__ = lazy_exports(__name__, globals(), _EXPORTS)

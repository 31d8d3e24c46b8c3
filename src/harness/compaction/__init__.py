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

from harness._lazy import exported_names, lazy_exports

if TYPE_CHECKING:  # the table below as imports, for type checkers and IDEs (a test checks they agree)
    from harness.compaction.checkpoint import PREAMBLE as PREAMBLE
    from harness.compaction.checkpoint import checkpoint_message as checkpoint_message
    from harness.compaction.checkpoint import is_checkpoint_message as is_checkpoint_message
    from harness.compaction.extractive import ExtractiveSummarizer as ExtractiveSummarizer
    from harness.compaction.fallback import FallbackSummarizer as FallbackSummarizer
    from harness.compaction.llm import COMPACTION_INSTRUCTION as COMPACTION_INSTRUCTION
    from harness.compaction.llm import SECTION_HEADINGS as SECTION_HEADINGS
    from harness.compaction.llm import LlmSummarizer as LlmSummarizer
    from harness.compaction.meter import DEFAULT_METER as DEFAULT_METER
    from harness.compaction.meter import Measurement as Measurement
    from harness.compaction.meter import SurfaceNode as SurfaceNode
    from harness.compaction.meter import TokenMeter as TokenMeter
    from harness.compaction.meter import measure as measure
    from harness.compaction.policy import Budgets as Budgets
    from harness.compaction.policy import CompactionPolicy as CompactionPolicy
    from harness.compaction.policy import should_compact as should_compact
    from harness.compaction.probes import PROBE_KINDS as PROBE_KINDS
    from harness.compaction.probes import PROBE_STATUSES as PROBE_STATUSES
    from harness.compaction.probes import Probe as Probe
    from harness.compaction.probes import ProbeKind as ProbeKind
    from harness.compaction.probes import ProbeStatus as ProbeStatus
    from harness.compaction.probes import surface_text as surface_text
    from harness.compaction.probesets import BUILTIN_PROBESETS as BUILTIN_PROBESETS
    from harness.compaction.probesets import ProbeCase as ProbeCase
    from harness.compaction.probesets import ProbeSet as ProbeSet
    from harness.compaction.probesets import builtin_probeset as builtin_probeset
    from harness.compaction.probesets import load_probeset_file as load_probeset_file
    from harness.compaction.probesets import probeset_from_json as probeset_from_json
    from harness.compaction.prune import DEFAULT_PRUNER as DEFAULT_PRUNER
    from harness.compaction.prune import PRUNE_MARKER as PRUNE_MARKER
    from harness.compaction.prune import PrunerConfig as PrunerConfig
    from harness.compaction.prune import prune_tool_results as prune_tool_results
    from harness.compaction.recall import Recall as Recall
    from harness.compaction.recall import recall_probe as recall_probe
    from harness.compaction.region import Region as Region
    from harness.compaction.region import check_region as check_region
    from harness.compaction.region import select_compactable_range as select_compactable_range
    from harness.compaction.retention import EvalReport as EvalReport
    from harness.compaction.retention import RetentionReport as RetentionReport
    from harness.compaction.retention import eval_compaction_report as eval_compaction_report
    from harness.compaction.retention import evaluate_retention as evaluate_retention
    from harness.compaction.state import live_compaction_start as live_compaction_start
    from harness.compaction.state import open_turn as open_turn
    from harness.compaction.state import stale_compaction_starts as stale_compaction_starts
    from harness.compaction.summarizer import Summarizer as Summarizer
    from harness.compaction.summarizer import Summary as Summary
    from harness.compaction.summarizer import SummaryRequest as SummaryRequest
    from harness.compaction.synthetic import SyntheticSession as SyntheticSession
    from harness.compaction.synthetic import generate_session as generate_session
    from harness.compaction.synthetic import generate_sessions as generate_sessions
    from harness.compaction.transaction import Checkpoint as Checkpoint
    from harness.compaction.transaction import CompactionResult as CompactionResult
    from harness.compaction.transaction import compact as compact
    from harness.compaction.transaction import error_chain as error_chain
    from harness.compaction.triggers import CONTEXT_WINDOW_EXCEEDED as CONTEXT_WINDOW_EXCEEDED
    from harness.compaction.triggers import AutoOutcome as AutoOutcome
    from harness.compaction.triggers import OverflowOutcome as OverflowOutcome
    from harness.compaction.triggers import OverflowRecovery as OverflowRecovery
    from harness.compaction.triggers import compact_if_needed as compact_if_needed
    from harness.compaction.triggers import compact_now as compact_now
    from harness.errors import CommitFailed as CommitFailed
    from harness.errors import CompactionBusy as CompactionBusy
    from harness.errors import CompactionCancelled as CompactionCancelled
    from harness.errors import CompactionChanged as CompactionChanged
    from harness.errors import CompactionConfigError as CompactionConfigError
    from harness.errors import CompactionError as CompactionError
    from harness.errors import CompactionPersistenceFailed as CompactionPersistenceFailed
    from harness.errors import InvalidProbe as InvalidProbe
    from harness.errors import InvalidRegion as InvalidRegion
    from harness.errors import SummaryFailed as SummaryFailed

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

if not TYPE_CHECKING:  # at run time: the table's names, each imported on first use (PEP 562)
    __all__ = exported_names(_EXPORTS)
    __getattr__, __dir__ = lazy_exports(__name__, globals(), _EXPORTS)

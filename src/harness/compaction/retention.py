"""Retention evaluation: what a compaction keeps of the facts that matter (SPEC §5).

``evaluate_retention(session, probes, summarizers)`` compacts a *copy* of the session once per
summarizer (the original is never touched) — manually, keeping ``retain_tokens`` of tail — and
reports for every probe whether the Surface carried it before and whether it still does
after, plus the Surface price before and after.

``eval_compaction_report(...)`` is the one entry point for a command line: it runs the
evaluation over given cases or over generated sessions (``synthetic.generate_session``) and
returns both a ``rich`` table and a JSON-ready dict.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import msgspec
from rich.table import Table

from harness.compaction.extractive import ExtractiveSummarizer
from harness.compaction.meter import TokenMeter
from harness.compaction.probes import PROBE_KINDS, Probe, surface_text
from harness.compaction.summarizer import Summarizer
from harness.compaction.synthetic import generate_sessions
from harness.compaction.triggers import compact_now
from harness.errors import CompactionError
from harness.session.repair import repair_closers
from harness.session.session import Session

__all__ = [
    "EvalReport",
    "ProbeOutcome",
    "RetentionReport",
    "SummarizerRun",
    "copy_session",
    "eval_compaction_report",
    "evaluate_retention",
]


class ProbeOutcome(msgspec.Struct, frozen=True):
    """One probe: carried before compaction, and after it per summarizer name."""

    probe: Probe
    before: bool
    after: dict[str, bool]


class SummarizerRun(msgspec.Struct, frozen=True, kw_only=True):
    """One summarizer's compaction of the copy: prices before/after, and the error if it failed."""

    name: str
    compacted: bool
    error: str | None
    surface_before: int
    surface_after: int
    shadowed_tokens: int
    checkpoint_tokens: int

    @property
    def reduction(self) -> float:
        """The share of the Surface price the compaction removed (0 when nothing was compacted)."""
        if self.surface_before <= 0:
            return 0.0
        return 1 - self.surface_after / self.surface_before


class RetentionReport(msgspec.Struct, frozen=True):
    """The evaluation of one session."""

    session_id: str
    probes: tuple[ProbeOutcome, ...]
    runs: tuple[SummarizerRun, ...]

    def retained(self, name: str, kind: str | None = None) -> tuple[int, int]:
        """``(kept, carried before)`` for summarizer ``name`` (optionally one probe kind)."""
        relevant = [p for p in self.probes if p.before and (kind is None or p.probe.kind == kind)]
        return sum(1 for p in relevant if p.after.get(name)), len(relevant)

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "sessionId": self.session_id,
            "probes": [
                {
                    "name": p.probe.name,
                    "kind": p.probe.kind,
                    "pattern": p.probe.pattern,
                    "before": p.before,
                    "after": dict(p.after),
                }
                for p in self.probes
            ],
            "runs": [
                {
                    "summarizer": run.name,
                    "compacted": run.compacted,
                    "error": run.error,
                    "surfaceTokensBefore": run.surface_before,
                    "surfaceTokensAfter": run.surface_after,
                    "shadowedTokens": run.shadowed_tokens,
                    "checkpointTokens": run.checkpoint_tokens,
                    "reduction": round(run.reduction, 4),
                }
                for run in self.runs
            ],
        }


def copy_session(session: Session) -> Session:
    """A detached copy of ``session`` restored from its events, with an open turn closed the way
    crash repair would close it (so a manual compaction can run on it)."""
    events = list(session.events)
    seed = events + repair_closers(events)
    return Session.from_restore(session.id, seed, session.header)


async def evaluate_retention(
    session: Session,
    probes: Sequence[Probe],
    summarizers: Mapping[str, Summarizer],
    *,
    retain_tokens: int = 0,
) -> RetentionReport:
    """Compact a copy of ``session`` with each summarizer and report what the Surface still
    carries of each probe (see the module doc). A failed compaction counts as "after = before"
    for its probes and is reported with its error."""
    before_text = surface_text(session)
    before = {probe.name: probe.found_in(before_text) for probe in probes}
    after: dict[str, dict[str, bool]] = {probe.name: {} for probe in probes}
    runs: list[SummarizerRun] = []
    for name, summarizer in summarizers.items():
        meter = TokenMeter()
        copy = copy_session(session)
        surface_before = meter.measure(copy).surface_tokens
        error: str | None = None
        shadowed = checkpoint = 0
        try:
            result = await compact_now(copy, summarizer, retain_tokens=retain_tokens, meter=meter)
        except CompactionError as failure:
            result, error = None, f"{failure.code}: {failure}"
        if result is not None:
            shadowed, checkpoint = result.shadowed_tokens, result.checkpoint_tokens
        elif error is None:
            error = "nothing to compact"
        text = surface_text(copy)
        for probe in probes:
            after[probe.name][name] = probe.found_in(text)
        runs.append(
            SummarizerRun(
                name=name,
                compacted=result is not None,
                error=error,
                surface_before=surface_before,
                surface_after=meter.measure(copy).surface_tokens,
                shadowed_tokens=shadowed,
                checkpoint_tokens=checkpoint,
            )
        )
    outcomes = tuple(ProbeOutcome(probe, before[probe.name], after[probe.name]) for probe in probes)
    return RetentionReport(session.id, outcomes, tuple(runs))


class EvalReport(NamedTuple):
    """``eval_compaction_report``'s result: the table to print and the same figures as JSON."""

    table: Table
    data: dict[str, Any]


def _percent(kept: int, total: int) -> str:
    return f"{kept}/{total} ({100 * kept / total:.0f}%)" if total else "–"


async def eval_compaction_report(
    cases: Sequence[tuple[Session, Sequence[Probe]]] | None = None,
    *,
    summarizers: Mapping[str, Summarizer] | None = None,
    generated: int = 4,
    seed: int = 0,
    retain_tokens: int = 0,
) -> EvalReport:
    """Evaluate retention over ``cases`` (``(session, probes)`` pairs), or over ``generated``
    synthetic sessions from ``seed`` when none are given, with ``summarizers`` (default: the
    extractive one). Returns the ``rich`` table and the JSON data (``summary`` per summarizer
    and per probe kind, and every session's report)."""
    if cases is None:
        cases = [(made.session, made.probes) for made in generate_sessions(generated, seed=seed)]
    chosen: Mapping[str, Summarizer] = summarizers or {"extractive": ExtractiveSummarizer()}
    reports = [
        await evaluate_retention(session, probes, chosen, retain_tokens=retain_tokens)
        for session, probes in cases
    ]
    summary: dict[str, Any] = {}
    for name in chosen:
        kinds: dict[str, dict[str, int]] = {}
        for kind in PROBE_KINDS:
            kept = sum(report.retained(name, kind)[0] for report in reports)
            total = sum(report.retained(name, kind)[1] for report in reports)
            if total:
                kinds[kind] = {"kept": kept, "total": total}
        runs = [run for report in reports for run in report.runs if run.name == name]
        before = sum(run.surface_before for run in runs)
        after = sum(run.surface_after for run in runs)
        kept_all = sum(report.retained(name)[0] for report in reports)
        total_all = sum(report.retained(name)[1] for report in reports)
        summary[name] = {
            "kept": kept_all,
            "total": total_all,
            "retention": round(kept_all / total_all, 4) if total_all else None,
            "byKind": kinds,
            "surfaceTokensBefore": before,
            "surfaceTokensAfter": after,
            "reduction": round(1 - after / before, 4) if before else 0.0,
            "failures": [run.error for run in runs if not run.compacted],
        }
    probes_total = sum(len(probes) for _, probes in cases)
    sessions = f"{len(cases)} {'session' if len(cases) == 1 else 'sessions'}"
    probes = f"{probes_total} {'probe' if probes_total == 1 else 'probes'}"
    table = Table(title=f"Compaction retention: {sessions}, {probes}")
    table.add_column("measure")
    for name in chosen:
        table.add_column(name, justify="right")
    for kind in PROBE_KINDS:
        cells = [summary[name]["byKind"].get(kind) for name in chosen]
        if any(cells):
            table.add_row(f"{kind} kept", *(_percent(c["kept"], c["total"]) if c else "–" for c in cells))
    table.add_row("all probes kept", *(_percent(summary[n]["kept"], summary[n]["total"]) for n in chosen))
    table.add_row(
        "surface tokens before → after",
        *(f"{summary[n]['surfaceTokensBefore']:,} → {summary[n]['surfaceTokensAfter']:,}" for n in chosen),
    )
    table.add_row("token reduction", *(f"{100 * summary[n]['reduction']:.1f}%" for n in chosen))
    table.add_row("compactions failed", *(str(len(summary[n]["failures"])) for n in chosen))
    data = {
        "sessions": len(cases),
        "probes": probes_total,
        "retainTokens": retain_tokens,
        "summary": summary,
        "reports": [report.to_json() for report in reports],
    }
    return EvalReport(table, data)

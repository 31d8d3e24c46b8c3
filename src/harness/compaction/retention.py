"""Retention evaluation: what a compaction leaves within the model's reach (SPEC §5).

``evaluate_retention(session, probes, summarizers)`` compacts a *copy* of the session once per
summarizer (the original is never touched) — manually, keeping ``retain_tokens`` of tail —
and gives every probe one status per summarizer (``ProbeStatus``):

* ``kept``: the Surface after the compaction carries the fact (the model sees it);
* ``recoverable``: it does not, but ``session_search``, called the way a model calls it
  (``harness.compaction.recall``: the real tool, its literal search and its size caps, over
  the compacted copy's log), gives it back;
* ``lost``: neither, although the log holds it. Compaction deletes nothing, so this is a bug
  (in the tool or its caps) and must stay 0;
* ``invalid``: the log never held the fact (no event's semantic text carries it, nor did the
  Surface before): the probe is wrong, not the compaction.

It also keeps the older measure: whether the Surface carried the probe before and after
(``before``, ``after``), and the Surface price before and after.

``eval_compaction_report(...)`` is the one entry point for a command line: it runs the
evaluation over probe sets (``harness.compaction.probesets``: ``tuned``, ``independent``, or
your own) and returns a JSON-ready dict, one section per probe set.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import msgspec

from harness.compaction.extractive import ExtractiveSummarizer
from harness.compaction.meter import TokenMeter
from harness.compaction.probes import PROBE_KINDS, PROBE_STATUSES, Probe, ProbeStatus, surface_text
from harness.compaction.probesets import ProbeCase, ProbeSet, builtin_probeset
from harness.compaction.recall import Recall, in_log, recall_probe
from harness.compaction.summarizer import Summarizer
from harness.compaction.triggers import compact_now
from harness.errors import CompactionError, InvalidProbe
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
    """One probe: carried by the Surface before compaction; after it, per summarizer name,
    whether the Surface still carries it (``after``), its ``status`` and, when the Surface
    lost it, the ``recall`` attempt through the tool."""

    probe: Probe
    before: bool
    after: dict[str, bool]
    status: dict[str, ProbeStatus] = msgspec.field(default_factory=dict)
    recall: dict[str, Recall] = msgspec.field(default_factory=dict)


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
        """``(kept, carried before)`` for summarizer ``name`` (optionally one probe kind): the
        Surface-only measure, over the probes the Surface carried before compaction."""
        relevant = [p for p in self.probes if p.before and (kind is None or p.probe.kind == kind)]
        return sum(1 for p in relevant if p.after.get(name)), len(relevant)

    def counts(self, name: str, kind: str | None = None) -> dict[ProbeStatus, int]:
        """How many probes have each status for summarizer ``name`` (optionally one kind)."""
        out: dict[ProbeStatus, int] = dict.fromkeys(PROBE_STATUSES, 0)
        for outcome in self.probes:
            if kind is None or outcome.probe.kind == kind:
                out[outcome.status[name]] += 1
        return out

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "sessionId": self.session_id,
            "probes": [
                {
                    "name": p.probe.name,
                    "kind": p.probe.kind,
                    "pattern": p.probe.pattern,
                    "query": p.probe.query,
                    "before": p.before,
                    "after": dict(p.after),
                    "status": dict(p.status),
                    "recall": {name: attempt.to_json() for name, attempt in p.recall.items()},
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
    """Compact a copy of ``session`` with each summarizer and give each probe its status (see
    the module doc). A failed compaction leaves the copy's Surface as it was, so its probes
    count as they stood before; it is reported with its error. A regex probe without a
    ``query`` cannot be searched for: ``InvalidProbe``."""
    for probe in probes:
        if probe.recall_query is None:
            raise InvalidProbe(
                "a regex probe needs a query to search the log with", where=f"probe {probe.name!r}"
            )
    before_text = surface_text(session)
    before = {probe.name: probe.found_in(before_text) for probe in probes}
    valid = {probe.name: before[probe.name] or in_log(session.events, probe) for probe in probes}
    after: dict[str, dict[str, bool]] = {probe.name: {} for probe in probes}
    status: dict[str, dict[str, ProbeStatus]] = {probe.name: {} for probe in probes}
    recalls: dict[str, dict[str, Recall]] = {probe.name: {} for probe in probes}
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
            kept = after[probe.name][name] = probe.found_in(text)
            if not valid[probe.name]:
                status[probe.name][name] = "invalid"
            elif kept:
                status[probe.name][name] = "kept"
            else:
                attempt = recalls[probe.name][name] = await recall_probe(copy.events, probe)
                status[probe.name][name] = "recoverable" if attempt.found else "lost"
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
    outcomes = tuple(
        ProbeOutcome(probe, before[probe.name], after[probe.name], status[probe.name], recalls[probe.name])
        for probe in probes
    )
    return RetentionReport(session.id, outcomes, tuple(runs))


class EvalReport(NamedTuple):
    """``eval_compaction_report``'s result: the figures as JSON-ready data (``harness
    eval-compaction`` prints them as tables, ``--json`` as they are)."""

    data: dict[str, Any]


def _summary(reports: Sequence[RetentionReport], name: str) -> dict[str, Any]:
    """One summarizer's figures over ``reports``."""
    kinds: dict[str, dict[str, int]] = {}
    for kind in PROBE_KINDS:
        kept = sum(report.retained(name, kind)[0] for report in reports)
        total = sum(report.retained(name, kind)[1] for report in reports)
        statuses = {key: sum(report.counts(name, kind)[key] for report in reports) for key in PROBE_STATUSES}
        if any(statuses.values()):
            kinds[kind] = {"kept": kept, "total": total, "probes": sum(statuses.values())} | {
                key: statuses[key] for key in ("recoverable", "lost", "invalid")
            }
    runs = [run for report in reports for run in report.runs if run.name == name]
    before = sum(run.surface_before for run in runs)
    after = sum(run.surface_after for run in runs)
    kept_all = sum(report.retained(name)[0] for report in reports)
    total_all = sum(report.retained(name)[1] for report in reports)
    statuses = {key: sum(report.counts(name)[key] for report in reports) for key in PROBE_STATUSES}
    return {
        "kept": kept_all,
        "total": total_all,
        "retention": round(kept_all / total_all, 4) if total_all else None,
        "statuses": statuses,
        "byKind": kinds,
        "surfaceTokensBefore": before,
        "surfaceTokensAfter": after,
        "reduction": round(1 - after / before, 4) if before else 0.0,
        "failures": [run.error for run in runs if not run.compacted],
    }


async def eval_compaction_report(
    cases: Sequence[tuple[Session, Sequence[Probe]]] | None = None,
    *,
    probesets: Sequence[ProbeSet] | None = None,
    summarizers: Mapping[str, Summarizer] | None = None,
    generated: int = 4,
    seed: int = 0,
    retain_tokens: int = 0,
) -> EvalReport:
    """Evaluate retention with ``summarizers`` (default: the extractive one) over ``probesets``,
    or over ``cases`` (``(session, probes)`` pairs: one set called ``given``), or, when neither
    is given, over the ``tuned`` set of ``generated`` synthetic sessions from ``seed``.

    The JSON has one entry per probe set under ``probeSets`` (its ``summary`` per summarizer:
    ``statuses`` counts kept / recoverable / lost / invalid, ``byKind`` the same per kind, and
    the Surface-only ``kept``/``total``/``retention``; and every session's report), and, at the
    top, the same figures over every set evaluated (``sessions``, ``probes``, ``summary``,
    ``reports``), as before there were probe sets."""
    if probesets is None:
        if cases is not None:
            given = tuple(
                ProbeCase(id=session.id, language="", session=session, probes=tuple(probes))
                for session, probes in cases
            )
            probesets = [ProbeSet(name="given", about="the probes given for stored sessions", cases=given)]
        else:
            probesets = [builtin_probeset("tuned", generated=generated, seed=seed)]
    chosen: Mapping[str, Summarizer] = summarizers or {"extractive": ExtractiveSummarizer()}
    sections: list[dict[str, Any]] = []
    every: list[RetentionReport] = []
    for probeset in probesets:
        reports = [
            await evaluate_retention(case.session, case.probes, chosen, retain_tokens=retain_tokens)
            for case in probeset.cases
        ]
        every += reports
        summary = {name: _summary(reports, name) for name in chosen}
        sections.append(
            {
                "name": probeset.name,
                "about": probeset.about,
                "sessions": len(probeset.cases),
                "probes": probeset.probe_count,
                "languages": sorted({case.language for case in probeset.cases if case.language}),
                "summary": summary,
                "reports": [report.to_json() for report in reports],
            }
        )
    data = {
        "sessions": sum(section["sessions"] for section in sections),
        "probes": sum(section["probes"] for section in sections),
        "retainTokens": retain_tokens,
        "summary": {name: _summary(every, name) for name in chosen},
        "reports": [report.to_json() for report in every],
        "probeSets": sections,
    }
    return EvalReport(data)

"""The retention evaluation and the synthetic sessions."""

from __future__ import annotations

import io
import json

from rich.console import Console

from harness.compaction import (
    ExtractiveSummarizer,
    Probe,
    eval_compaction_report,
    evaluate_retention,
    generate_session,
    surface_text,
)
from tests.compaction.helpers import FixedSummarizer, run


def test_generated_sessions_are_deterministic_long_and_carry_their_probes() -> None:
    first, again = generate_session(5), generate_session(5)
    assert [e.to_json() for e in first.session.events] == [e.to_json() for e in again.session.events]
    assert generate_session(6).probes != first.probes
    assert len(first.session.events) > 150
    assert {probe.kind for probe in first.probes} == {"constraint", "task", "path", "tool-result"}
    text = surface_text(first.session)
    assert all(probe.found_in(text) for probe in first.probes)
    assert first.session.events[-1].type == "turn/end"


def test_evaluate_retention_compacts_a_copy_and_compares_summarizers() -> None:
    made = generate_session(1)
    length = len(made.session.events)
    report = run(
        evaluate_retention(
            made.session, made.probes, {"extractive": ExtractiveSummarizer(), "nothing": FixedSummarizer("x")}
        )
    )
    assert len(made.session.events) == length  # the original is untouched
    assert all(outcome.before for outcome in report.probes)
    kept, total = report.retained("nothing")
    assert (kept, total) == (0, len(made.probes))  # a summary that says nothing keeps nothing
    kept, total = report.retained("extractive")
    assert kept >= total - 2
    assert report.retained("extractive", "constraint")[0] == report.retained("extractive", "constraint")[1]
    runs = {run_.name: run_ for run_ in report.runs}
    assert (
        runs["extractive"].compacted and runs["extractive"].surface_after < runs["extractive"].surface_before
    )
    assert runs["extractive"].reduction > 0.5
    assert json.loads(json.dumps(report.to_json()))["sessionId"] == made.session.id


def test_a_failed_compaction_is_reported_not_raised() -> None:
    made = generate_session(2)
    long_summary = FixedSummarizer("y" * 1_000_000)
    report = run(evaluate_retention(made.session, made.probes, {"huge": long_summary}))
    (only,) = report.runs
    assert not only.compacted and only.error is not None and only.error.startswith("summary:")
    assert report.retained("huge") == (len(made.probes), len(made.probes))


def test_probe_patterns() -> None:
    assert Probe(name="a", kind="path", pattern="src/x.py").found_in("see src/x.py")
    assert Probe(name="b", kind="tool-result", pattern=r"exit \d+", regex=True).found_in("exit 3")
    assert not Probe(name="c", kind="task", pattern="Todo").found_in("todo")


def test_eval_compaction_report_gives_a_table_and_json() -> None:
    report = run(eval_compaction_report(generated=2, seed=10))
    data = report.data
    assert data["sessions"] == 2 and data["probes"] == 24
    summary = data["summary"]["extractive"]
    assert summary["total"] == 24 and 0 < summary["retention"] <= 1
    assert summary["surfaceTokensAfter"] < summary["surfaceTokensBefore"]
    assert set(summary["byKind"]) == {"constraint", "task", "path", "tool-result"}
    json.dumps(data)
    console = Console(file=io.StringIO(), width=120)
    console.print(report.table)
    rendered = console.file.getvalue()  # type: ignore[attr-defined]
    assert "all probes kept" in rendered and "token reduction" in rendered and "extractive" in rendered
    table, same = report  # a NamedTuple: (table, data)
    assert same is data and table is report.table

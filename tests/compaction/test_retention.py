"""The retention evaluation and the synthetic sessions."""

from __future__ import annotations

import io
import json

import pytest
from rich.console import Console

from harness.cli.retention_tables import retention_tables
from harness.compaction import (
    ExtractiveSummarizer,
    Probe,
    eval_compaction_report,
    evaluate_retention,
    generate_session,
    surface_text,
)
from harness.compaction.probesets import builtin_probeset
from harness.errors import InvalidProbe
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
    console.print(retention_tables(data))
    rendered = console.file.getvalue()  # type: ignore[attr-defined]
    assert "all probes kept" in rendered and "token reduction" in rendered and "extractive" in rendered
    (same,) = report  # a NamedTuple: (data,)
    assert same is data


# ---- statuses: kept, recoverable through the tool, lost, invalid ----------------------------


def test_each_probe_gets_a_status_and_a_forgetful_summary_leaves_everything_to_the_tool() -> None:
    made = generate_session(4)
    report = run(evaluate_retention(made.session, made.probes, {"nothing": FixedSummarizer("x")}))
    assert report.counts("nothing") == {"kept": 0, "recoverable": 12, "lost": 0, "invalid": 0}
    for outcome in report.probes:
        attempt = outcome.recall["nothing"]
        assert attempt.found and attempt.calls[0] == {"query": outcome.probe.recall_query}
    data = report.to_json()["probes"][0]
    assert data["status"] == {"nothing": "recoverable"} and data["recall"]["nothing"]["foundBy"] is not None


def test_a_probe_the_log_never_held_is_invalid_not_lost() -> None:
    made = generate_session(4)
    ghost = Probe(name="ghost", kind="constraint", pattern="never written anywhere 9QX", query="9QX")
    report = run(evaluate_retention(made.session, (*made.probes, ghost), {"x": ExtractiveSummarizer()}))
    (outcome,) = [p for p in report.probes if p.probe.name == "ghost"]
    assert outcome.status == {"x": "invalid"} and not outcome.before and outcome.recall == {}
    assert report.counts("x")["invalid"] == 1 and report.counts("x")["lost"] == 0


def test_a_fact_the_tool_cannot_reach_is_lost() -> None:
    """The lost status is real: a query that finds nothing near the fact, under the tool's caps,
    leaves the fact out of reach although the log holds it."""
    made = generate_session(4)
    budget = next(p for p in made.probes if p.name == "mid-file constant")  # deep in a long file read
    far = Probe(name="far", kind="tool-result", pattern=budget.pattern, query="The mod")
    report = run(evaluate_retention(made.session, [far], {"nothing": FixedSummarizer("x")}))
    (outcome,) = report.probes
    assert outcome.status == {"nothing": "lost"}
    assert not outcome.recall["nothing"].found and len(outcome.recall["nothing"].calls) >= 2


def test_a_regex_probe_needs_a_query_and_bad_probes_are_refused() -> None:
    made = generate_session(4)
    regex = Probe(name="r", kind="tool-result", pattern=r"expected \d+ got \d+", regex=True)
    with pytest.raises(InvalidProbe, match="needs a query"):
        run(evaluate_retention(made.session, [regex], {"x": FixedSummarizer("x")}))
    with_query = Probe(
        name="r", kind="tool-result", pattern=r"expected \d+ got \d+", regex=True, query="expected"
    )
    report = run(evaluate_retention(made.session, [with_query], {"x": FixedSummarizer("x")}))
    assert report.probes[0].status == {"x": "recoverable"}
    for bad in (
        {"kind": "wish", "pattern": "x"},
        {"kind": "task", "pattern": ""},
        {"kind": "task", "pattern": "x", "query": "  "},
        {"kind": "task", "pattern": "(", "regex": True},
    ):
        with pytest.raises(InvalidProbe):
            Probe(name="bad", **bad)
    assert issubclass(InvalidProbe, ValueError) and InvalidProbe("x").code == "probe"


def test_the_report_scores_each_probe_set_apart() -> None:
    sets = [builtin_probeset("tuned", generated=1, seed=3), builtin_probeset("holdout")]
    report = run(eval_compaction_report(probesets=sets))
    data = report.data
    names = [section["name"] for section in data["probeSets"]]
    assert names == ["tuned", "holdout"]
    tuned, holdout = data["probeSets"]
    assert tuned["probes"] == 12 and holdout["probes"] == sets[1].probe_count
    for section in (tuned, holdout):
        statuses = section["summary"]["extractive"]["statuses"]
        assert sum(statuses.values()) == section["probes"]
        assert statuses["lost"] == 0 and statuses["invalid"] == 0
    assert {"zh", "fr", "ja", "ko"} <= set(holdout["languages"])
    assert data["probes"] == tuned["probes"] + holdout["probes"]  # the top level covers every set
    assert data["summary"]["extractive"]["statuses"]["kept"] == sum(
        s["summary"]["extractive"]["statuses"]["kept"] for s in data["probeSets"]
    )
    console = Console(file=io.StringIO(), width=80)
    console.print(retention_tables(report.data))
    rendered = console.file.getvalue()  # type: ignore[attr-defined]
    assert max(len(line) for line in rendered.splitlines()) <= 80
    for label in ("recoverable via the tool", "lost (must be 0)", "holdout probe set, extractive digest"):
        assert label in rendered

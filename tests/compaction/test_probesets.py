"""Probe sets: the shipped documents are well formed and valid, a bad document is refused with
a typed error naming the place, and the sessions they build are deterministic and long."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.compaction.probes import PROBE_KINDS, surface_text
from harness.compaction.probesets import (
    BUILTIN_PROBESETS,
    builtin_probeset,
    load_probeset_file,
    probeset_from_json,
)
from harness.compaction.recall import in_log
from harness.errors import InvalidProbe

SHIPPED = Path(__file__).resolve().parents[2] / "src" / "harness" / "compaction" / "probesets"


def minimal(**changes: Any) -> dict[str, Any]:
    case = {
        "id": "c1",
        "language": "en",
        "turns": [{"user": "Never edit gen/out.txt.", "reply": "Understood."}],
        "probes": [{"name": "p", "kind": "constraint", "pattern": "gen/out.txt", "query": "Never edit"}],
    }
    document: dict[str, Any] = {"probeset": "mine", "cases": [case], "bulk": {"turns": 1}}
    document.update(changes)
    return document


@pytest.mark.parametrize("name", ["independent", "holdout"])
def test_the_shipped_sets_hold_every_fact_in_their_logs_and_never_give_the_answer_as_query(name: str) -> None:
    probeset = builtin_probeset(name)
    assert probeset.name == name and probeset.probe_count >= 40
    assert {case.language for case in probeset.cases} >= {"en", "zh", "ja"}
    kinds = {probe.kind for case in probeset.cases for probe in case.probes}
    assert kinds == set(PROBE_KINDS)
    for case in probeset.cases:
        text = surface_text(case.session)
        for probe in case.probes:
            assert probe.query is not None and probe.pattern not in probe.query, probe
            assert in_log(case.session.events, probe) and probe.found_in(text), probe
        assert len(case.session.events) > 300  # the bulk makes the digest choose
        assert case.session.events[-1].type == "turn/end"


def test_the_tuned_probes_have_queries_that_do_not_give_the_answer() -> None:
    for case in builtin_probeset("tuned", generated=3).cases:
        for probe in case.probes:
            assert probe.query is not None and probe.pattern not in probe.query, probe
            assert in_log(case.session.events, probe), probe


def test_the_independent_set_was_not_rewritten_to_suit_the_digest() -> None:
    """The probes of the independent set are as first committed (only the sessions' shape
    changed, see the docs); this pins their count and phrasing."""
    document = json.loads((SHIPPED / "independent.json").read_text(encoding="utf-8"))
    probes = [probe for case in document["cases"] for probe in case["probes"]]
    assert len(probes) == 56 and len(document["cases"]) == 8
    assert any("Remember to tag the image" in case["turns"][0]["user"] for case in document["cases"])


def test_sessions_are_deterministic_and_the_seed_varies_the_bulk() -> None:
    first, again = builtin_probeset("holdout"), builtin_probeset("holdout")
    assert [e.to_json() for e in first.cases[0].session.events] == [
        e.to_json() for e in again.cases[0].session.events
    ]
    other = builtin_probeset("holdout", seed=1)
    assert [e.to_json() for e in other.cases[0].session.events] != [
        e.to_json() for e in first.cases[0].session.events
    ]
    tuned = builtin_probeset("tuned", generated=2, seed=5)
    assert [case.id for case in tuned.cases] == ["synthetic-5", "synthetic-6"]
    assert BUILTIN_PROBESETS == ("tuned", "independent", "holdout")


def test_a_document_builds_its_turns_calls_and_todos() -> None:
    document = minimal()
    document["cases"][0]["turns"][0]["steps"] = [
        [
            {
                "tool": "todo_write",
                "arguments": {"todos": "[]"},
                "result": "ok",
                "todos": [{"content": "Write the 调查 notes", "status": "in_progress"}],
            },
            {"tool": "read_file", "arguments": {"path": "数据/a.txt"}, "result": "boom", "error": True},
        ]
    ]
    (case,) = probeset_from_json(json.dumps(document, ensure_ascii=False)).cases
    types = [event.type for event in case.session.events]
    assert types.count("tool/call") == 4 and "todo/write" in types  # two, then a bulk read and a test run
    call = next(e for e in case.session.events if e.type == "tool/call" and e.data["name"] == "read_file")
    assert "数据/a.txt" in call.data["arguments"]  # arguments are written as a model writes them
    assert case.session.id == "mine-c1"


@pytest.mark.parametrize(
    ("changes", "where"),
    [
        ({"cases": []}, "$.cases"),
        ({"version": 2}, "$.version"),
        ({"bulk": {"turns": 1000}}, "$.bulk"),
        ({"bulk": {"turn": 1}}, "bulk"),
        ({"extra": 1}, "extra"),
        ({"cases": [{"id": "c", "turns": [], "probes": []}]}, "$.cases[0].turns"),
        (
            {"cases": [{"id": "c", "turns": [{"user": " ", "reply": "r"}], "probes": []}]},
            "$.cases[0].turns[0]",
        ),
        ({"cases": [{"id": "c", "turns": [{"user": "u", "reply": "r"}], "probes": []}]}, "$.cases[0].probes"),
        (
            {"cases": [{"id": "c", "turns": [{"user": 3, "reply": "r"}], "probes": []}]},
            "$.cases[0].turns[0].user",
        ),
    ],
)
def test_a_bad_document_is_refused_naming_the_place(changes: dict[str, Any], where: str) -> None:
    with pytest.raises(InvalidProbe) as caught:
        probeset_from_json(json.dumps(minimal(**changes)), where="mine.json")
    assert str(caught.value).startswith("mine.json") and where in str(caught.value)


def test_bad_probes_duplicates_and_unreadable_files_are_refused(tmp_path: Path) -> None:
    document = minimal()
    document["cases"][0]["probes"][0]["kind"] = "wish"
    with pytest.raises(InvalidProbe, match=r"\$\.cases\[0\]\.probes\[0\]: probe 'p': kind must be"):
        probeset_from_json(json.dumps(document), where="x")
    twice = minimal()
    twice["cases"].append(twice["cases"][0])
    with pytest.raises(InvalidProbe, match="used twice"):
        probeset_from_json(json.dumps(twice))
    with pytest.raises(InvalidProbe, match="not JSON"):
        probeset_from_json(b"{nope")
    with pytest.raises(InvalidProbe, match="cannot read"):
        load_probeset_file(tmp_path / "missing.json")
    path = tmp_path / "mine.json"
    path.write_text(json.dumps(minimal()), encoding="utf-8")
    assert load_probeset_file(path).cases[0].probes[0].query == "Never edit"
    with pytest.raises(InvalidProbe, match="no built-in probe set"):
        builtin_probeset("mine")

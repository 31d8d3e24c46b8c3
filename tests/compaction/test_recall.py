"""``recall``: a model's way of getting a fact back through the real ``session_search`` tool:
a search, then reads of the hits, then older pages, within a call budget."""

from __future__ import annotations

from harness.compaction.probes import Probe
from harness.compaction.recall import in_log, recall_probe
from harness.messages.model import user_message
from harness.session.session import Session
from harness.tools.session_search import SessionSearch
from tests.compaction.helpers import run


def log(*texts: str) -> Session:
    session = Session.create()
    for text in texts:
        session.append("user/message", user_message(text), surface_op="append")
    return session


def test_the_search_snippet_can_carry_the_fact() -> None:
    session = log("The staging database is db-stg-417.", "unrelated")
    attempt = run(
        recall_probe(
            session.events, Probe(name="db", kind="constraint", pattern="db-stg-417", query="staging")
        )
    )
    assert attempt.found and attempt.calls == ({"query": "staging"},) and attempt.found_by == 0
    assert attempt.to_json()["foundBy"] == 0 and attempt.chars_read > 0


def test_a_fact_far_from_the_query_is_read_from_the_hit() -> None:
    far = "The config file said: " + "filler words here " * 40 + "FLUSH_INTERVAL_MS = 4321."
    session = log(far)
    probe = Probe(name="flush", kind="tool-result", pattern="FLUSH_INTERVAL_MS = 4321", query="config file")
    attempt = run(recall_probe(session.events, probe, tool=SessionSearch(snippet_chars=60)))
    assert attempt.found and attempt.calls == ({"query": "config file"}, {"seq": 0}) and attempt.found_by == 1


def test_older_pages_are_searched_within_the_call_budget() -> None:
    session = log("the marker 9 holds ZETA-1", *(f"the marker {n}" for n in range(8)))
    probe = Probe(name="z", kind="identifier", pattern="ZETA-1", query="marker")
    found = run(recall_probe(session.events, probe, tool=SessionSearch(snippet_chars=12)))
    assert found.found and {"query": "marker", "before_seq": 4} in found.calls  # seq 2 shows seq 0 too
    short = run(recall_probe(session.events, probe, tool=SessionSearch(snippet_chars=12), max_calls=3))
    assert not short.found and len(short.calls) == 3


def test_no_hit_no_query_and_a_missing_fact() -> None:
    session = log("only this")
    missing = Probe(name="m", kind="task", pattern="ZZZ", query="nothing here")
    attempt = run(recall_probe(session.events, missing))
    assert not attempt.found and attempt.calls == ({"query": "nothing here"},)
    regex = Probe(name="r", kind="task", pattern=r"\d+", regex=True)
    assert run(recall_probe(session.events, regex)).calls == ()
    assert not in_log(session.events, missing)
    assert in_log(session.events, Probe(name="o", kind="task", pattern="only"))
    empty = run(recall_probe((), Probe(name="e", kind="task", pattern="QQQ")))  # the tool refuses: no log
    assert not empty.found and len(empty.calls) == 1

"""``session_search``: search and read a session's own log, shadowed history included; caps,
no hit, literal queries, its own traffic left out, and bad arguments refused as typed errors."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import harness
from harness.events.event import Replace
from harness.messages.model import assistant_message, user_message
from harness.tools.base import ToolContext, ToolError, ToolOutcome
from harness.tools.session_search import SessionSearch

CONSTANT = "ZEBRA-4471"


def _say(session: harness.Session, text: str) -> int:
    return session.append("user/message", user_message(text), surface_op="append").seq


def _answer(session: harness.Session, text: str) -> int:
    message = assistant_message([{"type": "text", "text": text}], provider="p", model="m")
    return session.append("assistant/message", {"message": message}, surface_op="append").seq


def compacted_session() -> harness.Session:
    """A log whose first exchange (holding ``CONSTANT``) a checkpoint replaced."""
    session = harness.Session.create()
    first = _say(session, f"The deploy key id is {CONSTANT}; remember it.")
    last = _answer(session, "Noted.")
    session.append(
        "user/message",
        user_message("[summary: the user gave a deploy key id]"),
        surface_op=Replace(first, last),
        source_event_seqs=[first, last],
    )
    _say(session, "What was the key id?")
    return session


def search(session: harness.Session, tool: SessionSearch | None = None, **arguments: Any) -> ToolOutcome:
    context = ToolContext(Path("."), call_id="call-now", events=session.events)
    return asyncio.run((tool or SessionSearch()).run(arguments, context))


def refused(session: harness.Session, arguments: Mapping[str, Any], code: str = "INVALID_ARGUMENTS") -> str:
    context = ToolContext(Path("."), call_id="call-now", events=session.events)
    with pytest.raises(ToolError) as caught:
        asyncio.run(SessionSearch().run(arguments, context))
    assert caught.value.code == code, caught.value.message
    return caught.value.message


def test_a_search_finds_shadowed_history_with_its_seq_and_classification() -> None:
    session = compacted_session()
    assert CONSTANT not in "".join(m.text or "" for m in session.derive_messages())
    outcome = search(session, query="deploy KEY   id is")
    assert not outcome.is_error
    assert CONSTANT in outcome.text
    assert "#0 user/message [shadowed: condensed away by seq 2]" in outcome.text
    assert outcome.meta == {"hits": 1}
    shadowed = search(session, query="key id", scope="shadowed")
    assert "#3" not in shadowed.text and "#0" in shadowed.text
    current = search(session, query="key id", scope="current")
    assert "#3 user/message [current]" in current.text and "#0 " not in current.text


def test_hits_come_newest_first_and_page_on_with_before_seq() -> None:
    session = harness.Session.create()
    for number in range(6):
        _say(session, f"note {number}: the marker word")
    first = search(session, query="marker word", limit=2)
    assert first.text.index("#5 ") < first.text.index("#4 ") and "#3 " not in first.text
    assert "before_seq=4" in first.text
    second = search(session, query="marker word", limit=2, before_seq=4)
    assert "#3 " in second.text and "#2 " in second.text and "#4 " not in second.text


def test_a_read_shows_the_event_in_full_with_its_neighbours() -> None:
    session = compacted_session()
    outcome = search(session, seq=0, after=1)
    assert "> #0 user/message [shadowed" in outcome.text and CONSTANT in outcome.text
    assert "#1 assistant/message" in outcome.text and "Noted." in outcome.text
    assert "#2 " not in outcome.text


def test_no_hit_says_so_plainly() -> None:
    outcome = search(compacted_session(), query="nothing like this")
    assert not outcome.is_error
    assert outcome.text == "No event contains 'nothing like this'."
    assert search(compacted_session(), query="key id", scope="shadowed", before_seq=0).text.startswith(
        "No event among shadowed events before seq 0"
    )


def test_a_regex_looking_query_is_taken_literally() -> None:
    session = harness.Session.create()
    _say(session, "the files are a1b and a.b* and c")
    outcome = search(session, query="a.b*")
    assert "a.b*" in outcome.text and outcome.meta == {"hits": 1}
    assert search(session, query="a.b").meta == {"hits": 1}  # the event holds "a.b*" literally
    assert search(session, query="a1b*").text.startswith("No event")
    assert search(session, query="(unclosed[").text.startswith("No event")  # not a regex error


def test_the_output_stays_inside_its_character_budget_and_marks_every_cut() -> None:
    session = harness.Session.create()
    for number in range(40):
        _say(session, f"entry {number} needle " + "x" * 5_000)
    tool = SessionSearch(max_output_chars=2_000, snippet_chars=200, max_event_chars=500)
    hits = search(session, tool, query="needle", limit=20)
    assert len(hits.text) <= 2_000
    assert "…" in hits.text and "before_seq=" in hits.text
    read = search(session, tool, seq=10, before=5, after=5)
    assert len(read.text) <= 2_000
    assert "[… cut:" in read.text and "read on with seq=" in read.text
    big = search(session, query="needle", limit=20)  # the default budget
    assert len(big.text) <= 8_000


def test_a_fork_child_without_a_store_handle_finds_its_inherited_history_not_the_parents_later_events() -> (
    None
):
    """Its fork seed is its own log; the parent's later events need the store (see
    test_session_search_line.py)."""
    parent = compacted_session()
    child = parent.fork()
    _say(parent, "after the fork: PARENT-ONLY-77")
    _say(child, "the child goes on")
    inherited = search(child, query=CONSTANT)
    assert "#0 user/message [shadowed" in inherited.text
    assert search(child, query="PARENT-ONLY-77").text.startswith("No event")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    texts=st.lists(st.text(min_size=0, max_size=3_000), min_size=1, max_size=12),
    query=st.text(min_size=1, max_size=40).filter(lambda q: q.split() != []),
    budget=st.integers(min_value=1_000, max_value=4_000),
    limit=st.integers(min_value=1, max_value=20),
)
def test_any_answer_stays_inside_the_budget(texts: list[str], query: str, budget: int, limit: int) -> None:
    session = harness.Session.create()
    for text in texts:
        _say(session, (text + " " + query) if text.strip() else query)
    tool = SessionSearch(max_output_chars=budget, snippet_chars=200, max_event_chars=800)
    hits = search(session, tool, query=query, limit=limit)
    assert len(hits.text) <= budget and not hits.is_error
    assert hits.meta is not None and hits.meta["hits"] >= 1
    read = search(session, tool, seq=len(texts) - 1, before=10)
    assert len(read.text) <= budget


def test_its_own_calls_and_results_are_never_hits() -> None:
    session = harness.Session.create()
    call = {"type": "tool-call", "id": "c1", "name": "session_search", "arguments": '{"query":"ORCHID"}'}
    message = assistant_message([call], provider="p", model="m")
    session.append("assistant/message", {"message": message}, surface_op="append")
    session.append("tool/call", {"turn": 1, "step": 1, "callId": "c1", "name": "session_search",
                                 "arguments": '{"query":"ORCHID"}'})  # fmt: skip
    result = {
        "id": "r1",
        "role": "user",
        "source": {"kind": "tool", "callId": "c1"},
        "content": [{"type": "tool-result", "toolCallId": "c1", "isError": False,
                     "content": [{"type": "text", "text": "No event contains 'ORCHID'."}]}],
    }  # fmt: skip
    session.append("tool/result", {"turn": 1, "step": 1, "message": result}, surface_op="append")
    assert search(session, query="ORCHID").text.startswith("No event")
    _say(session, "ORCHID is the codename")
    found = search(session, query="ORCHID")
    assert found.meta == {"hits": 1} and "#3 user/message" in found.text


@pytest.mark.parametrize(
    "arguments",
    [
        {},
        {"query": "a", "seq": 0},
        {"query": "a", "before": 2},
        {"seq": 0, "scope": "shadowed"},
        {"query": ""},
        {"query": "   "},
        {"query": 5},
        {"query": "a", "limit": 0},
        {"query": "a", "limit": 21},
        {"query": "a", "scope": "everything"},
        {"seq": -1},
        {"seq": 0, "before": 11},
        {"query": "a", "path": "x"},
    ],
)
def test_bad_arguments_are_refused_as_typed_tool_errors(arguments: dict[str, Any]) -> None:
    message = refused(compacted_session(), arguments)
    assert message.startswith("Invalid arguments for session_search")


def test_a_seq_past_the_log_and_a_missing_log_are_typed_refusals() -> None:
    assert "seqs 0 to 3" in refused(compacted_session(), {"seq": 99}, "EVENT_NOT_FOUND")
    context = ToolContext(Path("."))
    with pytest.raises(ToolError) as caught:
        asyncio.run(SessionSearch().run({"query": "a"}, context))
    assert caught.value.code == "NO_SESSION_LOG"


def test_the_tool_is_read_only_and_parallel_safe() -> None:
    tool = SessionSearch()
    assert tool.changes_world is False and tool.exclusive is False
    assert harness.tools.ToolRegistry([tool]).names() == ["session_search"]
    with pytest.raises(ValueError):
        SessionSearch(max_output_chars=10)


def test_a_match_starts_at_a_word_unless_none_does_or_partial_is_asked() -> None:
    session = harness.Session.create()
    _say(session, "Keep the TTL at 300 seconds during the switch.")
    for number in range(8):
        _say(session, f"settle invoice {number}")
    words = search(session, query="TTL")
    assert words.meta == {"hits": 1} and "#0 user/message" in words.text
    assert "inside longer words" not in words.text
    inside = search(session, query="TTL", partial=True, limit=3)
    assert inside.meta == {"hits": 3} and "#8 " in inside.text
    assert "again with partial=true, before_seq=6" in inside.text
    fallback = search(session, query="ettle", limit=2)  # no match starts at a word: inside words
    assert fallback.meta == {"hits": 2} and "No match starts at a word" in fallback.text
    assert "partial=true, before_seq=" in fallback.text
    assert search(session, query="missing word").text == "No event contains 'missing word'."
    refused(session, {"seq": 1, "partial": True})  # partial goes with query

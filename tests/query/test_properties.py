"""Properties of harness.query over random sessions (issue 13 item 1): classification agrees with
fold_surface, a filter without clauses keeps everything, clauses AND across and OR within like
set algebra, the text filter never raises on any string and matches like its plain definition,
pages and windows read exactly the filtered log."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import harness
from harness.errors import InvalidQuery
from harness.events.event import Replace
from harness.query import (
    CLASSIFICATIONS,
    EventFilter,
    Range,
    TextNeedle,
    event_text,
    filter_events,
    index_of,
    page,
    window,
)
from harness.session.session import Session
from harness.surface import fold_surface

WORDS = st.text(alphabet="abAB .*\n\t(", max_size=14)

op = st.one_of(
    st.tuples(st.just("user"), WORDS),
    st.tuples(st.just("say"), WORDS),
    st.tuples(st.just("tool"), WORDS),
    st.tuples(st.just("todo"), WORDS),
    st.tuples(st.just("turn"), st.booleans()),
    st.tuples(st.just("replace"), st.integers(0, 50), st.integers(0, 6), WORDS),
    st.tuples(st.just("prune"), st.integers(0, 50), WORDS),
)


def build(ops: list[tuple[Any, ...]]) -> Session:
    """A session from random operations; replaces and prunes pick among the current nodes."""
    clock = iter(range(1_000, 1_000_000, 7))
    session = Session.create({"version": 0, "id": "prop", "createdAt": 1}, clock=lambda: next(clock))
    turn = 0
    calls = 0
    for item in ops:
        kind = item[0]
        nodes = list(session.surface.nodes)
        if kind == "user":
            session.append("user/message", harness.user_message(item[1] or "."), surface_op="append")
        elif kind == "say":
            message = harness.assistant_message(item[1] or ".", provider="p", model="m")
            session.append(
                "assistant/message",
                {"turn": turn, "step": 1, "message": message},
                surface_op="append",
                source_event_seqs=[],
            )
        elif kind == "tool":
            calls += 1
            call = session.append(
                "tool/call",
                {"turn": turn, "step": 1, "callId": f"c{calls}", "name": "t", "arguments": item[1]},
            )
            session.append(
                "tool/result",
                {
                    "turn": turn,
                    "step": 1,
                    "message": harness.tool_result_message(f"c{calls}", item[1] or "."),
                },
                surface_op="append",
                source_event_seqs=[call.seq],
            )
        elif kind == "todo":
            session.append("todo/write", {"todos": [{"content": item[1], "status": "pending"}]})
        elif kind == "turn":
            if item[1]:
                turn += 1
                session.append("turn/start", {"turn": turn})
                session.append("step/start", {"turn": turn, "step": 1})
            else:
                session.append("step/end", {"turn": turn, "step": 1})
                session.append("turn/end", {"turn": turn, "reason": {"kind": "completed"}})
        elif kind == "replace" and nodes:
            first = item[1] % len(nodes)
            last = min(len(nodes) - 1, first + item[2])
            shadowed = nodes[first : last + 1]
            session.append(
                "user/message",
                harness.user_message("summary " + item[3]),
                surface_op=Replace(nodes[first], nodes[last]),
                source_event_seqs=shadowed,
            )
        elif kind == "prune":
            results = [seq for seq in nodes if session.events[seq].type == "tool/result"]
            if results:
                target = results[item[1] % len(results)]
                data = harness.events.json.thaw(session.events[target].data)
                data["message"]["content"][0]["content"] = [{"type": "text", "text": "pruned " + item[2]}]
                session.append("compaction/prune", {"shadowedSeqs": [target]})
                session.append(
                    "tool/result", data, surface_op=Replace(target, target), source_event_seqs=[target]
                )
    return session


sessions = st.lists(op, max_size=40).map(build)
SETTINGS = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def seqs_of(session: Session, where: EventFilter) -> set[int]:
    return {record.seq for record in filter_events(session, where)}


@SETTINGS
@given(sessions)
def test_classification_agrees_with_fold_surface(session: Session) -> None:
    fold = fold_surface(session.events)
    index = index_of(session)
    classes = index.classifications()
    assert (
        {seq for seq, c in enumerate(classes) if c == "current"}
        == set(fold.nodes)
        == set(session.surface.nodes)
    )
    by = {seq: r.seq for r in fold.replacements for seq in r.shadowed_seqs}
    assert {seq for seq, c in enumerate(classes) if c == "shadowed"} == set(by)
    for seq in range(len(session.events)):
        assert index.record(seq).shadowed_by == by.get(seq)
    assert sum(index.counts().values()) == len(session.events)


@SETTINGS
@given(sessions)
def test_a_filter_without_clauses_keeps_everything(session: Session) -> None:
    assert [r.seq for r in filter_events(session, EventFilter())] == list(range(len(session.events)))


clause = st.one_of(
    st.tuples(
        st.just("types"),
        st.sampled_from(["user/message", "tool/result", "tool/*", "turn/start", "todo/write"]),
    ),
    st.tuples(st.just("classifications"), st.sampled_from(CLASSIFICATIONS)),
    st.tuples(
        st.just("seqs"),
        st.tuples(st.integers(0, 60), st.integers(0, 30)).map(lambda p: Range(p[0], p[0] + p[1])),
    ),
    st.tuples(st.just("text"), st.sampled_from(["a", "b a", "A.", "*", "summary", "pruned"])),
    st.tuples(st.just("turns"), st.integers(1, 3)),
)


@SETTINGS
@given(sessions, clause, clause, clause)
def test_or_within_and_across_is_set_algebra(session: Session, one: Any, two: Any, three: Any) -> None:
    def single(spec: Any) -> set[int]:
        return seqs_of(session, EventFilter(**{spec[0]: (spec[1],)}))

    if one[0] == two[0]:  # one clause, two values: OR
        both = seqs_of(session, EventFilter(**{one[0]: (one[1], two[1])}))
        assert both == single(one) | single(two)
    else:  # two clauses: AND
        both = seqs_of(session, EventFilter(**{one[0]: (one[1],), two[0]: (two[1],)}))
        assert both == single(one) & single(two)
    if len({one[0], two[0], three[0]}) == 3:
        every = seqs_of(session, EventFilter(**{spec[0]: (spec[1],) for spec in (one, two, three)}))
        assert every == single(one) & single(two) & single(three)


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_any_string_is_a_needle_or_a_clear_invalid_query(text: str) -> None:
    try:
        needle = TextNeedle(text)
    except InvalidQuery:
        assert not text.split()
        return
    assert text.split()
    assert needle.matches(text)  # a needle always finds itself
    assert needle.matches("x " + text.upper().swapcase() + " y") or not text.isascii()


@SETTINGS
@given(sessions, st.text(max_size=20))
def test_the_text_filter_never_raises_on_any_string(session: Session, text: str) -> None:
    try:
        where = EventFilter(text=(text,))
    except InvalidQuery:
        assert not text.split()
        return
    for record in filter_events(session, where):
        assert where._needles[0].matches(event_text(record.event))


def plain(text: str) -> str:
    return " ".join(text.split()).lower()


@settings(max_examples=300, deadline=None)
@given(
    st.text(alphabet="abAB .*(\n\t\u00a0", max_size=20), st.text(alphabet="abAB .*(\n\t\u00a0", max_size=60)
)
def test_a_needle_matches_like_its_plain_definition(needle: str, haystack: str) -> None:
    """Case-insensitive and whitespace-flexible: the whitespace-collapsed, lower-cased needle is
    a substring of the whitespace-collapsed, lower-cased text."""
    if not needle.split():
        return
    assert TextNeedle(needle).matches(haystack) == (plain(needle) in plain(haystack))


@SETTINGS
@given(sessions, clause, st.integers(1, 7))
def test_pages_read_exactly_the_filtered_log(session: Session, spec: Any, limit: int) -> None:
    where = EventFilter(**{spec[0]: (spec[1],)})
    seen: list[int] = []
    cursor = None
    while True:
        found = page(session, where=where, limit=limit, cursor=cursor)
        seen += [r.seq for r in found.records]
        cursor = found.next_cursor
        if cursor is None:
            break
        assert len(found.records) == limit
    assert seen == [r.seq for r in filter_events(session, where)]


@SETTINGS
@given(sessions, st.integers(0, 80), st.integers(0, 5), st.integers(0, 5))
def test_a_window_is_the_slice_around_its_target(session: Session, at: int, before: int, after: int) -> None:
    if not session.events:
        return
    seq = at % len(session.events)
    found = window(session, seq, before=before, after=after)
    assert [r.seq for r in found.records] == list(
        range(max(0, seq - before), min(len(session.events), seq + after + 1))
    )
    assert found.target.seq == seq

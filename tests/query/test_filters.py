"""Filters (issue 13 item 1): seq and time ranges, types, classification, turn and step, literal
text; ANDed across clauses, ORed within one; bad clauses are InvalidQuery."""

from __future__ import annotations

from typing import Any

import pytest

from harness.errors import InvalidQuery
from harness.query import EventFilter, Range, event_text, filter_events, index_of, matching_seqs
from tests.query.helpers import SECRET, Compacted, compacted


@pytest.fixture(scope="module")
def case() -> Compacted:
    return compacted(1)


def seqs(case: Compacted, **clauses: Any) -> list[int]:
    return [record.seq for record in filter_events(case.session, EventFilter(**clauses))]


def test_no_clause_keeps_every_event(case: Compacted) -> None:
    assert seqs(case) == list(range(len(case.session.events)))
    assert EventFilter().empty and not EventFilter(types=("x",)).empty


def test_seq_ranges_are_inclusive_open_ended_and_ored(case: Compacted) -> None:
    n = len(case.session.events)
    assert seqs(case, seqs=(Range(3, 5),)) == [3, 4, 5]
    assert seqs(case, seqs=(Range(None, 2),)) == [0, 1, 2]
    assert seqs(case, seqs=(Range(n - 2, None),)) == [n - 2, n - 1]
    assert seqs(case, seqs=(Range(8, 9), Range(1, 2), Range(2, 3))) == [1, 2, 3, 8, 9]
    assert seqs(case, seqs=(Range(n + 5, n + 9),)) == []
    assert seqs(case, seqs=(Range(-5, 0),)) == [0]


def test_time_ranges(case: Compacted) -> None:
    events = case.session.events
    low, high = events[10].time, events[20].time
    expected = [e.seq for e in events if low <= e.time <= high]
    assert seqs(case, times=(Range(low, high),)) == expected
    assert seqs(case, times=(Range(None, events[0].time - 1),)) == []


def test_types_exact_and_by_family(case: Compacted) -> None:
    events = case.session.events
    assert seqs(case, types=("tool/result",)) == [e.seq for e in events if e.type == "tool/result"]
    assert seqs(case, types="compaction/*") == [e.seq for e in events if e.type.startswith("compaction/")]
    both = seqs(case, types=("user/message", "step/*"))
    assert both == [e.seq for e in events if e.type == "user/message" or e.type.startswith("step/")]
    assert seqs(case, types=("compaction",)) == []  # an exact type, not a family


def test_classification_clause(case: Compacted) -> None:
    index = index_of(case.session)
    for name in ("current", "shadowed", "log-only"):
        assert seqs(case, classifications=(name,)) == [
            seq for seq in range(len(index)) if index.classification(seq) == name
        ]
    assert seqs(case, classifications=("current", "shadowed")) == sorted(
        seqs(case, classifications=("current",)) + seqs(case, classifications=("shadowed",))
    )


def test_turn_and_step_clauses(case: Compacted) -> None:
    index = index_of(case.session)
    turn = index.turns[1]
    assert seqs(case, turns=(turn.turn,)) == list(range(turn.start, (turn.end or 0) + 1))
    first_steps = seqs(case, turns=(turn.turn,), steps=(1,))
    step = next(s for s in index.steps if s.turn == turn.turn and s.step == 1)
    assert first_steps == list(range(step.start, (step.end or 0) + 1))
    every_first = seqs(case, steps=(1,))
    assert set(first_steps) < set(every_first)
    # a manual compaction runs between turns: in no turn
    assert not set(seqs(case, types="compaction/*")) & set(
        seqs(case, turns=tuple(t.turn for t in index.turns))
    )


def test_text_finds_shadowed_history(case: Compacted) -> None:
    hits = filter_events(case.session, EventFilter(text=("ZEBRA-4471",)))
    assert hits
    assert {hit.type for hit in hits} >= {"user/message"}
    shadowed = [hit for hit in hits if hit.classification == "shadowed"]
    assert shadowed and all(hit.shadowed_by is not None for hit in shadowed)
    assert seqs(case, text=SECRET.upper().replace(" ", "\n  ")) == seqs(case, text=SECRET)


def test_text_clause_ors_its_needles_and_skips_textless_events(case: Compacted) -> None:
    a = set(seqs(case, text="ZEBRA-4471"))
    b = set(seqs(case, text="Last answer"))
    assert a and b
    assert set(seqs(case, text=("ZEBRA-4471", "Last answer"))) == a | b
    for seq in seqs(case, text="e"):
        assert event_text(case.session.events[seq])


def test_clauses_and_together(case: Compacted) -> None:
    index = index_of(case.session)
    every = set(range(len(index)))
    kinds = set(seqs(case, types="tool/result"))
    current = set(seqs(case, classifications="current"))
    late = set(seqs(case, seqs=(Range(len(index) // 2, None),)))
    assert set(seqs(case, types="tool/result", classifications="current")) == kinds & current
    assert set(
        seqs(case, types="tool/result", classifications="current", seqs=(Range(len(index) // 2),))
    ) == (kinds & current & late)
    assert kinds | current <= every


def test_matching_seqs_walks_forward_and_backward(case: Compacted) -> None:
    where = EventFilter(types=("user/message",))
    forward = list(matching_seqs(case.session, where))
    assert list(matching_seqs(case.session, where, start=-1, reverse=True)) == forward[::-1]
    middle = forward[len(forward) // 2]
    assert list(matching_seqs(case.session, where, start=middle)) == [s for s in forward if s >= middle]
    assert list(matching_seqs(case.session, where, start=middle, reverse=True)) == [
        s for s in reversed(forward) if s <= middle
    ]


def test_filter_events_limit(case: Compacted) -> None:
    assert len(filter_events(case.session, None, limit=3)) == 3
    assert filter_events(case.session, limit=0) == []
    with pytest.raises(InvalidQuery, match="limit"):
        filter_events(case.session, limit=-1)


def test_a_filter_is_frozen_hashable_and_keyed() -> None:
    one = EventFilter(types="tool/result", text=("x",))  # type: ignore[arg-type]  # a bare value
    two = EventFilter(types=("tool/result",), text="x")  # type: ignore[arg-type]
    assert one == two and hash(one) == hash(two) and one.key() == two.key()
    assert one.key() != EventFilter(types=("tool/result",)).key()
    with pytest.raises(AttributeError):
        one.types = ()  # type: ignore[misc]
    assert one.to_json() == {"types": ["tool/result"], "text": ["x"]}


def test_matches_checks_one_event(case: Compacted) -> None:
    index = index_of(case.session)
    where = EventFilter(types=("user/message",), seqs=(Range(0, 5),))
    assert [seq for seq in range(len(index)) if where.matches(index, seq)] == seqs(
        case, types="user/message", seqs=(Range(0, 5),)
    )


@pytest.mark.parametrize(
    ("clauses", "message"),
    [
        ({"seqs": ((1, 2),)}, r"seqs\[0\] must be a Range"),
        ({"types": ("",)}, r"types\[0\]"),
        ({"types": ("/*",)}, r"types\[0\]"),
        ({"types": (3,)}, r"types\[0\]"),
        (
            {"classifications": ("hidden",)},
            r"classifications\[0\] must be one of current, shadowed, log-only",
        ),
        ({"turns": (0,)}, r"turns\[0\] must be a positive integer"),
        ({"steps": (True,)}, r"steps\[0\]"),
        ({"steps": ("1",)}, r"steps\[0\]"),
        ({"text": ("  ",)}, r"text\[0\]: .*no word"),
        ({"text": (None,)}, r"text\[0\]: text must be a string"),
        ({"types": {"a"}}, "types must be a tuple"),
    ],
)
def test_bad_clauses_are_invalid_query(clauses: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidQuery, match=message) as raised:
        EventFilter(**clauses)
    assert isinstance(raised.value, ValueError)


def test_range_values_are_checked() -> None:
    for start, end in ((1.5, 2), ("1", None), (None, False)):
        with pytest.raises(InvalidQuery, match="must be an integer or None"):
            Range(start, end)  # type: ignore[arg-type]
    with pytest.raises(InvalidQuery, match="start 5 is after its end 3"):
        Range(5, 3)
    assert 3 in Range(3, 3) and 4 not in Range(3, 3) and True not in Range(0, 5)


def test_admits_answers_as_matches_over_an_events_fields(case: Compacted) -> None:
    """``admits`` (what the full-text index checks its rows with) and ``matches`` are one rule."""
    index = index_of(case.session)
    times = sorted(event.time for event in case.session.events)
    filters = [
        EventFilter(),
        EventFilter(seqs=(Range(3, 40), Range(90, None))),
        EventFilter(times=(Range(times[len(times) // 3], times[2 * len(times) // 3]),)),
        EventFilter(types=("tool/*", "user/message")),
        EventFilter(classifications=("shadowed", "log-only")),
        EventFilter(turns=(1, 100), steps=(1,)),
        EventFilter(text=("launch code", "file")),
        EventFilter(types=("user/message",), classifications=("current",), text=("Last",)),
    ]
    for where in filters:
        for seq in range(len(index)):
            record = index.record(seq)
            admitted = where.admits(
                seq=seq,
                type=record.type,
                time=record.event.time,
                classification=record.classification,
                turn=record.turn,
                step=record.step,
                text=event_text(record.event),
            )
            assert admitted == where.matches(index, seq), (where, seq)

"""Classification (issue 13 item 1): every event is current, shadowed (by which replace, in which
compaction) or log-only, computed from fold_surface over sessions with real compactions."""

from __future__ import annotations

import pytest

import harness
from harness.events.event import Event, Replace
from harness.events.vocabulary import SURFACE_TYPES
from harness.query import EventNotFound, QueryIndex, classify, index_of
from harness.surface import fold_surface
from tests.compaction.helpers import Builder
from tests.query.helpers import Compacted, compacted


@pytest.fixture(scope="module")
def case() -> Compacted:
    return compacted(0)


def test_current_is_exactly_the_surface_and_shadowed_exactly_what_replaces_took_out(case: Compacted) -> None:
    session = case.session
    index = index_of(session)
    classes = index.classifications()
    assert [seq for seq, c in enumerate(classes) if c == "current"] == sorted(session.surface.nodes)
    taken_out = {seq for r in fold_surface(session.events).replacements for seq in r.shadowed_seqs}
    assert {seq for seq, c in enumerate(classes) if c == "shadowed"} == taken_out
    for seq, c in enumerate(classes):  # every Surface event was a node once
        assert (c == "log-only") == (session.events[seq].type not in SURFACE_TYPES)
    assert index.counts() == {
        "current": len(session.surface.nodes),
        "shadowed": len(taken_out),
        "log-only": len(session.events) - len(session.surface.nodes) - len(taken_out),
    }
    assert classify(session) == classes


def test_a_compacted_span_is_shadowed_by_its_checkpoint_in_its_compaction(case: Compacted) -> None:
    index = index_of(case.session)
    first = case.first
    assert first.shadowed_seqs
    for seq in first.shadowed_seqs:
        record = index.record(seq)
        assert record.classification == "shadowed"
        assert record.shadowed_by == first.checkpoint_seq
        assert record.compaction_id == first.compaction_id
    bracket = index.bracket(first.compaction_id)
    assert bracket is not None and bracket.committed
    assert (bracket.start, bracket.summary, bracket.checkpoint, bracket.end) == (
        first.start_seq,
        first.summary_seq,
        first.checkpoint_seq,
        first.end_seq,
    )
    assert bracket.replaced == first.shadowed_seqs
    assert (bracket.replace_start, bracket.replace_end) == (first.shadowed_start, first.shadowed_end)
    assert bracket.turn is None and bracket.error is None


def test_a_checkpoint_compacted_again_is_shadowed_by_the_later_compaction(case: Compacted) -> None:
    index = index_of(case.session)
    record = index.record(case.first.checkpoint_seq)
    assert record.classification == "shadowed"
    assert record.shadowed_by == case.second.checkpoint_seq
    assert record.compaction_id == case.second.compaction_id
    assert index.record(case.second.checkpoint_seq).classification == "current"


def test_a_pruned_result_is_shadowed_by_its_replacement_outside_any_compaction(case: Compacted) -> None:
    index = index_of(case.session)
    record = index.record(case.pruned_original)
    assert record.classification == "shadowed"
    assert record.shadowed_by == case.pruned_replacement
    assert record.compaction_id is None
    assert index.prune_of(case.pruned_replacement) == case.pruned_replacement - 1
    assert index.compaction_of_replacement(case.pruned_replacement) is None


def test_log_only_events_and_bracket_events_are_log_only(case: Compacted) -> None:
    index = index_of(case.session)
    for seq, event in enumerate(case.session.events):
        if event.type.startswith(("turn/", "step/", "compaction/", "request/", "tool/call", "todo/")):
            assert index.classification(seq) == "log-only", (seq, event.type)


def test_a_failed_compaction_is_a_bracket_with_its_error_and_no_checkpoint(case: Compacted) -> None:
    index = index_of(case.session)
    failed = [b for b in index.brackets if b.error is not None]
    assert len(failed) == 1
    bracket = failed[0]
    assert bracket.start == case.failed_start and bracket.end is not None
    assert bracket.summary is None and bracket.checkpoint is None and not bracket.committed
    assert "model down" in (bracket.error or "")
    assert [b.compaction_id for b in index.brackets] == [
        case.first.compaction_id,
        case.second.compaction_id,
        bracket.compaction_id,
    ]


def test_turns_and_steps_are_recorded(case: Compacted) -> None:
    index = index_of(case.session)
    events = case.session.events
    assert index.turns and index.steps
    for span in index.turns:
        assert events[span.start].type == "turn/start"
        assert span.end is not None and events[span.end].type == "turn/end"
        assert events[span.start].data["turn"] == span.turn
    for span in index.steps:
        assert events[span.start].type == "step/start"
        assert events[span.start].data == {"turn": span.turn, "step": span.step}
    late = index.record(case.late_result)
    assert late.turn == events[case.late_result].data["turn"]
    assert late.step == events[case.late_result].data["step"]
    for bracket in index.brackets:  # manual compactions run between turns
        assert index.record(bracket.start or 0).turn is None


def test_an_unclosed_turn_runs_to_the_next_turn_start() -> None:
    builder = Builder().open("first")
    builder.say("partial")  # a crash: no step/end, no turn/end
    events = list(builder.session.events)
    index = QueryIndex(events)
    assert [(span.turn, span.start, span.end) for span in index.turns] == [(1, 0, None)]
    assert index.record(len(events) - 1).turn == 1 and index.record(len(events) - 1).step == 1


def test_an_index_is_kept_for_a_session_until_it_grows() -> None:
    builder = Builder().closed_turn("hello", "hi")
    session = builder.session
    first = index_of(session)
    assert index_of(session) is first
    builder.closed_turn("again", "hello again")
    second = index_of(session)
    assert second is not first and len(second) == len(session.events)


@pytest.mark.parametrize("seq", [-1, 10_000, True, "3", 2.0])
def test_a_seq_outside_the_log_is_event_not_found(case: Compacted, seq: object) -> None:
    index = index_of(case.session)
    with pytest.raises(EventNotFound) as raised:
        index.record(seq)  # type: ignore[arg-type]
    assert isinstance(raised.value, LookupError) and isinstance(raised.value, harness.QueryError)
    assert raised.value.length == len(case.session.events)


def test_an_empty_log_has_an_empty_index() -> None:
    index = QueryIndex([])
    assert len(index) == 0 and index.classifications() == () and index.brackets == ()
    with pytest.raises(EventNotFound, match="the log is empty"):
        index.record(0)


def test_an_index_refuses_a_log_that_breaks_a_surface_rule() -> None:
    """The fold reads a tool/result replacement's data (it must change only the inner content)
    even though it no longer decodes the data of any other event."""
    builder = Builder().open("go")
    _, ids = builder.calls_message([("run_shell", "{}")])
    original = builder.result(ids[0], "run_shell", "long output")
    events = list(builder.session.events)
    data = original.data
    changed = {**data, "turn": 99}  # more than the content changed
    forged = Event.create(
        "tool/result", len(events), 0, changed, Replace(original.seq, original.seq), (original.seq,)
    )
    with pytest.raises(harness.SurfaceRuleError, match="may change only content"):
        QueryIndex([*events, forged])
    fine = Event.create(
        "tool/result", len(events), 0, data, Replace(original.seq, original.seq), (original.seq,)
    )
    assert QueryIndex([*events, fine]).classification(original.seq) == "shadowed"

"""Selection (FORMAT §11.2) and explicit regions (§13 I.74)."""

from __future__ import annotations

import pytest

from harness.compaction import InvalidRegion, TokenMeter, check_region, compact, select_compactable_range
from tests.compaction.helpers import Builder, FixedSummarizer, long_session, run


def test_selection_is_head_anchored_and_keeps_a_tail_worth_retain_tokens() -> None:
    builder = long_session(turns=4)
    session = builder.session
    meter = TokenMeter()
    nodes = meter.measure(session).nodes
    tail = nodes[-1].tokens + nodes[-2].tokens
    region = select_compactable_range(session, tail, meter=meter)
    assert region is not None
    assert region.start == nodes[0].seq
    kept = nodes[len(region.seqs) :]
    assert sum(node.tokens for node in kept) >= tail
    assert region.seqs == tuple(node.seq for node in nodes[: len(region.seqs)])
    assert region.tokens == sum(node.tokens for node in nodes[: len(region.seqs)])


def test_zero_retain_keeps_only_the_last_balanced_unit() -> None:
    session = long_session(turns=3).session
    region = select_compactable_range(session, 0)
    assert region is not None
    nodes = list(session.surface.nodes)
    assert region.seqs == tuple(nodes[:-1])  # the last node (the final answer) stays


def test_the_cut_moves_headward_until_calls_and_results_balance() -> None:
    builder = Builder().open("first request " * 20)
    builder.say("first answer " * 20)
    builder.close()
    builder.open("second request")
    _, ids = builder.calls_message([("read_file", "{}"), ("run_shell", "{}")])
    builder.result(ids[0], "read_file", "one " * 50)
    last = builder.result(ids[1], "run_shell", "two " * 50)
    nodes = list(builder.session.surface.nodes)
    # Retaining just the last result would cut between the call and its results: the cut moves
    # back to before the assistant message that opened them.
    region = select_compactable_range(builder.session, 1)
    assert region is not None
    assert region.seqs == tuple(nodes[:3])  # user, answer, user
    assert last.seq not in region.seqs


def test_nothing_to_compact() -> None:
    builder = Builder()
    assert select_compactable_range(builder.session, 0) is None  # empty
    builder.open("only one message")
    assert select_compactable_range(builder.session, 0) is None  # a single node
    long_one = long_session(turns=2).session
    assert select_compactable_range(long_one, 10**9) is None  # the tail covers everything


def test_a_single_tool_pair_cannot_be_compacted() -> None:
    builder = Builder().open()
    _, ids = builder.calls_message([("run_shell", "{}")])
    builder.result(ids[0], "run_shell", "x" * 4000)
    assert select_compactable_range(builder.session, 0) is None


def test_negative_retain_is_refused() -> None:
    with pytest.raises(InvalidRegion):
        select_compactable_range(long_session(2).session, -1)


# ---- FORMAT §13 I.74 -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("which", "message"),
    [
        ("absent-start", "start seq 999 not found"),
        ("absent-end", "end seq 999 not found"),
        ("reversed", "is after end"),
        ("split-start", "splits a tool call"),
        ("split-end", "splits a tool call"),
    ],
)
def test_invalid_regions_are_refused_and_write_nothing(which: str, message: str) -> None:
    builder = Builder().open("request " * 30)
    _, ids = builder.calls_message([("run_shell", "{}")])
    builder.result(ids[0], "run_shell", "output " * 40)
    builder.next_step()
    builder.say("done " * 30)
    session = builder.session
    user, call, result, answer = session.surface.nodes
    start, end = {
        "absent-start": (999, answer),
        "absent-end": (user, 999),
        "reversed": (answer, user),
        "split-start": (result, answer),
        "split-end": (user, call),
    }[which]
    before = len(session.events)
    with pytest.raises(InvalidRegion, match=message):
        run(compact(session, start, end, FixedSummarizer()))
    assert len(session.events) == before
    with pytest.raises(InvalidRegion):
        check_region(TokenMeter().measure(session), start, end)


def test_an_explicit_balanced_region_may_sit_after_the_head() -> None:
    builder = long_session(turns=3)
    nodes = list(builder.session.surface.nodes)
    region = check_region(TokenMeter().measure(builder.session), nodes[4], nodes[7])
    assert region.seqs == tuple(nodes[4:8])

"""Trace (issue 13 item 1): sources and citations, chunks, tool call <-> result <-> approval, the
compaction that shadowed an event and what its checkpoint stands for, turn and step."""

from __future__ import annotations

import pytest

import harness
from harness.query import EventNotFound, index_of, trace
from tests.compaction.helpers import Builder
from tests.query.helpers import Compacted, compacted, streamed_turn


@pytest.fixture(scope="module")
def case() -> Compacted:
    return compacted(2)


def seq_of(session: harness.Session, kind: str, nth: int = 0) -> int:
    return [e.seq for e in session.events if e.type == kind][nth]


def test_an_assistant_message_cites_its_chunks_and_they_know_it() -> None:
    session = streamed_turn().session
    message = seq_of(session, "assistant/message")
    chunks = [e.seq for e in session.events if e.type == "assistant/chunk"]
    found = trace(session, message)
    assert found.sources == tuple(chunks) and found.chunks == tuple(chunks)
    for chunk in chunks:
        assert trace(session, chunk).cited_by == (message,)
        assert trace(session, chunk).record.classification == "log-only"


def test_a_tool_call_its_approval_and_its_result_form_one_chain_from_any_member() -> None:
    session = streamed_turn().session
    message = seq_of(session, "assistant/message")
    call = seq_of(session, "tool/call")
    asked = seq_of(session, "approval/asked")
    decided = seq_of(session, "approval/decided")
    result = seq_of(session, "tool/result")
    for member in (message, call, asked, decided, result):
        chains = trace(session, member).tools
        assert len(chains) == 1, member
        chain = chains[0]
        assert chain.call_id == "call-del" and chain.name == "run_shell"
        assert (chain.request, chain.call, chain.results) == (message, call, (result,))
        assert [(a.id, a.asked, a.decided, a.outcome) for a in chain.approvals] == [
            ("ap-1", asked, decided, "allowed-once")
        ]
        assert chain.seqs == (message, call, asked, decided, result)
    assert trace(session, result).sources == (call,)
    assert trace(session, call).cited_by == (result,)


def test_a_message_with_several_calls_has_one_chain_per_call(case: Compacted) -> None:
    session = case.session
    index = index_of(session)
    several = next(
        e.seq
        for e in session.events
        if e.type == "assistant/message"
        and sum(1 for b in e.data["message"]["content"] if b["type"] == "tool-call") > 1
    )
    chains = trace(index, several).tools
    assert len(chains) > 1 and len({c.call_id for c in chains}) == len(chains)
    for chain in chains:
        assert chain.request == several and chain.call is not None and len(chain.results) == 1
        assert session.events[chain.results[0]].source_event_seqs == (chain.call,)


def test_a_reused_call_id_opens_a_new_chain() -> None:
    builder = Builder().open("go")
    for _ in range(2):  # the assembler's call-<index> fallback repeats across steps
        message = harness.assistant_message(
            [harness.tool_call_block("call-0", "run_shell", "{}")], provider="p", model="m"
        )
        builder.session.append(
            "assistant/message",
            {"turn": 1, "step": builder.step, "message": message},
            surface_op="append",
            source_event_seqs=[],
        )
        builder.result("call-0", "run_shell", "ok")
        builder.next_step()
    session = builder.session
    first, second = (trace(session, seq_of(session, "tool/result", n)).tools[0] for n in (0, 1))
    assert first.request == seq_of(session, "assistant/message", 0)
    assert second.request == seq_of(session, "assistant/message", 1)
    assert first.results != second.results


def test_a_compacted_event_traces_to_its_bracket_and_what_the_checkpoint_stands_for(case: Compacted) -> None:
    first = case.first
    target = first.shadowed_seqs[0]
    found = trace(case.session, target)
    assert found.record.classification == "shadowed"
    assert found.replacement_chain[0] == first.checkpoint_seq
    bracket = found.shadowing
    assert bracket is not None and bracket.compaction_id == first.compaction_id
    assert bracket.seqs == (first.start_seq, first.summary_seq, first.checkpoint_seq, first.end_seq)
    assert bracket.replaced == first.shadowed_seqs and target in bracket.replaced
    assert found.prune is None and found.bracket is None
    assert first.checkpoint_seq in found.cited_by  # the checkpoint cites every node it replaced


def test_a_checkpoint_traces_to_its_own_bracket_replaced_nodes_and_later_compaction(case: Compacted) -> None:
    first, second = case.first, case.second
    found = trace(case.session, first.checkpoint_seq)
    assert found.bracket is not None and found.bracket.compaction_id == first.compaction_id
    assert found.replaced == first.shadowed_seqs
    assert found.sources == (first.start_seq, first.summary_seq, *first.shadowed_seqs)
    assert found.replacement_chain == (second.checkpoint_seq,)
    assert found.shadowing is not None and found.shadowing.compaction_id == second.compaction_id
    for seq in (first.start_seq, first.summary_seq, first.end_seq):
        own = trace(case.session, seq).bracket
        assert own is not None and own.compaction_id == first.compaction_id


def test_a_pruned_result_traces_through_its_prune_then_the_compaction(case: Compacted) -> None:
    found = trace(case.session, case.pruned_original)
    assert found.replacement_chain == (case.pruned_replacement, case.second.checkpoint_seq)
    assert found.prune == case.pruned_replacement - 1 and found.shadowing is None
    replacement = trace(case.session, case.pruned_replacement)
    assert replacement.replaced == (case.pruned_original,)
    assert replacement.sources == (case.pruned_original,)
    assert (
        replacement.shadowing is not None and replacement.shadowing.compaction_id == case.second.compaction_id
    )
    chain = replacement.tools[0]  # the pruned copy belongs to the original's tool chain
    assert chain.results == (case.pruned_original, case.pruned_replacement)
    assert trace(case.session, case.pruned_original).tools == replacement.tools


def test_a_failed_compaction_event_traces_to_its_bracket(case: Compacted) -> None:
    found = trace(case.session, case.failed_start)
    assert found.bracket is not None and found.bracket.error is not None and not found.bracket.committed


def test_turn_and_step_of_a_traced_event(case: Compacted) -> None:
    found = trace(case.session, case.late_result)
    data = case.session.events[case.late_result].data
    assert found.turn is not None and found.turn.turn == data["turn"]
    assert found.step is not None and (found.step.turn, found.step.step) == (data["turn"], data["step"])
    assert (
        found.turn.start
        <= found.step.start
        <= case.late_result
        <= (found.step.end or 0)
        <= (found.turn.end or 0)
    )
    between = trace(case.session, case.first.start_seq)
    assert between.turn is None and between.step is None


def test_a_trace_is_json(case: Compacted) -> None:
    body = trace(case.session, case.first.checkpoint_seq).to_json()
    assert body["record"]["classification"] == "shadowed"
    assert "event" not in body["record"]
    assert body["bracket"]["checkpoint"] == case.first.checkpoint_seq
    assert body["replacementChain"] == [case.second.checkpoint_seq]


def test_tracing_a_missing_seq_is_event_not_found(case: Compacted) -> None:
    with pytest.raises(EventNotFound):
        trace(case.session, len(case.session.events))

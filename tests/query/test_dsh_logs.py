"""harness.query over real logs written by DeepSeek Harness (../shared/fixtures/dsh): every event
classifies, traces and has a semantic text; dsh's compactions and tool calls are found."""

from __future__ import annotations

import pytest

from harness.query import EventFilter, event_text, filter_events, index_of, trace
from tests.test_fixtures_dsh import RAW_FILES, restore


@pytest.mark.parametrize("name", RAW_FILES)
def test_every_event_of_a_dsh_log_classifies_traces_and_has_text(name: str) -> None:
    session = restore(name)
    index = index_of(session)
    assert sorted(seq for seq, c in enumerate(index.classifications()) if c == "current") == sorted(
        session.surface.nodes
    )
    parts = [
        {r.seq for r in filter_events(index, EventFilter(classifications=(c,)))}
        for c in ("current", "shadowed", "log-only")
    ]
    assert set().union(*parts) == set(range(len(index))) and sum(map(len, parts)) == len(index)
    for event in session.events:
        found = trace(index, event.seq)
        assert found.seq == event.seq
        assert set(found.sources) == set(event.source_event_seqs or ())
        assert isinstance(event_text(event), str)
        for source in found.sources:
            assert event.seq in trace(index, source).cited_by


@pytest.mark.parametrize("name", ["03-manual-compact.jsonl", "03-auto-compaction.jsonl"])
def test_a_dsh_compaction_is_a_bracket_whose_checkpoint_shadows_its_span(name: str) -> None:
    session = restore(name)
    index = index_of(session)
    committed = [b for b in index.brackets if b.committed]
    assert committed
    for bracket in committed:
        assert bracket.start is not None and bracket.summary is not None and bracket.end is not None
        assert bracket.start < bracket.summary < (bracket.checkpoint or 0) < bracket.end
        for seq in bracket.replaced:
            record = index.record(seq)
            assert record.shadowed_by == bracket.checkpoint
            assert record.compaction_id == bracket.compaction_id


def test_a_dsh_tool_call_chains_its_message_stream_call_and_result() -> None:
    session = restore("02-tool-call.jsonl")
    index = index_of(session)
    results = [e.seq for e in session.events if e.type == "tool/result"]
    assert results
    chain = trace(index, results[0]).tools[0]
    assert chain.request is not None and chain.call is not None and chain.results[0] == results[0]
    request = trace(index, chain.request)
    assert request.chunks and all(session.events[s].type == "assistant/chunk" for s in request.chunks)
    assert session.events[chain.call].data["callId"] == chain.call_id
    texts = [event_text(session.events[s]) for s in (chain.request, chain.call, results[0])]
    assert all(texts)

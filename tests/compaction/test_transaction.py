"""The locked transaction (FORMAT §11.4, §13 I.75–81): events, errors by phase, durability."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import Any

import pytest

import harness
from harness.compaction import (
    PREAMBLE,
    CommitFailed,
    CompactionBusy,
    CompactionCancelled,
    CompactionChanged,
    CompactionError,
    CompactionPersistenceFailed,
    SummaryFailed,
    compact,
    error_chain,
    select_compactable_range,
)
from harness.errors import PersistenceFailed
from harness.session.session import Session
from tests.compaction.helpers import (
    BlockingSummarizer,
    Builder,
    FailingSummarizer,
    FixedSummarizer,
    Flushes,
    HookSummarizer,
    RefusingSession,
    compaction_events,
    long_session,
    new_session,
    run,
    types_after,
)


def open_long_session() -> Builder:
    """Closed turns, then an open turn (automatic compaction runs inside it)."""
    builder = long_session(turns=3)
    builder.open("and now the next thing")
    return builder


def head_range(session: Session) -> tuple[int, int]:
    region = select_compactable_range(session, 0)
    assert region is not None
    return region.start, region.end


def replay(session: Session) -> Session:
    return Session.from_restore(session.id, [event.to_json() for event in session.events], session.header)


# ---- I.75 success --------------------------------------------------------------------------


def test_success_writes_start_summary_checkpoint_end_and_replays_identically() -> None:
    builder = open_long_session()
    session = builder.session
    start, end = head_range(session)
    shadowed = list(session.surface.nodes)[: list(session.surface.nodes).index(end) + 1]
    before = len(session.events)
    generation = session.surface.replace_generation
    result = run(compact(session, start, end, FixedSummarizer("## Current Work\n- the summary")))
    assert types_after(session, before - 1) == [
        "compaction/start",
        "compaction/summary",
        "user/message",
        "compaction/end",
    ]
    start_event, summary_event, checkpoint, end_event = session.events[before:]
    assert (result.start_seq, result.summary_seq, result.checkpoint_seq, result.end_seq) == (
        start_event.seq,
        summary_event.seq,
        checkpoint.seq,
        end_event.seq,
    )
    assert start_event.data["turn"] == builder.turn and end_event.data["turn"] == builder.turn
    assert start_event.data["compactionId"] == end_event.data["compactionId"] == result.compaction_id
    assert "error" not in end_event.data
    summary = summary_event.data
    assert summary["summary"] == "## Current Work\n- the summary"
    assert summary["shadowedRange"] == {"start": start, "end": end}
    assert list(summary["shadowedSeqs"]) == shadowed
    assert summary["shadowedTokenCount"] == result.shadowed_tokens
    assert (summary["provider"], summary["model"]) == ("test", "fixed")
    assert checkpoint.surface_op == harness.Replace(start, end)
    assert checkpoint.source_event_seqs == (start_event.seq, summary_event.seq, *shadowed)
    # The checkpoint message: preamble + open tag, the summary blocks, the close tag.
    message = session.derive_messages()[0]
    texts = [block.raw["text"] for block in message.content]
    assert texts[0] == PREAMBLE + "\n\n<compacted-summary>"
    assert texts[1] == "## Current Work\n- the summary"
    assert texts[-1] == "</compacted-summary>"
    assert message.raw["source"] == {
        "kind": "plugin",
        "plugin": "compact",
        "compactionId": result.compaction_id,
    }
    assert session.surface.replace_generation == generation + 1
    assert session.surface.nodes[0] == checkpoint.seq
    # Replay of the compacted log gives the same model history; nothing was deleted.
    restored = replay(session)
    assert [m.raw for m in restored.derive_messages()] == [m.raw for m in session.derive_messages()]
    assert [e.to_json() for e in restored.events[: len(session.events)]] == [
        e.to_json() for e in session.events
    ]


def test_source_command_id_is_carried_on_every_event_and_the_source() -> None:
    session = open_long_session().session
    start, end = head_range(session)
    result = run(compact(session, start, end, FixedSummarizer(), source_command_id="cmd-7"))
    for event in compaction_events(session):
        assert event.data["sourceCommandId"] == "cmd-7"
    checkpoint = session.events[result.checkpoint_seq].data
    assert checkpoint["source"]["sourceCommandId"] == "cmd-7"


def test_the_summarizer_gets_the_shadowed_messages_and_the_header() -> None:
    session = open_long_session().session
    start, end = head_range(session)
    summarizer = FixedSummarizer()
    run(compact(session, start, end, summarizer))
    request = summarizer.requests[0]
    expected = [session.events[seq].data for seq in request.seqs]
    assert len(request.messages) == len(request.seqs)
    assert request.messages[0].raw == expected[0]
    assert request.header is not None and request.header.model == "deepseek-v4-flash"


def test_a_second_compaction_replaces_the_first_checkpoint() -> None:
    builder = open_long_session()
    session = builder.session
    run(compact(session, *head_range(session), FixedSummarizer("first")))
    builder.say("more work " * 200)
    builder.next_step()
    builder.say("even more " * 200)
    second = run(compact(session, *head_range(session), FixedSummarizer("second")))
    sources = session.events[second.checkpoint_seq].source_event_seqs
    assert sources is not None and second.shadowed_start == sources[2]
    assert session.derive_messages()[0].content[1].raw["text"] == "second"
    assert session.surface.replace_generation == 2


# ---- I.76 summarizer failures --------------------------------------------------------------


@pytest.mark.parametrize(
    ("error", "recorded"),
    [
        (RuntimeError("summary unavailable"), "summary unavailable"),
        (Exception("plain failure"), "plain failure"),
        (ValueError(""), "ValueError"),
    ],
)
def test_summarizer_failure_leaves_the_surface_and_records_the_error(error: Exception, recorded: str) -> None:
    session = open_long_session().session
    nodes = list(session.surface.nodes)
    before = len(session.events)
    with pytest.raises(SummaryFailed) as raised:
        run(compact(session, *head_range(session), FailingSummarizer(error)))
    assert raised.value.code == "summary"
    assert raised.value.__cause__ is error
    assert list(session.surface.nodes) == nodes
    assert types_after(session, before - 1) == ["compaction/start", "compaction/end"]
    assert session.events[-1].data["error"] == recorded


def test_the_error_chain_joins_causes() -> None:
    try:
        try:
            raise OSError("socket closed")
        except OSError as inner:
            raise RuntimeError("summary unavailable") from inner
    except RuntimeError as outer:
        assert error_chain(outer) == "summary unavailable: socket closed"
    session = open_long_session().session
    wrapped = RuntimeError("summary unavailable")
    wrapped.__cause__ = OSError("socket closed")
    with pytest.raises(SummaryFailed):
        run(compact(session, *head_range(session), FailingSummarizer(wrapped)))
    assert session.events[-1].data["error"] == "summary unavailable: socket closed"


# ---- I.77 concurrency ----------------------------------------------------------------------


def test_a_concurrent_log_only_append_is_tolerated() -> None:
    session = open_long_session().session

    def hook(s: Session) -> None:
        s.append("todo/write", {"todos": [{"content": "x", "status": "pending"}]})

    result = run(compact(session, *head_range(session), HookSummarizer(hook)))
    assert session.events[result.start_seq + 1].type == "todo/write"
    assert session.events[-1].type == "compaction/end" and "error" not in session.events[-1].data


def test_a_concurrent_surface_append_fails_automatic_compaction() -> None:
    builder = open_long_session()
    session = builder.session

    def hook(s: Session) -> None:
        builder.user("a message that arrived meanwhile")

    before = len(session.events)
    with pytest.raises(CompactionChanged, match="session surface changed"):
        run(compact(session, *head_range(session), HookSummarizer(hook)))
    new_types = types_after(session, before - 1)
    assert "compaction/summary" not in new_types
    assert new_types == ["compaction/start", "user/message", "compaction/end"]
    assert "session surface changed" in session.events[-1].data["error"]


# ---- I.78 not smaller ----------------------------------------------------------------------


def test_a_summary_that_does_not_shrink_is_refused() -> None:
    builder = Builder().open("tiny")
    builder.say("small")
    builder.next_step()
    builder.say("x")
    session = builder.session
    nodes = list(session.surface.nodes)
    with pytest.raises(SummaryFailed, match="summary is not smaller") as raised:
        run(compact(session, nodes[0], nodes[1], FixedSummarizer("a summary longer than what it replaces")))
    assert raised.value.reason == "NOT_SMALLER"
    assert not any(e.type == "compaction/summary" for e in session.events)
    assert "summary is not smaller" in session.events[-1].data["error"]
    assert list(session.surface.nodes) == nodes


# ---- the lock ------------------------------------------------------------------------------


def test_a_live_unmatched_start_blocks_and_a_stale_one_does_not() -> None:
    builder = open_long_session()
    session = builder.session
    session.append("compaction/start", {"compactionId": "orphan", "turn": builder.turn})
    before = len(session.events)
    with pytest.raises(CompactionBusy, match="already active"):
        run(compact(session, *head_range(session), FixedSummarizer()))
    assert len(session.events) == before
    # After a restore (new end-seed) the orphan is stale history.
    restored = replay(session)
    assert restored.events[-1].type == "session/end-seed"
    restored.append("turn/start", {"turn": builder.turn + 1})
    run(compact(restored, *head_range(restored), FixedSummarizer()))
    assert restored.events[-1].type == "compaction/end"


def test_automatic_needs_an_open_turn_and_manual_needs_none() -> None:
    builder = long_session(turns=2)
    session = builder.session
    with pytest.raises(CompactionError, match="no open turn") as raised:
        run(compact(session, *head_range(session), FixedSummarizer()))
    assert raised.value.code == "state"
    builder.open("x")
    with pytest.raises(CompactionBusy, match="turn 3 is open"):
        run(compact(session, *head_range(session), FixedSummarizer(), mode="manual"))
    assert not compaction_events(session)


# ---- I.81 manual, durability ---------------------------------------------------------------


def test_manual_success_is_turn_null_and_flushed_after_the_start_and_after_the_end() -> None:
    session = long_session(turns=3).session
    turns_before = sum(1 for e in session.events if e.type == "turn/start")
    flushes = Flushes()
    result = run(compact(session, *head_range(session), FixedSummarizer(), mode="manual", checkpoint=flushes))
    assert result.turn is None
    start, end = session.events[result.start_seq], session.events[result.end_seq]
    assert start.data["turn"] is None and end.data["turn"] is None
    assert sum(1 for e in session.events if e.type == "turn/start") == turns_before
    # The lock is durable before summarizing; the whole bracket is durable on return.
    assert flushes.lengths == [result.start_seq + 1, result.end_seq + 1]


def test_manual_span_replaced_mid_summary_is_changed_and_still_flushed() -> None:
    session = long_session(turns=3).session
    start, end = head_range(session)

    def replace_span(s: Session) -> None:
        nodes = list(s.surface.nodes)
        s.append(
            "user/message",
            harness.user_message("other"),
            surface_op=harness.Replace(nodes[0], nodes[1]),
            source_event_seqs=nodes[:2],
        )

    flushes = Flushes()
    with pytest.raises(CompactionChanged) as raised:
        run(compact(session, start, end, HookSummarizer(replace_span), mode="manual", checkpoint=flushes))
    assert raised.value.code == "changed"
    bracket = compaction_events(session)
    assert [e.type for e in bracket] == ["compaction/start", "compaction/end"]
    assert "error" in bracket[-1].data
    assert flushes.lengths[-1] == len(session.events)


def test_manual_tolerates_appends_outside_the_span() -> None:
    builder = long_session(turns=3)
    session = builder.session

    def inject(s: Session) -> None:
        s.append("user/message", harness.user_message("injected context"), surface_op="append")

    result = run(compact(session, *head_range(session), HookSummarizer(inject), mode="manual"))
    messages = session.derive_messages()
    assert messages[-1].text == "injected context"  # kept after the checkpoint
    assert result.checkpoint_seq == session.surface.nodes[0]


def test_a_turn_boundary_inside_the_bracket_is_a_change() -> None:
    builder = long_session(turns=2)

    def start_turn(s: Session) -> None:
        s.append("turn/start", {"turn": 99})

    with pytest.raises(CompactionChanged, match="turn boundary"):
        run(compact(builder.session, *head_range(builder.session), HookSummarizer(start_turn), mode="manual"))


def test_a_failed_lock_flush_closes_the_bracket_and_raises_persistence() -> None:
    session = long_session(turns=2).session
    flushes = Flushes(fail_at={1})
    summarizer = FixedSummarizer()
    with pytest.raises(CompactionPersistenceFailed) as raised:
        run(compact(session, *head_range(session), summarizer, mode="manual", checkpoint=flushes))
    assert isinstance(raised.value, PersistenceFailed) and raised.value.code == "persistence"
    assert summarizer.requests == []  # nothing was summarized without a durable lock
    assert [e.type for e in compaction_events(session)] == ["compaction/start", "compaction/end"]
    assert "could not be made durable" in session.events[-1].data["error"]


def test_a_failed_final_flush_is_persistence_but_the_compaction_is_committed() -> None:
    session = long_session(turns=2).session
    flushes = Flushes(fail_at={2})
    with pytest.raises(CompactionPersistenceFailed, match="committed in memory"):
        run(compact(session, *head_range(session), FixedSummarizer(), mode="manual", checkpoint=flushes))
    assert [e.type for e in compaction_events(session)] == [
        "compaction/start",
        "compaction/summary",
        "compaction/end",
    ]
    assert session.surface.replace_generation == 1


def refusing_open_session(refuse: Callable[[str, Any], bool]) -> Session:
    session = new_session(kind=RefusingSession)
    builder = long_session(turns=3, session=session)
    builder.open("and now the next thing")
    assert isinstance(session, RefusingSession)
    session.refuse = refuse
    return session


def test_a_refused_checkpoint_append_is_commit_failed() -> None:
    def checkpoint_message(kind: str, data: Any) -> bool:
        source = data.get("source") if isinstance(data, Mapping) else None
        return kind == "user/message" and isinstance(source, Mapping) and source.get("plugin") == "compact"

    session = refusing_open_session(checkpoint_message)
    with pytest.raises(CommitFailed, match="could not be committed") as raised:
        run(compact(session, *head_range(session), FixedSummarizer()))
    assert raised.value.code == "commit"
    # The summary landed, the checkpoint did not: the commit phase is neutral about that.
    assert [e.type for e in compaction_events(session)] == [
        "compaction/start",
        "compaction/summary",
        "compaction/end",
    ]
    assert "refused for the test" in session.events[-1].data["error"]
    assert session.surface.replace_generation == 0


def test_an_end_that_cannot_be_appended_leaves_the_lock_held() -> None:
    session = refusing_open_session(lambda kind, data: kind == "compaction/end")
    flushes = Flushes()
    with pytest.raises(CommitFailed, match="lock stays held"):
        run(
            compact(
                session, *head_range(session), FailingSummarizer(RuntimeError("boom")), checkpoint=flushes
            )
        )
    assert flushes.lengths == [len(session.events)]  # only the lock's flush; none after the failure
    assert session.events[-1].type == "compaction/start"
    with pytest.raises(CompactionBusy):
        run(compact(session, *head_range(session), FixedSummarizer()))


# ---- cancellation --------------------------------------------------------------------------


def test_cancel_during_summary_closes_flushes_then_raises_cancelled() -> None:
    session = long_session(turns=2).session
    summarizer = BlockingSummarizer()
    cancel = asyncio.Event()
    flushes = Flushes()

    async def scenario() -> None:
        work = asyncio.ensure_future(
            compact(
                session, *head_range(session), summarizer, mode="manual", checkpoint=flushes, cancel=cancel
            )
        )
        await summarizer.started.wait()
        cancel.set()
        with pytest.raises(CompactionCancelled) as raised:
            await work
        assert raised.value.code == "cancelled"

    run(scenario())
    assert summarizer.cancelled
    assert [e.type for e in compaction_events(session)] == ["compaction/start", "compaction/end"]
    assert session.events[-1].data["error"] == "compaction cancelled"
    assert flushes.lengths == [len(session.events) - 1, len(session.events)]


def test_cancel_wins_over_a_concurrent_failure() -> None:
    session = long_session(turns=2).session
    cancel = asyncio.Event()

    def cancel_and_change(s: Session) -> None:
        cancel.set()

    with pytest.raises(CompactionCancelled):
        run(
            compact(
                session, *head_range(session), HookSummarizer(cancel_and_change), mode="manual", cancel=cancel
            )
        )
    assert not any(e.type == "compaction/summary" for e in session.events)


def test_a_cancel_set_before_the_start_writes_nothing() -> None:
    session = long_session(turns=2).session
    cancel = asyncio.Event()
    cancel.set()
    before = len(session.events)
    with pytest.raises(CompactionCancelled):
        run(compact(session, *head_range(session), FixedSummarizer(), mode="manual", cancel=cancel))
    assert len(session.events) == before


def test_task_cancellation_closes_the_bracket_and_propagates() -> None:
    session = long_session(turns=2).session
    summarizer = BlockingSummarizer()
    flushes = Flushes()

    async def scenario() -> None:
        work = asyncio.ensure_future(
            compact(session, *head_range(session), summarizer, mode="manual", checkpoint=flushes)
        )
        await summarizer.started.wait()
        work.cancel()
        with pytest.raises(asyncio.CancelledError):
            await work

    run(scenario())
    assert session.events[-1].type == "compaction/end"
    assert session.events[-1].data["error"] == "compaction cancelled by the caller"
    assert flushes.lengths[-1] == len(session.events)

"""Sessions with real compactions, prunes, streams and approvals for the query tests."""

from __future__ import annotations

from dataclasses import dataclass

import harness
from harness.compaction import (
    CompactionResult,
    ExtractiveSummarizer,
    PrunerConfig,
    compact_now,
    generate_session,
    prune_tool_results,
)
from harness.session.session import Session
from tests.compaction.helpers import MODEL, PROVIDER, Builder, FailingSummarizer, FixedSummarizer, run

__all__ = ["Compacted", "compacted", "streamed_turn"]

SECRET = "the launch code is ZEBRA-4471"


@dataclass
class Compacted:
    """A generated session compacted twice (the second compaction shadows the first checkpoint),
    with a pruned tool result in between and a failed compaction after."""

    session: Session
    first: CompactionResult
    second: CompactionResult
    pruned_original: int
    pruned_replacement: int
    failed_start: int
    late_result: int


def compacted(seed: int = 0) -> Compacted:
    session = generate_session(seed, filler_turns=3, file_lines=60).session
    first = run(compact_now(session, ExtractiveSummarizer(), retain_tokens=400))
    assert first is not None
    builder = Builder(session)
    builder.turn = 100  # turn numbers well after the generated ones
    builder.headed = True
    builder.open(f"Remember: {SECRET}. Now list the files.")
    builder.tool("run_shell", '{"command": "ls"}', "file\n" * 200)
    original = session.events[-3]  # tool, result, step/end, step/start: the result is before them
    assert original.type == "tool/result", original.type
    builder.say("Done listing.")
    builder.close()
    replacements = prune_tool_results(
        session, PrunerConfig(threshold_chars=200, head_chars=50, tail_chars=50)
    )
    pruned = next(seq for seq in replacements if session.events[seq].source_event_seqs == (original.seq,))
    builder.closed_turn("One more question about the files.", "All fine.", tools=1)
    second = run(
        compact_now(session, FixedSummarizer("## Primary Request\n- condensed twice"), retain_tokens=0)
    )
    assert second is not None
    failed = len(session.events)
    builder.closed_turn("Last request.", "Last answer.", tools=1)
    try:
        run(compact_now(session, FailingSummarizer(RuntimeError("model down")), retain_tokens=0))
    except harness.CompactionError:
        pass
    else:  # pragma: no cover - the summarizer always fails
        raise AssertionError("the failing compaction succeeded")
    failed_start = next(e.seq for e in session.events[failed:] if e.type == "compaction/start")
    late = next(e.seq for e in reversed(session.events) if e.type == "tool/result")
    return Compacted(session, first, second, original.seq, pruned, failed_start, late)


def streamed_turn(session: Session | None = None) -> Builder:
    """A turn whose assistant message cites its stream chunks, with an approved tool call."""
    builder = Builder(session)
    builder.open("Please delete the temp files")
    s = builder.session
    chunks = [
        s.append(
            "assistant/chunk",
            {
                "turn": builder.turn,
                "step": builder.step,
                "chunk": {"type": "text-delta", "index": 0, "text": t},
            },
        )
        for t in ("I will ", "clean up.")
    ]
    call_block = harness.tool_call_block("call-del", "run_shell", '{"command": "rm -rf /tmp/x"}')
    message = harness.assistant_message(
        [
            harness.reasoning_block("The user wants a cleanup."),
            harness.text_block("I will clean up."),
            call_block,
        ],
        provider=PROVIDER,
        model=MODEL,
    )
    s.append(
        "assistant/message",
        {"turn": builder.turn, "step": builder.step, "message": message},
        surface_op="append",
        source_event_seqs=[chunk.seq for chunk in chunks],
    )
    call = s.append(
        "tool/call",
        {
            "turn": builder.turn,
            "step": builder.step,
            "callId": "call-del",
            "name": "run_shell",
            "arguments": '{"command": "rm -rf /tmp/x"}',
        },
    )
    s.append(
        "approval/asked", {"id": "ap-1", "toolName": "run_shell", "callId": "call-del", "reason": "deletes"}
    )
    s.append("approval/decided", {"id": "ap-1", "outcome": "allowed-once"})
    result = harness.tool_result_message("call-del", "removed 3 files")
    s.append(
        "tool/result",
        {"turn": builder.turn, "step": builder.step, "message": result},
        surface_op="append",
        source_event_seqs=[call.seq],
    )
    builder.next_step()
    builder.say("Cleaned.")
    return builder.close()

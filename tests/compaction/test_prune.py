"""The tool-result pruner (FORMAT §11.7, §13 I.84)."""

from __future__ import annotations

import pytest

import harness
from harness.compaction import PRUNE_MARKER, CompactionConfigError, PrunerConfig, prune_tool_results
from harness.compaction.meter import price_node
from harness.compaction.prune import prune_content
from harness.events.json import thaw
from tests.compaction.helpers import Builder


def test_config_must_fit_head_marker_and_tail_in_the_threshold() -> None:
    assert len(PRUNE_MARKER) == 39
    with pytest.raises(CompactionConfigError):
        PrunerConfig(threshold_chars=50, head_chars=20, tail_chars=20)
    PrunerConfig(threshold_chars=59, head_chars=10, tail_chars=10)
    assert PrunerConfig() == PrunerConfig(threshold_chars=8192, head_chars=4096, tail_chars=1024)


def test_emoji_are_cut_by_code_points() -> None:
    config = PrunerConfig(threshold_chars=50, head_chars=4, tail_chars=3)
    pruned = prune_content([{"type": "text", "text": "😀" * 60}], config)
    assert pruned == [{"type": "text", "text": "😀" * 4 + PRUNE_MARKER + "😀" * 3}]


def test_text_within_the_threshold_is_left_alone() -> None:
    assert (
        prune_content(
            [{"type": "text", "text": "x" * 50}], PrunerConfig(threshold_chars=50, head_chars=5, tail_chars=5)
        )
        is None
    )


def test_blocks_keep_their_places_and_emptied_text_blocks_go() -> None:
    config = PrunerConfig(threshold_chars=50, head_chars=5, tail_chars=5)
    image = {
        "type": "image",
        "attachment": {"attachmentId": "a", "mediaType": "image/png", "bytes": 1, "width": 1, "height": 1},
    }
    blocks = [
        {"type": "text", "text": "abc"},
        image,
        {"type": "text", "text": "defgh" + "m" * 60},
        {"type": "text", "text": "z" * 30},
        {"type": "text", "text": "uvwxy"},
    ]
    pruned = prune_content(blocks, config)
    assert pruned == [
        {"type": "text", "text": "abc"},
        image,
        {"type": "text", "text": "de" + PRUNE_MARKER},
        {"type": "text", "text": "uvwxy"},
    ]


def test_pruning_writes_prune_then_replacement_and_is_idempotent() -> None:
    builder = Builder().open("run it")
    _, ids = builder.calls_message([("run_shell", "{}")])
    call = builder.session.append(
        "tool/call", {"turn": 1, "step": 1, "callId": ids[0], "name": "run_shell", "arguments": "{}"}
    )
    message = harness.tool_result_message(ids[0], "y" * 100, is_error=True)
    original = builder.session.append(
        "tool/result",
        {
            "turn": 1,
            "step": 1,
            "message": message,
            "error": {"name": "ToolError", "code": "EXIT_1"},
            "meta": {"exit": 1},
            "extra": [1, 2],
        },
        surface_op="append",
        source_event_seqs=[call.seq],
    )
    session = builder.session
    config = PrunerConfig(threshold_chars=60, head_chars=10, tail_chars=10)
    replaced = prune_tool_results(session, config)
    assert len(replaced) == 1
    prune, replacement = session.events[-2], session.events[-1]
    assert prune.type == "compaction/prune" and replacement.seq == prune.seq + 1
    assert prune.data == {
        "shadowedRange": {"start": original.seq, "end": original.seq},
        "shadowedSeqs": [original.seq],
        "shadowedTokenCount": price_node(original),
    }
    assert replacement.surface_op == harness.Replace(original.seq, original.seq)
    assert replacement.source_event_seqs == (original.seq,)
    data = thaw(replacement.data)
    old = thaw(original.data)
    assert data["message"]["id"] == old["message"]["id"]
    assert data["error"] == old["error"] and data["meta"] == old["meta"] and data["extra"] == [1, 2]
    block = data["message"]["content"][0]
    assert block["isError"] is True and block["toolCallId"] == ids[0]
    assert block["content"] == [{"type": "text", "text": "y" * 10 + PRUNE_MARKER + "y" * 10}]
    before = len(session.events)
    assert prune_tool_results(session, config) == []
    assert len(session.events) == before

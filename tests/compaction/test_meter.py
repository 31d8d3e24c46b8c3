"""The token meter (FORMAT §11.1): node prices, the header price, and calibrated pressure."""

from __future__ import annotations

import harness
from harness.compaction.meter import (
    TokenMeter,
    price_blocks,
    price_header,
    price_message,
    price_node,
    utf16_len,
)
from harness.events.json import dumps
from harness.messages.model import TokenUsage
from harness.messages.request import EpochHeader
from tests.compaction.helpers import TOOLS, Builder


def test_block_prices_follow_the_heuristic() -> None:
    assert price_blocks([{"type": "text", "text": "abcde"}]) == 2 + 4  # ceil(5/4) + 4
    assert price_blocks([{"type": "reasoning", "text": ""}]) == 4
    call = {"type": "tool-call", "id": "c", "name": "bash", "arguments": '{"cmd":"ls -la"}'}
    assert price_blocks([call]) == 1 + 4 + 4  # ceil(4/4) + ceil(16/4) + 4
    inner = [{"type": "text", "text": "x" * 9}]
    assert price_blocks([{"type": "tool-result", "toolCallId": "c", "content": inner}]) == (3 + 4) + 4
    unknown = {"type": "future", "v": 1}
    assert price_blocks([unknown]) == 4 + -(-len('{"type":"future","v":1}') // 4)
    image = {"type": "image", "attachment": {"width": 1024, "height": 600, "mediaType": "image/png"}}
    assert price_blocks([image]) == 85 + 2 * 2 * 170 + 4


def test_lengths_are_utf16_code_units() -> None:
    assert utf16_len("abc") == 3
    assert utf16_len("é") == 1
    assert utf16_len("😀") == 2  # one code point, a surrogate pair
    assert price_blocks([{"type": "text", "text": "😀" * 2}]) == 1 + 4


def test_message_node_and_header_prices() -> None:
    message = harness.user_message("abcd")
    assert price_message(message) == (1 + 4) + 4
    builder = Builder().open("abcd")
    message = harness.assistant_message([], provider="p", model="m")
    empty = builder.session.append(
        "assistant/message",
        {"turn": 1, "step": 1, "message": message},
        surface_op="append",
        source_event_seqs=[],
    )
    assert price_node(empty) == 0  # projects nothing
    turn_start = builder.session.events[0]
    assert price_node(turn_start) == 0
    header = EpochHeader.build(provider="p", model="m", system="s" * 10, tools=TOOLS)
    tools_json = dumps(TOOLS).decode()
    assert price_header(header) == (3 + 4) + (-(-len(tools_json) // 4) + 4)
    assert price_header(None) == 0


def test_pressure_is_estimated_without_usage() -> None:
    builder = Builder().open("hello there")
    builder.say("hi")
    meter = TokenMeter()
    reading = meter.measure(builder.session)
    assert reading.baseline == "estimated"
    assert reading.surface_tokens == sum(node.tokens for node in reading.nodes)
    assert reading.total == reading.header_tokens + reading.surface_tokens


def test_pressure_is_calibrated_by_provider_usage_and_tracks_later_changes() -> None:
    builder = Builder().open("hello there")
    usage = TokenUsage(input_tokens=5000, output_tokens=300, cache_read_tokens=700)
    builder.say("hi", usage=usage)
    meter = TokenMeter()
    first = meter.measure(builder.session)
    assert first.baseline == "usage"
    assert first.total == 6000
    builder.user("x" * 400)  # +108 tokens on the surface (100 + block 4 + role 4)
    second = meter.measure(builder.session)
    assert second.total == 6000 + 108
    # A replace that shrinks the surface gives a negative delta.
    nodes = list(builder.session.surface.nodes)
    builder.session.append(
        "user/message",
        harness.user_message("short"),
        surface_op=harness.Replace(nodes[0], nodes[-1]),
        source_event_seqs=nodes,
    )
    third = meter.measure(builder.session)
    assert third.total == 6000 + (third.surface_tokens - first.surface_tokens)
    assert third.total < first.total


def test_usage_below_the_heuristic_anchor_is_not_trusted() -> None:
    builder = Builder().open("hello " * 100)
    builder.say("hi", usage=TokenUsage(input_tokens=1, output_tokens=1))
    reading = TokenMeter().measure(builder.session)
    assert reading.baseline == "estimated"
    assert reading.total == reading.header_tokens + reading.surface_tokens


def test_a_changed_header_falls_back_to_the_full_estimate() -> None:
    builder = Builder().open("hello there")
    builder.say("hi", usage=TokenUsage(input_tokens=9000, output_tokens=10))
    other = EpochHeader.build(provider="p", model="other-model", system="different")
    reading = TokenMeter().measure(builder.session, other)
    assert reading.baseline == "estimated"
    assert reading.total == price_header(other) + reading.surface_tokens


def test_incremental_fold_matches_a_fresh_one() -> None:
    builder = Builder()
    meter = TokenMeter()
    for index in range(5):
        builder.closed_turn(f"question {index} " * 20, f"answer {index} " * 30, tools=2)
        meter.measure(builder.session)  # fold part of the way
    assert meter.measure(builder.session) == TokenMeter().measure(builder.session)
    assert [node.seq for node in meter.nodes(builder.session)] == list(builder.session.surface.nodes)


def test_empty_session_has_no_pressure() -> None:
    reading = TokenMeter().measure(harness.Session.create())
    assert (reading.total, reading.baseline, reading.nodes) == (0, "none", ())

"""Properties over random sessions: compaction never splits a tool pair, replay gives the same
messages, and the log still holds every original event."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.compaction import ExtractiveSummarizer, TokenMeter, compact, select_compactable_range
from harness.compaction.transaction import Mode
from harness.errors import SummaryFailed
from harness.session.session import Session
from harness.surface.fold import fold_surface
from tests.compaction.helpers import Builder, FixedSummarizer, run

# A turn: (prompt words, steps: each a list of tool output sizes, answer words).
turn_spec = st.tuples(
    st.integers(1, 60),
    st.lists(st.lists(st.integers(0, 400), min_size=1, max_size=3), max_size=3),
    st.integers(0, 60),
)
session_spec = st.lists(turn_spec, min_size=1, max_size=6)


def build(builder: Builder, turns: list[tuple[int, list[list[int]], int]], *, leave_open: bool) -> None:
    for index, (prompt, steps, answer) in enumerate(turns):
        builder.open("ask " * prompt)
        for sizes in steps:
            _, ids = builder.calls_message([("run_shell", f'{{"n": {size}}}') for size in sizes])
            for call_id, size in zip(ids, sizes, strict=True):
                builder.result(call_id, "run_shell", "o" * size)
            builder.session.append("todo/write", {"todos": [{"content": f"t{index}", "status": "pending"}]})
            builder.next_step()
        if answer:
            builder.say("answer " * answer)
        if not (leave_open and index == len(turns) - 1):
            builder.close()


def pairs(session: Session, seqs: list[int]) -> list[tuple[int, int]]:
    """(assistant seq, result seq) of every call answered among ``seqs``."""
    calls: dict[str, int] = {}
    out: list[tuple[int, int]] = []
    for seq in seqs:
        event = session.events[seq]
        data = event.data
        if event.type == "assistant/message":
            for block in data["message"]["content"]:
                if isinstance(block, Mapping) and block.get("type") == "tool-call":
                    calls[block["id"]] = seq
        elif event.type == "tool/result":
            call_id = data["message"]["content"][0]["toolCallId"]
            out.append((calls[call_id], seq))
    return out


def messages(session: Session) -> list[Any]:
    return [message.raw for message in session.derive_messages()]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(first=session_spec, second=session_spec, retain=st.integers(0, 600), extractive=st.booleans())
def test_compaction_keeps_pairs_replays_identically_and_deletes_nothing(
    first: list[tuple[int, list[list[int]], int]],
    second: list[tuple[int, list[list[int]], int]],
    retain: int,
    extractive: bool,
) -> None:
    builder = Builder()
    session = builder.session
    meter = TokenMeter()
    summarizer = ExtractiveSummarizer() if extractive else FixedSummarizer("s")
    for round_index, turns in enumerate((first, second)):
        build(builder, turns, leave_open=round_index == 1)
        all_pairs = pairs(session, list(session.surface.nodes))
        original = [event.to_json() for event in session.events]
        region = select_compactable_range(session, retain, meter=meter)
        if region is None:
            continue
        shadowed = set(region.seqs)
        for call_seq, result_seq in all_pairs:
            assert (call_seq in shadowed) == (result_seq in shadowed), "a tool pair was split"
        mode: Mode = "automatic" if round_index == 1 else "manual"
        try:
            run(compact(session, region.start, region.end, summarizer, mode=mode, meter=meter))
        except SummaryFailed as error:
            assert error.reason == "NOT_SMALLER"
        # Nothing was deleted or rewritten.
        assert [event.to_json() for event in session.events[: len(original)]] == original
        # The surviving pairs are still whole on the Surface.
        nodes = list(session.surface.nodes)
        live = set(nodes)
        for call_seq, result_seq in pairs(
            session, [n for n in nodes if session.events[n].type != "user/message"]
        ):
            assert call_seq in live and result_seq in live
        # Replay of the compacted log gives identical messages and the same Surface.
        restored = Session.from_restore(session.id, [e.to_json() for e in session.events], session.header)
        assert messages(restored) == messages(session)
        assert list(restored.surface.nodes) == nodes
        assert fold_surface(session.events).nodes == tuple(nodes)
        assert meter.measure(session) == TokenMeter().measure(session)

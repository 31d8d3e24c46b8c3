"""Packed chunk rows: the byte-matching fast path agrees with the decoding path (FORMAT §9.2).

``pack_records`` recognises the spellings harness writes by matching the data's
bytes and decodes anything else. Whatever the spelling, expanding the rows must
give back exactly the events packed, and for canonical spellings the two paths
must write the same bytes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.events import packed
from harness.events.event import Event
from harness.events.json import dumps, loads
from harness.events.packed import expand_row, is_packed_row, pack_records


@contextmanager
def decoding_only() -> Iterator[None]:
    """Make the byte patterns match nothing, so every event takes the decoding path."""
    saved = packed._TEXT_SHAPE, packed._TOOL_SHAPE
    never = re.compile(rb"(?!)")
    setattr(packed, "_TEXT_SHAPE", never)  # noqa: B010 (a Final name, swapped for the test)
    setattr(packed, "_TOOL_SHAPE", never)  # noqa: B010
    try:
        yield
    finally:
        setattr(packed, "_TEXT_SHAPE", saved[0])  # noqa: B010
        setattr(packed, "_TOOL_SHAPE", saved[1])  # noqa: B010


def expanded(records: list[tuple[int, str, int, bytes]]) -> list[Any]:
    out: list[Any] = []
    for _, _, _, line in records:
        obj = loads(line)
        out.extend(expand_row(obj) if is_packed_row(obj) else [obj])
    return out


def wire(events: list[Event]) -> list[Any]:
    return [loads(event.encode()) for event in events]


texts = st.text(alphabet=st.characters(codec="utf-8"), max_size=12) | st.sampled_from(
    ['"', "\\", "\n", "\u2028", "é", "\x00", "a\"b\\c", "\ud83d\ude00"]
)
numbers = st.integers(min_value=0, max_value=3) | st.sampled_from([10**15 - 1, 10**15, 2**53 - 1, -1, 1.0])


@st.composite
def chunk_data(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(st.sampled_from(["text-delta", "reasoning-delta", "tool-call-delta"]))
    index = draw(numbers)
    if kind == "tool-call-delta":
        chunk: dict[str, Any] = {"type": kind, "index": index, "id": draw(st.sampled_from(["c1", "c\"2"]))}
        if draw(st.booleans()):
            chunk["name"] = draw(st.sampled_from(["bash", "", "n\\x"]))
        chunk["argumentsDelta"] = draw(texts)
    else:
        chunk = {"type": kind, "index": index, "text": draw(texts)}
    if draw(st.integers(0, 9)) == 0:  # another key order
        chunk = dict(reversed(list(chunk.items())))
    return {"turn": draw(numbers), "step": draw(numbers), "chunk": chunk}


def spelled(data: dict[str, Any], style: int) -> bytes:
    """``data`` as JSON bytes: canonical, with spaces, or with every string's ASCII escaped."""
    canonical = dumps(data)
    if style == 1:
        # Spaces (inside strings too, which changes the value: the caller checks).
        return canonical.replace(b'":', b'": ').replace(b",", b", ")
    if style == 2:
        return json.dumps(data, ensure_ascii=True, separators=(",", ":")).encode()
    return canonical


@st.composite
def batches(draw: st.DrawFn) -> list[Event]:
    count = draw(st.integers(0, 30))
    events: list[Event] = []
    seq = draw(st.integers(0, 5))
    moment = draw(st.integers(-5, 5))
    previous: dict[str, Any] | None = None
    for _ in range(count):
        if previous is not None and draw(st.integers(0, 3)) != 0:
            data = {**previous, "chunk": {**previous["chunk"]}}
            piece = "text" if "text" in data["chunk"] else "argumentsDelta"
            data["chunk"][piece] = draw(texts)  # same block, next piece: a run
        else:
            data = draw(chunk_data())
        previous = data
        raw = spelled(data, draw(st.sampled_from([0, 0, 0, 1, 2])))
        if loads(raw) != data:
            raw = dumps(data)  # a spacing that changed a string's value
        kind = "assistant/chunk" if draw(st.integers(0, 12)) else "assistant/message"
        seq += 1 if draw(st.integers(0, 15)) else 2
        moment += draw(st.integers(-3, 40))
        events.append(Event(kind, seq, moment, raw))
    return events


@settings(max_examples=400, deadline=None)
@given(batches(), st.sampled_from([None, 2, 3, 4]), st.sampled_from([None, 0, 5, 12]))
def test_fast_and_decoding_paths_pack_to_the_same_events(
    events: list[Event], most: int | None, largest: int | None
) -> None:
    fast = pack_records(events, max_members=most, max_bytes=largest)
    with decoding_only():
        slow = pack_records(events, max_members=most, max_bytes=largest)
    assert expanded(fast) == wire(events)
    assert expanded(slow) == wire(events)
    for records in (fast, slow):  # each record names its first member's seq and time
        for seq, _, moment, line in records:
            obj = loads(line)
            first = (obj["seq0"], obj["time0"]) if is_packed_row(obj) else (obj["seq"], obj["time"])
            assert (seq, moment) == first
    if all(event.data_json == dumps(loads(event.data_json)) for event in events):
        assert fast == slow  # canonical spellings: byte-identical rows


@pytest.mark.parametrize(
    "raw",
    [
        b'{"turn":1,"step":1,"chunk":{"type":"text-delta","index":0,"text":"a\\"b"}}',
        b'{"turn":1,"step":1,"chunk":{"type":"text-delta","index":0,"text":"\\\\"}}',
        b'{"turn":999999999999999,"step":0,"chunk":{"type":"reasoning-delta","index":7,"text":""}}',
        b'{"turn":1,"step":1,"chunk":{"type":"tool-call-delta","index":0,"id":"c","argumentsDelta":"{}"}}',
        b'{"turn":1,"step":1,"chunk":{"type":"tool-call-delta","index":0,"id":"c","name":"","argumentsDelta":""}}',
    ],
)
def test_each_canonical_shape_takes_the_byte_path(raw: bytes) -> None:
    member = packed._shape(raw)
    with decoding_only():
        assert packed._shape(raw) == member
    assert member is not None
    assert packed._TEXT_SHAPE.fullmatch(raw) or packed._TOOL_SHAPE.fullmatch(raw)


@pytest.mark.parametrize(
    "raw",
    [
        b'{"turn":1000000000000000,"step":1,"chunk":{"type":"text-delta","index":0,"text":"x"}}',
        b'{"turn":01,"step":1,"chunk":{"type":"text-delta","index":0,"text":"x"}}',
        b'{"turn":-1,"step":1,"chunk":{"type":"text-delta","index":0,"text":"x"}}',
        b'{"turn":1.0,"step":1,"chunk":{"type":"text-delta","index":0,"text":"x"}}',
        b'{"turn":1,"step":1,"chunk":{"type":"text-delta","index":0,"text":"x"},"x":1}',
        b'{"turn":1,"step":1,"chunk":{"type":"text-delta","index":0,"text":"x"}} ',
    ],
)
def test_other_spellings_do_not_match_the_byte_patterns(raw: bytes) -> None:
    assert packed._TEXT_SHAPE.fullmatch(raw) is None
    assert packed._TOOL_SHAPE.fullmatch(raw) is None

"""The optimized write-path encoders give exactly what the old ones gave (issue 17).

``pack_records``, ``pack_rows`` and ``Event.encode`` are compared with the copies of
their code before the write-path work (``packed_reference``) over generated batches:
valid chunk runs of every kind, and everything near them that must not pack or must
pack differently — spellings that share a run's leading bytes but not its piece
(an unclosed or escaped quote, trailing bytes, a non-string piece, a backslash before a
newline), other key orders, seqs and times of odd types and ranges, Surface operations,
ignorable events, messages between runs, and the row caps SQLite uses. Same records,
same bytes, or the same exception. Likewise the per-batch checks ``check_batch`` and
``title_seq``, over seqs, types and flags of any type the raw ``Event`` constructor takes.
"""

from __future__ import annotations

from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st

from harness.events.event import Event, Replace
from harness.events.json import MAX_SAFE_INTEGER, dumps
from harness.events.packed import pack_records, pack_rows
from harness.stores.backend import check_batch
from harness.stores.rows import title_seq
from tests.stores import packed_reference as reference

_PREFIXES = [
    b'{"turn":1,"step":1,"chunk":{"type":"text-delta","index":0,"text":',
    b'{"turn":1,"step":2,"chunk":{"type":"reasoning-delta","index":3,"text":',
    b'{"turn":1,"step":1,"chunk":{"type":"text-delta","index":1,"text":',
    b'{"turn":2,"step":1,"chunk":{"type":"tool-call-delta","index":0,"id":"c1","argumentsDelta":',
    b'{"turn":2,"step":1,"chunk":{"type":"tool-call-delta","index":0,"id":"c1","name":"bash","argumentsDelta":',
    b'{"turn":2,"step":1,"chunk":{"type":"tool-call-delta","index":0,"id":"c\\"1","name":"","argumentsDelta":',
]
_TAILS = [
    b'"abc"}}',
    b'""}}',
    b'"a\\"b"}}',
    b'"\\\\"}}',
    b'"\\u2028 \\n"}}',
    b'"\xc3\xa9"}}',
    # Near misses: they share a run's leading bytes and must not take its fast path.
    b'"a"}} ',
    b'"a"}}}',
    b'"a\\"}}',
    b'"a}}',
    b"5}}",
    b'"a","x":1}}',
    b'"a\\\n"}}',
    b'"a"}}"b"}}',
    b'"a"',
    b"",
    b'"x"} }',
]
_OTHER_DATA = [
    b'{"turn": 1, "step": 1, "chunk": {"type": "text-delta", "index": 0, "text": "spaced"}}',
    b'{"turn":1,"step":1,"chunk":{"type":"text-delta","text":"order","index":0}}',
    b'{"turn":1.0,"step":1,"chunk":{"type":"text-delta","index":0,"text":"float"}}',
    b'{"turn":1,"step":1,"chunk":{"type":"text-delta","index":0,"text":"\\u0041"}}',
    b'{"turn":01,"step":1,"chunk":{"type":"text-delta","index":0,"text":"x"}}',
    b"{}",
    b"null",
    b"not json",
    b'{"role":"assistant"}',
]

_odd_numbers = st.sampled_from(
    [0, 1, -1, 7, MAX_SAFE_INTEGER, MAX_SAFE_INTEGER + 1, -MAX_SAFE_INTEGER, 10**20, True, False, 1.0, 2.5]
)


@st.composite
def _event(draw: st.DrawFn, seq: int, moment: int) -> Event:
    choice = draw(st.integers(0, 9))
    if choice <= 5:
        data = draw(st.sampled_from(_PREFIXES)) + draw(st.sampled_from(_TAILS[:6]) | st.sampled_from(_TAILS))
    elif choice <= 7:
        data = draw(st.sampled_from(_OTHER_DATA))
    else:
        data = dumps(draw(st.text(max_size=5)))
    kind = draw(st.sampled_from(["assistant/chunk"] * 6 + ["assistant/message", "turn/start", "x/\u2028é"]))
    if draw(st.integers(0, 7)) == 0:
        seq_value: Any = draw(_odd_numbers)
    else:
        seq_value = seq
    time_value: Any = draw(_odd_numbers) if draw(st.integers(0, 9)) == 0 else moment
    op: Any = None
    seqs: Any = None
    if draw(st.integers(0, 9)) == 0:
        op = draw(st.sampled_from(["append", Replace(0, 2)]))
        seqs = draw(st.sampled_from([(), (0, 1)]))
    elif draw(st.integers(0, 19)) == 0:
        seqs = ()
    ignorable = draw(st.integers(0, 14)) == 0
    return Event(kind, seq_value, time_value, data, op, seqs, ignorable)


@st.composite
def batches(draw: st.DrawFn) -> list[Event]:
    count = draw(st.integers(0, 40))
    seq = draw(st.sampled_from([0, 5, MAX_SAFE_INTEGER - 20]))
    moment = draw(st.sampled_from([0, -5, 1_767_225_600_000, MAX_SAFE_INTEGER - 100, -MAX_SAFE_INTEGER]))
    events: list[Event] = []
    previous: Event | None = None
    for _ in range(count):
        seq += 1 if draw(st.integers(0, 12)) else draw(st.sampled_from([0, 2, -1]))
        moment += draw(st.sampled_from([0, 1, 3, -2, 40, MAX_SAFE_INTEGER]))
        if previous is not None and draw(st.integers(0, 2)) != 0:
            # The same block again with another piece: a run (or a near miss of one).
            raw = previous.data_json
            cut = raw.rfind(b'":') + 2
            tail = draw(st.sampled_from(_TAILS[:6]) | st.sampled_from(_TAILS))
            event = Event(previous.type, seq, moment, raw[:cut] + tail)
        else:
            event = draw(_event(seq, moment))
        previous = event
        events.append(event)
    return events


def _outcome(function: Any, *args: Any, **kwargs: Any) -> Any:
    try:
        return ("ok", function(*args, **kwargs))
    except Exception as error:  # the same exception, with the same message
        return ("error", type(error), str(error))


@settings(max_examples=1500, deadline=None)
@given(batches(), st.sampled_from([None, 1, 2, 3, 4, 1024]), st.sampled_from([None, 0, 3, 12, 1 << 20]))
@example(
    [Event("assistant/chunk", 0, 0, _PREFIXES[0] + b'"a"}}'), Event("assistant/chunk", 1, 0, b"")],
    None,
    None,
)
def test_pack_records_and_rows_are_the_old_ones(
    events: list[Event], most: int | None, largest: int | None
) -> None:
    new = _outcome(pack_records, events, max_members=most, max_bytes=largest)
    old = _outcome(reference.pack_records, events, max_members=most, max_bytes=largest)
    assert new == old
    assert _outcome(pack_rows, events) == _outcome(reference.pack_rows, events)


class _Odd:
    """A seq that compares by a rule of its own (and may refuse to compare at all)."""

    def __init__(self, value: int, refuse: bool = False) -> None:
        self.value = value
        self.refuse = refuse

    def __eq__(self, other: object) -> bool:
        return self.value == other

    def __ne__(self, other: object) -> bool:
        if self.refuse:
            raise ValueError("no comparing this seq")
        return self.value != other

    def __hash__(self) -> int:
        return hash(self.value)

    def __repr__(self) -> str:
        return f"_Odd({self.value})"


class _Falsy:
    """An ``ignorable`` whose truth cannot be told."""

    def __bool__(self) -> bool:
        raise ValueError("no truth here")


_odd_fields = st.sampled_from(["x", None, 2.5, True, _Odd(4), _Odd(4, refuse=True)])


@st.composite
def _raw_event(draw: st.DrawFn) -> Event:
    """An event with any field values the raw constructor lets through."""
    seq: Any = draw(_odd_numbers | _odd_fields) if draw(st.integers(0, 3)) == 0 else draw(st.integers(0, 9))
    moment: Any = draw(_odd_numbers | _odd_fields) if draw(st.integers(0, 5)) == 0 else 77
    kind: Any = draw(st.sampled_from(["assistant/message", "session/title", "x/\u2028", "t\ud800"]))
    op: Any = draw(st.sampled_from([None, None, "append", "other", Replace(1, 3), 5]))
    seqs: Any = draw(st.sampled_from([None, None, (), (0, 2), [], [1], "ab"]))
    ignorable: Any = draw(st.sampled_from([False, False, True, 0, 1, None, _Falsy()]))
    data = draw(st.sampled_from([b"{}", b'{"title":"t"}', b'{"title":5}', b"[1]", b'"x"', b"null"]))
    return Event(kind, seq, moment, data, op, seqs, ignorable)


@settings(max_examples=1000, deadline=None)
@given(st.lists(st.deferred(lambda: _event(3, 9)) | _raw_event(), max_size=5))
def test_encode_is_the_old_one(events: list[Event]) -> None:
    for event in events:
        assert _outcome(event.encode) == _outcome(reference.encode, event)


@settings(max_examples=1000, deadline=None)
@given(
    st.lists(_raw_event(), max_size=6),
    st.sampled_from([0, 3, -1, True, 2.0, "0"]),
    st.booleans(),
)
def test_check_batch_and_title_seq_are_the_old_ones(
    events: list[Event], expected: Any, contiguous: bool
) -> None:
    if contiguous and type(expected) is int:
        events = [
            Event(e.type, expected + i, e.time, e.data_json, e.surface_op, e.source_event_seqs, e.ignorable)
            for i, e in enumerate(events)
        ]
    for batch in (events, tuple(events)):
        assert _outcome(check_batch, "s", expected, batch) == _outcome(
            reference.check_batch, "s", expected, batch
        )
        assert _outcome(title_seq, batch) == _outcome(reference.title_seq, batch)

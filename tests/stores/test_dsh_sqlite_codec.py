"""Schema 17's row codec (``harness.stores.dsh_sqlite.codec``): provenance varints, the zstd
rule, the packing of chunk runs and the refusals of malformed rows, rule by rule."""

from __future__ import annotations

import json
from typing import Any

import pytest
import zstandard
from hypothesis import given
from hypothesis import strategies as st

from harness.events.event import Event, Replace
from harness.events.json import MAX_SAFE_INTEGER, loads
from harness.stores.dsh_sqlite.codec import (
    MAX_PACKED_DATA_BYTES,
    MAX_PACKED_MEMBERS,
    ZSTD_THRESHOLD,
    BoundRow,
    RowMalformed,
    RowUnreadable,
    StoredRow,
    bind_event,
    decode_row,
    decode_seqs,
    encode_data,
    encode_seqs,
    pack_batch,
)

# ---- provenance ------------------------------------------------------------------------------


def test_provenance_is_an_unsigned_first_seq_then_zigzag_deltas() -> None:
    assert encode_seqs([]) == b""
    assert encode_seqs([5]) == b"\x05"
    assert encode_seqs([5, 6, 4]) == b"\x05\x02\x03"  # +1 -> 2, -2 -> 3
    assert encode_seqs([300]) == b"\xac\x02"
    assert encode_seqs([0, 0]) == b"\x00\x00"
    assert decode_seqs(b"\x05\x02\x03") == [5, 6, 4]
    assert decode_seqs(b"") == []


@given(st.lists(st.integers(min_value=0, max_value=MAX_SAFE_INTEGER), max_size=30))
def test_provenance_round_trips(values: list[int]) -> None:
    assert decode_seqs(encode_seqs(values)) == values


@pytest.mark.parametrize(
    ("blob", "reason"),
    [
        (b"\x80", "truncated varint"),
        (b"\x05\x82", "truncated varint"),
        (b"\x80\x00", "non-canonical varint"),
        (b"\x85\x80\x00", "non-canonical varint"),
        (b"\xff" * 9 + b"\x01", "out of range"),  # more than 9 bytes
        (encode_seqs([MAX_SAFE_INTEGER])[:-1] + b"\x20", "out of range"),  # first seq above 2^53 - 1
        (b"\x01\x03", "decoded seq is out of range"),  # 1, then -2
    ],
)
def test_a_malformed_provenance_blob_is_refused(blob: bytes, reason: str) -> None:
    with pytest.raises(RowMalformed, match=reason):
        decode_seqs(blob)


def test_negative_or_unsafe_seqs_cannot_be_encoded() -> None:
    for bad in ([-1], [MAX_SAFE_INTEGER + 1]):
        with pytest.raises(ValueError, match="non-negative safe integers"):
            encode_seqs(bad)


# ---- the data column ---------------------------------------------------------------------------


def test_data_under_4_kib_stays_text_and_at_4_kib_is_compressed_only_when_smaller(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    small = b'"' + b"a" * (ZSTD_THRESHOLD - 3) + b'"'
    assert len(small) == ZSTD_THRESHOLD - 1
    assert encode_data(small) == small.decode()
    big = b'"' + b"a" * (ZSTD_THRESHOLD - 2) + b'"'
    frame = encode_data(big)
    assert isinstance(frame, bytes) and frame.startswith(b"\x28\xb5\x2f\xfd")
    assert frame == zstandard.ZstdCompressor(level=3).compress(big)  # level 3, as dsh
    assert zstandard.ZstdDecompressor().decompress(frame) == big

    class Bloating:  # a frame that is not smaller than the text: the text is kept
        def __init__(self, level: int) -> None:
            assert level == 3

        def compress(self, data: bytes) -> bytes:
            return b"\x28\xb5\x2f\xfd" + data

    monkeypatch.setattr(zstandard, "ZstdCompressor", Bloating)
    assert encode_data(big) == big.decode()


def _row(**fields: Any) -> StoredRow:
    values: dict[str, Any] = {
        "seq": 0,
        "type": "turn/start",
        "time": 5,
        "data": b'{"turn":1}',
        "data_is_blob": False,
        "source_event_seqs": None,
        "surface_op": None,
        "ignorable": None,
    }
    values.update(fields)
    return StoredRow(**values)


def _stored(bound: BoundRow) -> StoredRow:
    data = bound.data
    return StoredRow(
        bound.seq,
        bound.type,
        bound.time,
        data if isinstance(data, bytes) else data.encode(),
        isinstance(data, bytes),
        bound.source_event_seqs,
        None if bound.surface_op is None else bound.surface_op.encode(),
        bound.ignorable,
    )


def test_a_scalar_row_reads_back_in_dsh_key_order() -> None:
    message = {
        "id": "m",
        "role": "user",
        "source": {"kind": "user"},
        "content": [{"type": "text", "text": "x" * 5000}],
    }
    event = Event.create("user/message", 3, 9, message, surface_op=Replace(1, 2), source_event_seqs=(2, 1))
    bound = bind_event(event)
    assert isinstance(bound.data, bytes)  # 5 KB of data: compressed
    assert bound.surface_op == '{"op":"replace","start":1,"end":2}'
    assert bound.source_event_seqs == b"\x02\x01" and bound.ignorable is None
    (wire,) = decode_row(_stored(bound))
    assert list(wire) == ["type", "seq", "time", "data", "sourceEventSeqs", "surfaceOp"]
    assert wire == loads(event.encode())
    ignorable = bind_event(Event.create("workspace/baseline", 0, 1, {}, ignorable=True))
    assert ignorable.ignorable == 1 and decode_row(_stored(ignorable))[0]["ignorable"] is True


@pytest.mark.parametrize(
    ("fields", "error", "reason"),
    [
        ({"data": b"{not json"}, RowMalformed, "not JSON"),
        ({"data": b"\x28\xb5\x2f\xfdjunk", "data_is_blob": True}, RowMalformed, "zstd"),
        (
            {"data": zstandard.ZstdCompressor().compress(b'{"a":1}')[:-2], "data_is_blob": True},
            RowMalformed,
            "zstd",
        ),
        (
            {"data": zstandard.ZstdCompressor().compress(b'"\xff"'), "data_is_blob": True},
            RowMalformed,
            "UTF-8",
        ),
        ({"surface_op": b"{"}, RowMalformed, "surface_op"),
        ({"source_event_seqs": b"\x80"}, RowMalformed, "truncated varint"),
        ({"data": b"1e400"}, RowUnreadable, "cannot read"),
    ],
)
def test_a_malformed_scalar_row_is_refused(
    fields: dict[str, Any], error: type[Exception], reason: str
) -> None:
    with pytest.raises(error, match=reason):
        decode_row(_row(**fields))


# ---- packing -----------------------------------------------------------------------------------


def _chunk(
    seq: int,
    text: str = "ab",
    *,
    kind: str = "text-delta",
    index: int = 0,
    time: int | None = None,
    step: int = 1,
    **extra: Any,
) -> Event:
    body: dict[str, Any] = {"type": kind, "index": index}
    if kind == "tool-call-delta":
        body.update(id=extra.pop("id", "call-1"))
        if "name" in extra:
            body["name"] = extra.pop("name")
        body["argumentsDelta"] = text
    else:
        body["text"] = text
    body.update(extra)
    return Event.create(
        "assistant/chunk", seq, 100 + seq if time is None else time, {"turn": 1, "step": step, "chunk": body}
    )


def _data(row: BoundRow) -> bytes:
    """The row's data JSON, decompressed."""
    data = row.data
    return zstandard.ZstdDecompressor().decompress(data) if isinstance(data, bytes) else data.encode()


def _expand(rows: list[BoundRow]) -> list[dict[str, Any]]:
    return [event for row in rows for event in decode_row(_stored(row))]


def test_a_run_of_three_or_more_deltas_of_one_block_packs_and_expands_exactly() -> None:
    events = [
        _chunk(0),
        _chunk(1, time=90),
        _chunk(2, 'q"\n'),
        Event.create("step/end", 3, 200, {"turn": 1, "step": 1}),
    ]
    rows = pack_batch(events)
    assert [(r.seq, r.type, r.time, r.ignorable) for r in rows] == [
        (0, "text-chunks", 100, 0),
        (3, "step/end", 200, None),
    ]
    assert rows[0].data == '{"turn":1,"step":1,"index":0,"dt":[-10,12],"texts":["ab","ab","q\\"\\n"]}'
    assert _expand(rows) == [loads(e.encode()) for e in events]


def test_short_runs_and_inexact_chunks_stay_scalar() -> None:
    two = [_chunk(0), _chunk(1)]
    assert [r.type for r in pack_batch(two)] == ["assistant/chunk"] * 2
    odd = [_chunk(0), _chunk(1, extra_key=1), _chunk(2)]  # an unknown key breaks the run
    assert [r.type for r in pack_batch(odd)] == ["assistant/chunk"] * 3
    gap = [_chunk(0), _chunk(1), _chunk(3), _chunk(4)]  # not consecutive seqs (a batch is contiguous
    assert [r.type for r in pack_batch(gap)] == ["assistant/chunk"] * 4  # in a store, not here)
    blocks = [_chunk(0), _chunk(1), _chunk(2, index=1), _chunk(3, index=1), _chunk(4, index=1)]
    assert [r.type for r in pack_batch(blocks)] == ["assistant/chunk", "assistant/chunk", "text-chunks"]
    steps = [_chunk(0), _chunk(1), _chunk(2, step=2)]
    assert [r.type for r in pack_batch(steps)] == ["assistant/chunk"] * 3
    with_op = [
        *(_chunk(n) for n in range(2)),
        Event.create("assistant/chunk", 2, 1, _chunk(2).data, ignorable=True),
    ]
    assert [r.type for r in pack_batch(with_op)] == ["assistant/chunk"] * 3


def test_tool_call_runs_keep_id_and_name_presence() -> None:
    named = [_chunk(n, "{", kind="tool-call-delta", name="read") for n in range(3)]
    (row,) = pack_batch(named)
    assert row.type == "tool-call-chunks"
    assert json.loads(row.data) == {
        "turn": 1,
        "step": 1,
        "index": 0,
        "dt": [1, 1],
        "id": "call-1",
        "name": "read",
        "args": ["{"] * 3,
    }
    assert _expand([row]) == [loads(e.encode()) for e in named]
    mixed = [
        _chunk(0, kind="tool-call-delta", name="read"),
        *(_chunk(n, kind="tool-call-delta") for n in (1, 2, 3)),
    ]
    assert [r.type for r in pack_batch(mixed)] == ["assistant/chunk", "tool-call-chunks"]
    other = [
        *(_chunk(n, kind="tool-call-delta") for n in (0, 1)),
        _chunk(2, kind="tool-call-delta", id="call-2"),
    ]
    assert [r.type for r in pack_batch(other)] == ["assistant/chunk"] * 3


def test_a_run_longer_than_1024_splits_and_a_tail_under_three_stays_scalar() -> None:
    events = [_chunk(n, "x") for n in range(MAX_PACKED_MEMBERS + 2)]
    rows = pack_batch(events)
    assert [(r.seq, r.type) for r in rows] == [
        (0, "text-chunks"),
        (1024, "assistant/chunk"),
        (1025, "assistant/chunk"),
    ]
    assert len(json.loads(_data(rows[0]))["texts"]) == MAX_PACKED_MEMBERS
    events = [_chunk(n, "x") for n in range(2 * MAX_PACKED_MEMBERS + 3)]
    assert [r.seq for r in pack_batch(events)] == [0, 1024, 2048]


def test_a_packed_row_holds_at_most_1_mib_of_data() -> None:
    piece = "y" * 300_000  # four of these exceed 1 MiB, three fit
    events = [_chunk(n, piece) for n in range(7)]
    rows = pack_batch(events)
    assert [(r.seq, r.type) for r in rows] == [(0, "text-chunks"), (3, "text-chunks"), (6, "assistant/chunk")]
    for row in rows[:2]:
        assert len(_data(row)) <= MAX_PACKED_DATA_BYTES
    assert _expand(rows) == [loads(e.encode()) for e in events]
    huge = [_chunk(n, "z" * 400_000) for n in range(4)]  # three never fit: each stays scalar
    assert [r.type for r in pack_batch(huge)] == ["assistant/chunk"] * 4


def _packed(tag: str = "text-chunks", **data: Any) -> StoredRow:
    body: dict[str, Any] = {"turn": 1, "step": 1, "index": 0, "dt": [1, 1], "texts": ["a", "b", "c"]}
    body.update(data)
    return _row(
        type=tag, ignorable=0, data=json.dumps({k: v for k, v in body.items() if v is not None}).encode()
    )


@pytest.mark.parametrize(
    ("row", "reason"),
    [
        (_row(type="user/message", ignorable=0), "requires a chunk tag"),
        (_row(type="text-chunks", ignorable=0, surface_op=b'"append"'), "surface fields must be null"),
        (_row(type="text-chunks", ignorable=0, source_event_seqs=b""), "surface fields must be null"),
        (_packed(extra=1), "invalid text data fields"),
        (_packed(texts=["a", "b"], dt=[1]), "3..1024 strings"),
        (_packed(texts=["a"] * 1025, dt=[0] * 1024), "3..1024 strings"),
        (_packed(texts=["a", 1, "c"]), "3..1024 strings"),
        (_packed(dt=[1]), "dt length"),
        (_packed(dt=[1, 0.5]), "safe integers"),
        (_packed(turn="1"), "must be numbers"),
        (_packed("tool-call-chunks", texts=None, id="c", args=["a", "b", "c"], name=5), "must be strings"),
        (_packed("tool-call-chunks", texts=None, args=["a", "b", "c"]), "invalid tool-call data fields"),
        (_packed(texts=["x" * 400_000] * 3), "exceeds 1048576"),
        (
            _row(
                type="text-chunks",
                ignorable=0,
                time=MAX_SAFE_INTEGER,
                data=json.dumps(
                    {"turn": 1, "step": 1, "index": 0, "dt": [1, 1], "texts": ["a", "b", "c"]}
                ).encode(),
            ),
            "member times",
        ),
        (
            _row(
                type="text-chunks",
                ignorable=0,
                data_is_blob=True,
                data=zstandard.ZstdCompressor().compress(b" " * (MAX_PACKED_DATA_BYTES + 1)),
            ),
            "exceeds 1048576",
        ),
    ],
)
def test_a_malformed_packed_row_is_refused(row: StoredRow, reason: str) -> None:
    with pytest.raises(RowMalformed, match=reason):
        decode_row(row)


def test_a_scalar_row_may_carry_a_chunk_tag_name_as_its_type() -> None:
    """Only ``ignorable = 0`` marks a packed row: a scalar row typed ``text-chunks`` is an event
    of that (unknown) type, for the load pipeline to judge."""
    (event,) = decode_row(_row(type="text-chunks", data=b"{}", ignorable=1))
    assert event == {"type": "text-chunks", "seq": 0, "time": 5, "data": {}, "ignorable": True}

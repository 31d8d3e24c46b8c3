"""The write path's encoders and checks as they were before issue 17's write-path work.

Verbatim copies, at commit 16baaa9, of ``harness.events.packed.pack_records`` (with
``_shape``, ``_packable_decoded`` and ``_row``), ``Event.encode``, and the batch checks
``check_batch`` (stores/backend.py) and ``title_seq`` (stores/rows.py): the reference the
optimized code must agree with, byte for byte and error for error
(``test_packed_differential``). Not used by harness itself.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping, Sequence
from typing import Final, TypeAlias

import orjson

from harness.errors import SessionConflict
from harness.events.event import _TYPE_JSON, Event, Replace, _type_json
from harness.events.json import MAX_SAFE_INTEGER, dumps

__all__ = ["check_batch", "encode", "pack_records", "pack_rows", "title_seq"]


def encode(event: Event) -> bytes:
    """``Event.encode``, with the same memo of type JSON."""
    kind = _TYPE_JSON.get(event.type)
    if kind is None:
        kind = _type_json(event.type)
    parts = [
        b'{"type":',
        kind,
        b',"seq":%d,"time":%d,"data":' % (event.seq, event.time),
        event.data_json,
    ]
    seqs = event.source_event_seqs
    if seqs is not None:
        parts.append(b',"sourceEventSeqs":[]' if not seqs else b',"sourceEventSeqs":' + dumps(list(seqs)))
    op = event.surface_op
    if op is not None:
        if isinstance(op, Replace):
            parts.append(b',"surfaceOp":{"op":"replace","start":%d,"end":%d}' % (op.start, op.end))
        else:
            parts.append(b',"surfaceOp":"append"')
    if event.ignorable:
        parts.append(b',"ignorable":true')
    parts.append(b"}")
    return b"".join(parts)


MIN_PACKED_RUN: Final = 3
"""Fewest adjacent chunks that pack into one row (a format constant, FORMAT §9.2)."""

_ROW_TAGS: Final = {
    b"text-delta": b"text-chunks",
    b"reasoning-delta": b"reasoning-chunks",
    b"tool-call-delta": b"tool-call-chunks",
}
_TEXT_CHUNK_KEYS: Final = frozenset({"type", "index", "text"})
_TOOL_CHUNK_KEYS: Final = frozenset({"type", "index", "id", "argumentsDelta"})
_TOOL_CHUNK_KEYS_NAMED: Final = _TOOL_CHUNK_KEYS | {"name"}
_NUMBERS: Final = (int, float)

# The shapes harness itself writes, matched on the data's bytes so that packing a
# batch decodes nothing. Integers of at most 15 digits are safe (< 2^53); a JSON
# string literal is kept as it is and copied into the row. Any other spelling
# (floats, negative numbers, another key order, longer integers) takes the decoding path.
_INT: Final = rb"(0|[1-9][0-9]{0,14})"
_STR: Final = rb'("[^"\\]*(?:\\.[^"\\]*)*")'
_TEXT_SHAPE: Final = re.compile(
    rb'\{"turn":' + _INT + rb',"step":' + _INT + rb',"chunk":\{"type":"(text-delta|reasoning-delta)"'
    rb',"index":' + _INT + rb',"text":' + _STR + rb"\}\}"
)
_TOOL_SHAPE: Final = re.compile(
    rb'\{"turn":'
    + _INT
    + rb',"step":'
    + _INT
    + rb',"chunk":\{"type":"(tool-call-delta)","index":'
    + _INT
    + rb',"id":'
    + _STR
    + rb'(?:,"name":'
    + _STR
    + rb')?,"argumentsDelta":'
    + _STR
    + rb"\}\}"
)

_Block: TypeAlias = tuple[bytes, ...]
"""What must be equal along a run, as JSON bytes: ``(turn, step, kind, index)`` and, for a
tool call, ``id`` and ``name`` (empty when absent). Bytes keep number types apart
(``1`` and ``1.0`` differ once written back)."""


def _shape(raw: bytes) -> tuple[_Block, bytes] | None:
    """Block and piece of packable chunk data, else ``None``."""
    match = _TEXT_SHAPE.fullmatch(raw) or _TOOL_SHAPE.fullmatch(raw)
    if match is not None:
        groups = match.groups(b"")  # an absent tool name: b"" (a present one has its quotes)
        return groups[:-1], groups[-1]
    return _packable_decoded(raw)


def _packable_decoded(raw: bytes) -> tuple[_Block, bytes] | None:
    """``_shape`` for any other spelling of the data: decode it and check every rule."""
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    if type(data) is not dict or len(data) != 3:
        return None
    chunk = data.get("chunk")
    turn = data.get("turn")
    step = data.get("step")
    if (
        type(chunk) is not dict
        or type(turn) not in _NUMBERS
        or type(step) not in _NUMBERS
        or type(chunk.get("index")) not in _NUMBERS
    ):
        return None
    kind = chunk.get("type")
    if kind == "text-delta" or kind == "reasoning-delta":
        piece = chunk.get("text")
        if type(piece) is not str or chunk.keys() != _TEXT_CHUNK_KEYS:
            return None
        return (dumps(turn), dumps(step), kind.encode(), dumps(chunk["index"])), dumps(piece)
    if kind == "tool-call-delta":
        piece = chunk.get("argumentsDelta")
        keys = chunk.keys()
        if keys == _TOOL_CHUNK_KEYS_NAMED:
            if type(chunk["name"]) is not str:
                return None
        elif keys != _TOOL_CHUNK_KEYS:
            return None
        if type(chunk["id"]) is not str or type(piece) is not str:
            return None
        name = dumps(chunk["name"]) if "name" in chunk else b""
        index = dumps(chunk["index"])
        return (dumps(turn), dumps(step), b"tool-call-delta", index, dumps(chunk["id"]), name), dumps(piece)
    return None


def _row(block: _Block, run: list[Event], pieces: list[bytes]) -> bytes:
    moments = [event.time for event in run]
    gaps = b",".join([b"%d" % (later - earlier) for earlier, later in itertools.pairwise(moments)])
    if len(block) > 4:
        name = block[5] and b',"name":' + block[5]
        tail = b',"id":%s%s,"args":[%s]}}' % (block[4], name, b",".join(pieces))
    else:
        tail = b',"texts":[%s]}}' % b",".join(pieces)
    first = run[0]
    return b'{"type":"%s","seq0":%d,"time0":%d,"data":{"turn":%s,"step":%s,"index":%s,"dt":[%s]%s' % (
        _ROW_TAGS[block[2]],
        first.seq,
        first.time,
        block[0],
        block[1],
        block[3],
        gaps,
        tail,
    )


def pack_records(
    events: Sequence[Event], *, max_members: int | None = None, max_bytes: int | None = None
) -> list[tuple[int, str, int, bytes]]:
    """The storage records of one write batch as ``(seq, type, time, line)``: a packed row
    gives its first member's seq and time and its row type (``text-chunks`` …), any other
    event its own. See ``pack_rows`` for the packing rules. ``max_members`` and
    ``max_bytes`` (of the members' encoded text) cap one row; a longer run continues in the next."""
    out: list[tuple[int, str, int, bytes]] = []
    run: list[Event] = []
    pieces: list[bytes] = []
    block: _Block = ()
    size = 0
    most = MAX_SAFE_INTEGER if max_members is None else max_members
    largest = MAX_SAFE_INTEGER if max_bytes is None else max_bytes

    def close_run() -> None:
        if len(run) >= MIN_PACKED_RUN:
            first = run[0]
            out.append((first.seq, _ROW_TAGS[block[2]].decode(), first.time, _row(block, run, pieces)))
        else:
            out.extend([(event.seq, event.type, event.time, encode(event)) for event in run])
        run.clear()
        pieces.clear()

    last_seq = last_time = 0
    for event in events:
        piece = None
        seq, moment = event.seq, event.time
        if (  # a plain assistant/chunk with safe seq and time (inline: this loop is hot)
            event.type == "assistant/chunk"
            and event.surface_op is None
            and event.source_event_seqs is None
            and not event.ignorable
            and type(seq) is int
            and type(moment) is int
            and 0 <= seq <= MAX_SAFE_INTEGER
            and -MAX_SAFE_INTEGER <= moment <= MAX_SAFE_INTEGER
        ):
            found = _shape(event.data_json)
            if found is not None:
                member_block, piece = found
        if piece is None:
            if run:
                close_run()
            out.append((seq, event.type, moment, encode(event)))
            continue
        length = len(piece) - 2  # the encoded text, without its quotes
        if run and (
            member_block != block
            or seq != last_seq + 1
            or not -MAX_SAFE_INTEGER <= moment - last_time <= MAX_SAFE_INTEGER
            or len(run) >= most
            or size + length > largest
        ):
            close_run()
        if not run:
            block = member_block
            size = 0
        run.append(event)
        pieces.append(piece)
        size += length
        last_seq, last_time = seq, moment
    if run:
        close_run()
    return out


def pack_rows(events: Sequence[Event]) -> list[bytes]:
    """The storage lines (no newlines) of one write batch (FORMAT §9.2).

    Each run of at least ``MIN_PACKED_RUN`` adjacent ``assistant/chunk`` deltas of
    one block (same kind, turn, step, index and, for tool calls, the same ``id``
    and ``name`` presence/value; consecutive seqs; safe-integer time gaps) becomes
    one packed row; every other event is its ``Event.encode()`` line. A chunk whose
    shape is not exactly whitelisted is written verbatim, so packing never loses
    data. Expanding the rows gives back exactly the events given.
    """
    return [record[3] for record in pack_records(events)]


def check_batch(session_id: str, expected: int, batch: Sequence[Event]) -> None:
    """``harness.stores.backend.check_batch``."""
    for index, event in enumerate(batch):
        if event.seq != expected + index:
            raise SessionConflict(
                f"append seq mismatch for session {session_id!r}: expected {expected + index} "
                f"at index {index}, got {event.seq}",
                expected=expected,
                got=batch[0].seq,
            )


def title_seq(batch: Sequence[Event]) -> int | None:
    """``harness.stores.rows.title_seq``."""
    for event in reversed(batch):
        if event.type == "session/title":
            data = event.data
            if isinstance(data, Mapping) and isinstance(data.get("title"), str):
                return event.seq
    return None

"""Packed chunk rows: the compact storage form of runs of ``assistant/chunk`` (FORMAT §9.2).

A storage row is an event verbatim or a packed row that stands for ≥3 adjacent
delta chunks of one block::

    {"type":"text-chunks","seq0":7,"time0":5000,
     "data":{"turn":2,"step":1,"index":1,"dt":[12,-3],"texts":["Hel","lo ","there"]}}

Member k has seq ``seq0 + k`` and time ``time0 + sum(dt[:k])``. This module
decodes rows (every backend reads them) and ``pack_rows`` encodes a write
batch: each run of ≥3 packable chunks becomes one row, every other event its
verbatim line. Packing is per batch, so a run never spans two writes.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Sequence
from typing import Any, Final, TypeAlias

import orjson

from harness.events.event import Event
from harness.events.json import MAX_SAFE_INTEGER, dumps

__all__ = [
    "MIN_PACKED_RUN",
    "PACKED_ROW_TYPES",
    "PackedRowError",
    "expand_row",
    "is_packed_row",
    "pack_records",
    "pack_rows",
]

_TEXT_ROWS: Final = {"text-chunks": "text-delta", "reasoning-chunks": "reasoning-delta"}
PACKED_ROW_TYPES: Final = frozenset({*_TEXT_ROWS, "tool-call-chunks"})
_ROW_KEYS: Final = frozenset({"type", "seq0", "time0", "data"})
_TEXT_DATA_KEYS: Final = frozenset({"turn", "step", "index", "dt", "texts"})
_TOOL_DATA_KEYS: Final = frozenset({"turn", "step", "index", "dt", "id", "args"})
_TOOL_DATA_KEYS_NAMED: Final = _TOOL_DATA_KEYS | {"name"}


class PackedRowError(ValueError):
    """A packed row that cannot be decoded (an unparsable record)."""


def _safe(value: object) -> bool:
    return type(value) is int and -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER


def _safe_read(value: object) -> int | None:
    """A stored row's integer as dsh's ``Number.isSafeInteger`` reads it: an integral
    float (``3.0``, ``-0.0``, which JSON cannot tell from ``3`` and ``0``) counts."""
    if type(value) is float and value.is_integer():
        value = int(value)
    return value if type(value) is int and _safe(value) else None


def _is_number(value: object) -> bool:
    return type(value) is int or type(value) is float


def is_packed_row(obj: object) -> bool:
    """True when ``obj`` is tagged as a packed row (its validity is checked by ``expand_row``).

    A ``type`` that is not a string (an array, an object) is no tag: it must not reach
    the set lookup, where an unhashable value would raise ``TypeError``."""
    if not isinstance(obj, dict):
        return False
    kind = obj.get("type")
    return type(kind) is str and kind in PACKED_ROW_TYPES


def expand_row(row: dict[str, Any]) -> list[dict[str, Any]]:
    """The wire events a packed row stands for, in FORMAT's expanded key order.

    Raises ``PackedRowError`` when the row breaks any rule of FORMAT §9.2.
    """
    kind = row.get("type")
    if set(row) != _ROW_KEYS or kind not in PACKED_ROW_TYPES:
        raise PackedRowError("packed row must have exactly type, seq0, time0, data")
    seq0, time0, data = _safe_read(row["seq0"]), _safe_read(row["time0"]), row["data"]
    if seq0 is None or seq0 < 0 or time0 is None or not isinstance(data, dict):
        raise PackedRowError("packed row seq0/time0 must be safe integers and data an object")
    keys = set(data)
    if kind == "tool-call-chunks":
        if keys != _TOOL_DATA_KEYS and keys != _TOOL_DATA_KEYS_NAMED:
            raise PackedRowError("tool-call-chunks data has unexpected keys")
        pieces = data["args"]
        call_id = data["id"]
        if not isinstance(call_id, str) or ("name" in data and not isinstance(data["name"], str)):
            raise PackedRowError("tool-call-chunks id and name must be strings")
    else:
        if keys != _TEXT_DATA_KEYS:
            raise PackedRowError(f"{kind} data has unexpected keys")
        pieces = data["texts"]
    if not isinstance(pieces, list) or not pieces or not all(isinstance(p, str) for p in pieces):
        raise PackedRowError("packed row pieces must be a non-empty array of strings")
    read = [_safe_read(gap) for gap in data["dt"]] if isinstance(data["dt"], list) else [None]
    gaps = [gap for gap in read if gap is not None]
    if len(gaps) != len(read) or len(gaps) != len(pieces) - 1:
        raise PackedRowError("packed row dt must hold one safe-integer gap per member after the first")
    turn, step, index = data["turn"], data["step"], data["index"]
    if not (_is_number(turn) and _is_number(step) and _is_number(index)):
        raise PackedRowError("packed row turn, step and index must be numbers")
    events: list[dict[str, Any]] = []
    moment = time0
    for offset, piece in enumerate(pieces):
        if offset:
            moment += gaps[offset - 1]
        seq = seq0 + offset
        if not _safe(seq) or not _safe(moment):
            raise PackedRowError("packed row member seq or time leaves the safe-integer range")
        if kind == "tool-call-chunks":
            chunk: dict[str, Any] = {"type": "tool-call-delta", "index": index, "id": data["id"]}
            if "name" in data:
                chunk["name"] = data["name"]
            chunk["argumentsDelta"] = piece
        else:
            chunk = {"type": _TEXT_ROWS[kind], "index": index, "text": piece}
        payload = {"turn": turn, "step": step, "chunk": chunk}
        events.append({"type": "assistant/chunk", "seq": seq, "time": moment, "data": payload})
    return events


# ---- encoder ----------------------------------------------------------------------------

MIN_PACKED_RUN: Final = 3
"""Fewest adjacent chunks that pack into one row (a format constant, FORMAT §9.2)."""

_ROW_TAGS: Final = {
    b"text-delta": b"text-chunks",
    b"reasoning-delta": b"reasoning-chunks",
    b"tool-call-delta": b"tool-call-chunks",
}
_ROW_NAMES: Final = {kind: tag.decode() for kind, tag in _ROW_TAGS.items()}
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
_PIECE_TAIL: Final = re.compile(_STR + rb"\}\}")
"""What follows a chunk's block in its data: the piece (one JSON string literal) and ``}}``."""
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


def _row(block: _Block, run: Sequence[Event], pieces: list[bytes]) -> bytes:
    times = [event.time for event in run]
    gaps = b",".join(map(b"%d".__mod__, map(operator.sub, times[1:], times)))
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


def _pack(batch: Sequence[Event], max_members: int | None, max_bytes: int | None, keyed: bool) -> list[Any]:
    """``pack_records`` (``keyed``) or ``pack_rows``: one pass over the batch.

    The loop is per event, so it keeps per event only what the rules need: a run is
    the slice of the batch from ``first`` with its pieces, and its text size is only
    counted when a cap asks for it. A chunk whose data starts with the bytes before
    the piece of the last chunk the byte patterns matched (its block:
    ``{"turn":…,"text":``) and goes on with one JSON string and ``}}`` is a match of
    the same pattern with the same groups: only that string is checked
    (``_PIECE_TAIL``), not the whole pattern again.
    """
    events = batch if type(batch) is list else list(batch)
    out: list[Any] = []
    add = out.append
    pieces: list[bytes] = []  # the current run's, one per member
    first = 0  # index of the current run's first member
    block: _Block = ()
    size = 0
    capped = max_members is not None or max_bytes is not None
    most = MAX_SAFE_INTEGER if max_members is None else max_members
    largest = MAX_SAFE_INTEGER if max_bytes is None else max_bytes
    text_shape = _TEXT_SHAPE.fullmatch
    tool_shape = _TOOL_SHAPE.fullmatch
    piece_tail = _PIECE_TAIL.fullmatch
    prefix: bytes | None = None  # the data before the piece of the last byte-matched chunk
    start = 0  # len(prefix)
    prefix_block: _Block = ()  # its block

    def close_run(end: int) -> None:
        run = events[first:end]
        if len(run) >= MIN_PACKED_RUN:
            head = run[0]
            line = _row(block, run, pieces)
            add((head.seq, _ROW_NAMES[block[2]], head.time, line) if keyed else line)
        elif keyed:
            out.extend([(event.seq, event.type, event.time, event.encode()) for event in run])
        else:
            out.extend([event.encode() for event in run])
        pieces.clear()

    last_seq = last_time = 0
    for index, event in enumerate(events):
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
            raw = event.data_json
            if prefix is not None and raw.startswith(prefix) and piece_tail(raw, start) is not None:
                member_block = prefix_block
                piece = raw[start:-2]
            else:
                match = text_shape(raw) or tool_shape(raw)
                if match is not None:
                    groups = match.groups(b"")  # an absent tool name: b"" (a present one has its quotes)
                    member_block, piece = groups[:-1], groups[-1]
                    start = len(raw) - 2 - len(piece)  # the piece is followed by }} and the end
                    prefix, prefix_block = raw[:start], member_block
                else:
                    found = _packable_decoded(raw)
                    if found is not None:
                        member_block, piece = found
        if piece is None:
            if pieces:
                close_run(index)
            add((seq, event.type, moment, event.encode()) if keyed else event.encode())
            continue
        length = len(piece) - 2 if capped else 0  # the encoded text, without its quotes
        if pieces and (
            (member_block is not block and member_block != block)
            or seq != last_seq + 1
            or not -MAX_SAFE_INTEGER <= moment - last_time <= MAX_SAFE_INTEGER
            or (capped and (index - first >= most or size + length > largest))
        ):
            close_run(index)
        if not pieces:
            first = index
            block = member_block
            size = 0
        pieces.append(piece)
        size += length
        last_seq, last_time = seq, moment
    if pieces:
        close_run(len(events))
    return out


def pack_records(
    events: Sequence[Event], *, max_members: int | None = None, max_bytes: int | None = None
) -> list[tuple[int, str, int, bytes]]:
    """The storage records of one write batch as ``(seq, type, time, line)``: a packed row
    gives its first member's seq and time and its row type (``text-chunks`` …), any other
    event its own. See ``pack_rows`` for the packing rules. ``max_members`` and
    ``max_bytes`` (of the members' encoded text) cap one row; a longer run continues in the next."""
    return _pack(events, max_members, max_bytes, True)


def pack_rows(events: Sequence[Event]) -> list[bytes]:
    """The storage lines (no newlines) of one write batch (FORMAT §9.2).

    Each run of at least ``MIN_PACKED_RUN`` adjacent ``assistant/chunk`` deltas of
    one block (same kind, turn, step, index and, for tool calls, the same ``id``
    and ``name`` presence/value; consecutive seqs; safe-integer time gaps) becomes
    one packed row; every other event is its ``Event.encode()`` line. A chunk whose
    shape is not exactly whitelisted is written verbatim, so packing never loses
    data. Expanding the rows gives back exactly the events given.
    """
    return _pack(events, None, None, False)

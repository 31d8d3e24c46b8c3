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

import itertools
from collections.abc import Sequence
from typing import Any, Final

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


def is_packed_row(obj: object) -> bool:
    """True when ``obj`` is tagged as a packed row (its validity is checked by ``expand_row``)."""
    return isinstance(obj, dict) and obj.get("type") in PACKED_ROW_TYPES


def expand_row(row: dict[str, Any]) -> list[dict[str, Any]]:
    """The wire events a packed row stands for, in FORMAT's expanded key order.

    Raises ``PackedRowError`` when the row breaks any rule of FORMAT §9.2.
    """
    kind = row.get("type")
    if set(row) != _ROW_KEYS or kind not in PACKED_ROW_TYPES:
        raise PackedRowError("packed row must have exactly type, seq0, time0, data")
    seq0, time0, data = row["seq0"], row["time0"], row["data"]
    if not _safe(seq0) or seq0 < 0 or not _safe(time0) or not isinstance(data, dict):
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
    gaps = data["dt"]
    if not isinstance(gaps, list) or len(gaps) != len(pieces) - 1 or not all(_safe(g) for g in gaps):
        raise PackedRowError("packed row dt must hold one safe-integer gap per member after the first")
    turn, step, index = data["turn"], data["step"], data["index"]
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

_KIND_ROWS: Final = {
    "text-delta": "text-chunks",
    "reasoning-delta": "reasoning-chunks",
    "tool-call-delta": "tool-call-chunks",
}
_TEXT_CHUNK_KEYS: Final = frozenset({"type", "index", "text"})
_TOOL_CHUNK_KEYS: Final = frozenset({"type", "index", "id", "argumentsDelta"})
_TOOL_CHUNK_KEYS_NAMED: Final = _TOOL_CHUNK_KEYS | {"name"}
_NUMBERS: Final = (int, float)
_NO_NAME: Final = object()


class _Member:
    """A packable ``assistant/chunk``: its envelope and the decoded data it packs from.

    ``block`` holds everything that must be equal along a run, with the types of the
    numbers (``1`` and ``1.0`` are different bytes once written back).
    """

    __slots__ = ("block", "chunk", "event", "kind", "piece", "step", "turn")

    def __init__(
        self, event: Event, kind: str, turn: Any, step: Any, chunk: dict[str, Any], piece: str
    ) -> None:
        self.event = event
        self.kind = kind
        self.turn = turn
        self.step = step
        self.chunk = chunk
        self.piece = piece
        index = chunk["index"]
        if kind == "tool-call-delta":
            name = chunk.get("name", _NO_NAME)
            self.block: tuple[Any, ...] = (
                kind,
                type(turn),
                turn,
                type(step),
                step,
                type(index),
                index,
                chunk["id"],
                name,
            )
        else:
            self.block = (kind, type(turn), turn, type(step), step, type(index), index)


def _classify(event: Event) -> _Member | None:
    """The event as a run member when its whole shape is whitelisted (FORMAT §9.2), else ``None``."""
    if (
        event.type != "assistant/chunk"
        or event.surface_op is not None
        or event.source_event_seqs is not None
        or event.ignorable
    ):
        return None
    seq, moment = event.seq, event.time
    if (
        type(seq) is not int
        or type(moment) is not int
        or not 0 <= seq <= MAX_SAFE_INTEGER
        or not -MAX_SAFE_INTEGER <= moment <= MAX_SAFE_INTEGER
    ):
        return None
    try:
        data = orjson.loads(event.data_json)
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
    elif kind == "tool-call-delta":
        piece = chunk.get("argumentsDelta")
        keys = chunk.keys()
        if keys == _TOOL_CHUNK_KEYS_NAMED:
            if type(chunk["name"]) is not str:
                return None
        elif keys != _TOOL_CHUNK_KEYS:
            return None
        if type(chunk["id"]) is not str or type(piece) is not str:
            return None
    else:
        return None
    return _Member(event, kind, turn, step, chunk, piece)


def _continues(previous: _Member, member: _Member) -> bool:
    return (
        member.event.seq == previous.event.seq + 1
        and member.block == previous.block
        and _safe(member.event.time - previous.event.time)
    )


def _row(run: list[_Member]) -> bytes:
    first = run[0]
    times = [member.event.time for member in run]
    chunk = first.chunk
    data: dict[str, Any] = {
        "turn": first.turn,
        "step": first.step,
        "index": chunk["index"],
        "dt": [later - earlier for earlier, later in itertools.pairwise(times)],
    }
    if first.kind == "tool-call-delta":
        data["id"] = chunk["id"]
        if "name" in chunk:
            data["name"] = chunk["name"]
        data["args"] = [member.piece for member in run]
    else:
        data["texts"] = [member.piece for member in run]
    return dumps(
        {"type": _KIND_ROWS[first.kind], "seq0": first.event.seq, "time0": first.event.time, "data": data}
    )


def pack_records(
    events: Sequence[Event], *, max_members: int | None = None, max_bytes: int | None = None
) -> list[tuple[int, str, int, bytes]]:
    """The storage records of one write batch as ``(seq, type, time, line)``: a packed row
    gives its first member's seq and time and its row type (``text-chunks`` …), any other
    event its own. See ``pack_rows`` for the packing rules. ``max_members`` and
    ``max_bytes`` (of the members' text) cap one row; a longer run continues in the next."""
    out: list[tuple[int, str, int, bytes]] = []
    run: list[_Member] = []
    size = 0

    def flush() -> None:
        nonlocal size
        if len(run) >= MIN_PACKED_RUN:
            first = run[0]
            out.append((first.event.seq, _KIND_ROWS[first.kind], first.event.time, _row(run)))
        else:
            out.extend((m.event.seq, m.event.type, m.event.time, m.event.encode()) for m in run)
        run.clear()
        size = 0

    for event in events:
        member = _classify(event)
        if member is None:
            if run:
                flush()
            out.append((event.seq, event.type, event.time, event.encode()))
            continue
        if run and (
            not _continues(run[-1], member)
            or (max_members is not None and len(run) >= max_members)
            or (max_bytes is not None and size + len(member.piece) > max_bytes)
        ):
            flush()
        run.append(member)
        size += len(member.piece)
    flush()
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

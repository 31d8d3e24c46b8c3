"""Packed chunk rows: the compact storage form of runs of ``assistant/chunk`` (FORMAT §9.2).

A storage row is an event verbatim or a packed row that stands for ≥3 adjacent
delta chunks of one block::

    {"type":"text-chunks","seq0":7,"time0":5000,
     "data":{"turn":2,"step":1,"index":1,"dt":[12,-3],"texts":["Hel","lo ","there"]}}

Member k has seq ``seq0 + k`` and time ``time0 + sum(dt[:k])``. This module
decodes rows; every backend reads them.
"""

from __future__ import annotations

from typing import Any, Final

from harness.events.json import MAX_SAFE_INTEGER

__all__ = ["PACKED_ROW_TYPES", "PackedRowError", "expand_row", "is_packed_row"]

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

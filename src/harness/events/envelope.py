"""Envelope rules and the wire codec of one event (FORMAT §0, §2).

The wire form of an event is a JSON object with the keys ``type, seq, time,
data, sourceEventSeqs?, surfaceOp?, ignorable?`` in that order and no others.
"""

from __future__ import annotations

import math
from typing import Final

from harness.events.event import Event
from harness.events.json import MAX_SAFE_INTEGER

__all__ = [
    "ENVELOPE_KEYS",
    "as_safe_int",
    "encode_event",
    "envelope_problem",
]

ENVELOPE_KEYS: Final = frozenset({"type", "seq", "time", "data", "sourceEventSeqs", "surfaceOp", "ignorable"})


def as_safe_int(value: object, *, negative_zero: bool = False) -> int | None:
    """``value`` as a safe integer, accepting integral floats (``3.0``); else ``None``.

    Negative zero (``-0.0``) is refused unless ``negative_zero``: the reference refuses
    it in a header, but its event envelope and load rules take it as ``0``.
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER else None
    if isinstance(value, float) and value.is_integer() and abs(value) <= MAX_SAFE_INTEGER:
        if not negative_zero and value == 0.0 and math.copysign(1.0, value) < 0:
            return None
        return int(value)
    return None


def envelope_problem(obj: object) -> str | None:
    """Why ``obj`` is not a valid event envelope, or ``None`` when it is.

    Checks only the envelope (FORMAT §2): the Surface fields' contents are the
    Surface rules' business. As in the reference, ``type`` may be any string (an
    empty one is an unknown type, loadable only when ignorable) and ``seq``/``time``
    may be ``-0.0`` (read as ``0``); appends are stricter.
    """
    if not isinstance(obj, dict):
        return "an event must be a JSON object"
    if not obj.keys() <= ENVELOPE_KEYS:
        for key in obj:
            if key not in ENVELOPE_KEYS:
                return f"unexpected key {key!r}"
    kind = obj.get("type")
    if type(kind) is not str:
        return "type must be a string"
    seq = obj.get("seq")
    if type(seq) is not int or not 0 <= seq <= MAX_SAFE_INTEGER:
        seq = as_safe_int(seq, negative_zero=True)
    if seq is None or seq < 0:
        return "seq must be a non-negative safe integer"
    moment = obj.get("time")
    if (type(moment) is not int or not -MAX_SAFE_INTEGER <= moment <= MAX_SAFE_INTEGER) and as_safe_int(
        moment, negative_zero=True
    ) is None:
        return "time must be a safe integer"
    if "data" not in obj:
        return "data is missing"
    if "ignorable" in obj and obj["ignorable"] is not True:
        return "ignorable must be true when present"
    return None


def encode_event(event: Event) -> bytes:
    """One event as compact JSON bytes (no trailing newline), in wire key order."""
    return event.encode()

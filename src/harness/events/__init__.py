"""Immutable events and lossless JSON: ``Event``, surface ops, frozen values, the envelope and the
vocabulary of known event types (FORMAT §1–2).
"""

from __future__ import annotations

from harness.events.envelope import encode_event
from harness.events.event import APPEND, Event, Replace, SurfaceOp
from harness.events.json import (
    MAX_SAFE_INTEGER,
    FrozenDict,
    FrozenList,
    JsonValue,
    check_json,
    snapshot,
    thaw,
)
from harness.events.vocabulary import KNOWN_EVENT_TYPES, MESSAGE_EVENT_TYPES, SURFACE_TYPES

__all__ = [
    "APPEND",
    "KNOWN_EVENT_TYPES",
    "MAX_SAFE_INTEGER",
    "MESSAGE_EVENT_TYPES",
    "SURFACE_TYPES",
    "Event",
    "FrozenDict",
    "FrozenList",
    "JsonValue",
    "Replace",
    "SurfaceOp",
    "check_json",
    "encode_event",
    "snapshot",
    "thaw",
]

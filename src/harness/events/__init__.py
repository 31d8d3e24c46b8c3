"""Immutable events and lossless JSON: ``Event``, surface ops, frozen values, the envelope and the
registry of event types (``harness.events.types``, FORMAT §1–2).
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
from harness.events.types import EVENT_TYPES, EventType, event_type
from harness.events.vocabulary import KNOWN_EVENT_TYPES, MESSAGE_EVENT_TYPES, SURFACE_TYPES

__all__ = [
    "APPEND",
    "EVENT_TYPES",
    "KNOWN_EVENT_TYPES",
    "MAX_SAFE_INTEGER",
    "MESSAGE_EVENT_TYPES",
    "SURFACE_TYPES",
    "Event",
    "EventType",
    "FrozenDict",
    "FrozenList",
    "JsonValue",
    "Replace",
    "SurfaceOp",
    "check_json",
    "encode_event",
    "event_type",
    "snapshot",
    "thaw",
]

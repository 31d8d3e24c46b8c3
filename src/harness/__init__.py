"""harness: durable, auditable, event-sourced sessions for LLM agents.

The core is ``Session``: an append-only log of immutable ``Event`` values and the
model-visible Surface folded from it. See ``docs/architecture.md``.
"""

from __future__ import annotations

from harness.errors import (
    ForkError,
    HarnessError,
    InvalidEvent,
    InvalidEventData,
    InvalidHeader,
    InvalidSeed,
    NoRequestHeader,
    SurfaceRuleError,
)
from harness.events.envelope import encode_event
from harness.events.event import APPEND, Event, Replace, SurfaceOp
from harness.events.json import FrozenDict, FrozenList, snapshot, thaw
from harness.events.vocabulary import KNOWN_EVENT_TYPES, SURFACE_TYPES
from harness.messages.model import (
    Message,
    TokenUsage,
    assistant_message,
    text_block,
    tool_call_block,
    tool_result_message,
    user_message,
)
from harness.messages.request import EpochHeader, GenerateOptions, classify_request_header
from harness.session.header import SessionHeader
from harness.session.repair import repair_closers
from harness.session.request import build_request, fold_request_header
from harness.session.session import EventLog, Session, fork_seed
from harness.surface.fold import Replacement, SurfaceFold, fold_surface
from harness.surface.manager import SurfaceManager, SurfaceView

__version__ = "0.1.0"

__all__ = [
    "APPEND",
    "KNOWN_EVENT_TYPES",
    "SURFACE_TYPES",
    "EpochHeader",
    "Event",
    "EventLog",
    "ForkError",
    "FrozenDict",
    "FrozenList",
    "GenerateOptions",
    "HarnessError",
    "InvalidEvent",
    "InvalidEventData",
    "InvalidHeader",
    "InvalidSeed",
    "Message",
    "NoRequestHeader",
    "Replace",
    "Replacement",
    "Session",
    "SessionHeader",
    "SurfaceFold",
    "SurfaceManager",
    "SurfaceOp",
    "SurfaceRuleError",
    "SurfaceView",
    "TokenUsage",
    "__version__",
    "assistant_message",
    "build_request",
    "classify_request_header",
    "encode_event",
    "fold_request_header",
    "fold_surface",
    "fork_seed",
    "repair_closers",
    "snapshot",
    "text_block",
    "thaw",
    "tool_call_block",
    "tool_result_message",
    "user_message",
]

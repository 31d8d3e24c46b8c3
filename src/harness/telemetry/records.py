"""The projection's output: finished spans as plain values, before any OpenTelemetry type."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, TypeAlias

__all__ = ["AttributeValue", "SpanEventRecord", "SpanKind", "SpanRecord", "SpanStatus"]

AttributeValue: TypeAlias = str | bool | int | float | Sequence[str]
"""What an attribute holds: a scalar or a list of strings (content is a JSON string)."""
SpanKind: TypeAlias = Literal["internal", "client"]
SpanStatus: TypeAlias = Literal["unset", "ok", "error"]


@dataclass(frozen=True, slots=True)
class SpanEventRecord:
    """A timestamped event on a span (an approval, a crash repair, a world check)."""

    name: str
    time_ns: int
    attributes: Mapping[str, AttributeValue]


@dataclass(frozen=True, slots=True)
class SpanRecord:
    """One finished span: ids are lowercase hex (32 digits for the trace, 16 for spans)."""

    trace_id: str
    span_id: str
    parent_span_id: str | None
    name: str
    kind: SpanKind
    start_ns: int
    end_ns: int
    attributes: Mapping[str, AttributeValue]
    events: tuple[SpanEventRecord, ...] = ()
    status: SpanStatus = "unset"
    status_message: str = ""

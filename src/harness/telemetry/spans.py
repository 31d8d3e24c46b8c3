"""The building blocks of the projection: a span being built (``OpenSpan``), and the readings
of log values it shares (usage in the conventions' counts, failure codes, tool descriptions).
Every string that leaves here is redacted (``harness.compaction.cues.redact``), content apart:
``content`` cleaned it string by string already."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from harness.compaction.cues import redact
from harness.telemetry import conventions as c
from harness.telemetry.records import (
    AttributeValue,
    SpanEventRecord,
    SpanKind,
    SpanRecord,
    SpanStatus,
)

__all__ = [
    "MS",
    "USAGE_KEYS",
    "OpenSpan",
    "as_int",
    "call_name",
    "clean_attributes",
    "failure_code",
    "ns",
    "tool_description",
    "usage_attributes",
]

MS: Final = 1_000_000


def ns(ms: int) -> int:
    """Epoch milliseconds (the log's times) as nanoseconds (OTLP's)."""
    return ms * MS


def as_int(value: Any) -> int | None:
    """``value`` when it is an int (not a bool), else None."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def clean_attributes(
    attributes: Mapping[str, AttributeValue],
) -> dict[str, AttributeValue]:
    """Every string redacted, except content (already cleaned string by string)."""
    out: dict[str, AttributeValue] = {}
    for key, value in attributes.items():
        if key in c.CONTENT_KEYS:
            out[key] = value
        elif isinstance(value, str):
            out[key] = redact(value)
        elif isinstance(value, (list, tuple)):
            out[key] = [redact(str(item)) for item in value]
        else:
            out[key] = value
    return out


@dataclass
class OpenSpan:
    """A span being built: ``fail`` marks it an error, ``close`` finishes it (redacted)."""

    trace_id: str
    span_id: str
    parent: str | None
    name: str
    kind: SpanKind
    start_ms: int
    attributes: dict[str, AttributeValue]
    events: list[SpanEventRecord] = field(default_factory=list)
    status: SpanStatus = "unset"
    message: str = ""

    def fail(self, error_type: str, message: str = "") -> None:
        self.attributes[c.ERROR_TYPE] = error_type
        self.status = "error"
        self.message = message or error_type

    def close(self, end_ms: int) -> SpanRecord:
        return SpanRecord(
            trace_id=self.trace_id,
            span_id=self.span_id,
            parent_span_id=self.parent,
            name=redact(self.name),
            kind=self.kind,
            start_ns=ns(self.start_ms),
            end_ns=ns(max(end_ms, self.start_ms)),
            attributes=clean_attributes(self.attributes),
            events=tuple(
                SpanEventRecord(e.name, e.time_ns, clean_attributes(e.attributes)) for e in self.events
            ),
            status=self.status,
            status_message=redact(self.message),
        )


def usage_attributes(usage: Any) -> dict[str, AttributeValue]:
    """FORMAT's disjoint TokenUsage as the conventions' counts (input includes cache reads/writes)."""
    if not isinstance(usage, Mapping):
        return {}
    fresh = as_int(usage.get("inputTokens")) or 0
    read = as_int(usage.get("cacheReadTokens"))
    write = as_int(usage.get("cacheWriteTokens"))
    out: dict[str, AttributeValue] = {c.INPUT_TOKENS: fresh + (read or 0) + (write or 0)}
    if (output := as_int(usage.get("outputTokens"))) is not None:
        out[c.OUTPUT_TOKENS] = output
    if read is not None:
        out[c.CACHE_READ_TOKENS] = read
    if write is not None:
        out[c.CACHE_CREATION_TOKENS] = write
    if (reasoning := as_int(usage.get("reasoningTokens"))) is not None:
        out[c.REASONING_TOKENS] = reasoning
    return out


USAGE_KEYS = (
    c.INPUT_TOKENS,
    c.OUTPUT_TOKENS,
    c.CACHE_READ_TOKENS,
    c.CACHE_CREATION_TOKENS,
    c.REASONING_TOKENS,
)


def failure_code(failure: Any, default: str) -> tuple[str, str]:
    """An LlmFailure's ``(code, message)``; ``default`` when it names no code."""
    if isinstance(failure, Mapping):
        code = failure.get("code")
        message = failure.get("message")
        return (str(code) if code else default), (str(message) if message else "")
    return default, ""


def tool_description(header: Mapping[str, Any], name: str) -> str | None:
    """The description the request header gives tool ``name``."""
    tools = header.get("tools")
    if not isinstance(tools, (list, tuple)):
        return None
    for tool in tools:
        if (
            isinstance(tool, Mapping)
            and tool.get("name") == name
            and isinstance(tool.get("description"), str)
        ):
            description: str = tool["description"]
            return description
    return None


def call_name(message: Any, call_id: str) -> str:
    """The tool name an assistant message's tool-call block gives ``call_id``."""
    if isinstance(message, Mapping):
        for block in message.get("content") or ():
            if isinstance(block, Mapping) and block.get("type") == "tool-call" and block.get("id") == call_id:
                return str(block.get("name") or "unknown")
    return "unknown"

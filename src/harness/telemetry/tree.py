"""The span tree of a projection as indented text (for people, the docs and the tests)."""

from __future__ import annotations

from collections.abc import Sequence

from harness.telemetry import conventions as c
from harness.telemetry.projection import spans_by_trace
from harness.telemetry.records import SpanRecord

__all__ = ["render_tree"]

_SHOWN = {
    c.REQUEST_MODEL: "model",
    c.FINISH_REASONS: "finish",
    c.INPUT_TOKENS: "in",
    c.OUTPUT_TOKENS: "out",
    c.CACHE_READ_TOKENS: "cache_read",
    c.TOOL_CALL_ID: "call",
    c.ERROR_TYPE: "error",
    c.END_REASON: "end",
    c.TOKENS_BEFORE: "tokens_before",
    c.TOKENS_AFTER: "tokens_after",
    c.COMPACTION_OUTCOME: "outcome",
}


def _details(span: SpanRecord) -> str:
    parts = []
    for key, label in _SHOWN.items():
        if key in span.attributes:
            value = span.attributes[key]
            shown = ",".join(value) if isinstance(value, (list, tuple)) else str(value)
            parts.append(f"{label}={shown}")
    return f" [{' '.join(parts)}]" if parts else ""


def render_tree(spans: Sequence[SpanRecord], *, details: bool = True) -> str:
    """One line per span, children indented under their parent, traces in start order; span
    events are listed under their span with ``·``."""
    lines: list[str] = []
    traces = sorted(spans_by_trace(spans).values(), key=lambda members: members[0].start_ns)
    for members in traces:
        ids = {span.span_id for span in members}
        children: dict[str | None, list[SpanRecord]] = {}
        for span in members:
            parent = span.parent_span_id if span.parent_span_id in ids else None
            children.setdefault(parent, []).append(span)
        lines.append(f"trace {members[0].trace_id}")

        def walk(
            parent: str | None, depth: int, children: dict[str | None, list[SpanRecord]] = children
        ) -> None:
            for span in children.get(parent, ()):
                status = " ERROR" if span.status == "error" else ""
                extra = _details(span) if details else ""
                lines.append(f"{'  ' * depth}{span.name}{status}{extra}")
                for event in span.events:
                    lines.append(f"{'  ' * (depth + 1)}· {event.name}")
                walk(span.span_id, depth + 1, children)

        walk(None, 1)
    return "\n".join(lines) + "\n"

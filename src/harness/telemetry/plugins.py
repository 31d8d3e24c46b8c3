"""The span events and spans of the log-only plugin events (approvals, compaction, world
checks), and the state and placement rules the projection shares: ``ProjectorBase``, which
``Projector`` extends with turns, steps, model requests and tool calls."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness.events.event import Event
from harness.telemetry import conventions as c
from harness.telemetry.content import content_json, tool_result_text
from harness.telemetry.ids import span_id, trace_id
from harness.telemetry.records import (
    AttributeValue,
    SpanEventRecord,
    SpanKind,
    SpanRecord,
)
from harness.telemetry.spans import OpenSpan, as_int, ns, usage_attributes

__all__ = ["ProjectorBase"]


class ProjectorBase:
    """What every handler of the projection reads and writes, and where a span or an event goes."""

    def __init__(self, session_id: str, *, capture_content: bool, agent_name: str) -> None:
        self.session_id = session_id
        self.capture_content = capture_content
        self.agent_name = agent_name
        self._turn: OpenSpan | None = None
        self._tools: dict[str, OpenSpan] = {}
        self._approvals: dict[str, str] = {}
        self._compactions: dict[str, OpenSpan] = {}
        self._header: Mapping[str, Any] = {}
        self._context: Mapping[str, Any] = {}
        self._pending: list[SpanEventRecord] = []
        self._pending_seq: int | None = None

    def _base(self) -> dict[str, AttributeValue]:
        return {c.CONVERSATION: self.session_id, c.SESSION_ID: self.session_id}

    def _config(self) -> Mapping[str, Any]:
        config = self._header.get("config")
        return config if isinstance(config, Mapping) else {}

    def _route(self) -> tuple[str, str]:
        config = self._config()
        provider = config.get("provider") or self._context.get("provider") or "unknown"
        model = config.get("model") or self._context.get("model") or "unknown"
        return str(provider), str(model)

    def _child(self, kind: str, seq: int, name: str, span_kind: SpanKind, start_ms: int) -> OpenSpan:
        """A span under the open turn, or the root of a trace of its own between turns."""
        attributes = self._base()
        if self._turn is not None:
            return OpenSpan(
                self._turn.trace_id,
                span_id(self.session_id, kind, seq),
                self._turn.span_id,
                name,
                span_kind,
                start_ms,
                attributes,
            )
        return OpenSpan(
            trace_id(self.session_id, seq),
            span_id(self.session_id, kind, seq),
            None,
            name,
            span_kind,
            start_ms,
            attributes,
        )

    def _event(
        self,
        target: OpenSpan | None,
        name: str,
        time_ms: int,
        attributes: dict[str, AttributeValue],
        seq: int,
    ) -> None:
        attributes[c.SEQ] = seq
        record = SpanEventRecord(name, ns(time_ms), attributes)
        target = target or self._turn
        if target is not None:
            target.events.append(record)
        else:
            if self._pending_seq is None:
                self._pending_seq = seq
            self._pending.append(record)

    def _approval_asked(self, event: Event, data: Mapping[str, Any], out: list[SpanRecord]) -> None:
        call_id = data.get("callId")
        attributes: dict[str, AttributeValue] = {}
        if isinstance(data.get("id"), str):
            attributes["harness.approval.id"] = data["id"]
            if isinstance(call_id, str):
                self._approvals[data["id"]] = call_id
        if isinstance(data.get("toolName"), str):
            attributes[c.TOOL_NAME] = data["toolName"]
        if isinstance(call_id, str):
            attributes[c.TOOL_CALL_ID] = call_id
        target = self._tools.get(call_id) if isinstance(call_id, str) else None
        self._event(target, c.EVENT_APPROVAL_ASKED, event.time, attributes, event.seq)

    def _approval_decided(self, event: Event, data: Mapping[str, Any], out: list[SpanRecord]) -> None:
        approval = data.get("id")
        call_id = self._approvals.pop(approval, None) if isinstance(approval, str) else None
        attributes: dict[str, AttributeValue] = {"harness.approval.outcome": str(data.get("outcome"))}
        if isinstance(approval, str):
            attributes["harness.approval.id"] = approval
        if call_id is not None:
            attributes[c.TOOL_CALL_ID] = call_id
        target = self._tools.get(call_id) if call_id is not None else None
        self._event(target, c.EVENT_APPROVAL_DECIDED, event.time, attributes, event.seq)

    def _compaction_start(self, event: Event, data: Mapping[str, Any], out: list[SpanRecord]) -> None:
        compaction = data.get("compactionId")
        if not isinstance(compaction, str):
            return
        span = self._child("compaction", event.seq, c.COMPACTION_SPAN, "internal", event.time)
        span.attributes[c.COMPACTION_ID] = compaction
        span.attributes[c.MANUAL] = data.get("turn") is None
        span.attributes[c.SEQ] = event.seq
        self._compactions[compaction] = span

    def _compaction_summary(self, event: Event, data: Mapping[str, Any], out: list[SpanRecord]) -> None:
        span = self._compactions.get(str(data.get("compactionId")))
        if span is None:
            return
        if (before := as_int(data.get("shadowedTokenCount"))) is not None:
            span.attributes[c.TOKENS_BEFORE] = before
        seqs = data.get("shadowedSeqs")
        if isinstance(seqs, (list, tuple)):
            span.attributes[c.SHADOWED_NODES] = len(seqs)
        summary = data.get("summary")
        if self.capture_content and isinstance(summary, (str, list, tuple)):  # dsh writes blocks
            blocks = {"content": [{"type": "tool-result", "content": summary}]}
            text = summary if isinstance(summary, str) else tool_result_text(blocks)
            span.attributes[c.COMPACTION_SUMMARY] = content_json(text)
        if data.get("llmStreamCall") is True:  # the summarizer asked a model: its request, as a child
            provider = str(data.get("provider") or "unknown")
            model = str(data.get("model") or "unknown")
            chat = OpenSpan(
                span.trace_id,
                span_id(self.session_id, "compaction-chat", event.seq),
                span.span_id,
                f"{c.CHAT} {model}",
                "client",
                span.start_ms,
                self._base(),
            )
            a = chat.attributes
            a[c.OPERATION] = c.CHAT
            a[c.PROVIDER] = c.provider_name(provider)
            a[c.HARNESS_PROVIDER] = provider
            a[c.REQUEST_MODEL] = model
            if (max_tokens := as_int(data.get("maxTokens"))) is not None:
                a[c.REQUEST_MAX_TOKENS] = max_tokens
            a.update(usage_attributes(data.get("usage")))
            out.append(chat.close(event.time))

    def _compaction_prune(self, event: Event, data: Mapping[str, Any], out: list[SpanRecord]) -> None:
        attributes: dict[str, AttributeValue] = {}
        if (before := as_int(data.get("shadowedTokenCount"))) is not None:
            attributes[c.TOKENS_BEFORE] = before
        seqs = data.get("shadowedSeqs")
        if isinstance(seqs, (list, tuple)):
            attributes[c.SHADOWED_NODES] = len(seqs)
        self._event(None, c.EVENT_PRUNE, event.time, attributes, event.seq)

    def _compaction_end(self, event: Event, data: Mapping[str, Any], out: list[SpanRecord]) -> None:
        span = self._compactions.pop(str(data.get("compactionId")), None)
        if span is None:
            return
        error = data.get("error")
        if error:
            span.attributes[c.COMPACTION_OUTCOME] = "failed"
            span.fail("compaction_failed", str(error))
        else:
            compacted = c.TOKENS_BEFORE in span.attributes
            span.attributes[c.COMPACTION_OUTCOME] = "compacted" if compacted else "nothing"
        out.append(span.close(event.time))

    def _recovery_check(self, event: Event, data: Mapping[str, Any], out: list[SpanRecord]) -> None:
        attributes: dict[str, AttributeValue] = {"harness.recovery.blocking": data.get("blocking") is True}
        counts = data.get("counts")
        if isinstance(counts, Mapping):
            for severity in ("block", "warn", "info"):
                if (count := as_int(counts.get(severity))) is not None:
                    attributes[f"harness.recovery.{severity}"] = count
        findings = data.get("findings")
        if isinstance(findings, (list, tuple)):
            kinds = [str(f.get("kind")) for f in findings if isinstance(f, Mapping)]
            attributes["harness.recovery.findings"] = kinds
        if (at := as_int(data.get("atSeq"))) is not None:
            attributes["harness.recovery.at_seq"] = at
        self._event(None, c.EVENT_WORLD_CHECK, event.time, attributes, event.seq)

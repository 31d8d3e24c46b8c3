"""The projection of a session's log to OpenTelemetry GenAI spans (docs/telemetry.md).

One pass over the events, in seq order, that only reads them: ``Projector.feed`` takes one
event and returns the spans it finished, so the same code serves an export (every event, then
``finish``) and a live observer (each append as it comes). The tree:

- a turn (``turn/start`` .. ``turn/end``) is an ``invoke_agent`` span, the root of its own trace;
- each model request is a ``chat`` span under it: from the step's start (or the retry's start)
  to the assembled ``assistant/message`` citing its chunks, or to the ``llm/retry`` / ``turn/end``
  that recorded its failure;
- each tool call is an ``execute_tool`` span under the turn, from its ``tool/call`` to the
  ``tool/result`` answering its call id (the result that cites it in ``sourceEventSeqs``);
- a compaction is a ``harness.compaction`` span (under its turn, or a root of its own when it ran
  between turns), with the summarizer's model request as a ``chat`` child;
- approvals, crash repairs, prunes, retries and world checks are span events; a world check
  recorded between turns goes on the next turn's span.

A malformed event never raises here: what cannot be read is skipped.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from harness.compaction.meter import price_message
from harness.events.event import Event, Replace
from harness.events.types import Aspect, Hooks
from harness.messages.records import answered_call_id
from harness.telemetry import conventions as c
from harness.telemetry.content import (
    content_json,
    message_parts,
    tool_arguments,
    tool_result_text,
)
from harness.telemetry.ids import span_id, trace_id
from harness.telemetry.plugins import ProjectorBase
from harness.telemetry.records import AttributeValue, SpanRecord
from harness.telemetry.spans import (
    MS,
    USAGE_KEYS,
    OpenSpan,
    as_int,
    call_name,
    failure_code,
    tool_description,
    usage_attributes,
)

__all__ = ["Projector", "project_session", "spans_by_trace"]

_TELLING_CHUNK = re.compile(rb'"type"\s*:\s*"(?:usage|finish)"')
"""The chunks whose content the projection reads (usage, finish); the others are not decoded."""
_REPAIR_CODES = frozenset({"TOOL_OUTCOME_UNKNOWN", "TOOL_NOT_STARTED"})
_FINISH = {"stop": "stop", "tool-calls": "tool_calls", "max-tokens": "length"}
_CONTENT_FINISH = {"stop": "stop", "tool-calls": "tool_call", "max-tokens": "length"}
_FAILED_TURNS = frozenset({"error", "aborted", "interrupted"})


@dataclass
class _Attempt:
    """The model request of the current step: opened by its first chunk (or message, or failure)."""

    span: OpenSpan
    finish: str | None = None
    usage: Any = None


class Projector(ProjectorBase):
    """Turns events into finished spans, one event at a time (see the module doc).

    ``capture_content`` adds the Opt-In content attributes (messages, tool arguments and
    results, the system instructions, compaction summaries), each redacted; without it no
    message text leaves the log. ``agent_name`` is ``gen_ai.agent.name``.
    """

    def __init__(
        self,
        session_id: str,
        *,
        capture_content: bool = False,
        agent_name: str = "harness",
    ) -> None:
        super().__init__(session_id, capture_content=capture_content, agent_name=agent_name)
        self._turn_usage: dict[str, int] = {}
        self._turn_inputs: list[Any] = []
        self._turn_output: Any = None
        self._step: int | None = None
        self._attempt_start: int | None = None
        self._attempt: _Attempt | None = None
        self._tool_args: dict[str, Any] = {}
        self._last_ms = 0

    # ---- the public surface ---------------------------------------------------------------

    def feed(self, event: Event) -> list[SpanRecord]:
        """The spans ``event`` finished (often none)."""
        self._last_ms = max(self._last_ms, event.time)
        handler = _HANDLERS.get(event.type)
        if handler is None:
            return []
        if handler is Projector._chunk and not _TELLING_CHUNK.search(event.data_json):
            if self._attempt is None:  # a delta or a block bound: it only says a request is under way
                self._open_chat(event)
            return []
        try:
            data = event.data
        except ValueError:
            return []
        if not isinstance(data, Mapping):
            return []
        out: list[SpanRecord] = []
        handler(self, event, data, out)
        return out

    def finish(self) -> list[SpanRecord]:
        """Close what the log left open (marked ``harness.incomplete``) at the last event's time."""
        out: list[SpanRecord] = []
        end = self._last_ms
        self._close_attempt(end, out, incomplete=True)
        for span in self._tools.values():
            span.attributes[c.INCOMPLETE] = True
            out.append(span.close(end))
        self._tools.clear()
        for span in self._compactions.values():
            span.attributes[c.INCOMPLETE] = True
            out.append(span.close(end))
        self._compactions.clear()
        if self._turn is not None:
            self._turn.attributes[c.INCOMPLETE] = True
            out.append(self._close_turn(end))
        if self._pending and self._pending_seq is not None:
            seq = self._pending_seq
            span = OpenSpan(
                trace_id(self.session_id, seq),
                span_id(self.session_id, "between-turns", seq),
                None,
                c.BETWEEN_TURNS_SPAN,
                "internal",
                self._pending[0].time_ns // MS,
                self._base(),
                list(self._pending),
            )
            out.append(span.close(self._pending[-1].time_ns // MS))
            self._pending.clear()
            self._pending_seq = None
        return out

    # ---- helpers --------------------------------------------------------------------------

    def _open_chat(self, event: Event) -> _Attempt:
        provider, model = self._route()
        start = self._attempt_start if self._attempt_start is not None else event.time
        span = self._child("chat", event.seq, f"{c.CHAT} {model}", "client", start)
        a = span.attributes
        a[c.OPERATION] = c.CHAT
        a[c.PROVIDER] = c.provider_name(provider)
        a[c.HARNESS_PROVIDER] = provider
        a[c.REQUEST_MODEL] = model
        config = self._config()
        if (max_tokens := as_int(config.get("maxTokens"))) is not None:
            a[c.REQUEST_MAX_TOKENS] = max_tokens
        temperature = config.get("temperature")
        if isinstance(temperature, (int, float)) and not isinstance(temperature, bool):
            a[c.REQUEST_TEMPERATURE] = float(temperature)
        top_p = config.get("topP")
        if isinstance(top_p, (int, float)) and not isinstance(top_p, bool):
            a[c.REQUEST_TOP_P] = float(top_p)
        stop = config.get("stop")
        if isinstance(stop, str):
            a[c.REQUEST_STOP] = [stop]
        elif isinstance(stop, (list, tuple)) and all(isinstance(s, str) for s in stop):
            a[c.REQUEST_STOP] = list(stop)
        if isinstance(effort := config.get("reasoningEffort"), str):
            a[c.REASONING_EFFORT] = effort
        if (window := as_int(self._context.get("contextWindow"))) is not None:
            a[c.CONTEXT_WINDOW] = window
        if self._turn is not None:
            self._turn.attributes.setdefault(c.PROVIDER, c.provider_name(provider))
            self._turn.attributes.setdefault(c.REQUEST_MODEL, model)
        if self._step is not None:
            a[c.STEP] = self._step
        attempt = _Attempt(span)
        self._attempt = attempt
        return attempt

    def _close_attempt(self, end_ms: int, out: list[SpanRecord], *, incomplete: bool = False) -> None:
        attempt = self._attempt
        if attempt is None:
            return
        self._attempt = None
        a = attempt.span.attributes
        if attempt.finish is not None:
            a[c.FINISH_REASONS] = [attempt.finish]
        usage = usage_attributes(attempt.usage)
        a.update(usage)
        for key in USAGE_KEYS:
            if isinstance(value := usage.get(key), int):
                self._turn_usage[key] = self._turn_usage.get(key, 0) + value
        if incomplete:
            a[c.INCOMPLETE] = True
        out.append(attempt.span.close(end_ms))

    def _close_turn(self, end_ms: int) -> SpanRecord:
        turn = self._turn
        assert turn is not None
        turn.attributes.update(self._turn_usage)
        if self.capture_content:
            inputs = [m for m in (message_parts(x) for x in self._turn_inputs) if m is not None]
            turn.attributes[c.INPUT_MESSAGES] = content_json(inputs)
            output = message_parts(self._turn_output) if self._turn_output is not None else None
            turn.attributes[c.OUTPUT_MESSAGES] = content_json([output] if output else [])
            system = self._header.get("system")
            if isinstance(system, str) and system:
                turn.attributes[c.SYSTEM_INSTRUCTIONS] = content_json([{"type": "text", "content": system}])
        record = turn.close(end_ms)
        self._turn = None
        self._turn_usage = {}
        self._turn_inputs = []
        self._turn_output = None
        self._step = None
        self._attempt_start = None
        return record

    # ---- handlers -------------------------------------------------------------------------

    def _turn_start(self, event: Event, data: Mapping[str, Any], out: list[SpanRecord]) -> None:
        if self._turn is not None:  # a turn the log never closed: close it here
            self._close_attempt(event.time, out, incomplete=True)
            for span in self._tools.values():
                span.attributes[c.INCOMPLETE] = True
                out.append(span.close(event.time))
            self._tools.clear()
            self._turn.attributes[c.INCOMPLETE] = True
            out.append(self._close_turn(event.time))
        name = f"{c.INVOKE_AGENT} {self.agent_name}" if self.agent_name else c.INVOKE_AGENT
        turn = OpenSpan(
            trace_id(self.session_id, event.seq),
            span_id(self.session_id, "turn", event.seq),
            None,
            name,
            "internal",
            event.time,
            self._base(),
        )
        turn.attributes[c.OPERATION] = c.INVOKE_AGENT
        if self.agent_name:
            turn.attributes[c.AGENT_NAME] = self.agent_name
        if (number := as_int(data.get("turn"))) is not None:
            turn.attributes[c.TURN] = number
        turn.attributes[c.SEQ] = event.seq
        turn.events.extend(self._pending)
        self._pending.clear()
        self._pending_seq = None
        self._turn = turn

    def _turn_end(self, event: Event, data: Mapping[str, Any], out: list[SpanRecord]) -> None:
        reason = data.get("reason")
        kind = str(reason.get("kind")) if isinstance(reason, Mapping) else "unknown"
        code, message = "", ""
        if kind == "error" and isinstance(reason, Mapping):
            code, message = failure_code(reason.get("error"), "error")
        if self._attempt is not None and kind == "error":
            self._attempt.span.fail(code, message)
        self._close_attempt(event.time, out)
        for span in self._tools.values():
            span.attributes[c.INCOMPLETE] = True
            out.append(span.close(event.time))
        self._tools.clear()
        if self._turn is None:
            return
        turn = self._turn
        turn.attributes[c.END_REASON] = kind
        provider, _ = self._route()
        turn.attributes.setdefault(c.PROVIDER, c.provider_name(provider))
        if kind == "interrupted":
            self._event(
                turn,
                c.EVENT_CRASH_REPAIR,
                event.time,
                {"harness.repair": "turn/end"},
                event.seq,
            )
        if kind in _FAILED_TURNS:
            turn.fail(code or kind, message)
        out.append(self._close_turn(event.time))

    def _step_start(self, event: Event, data: Mapping[str, Any], out: list[SpanRecord]) -> None:
        self._step = as_int(data.get("step"))
        self._attempt_start = event.time

    def _step_end(self, event: Event, data: Mapping[str, Any], out: list[SpanRecord]) -> None:
        self._close_attempt(event.time, out)
        self._step = None
        self._attempt_start = None

    def _request_header(self, event: Event, data: Mapping[str, Any], out: list[SpanRecord]) -> None:
        header = data.get("header")
        if isinstance(header, Mapping):
            self._header = header

    def _request_context(self, event: Event, data: Mapping[str, Any], out: list[SpanRecord]) -> None:
        self._context = data

    def _user_message(self, event: Event, data: Mapping[str, Any], out: list[SpanRecord]) -> None:
        source = data.get("source")
        compaction = source.get("compactionId") if isinstance(source, Mapping) else None
        if isinstance(event.surface_op, Replace) and isinstance(compaction, str):
            span = self._compactions.get(compaction)
            if span is not None:
                span.attributes[c.TOKENS_AFTER] = price_message(data)
            return
        if self._turn is not None and self.capture_content:
            self._turn_inputs.append(data)

    def _chunk(self, event: Event, data: Mapping[str, Any], out: list[SpanRecord]) -> None:
        attempt = self._attempt or self._open_chat(event)
        chunk = data.get("chunk")
        if not isinstance(chunk, Mapping):
            return
        if chunk.get("type") == "usage":
            attempt.usage = chunk.get("usage")
        elif chunk.get("type") == "finish":
            reason = chunk.get("reason")
            kind = str(reason.get("kind")) if isinstance(reason, Mapping) else "unknown"
            attempt.finish = _FINISH.get(kind, kind)
            if kind in ("error", "aborted") and isinstance(reason, Mapping):
                code, message = failure_code(reason.get("failure"), kind)
                attempt.span.fail(code, message)

    def _assistant_message(self, event: Event, data: Mapping[str, Any], out: list[SpanRecord]) -> None:
        attempt = self._attempt or self._open_chat(event)
        a = attempt.span.attributes
        message = data.get("message")
        if isinstance(message, Mapping):
            source = message.get("source")
            if isinstance(source, Mapping) and source.get("model"):
                a[c.RESPONSE_MODEL] = str(source["model"])
            if message.get("id"):
                a[c.RESPONSE_ID] = str(message["id"])
            for block in message.get("content") or ():
                if (
                    isinstance(block, Mapping)
                    and block.get("type") == "tool-call"
                    and isinstance(block.get("id"), str)
                ):
                    self._tool_args.setdefault(block["id"], block.get("arguments"))
            self._turn_output = message
        if "usage" in data:
            attempt.usage = data.get("usage")
        if data.get("interrupted") is True:
            a[c.INTERRUPTED] = True
            attempt.finish = attempt.finish or "interrupted"
        if self.capture_content and isinstance(message, Mapping):
            kind = next((k for k, v in _FINISH.items() if v == attempt.finish), None)
            finish = _CONTENT_FINISH.get(kind or "", attempt.finish)
            parts = message_parts(message, finish_reason=finish)
            a[c.OUTPUT_MESSAGES] = content_json([parts] if parts else [])
        self._close_attempt(event.time, out)
        self._attempt_start = event.time

    def _retry(self, event: Event, data: Mapping[str, Any], out: list[SpanRecord]) -> None:
        attempt = self._attempt or self._open_chat(event)
        code, message = failure_code(data.get("failure"), "retry")
        attempt.span.fail(code, message)
        if (number := as_int(data.get("retry"))) is not None:
            attempt.span.attributes[c.RETRY] = number
        if (delay := as_int(data.get("delayMs"))) is not None:
            attempt.span.attributes[c.RETRY_DELAY_MS] = delay
        attributes: dict[str, AttributeValue] = {c.ERROR_TYPE: code}
        if (number := as_int(data.get("retry"))) is not None:
            attributes[c.RETRY] = number
        self._event(None, c.EVENT_RETRY, event.time, attributes, event.seq)
        self._close_attempt(event.time, out)
        self._attempt_start = event.time

    def _retry_started(self, event: Event, data: Mapping[str, Any], out: list[SpanRecord]) -> None:
        self._attempt_start = event.time

    def _tool_call(self, event: Event, data: Mapping[str, Any], out: list[SpanRecord]) -> None:
        call_id = data.get("callId")
        if not isinstance(call_id, str):
            return
        name = str(data.get("name") or "unknown")
        span = self._child("tool", event.seq, f"{c.EXECUTE_TOOL} {name}", "internal", event.time)
        a = span.attributes
        a[c.OPERATION] = c.EXECUTE_TOOL
        a[c.TOOL_NAME] = name
        a[c.TOOL_CALL_ID] = call_id
        a[c.TOOL_TYPE] = "function"
        if (description := tool_description(self._header, name)) is not None:
            a[c.TOOL_DESCRIPTION] = description
        if self._step is not None or as_int(data.get("step")) is not None:
            a[c.STEP] = self._step if self._step is not None else int(data["step"])
        self._tool_args[call_id] = data.get("arguments")
        self._tools[call_id] = span

    def _tool_result(self, event: Event, data: Mapping[str, Any], out: list[SpanRecord]) -> None:
        message = data.get("message")
        call_id = answered_call_id(data)
        if not isinstance(call_id, str):
            return
        span = self._tools.pop(call_id, None)
        if span is None:  # answered without a recorded start (a repair of a call never started)
            span = self._child("tool", event.seq, f"{c.EXECUTE_TOOL} unknown", "internal", event.time)
            span.attributes[c.OPERATION] = c.EXECUTE_TOOL
            span.attributes[c.TOOL_CALL_ID] = call_id
            span.attributes[c.TOOL_TYPE] = "function"
            name = call_name(self._turn_output, call_id)
            span.attributes[c.TOOL_NAME] = name
            span.name = f"{c.EXECUTE_TOOL} {name}"
        error = data.get("error")
        is_error = any(
            isinstance(b, Mapping) and b.get("type") == "tool-result" and b.get("isError") is True
            for b in (message.get("content") or () if isinstance(message, Mapping) else ())
        )
        if isinstance(error, Mapping) and error.get("code"):
            code = str(error["code"])
            span.fail(code, str(error.get("name") or code))
            if code in _REPAIR_CODES:
                self._event(
                    None,
                    c.EVENT_CRASH_REPAIR,
                    event.time,
                    {
                        "harness.repair": "tool/result",
                        c.TOOL_CALL_ID: call_id,
                        c.ERROR_TYPE: code,
                    },
                    event.seq,
                )
        elif is_error:
            span.fail("tool_error")
        if self.capture_content:
            arguments = self._tool_args.get(call_id)
            if arguments is not None:
                span.attributes[c.TOOL_ARGUMENTS] = content_json(tool_arguments(arguments))
            span.attributes[c.TOOL_RESULT] = content_json(tool_result_text(message))
        self._tool_args.pop(call_id, None)
        out.append(span.close(event.time))


_HANDLERS: Hooks[Callable[[Projector, Event, Mapping[str, Any], list[SpanRecord]], None]] = Hooks(
    Aspect.TELEMETRY
)
for _name, _handler in {
    "turn/start": Projector._turn_start,
    "turn/end": Projector._turn_end,
    "step/start": Projector._step_start,
    "step/end": Projector._step_end,
    "request/header": Projector._request_header,
    "request/context": Projector._request_context,
    "user/message": Projector._user_message,
    "assistant/chunk": Projector._chunk,
    "assistant/message": Projector._assistant_message,
    "llm/retry": Projector._retry,
    "llm/retry-started": Projector._retry_started,
    "tool/call": Projector._tool_call,
    "tool/result": Projector._tool_result,
    "approval/asked": Projector._approval_asked,
    "approval/decided": Projector._approval_decided,
    "compaction/start": Projector._compaction_start,
    "compaction/summary": Projector._compaction_summary,
    "compaction/prune": Projector._compaction_prune,
    "compaction/end": Projector._compaction_end,
    "recovery/check": Projector._recovery_check,
}.items():
    _HANDLERS.register(_name)(_handler)


def project_session(
    session_id: str,
    events: Iterable[Event],
    *,
    capture_content: bool = False,
    agent_name: str = "harness",
) -> list[SpanRecord]:
    """Every span of a log, in the order they finish (see ``Projector``)."""
    projector = Projector(session_id, capture_content=capture_content, agent_name=agent_name)
    out: list[SpanRecord] = []
    for event in events:
        out.extend(projector.feed(event))
    out.extend(projector.finish())
    return out


def spans_by_trace(spans: Sequence[SpanRecord]) -> dict[str, list[SpanRecord]]:
    """The spans grouped by trace id, each trace's spans in start order."""
    traces: dict[str, list[SpanRecord]] = {}
    for span in spans:
        traces.setdefault(span.trace_id, []).append(span)
    for members in traces.values():
        members.sort(key=lambda s: (s.start_ns, s.parent_span_id is not None))
    return traces

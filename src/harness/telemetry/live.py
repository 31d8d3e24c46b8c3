"""Live telemetry: spans emitted through an ``opentelemetry-sdk`` tracer provider as a running
session appends events (the ``[otel]`` extra).

``LiveTelemetry(session, provider)`` subscribes to the session. Its observer only puts the event
on a bounded queue (``max_queue``) and returns: it never waits, whatever the exporter does. A
worker thread feeds the events to the same ``Projector`` an export uses and starts and ends each
finished span through the provider's tracer with the projection's start and end times and its
ids (a span emitted live has the ids ``harness export --format otlp`` gives it). When the queue is
full the event is dropped, counted (``dropped``) and logged (the first drop, then every 1,000th):
the spans that needed it may be missing or incomplete, and the session goes on untouched.

The events already in the session when it attaches are fed first without emitting anything, so
a resumed session's next turn is projected with its full context.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
from typing import TYPE_CHECKING, Any, Final

from harness.events.event import Event
from harness.session.session import Session
from harness.telemetry.conventions import SCHEMA_URL, SCOPE_NAME
from harness.telemetry.projection import Projector
from harness.telemetry.records import SpanRecord

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.trace import Tracer

__all__ = ["LiveTelemetry", "tracer_provider_from_env"]

logger = logging.getLogger(__name__)

_STOP: Final = object()
_EMIT_LOCK = threading.Lock()  # ids are handed to the SDK's tracer one span at a time
DROP_LOG_EVERY: Final = 1000


def _need_sdk() -> None:
    try:
        import opentelemetry.sdk.trace  # noqa: F401
    except ImportError as error:  # pragma: no cover - the test extra installs it
        raise ImportError(
            "live telemetry needs the [otel] extra: pip install 'harness-sessions[otel]'"
        ) from error


class _FixedIds:
    """An SDK ``IdGenerator`` that hands out the projection's ids for harness's spans and
    defers to the provider's own generator for everyone else's."""

    def __init__(self, fallback: Any) -> None:
        self.fallback = fallback
        self.trace_id: int | None = None
        self.span_id: int | None = None

    def generate_trace_id(self) -> int:
        value, self.trace_id = self.trace_id, None
        return value if value is not None else int(self.fallback.generate_trace_id())

    def generate_span_id(self) -> int:
        value, self.span_id = self.span_id, None
        return value if value is not None else int(self.fallback.generate_span_id())

    def is_trace_id_random(self) -> bool:
        return False


def _harness_tracer(provider: Any) -> tuple[Tracer, _FixedIds | None]:
    tracer = provider.get_tracer(SCOPE_NAME, schema_url=SCHEMA_URL)
    current = getattr(tracer, "id_generator", None)
    if current is None:  # not the SDK's tracer (a no-op or proxy provider): its own ids
        return tracer, None
    if not isinstance(current, _FixedIds):
        current = _FixedIds(current)
        tracer.id_generator = current
    return tracer, current


def tracer_provider_from_env() -> TracerProvider:
    """A provider configured from the standard ``OTEL_*`` variables: the OTLP/HTTP exporter
    (``OTEL_EXPORTER_OTLP_ENDPOINT``, ``..._HEADERS``, ``..._TIMEOUT``) behind a batch processor
    (``OTEL_BSP_*``), the resource from ``OTEL_RESOURCE_ATTRIBUTES`` / ``OTEL_SERVICE_NAME``
    (``service.name`` ``harness`` when neither names one). What ``harness run --otel`` uses."""
    _need_sdk()
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import SERVICE_NAME, Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    resource = Resource.create()
    if str(resource.attributes.get(SERVICE_NAME, "")).startswith("unknown_service"):
        resource = resource.merge(Resource({SERVICE_NAME: "harness"}))
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    return provider


class LiveTelemetry:
    """Emits a live session's spans through an OpenTelemetry tracer provider (module doc).

    ``tracer_provider`` defaults to the global one (``opentelemetry.trace.get_tracer_provider``).
    ``close()`` unsubscribes, lets the worker finish what is queued (up to ``timeout``) and,
    when ``owns_provider``, shuts the provider down (flushing its exporter).
    """

    def __init__(
        self,
        session: Session,
        tracer_provider: Any = None,
        *,
        capture_content: bool = False,
        max_queue: int = 4096,
        owns_provider: bool = False,
    ) -> None:
        _need_sdk()
        from opentelemetry import trace

        if max_queue < 1:
            raise ValueError(f"max_queue must be at least 1, not {max_queue}")
        self.session_id = session.id
        self.provider = tracer_provider if tracer_provider is not None else trace.get_tracer_provider()
        self.owns_provider = owns_provider
        self._tracer, self._ids = _harness_tracer(self.provider)
        self._projector = Projector(session.id, capture_content=capture_content)
        for event in session.events:  # the context so far; its spans were emitted (or lost) before
            self._projector.feed(event)
        self._queue: queue.Queue[Any] = queue.Queue(max_queue)
        self.dropped = 0
        """Events the observer could not queue (the queue was full)."""
        self.emitted = 0
        """Spans handed to the provider so far."""
        self.failed = 0
        """Spans the provider raised on (logged)."""
        self._thread = threading.Thread(target=self._run, name=f"harness-telemetry-{session.id}", daemon=True)
        self._thread.start()
        self._unsubscribe = session.subscribe(self._observe)
        self._closed = False

    # ---- the session's side: never waits ------------------------------------------------

    def _observe(self, event: Event) -> None:
        try:
            self._queue.put_nowait(event)
        except queue.Full:
            self.dropped += 1
            if self.dropped == 1 or self.dropped % DROP_LOG_EVERY == 0:
                logger.warning(
                    "session %s: telemetry queue full, %d event(s) dropped so far (the exporter is "
                    "slow or down); the session is not affected",
                    self.session_id,
                    self.dropped,
                )

    # ---- the worker's side ----------------------------------------------------------------

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item is _STOP:
                return
            try:
                spans = self._projector.feed(item)
            except Exception:  # the projection never raises on bad data; a bug must not kill the worker
                logger.exception(
                    "session %s: telemetry projection failed on event %d", self.session_id, item.seq
                )
                continue
            for span in spans:
                self._emit(span)

    def _emit(self, record: SpanRecord) -> None:
        from opentelemetry import context as otel_context
        from opentelemetry import trace
        from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags

        parent_context = otel_context.Context()
        if record.parent_span_id is not None:
            parent = SpanContext(
                int(record.trace_id, 16),
                int(record.parent_span_id, 16),
                is_remote=False,
                trace_flags=TraceFlags(TraceFlags.SAMPLED),
            )
            parent_context = trace.set_span_in_context(trace.NonRecordingSpan(parent), parent_context)
        kind = SpanKind.CLIENT if record.kind == "client" else SpanKind.INTERNAL
        try:
            with _EMIT_LOCK:
                if self._ids is not None:
                    self._ids.trace_id = int(record.trace_id, 16) if record.parent_span_id is None else None
                    self._ids.span_id = int(record.span_id, 16)
                try:
                    span = self._tracer.start_span(
                        record.name,
                        context=parent_context,
                        kind=kind,
                        attributes=dict(record.attributes),
                        start_time=record.start_ns,
                    )
                finally:
                    if self._ids is not None:
                        self._ids.trace_id = self._ids.span_id = None
            for event in record.events:
                span.add_event(event.name, dict(event.attributes), timestamp=event.time_ns)
            if record.status == "error":
                span.set_status(Status(StatusCode.ERROR, record.status_message or None))
            elif record.status == "ok":
                span.set_status(Status(StatusCode.OK))
            span.end(end_time=record.end_ns)
            self.emitted += 1
        except Exception:
            self.failed += 1
            logger.exception("session %s: telemetry could not emit span %s", self.session_id, record.name)

    # ---- closing ------------------------------------------------------------------------

    def close(self, timeout: float = 5.0) -> bool:
        """Stop observing, let the worker emit what is queued (``timeout`` seconds at most) and
        shut an owned provider down. True when the worker finished in time."""
        if self._closed:
            return not self._thread.is_alive()
        self._closed = True
        self._unsubscribe()
        with contextlib.suppress(queue.Full):
            self._queue.put(_STOP, timeout=timeout)
        self._thread.join(timeout)
        finished = not self._thread.is_alive()
        if not finished:
            logger.warning(
                "session %s: telemetry worker still busy after %.1f s; %d span(s) emitted, the rest dropped",
                self.session_id,
                timeout,
                self.emitted,
            )
        if self.owns_provider:
            shutdown = getattr(self.provider, "shutdown", None)
            if shutdown is not None:  # flushes the exporter; a dead collector must not hold the exit
                closer = threading.Thread(target=shutdown, name="harness-telemetry-shutdown", daemon=True)
                closer.start()
                closer.join(timeout)
        return finished

    def __enter__(self) -> LiveTelemetry:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

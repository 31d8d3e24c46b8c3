"""Sessions as OpenTelemetry GenAI traces (docs/telemetry.md): a projection of the log that
only reads events, its OTLP encodings, posting to an OTLP/HTTP endpoint, and a live observer.

- ``projection`` (``Projector``, ``project_session``, ``spans_by_trace``): events -> finished
  spans (``records``: ``SpanRecord``, ``SpanEventRecord``) following GenAI semantic conventions
  v1.41.0 (``conventions``); ids from the session id and seqs (``ids``); content opt-in and
  redacted (``content``);
- ``otlp`` (``to_otlp_json``, ``to_otlp_protobuf``), ``send`` (``resolve_target``,
  ``post_otlp``, ``OtlpTarget``), ``tree`` (``render_tree``);
- ``live`` (``LiveTelemetry``, ``tracer_provider_from_env``): the observer, through an
  ``opentelemetry-sdk`` tracer provider (the ``[otel]`` extra, imported only when used).

Every name here is imported on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness._lazy import lazy_exports

if TYPE_CHECKING:
    from harness.errors import TelemetryConfigError, TelemetryError, TelemetryExportFailed
    from harness.telemetry.conventions import SCHEMA_URL, SEMCONV_VERSION
    from harness.telemetry.live import LiveTelemetry, tracer_provider_from_env
    from harness.telemetry.otlp import to_otlp_json, to_otlp_protobuf
    from harness.telemetry.projection import Projector, project_session, spans_by_trace
    from harness.telemetry.records import SpanEventRecord, SpanRecord
    from harness.telemetry.send import OtlpTarget, post_otlp, resolve_target
    from harness.telemetry.tree import render_tree

__all__ = [
    "SCHEMA_URL",
    "SEMCONV_VERSION",
    "LiveTelemetry",
    "OtlpTarget",
    "Projector",
    "SpanEventRecord",
    "SpanRecord",
    "TelemetryConfigError",
    "TelemetryError",
    "TelemetryExportFailed",
    "post_otlp",
    "project_session",
    "render_tree",
    "resolve_target",
    "spans_by_trace",
    "to_otlp_json",
    "to_otlp_protobuf",
    "tracer_provider_from_env",
]

_EXPORTS = {
    "harness.errors": ("TelemetryConfigError", "TelemetryError", "TelemetryExportFailed"),
    "harness.telemetry.conventions": ("SCHEMA_URL", "SEMCONV_VERSION"),
    "harness.telemetry.live": ("LiveTelemetry", "tracer_provider_from_env"),
    "harness.telemetry.otlp": ("to_otlp_json", "to_otlp_protobuf"),
    "harness.telemetry.projection": ("Projector", "project_session", "spans_by_trace"),
    "harness.telemetry.records": ("SpanEventRecord", "SpanRecord"),
    "harness.telemetry.send": ("OtlpTarget", "post_otlp", "resolve_target"),
    "harness.telemetry.tree": ("render_tree",),
}

if not TYPE_CHECKING:  # at run time each name is imported on first use (PEP 562)
    __getattr__, __dir__ = lazy_exports(__name__, globals(), _EXPORTS)

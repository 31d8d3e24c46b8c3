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

from harness._lazy import exported_names, lazy_exports

if TYPE_CHECKING:  # the table below as imports, for type checkers and IDEs (a test checks they agree)
    from harness.errors import TelemetryConfigError as TelemetryConfigError
    from harness.errors import TelemetryError as TelemetryError
    from harness.errors import TelemetryExportFailed as TelemetryExportFailed
    from harness.telemetry.conventions import SCHEMA_URL as SCHEMA_URL
    from harness.telemetry.conventions import SEMCONV_VERSION as SEMCONV_VERSION
    from harness.telemetry.live import LiveTelemetry as LiveTelemetry
    from harness.telemetry.live import tracer_provider_from_env as tracer_provider_from_env
    from harness.telemetry.otlp import to_otlp_json as to_otlp_json
    from harness.telemetry.otlp import to_otlp_protobuf as to_otlp_protobuf
    from harness.telemetry.projection import Projector as Projector
    from harness.telemetry.projection import project_session as project_session
    from harness.telemetry.projection import spans_by_trace as spans_by_trace
    from harness.telemetry.records import SpanEventRecord as SpanEventRecord
    from harness.telemetry.records import SpanRecord as SpanRecord
    from harness.telemetry.send import OtlpTarget as OtlpTarget
    from harness.telemetry.send import post_otlp as post_otlp
    from harness.telemetry.send import resolve_target as resolve_target
    from harness.telemetry.tree import render_tree as render_tree

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

if not TYPE_CHECKING:  # at run time: the table's names, each imported on first use (PEP 562)
    __all__ = exported_names(_EXPORTS)
    __getattr__, __dir__ = lazy_exports(__name__, globals(), _EXPORTS)

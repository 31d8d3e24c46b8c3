"""Spans in the OTLP encodings: the protocol's JSON (``ExportTraceServiceRequest``) and protobuf.

The JSON follows the OTLP/JSON rules: trace and span ids as lowercase hex (not base64), 64-bit
integers (times, ``intValue``) as decimal strings, enums as integers, camelCase field names,
absent fields omitted. ``to_otlp_protobuf`` needs the ``[otel]`` extra (``opentelemetry-proto``).
"""

from __future__ import annotations

import base64
import copy
import os
from collections.abc import Mapping, Sequence
from typing import Any, Final

from harness.telemetry.conventions import SCHEMA_URL, SCOPE_NAME
from harness.telemetry.records import AttributeValue, SpanRecord

__all__ = ["default_resource", "to_otlp_json", "to_otlp_protobuf"]

_KINDS: Final = {"internal": 1, "client": 3}
_STATUS: Final = {"unset": 0, "ok": 1, "error": 2}


def default_resource() -> dict[str, AttributeValue]:
    """``service.name``: ``OTEL_SERVICE_NAME`` when set, else ``harness``."""
    return {"service.name": os.environ.get("OTEL_SERVICE_NAME") or "harness"}


def _any_value(value: AttributeValue) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, str):
        return {"stringValue": value}
    return {"arrayValue": {"values": [_any_value(item) for item in value]}}


def _attributes(attributes: Mapping[str, AttributeValue]) -> list[dict[str, Any]]:
    return [{"key": key, "value": _any_value(value)} for key, value in attributes.items()]


def _span(span: SpanRecord) -> dict[str, Any]:
    out: dict[str, Any] = {"traceId": span.trace_id, "spanId": span.span_id}
    if span.parent_span_id is not None:
        out["parentSpanId"] = span.parent_span_id
    out["name"] = span.name
    out["kind"] = _KINDS[span.kind]
    out["startTimeUnixNano"] = str(span.start_ns)
    out["endTimeUnixNano"] = str(span.end_ns)
    out["attributes"] = _attributes(span.attributes)
    if span.events:
        out["events"] = [
            {"timeUnixNano": str(e.time_ns), "name": e.name, "attributes": _attributes(e.attributes)}
            for e in span.events
        ]
    status: dict[str, Any] = {}
    if span.status != "unset":
        status["code"] = _STATUS[span.status]
    if span.status_message:
        status["message"] = span.status_message
    out["status"] = status
    return out


def to_otlp_json(
    spans: Sequence[SpanRecord],
    *,
    resource: Mapping[str, AttributeValue] | None = None,
    scope_version: str = "",
) -> dict[str, Any]:
    """An ``ExportTraceServiceRequest`` in OTLP/JSON: one resource, one scope, every span."""
    scope: dict[str, Any] = {"name": SCOPE_NAME}
    if scope_version:
        scope["version"] = scope_version
    return {
        "resourceSpans": [
            {
                "resource": {
                    "attributes": _attributes(resource if resource is not None else default_resource())
                },
                "scopeSpans": [
                    {"scope": scope, "spans": [_span(span) for span in spans], "schemaUrl": SCHEMA_URL}
                ],
                "schemaUrl": SCHEMA_URL,
            }
        ]
    }


def _hex_to_base64(document: dict[str, Any]) -> dict[str, Any]:
    """OTLP/JSON's hex ids as the proto3 JSON mapping's base64, for ``json_format``."""
    out = copy.deepcopy(document)
    for resource in out.get("resourceSpans", ()):
        for scope in resource.get("scopeSpans", ()):
            for span in scope.get("spans", ()):
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in span:
                        span[key] = base64.b64encode(bytes.fromhex(span[key])).decode()
    return out


def to_otlp_protobuf(document: dict[str, Any]) -> bytes:
    """An OTLP/JSON document (``to_otlp_json``) as the protobuf bytes of the same request."""
    from google.protobuf import json_format  # type: ignore[import-untyped]
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    message = ExportTraceServiceRequest()
    json_format.ParseDict(_hex_to_base64(document), message)
    data: bytes = message.SerializeToString()
    return data

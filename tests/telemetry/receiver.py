"""A real OTLP/HTTP trace receiver for the tests: listens on 127.0.0.1, decodes each export
with the ``opentelemetry-proto`` package (protobuf, or OTLP/JSON with its hex ids), and a
collector that accepts connections and never answers (a hung one)."""

from __future__ import annotations

import base64
import copy
import json
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

from google.protobuf import json_format  # type: ignore[import-untyped]
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest


def _hex_ids_to_base64(document: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(document)
    for resource in out.get("resourceSpans", ()):
        for scope in resource.get("scopeSpans", ()):
            for span in scope.get("spans", ()):
                for key in ("traceId", "spanId", "parentSpanId"):
                    if span.get(key):
                        raw = bytes.fromhex(span[key])  # OTLP/JSON: hex, never base64
                        assert len(raw) == (16 if key == "traceId" else 8), (key, span[key])
                        span[key] = base64.b64encode(raw).decode()
    return out


def decode(body: bytes, content_type: str) -> ExportTraceServiceRequest:
    """An OTLP export body as the proto message, as a collector decodes it."""
    message = ExportTraceServiceRequest()
    if content_type.startswith("application/json"):
        json_format.ParseDict(_hex_ids_to_base64(json.loads(body)), message)
    else:
        message.ParseFromString(body)
    return message


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    content_type: str
    message: ExportTraceServiceRequest


@dataclass
class DecodedSpan:
    trace_id: str
    span_id: str
    parent_span_id: str
    name: str
    kind: int
    start: int
    end: int
    attributes: dict[str, Any]
    events: list[str]
    status_code: int
    status_message: str


def _value(any_value: Any) -> Any:
    kind = any_value.WhichOneof("value")
    if kind == "array_value":
        return [_value(v) for v in any_value.array_value.values]
    return getattr(any_value, kind) if kind else None


def spans_of(messages: list[ExportTraceServiceRequest]) -> list[DecodedSpan]:
    out = []
    for message in messages:
        for resource in message.resource_spans:
            for scope in resource.scope_spans:
                for span in scope.spans:
                    out.append(
                        DecodedSpan(
                            span.trace_id.hex(),
                            span.span_id.hex(),
                            span.parent_span_id.hex(),
                            span.name,
                            span.kind,
                            span.start_time_unix_nano,
                            span.end_time_unix_nano,
                            {a.key: _value(a.value) for a in span.attributes},
                            [e.name for e in span.events],
                            span.status.code,
                            span.status.message,
                        )
                    )
    return out


def tree(spans: list[DecodedSpan]) -> list[str]:
    """Each trace as indented span names (children in start order), traces in start order."""
    by_trace: dict[str, list[DecodedSpan]] = {}
    for span in spans:
        by_trace.setdefault(span.trace_id, []).append(span)
    lines: list[str] = []
    for members in sorted(by_trace.values(), key=lambda m: min(s.start for s in m)):
        members.sort(key=lambda s: (s.start, s.parent_span_id != ""))
        ids = {s.span_id for s in members}
        for span in members:
            assert span.parent_span_id == "" or span.parent_span_id in ids, "a parent outside its trace"

        def walk(parent: str, depth: int, members: list[DecodedSpan] = members) -> Iterator[str]:
            for span in members:
                if span.parent_span_id == parent:
                    yield "  " * depth + span.name + "".join(f" ·{e}" for e in span.events)
                    yield from walk(span.span_id, depth + 1)

        lines.append("trace")
        lines.extend(walk("", 1))
    return lines


@dataclass
class OtlpReceiver:
    """``with OtlpReceiver() as r:`` posts to ``r.endpoint`` (base) land in ``r.received``;
    ``status`` is what it answers."""

    status: int = 200
    received: list[Received] = field(default_factory=list)

    def __enter__(self) -> OtlpReceiver:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                content_type = self.headers.get("Content-Type", "")
                if receiver.status == 200:
                    receiver.received.append(
                        Received(
                            self.path,
                            {k.lower(): v for k, v in self.headers.items()},
                            content_type,
                            decode(body, content_type),
                        )
                    )
                answer = b"{}" if content_type.startswith("application/json") else b""
                self.send_response(receiver.status)
                self.send_header("Content-Type", content_type or "application/json")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def spans(self) -> list[DecodedSpan]:
        return spans_of([r.message for r in self.received])

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self._server.shutdown()
        self._server.server_close()


class HungCollector:
    """Accepts connections on 127.0.0.1 and never answers until closed (a stuck collector)."""

    def __enter__(self) -> HungCollector:
        self._socket = socket.socket()
        self._socket.bind(("127.0.0.1", 0))
        self._socket.listen(64)
        return self

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self._socket.getsockname()[1]}"

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self._socket.close()


def closed_port() -> int:
    """A port on 127.0.0.1 nobody listens on (a collector that is down)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])

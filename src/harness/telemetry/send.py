"""Posting an OTLP export to an OTLP/HTTP endpoint (``harness export --format otlp``).

The endpoint and headers follow the OTLP exporter's environment variables:
``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` (used as is) or ``OTEL_EXPORTER_OTLP_ENDPOINT`` (a base:
``/v1/traces`` is appended), ``OTEL_EXPORTER_OTLP_TRACES_HEADERS`` / ``OTEL_EXPORTER_OTLP_HEADERS``
(``name=value`` pairs separated by commas, values URL-encoded) and
``OTEL_EXPORTER_OTLP_TRACES_PROTOCOL`` / ``OTEL_EXPORTER_OTLP_PROTOCOL`` (``http/json`` or
``http/protobuf``). Explicit arguments win over the environment. Header values (API keys) are
never put in an error message.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal, TypeAlias

from harness.errors import TelemetryConfigError, TelemetryExportFailed
from harness.telemetry.otlp import to_otlp_protobuf

__all__ = ["OtlpTarget", "Protocol", "parse_headers", "post_otlp", "resolve_target"]

Protocol: TypeAlias = Literal["http/json", "http/protobuf"]
PROTOCOLS: Final = ("http/json", "http/protobuf")
TRACES_PATH: Final = "/v1/traces"


@dataclass(frozen=True)
class OtlpTarget:
    """Where and how an export is posted."""

    url: str
    headers: Mapping[str, str]
    protocol: Protocol = "http/json"
    timeout: float = 10.0

    def __repr__(self) -> str:  # the header values may be credentials
        return f"OtlpTarget({self.url!r}, headers={sorted(self.headers)!r}, protocol={self.protocol!r})"


def parse_headers(pairs: Iterable[str], *, separator: str | None = None) -> dict[str, str]:
    """``name=value`` items (or one comma-separated string when ``separator`` is given) as a
    dict; values are URL-decoded as in ``OTEL_EXPORTER_OTLP_HEADERS``. A malformed item is a
    ``TelemetryConfigError`` naming its position, never its value."""
    items: list[str] = []
    for pair in pairs:
        items.extend(pair.split(separator) if separator else [pair])
    out: dict[str, str] = {}
    for index, item in enumerate(items):
        if not item.strip() and separator:
            continue
        name, found, value = item.partition("=")
        name = urllib.parse.unquote(name).strip()
        if not found or not name or any(ch in name for ch in " \t\r\n:"):
            raise TelemetryConfigError(f"header {index + 1} is not name=value")
        value = urllib.parse.unquote(value).strip()
        if "\r" in value or "\n" in value:
            raise TelemetryConfigError(f"header {name!r} has a line break in its value")
        out[name.lower()] = value
    return out


def _traces_url(base: str) -> str:
    parsed = urllib.parse.urlsplit(base)
    if parsed.path.rstrip("/").endswith(TRACES_PATH):
        return base
    return urllib.parse.urlunsplit(parsed._replace(path=parsed.path.rstrip("/") + TRACES_PATH))


def resolve_target(
    endpoint: str | None = None,
    headers: Iterable[str] = (),
    protocol: str | None = None,
    *,
    timeout: float = 10.0,
    environ: Mapping[str, str] | None = None,
) -> OtlpTarget | None:
    """The target from the arguments and the ``OTEL_*`` environment; None when no endpoint is
    named anywhere. ``endpoint`` is a base URL like ``OTEL_EXPORTER_OTLP_ENDPOINT`` (a URL
    that already ends in ``/v1/traces`` is kept)."""
    env = os.environ if environ is None else environ
    if endpoint:
        url = _traces_url(endpoint)
    elif env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        url = env["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"]
    elif env.get("OTEL_EXPORTER_OTLP_ENDPOINT"):
        url = _traces_url(env["OTEL_EXPORTER_OTLP_ENDPOINT"])
    else:
        return None
    parsed = urllib.parse.urlsplit(url)
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise TelemetryConfigError(f"the OTLP endpoint must be an http(s) URL, not {parsed.scheme or url!r}")
    merged = parse_headers(
        [env.get("OTEL_EXPORTER_OTLP_HEADERS", ""), env.get("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "")],
        separator=",",
    )
    merged.update(parse_headers(headers))
    chosen = (
        protocol
        or env.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
        or env.get("OTEL_EXPORTER_OTLP_PROTOCOL")
        or "http/json"
    )
    if chosen not in PROTOCOLS:
        raise TelemetryConfigError(f"the OTLP protocol must be one of {', '.join(PROTOCOLS)}, not {chosen!r}")
    return OtlpTarget(url, merged, chosen, timeout)  # type: ignore[arg-type]


def post_otlp(document: dict[str, Any], target: OtlpTarget) -> dict[str, Any]:
    """Post an OTLP/JSON document (``to_otlp_json``) to ``target`` in its protocol; returns the
    collector's decoded JSON answer (``{}`` for an empty or protobuf one). A refusal or an
    unreachable endpoint is ``TelemetryExportFailed``."""
    if target.protocol == "http/protobuf":
        body, content_type = to_otlp_protobuf(document), "application/x-protobuf"
    else:
        body, content_type = json.dumps(document, ensure_ascii=False).encode(), "application/json"
    request = urllib.request.Request(target.url, data=body, method="POST")
    for name, value in target.headers.items():
        request.add_header(name, value)
    request.add_header("Content-Type", content_type)
    try:
        with urllib.request.urlopen(request, timeout=target.timeout) as response:
            answer = response.read()
            answered_type = response.headers.get("Content-Type", "")
    except urllib.error.HTTPError as error:
        detail = error.read(500).decode("utf-8", "replace").strip()
        raise TelemetryExportFailed(
            f"the OTLP endpoint {target.url} refused the export: HTTP {error.code}"
            + (f": {detail}" if detail else ""),
            status=error.code,
        ) from None
    except (urllib.error.URLError, OSError) as error:
        reason = getattr(error, "reason", error)
        raise TelemetryExportFailed(
            f"the OTLP endpoint {target.url} could not be reached: {reason}"
        ) from None
    if answer and "json" in answered_type:
        try:
            decoded = json.loads(answer)
        except ValueError:
            return {}
        return decoded if isinstance(decoded, dict) else {}
    return {}

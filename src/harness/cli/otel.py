"""``--otel`` for the commands that run the agent, and the OTLP side of ``harness export``."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from rich.console import Console

from harness.session.session import Session

__all__ = ["OTEL_HELP", "export_otlp", "live_telemetry"]

OTEL_HELP = (
    "Emit the session's spans live (OpenTelemetry GenAI conventions) to the OTLP/HTTP endpoint "
    "of the OTEL_* environment (OTEL_EXPORTER_OTLP_ENDPOINT, ..._HEADERS); message content only "
    "with OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true. A slow or dead collector "
    "never slows the session."
)


def _content_from_env() -> bool:
    value = os.environ.get("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "")
    return value.strip().lower() in ("1", "true", "yes")


@contextmanager
def live_telemetry(session: Session, enabled: bool, console: Console) -> Iterator[None]:
    """Live telemetry for the block when ``enabled`` (``harness run --otel``)."""
    if not enabled:
        yield
        return
    try:
        from harness.telemetry.live import LiveTelemetry, tracer_provider_from_env

        provider = tracer_provider_from_env()
    except ImportError as error:
        raise SystemExit(f"error: --otel needs the [otel] extra ({error})") from None
    live = LiveTelemetry(session, provider, capture_content=_content_from_env(), owns_provider=True)
    try:
        yield
    finally:
        live.close(timeout=5.0)
        if live.dropped:
            console.print(
                f"[yellow]telemetry: {live.dropped} event(s) dropped (the collector was slow or down)[/]"
            )


def export_otlp(
    session: Session,
    *,
    output: str | None,
    endpoint: str | None,
    headers: list[str],
    protocol: str | None,
    content: bool,
    as_json: bool,
) -> None:
    """``harness export ID --format otlp``: the OTLP/JSON document to a file, to stdout, or posted
    (``--endpoint``, else the ``OTEL_*`` endpoint when no ``--output`` is given)."""
    from harness.telemetry.otlp import to_otlp_json
    from harness.telemetry.projection import project_session
    from harness.telemetry.send import post_otlp, resolve_target

    spans = project_session(session.id, session.events, capture_content=content)
    document = to_otlp_json(spans)
    target = resolve_target(endpoint, headers, protocol)
    post = target is not None and (endpoint is not None or output is None)
    traces = len({span.trace_id for span in spans})
    text = json.dumps(document, ensure_ascii=False, indent=None if post else 2) + "\n"
    if output is not None and output != "-":
        Path(output).write_text(text, encoding="utf-8")
    elif not post and not as_json:
        sys.stdout.write(text)
    where = []
    if output is not None and output != "-":
        where.append(output)
    if post and target is not None:
        post_otlp(document, target)
        where.append(target.url)
    if as_json:
        summary: dict[str, Any] = {
            "session": session.id,
            "format": "otlp",
            "spans": len(spans),
            "traces": traces,
            "sent": where,
        }
        if not where:
            summary["content"] = document
        sys.stdout.write(json.dumps(summary, ensure_ascii=False, indent=2) + "\n")
    elif where:
        Console(stderr=True).print(
            f"exported {len(spans)} spans in {traces} traces to {', '.join(where)}",
            highlight=False,
            markup=False,
        )

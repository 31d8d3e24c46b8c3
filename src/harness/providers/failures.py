"""Failure classification: HTTP statuses and transport errors → ``LlmFailure`` (FORMAT §12).

Status rules, first match wins: 401/403 ``AUTH``; 413 ``INVALID_REQUEST``; quota, balance or
credit wording ``QUOTA``; 429 ``RATE_LIMIT``; 400 with context-overflow wording
``CONTEXT_WINDOW_EXCEEDED``; other 400 ``INVALID_REQUEST``; ≥500 ``SERVER``; else
``HTTP_<status>``. A failure keeps the status, a positive ``Retry-After`` (seconds, an HTTP
date, or ``retry-after-ms``) as ``providerRetryAfterMs``, and the request id from
``x-request-id`` / ``x-deepseek-request-id``. Messages pass through ``scrub`` so that a secret
can never travel inside one.
"""

from __future__ import annotations

import email.utils
import math
import re
import time
from collections.abc import Callable, Mapping
from typing import Any

from harness.messages.model import LlmFailure

__all__ = [
    "RETRYABLE",
    "classify_status",
    "error_message",
    "request_id_of",
    "retry_after_ms",
    "scrub",
]

RETRYABLE = frozenset({"RATE_LIMIT", "SERVER", "TRANSPORT"})
"""The failure codes a provider retries (before the first chunk only)."""

_QUOTA = re.compile(r"quota|balance|credit", re.IGNORECASE)
_CONTEXT = re.compile(
    r"context[ _-]?(length|window)|maximum context|too many tokens|prompt is too long"
    r"|input is too long|exceeds? the (model'?s? )?(maximum|max)",
    re.IGNORECASE,
)
_MAX_MESSAGE = 500


def scrub(text: str, secret: str | None) -> str:
    """``text`` with every occurrence of ``secret`` masked, cut to a readable length."""
    if secret and len(secret) >= 4:
        text = text.replace(secret, "***")
    return text if len(text) <= _MAX_MESSAGE else text[: _MAX_MESSAGE - 1] + "…"


def _lower(headers: Mapping[str, str] | None) -> dict[str, str]:
    return {str(key).lower(): str(value) for key, value in (headers or {}).items()}


def retry_after_ms(headers: Mapping[str, str] | None, *, now: Callable[[], float] = time.time) -> int | None:
    """A positive Retry-After delay in milliseconds, else ``None``."""
    lowered = _lower(headers)
    raw_ms = lowered.get("retry-after-ms")
    if raw_ms is not None:
        try:
            value = float(raw_ms)
        except ValueError:
            value = math.nan
        if math.isfinite(value) and value > 0:
            return math.ceil(value)
    raw = lowered.get("retry-after")
    if raw is None:
        return None
    try:
        seconds = float(raw)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(raw)
        except (TypeError, ValueError, IndexError):
            return None
        seconds = when.timestamp() - now()
    if not math.isfinite(seconds) or seconds <= 0:
        return None
    return math.ceil(seconds * 1000)


def request_id_of(headers: Mapping[str, str] | None) -> str | None:
    """The provider's request id, if the response carried one."""
    lowered = _lower(headers)
    return lowered.get("x-request-id") or lowered.get("x-deepseek-request-id") or None


def error_message(body: Any, fallback: str) -> str:
    """The human message of an error body (``{error: {message}}``, ``{message}`` or text)."""
    if isinstance(body, Mapping):
        inner = body.get("error", body)
        if isinstance(inner, Mapping):
            message = inner.get("message")
            if isinstance(message, str) and message:
                return message
        elif isinstance(inner, str) and inner:
            return inner
    if isinstance(body, str) and body.strip():
        return body.strip()
    return fallback


def _code_for(status: int, message: str) -> str:
    if status in (401, 403):
        return "AUTH"
    if status == 413:
        return "INVALID_REQUEST"
    if _QUOTA.search(message):
        return "QUOTA"
    if status == 429:
        return "RATE_LIMIT"
    if status == 400:
        return "CONTEXT_WINDOW_EXCEEDED" if _CONTEXT.search(message) else "INVALID_REQUEST"
    if status >= 500:
        return "SERVER"
    return f"HTTP_{status}"


def classify_status(
    status: int,
    message: str,
    headers: Mapping[str, str] | None = None,
    *,
    secret: str | None = None,
) -> LlmFailure:
    """The failure for an HTTP error response with ``status`` and error ``message``."""
    clean = scrub(message, secret)
    return LlmFailure(
        message=f"HTTP {status}: {clean}",
        code=_code_for(status, message),
        status=status,
        provider_retry_after_ms=retry_after_ms(headers),
        request_id=request_id_of(headers),
    )

"""The model route: provider, model and context window now, against the last
``request/context`` the log recorded."""

from __future__ import annotations

from typing import Any

from harness.providers.base import Provider
from harness.recovery.findings import Finding, finding
from harness.recovery.history import History
from harness.recovery.vocabulary import FindingKind, Severity

__all__ = ["check_route"]


def _window(value: Any) -> int | None:
    return value if type(value) is int else None


def check_route(history: History, provider: Provider, model: str | None = None) -> list[Finding]:
    """A changed provider or model (``warn``), a smaller context window (``warn``) or a
    larger or newly known one (``info``). ``model`` is the model the session will use
    now; None keeps the recorded one (then only the provider and window can differ)."""
    recorded = history.context
    if recorded is None:
        return []
    before_provider = recorded.get("provider")
    before_model = recorded.get("model")
    before_window = _window(recorded.get("contextWindow"))
    now_provider = provider.route
    now_model = model if model is not None else (before_model if isinstance(before_model, str) else None)
    try:
        now_window = provider.context_window(now_model) if now_model is not None else None
    except Exception:  # a provider that cannot say is treated as not knowing
        now_window = None
    changed: list[str] = []
    if before_provider != now_provider:
        changed.append("provider")
    if now_model is not None and before_model != now_model:
        changed.append("model")
    if before_window != now_window and now_window is not None:
        changed.append("contextWindow")
    if not changed:
        return []
    smaller = before_window is not None and now_window is not None and now_window < before_window
    severity: Severity = (
        Severity.WARN if ("provider" in changed or "model" in changed or smaller) else Severity.INFO
    )
    parts = []
    if "provider" in changed:
        parts.append(f"provider {before_provider} → {now_provider}")
    if "model" in changed:
        parts.append(f"model {before_model} → {now_model}")
    if "contextWindow" in changed:
        parts.append(f"context window {before_window or 'unknown'} → {now_window}")
    if smaller:
        action = (
            "The history may no longer fit: compact the session before continuing, or keep the old route."
        )
    elif severity == Severity.WARN:
        action = (
            "Confirm the new route is intended: a different model continues a history another model wrote "
            "(the next request records a new header)."
        )
    else:
        action = "Nothing to do; the next request records the new route."
    return [
        finding(
            FindingKind.ROUTE_CHANGED,
            severity,
            f"The model route differs from the one recorded at seq {history.context_seq}: "
            f"{'; '.join(parts)}.",
            action,
            changed=changed,
            before={"provider": before_provider, "model": before_model, "contextWindow": before_window},
            now={"provider": now_provider, "model": now_model, "contextWindow": now_window},
            contextSeq=history.context_seq,
        )
    ]

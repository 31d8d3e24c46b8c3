"""The ``list()`` summary of one stored session."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from harness.session.header import SessionHeader
from harness.stores.backend import SessionInfo

__all__ = ["summarize"]


def summarize(
    header: SessionHeader, events: Sequence[Mapping[str, Any]], location: str | None = None
) -> SessionInfo:
    """Count, last activity and the latest ``session/title`` of decoded wire events."""
    title: str | None = None
    for event in reversed(events):
        if event.get("type") == "session/title":
            data = event.get("data")
            value = data.get("title") if isinstance(data, Mapping) else None
            if isinstance(value, str):
                title = value
                break
    last = events[-1].get("time") if events else None
    return SessionInfo(
        id=header.id,
        created_at=header.created_at,
        cwd=header.cwd,
        event_count=len(events),
        last_activity=last if isinstance(last, int) else None,
        title=title,
        location=location,
        parent=header.parent_session,
    )

"""The message projection of Surface nodes (FORMAT §6).

``user/message`` projects its ``data``; ``assistant/message`` its ``data.message``,
or nothing when that message has no content; ``tool/result`` its ``data.message``;
every other type projects nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness.events.event import Event

__all__ = ["project"]


def project(event: Event) -> Mapping[str, Any] | None:
    """The message JSON a Surface node contributes to model history, if any."""
    kind = event.type
    data = event.data
    if kind == "user/message":
        return data if isinstance(data, Mapping) else None
    if kind == "assistant/message" or kind == "tool/result":
        message = data.get("message") if isinstance(data, Mapping) else None
        if not isinstance(message, Mapping):
            return None
        if kind == "assistant/message" and not message.get("content"):
            return None
        return message
    return None

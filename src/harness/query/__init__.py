"""Queries of a session's log (issue 13): pure folds over ``session.events``, no I/O.

- ``timetravel``: the Surface, the model history and the model request as they were right
  after any event (``surface_at``, ``messages_at``, ``request_at``, ``request_before``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness._lazy import lazy_exports

if TYPE_CHECKING:
    from harness.query.timetravel import (
        TimeTravel,
        messages_at,
        request_at,
        request_before,
        request_points,
        surface_at,
        time_travel,
    )

__all__ = [
    "TimeTravel",
    "messages_at",
    "request_at",
    "request_before",
    "request_points",
    "surface_at",
    "time_travel",
]

_EXPORTS = {
    "harness.query.timetravel": (
        "TimeTravel",
        "messages_at",
        "request_at",
        "request_before",
        "request_points",
        "surface_at",
        "time_travel",
    ),
}

if not TYPE_CHECKING:  # at run time each name is imported on first use (PEP 562)
    __getattr__, __dir__ = lazy_exports(__name__, globals(), _EXPORTS)

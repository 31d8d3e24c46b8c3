"""The type sets a reader checks, derived from the registry (``harness.events.types``, FORMAT §2)."""

from __future__ import annotations

from typing import Final

from harness.events.types import EVENT_TYPES, Origin, Role

__all__ = [
    "KNOWN_EVENT_TYPES",
    "LEGACY_REFUSED_TYPES",
    "MESSAGE_EVENT_TYPES",
    "SURFACE_TYPES",
]

SURFACE_TYPES: Final = frozenset(n for n, e in EVENT_TYPES.items() if e.role is Role.SURFACE)
"""Types that are Surface nodes: they must carry a surface op; no other type may."""

MESSAGE_EVENT_TYPES: Final = SURFACE_TYPES

LEGACY_REFUSED_TYPES: Final = frozenset(n for n, e in EVENT_TYPES.items() if e.origin is Origin.RETIRED)
"""Retired types: refused on load (both) and on append/seed (``request/header-delta``)."""

KNOWN_EVENT_TYPES: Final = frozenset(n for n, e in EVENT_TYPES.items() if e.origin is Origin.DSH)
"""Types a dsh reader accepts. Anything else must be written with ``ignorable=True``."""

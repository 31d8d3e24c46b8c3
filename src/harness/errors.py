"""The one error hierarchy of harness.

Every error the public API raises on bad input or a refused operation is a
``HarnessError``; each message says what was wrong and, where it can, where::

    HarnessError
    ├── InvalidEvent              an append refused (bad type, legacy format, bad option)
    │   ├── InvalidEventData      event data that is not lossless JSON (names the path)
    │   └── SurfaceRuleError      a Surface rule broken (FORMAT §6 wording in ``.detail``)
    ├── InvalidHeader             a session header that breaks FORMAT §1 / §7.1
    ├── InvalidSeed               a restore seed refused (names the index and the rule)
    ├── ForkError                 a fork refused (``.code``: INVALID_BOUNDARY, OPEN_TURN)
    └── NoRequestHeader           a request built with no header given and none in the log

Every class also derives from ``ValueError`` where the cause is bad input, so code
that only knows the standard library can still catch it.
"""

from __future__ import annotations

__all__ = [
    "ForkError",
    "HarnessError",
    "InvalidEvent",
    "InvalidEventData",
    "InvalidHeader",
    "InvalidSeed",
    "NoRequestHeader",
    "SurfaceRuleError",
]


class HarnessError(Exception):
    """Root of every error harness raises on purpose."""


class InvalidEvent(HarnessError, ValueError):
    """An event was refused: bad envelope, a legacy type, or a broken Surface rule.

    A refused event changes nothing: the log, the Surface and the derived messages
    are exactly as they were before the call.
    """


class InvalidEventData(InvalidEvent):
    """Event data is not lossless JSON. ``path`` names the first bad value."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


class SurfaceRuleError(InvalidEvent):
    """A candidate event breaks a Surface rule. ``detail`` is the rule's wording."""

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


class InvalidHeader(HarnessError, ValueError):
    """A session header is malformed (FORMAT §1, §7.1)."""


class InvalidSeed(HarnessError, ValueError):
    """A restore seed was refused as a whole.

    ``index`` is the position of the offending event (``None`` when the header is at
    fault) and ``rule`` a short name of the rule broken (``envelope``, ``surface``, ...).
    """

    def __init__(self, message: str, *, index: int | None, rule: str) -> None:
        super().__init__(message)
        self.index = index
        self.rule = rule


class ForkError(HarnessError, ValueError):
    """A fork was refused. ``code`` is one of INVALID_BOUNDARY, OPEN_TURN."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code


class NoRequestHeader(HarnessError):
    """``build_request`` found no header: pass one, or append a ``request/header`` first."""

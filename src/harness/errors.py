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
    ├── NoRequestHeader           a request built with no header given and none in the log
    └── StorageError              a store or backend could not do what was asked
        ├── SessionNotFound       no stored session has that id
        ├── SessionExists         create() with an id that is already known
        ├── InvalidSessionId      an id that cannot be stored (empty, or escaping the root)
        ├── SessionConflict       another writer got there first (expected seq mismatch)
        ├── CorruptSession        stored bytes break the format (``.offset``, ``.path``)
        ├── UnsupportedFormat     a foreign format version or an unknown event type
        └── PersistenceFailed     a write or fsync failed; the batch stays queued

Every class also derives from ``ValueError`` where the cause is bad input, so code
that only knows the standard library can still catch it.
"""

from __future__ import annotations

__all__ = [
    "CorruptSession",
    "ForkError",
    "HarnessError",
    "InvalidEvent",
    "InvalidEventData",
    "InvalidHeader",
    "InvalidSeed",
    "InvalidSessionId",
    "NoRequestHeader",
    "PersistenceFailed",
    "SessionConflict",
    "SessionExists",
    "SessionNotFound",
    "StorageError",
    "SurfaceRuleError",
    "UnsupportedFormat",
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


class StorageError(HarnessError):
    """A store or backend could not do what was asked."""


class SessionNotFound(StorageError, KeyError):
    """No stored (or live) session has this id."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "session not found"


class SessionExists(StorageError):
    """``create`` was given an id that is already known to the store."""


class InvalidSessionId(StorageError, ValueError):
    """The id cannot be stored (empty, not a string, or it would escape the storage root)."""


class SessionConflict(StorageError):
    """Another writer got there first: a batch's first seq is not the stored length.

    Nothing of the batch was written. ``expected`` is the seq the backend holds next,
    ``got`` the first seq of the refused batch.
    """

    def __init__(self, message: str, *, expected: int | None = None, got: int | None = None) -> None:
        super().__init__(message)
        self.expected = expected
        self.got = got


class CorruptSession(StorageError):
    """Stored bytes break the format where the rules call it corruption (not a torn tail).

    ``offset`` is the byte offset of the damage when known; the file is left untouched.
    """

    def __init__(self, message: str, *, path: str | None = None, offset: int | None = None) -> None:
        where = []
        if path is not None:
            where.append(path)
        if offset is not None:
            where.append(f"byte {offset}")
        super().__init__(f"{message} ({', '.join(where)})" if where else message)
        self.path = path
        self.offset = offset


class UnsupportedFormat(StorageError):
    """A session written in another format version, or holding an unknown non-ignorable type."""


class PersistenceFailed(StorageError):
    """A write or fsync failed. The events stay queued; the next flush retries them."""

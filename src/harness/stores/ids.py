"""Session id rules shared by every backend."""

from __future__ import annotations

from harness.errors import InvalidSessionId

__all__ = ["check_session_id"]


def check_session_id(session_id: object) -> str:
    """Return ``session_id`` if it is a storable id: a non-empty string without NUL.

    Backends that map ids to paths encode them (FORMAT §9.1), so no id can name a
    path outside the storage root.
    """
    if not isinstance(session_id, str) or not session_id:
        raise InvalidSessionId(f"session id must be a non-empty string, got {session_id!r}")
    if "\x00" in session_id:
        raise InvalidSessionId("session id must not contain NUL")
    return session_id

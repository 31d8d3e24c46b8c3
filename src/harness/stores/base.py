"""What the backends repeat: the sessions ``create`` reserved and no append has written yet,
the errors naming a session that is not there, and a ``list()`` line from a stored header."""

from __future__ import annotations

from collections.abc import Callable

from harness.errors import CorruptSession, SessionConflict, SessionExists, SessionNotFound, StorageError
from harness.session.header import SessionHeader
from harness.stores.backend import SessionInfo

__all__ = ["Reservations", "closed", "corrupt", "listed", "never_appended", "no_session", "taken_first"]


def no_session(session_id: str) -> SessionNotFound:
    return SessionNotFound(f"no session {session_id!r}")


def never_appended(session_id: str) -> SessionNotFound:
    return SessionNotFound(f"session {session_id!r} was created but never appended to")


def closed(backend: object) -> StorageError:
    return StorageError(f"{backend!r} is closed")


def corrupt(session_id: str, where: str) -> Callable[[str], CorruptSession]:
    """The error for committed damage (``detail``) of a session in a database backend."""
    return lambda detail: CorruptSession(f"stored session {session_id!r} is corrupt: {detail}", path=where)


def taken_first(session_id: str, expected: int, got: int) -> SessionConflict:
    """The first append of a session created here found it published by another writer."""
    return SessionConflict(
        f"append seq mismatch for session {session_id!r}: it was created and written by another "
        f"writer (expected {expected} at index 0, got {got})",
        expected=expected,
        got=got,
    )


class Reservations(dict[str, SessionHeader]):
    """The headers of the ids ``create`` reserved in this backend. The session is stored by its
    first non-empty append, with its events, so one never appended to leaves nothing behind
    and blocks no id after a crash (SQLite, dsh SQLite, PostgreSQL)."""

    def reserve(self, header: SessionHeader, *, stored: bool) -> None:
        """Reserve ``header.id``: ``SessionExists`` when it is reserved here or ``stored``."""
        if header.id in self or stored:
            raise SessionExists(f"session {header.id!r} already exists")
        self[header.id] = header

    def missing(self, session_id: str) -> SessionNotFound:
        """The error for a session with nothing stored: created here, or unknown."""
        return never_appended(session_id) if session_id in self else no_session(session_id)

    def length(self, session_id: str, stored: int | None) -> int:
        """``stored_length``: the stored length, else 0 for a reservation, else ``SessionNotFound``."""
        if stored is None and session_id not in self:
            raise no_session(session_id)
        return stored or 0

    def deleted(self, session_id: str, *, found: bool) -> None:
        """``delete`` removed what was stored (``found``): drop the reservation too, and raise
        ``SessionNotFound`` when there was neither."""
        if self.pop(session_id, None) is None and not found:
            raise no_session(session_id)

    def lapsed(self, session_id: str, expected: int, got: int) -> SessionConflict:
        """Another writer published this id first: the reservation lapses, and the caller
        may go on from the stored length like any other writer."""
        self.pop(session_id, None)
        return taken_first(session_id, expected, got)


def listed(
    session_id: str,
    header: Callable[[], SessionHeader],
    *,
    event_count: int,
    last_activity: int | None,
    title: str | None = None,
    location: str | None = None,
    created_at: int | None = None,
    cwd: str | None = None,
    parent: str | None = None,
    problem: str | None = None,
) -> SessionInfo:
    """The ``list()`` line of a stored session from ``header()``. One whose header does not read
    (``StorageError``) is listed with ``problem`` saying why, never dropped, with what is left:
    ``created_at``, ``cwd`` and ``parent`` as read from elsewhere (``None`` when unknown)."""
    try:
        read = header()
    except StorageError as error:
        problem = str(error)
    else:
        session_id, created_at, cwd, parent = read.id, read.created_at, read.cwd, read.parent_session
    return SessionInfo(
        id=session_id,
        created_at=created_at,
        cwd=cwd,
        event_count=event_count,
        last_activity=last_activity,
        title=title,
        location=location,
        problem=problem,
        parent=parent,
    )

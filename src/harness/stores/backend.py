"""The storage backend interface every store backend implements (SPEC §4).

A backend stores sessions as a header plus a contiguous run of events. It knows
nothing of Surfaces or observers: ``SessionStore`` does the restoring, repairing
and batching. One shared contract suite (``tests/stores/contract.py``) runs
against every backend.

Rules every backend keeps:

* ``append(id, batch)`` is all-or-nothing and durable when it returns (fsync'd,
  or committed by the database). ``batch[0].seq`` must equal the stored length
  and the seqs must be contiguous, else ``SessionConflict`` and nothing is written.
  An empty batch is a no-op. The first append of a created session publishes it.
* ``read(id)`` never writes. It returns the committed events as wire objects
  freshly decoded (packed rows expanded) and, when a crash left a torn tail, where
  the committed region ends; damage the format calls corruption raises
  ``CorruptSession`` and a foreign version ``UnsupportedFormat``. A backend may
  instead hand over a ``WireStream``: the events decoded one at a time while the
  store validates them, so a restore never holds the whole decoded log. The
  stream's fast checks refuse anything unusual (``StreamRejected``), and the store
  then asks for the exact read, which applies every rule of the format.
* ``repair(id, log, closers)`` cuts a torn tail back to the committed region and
  appends the closers, durably, in one step.
* ``claim(id, owner, take_over=)`` makes ``owner`` the session's one live writer until
  ``unclaim(id)`` or process death; a claim while another live owner holds the session
  raises ``SessionInUse`` and writes nothing; ``take_over`` fences that owner off (its next
  write raises ``LeaseLost``). Every write of a session this backend owns checks, inside
  the write's own lock or transaction, that it still owns it; a write by a backend that
  owns nothing of a session another live writer owns is refused (``SessionInUse``).
  ``owner(id)`` names the live owner without taking anything (``harness.stores.ownership``).
* ``delete(id)`` removes the session for good (header, events, any reservation) and is
  durable when it returns. From then on ``read``, ``stored_length`` and an append to it, by
  any writer of the storage, raise ``SessionNotFound`` and write nothing (until the id is
  created again), and ``list`` omits it.
"""

from __future__ import annotations

import operator
from collections.abc import Awaitable, Callable, Iterator, Sequence
from typing import Any, Protocol, runtime_checkable

import msgspec

from harness.errors import SessionConflict, SessionOwner
from harness.events.event import Event
from harness.events.json import json_equal, loads
from harness.session.header import SessionHeader
from harness.stores.ownership import Claim

__all__ = [
    "Backend",
    "ReadProgress",
    "SessionInfo",
    "StoredLog",
    "StreamRejected",
    "TornTail",
    "WireStream",
    "check_batch",
    "read_whole",
]

_SEQ = operator.attrgetter("seq")


def check_batch(session_id: str, expected: int, batch: Sequence[Event]) -> None:
    """Raise ``SessionConflict`` unless ``batch`` holds the seqs ``expected, expected+1, …``."""
    if (
        type(batch) is list
        and type(expected) is int
        and not any(map(operator.ne, map(_SEQ, batch), range(expected, expected + len(batch))))
    ):
        return  # the loop below run in C: the same ``!=`` of the same pairs, in order; it raises
    for index, event in enumerate(batch):
        if event.seq != expected + index:
            raise SessionConflict(
                f"append seq mismatch for session {session_id!r}: expected {expected + index} "
                f"at index {index}, got {event.seq}",
                expected=expected,
                got=batch[0].seq,
            )


def stored_equals(stored: Any, event: Event) -> bool:
    """True when a stored wire event is ``event`` by serialized JSON: the test FORMAT §10 sets
    for adopting a stored log, and the one a retried write uses for what already landed."""
    return bool(json_equal(stored, loads(event.encode())))


class TornTail(msgspec.Struct, frozen=True):
    """A crash cut the last write short: bytes after ``committed_offset`` are not part of the log."""

    committed_offset: int
    detail: str


class StreamRejected(Exception):
    """A ``WireStream`` met something its fast checks do not cover; read the log exactly."""


class ReadProgress:
    """How far a ``WireStream`` has read: ``done`` of ``total`` units (bytes or rows)."""

    __slots__ = ("done", "total")

    def __init__(self, total: int) -> None:
        self.done = 0
        self.total = total


class WireStream:
    """A one-pass source of a log's committed events, decoded lazily.

    ``events()`` yields the wire objects in seq order (packed rows expanded, seqs
    contiguous from 0) and raises ``StreamRejected`` at anything a fast reader does
    not settle itself: a torn tail, an unparsable line, a seq gap, a file that
    changed while read. ``exact()`` then reads the log again the exact way (a full
    ``StoredLog`` with every rule applied, errors included). ``progress`` is
    advanced by the stream as it reads.

    A backend that can also hand over its stored lines sets ``lines`` (one storage row
    each, no newline, or ``(seq, line)`` with the seq the row is stored under; raising
    ``StreamRejected`` like ``events``), ``packed`` (whether packed chunk rows are
    expanded) and ``finished`` (told the event count once the lines were read; it may
    raise ``StreamRejected``): a restore then takes the fast path of
    ``harness.stores.fastrestore`` and never builds the events' wire objects.
    """

    __slots__ = ("events", "exact", "finished", "lines", "packed", "progress")

    def __init__(
        self,
        events: Callable[[], Iterator[dict[str, Any]]],
        exact: Callable[[], Awaitable[StoredLog]],
        progress: ReadProgress | None = None,
        *,
        lines: Callable[[], Iterator[bytes | str | tuple[int, bytes | str]]] | None = None,
        packed: bool = True,
        finished: Callable[[int], None] | None = None,
    ) -> None:
        self.events = events
        self.exact = exact
        self.progress = progress or ReadProgress(0)
        self.lines = lines
        self.packed = packed
        self.finished = finished


class StoredLog(msgspec.Struct, frozen=True):
    """What ``read`` found: the header, the committed events (decoded wire objects), a torn tail.

    With ``stream`` set, ``events`` is empty and the events come from the stream
    (see ``WireStream``); ``torn`` is then ``None``.
    """

    header: SessionHeader
    events: list[dict[str, Any]]
    torn: TornTail | None = None
    location: str | None = None
    stream: WireStream | None = None


class SessionInfo(msgspec.Struct, frozen=True):
    """One line of ``list()``.

    ``problem`` is ``None`` for a session whose header reads; for a damaged one it says
    why (the error a load would raise), and ``created_at``/``cwd``/``title`` are what
    could still be read (``None`` when nothing could). ``parent`` is the header's
    ``parentSession`` (the session this one was forked from), ``None`` for a root.
    """

    id: str
    created_at: int | None
    cwd: str | None
    event_count: int
    last_activity: int | None
    title: str | None = None
    location: str | None = None
    problem: str | None = None
    parent: str | None = None


@runtime_checkable
class Backend(Protocol):
    """Durable storage of session logs. All methods are coroutines."""

    async def create(self, header: SessionHeader) -> None:
        """Reserve a new session id. Raises ``SessionExists`` if known; may write nothing yet."""
        ...

    async def append(self, session_id: str, batch: Sequence[Event]) -> None:
        """Durably append ``batch`` (all or nothing). ``SessionConflict`` if ``batch[0].seq`` is not
        the stored length; ``PersistenceFailed`` if the write failed (nothing committed)."""
        ...

    async def read(self, session_id: str) -> StoredLog:
        """The committed log. ``SessionNotFound``, ``CorruptSession``, ``UnsupportedFormat``."""
        ...

    async def repair(self, session_id: str, log: StoredLog, closers: Sequence[Event]) -> None:
        """Cut the torn tail ``log.torn`` (if any) and append ``closers``, durably."""
        ...

    async def stored_length(self, session_id: str) -> int:
        """How many events are committed (0 for a created, never-appended session)."""
        ...

    async def list(self) -> list[SessionInfo]:
        """Every stored session (a created but never-appended one is not listed). A session
        whose header cannot be read is listed with ``problem`` set, never dropped; a store
        that breaks its own layout rules (FORMAT §9.1) raises."""
        ...

    async def delete(self, session_id: str) -> None:
        """Remove the session durably: its header, every event and any reservation of it here.
        ``SessionNotFound`` when nothing is stored or reserved under ``session_id``. A writer
        still holding the session then gets ``SessionNotFound`` on its next append (nothing
        written), never a silent write to a log nobody can read."""
        ...

    async def claim(self, session_id: str, owner: SessionOwner, *, take_over: bool = False) -> Claim:
        """Make ``owner`` the session's one live writer (see ``OwningBackend.claim``)."""
        ...

    async def unclaim(self, session_id: str) -> None:
        """Give up the ownership ``claim`` took (a no-op when not owned here)."""
        ...

    async def owner(self, session_id: str) -> SessionOwner | None:
        """The session's live owner, or ``None``; takes nothing."""
        ...

    async def close(self) -> None:
        """Release resources and every claim. Further calls may fail."""
        ...


async def read_whole(backend: Backend, session_id: str) -> StoredLog:
    """``backend.read`` with every event decoded in ``events`` (a stream read exactly)."""
    log = await backend.read(session_id)
    return await log.stream.exact() if log.stream is not None else log

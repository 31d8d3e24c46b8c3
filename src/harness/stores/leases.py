"""Optional backend capabilities for many writers: fenced leases and live tails (SPEC §4).

A backend shared by workers on many machines (``PostgresBackend``) lets one worker
at a time hold a **lease** on a session. Each acquisition gets a fencing token
larger than every earlier one for that session; once a backend holds a lease, each
of its appends to that session checks the token inside the append transaction, so
a writer whose lease expired or was taken over cannot write (``LeaseLost``, nothing
written). Backends that also stream commits implement ``TailingBackend``.

``SessionStore.acquire`` / ``release_lease`` / ``tail`` check for these protocols
and refuse (``StorageError``) on backends without them.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Protocol, runtime_checkable

import msgspec

from harness.events.event import Event

__all__ = ["Lease", "LeasingBackend", "TailingBackend"]


class Lease(msgspec.Struct, frozen=True):
    """A writer's claim on a session.

    ``token`` is the fencing token (it only ever grows for a session);
    ``expires_at`` is when the lease ends unless renewed, in epoch ms by the
    database server's clock (the only clock fencing decisions use).
    """

    session_id: str
    owner: str
    token: int
    expires_at: int


@runtime_checkable
class LeasingBackend(Protocol):
    """A backend that grants fenced leases on sessions."""

    async def acquire(self, session_id: str, owner: str, ttl_s: float, *, takeover: bool = False) -> Lease:
        """Take the lease on ``session_id`` for ``ttl_s`` seconds, renewed in the background while
        held. ``LeaseHeld`` if another holder's lease has not expired and ``takeover`` is false;
        with ``takeover`` the current holder is fenced off at once."""
        ...

    async def release(self, session_id: str) -> None:
        """Stop renewing and give up this backend's lease on ``session_id`` (a no-op if none)."""
        ...

    def lease(self, session_id: str) -> Lease | None:
        """The lease this backend holds on ``session_id`` (as last renewed), if any."""
        ...


@runtime_checkable
class TailingBackend(Protocol):
    """A backend that streams a session's events as they commit."""

    def tail(self, session_id: str, from_seq: int = 0) -> AsyncGenerator[Event, None]:
        """The committed events with ``seq >= from_seq`` in order, then each new one as it
        commits, until the iterator is closed. Never skips or repeats an event."""
        ...

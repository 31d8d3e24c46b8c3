"""Fenced leases on sessions, renewed in the background while held.

A lease row per session keeps ``owner``, ``token`` and ``expires_at`` (server clock).
``acquire`` takes the row when its lease has expired, when ``takeover`` is asked,
or when this backend already holds it, and always increments the token: every
acquisition fences off every earlier holder. The row is never deleted, so tokens
only grow. While held, a task renews the lease every ``ttl / 3`` (only if it is
still ours and unexpired: an expired lease stays lost). ``release`` stops the task
and expires the row at once. The append function checks the held token in the
append's own transaction, which is what actually fences a writer off.

A lease is also judged by this process's clock, so a writer cut off from the server
learns it has lost it before the server lets another writer in: the server's expiry
is at least the ttl after the moment the acquire or last renewal was *sent*, so once
that long has passed without a renewal getting through, the lease is treated as lost
(``usable`` raises ``LeaseLost`` without asking the server, and renewing stops).
A failed renewal is retried every ``ttl / 10`` until then.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from psycopg import AsyncConnection

from harness.errors import LeaseHeld, LeaseLost, StorageError
from harness.stores.leases import Lease
from harness.stores.postgres.codec import db_text, from_db_text
from harness.stores.postgres.queries import Queries

__all__ = ["LeaseKeeper"]

log = logging.getLogger("harness.stores.postgres")

T = TypeVar("T")
Connection = AsyncConnection[Any]
Runner = Callable[[Callable[[Connection], Awaitable[T]], str, str, bool], Awaitable[T]]


class _Held:
    __slots__ = ("lease", "lost", "refused", "task", "ttl_s", "valid_until")

    def __init__(self, lease: Lease, ttl_s: float, sent: float) -> None:
        self.lease = lease
        self.ttl_s = ttl_s
        self.valid_until = sent + ttl_s  # monotonic: the server's expiry is no earlier
        self.lost: str | None = None  # why this process holds the lease no longer
        self.refused = False  # the server refused a renewal: appends learn who holds it now
        self.task: asyncio.Task[None] | None = None

    def expired(self) -> bool:
        """True (and ``lost`` set) once the lease may have expired on the server."""
        if self.lost is None and not self.refused and time.monotonic() >= self.valid_until:
            self.lost = (
                f"no renewal reached the server for {self.ttl_s:g} s (the lease's ttl), so it may "
                "have expired there"
            )
        return self.lost is not None


class LeaseKeeper:
    """The leases one backend holds. ``run(fn, action, session_id, write)`` runs ``fn`` on a
    pooled connection and translates its errors."""

    def __init__(self, queries: Queries, run: Runner[Any]) -> None:
        self._q = queries
        self._run = run
        self._held: dict[str, _Held] = {}

    def token(self, session_id: str) -> int | None:
        """The fencing token this backend holds for ``session_id`` (appends carry it)."""
        held = self._held.get(session_id)
        return None if held is None else held.lease.token

    def lease(self, session_id: str) -> Lease | None:
        """The lease held on ``session_id``, as last renewed (``None`` once treated as lost)."""
        held = self._held.get(session_id)
        return None if held is None or held.refused or held.expired() else held.lease

    def usable(self, session_id: str) -> int | None:
        """The token to append with (``None`` when no lease is held); ``LeaseLost`` without
        asking the server when the lease could not be renewed in time."""
        held = self._held.get(session_id)
        if held is None:
            return None
        if held.expired():
            raise LeaseLost(
                f"the lease on session {session_id!r} (token {held.lease.token}) is treated as lost: "
                f"{held.lost}; nothing was written",
                token=held.lease.token,
            )
        return held.lease.token

    async def acquire(self, session_id: str, owner: str, ttl_s: float, takeover: bool) -> Lease:
        """See ``LeasingBackend.acquire``."""
        if not isinstance(owner, str) or not owner:
            raise ValueError("a lease owner must be a non-empty string")
        if not (isinstance(ttl_s, int | float) and math.isfinite(ttl_s) and ttl_s > 0):
            raise ValueError(f"a lease ttl must be a positive number of seconds, got {ttl_s!r}")
        mine = self.token(session_id)
        key = db_text(session_id)

        async def take(conn: Connection) -> tuple[int, int] | tuple[str, int] | None:
            params = {"id": key, "owner": db_text(owner), "ttl": float(ttl_s), "takeover": takeover}
            cursor = await conn.execute(self._q.acquire, {**params, "mine": mine})
            row = await cursor.fetchone()
            if row is not None:
                return int(row[0]), int(row[1])
            cursor = await conn.execute(self._q.holder, (key,))
            holder = await cursor.fetchone()
            return None if holder is None else (str(holder[0]), int(holder[1]))

        sent = time.monotonic()
        got = await self._run(take, "acquiring a lease", session_id, True)
        if got is None or isinstance(got[0], str):
            holder = from_db_text(got[0]) if got is not None and isinstance(got[0], str) else None
            expires = got[1] if got is not None else None
            raise LeaseHeld(
                f"session {session_id!r} is leased by {LeaseHeld.describe(holder)} until {expires} "
                "(epoch ms, server clock); "
                "wait for it to expire or take it over",
                holder=holder,
                expires_at=expires,
            )
        lease = Lease(session_id=session_id, owner=owner, token=got[0], expires_at=got[1])
        self._stop(session_id)
        held = _Held(lease, float(ttl_s), sent)
        held.task = asyncio.get_running_loop().create_task(
            self._renew_loop(session_id, held), name=f"harness-lease-{session_id}"
        )
        self._held[session_id] = held
        return lease

    def _stop(self, session_id: str) -> _Held | None:
        held = self._held.pop(session_id, None)
        if held is not None and held.task is not None:
            held.task.cancel()
        return held

    async def _renew_loop(self, session_id: str, held: _Held) -> None:
        key = db_text(session_id)
        pause = held.ttl_s / 3
        while True:
            await asyncio.sleep(max(0.0, min(pause, held.valid_until - time.monotonic())))
            if held.expired():
                _log_lost(session_id, held)
                return

            async def renew(conn: Connection) -> int | None:
                cursor = await conn.execute(self._q.renew, (held.ttl_s, key, held.lease.token))
                row = await cursor.fetchone()
                return None if row is None else int(row[0])

            sent = time.monotonic()
            try:
                expires = await self._run(renew, "renewing a lease", session_id, True)
            except StorageError as error:
                log.warning("session %s: lease renewal failed, will retry: %s", session_id, error)
                pause = held.ttl_s / 10
                continue
            if held.expired():  # the answer came too late to count
                _log_lost(session_id, held)
                return
            pause = held.ttl_s / 3
            held.valid_until = sent + held.ttl_s
            if expires is None:
                held.refused = True
                log.warning(
                    "session %s: lease token %d expired or was taken over; appends will be refused",
                    session_id,
                    held.lease.token,
                )
                return
            held.lease = Lease(
                session_id=session_id, owner=held.lease.owner, token=held.lease.token, expires_at=expires
            )

    async def release(self, session_id: str) -> None:
        """Stop renewing and expire the lease now (a no-op when none is held)."""
        held = self._stop(session_id)
        if held is None:
            return
        if held.task is not None:
            await asyncio.wait([held.task])  # let the cancelled renewal finish (it raises nothing here)
        token = held.lease.token

        async def expire(conn: Connection) -> None:
            await conn.execute(self._q.release, (db_text(session_id), token))

        await self._run(expire, "releasing a lease", session_id, True)

    def forget(self, session_id: str) -> None:
        """Stop renewing the lease on ``session_id`` without touching its row (the session
        was deleted in a transaction that expired the row itself)."""
        self._stop(session_id)

    def held(self) -> list[str]:
        """The sessions this backend holds leases on."""
        return list(self._held)


def _log_lost(session_id: str, held: _Held) -> None:
    log.warning("session %s: lease token %d is treated as lost: %s", session_id, held.lease.token, held.lost)

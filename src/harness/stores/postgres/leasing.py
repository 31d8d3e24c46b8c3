"""Fenced leases on sessions, renewed in the background while held.

A lease row per session keeps ``owner``, ``token`` and ``expires_at`` (server clock).
``acquire`` takes the row when its lease has expired, when ``takeover`` is asked,
or when this backend already holds it, and always increments the token: every
acquisition fences off every earlier holder. The row is never deleted, so tokens
only grow. While held, a task renews the lease every ``ttl / 3`` (only if it is
still ours and unexpired: an expired lease stays lost). ``release`` stops the task
and expires the row at once. The append function checks the held token in the
append's own transaction, which is what actually fences a writer off.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from psycopg import AsyncConnection

from harness.errors import LeaseHeld, StorageError
from harness.stores.leases import Lease
from harness.stores.postgres.codec import db_text, from_db_text
from harness.stores.postgres.queries import Queries

__all__ = ["LeaseKeeper"]

log = logging.getLogger("harness.stores.postgres")

T = TypeVar("T")
Connection = AsyncConnection[Any]
Runner = Callable[[Callable[[Connection], Awaitable[T]], str, str, bool], Awaitable[T]]


class _Held:
    __slots__ = ("lease", "task", "ttl_s")

    def __init__(self, lease: Lease, ttl_s: float) -> None:
        self.lease = lease
        self.ttl_s = ttl_s
        self.task: asyncio.Task[None] | None = None


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
        """The lease held on ``session_id``, as last renewed."""
        held = self._held.get(session_id)
        return None if held is None else held.lease

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
        held = _Held(lease, float(ttl_s))
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
        while True:
            await asyncio.sleep(held.ttl_s / 3)

            async def renew(conn: Connection) -> int | None:
                cursor = await conn.execute(self._q.renew, (held.ttl_s, key, held.lease.token))
                row = await cursor.fetchone()
                return None if row is None else int(row[0])

            try:
                expires = await self._run(renew, "renewing a lease", session_id, True)
            except StorageError as error:
                log.warning("session %s: lease renewal failed, will retry: %s", session_id, error)
                continue
            if expires is None:
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

"""``FaultyBackend``: a backend wrapper that fails on command, for tests of durability;
``DelegatingBackend``: the base of such wrappers, forwarding every ``Backend`` method.

It ships with the package so that users can test their own recovery paths too.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from harness.errors import SessionOwner
from harness.events.event import Event
from harness.session.header import SessionHeader
from harness.stores.backend import Backend, SessionInfo, StoredLog
from harness.stores.ownership import Claim

__all__ = ["DelegatingBackend", "FaultyBackend"]


class DelegatingBackend:
    """A ``Backend`` that forwards every call to ``inner``: subclass it and override only
    the methods a wrapper changes."""

    def __init__(self, inner: Backend) -> None:
        self.inner = inner

    async def create(self, header: SessionHeader) -> None:
        await self.inner.create(header)

    async def append(self, session_id: str, batch: Sequence[Event]) -> None:
        await self.inner.append(session_id, batch)

    async def read(self, session_id: str) -> StoredLog:
        return await self.inner.read(session_id)

    async def repair(self, session_id: str, log: StoredLog, closers: Sequence[Event]) -> None:
        await self.inner.repair(session_id, log, closers)

    async def stored_length(self, session_id: str) -> int:
        return await self.inner.stored_length(session_id)

    async def list(self) -> list[SessionInfo]:
        return await self.inner.list()

    async def delete(self, session_id: str) -> None:
        await self.inner.delete(session_id)

    async def claim(self, session_id: str, owner: SessionOwner, *, take_over: bool = False) -> Claim:
        return await self.inner.claim(session_id, owner, take_over=take_over)

    async def unclaim(self, session_id: str) -> None:
        await self.inner.unclaim(session_id)

    async def owner(self, session_id: str) -> SessionOwner | None:
        return await self.inner.owner(session_id)

    async def close(self) -> None:
        await self.inner.close()


class FaultyBackend(DelegatingBackend):
    """Wraps a backend; ``fail_next_append`` makes the next append raise.

    ``after_write=False``: the append fails before anything is written (a clean
    failure). ``after_write=True``: the inner append runs and commits, then the
    error is raised anyway (a lost reply: the caller cannot know it committed).
    ``partial=n``: the first ``n`` events of the batch are committed, then it fails.
    Every append's batch size and loop time are recorded in ``appends`` as it ends, and its
    start time in ``starts``. ``hold()`` makes every append wait (after ``starts`` records
    it) until ``release()``, so a test can order a write against other events by cause
    rather than by sleeps that a loaded machine can outrun.
    """

    def __init__(self, inner: Backend, *, delay_s: float = 0.0) -> None:
        super().__init__(inner)
        self.delay_s = delay_s
        self.appends: list[tuple[float, int]] = []
        self.starts: list[float] = []
        self._gate: asyncio.Event | None = None
        self._fail: list[tuple[BaseException, bool, int | None]] = []

    def fail_next_append(
        self, error: BaseException | None = None, *, after_write: bool = False, partial: int | None = None
    ) -> None:
        self._fail.append((error or OSError(5, "Input/output error (injected)"), after_write, partial))

    def hold(self) -> None:
        """Make appends wait, from now until ``release()``."""
        self._gate = asyncio.Event()

    def release(self) -> None:
        """Let held appends (and every later one) go on."""
        if self._gate is not None:
            self._gate.set()

    async def append(self, session_id: str, batch: Sequence[Event]) -> None:
        self.starts.append(asyncio.get_running_loop().time())
        if self._gate is not None:
            await self._gate.wait()
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        if self._fail:
            error, after_write, partial = self._fail.pop(0)
            if partial is not None:
                await self.inner.append(session_id, batch[:partial])
            elif after_write:
                await self.inner.append(session_id, batch)
            raise error
        await self.inner.append(session_id, batch)
        self.appends.append((asyncio.get_running_loop().time(), len(batch)))

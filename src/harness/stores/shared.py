"""Owning a session only while a call runs, shared by the calls of one process.

The framework adapters serve stores with many writers: any number of processes add to one
OpenAI Agents SDK session or one LangGraph thread. A harness session has one owner at a
time (``SessionStore.load``), so an adapter owns a session only while a call runs: it takes
ownership (waiting for another writer to let go), brings its view up to date, does the
call, makes it durable and lets go. ``SessionStore.reclaim`` keeps that cheap: the view is
reused as long as no other writer appended meanwhile.

Every adapter object of one session id on one store shares one ``SharedSession``
(``shared_session``): calls that overlap in this process (a compaction's summary and an
``add_items`` beside it) use the same live session, and ownership is let go when the last
of them ends. ``holders`` keep it owned between calls (an adapter's ``hold=True``).

A write that fails leaves the view holding events that may not be stored. The view is then
dropped (``SessionStore.discard``) and the next call loads the session afresh, so no call
ever shows what is not stored.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
import weakref
from collections.abc import Awaitable, Callable
from typing import Any

from harness.errors import SessionExists, SessionInUse, SessionNotFound
from harness.session.session import Session
from harness.stores.store import SessionStore

__all__ = ["SharedSession", "shared_session"]

logger = logging.getLogger("harness.stores")

Create = Callable[[], Awaitable[Session]]
"""Makes the session when the store holds none (``SessionStore.create`` and what follows)."""


class SharedSession:
    """One session id in one store, as this process's adapter objects use it."""

    def __init__(self, store: SessionStore, session_id: str) -> None:
        self.store = store
        self.session_id = session_id
        self.view: Session | None = None
        """The newest session seen: live in the store while ``owned``, detached otherwise."""
        self.owned = False
        self.users = 0  # calls running now
        self.holders = 0  # adapter objects that keep it owned between calls
        self.memo: dict[str, Any] = {}
        """What an adapter derived from ``view``; emptied when the view is replaced."""
        self._unsure = False  # a write failed and the view could not be dropped yet
        self._lock: asyncio.Lock | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def _mutex(self) -> asyncio.Lock:
        # The store's gate runs one loop's calls at a time, so a lock of a loop no call runs
        # in any more is free and can be replaced.
        loop = asyncio.get_running_loop()
        if self._lock is None or self._loop is not loop:
            self._lock, self._loop = asyncio.Lock(), loop
        return self._lock

    async def enter(self, *, wait: float, create: Create | None = None) -> Session:
        """Begin a call: the live session, owned by this process until the last call ends.

        ``wait``: seconds to wait for another writer to let go (then ``SessionInUse``).
        ``create`` makes the session when the store holds none; without it, ``SessionNotFound``.
        A call that began must end with ``exit``, whatever happens.
        """
        async with self._mutex():
            if self._unsure:
                await self._drop()
            if self.owned and not self.store.is_live(self.view):  # type: ignore[arg-type]
                self.owned = False  # the store let it go (``store.close``, ``release``)
            if not self.owned:
                session = await self._own(wait, create)
                if session is not self.view:
                    self.memo.clear()
                self.view, self.owned = session, True
            self.users += 1
            return self.view  # type: ignore[return-value]

    async def exit(self, *, failed: bool) -> None:
        """End a call. ``failed``: it wrote and its write failed, so the view is dropped.

        The call's own items were written (or it raised) before this: a failure to write
        what the view still queues (a repair's closers) only drops the view, with a warning.
        """
        self.users -= 1
        async with self._mutex():
            try:
                if failed:
                    await self._drop()
                elif self.owned and not self.users and not self.holders:
                    await self._let_go()
            except Exception as error:
                logger.warning("session %s: letting go of it failed: %s", self.session_id, error)

    async def unhold(self) -> None:
        """One holder lets go (an adapter's ``close``); the last one lets the session go."""
        self.holders -= 1
        async with self._mutex():
            if self.owned and not self.users and not self.holders:
                await self._let_go()

    async def _own(self, wait: float, create: Create | None) -> Session:
        if self.view is not None:
            try:
                return await self.store.reclaim(self.view, wait=wait)
            except SessionNotFound:
                self.view = None  # deleted, or created here and never written
        # Load it, else create it. Two writers may both find nothing and race to create: the
        # loser loads the winner's, as long as ``wait`` lasts.
        deadline = time.monotonic() + wait
        while True:
            try:
                return await self.store.load(self.session_id, wait=max(0.0, deadline - time.monotonic()))
            except SessionNotFound:
                if create is None:
                    raise
            try:
                return await create()
            except (SessionExists, SessionInUse):
                if time.monotonic() >= deadline:
                    raise
            await asyncio.sleep(0.005)

    async def _let_go(self) -> None:
        assert self.view is not None
        if not self.store.is_live(self.view):  # deleted, or let go by the store itself
            self.owned = False
            return
        try:
            await self.store.release(self.view)
        except Exception:
            await self._drop()
            raise
        self.owned = False

    async def _drop(self) -> None:
        """Stop using a view whose events may not all be stored; the next call loads afresh."""
        if not self.owned or self.view is None or not self.store.is_live(self.view):
            self.view, self.owned, self._unsure = None, False, False
            self.memo.clear()
            return
        self._unsure = True
        unwritten = await self.store.discard(self.view)  # OutcomeUnknown: tried again next call
        if unwritten:
            logger.warning(
                "session %s: a write failed; %d event(s) were not stored and are dropped",
                self.session_id,
                len(unwritten),
            )
        self.view, self.owned, self._unsure = None, False, False
        self.memo.clear()


_SHARED: weakref.WeakKeyDictionary[SessionStore, dict[str, SharedSession]] = weakref.WeakKeyDictionary()
_SHARED_LOCK = threading.Lock()


def shared_session(store: SessionStore, session_id: str) -> SharedSession:
    """The one ``SharedSession`` of ``session_id`` in ``store`` (made on first request)."""
    with _SHARED_LOCK:
        sessions = _SHARED.setdefault(store, {})
        shared = sessions.get(session_id)
        if shared is None:
            shared = sessions[session_id] = SharedSession(store, session_id)
        return shared

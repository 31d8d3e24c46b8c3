"""Which event loop drives a harness store now, for sessions used from several loops.

A ``SessionStore`` (its write-behind, its live sessions) runs in one event loop at a time.
The OpenAI Agents SDK's users reach a session from several: ``Runner.run_sync`` makes a new
loop per call, and threads run loops of their own. ``LoopGate`` (one per store, shared by
every ``HarnessSession`` on it) lets each call run directly in its caller's loop: calls from
the loop that drives the store now go straight in (any number at once, as in one loop);
a call from another loop waits, without blocking its loop, until no call runs in the current
one, then moves the store to its own loop (``SessionStore.rebind_loop``) and runs there.
No thread is started, so nothing needs closing; calls from different loops are serialized.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import weakref
from collections.abc import AsyncIterator

from harness.errors import StorageError
from harness.stores.store import SessionStore

__all__ = ["LoopGate", "gate_of"]

_RETRY_S = 0.01  # how often a waiting loop looks again while a write of the store finishes


class LoopGate:
    """Admits the calls of one store's sessions: one event loop's calls at a time."""

    def __init__(self, store: SessionStore) -> None:
        self._store = store
        self._lock = threading.Lock()
        self._owner: asyncio.AbstractEventLoop | None = None
        self._running = 0  # calls admitted in the owner loop and not finished
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = []

    @property
    def owner(self) -> asyncio.AbstractEventLoop | None:
        """The loop that drives the store now (None before the first call)."""
        return self._owner

    @contextlib.asynccontextmanager
    async def hold(self) -> AsyncIterator[None]:
        """Run the body in the caller's loop, once that loop drives the store."""
        loop = asyncio.get_running_loop()
        while True:
            with self._lock:
                if self._admit(loop):
                    self._running += 1
                    break
                # woken when the owner's last call ends; with no call running, the store
                # waits for a write the owner loop finishes after its calls did (durable=False)
                timeout = None if self._running else _RETRY_S
                woken: asyncio.Future[None] = loop.create_future()
                self._waiters.append((loop, woken))
            try:
                await asyncio.wait([woken], timeout=timeout)
            finally:
                with self._lock, contextlib.suppress(ValueError):
                    self._waiters.remove((loop, woken))
        try:
            yield
        finally:
            with self._lock:
                self._running -= 1
                if self._running == 0:
                    waiters, self._waiters = self._waiters, []
                    for other, woken in waiters:
                        with contextlib.suppress(RuntimeError):  # that loop closed meanwhile
                            other.call_soon_threadsafe(_wake, woken)

    def _admit(self, loop: asyncio.AbstractEventLoop) -> bool:
        """Under the lock: may a call of ``loop`` run now? Moves the store to it if free."""
        owner = self._owner
        if owner is loop:
            return True
        if self._running:
            if owner is not None and owner.is_closed():
                self._running = 0  # its calls can never finish: the loop is gone
            elif owner is not None and not owner.is_running():
                raise StorageError(
                    "a HarnessSession call is suspended in an event loop that stopped "
                    "(not closed) in the middle of it; run that loop to the end or close it"
                )
            else:
                return False
        if not self._store.rebind_loop(loop):
            if owner is not None and owner.is_closed():
                raise StorageError("the store's event loop closed in the middle of a write")
            return False
        self._owner = loop
        return True


def _wake(woken: asyncio.Future[None]) -> None:
    if not woken.done():
        woken.set_result(None)


_GATES: weakref.WeakKeyDictionary[SessionStore, LoopGate] = weakref.WeakKeyDictionary()
_GATES_LOCK = threading.Lock()


def gate_of(store: SessionStore) -> LoopGate:
    """The one gate of ``store`` (made on first request, gone with the store)."""
    with _GATES_LOCK:
        gate = _GATES.get(store)
        if gate is None:
            gate = _GATES[store] = LoopGate(store)
        return gate

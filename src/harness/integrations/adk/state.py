"""Where ADK's state lives in a harness store, and how it is read back.

ADK state has three durable scopes (``temp:`` keys are never stored):

* **session** state (keys without a prefix): the initial state in the session's ``adk/session``
  record, then each stored event's ``state_delta``; folded in log order on every read;
* **app** state (``app:`` keys), shared by every session of the app: one harness session per app,
  ``adk-state/<app>``, whose events are ``adk/state`` deltas;
* **user** state (``user:`` keys), shared by the sessions of one user of one app:
  ``adk-state/<app>/<user>``, the same way.

A shared-state log is folded in log order (the last write wins, as in ADK's services); a delta
written late (the repair below) sets only the keys no later event (by timestamp) has set. Each
delta names the session event it came from (``source``: session log id and seq): a session
event is made durable first, its shared deltas next, and a process that died in between leaves
the session event holding the delta; the service finds those when the session is next read
(``Folded.sources``) and writes them then, marked ``late``.

The parts of an id are percent-encoded (``quote(part, safe="")``), so ``/`` only separates them.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import weakref
from collections.abc import Iterable, Mapping
from typing import Any, Final
from urllib.parse import quote

import orjson

from harness.errors import SessionConflict, SessionInUse, SessionNotFound
from harness.events.event import Event
from harness.integrations.adk.events import STATE_RECORD
from harness.session.session import Session
from harness.stores.store import SessionStore, restore_logged

__all__ = [
    "APP_PREFIX",
    "STATE_RETRIES",
    "TEMP_PREFIX",
    "USER_PREFIX",
    "SharedState",
    "app_log_id",
    "read_stored",
    "session_log_id",
    "session_prefix",
    "split_delta",
    "user_log_id",
]

APP_PREFIX: Final = "app:"
USER_PREFIX: Final = "user:"
TEMP_PREFIX: Final = "temp:"
STATE_RETRIES: Final = 16
IN_USE_WAIT_S: Final = 10.0
"""How long a delta waits for another process's write of the same shared log to end."""
"""How often a shared-state delta is retried after another writer appended to its log first."""


def _q(part: str) -> str:
    return quote(part, safe="")


def session_log_id(app_name: str, user_id: str, session_id: str) -> str:
    """The harness session id of an ADK session."""
    return f"adk/{_q(app_name)}/{_q(user_id)}/{_q(session_id)}"


def session_prefix(app_name: str, user_id: str | None = None) -> str:
    """What the log ids of an app's sessions (of one user's, given ``user_id``) start with."""
    return f"adk/{_q(app_name)}/" + ("" if user_id is None else f"{_q(user_id)}/")


def app_log_id(app_name: str) -> str:
    """The harness session id of an app's shared state."""
    return f"adk-state/{_q(app_name)}"


def user_log_id(app_name: str, user_id: str) -> str:
    """The harness session id of a user's shared state within an app."""
    return f"adk-state/{_q(app_name)}/{_q(user_id)}"


def split_delta(delta: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """``(app, user, session)`` parts of a state delta, prefixes removed; ``temp:`` keys dropped."""
    app: dict[str, Any] = {}
    user: dict[str, Any] = {}
    session: dict[str, Any] = {}
    for key, value in delta.items():
        if key.startswith(APP_PREFIX):
            app[key.removeprefix(APP_PREFIX)] = value
        elif key.startswith(USER_PREFIX):
            user[key.removeprefix(USER_PREFIX)] = value
        elif not key.startswith(TEMP_PREFIX):
            session[key] = value
    return app, user, session


async def read_stored(store: SessionStore, log_id: str) -> Session:
    """A detached view of what the backend holds now (never the store's live copy: another
    process may have written since). ``SessionNotFound`` when nothing is stored."""
    log = await store.backend.read(log_id)
    session, _, _ = await restore_logged(log_id, log)
    return session


class Folded:
    """A shared-state log folded: the values and the session events they came from."""

    __slots__ = ("sources", "values")

    def __init__(self, events: Iterable[Event]) -> None:
        self.sources: set[tuple[str, int]] = set()
        self.values: dict[str, Any] = {}
        stamps: dict[str, float] = {}
        for event in events:
            if event.type != STATE_RECORD:
                continue
            data = orjson.loads(event.data_json)
            source = data.get("source")
            if isinstance(source, dict):
                self.sources.add((str(source.get("session")), int(source.get("seq", -1))))
            stamp = float(data.get("timestamp", 0.0))
            late = data.get("late") is True
            for key, value in (data.get("delta") or {}).items():
                if late and stamps.get(key, stamp) > stamp:
                    continue  # a later event already set it: the late delta is older news
                self.values[key] = value
                stamps[key] = stamp


class SharedState:
    """The app- and user-state logs of one store (one per store: ``SharedState.of``)."""

    def __init__(self, store: SessionStore) -> None:
        self._store_ref = weakref.ref(store)  # a strong one would keep its registry entry alive
        self._live: dict[str, Session] = {}

    @property
    def _store(self) -> SessionStore:
        store = self._store_ref()
        assert store is not None, "the store of this SharedState is gone"
        return store

    @staticmethod
    def of(store: SessionStore) -> SharedState:
        """The one ``SharedState`` of ``store`` (every service on the store shares it, as they
        share the store's live sessions)."""
        shared = _SHARED.get(store)
        if shared is None:
            shared = _SHARED[store] = SharedState(store)
        return shared

    async def read(self, log_id: str) -> Folded:
        """The state a shared log holds now (empty when it has none yet)."""
        try:
            session = await read_stored(self._store, log_id)
        except SessionNotFound:
            return Folded(())
        return Folded(session.events)

    async def _writable(self, log_id: str) -> Session:
        session = self._live.get(log_id)
        if session is None:
            try:
                session = await self._store.load(log_id)
            except SessionNotFound:
                session = await self._store.create(id=log_id)
            self._live[log_id] = session
        return session

    async def add(
        self,
        log_id: str,
        delta: Mapping[str, Any],
        timestamp: float,
        source: tuple[str, int],
        *,
        late: bool = False,
    ) -> None:
        """Append one delta durably (``late``: a repair, see the module doc). Another writer
        that appended first only makes it retry on the log as it is now: a delta is an update
        of keys, never a read-modify-write."""
        record: dict[str, Any] = {
            "delta": dict(delta),
            "timestamp": timestamp,
            "source": {"session": source[0], "seq": source[1]},
        }
        if late:
            record["late"] = True
        deadline = time.monotonic() + IN_USE_WAIT_S
        attempt = 0
        while True:
            try:
                session = await self._writable(log_id)
            except SessionInUse:  # another process is writing a delta now: its write is short
                if time.monotonic() >= deadline:
                    raise
                await asyncio.sleep(0.01)
                continue
            session.append(STATE_RECORD, record, ignorable=True)
            try:
                await self._store.flush(session)
            except (SessionConflict, SessionNotFound):  # another writer first; or deleted, detached
                del self._live[log_id]
                with contextlib.suppress(SessionNotFound):
                    await self._store.discard(session)
                attempt += 1
                if attempt == STATE_RETRIES:
                    raise
                continue
            # Shared by every session of the app or user, in every process: held no longer
            # than one write, so that other processes can write their deltas too.
            del self._live[log_id]
            await self._store.release(session)
            return

    async def forget(self) -> None:
        """Release every shared log this service holds live (before the store closes)."""
        for session in list(self._live.values()):
            await self._store.release(session)
        self._live.clear()


_SHARED: weakref.WeakKeyDictionary[SessionStore, SharedState] = weakref.WeakKeyDictionary()

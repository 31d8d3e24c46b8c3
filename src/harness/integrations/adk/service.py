"""``HarnessSessionService``: a harness store as Google ADK's session service.

Each ADK session is one harness session (``state.session_log_id``): an ``adk/session`` record,
then one Surface event per stored ADK event (``events.py``); app and user state live in shared
logs of their own (``state.py``). Every read is fresh from the backend, so sessions written by
another process are seen; an append goes through a live session of the store and returns once
it is durable. A writer that lost a race (the caller's session is older than what is stored,
or another process appended first: the backend's expected-seq check) gets ADK's own
``StaleSessionError``, caused by a harness ``SessionConflict``, and nothing is written:
never a silent merge.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import weakref
from collections.abc import Sequence
from typing import Any, Final
from urllib.parse import unquote

import orjson
from google.adk.errors import StaleSessionError
from google.adk.errors.already_exists_error import AlreadyExistsError
from google.adk.errors.session_not_found_error import SessionNotFoundError
from google.adk.events.event import Event as AdkEvent
from google.adk.platform import time as platform_time
from google.adk.platform import uuid as platform_uuid
from google.adk.sessions.base_session_service import (
    BaseSessionService,
    GetSessionConfig,
    ListSessionsResponse,
)
from google.adk.sessions.session import Session as AdkSession
from pydantic_core import to_jsonable_python
from typing_extensions import override

from harness.errors import SessionConflict, SessionExists, SessionInUse, SessionNotFound
from harness.events.json import check_json
from harness.integrations.adk.events import SESSION_RECORD, event_payload, wire_of
from harness.integrations.adk.state import (
    APP_PREFIX,
    USER_PREFIX,
    SharedState,
    app_log_id,
    read_stored,
    session_log_id,
    session_prefix,
    split_delta,
    user_log_id,
)
from harness.session.session import Session
from harness.stores.open import open_store
from harness.stores.store import SessionStore

__all__ = ["HarnessSessionService", "StaleSessionError"]

logger = logging.getLogger("harness.integrations.adk")

_MARKER: Final = "harness:"



class _Tracked:
    """A session this service appends to: the live harness session and what it indexes."""

    __slots__ = ("count", "ids", "session", "timestamps")

    def __init__(self, session: Session) -> None:
        self.session = session
        self.count = 0  # ADK events stored
        self.timestamps: dict[int, float] = {}  # seq of each ADK event -> its timestamp
        self.ids: dict[str, list[int]] = {}  # ADK event id -> seqs
        for event in session.events:
            wire = wire_of(event)
            if wire is not None:
                self.note(event.seq, wire)

    def note(self, seq: int, wire: dict[str, Any]) -> None:
        self.count += 1
        stamp = wire.get("timestamp")
        if isinstance(stamp, int | float):
            self.timestamps[seq] = float(stamp)
        event_id = wire.get("id")
        if isinstance(event_id, str) and event_id:
            self.ids.setdefault(event_id, []).append(seq)


_TRACKED: weakref.WeakKeyDictionary[SessionStore, dict[str, _Tracked]] = weakref.WeakKeyDictionary()
_APPENDING: weakref.WeakKeyDictionary[SessionStore, dict[str, asyncio.Lock]] = weakref.WeakKeyDictionary()
"""One lock per session log and store: the stale check, the append and its flush run as one,
so two copies of one revision appended at once cannot both pass the check."""
"""The sessions appended to through each store, shared by every service on that store (the
store's live sessions are one per id, so what indexes them must be too)."""


def _json_state(state: dict[str, Any]) -> dict[str, Any]:
    """State as JSON, rich values serialized as ADK's database services serialize them."""
    value = to_jsonable_python(state)
    assert isinstance(value, dict)
    return value


def _record(session: Session) -> dict[str, Any]:
    first = session.events[0] if session.events else None
    if first is None or first.type != SESSION_RECORD:
        raise SessionNotFound(f"harness session {session.id!r} is not an ADK session (no {SESSION_RECORD})")
    data = orjson.loads(first.data_json)
    assert isinstance(data, dict)
    return data


def _marker_of(session: AdkSession) -> int | None:
    marker = session._storage_update_marker
    if isinstance(marker, str) and marker.startswith(_MARKER):
        with contextlib.suppress(ValueError):
            return int(marker.removeprefix(_MARKER))
    return None


def _window(events: list[dict[str, Any]], config: GetSessionConfig | None) -> list[dict[str, Any]]:
    """``GetSessionConfig`` applied as ``InMemorySessionService`` applies it."""
    if config is None:
        return events
    if config.num_recent_events is not None:
        events = [] if config.num_recent_events == 0 else events[-config.num_recent_events :]
    if config.after_timestamp is not None:
        i = len(events) - 1
        while i >= 0 and float(events[i].get("timestamp", 0.0)) >= config.after_timestamp:
            i -= 1
        if i >= 0:
            events = events[i + 1 :]
    return events


class HarnessSessionService(BaseSessionService):
    """ADK's ``BaseSessionService`` over any harness ``SessionStore`` (memory, JSONL, SQLite,
    PostgreSQL). See ``docs/integrations/adk.md``.

    Use it from one event loop (the store's); close it (``await service.close()``) before the
    store, which stays the caller's."""

    def __init__(self, store: SessionStore) -> None:
        self.store = store
        self._shared = SharedState.of(store)
        self._tracked = _TRACKED.setdefault(store, {})
        self._appending = _APPENDING.setdefault(store, {})
        self._owns_store = False  # from_url: close() closes the store too

    @classmethod
    def from_url(cls, spec: str, **options: Any) -> HarnessSessionService:
        """A service over a store of its own, opened from ``spec`` as ``--store`` and
        ``open_store`` take it (``DIR``, ``sqlite:FILE``, ``postgresql://…``; ``~`` expanded;
        ``options`` go to the backend), as ``DatabaseSessionService(db_url=...)`` is made.
        ``close()`` closes that store too."""
        service = cls(open_store(spec, **options))
        service._owns_store = True
        return service

    # ---- reading ----------------------------------------------------------------------------

    async def _scoped(self, app_name: str, user_id: str) -> tuple[dict[str, Any], dict[str, Any]]:
        app = await self._shared.read(app_log_id(app_name))
        user = await self._shared.read(user_log_id(app_name, user_id))
        return app.values, user.values

    async def _build(
        self,
        session: Session,
        app_name: str,
        user_id: str,
        config: GetSessionConfig | None,
        with_events: bool,
    ) -> AdkSession:
        record = _record(session)
        state: dict[str, Any] = dict(record.get("state") or {})
        wires: list[dict[str, Any]] = []
        shared: list[tuple[int, dict[str, Any]]] = []
        for event in session.events:
            wire = wire_of(event)
            if wire is None:
                continue
            wires.append(wire)
            delta = (wire.get("actions") or {}).get("state_delta")
            if delta:
                app, user, own = split_delta(delta)
                state.update(own)
                if app or user:
                    shared.append((event.seq, wire))
        await self._repair_shared(session.id, app_name, user_id, shared)
        app_state, user_state = await self._scoped(app_name, user_id)
        for key, value in app_state.items():
            state[APP_PREFIX + key] = value
        for key, value in user_state.items():
            state[USER_PREFIX + key] = value
        chosen = _window(wires, config) if with_events else []
        last = float(wires[-1].get("timestamp", 0.0)) if wires else float(record.get("createTime", 0.0))
        result = AdkSession(
            id=str(record["id"]),
            app_name=app_name,
            user_id=user_id,
            state=state,
            events=[AdkEvent.model_validate(wire) for wire in chosen],
            last_update_time=last,
        )
        result._storage_update_marker = f"{_MARKER}{len(wires)}"
        return result

    async def _repair_shared(
        self, log_id: str, app_name: str, user_id: str, shared: Sequence[tuple[int, dict[str, Any]]]
    ) -> None:
        """Write the shared deltas of stored session events whose writer died before it wrote
        them (see ``state.py``)."""
        if not shared:
            return
        logs = {"app": app_log_id(app_name), "user": user_log_id(app_name, user_id)}
        folded = {scope: await self._shared.read(log) for scope, log in logs.items()}
        for seq, wire in shared:
            app, user, _ = split_delta(wire["actions"]["state_delta"])
            for scope, delta in (("app", app), ("user", user)):
                if delta and (log_id, seq) not in folded[scope].sources:
                    logger.info("session %s: writing the %s-state delta of seq %d late", log_id, scope, seq)
                    stamp = float(wire.get("timestamp", 0.0))
                    await self._shared.add(logs[scope], delta, stamp, (log_id, seq), late=True)

    @override
    async def get_session(
        self,
        *,
        app_name: str,
        user_id: str,
        session_id: str,
        config: GetSessionConfig | None = None,
    ) -> AdkSession | None:
        session_id = session_id.strip() if session_id else session_id
        try:
            stored = await read_stored(self.store, session_log_id(app_name, user_id, session_id))
        except SessionNotFound:
            return None
        return await self._build(stored, app_name, user_id, config, with_events=True)

    @override
    async def list_sessions(self, *, app_name: str, user_id: str | None = None) -> ListSessionsResponse:
        prefix = session_prefix(app_name, user_id)
        found: list[AdkSession] = []
        for info in await self.store.list():
            if not info.id.startswith(prefix):
                continue
            parts = info.id.split("/")
            if len(parts) != 4 or info.problem is not None:
                if info.problem is not None:
                    logger.warning("ADK session %s is damaged and not listed: %s", info.id, info.problem)
                continue
            owner = unquote(parts[2])
            try:
                stored = await read_stored(self.store, info.id)
            except SessionNotFound:
                continue  # deleted meanwhile
            found.append(await self._build(stored, app_name, owner, None, with_events=False))
        found.sort(key=lambda s: (s.last_update_time, s.user_id, s.id))
        return ListSessionsResponse(sessions=found)

    @override
    async def get_user_state(self, *, app_name: str, user_id: str) -> dict[str, Any]:
        return dict((await self._shared.read(user_log_id(app_name, user_id))).values)

    # ---- writing ----------------------------------------------------------------------------

    @override
    async def create_session(
        self,
        *,
        app_name: str,
        user_id: str,
        state: dict[str, Any] | None = None,
        session_id: str | None = None,
    ) -> AdkSession:
        session_id = (session_id.strip() if session_id else None) or platform_uuid.new_uuid()
        log_id = session_log_id(app_name, user_id, session_id)
        app, user, own = split_delta(_json_state(state or {}))
        now = platform_time.get_time()
        record = {"appName": app_name, "userId": user_id, "id": session_id, "state": own, "createTime": now}
        check_json(record, "state")  # InvalidEventData naming the value, before anything is reserved
        for part in (app, user):
            check_json(part, "state")
        exists = AlreadyExistsError(f"Session with id {session_id} already exists.")
        try:
            session = await self.store.create(id=log_id)
        except SessionExists:
            raise exists from None
        session.append(SESSION_RECORD, record, ignorable=True)
        try:
            await self.store.flush(session)
        except SessionConflict:  # another process created it first
            await self.store.discard(session)
            raise exists from None
        self._tracked[log_id] = _Tracked(session)
        if app:
            await self._shared.add(app_log_id(app_name), app, now, (log_id, 0))
        if user:
            await self._shared.add(user_log_id(app_name, user_id), user, now, (log_id, 0))
        return await self._build(session, app_name, user_id, None, with_events=False)

    async def _writable(self, log_id: str, session_id: str) -> _Tracked:
        tracked = self._tracked.get(log_id)
        if tracked is None:
            try:
                session = await self.store.load(log_id)
            except SessionNotFound:
                raise SessionNotFoundError(f"Session {session_id} not found.") from None
            except SessionInUse as in_use:
                raise StaleSessionError(
                    f"session {session_id!r} is being written by another live writer ({in_use}); "
                    "get it again once that writer is done"
                ) from in_use
            tracked = self._tracked[log_id] = _Tracked(session)
        return tracked

    async def _drop(self, log_id: str) -> None:
        tracked = self._tracked.pop(log_id, None)
        if tracked is not None:
            with contextlib.suppress(SessionNotFound):  # deleted: detached already
                await self.store.discard(tracked.session)

    @override
    async def append_event(self, session: AdkSession, event: AdkEvent) -> AdkEvent:
        if event.partial:
            return event
        log_id = session_log_id(session.app_name, session.user_id, session.id)
        lock = self._appending.setdefault(log_id, asyncio.Lock())
        async with lock:  # the check, the append and its flush: one at a time per session
            return await self._append(session, event, log_id)

    async def _append(self, session: AdkSession, event: AdkEvent, log_id: str) -> AdkEvent:
        """``append_event`` under the session's lock."""
        tracked = await self._writable(log_id, session.id)
        if event.id and any(
            wire_of(tracked.session.events[seq]) == event.model_dump(mode="json", exclude_none=True)
            for seq in tracked.ids.get(event.id, ())
        ):
            return event  # an equal re-delivery (InMemorySessionService's rule): stored once
        known = _marker_of(session)
        known = len(session.events) if known is None else known
        if known > tracked.count:  # the caller saw more than this live copy: read it again
            await self._drop(log_id)
            tracked = await self._writable(log_id, session.id)
        if known != tracked.count:
            message = (
                f"session {session.id!r} is stale: the store holds {tracked.count} events, the "
                f"session given holds {known}; get it again"
            )
            raise StaleSessionError(message) from SessionConflict(message, expected=tracked.count, got=known)
        self._apply_temp_state(session, event)
        event = self._trim_temp_delta_state(event)
        live = tracked.session
        payload, wire = event_payload(event, live.surface.nodes, tracked.timestamps)
        appended = live.append(
            payload.type, payload.data, surface_op=payload.op, source_event_seqs=payload.cites
        )
        try:
            await self.store.flush(live)
        except SessionConflict as conflict:
            await self._drop(log_id)
            raise StaleSessionError(
                f"session {session.id!r} is stale: another writer appended to it first; get it again"
            ) from conflict
        except SessionNotFound:
            await self._drop(log_id)
            raise SessionNotFoundError(f"Session {session.id} not found.") from None
        except BaseException:
            # The write failed (or its outcome is unknown): the caller is told so, and the event
            # must not be written later behind its back. The next call reads what is stored, and
            # a retry of an event that did land is recognised as a re-delivery.
            await self._drop(log_id)
            raise
        tracked.note(appended.seq, wire)
        delta = wire.get("actions", {}).get("state_delta") or {}
        app, user, _ = split_delta(delta)
        if app:
            await self._shared.add(app_log_id(session.app_name), app, event.timestamp, (log_id, appended.seq))
        if user:
            log = user_log_id(session.app_name, session.user_id)
            await self._shared.add(log, user, event.timestamp, (log_id, appended.seq))
        self._commit_event_to_session(session, event)
        session.last_update_time = event.timestamp
        session._storage_update_marker = f"{_MARKER}{tracked.count}"
        return event

    @override
    async def delete_session(self, *, app_name: str, user_id: str, session_id: str) -> None:
        session_id = session_id.strip() if session_id else session_id
        log_id = session_log_id(app_name, user_id, session_id)
        await self._drop(log_id)
        with contextlib.suppress(SessionNotFound):  # as InMemorySessionService: a no-op
            await self.store.delete(log_id)

    async def close(self) -> None:
        """Release the sessions this service holds live in the store; the store stays open,
        unless the service made it (``from_url``)."""
        for log_id in list(self._tracked):
            tracked = self._tracked.pop(log_id)
            await self.store.release(tracked.session)
        await self._shared.forget()
        if self._owns_store:
            await self.store.close()

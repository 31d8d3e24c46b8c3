"""What the viewer reads from the store: the session list, headers for lineage, and sessions
restored as ``inspect`` restores them, kept in a small cache until the stored log grows.

Everything here only reads: ``SessionStore.list``, ``SessionStore.inspect`` (the view a
load would give, closers included, nothing written) and ``Backend.read`` for headers. The
cache is checked against a cheap *version* of each stored log before it is reused: the
file's size and modification time for a JSONL root (the backend caches lengths it learned,
so another process's appends would go unseen), the stored length for SQLite and PostgreSQL.
"""

from __future__ import annotations

import asyncio
import builtins
import os
import threading
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Any, Final

import msgspec

from harness.errors import HarnessError, SessionNotFound
from harness.query.forks import Lineage, lineage
from harness.session.header import SessionHeader
from harness.session.session import Session
from harness.stores.backend import SessionInfo
from harness.stores.capabilities import SessionFiles
from harness.stores.ids import check_session_id
from harness.stores.store import SessionStore

__all__ = ["Catalog", "Loaded", "SessionSummary"]

MAX_ID_LENGTH: Final = 512
"""The longest session id a URL may name (a longer one is refused before the store is asked)."""

_KEEP: Final = 4
"""How many restored sessions the cache keeps (a 100k-event session is a few hundred MB)."""


class SessionSummary(msgspec.Struct, frozen=True, kw_only=True):
    """What the sessions list shows beyond ``SessionInfo``, from a restored session: turns,
    the stored lines' size in bytes (as the log's wire form, whatever the store's encoding)
    and whether the last turn is open."""

    turns: int
    wire_bytes: int
    open_turn: bool


class Loaded:
    """One restored session in the cache: the session, the version it was read at, and a lock
    that serialises the query work done on it in worker threads (the query layer's caches are
    built on first use)."""

    __slots__ = ("lock", "memo", "session", "stored_length", "version")

    def __init__(self, session: Session, version: object, stored_length: int) -> None:
        self.session = session
        self.version = version
        self.stored_length = stored_length
        self.lock = threading.Lock()
        self.memo: dict[str, Any] = {}  # views computed once per version (the chart, the sections)


def valid_session_id(session_id: str) -> str:
    """``session_id`` when a URL may name it: a storable id (``check_session_id``) of at most
    ``MAX_ID_LENGTH`` characters with no control character. Else ``SessionNotFound``: the
    store is not asked, and a JSONL root encodes every id into one path segment (FORMAT §9.1),
    so no id reaches outside the store."""
    try:
        check_session_id(session_id)
    except HarnessError:
        raise SessionNotFound(f"no session {session_id!r}") from None
    if len(session_id) > MAX_ID_LENGTH or any(ord(ch) < 32 or ord(ch) == 127 for ch in session_id):
        raise SessionNotFound(f"no session {session_id[:80]!r}")
    return session_id


def _file_version(path: str) -> tuple[int, int] | None:
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return (stat.st_size, stat.st_mtime_ns)


def _summary(session: Session, stored_length: int) -> SessionSummary:
    """Turns, the stored log's size in wire bytes (its lines), and whether its last turn is
    open, over the stored events only (not the closers a load would add)."""
    turns = 0
    wire = 0
    open_turn = False
    for event in session.events[:stored_length]:
        kind = event.type
        if kind == "turn/start":
            turns += 1
            open_turn = True
        elif kind == "turn/end":
            open_turn = False
        wire += len(event.encode()) + 1
    return SessionSummary(turns=turns, wire_bytes=wire, open_turn=open_turn)


class Catalog:
    """The viewer's read-only window on one ``SessionStore`` (see the module doc)."""

    def __init__(self, store: SessionStore) -> None:
        self._store = store
        self._sessions: OrderedDict[str, Loaded] = OrderedDict()
        self._loading: dict[str, asyncio.Future[Loaded]] = {}
        self._locations: dict[str, str] = {}
        self._headers: dict[str, tuple[object, SessionHeader | None]] = {}
        self._summaries: dict[str, tuple[object, SessionSummary]] = {}

    @property
    def store(self) -> SessionStore:
        return self._store

    @property
    def files(self) -> bool:
        """Whether the store keeps each session in a file (a JSONL root)."""
        return isinstance(self._store.backend, SessionFiles)

    async def list(self) -> list[SessionInfo]:
        """Every session, latest activity first (a damaged one too, with its problem)."""
        infos = await self._store.list()
        for info in infos:
            if info.location:
                self._locations[info.id] = info.location
        return sorted(infos, key=lambda info: (info.last_activity or 0, info.id), reverse=True)

    async def version(self, session_id: str) -> object:
        """A value that changes whenever the stored log of ``session_id`` changes."""
        if self.files:
            location = self._locations.get(session_id)
            if location is None:
                await self.list()
                location = self._locations.get(session_id)
            if location is None:
                raise SessionNotFound(f"no session {session_id!r}")
            return _file_version(location)
        return await self._store.backend.stored_length(session_id)

    async def stored_length(self, session_id: str) -> int:
        """The committed length now (a fresh read for a file: the backend caches it)."""
        if self.files:
            return (await self.load(session_id)).stored_length
        return await self._store.backend.stored_length(session_id)

    async def load(self, session_id: str) -> Loaded:
        """The session restored as ``inspect`` gives it, reused while its log is unchanged."""
        valid_session_id(session_id)
        version = await self.version(session_id)
        cached = self._sessions.get(session_id)
        if cached is not None and cached.version == version:
            self._sessions.move_to_end(session_id)
            return cached
        pending = self._loading.get(session_id)
        if pending is not None:
            return await asyncio.shield(pending)
        future: asyncio.Future[Loaded] = asyncio.get_running_loop().create_future()
        self._loading[session_id] = future
        try:
            loaded = await self._restore(session_id, version)
            future.set_result(loaded)
        except BaseException as error:
            future.set_exception(error)
            future.exception()  # retrieved: a waiter re-raises it, nobody else must
            raise
        finally:
            del self._loading[session_id]
        self._sessions[session_id] = loaded
        self._sessions.move_to_end(session_id)
        while len(self._sessions) > _KEEP:
            self._sessions.popitem(last=False)
        return loaded

    async def _restore(self, session_id: str, version: object) -> Loaded:
        if self.files:
            # a fresh backend over the same root: the store's own caches what it learned of
            # each log's length, and another process may have appended since
            backend = self._store.backend
            assert isinstance(backend, SessionFiles)
            fresh = SessionStore(backend.reopen())
            try:
                session = await fresh.inspect(session_id)
                stored = await fresh.backend.stored_length(session_id)
            finally:
                await fresh.close()
        else:
            session = await self._store.inspect(session_id)
            stored = await self._store.backend.stored_length(session_id)
        return Loaded(session, version, stored)

    async def summary(self, session_id: str) -> SessionSummary:
        """Turns, wire size and whether the last turn is open (cached per version)."""
        version = await self.version(session_id)
        known = self._summaries.get(session_id)
        if known is not None and known[0] == version:
            return known[1]
        loaded = await self.load(session_id)
        found: SessionSummary = await asyncio.to_thread(
            _locked, loaded, lambda session: _summary(session, loaded.stored_length)
        )
        self._summaries[session_id] = (loaded.version, found)
        return found

    async def header(self, info: SessionInfo) -> SessionHeader | None:
        """The header of a listed session (``None`` when it cannot be read)."""
        if info.problem is not None:
            return None
        key = (info.event_count, info.last_activity)
        known = self._headers.get(info.id)
        if known is not None and known[0] == key:
            return known[1]
        header: SessionHeader | None
        cached = self._sessions.get(info.id)
        if cached is not None:
            header = cached.session.header
        else:
            try:
                header = (await self._store.backend.read(info.id)).header
            except HarnessError:
                header = None
        self._headers[info.id] = (key, header)
        return header

    async def lineages(self, infos: builtins.list[SessionInfo]) -> dict[str, Lineage]:
        """The lineage of every readable session among ``infos`` (headers read once each)."""
        headers = [h for h in [await self.header(info) for info in infos] if h is not None]
        return {header.id: lineage(headers, header.id) for header in headers}


def _locked(loaded: Loaded, work: Callable[[Session], Any]) -> Any:
    with loaded.lock:
        return work(loaded.session)


async def in_thread(loaded: Loaded, work: Callable[[Session], Any], memo: str | None = None) -> Any:
    """Run ``work(session)`` in a worker thread under the session's lock; with ``memo``, once
    per loaded version (the result is kept under that name)."""
    if memo is not None and memo in loaded.memo:
        return loaded.memo[memo]
    value = await asyncio.to_thread(_locked, loaded, work)
    if memo is not None:
        loaded.memo[memo] = value
    return value


Opener = Callable[[], Awaitable[SessionStore]]

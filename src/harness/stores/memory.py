"""``MemoryBackend``: the backend contract kept in process memory (tests, tools, caches).

It stores the header line and each event as its encoded wire line and decodes
on ``read``, so a session restored from it goes through exactly the path a file
would, and ids are checked on every call as a file backend checks them.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from harness.errors import CorruptSession, SessionExists, SessionOwner
from harness.events.event import Event
from harness.events.json import dumps, loads
from harness.session.header import SessionHeader, validate_header
from harness.stores.backend import SessionInfo, StoredLog, check_batch
from harness.stores.base import never_appended, no_session
from harness.stores.ids import check_session_id
from harness.stores.ownership import Claim, MemoryClaims, current_writer
from harness.stores.summary import summarize

__all__ = ["MemoryBackend"]


class MemoryBackend:
    """Sessions in a dict. Durable for the life of the object only."""

    def __init__(self) -> None:
        self._headers: dict[str, bytes] = {}  # the header line
        self._lines: dict[str, list[bytes]] = {}
        self._claims = MemoryClaims()

    async def create(self, header: SessionHeader) -> None:
        check_session_id(header.id)
        validate_header(header)
        if header.id in self._headers:
            raise SessionExists(f"session {header.id!r} already exists")
        self._headers[header.id] = dumps(header.to_json(line=True))
        self._lines[header.id] = []

    def _header(self, session_id: str) -> SessionHeader:
        try:
            return validate_header(loads(self._headers[session_id]), session_id)
        except ValueError as error:  # InvalidHeader is a ValueError too
            raise CorruptSession(f"corrupt session {session_id!r}: unreadable header: {error}") from None

    def _known(self, session_id: str) -> list[bytes]:
        check_session_id(session_id)
        lines = self._lines.get(session_id)
        if lines is None:
            raise no_session(session_id)
        return lines

    async def append(self, session_id: str, batch: Sequence[Event]) -> None:
        lines = self._known(session_id)
        if not batch:
            return
        self._claims.check(session_id, current_writer())
        check_batch(session_id, len(lines), batch)
        lines.extend(event.encode() for event in batch)

    async def read(self, session_id: str) -> StoredLog:
        lines = self._known(session_id)
        if not lines:
            raise never_appended(session_id)
        return StoredLog(self._header(session_id), [loads(line) for line in lines])

    async def repair(self, session_id: str, log: StoredLog, closers: Sequence[Event]) -> None:
        await self.append(session_id, closers)

    async def stored_length(self, session_id: str) -> int:
        return len(self._known(session_id))

    async def delete(self, session_id: str) -> None:
        self._known(session_id)
        self._claims.check(session_id, current_writer())
        del self._lines[session_id]
        del self._headers[session_id]
        self._claims.forget(session_id)

    async def claim(self, session_id: str, owner: SessionOwner, *, take_over: bool = False) -> Claim:
        check_session_id(session_id)
        return self._claims.claim(session_id, owner, take_over)

    async def unclaim(self, session_id: str) -> None:
        self._claims.unclaim(session_id, current_writer())

    async def owner(self, session_id: str) -> SessionOwner | None:
        check_session_id(session_id)
        return self._claims.owner(session_id)

    async def list(self) -> list[SessionInfo]:
        out = []
        for session_id, lines in self._lines.items():
            if not lines:
                continue
            events = [loads(line) for line in lines]
            try:
                header = self._header(session_id)
            except CorruptSession as error:  # listed with the reason, never dropped
                info = summarize(SessionHeader(id=session_id, created_at=0), events)
                out.append(msgspec.structs.replace(info, created_at=None, cwd=None, problem=str(error)))
                continue
            out.append(summarize(header, events))
        return out

    async def close(self) -> None:
        self._claims = MemoryClaims()

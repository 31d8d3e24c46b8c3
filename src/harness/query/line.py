"""A session's fork line: the session itself and its fork ancestors, read only.

A fork copies its parent's events ``[0..boundary]`` into the child (FORMAT §7.7): the child's
first ``seedLength`` events are the parent's, at the same seqs. So the line's history is held
once if each member contributes only what the member below it did not inherit: the session
itself all of its log, its parent the events from the child's ``seedLength`` on (what the
parent did after the fork), its grandparent the events from the parent's ``seedLength`` on,
and so on. ``LineMember.start`` is that first seq; ``LineMember.inherited`` is how far the
member's log is also the target's own history (``min`` of the ``seedLength`` values below it;
``None`` for the target itself: all of it). A header without ``seedLength`` gives its parent
a ``start`` of 0 and an ``inherited`` of 0 (the fork point is unknown).

``fork_line(reader, header)`` walks the ``parentSession`` chain through a ``SessionReader``
(``StoreReader`` wraps a ``SessionStore`` so that only reads are reachable). The chain ends
``root`` (no parent), ``missing`` (the store has no such session), ``unreadable`` (the
parent's header could not be read: a damaged log, an id no store can hold), ``cycle`` (a
parent already on the line) or ``cut`` (``most`` ancestors were taken); ``stop`` names the
parent id where it stopped. The walk reads only ids taken from headers, never one a caller
asks for, so membership (``ForkLine.member``) is a comparison, not a lookup.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, Protocol

import msgspec

from harness.errors import HarnessError, SessionNotFound
from harness.stores.ids import check_session_id

if TYPE_CHECKING:
    from harness.session.header import SessionHeader
    from harness.session.session import Session
    from harness.stores.store import SessionStore

__all__ = ["ForkLine", "LineMember", "SessionReader", "StoreReader", "fork_line"]

LineEnd = Literal["root", "missing", "unreadable", "cycle", "cut"]


class SessionReader(Protocol):
    """Read-only access to stored sessions: a header, and a detached view of a whole session."""

    async def header(self, session_id: str) -> SessionHeader:
        """The stored header of ``session_id`` (``SessionNotFound`` when there is none)."""
        ...

    async def inspect(self, session_id: str) -> Session:
        """A detached copy of ``session_id`` as a load would give it; nothing is written."""
        ...


class StoreReader:
    """A ``SessionReader`` over a ``SessionStore``: headers and ``inspect`` views, never a
    write, a repair or a lease (what a tool may be handed)."""

    __slots__ = ("_store",)

    def __init__(self, store: SessionStore) -> None:
        self._store = store

    async def header(self, session_id: str) -> SessionHeader:
        """The header, from the backend's read (a JSONL root decodes just the header line);
        a session live in the store and not yet written comes from its live copy."""
        check_session_id(session_id)
        try:
            return (await self._store.backend.read(session_id)).header
        except SessionNotFound:
            return (await self._store.inspect(session_id)).header

    async def inspect(self, session_id: str) -> Session:
        """``SessionStore.inspect``: the view a load would give (closers included), detached."""
        return await self._store.inspect(session_id)


class LineMember(msgspec.Struct, frozen=True):
    """One session of a fork line (see the module doc); ``depth`` 0 is the target, 1 its
    parent, 2 its grandparent..."""

    id: str
    depth: int
    start: int = 0
    inherited: int | None = None

    @property
    def relation(self) -> str:
        """How the member stands to the target, in words: ``this session``, ``fork parent``,
        ``fork grandparent``, ``fork ancestor 3``..."""
        if self.depth == 0:
            return "this session"
        if self.depth <= 2:
            return "fork parent" if self.depth == 1 else "fork grandparent"
        return f"fork ancestor {self.depth}"

    def holds_own_history(self, seq: int) -> bool:
        """Whether event ``seq`` of this member's log is also in the target's own log."""
        return self.inherited is None or seq < self.inherited


class ForkLine(msgspec.Struct, frozen=True, kw_only=True):
    """The target and its readable ancestors, nearest first, and how the chain ended."""

    members: tuple[LineMember, ...]
    end: LineEnd
    stop: str | None = None

    def member(self, session_id: str) -> LineMember | None:
        """The member with this id, or ``None`` when ``session_id`` is not on the line."""
        for member in self.members:
            if member.id == session_id:
                return member
        return None


def line_of(headers: tuple[SessionHeader, ...]) -> tuple[LineMember, ...]:
    """The members for a chain of headers, target first, each the parent of the one before."""
    members: list[LineMember] = []
    inherited: int | None = None
    for depth, header in enumerate(headers):
        if depth == 0:
            members.append(LineMember(header.id, 0))
            continue
        below = headers[depth - 1].seed_length
        start = below if isinstance(below, int) and below >= 0 else 0
        inherited = start if inherited is None else min(inherited, start)
        members.append(LineMember(header.id, depth, start, inherited))
    return tuple(members)


async def fork_line(reader: SessionReader | None, header: SessionHeader, *, most: int = 16) -> ForkLine:
    """The fork line of the session whose header is ``header``: at most ``most`` ancestors,
    read through ``reader`` (none without one: the chain then ends ``cut`` at the parent)."""
    headers = [header]
    seen = {header.id}
    end: LineEnd = "root"
    stop: str | None = None
    while (up := headers[-1].parent_session) is not None:
        if reader is None or len(headers) > most:
            end, stop = "cut", up
            break
        if up in seen:
            end, stop = "cycle", up
            break
        try:
            parent = await reader.header(up)
        except SessionNotFound:
            end, stop = "missing", up
            break
        except HarnessError:
            end, stop = "unreadable", up
            break
        if parent.id != up:  # a store answering with another session is no ancestor
            end, stop = "unreadable", up
            break
        seen.add(up)
        headers.append(parent)
    return ForkLine(members=line_of(tuple(headers)), end=end, stop=stop)

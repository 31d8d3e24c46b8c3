"""``HarnessConversationStore``: pydantic-ai's ``ConversationStore`` over a harness ``SessionStore``.

It implements the five backend primitives (``read_record``, ``read_records``, ``write_record``,
``delete_record``, ``read_entry``, plus ``read_history`` in one step), so pydantic-ai's own
``load``/``save``/``branch``/``fork``/``list_conversations``/``delete`` run unchanged on any harness
backend: a JSONL root, SQLite, PostgreSQL or memory. What lands in each session is described in
``segments.py``; docs/integrations/pydantic-ai.md tells the whole design.

Concurrency: every change of a conversation is one append to its tip session whose first seq
must be the stored length (the backend refuses it otherwise, ``SessionConflict``), so the
revision check and the write are one atomic step even across processes; a stale writer gets
``ConversationConflict`` and nothing of its change is reachable. The sessions are written
through ``store.backend`` directly, not through live sessions of the ``SessionStore``: do not
keep a conversation's session live in the same store (``store.load``) while using this one.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import uuid
from collections.abc import Sequence
from typing import Any

import pydantic
from pydantic_ai.conversation_store import (
    ConversationConflict,
    ConversationEntry,
    ConversationRecord,
    ConversationStore,
)
from pydantic_ai.exceptions import UserError
from pydantic_ai.messages import ModelMessagesTypeAdapter

from harness.errors import CorruptSession, SessionConflict, SessionExists, SessionNotFound
from harness.events.event import APPEND
from harness.integrations.pydantic_ai.render import next_position, render_message
from harness.integrations.pydantic_ai.segments import (
    ABANDONED,
    CONVERSATION,
    DELETED,
    ENTRY,
    MOVED,
    RECORD,
    EntrySpot,
    Segment,
)
from harness.session.header import SessionHeader
from harness.session.session import Session
from harness.stores.open import open_store
from harness.stores.store import SessionStore, restore_logged

__all__ = ["HarnessConversationStore"]

_RECORDS: pydantic.TypeAdapter[ConversationRecord] = pydantic.TypeAdapter(ConversationRecord)
_BRANCH_ID_LIMIT = 200  # longer conversation ids get branch sessions named by a uuid alone


class _NotAConversation(Exception):
    """The session named like the conversation exists but is no conversation's home."""


class HarnessConversationStore(ConversationStore):
    """A pydantic-ai ``ConversationStore`` whose conversations are harness sessions.

    Conversation ``X`` lives in the session ``X`` (its **home**); a branch, a rewritten history
    or a fork is a harness fork of the session holding the entry it continues from (``parentSession``,
    so ``harness lineage X`` shows it), and the conversation's newest messages are in the session
    ``session_of(X)`` names. ``cwd`` (absolute) is recorded in the headers of new sessions.
    """

    def __init__(self, store: SessionStore, *, cwd: str | None = None) -> None:
        self._store = store
        self._cwd = cwd
        self._segments: dict[str, Segment] = {}
        self._entry_home: dict[str, str] = {}
        self._lock = asyncio.Lock()
        self._owns_store = False  # from_url: close() closes the store

    @classmethod
    def from_url(cls, spec: str, *, cwd: str | None = None, **options: Any) -> HarnessConversationStore:
        """A conversation store over a harness store opened from ``spec`` as ``--store`` and
        ``open_store`` take it (``DIR``, ``sqlite:FILE``, ``postgresql://…``; ``~`` expanded;
        ``options`` go to the backend). Close it with ``close()`` (or ``async with``)."""
        store = cls(open_store(spec, **options), cwd=cwd)
        store._owns_store = True
        return store

    async def close(self) -> None:
        """Close the harness store if this object opened it (``from_url``); a store given to
        the constructor stays open. Every save returned durable already."""
        if self._owns_store:
            await self._store.close()

    async def __aenter__(self) -> HarnessConversationStore:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @property
    def sessions(self) -> SessionStore:
        """The harness store the conversations are kept in."""
        return self._store

    # ---- reading sessions ---------------------------------------------------------------

    async def _read_segment(self, session_id: str) -> Segment | None:
        backend = self._store.backend
        try:
            log = await backend.read(session_id)
        except SessionNotFound:
            self._segments.pop(session_id, None)
            return None
        session, closers, log = await restore_logged(session_id, log)
        repair = (log, closers) if closers or log.torn is not None else None
        segment = Segment(
            session=session, durable=session.first_live_seq - len(closers), repair=repair, clean=len(session)
        )
        self._index(segment)
        self._segments[session_id] = segment
        return segment

    def _index(self, segment: Segment) -> None:
        for spot in segment.scan():
            self._entry_home.setdefault(spot.entry_id, segment.id)

    async def _segment(self, session_id: str) -> Segment | None:
        """The session as stored now (the cached copy when the stored length still matches)."""
        cached = self._segments.get(session_id)
        if cached is not None:
            try:
                length = await self._store.backend.stored_length(session_id)
            except SessionNotFound:
                length = -1
            if length == cached.durable:
                return cached
        return await self._read_segment(session_id)

    async def _chain(self, conversation_id: str) -> list[Segment]:
        """The conversation's sessions from its home to its tip (``[]`` if it has none)."""
        home = await self._segment(conversation_id)
        if home is None or home.durable == 0:
            return []  # none, or only reserved by a creation whose first write failed
        if home.home_of() != conversation_id:
            raise _NotAConversation(conversation_id)
        chain = [home]
        seen = {home.id}
        while (state := chain[-1].state) is not None and state.kind == "moved":
            target = state.moved_to
            if target is None or target in seen:
                raise CorruptSession(
                    f"conversation {conversation_id!r}: session {chain[-1].id!r} moves nowhere"
                )
            following = await self._segment(target)
            if following is None:
                raise CorruptSession(
                    f"conversation {conversation_id!r} moved to session {target!r}, which is not stored"
                )
            seen.add(target)
            chain.append(following)
        return chain

    async def session_of(self, conversation_id: str) -> str | None:
        """The harness session holding the conversation's newest messages (its tip), or ``None``
        when the store has no such conversation (never saved, or deleted)."""
        try:
            chain = await self._chain(conversation_id)
        except _NotAConversation:
            return None
        if not chain or chain[-1].state is None or chain[-1].state.kind != "record":
            return None
        return chain[-1].id

    # ---- the read primitives ------------------------------------------------------------

    async def read_record(self, conversation_id: str) -> ConversationRecord | None:
        try:
            chain = await self._chain(conversation_id)
        except _NotAConversation:
            return None
        state = chain[-1].state if chain else None
        if state is None or state.kind != "record" or state.record_json is None:
            return None
        return _RECORDS.validate_json(state.record_json)

    async def read_records(
        self, *, scope: str | None = None, limit: int | None = None
    ) -> Sequence[ConversationRecord]:
        records: list[ConversationRecord] = []
        for info in await self._store.list():
            if info.problem is not None:
                continue
            segment = await self._segment(info.id)
            if segment is None or segment.home_of() != info.id:
                continue
            record = await self.read_record(info.id)
            if record is not None and (scope is None or record.scope == scope):
                records.append(record)
        records.sort(key=lambda record: record.updated_at, reverse=True)
        return records[:limit]

    async def _find_entry(self, entry_id: str) -> Segment | None:
        for attempt in range(2):
            home = self._entry_home.get(entry_id)
            if home is not None:
                segment = self._segments.get(home) or await self._segment(home)
                if segment is not None and segment.spot(entry_id) is not None:
                    return segment
                self._entry_home.pop(entry_id, None)
            if attempt == 0:
                await self._scan_all()
        return None

    async def _scan_all(self) -> None:
        for info in await self._store.list():
            if info.problem is None:
                await self._segment(info.id)

    async def read_entry(self, entry_id: str) -> ConversationEntry:
        segment = await self._find_entry(entry_id)
        spot = segment.spot(entry_id) if segment is not None else None
        if spot is None:
            raise KeyError(entry_id)
        return _entry(spot)

    async def read_history(self, head_id: str | None, *, limit: int | None = None) -> list[ConversationEntry]:
        if head_id is None or limit == 0:
            return []
        segment = await self._find_entry(head_id)
        if segment is None:
            raise KeyError(head_id)
        chain = segment.chain_to(head_id)
        if limit is not None:
            chain = chain[-limit:]
        return [_entry(spot) for spot in chain]

    # ---- the write primitives -----------------------------------------------------------

    async def write_record(
        self,
        record: ConversationRecord,
        *,
        new_entries: Sequence[ConversationEntry] = (),
        expected_revision: str | None,
    ) -> None:
        entries = list(new_entries)
        for before, entry in itertools.pairwise(entries):
            if entry.parent_id != before.id:
                raise UserError(f"new entry {entry.id!r} does not follow the entry before it ({before.id!r})")
        if entries and record.head_id != entries[-1].id:
            raise UserError(f"record head {record.head_id!r} is not the last new entry ({entries[-1].id!r})")
        async with self._lock:
            try:
                await self._write(record, entries, expected_revision)
            except BaseException:
                self._drop_unwritten()
                raise

    async def _write(
        self, record: ConversationRecord, entries: list[ConversationEntry], expected: str | None
    ) -> None:
        conversation_id = record.conversation_id
        try:
            chain = await self._chain(conversation_id)
        except _NotAConversation:
            raise ConversationConflict(conversation_id) from None
        tip = chain[-1] if chain else None
        state = tip.state if tip is not None else None
        live = state is not None and state.kind == "record"
        if (state.revision if state is not None and live else None) != expected:
            raise ConversationConflict(conversation_id)
        start = entries[0].parent_id if entries else record.head_id
        if tip is not None and live and start == tip.tail_entry:
            self._add(tip.session, tip, entries, record)
            await self._commit(tip, conversation_id)
            return
        # The conversation starts, or goes on from another point: a session of its own.
        source, boundary = await self._fork_point(chain, start, live, record)
        new_id = conversation_id if tip is None else _branch_id(conversation_id)
        if source is None:
            session = Session.create(SessionHeader.new(id=new_id, cwd=self._cwd))
            session.append(CONVERSATION, {"conversationId": conversation_id}, ignorable=True)
        else:
            session = source.session.fork(boundary, id=new_id)
        segment = Segment(session=session, durable=0)
        parent = source.spot(start) if source is not None and start is not None else None
        self._add(session, segment, entries, record, after=parent)
        await self._publish(segment, conversation_id)
        if tip is None:
            return
        tip.session.append(MOVED, {"conversationId": conversation_id, "session": new_id}, ignorable=True)
        try:
            await self._commit(tip, conversation_id)
        except ConversationConflict:
            await self._abandon(segment, conversation_id)
            raise

    async def _fork_point(
        self, chain: list[Segment], start: str | None, live: bool, record: ConversationRecord
    ) -> tuple[Segment | None, int]:
        """The session and seq a new session of the conversation forks at (``None``: a fresh one)."""
        conversation_id = record.conversation_id
        if start is None:
            # no message kept: fork the tip at its first event so the lineage stays, unless the
            # conversation was deleted (the new one of the same id has nothing to do with it);
            # a new conversation forked from another with no message forks that one's tip
            if chain:
                return (chain[-1], 0) if live else (None, 0)
            if record.forked_from is not None:
                with contextlib.suppress(_NotAConversation):
                    origin = await self._chain(record.forked_from)
                    if origin:
                        return origin[-1], 0
            return None, 0
        for segment in reversed(chain):
            spot = segment.spot(start)
            if spot is not None:
                return segment, spot.end_seq
        found = await self._find_entry(start)
        spot = found.spot(start) if found is not None else None
        if found is None or spot is None:
            # the entry is gone from under us (interface: a conflict, not an error)
            raise ConversationConflict(conversation_id)
        return found, spot.end_seq

    def _add(
        self,
        session: Session,
        segment: Segment,
        entries: list[ConversationEntry],
        record: ConversationRecord,
        *,
        after: EntrySpot | None = None,
    ) -> None:
        """Append the entries (each with its rendering) and the record to ``session``, in memory."""
        last = after if after is not None else (segment.entries[-1] if segment.entries else None)
        turn, step = (last.turn, last.step) if last is not None else (0, 0)
        for entry in entries:
            turn, step = next_position(entry.message, turn, step)
            messages = ModelMessagesTypeAdapter.dump_json([entry.message]).decode()
            rendered = render_message(entry.id, entry.message, turn=turn, step=step)
            marker = session.append(
                ENTRY,
                {
                    "entryId": entry.id,
                    "parentId": entry.parent_id,
                    "kind": entry.kind,
                    "turn": turn,
                    "step": step,
                    "events": len(rendered),
                    "messages": messages,
                },
                ignorable=True,
            )
            for kind, data in rendered:
                session.append(kind, data, surface_op=APPEND, source_event_seqs=[marker.seq])
        session.append(
            RECORD,
            {
                "conversationId": record.conversation_id,
                "revision": record.revision,
                "headId": record.head_id,
                "scope": record.scope,
                "updatedAt": record.updated_at.isoformat(),
                "record": _RECORDS.dump_json(record).decode(),
            },
            ignorable=True,
        )

    async def _commit(self, segment: Segment, conversation_id: str) -> None:
        """Append what ``segment.session`` holds past ``durable`` as one batch (seq-checked)."""
        backend = self._store.backend
        try:
            start = segment.durable
            if segment.repair is not None:
                log, closers = segment.repair
                await backend.repair(segment.id, log, closers)
                segment.repair = None
                start += len(closers)
            await backend.append(segment.id, segment.session.events[start:])
        except SessionConflict:
            self._segments.pop(segment.id, None)
            raise ConversationConflict(conversation_id) from None
        except BaseException:
            self._segments.pop(segment.id, None)  # the copy holds events the backend may not
            raise
        segment.durable = segment.clean = len(segment.session)
        self._index(segment)

    async def _publish(self, segment: Segment, conversation_id: str) -> None:
        """Store a new session (refused if one of its id has events: ``ConversationConflict``)."""
        backend = self._store.backend
        # reserved by an earlier attempt that wrote nothing, or taken: the seq-0 append decides
        with contextlib.suppress(SessionExists):
            await backend.create(segment.session.header)
        try:
            await backend.append(segment.id, segment.session.events[0:])
        except SessionConflict:
            raise ConversationConflict(conversation_id) from None
        segment.durable = segment.clean = len(segment.session)
        self._segments[segment.id] = segment
        self._index(segment)

    async def _abandon(self, segment: Segment, conversation_id: str) -> None:
        """Mark a session whose change lost the race (best effort: nothing points to it anyway)."""
        segment.session.append(ABANDONED, {"conversationId": conversation_id}, ignorable=True)
        try:
            await self._commit(segment, conversation_id)
        except Exception:
            self._segments.pop(segment.id, None)

    async def delete_record(self, conversation_id: str, *, expected_revision: str) -> None:
        """Record the delete in the conversation's tip session: it no longer loads or lists.

        harness logs are append-only, so the messages stay in the sessions (``harness log``
        still shows them) and ``read_entry`` still finds them; a new conversation of the same id
        starts in a fresh session. Nothing is erased: see docs/integrations/pydantic-ai.md.
        """
        async with self._lock:
            try:
                chain = await self._chain(conversation_id)
            except _NotAConversation:
                raise ConversationConflict(conversation_id) from None
            tip = chain[-1] if chain else None
            state = tip.state if tip is not None else None
            if tip is None or state is None or state.kind != "record" or state.revision != expected_revision:
                raise ConversationConflict(conversation_id)
            tip.session.append(
                DELETED, {"conversationId": conversation_id, "revision": expected_revision}, ignorable=True
            )
            try:
                await self._commit(tip, conversation_id)
            except BaseException:
                self._drop_unwritten()
                raise

    def _drop_unwritten(self) -> None:
        """Forget every cached copy holding events its backend write did not take (an append
        refused in memory, or a failed write), so that the next read reads the session afresh."""
        for session_id in [sid for sid, seg in self._segments.items() if len(seg.session) != seg.clean]:
            del self._segments[session_id]


def _entry(spot: EntrySpot) -> ConversationEntry:
    message = ModelMessagesTypeAdapter.validate_json(spot.messages_json)[0]
    kind: Any = spot.kind
    return ConversationEntry(id=spot.entry_id, parent_id=spot.parent_id, message=message, kind=kind)


def _branch_id(conversation_id: str) -> str:
    suffix = uuid.uuid4().hex[:16]
    if len(conversation_id) > _BRANCH_ID_LIMIT:
        return f"branch-{uuid.uuid4()}"
    return f"{conversation_id}~branch-{suffix}"

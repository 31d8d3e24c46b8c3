"""The events a conversation store writes, and what one harness session holds of them.

A **segment** is one harness session the store writes: an unbroken chain of entries (each
one's parent is the entry before it, the first one's is ``None`` or an entry the fork seed
copied) and the conversation state events. All events are log-only and ``ignorable`` (FORMAT
§2), so harness and dsh load the session and show the message events that render each entry:

* ``pydantic-ai/conversation`` ``{conversationId}``: the first event of a session started
  afresh; a fork that keeps no messages forks at it.
* ``pydantic-ai/entry`` ``{entryId, parentId, kind, turn, step, events, messages}``: one
  ``ConversationEntry``. ``messages`` is the JSON text ``ModelMessagesTypeAdapter`` writes for
  ``[message]``, kept as a string so that what pydantic-ai wrote is read back byte for byte
  (harness data refuses integers past 2^53; a message may hold them). The next ``events``
  events are the message events that render it (``render.py``).
* ``pydantic-ai/record`` ``{conversationId, revision, headId, scope, updatedAt, record}``: the
  ``ConversationRecord`` as ``record`` (JSON text), the other keys for people reading the log.
* ``pydantic-ai/deleted`` ``{conversationId, revision}``: the conversation was deleted.
* ``pydantic-ai/moved`` ``{conversationId, session}``: the conversation goes on in ``session``
  (a branch, a rewritten history, or a new conversation of the same id after a delete).
* ``pydantic-ai/abandoned`` ``{conversationId}``: a session written for a change that lost the
  race for its conversation (another writer saved first); nothing points to it.

The last state event of a session (record, deleted or moved) is where its conversation
stands. A session is the **home** of conversation ``X`` when its id is ``X`` and its last
state event names ``X``; following ``moved`` from the home reaches the **tip**, the session
the conversation's newest record lives in.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final, Literal

from harness.events.event import Event
from harness.session.session import Session

__all__ = [
    "ABANDONED",
    "CONVERSATION",
    "DELETED",
    "ENTRY",
    "MOVED",
    "RECORD",
    "EntrySpot",
    "Segment",
    "State",
]

CONVERSATION: Final = "pydantic-ai/conversation"
ENTRY: Final = "pydantic-ai/entry"
RECORD: Final = "pydantic-ai/record"
DELETED: Final = "pydantic-ai/deleted"
MOVED: Final = "pydantic-ai/moved"
ABANDONED: Final = "pydantic-ai/abandoned"
STATE_TYPES: Final = frozenset({RECORD, DELETED, MOVED})


@dataclass(frozen=True, slots=True)
class EntrySpot:
    """Where one entry is in a segment: its event, the last event that renders it, its data."""

    entry_id: str
    parent_id: str | None
    kind: str
    messages_json: str
    turn: int
    step: int
    seq: int
    end_seq: int


@dataclass(frozen=True, slots=True)
class State:
    """A segment's last state event."""

    kind: Literal["record", "deleted", "moved"]
    conversation_id: str
    revision: str | None = None
    record_json: str | None = None
    moved_to: str | None = None


def _str(data: Any, key: str) -> str | None:
    value = data.get(key) if hasattr(data, "get") else None
    return value if isinstance(value, str) else None


def _int(data: Any, key: str) -> int:
    value = data.get(key) if hasattr(data, "get") else None
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


@dataclass(slots=True)
class Segment:
    """One harness session as the conversation store reads it.

    ``session`` is a detached copy of the stored log (with the closers and end-seed a load
    would add after ``durable``); appends go to it first and reach the backend as one batch
    from ``durable`` on. ``clean`` is the copy's length when it last matched the backend (more
    events than that are a change not written yet); ``repair`` holds the stored log and the
    closers a load would commit first; ``scanned`` is how far the pydantic-ai events are read.
    """

    session: Session
    durable: int
    repair: Any = None
    clean: int = 0
    entries: list[EntrySpot] = field(default_factory=list)
    positions: dict[str, int] = field(default_factory=dict)
    state: State | None = None
    scanned: int = 0

    @property
    def id(self) -> str:
        return self.session.id

    @property
    def tail_entry(self) -> str | None:
        """The last entry of the chain (``None`` while the segment holds none)."""
        return self.entries[-1].entry_id if self.entries else None

    def spot(self, entry_id: str) -> EntrySpot | None:
        position = self.positions.get(entry_id)
        return None if position is None else self.entries[position]

    def chain_to(self, entry_id: str) -> list[EntrySpot]:
        """The entries from the first up to ``entry_id`` (which must be in the segment)."""
        return self.entries[: self.positions[entry_id] + 1]

    def home_of(self) -> str | None:
        """The conversation this session is the home of, or ``None``."""
        state = self.state
        return state.conversation_id if state is not None and state.conversation_id == self.id else None

    def scan(self) -> list[EntrySpot]:
        """Read the events appended since the last scan; returns the entries found."""
        events = self.session.events
        found: list[EntrySpot] = []
        for seq in range(self.scanned, len(events)):
            event = events[seq]
            if not event.type.startswith("pydantic-ai/"):
                continue
            spot = self._read(event)
            if spot is not None:
                self.positions[spot.entry_id] = len(self.entries)
                self.entries.append(spot)
                found.append(spot)
        self.scanned = len(events)
        return found

    def _read(self, event: Event) -> EntrySpot | None:
        data = event.data
        kind = event.type
        if kind == ENTRY:
            entry_id, messages = _str(data, "entryId"), _str(data, "messages")
            if entry_id is None or messages is None:
                return None
            return EntrySpot(
                entry_id=entry_id,
                parent_id=_str(data, "parentId"),
                kind=_str(data, "kind") or "message",
                messages_json=messages,
                turn=_int(data, "turn"),
                step=_int(data, "step"),
                seq=event.seq,
                end_seq=event.seq + _int(data, "events"),
            )
        conversation_id = _str(data, "conversationId")
        if kind in STATE_TYPES and conversation_id is not None:
            if kind == RECORD:
                self.state = State(
                    "record", conversation_id, _str(data, "revision"), record_json=_str(data, "record")
                )
            elif kind == DELETED:
                self.state = State("deleted", conversation_id, _str(data, "revision"))
            else:
                self.state = State("moved", conversation_id, moved_to=_str(data, "session"))
        return None

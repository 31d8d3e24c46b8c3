"""What one catch-up writes for one session: ``SessionState`` and ``SessionPlan``.

The index keeps, per session, a ``SessionState``: how many of its events are indexed
(``cursor``), the change token the store gave when they were read, digests of the header
and of the last indexed event (to notice a session replaced or rewritten under the same
id); and, apart (read only when the session is planned), every indexed event's
classification code. ``plan_session`` compares that state
with the session as read now and says what to write, all in one transaction:

* new rows for the events from the cursor on that have semantic text (only those can be
  hits);
* the new classification of already indexed events whose classification changed (a
  compaction appended since shadowed them): computed by ``QueryIndex`` over the whole
  log, the query layer's own fold, never a rule of the index's;
* or, when the header differs, the log is shorter than the cursor or the last indexed
  event is not the one stored there any more, a reset: every row of the session is
  replaced.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import msgspec

from harness.events.event import Event
from harness.events.json import dumps
from harness.query.index import QueryIndex
from harness.query.records import Classification
from harness.query.text import TEXT_TYPES, event_text
from harness.session.header import SessionHeader

__all__ = ["Reclass", "Row", "SessionPlan", "SessionState", "header_digest", "plan_session"]


class SessionState(msgspec.Struct, frozen=True, kw_only=True):
    """What the index holds of one session (see the module doc)."""

    session_id: str
    cursor: int
    token: str
    header: str
    tail: str


class Row(msgspec.Struct, frozen=True, array_like=True):
    """One indexed event: its record's fields and its semantic text."""

    seq: int
    type: str
    time: int
    classification: Classification
    turn: int | None
    step: int | None
    shadowed_by: int | None
    compaction_id: str | None
    text: str


class Reclass(msgspec.Struct, frozen=True, array_like=True):
    """An indexed event's new classification (and the replace that shadowed it)."""

    seq: int
    classification: Classification
    shadowed_by: int | None
    compaction_id: str | None


class SessionPlan(msgspec.Struct, frozen=True, kw_only=True):
    """The writes that bring one session's rows from ``expect`` to ``state`` (and its
    classification codes to ``classes``)."""

    expect: SessionState | None
    state: SessionState
    classes: bytes
    reset: bool
    rows: list[Row]
    reclass: list[Reclass]
    events: int


def header_digest(header: SessionHeader) -> str:
    """A digest of the header line."""
    return hashlib.blake2b(dumps(header.to_json(line=True)), digest_size=16).hexdigest()


def event_digest(event: Event) -> str:
    """A digest of one event's wire line."""
    return hashlib.blake2b(event.encode(), digest_size=16).hexdigest()


def _row(index: QueryIndex, seq: int, text: str) -> Row:
    record = index.record(seq)
    event = record.event
    return Row(
        seq,
        event.type,
        event.time,
        record.classification,
        record.turn,
        record.step,
        record.shadowed_by,
        record.compaction_id,
        text,
    )


def plan_session(
    state: SessionState | None,
    indexed: bytes,
    header: SessionHeader,
    events: Sequence[Event],
    token: str,
) -> SessionPlan:
    """The plan that indexes ``events`` (the session's committed log) over ``state``, whose
    events' classification codes are ``indexed``."""
    index = QueryIndex(events)
    length = len(index)
    digest = header_digest(header)
    reset = (
        state is None
        or state.header != digest
        or length < state.cursor
        or (state.cursor > 0 and state.tail != event_digest(events[state.cursor - 1]))
    )
    start = 0 if reset or state is None else state.cursor
    classes = bytes(index.class_code(seq) for seq in range(length))
    reclass: list[Reclass] = []
    if not reset and state is not None:
        old = indexed
        for seq in range(min(start, len(old))):
            if old[seq] != classes[seq] and events[seq].type in TEXT_TYPES:
                record = index.record(seq)
                reclass.append(Reclass(seq, record.classification, record.shadowed_by, record.compaction_id))
    rows = []
    for seq in range(start, length):
        event = events[seq]
        if event.type not in TEXT_TYPES:
            continue
        text = event_text(event)
        if text:
            rows.append(_row(index, seq, text))
    new = SessionState(
        session_id=header.id,
        cursor=length,
        token=token,
        header=digest,
        tail=event_digest(events[length - 1]) if length else "",
    )
    return SessionPlan(
        expect=state,
        state=new,
        classes=classes,
        reset=reset,
        rows=rows,
        reclass=reclass,
        events=length - start,
    )

"""``copy_sessions``: move sessions from one backend to another, events unchanged.

What is copied is each session's header and committed log: the events the source holds, each
restored with full validation (FORMAT §7.4) first, so a damaged log is refused rather than
spread. Nothing a load would add is copied (no crash-repair closers, no end-seed), and a torn
tail is not part of the log; the copy therefore loads, in harness and in dsh, exactly as the
original does. A legacy record is copied in the current form both read it as (dsh's SQLite
store refuses legacy shapes). Every session is one append, so a dsh SQLite target packs each
whole chunk run.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from harness.errors import SessionExists, SessionNotFound
from harness.stores.backend import Backend, read_whole
from harness.stores.store import restore_stored

__all__ = ["CopiedSession", "copy_sessions"]


class CopiedSession(msgspec.Struct, frozen=True):
    """One session ``copy_sessions`` wrote: its id and how many events."""

    id: str
    events: int


async def copy_sessions(
    source: Backend, target: Backend, ids: Sequence[str] | None = None
) -> list[CopiedSession]:
    """Copy the sessions ``ids`` (default: every session ``source`` lists) into ``target``.

    Refuses before writing anything when an id is unknown to ``source`` (``SessionNotFound``)
    or already stored in ``target`` (``SessionExists``); a session that fails validation
    raises its error (``CorruptSession``, ``UnsupportedFormat``) with the sessions before it
    already copied.
    """
    chosen = list(ids) if ids is not None else [info.id for info in await source.list()]
    for session_id in chosen:
        await source.stored_length(session_id)  # SessionNotFound before anything is written
        try:
            await target.stored_length(session_id)
        except SessionNotFound:
            continue
        raise SessionExists(f"session {session_id!r} is already stored in the target")
    copied: list[CopiedSession] = []
    for session_id in chosen:
        log = await read_whole(source, session_id)
        session, _ = restore_stored(session_id, log)
        events = list(session.events[: len(log.events)])
        await target.create(log.header)
        await target.append(session_id, events)
        copied.append(CopiedSession(session_id, len(events)))
    return copied

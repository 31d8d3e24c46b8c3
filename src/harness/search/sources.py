"""Where the index reads sessions from: a change token per session, and the committed log.

``probe`` gives each stored session a token that changes whenever the session may have
changed, cheaply, so that a catch-up reads only the sessions that did:

* a backend of session files (a JSONL root): the log file's device, inode, size and
  modification time (``stat`` only; the store's ``list`` would read every file to count
  its events). The token is taken
  before the file is read, so an append racing the read changes it again and the next
  catch-up reads the session once more;
* any other backend: ``list()``'s event count, last activity and creation time (SQLite and
  PostgreSQL keep them in the session row).

A session whose header does not read is not tokened but reported (``problem``).

``read_committed`` restores a session exactly as ``SessionStore.inspect`` does (the same
pipeline, validation included) and keeps only the events the backend committed: never the
crash-repair closers or the end-seed a restore adds in memory, which another process may
yet write differently.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from typing import Any

from harness.events.event import Event
from harness.session.header import SessionHeader
from harness.stores.backend import Backend, StoredLog, WireStream
from harness.stores.capabilities import SessionFiles
from harness.stores.store import restore_logged

__all__ = ["Probe", "probe", "read_committed"]


class Probe:
    """The sessions a store holds: ``tokens`` by id, and ``problems`` (id to reason) for
    those whose header does not read."""

    __slots__ = ("problems", "tokens")

    def __init__(self, tokens: dict[str, str], problems: dict[str, str]) -> None:
        self.tokens = tokens
        self.problems = problems


def _file_probe(backend: SessionFiles) -> Probe:
    tokens: dict[str, str] = {}
    for session_id, path in backend.session_files():
        try:
            st = os.stat(path)
        except FileNotFoundError:
            continue
        tokens[session_id] = f"f:{st.st_dev}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}"
    return Probe(tokens, {})


async def probe(backend: Backend) -> Probe:
    """The change token of every stored session (see the module doc)."""
    if isinstance(backend, SessionFiles):
        import asyncio

        return await asyncio.to_thread(_file_probe, backend)
    tokens: dict[str, str] = {}
    problems: dict[str, str] = {}
    for info in await backend.list():
        if info.problem is not None:
            problems[info.id] = info.problem
            continue
        tokens[info.id] = f"l:{info.event_count}:{info.last_activity}:{info.created_at}"
    return Probe(tokens, problems)


async def read_committed(backend: Backend, session_id: str) -> tuple[SessionHeader, Sequence[Event]]:
    """The header and the committed events of a stored session, validated as a load
    validates them (``CorruptSession``, ``UnsupportedFormat``, ``SessionNotFound``)."""
    log = await backend.read(session_id)
    counted = [0]
    if log.stream is not None:
        inner = log.stream

        def events() -> Iterator[dict[str, Any]]:
            for event in inner.events():
                counted[0] += 1
                yield event

        log = StoredLog(
            log.header, [], location=log.location, stream=WireStream(events, inner.exact, inner.progress)
        )
    session, _, used = await restore_logged(session_id, log)
    stored = counted[0] if used.stream is not None else len(used.events)
    return session.header, session.events[:stored]

"""Sample headers and events for backend tests (the contract suites and a backend's own tests):
``header``, ``full_header``, ``chunk``, ``sample_events``, ``corruptions``, ``wire``, ``run``."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Sequence
from typing import Any, TypeVar

from harness.events.event import Event, Replace
from harness.events.json import loads
from harness.session.header import SessionHeader
from harness.stores.backend import Backend, StoredLog, read_whole

T = TypeVar("T")


def run(coro: Awaitable[T]) -> T:
    """Run one coroutine in a fresh event loop."""

    async def main() -> T:
        return await coro

    return asyncio.run(main())


def header(
    session_id: str = "s1", cwd: str | None = "/work/project", created_at: int = 1_767_225_600_000
) -> SessionHeader:
    return SessionHeader.new(id=session_id, cwd=cwd, created_at=created_at)


def full_header() -> SessionHeader:
    """A header with every optional field set."""
    return SessionHeader(
        id="child",
        created_at=5,
        cwd="/a",
        parent_session="parent",
        seed_length=3,
        origin="subagent",
        delegation_depth=2,
        agent_preset="minimal",
    )


def chunk(seq: int, text: str = "hi", time: int | None = None) -> Event:
    data = {"turn": 1, "step": 1, "chunk": {"type": "text-delta", "index": 0, "text": text}}
    return Event.create("assistant/chunk", seq, 1000 + seq if time is None else time, data)


def sample_events() -> list[Event]:
    """Events exercising key order, unicode, a lone surrogate, a replace and ignorable."""
    message = {
        "id": "m-1",
        "role": "user",
        "source": {"kind": "user"},
        "content": [{"type": "text", "text": 'héllo \U0001f600 \ud800 \\ " \n \u0000'}],
    }
    return [
        Event.create("turn/start", 0, 1000, {"turn": 1}),
        Event.create("user/message", 1, 1001, {"turn": 1, "message": message}, surface_op="append"),
        Event.create(
            "plugin/event", 2, 999, {"z": 1, "a": [1.5, None, True], "m": {"y": {}, "b": []}}, ignorable=True
        ),
        Event.create("session/title", 3, 1003, {"title": "first"}),
        Event.create(
            "user/message",
            4,
            1004,
            {"turn": 1, "message": message},
            surface_op=Replace(1, 1),
            source_event_seqs=(1,),
        ),
        Event.create("turn/end", 5, 1005, None),
    ]


Corruption = tuple[str, tuple[Any, ...], str]


def corruptions(param: str, *own: Corruption) -> list[Corruption]:
    """Damage a database backend refuses on read: ``(statement, params, what the error says)``.

    The rows both backends refuse alike, written with the driver's placeholder ``param``
    (``?`` or ``%s``), and the backend's ``own`` (the counts it keeps) between events and header.
    """
    return [
        (
            f"UPDATE events SET line = {param} WHERE seq = 2",
            ('{"type":"assistant/chunk","seq":2,',),
            "unparsable committed event at seq 2",
        ),
        (f"UPDATE events SET line = {param} WHERE seq = 1", ("NaN",), "unparsable committed event at seq 1"),
        (f"UPDATE events SET line = {param} WHERE seq = 1", ("[1]",), "row at seq 1 does not hold"),
        (
            "UPDATE events SET line = replace(line, '\"seq\":3', '\"seq\":7') WHERE seq = 3",
            (),
            "row at seq 3",
        ),
        *own,
        (f"UPDATE sessions SET header = {param}", ("{",), "header is not a JSON object"),
        (
            f"UPDATE sessions SET header = {param}",
            ('{"type":"session","version":0,"id":"s1"}',),
            "invalid session header",
        ),
        (
            f"UPDATE sessions SET header = {param}",
            ('{"type":"x","version":0,"id":"s1","createdAt":1}',),
            "not tagged",
        ),
        (
            f"UPDATE sessions SET header = {param}",
            ('{"type":"session","version":0,"id":"other","createdAt":1,"delegationDepth":0}',),
            "does not match session id",
        ),
    ]


def wire(events: Sequence[Event]) -> list[dict[str, Any]]:
    return [loads(event.encode()) for event in events]


async def write_samples(backend: Backend) -> StoredLog:
    """Create ``s1``, append ``sample_events()`` in two batches and read the log back whole."""
    events = sample_events()
    await backend.create(header())
    await backend.append("s1", events[:2])
    await backend.append("s1", events[2:])
    assert await backend.stored_length("s1") == len(events)
    return await read_whole(backend, "s1")


async def check_listed_oldest_first(backend: Backend, location: str) -> None:
    """A database lists its sessions oldest first (``createdAt``, then id), each at ``location``."""
    for session_id, created_at in (("young", 20), ("old", 10), ("tie-b", 30), ("tie-a", 30)):
        await backend.create(header(session_id, created_at=created_at))
        await backend.append(session_id, [chunk(0)])
    listed = await backend.list()
    assert [info.id for info in listed] == ["old", "young", "tie-a", "tie-b"]
    assert [info.location for info in listed] == [location] * 4

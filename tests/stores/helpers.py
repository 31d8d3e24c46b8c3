"""Data helpers the database backend tests share (SQLite, PostgreSQL)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Sequence
from typing import Any, TypeVar

from harness.events.event import Event, Replace
from harness.events.json import loads
from harness.session.header import SessionHeader

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


def wire(events: Sequence[Event]) -> list[dict[str, Any]]:
    return [loads(event.encode()) for event in events]

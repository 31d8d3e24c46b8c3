"""``WriteBehind`` after a write whose outcome is unknown (the batch landed, the answer did not).

The next write first learns what the backend holds: it adopts the part of its queue that is
stored byte for byte, and when another writer's events follow that part, it keeps only what
is truly unwritten (a ``SessionConflict``: those events will never be stored). When the
backend cannot even be asked, the failure is ``OutcomeUnknown`` again and nothing changes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest

from harness.errors import OutcomeUnknown, SessionConflict, StorageError
from harness.events.event import Event
from harness.stores.memory import MemoryBackend
from harness.stores.writebehind import WriteBehind
from harness.testing.samples import chunk, header


class _Landing(MemoryBackend):
    """Appends land; while ``lose_replies`` is set each then reports ``OutcomeUnknown``; while
    ``unreadable`` is set the stored length cannot be read."""

    def __init__(self) -> None:
        super().__init__()
        self.lose_replies = False
        self.unreadable = False

    async def append(self, session_id: str, batch: Sequence[Event]) -> None:
        await super().append(session_id, batch)
        if self.lose_replies:
            raise OutcomeUnknown("the reply was lost (injected)")

    async def stored_length(self, session_id: str) -> int:
        if self.unreadable:
            raise StorageError("the server cannot be reached (injected)")
        return await super().stored_length(session_id)


async def landed_unknown(*events: Event) -> tuple[_Landing, WriteBehind]:
    """A writer whose write of ``events`` landed but reported ``OutcomeUnknown``."""
    backend = _Landing()
    await backend.create(header("s1"))
    writer = WriteBehind(backend, "s1", cursor=0, window_s=3600)
    backend.lose_replies = True
    for event in events:
        writer(event)
    with pytest.raises(OutcomeUnknown):
        await writer.flush()
    backend.lose_replies = False
    return backend, writer


def test_a_landed_batch_is_adopted_and_only_what_follows_another_writer_stays_queued() -> None:
    async def go() -> None:
        backend, writer = await landed_unknown(chunk(0), chunk(1))
        assert writer.pending == 2 and writer.cursor == 0
        await backend.append("s1", [chunk(2, "another writer's")])
        writer(chunk(2))
        writer(chunk(3))
        with pytest.raises(SessionConflict, match="up to 1"):
            await writer.flush()
        assert writer.cursor == 2  # 0 and 1 are stored: adopted, never "not yet durable"
        assert [event.seq for event in writer.queued()] == [2, 3]
        with pytest.raises(SessionConflict):  # and the rest stays refused, nothing written
            await writer.flush()
        assert (await backend.read("s1")).events[2]["data"]["chunk"]["text"] == "another writer's"

    asyncio.run(go())


def test_a_landed_batch_is_adopted_and_the_rest_written_once() -> None:
    async def go() -> None:
        backend, writer = await landed_unknown(chunk(0))
        writer(chunk(1))
        await writer.flush()
        assert [event["seq"] for event in (await backend.read("s1")).events] == [0, 1]

    asyncio.run(go())


def test_when_the_backend_cannot_be_asked_the_outcome_stays_unknown() -> None:
    async def go() -> None:
        backend, writer = await landed_unknown(chunk(0))
        backend.unreadable = True
        writer(chunk(1))
        for attempt in (writer.flush(), writer.settle()):
            with pytest.raises(OutcomeUnknown, match="could not be read"):
                await attempt
            assert [event.seq for event in writer.queued()] == [0, 1] and writer.cursor == 0
        backend.unreadable = False
        await writer.settle()
        assert [event.seq for event in writer.queued()] == [1] and writer.cursor == 1
        await writer.flush()
        assert [event["seq"] for event in (await backend.read("s1")).events] == [0, 1]

    asyncio.run(go())

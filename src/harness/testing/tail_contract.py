"""What every backend that can follow a session live must do (``TailingBackend.tail``),
subclassed per backend (JSONL plain and zstd, harness SQLite; PostgreSQL has its own tests
of the same promises in ``test_postgres_tail.py``): the committed events from ``from_seq``
on, in order, then each batch as another writer commits it, packed chunk runs given back as
their members, never an event twice or skipped; ``SessionNotFound`` for an unknown id, a
wait for one created in the same backend, ``SessionDeleted`` when the log goes away."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, AsyncIterator
from pathlib import Path

from harness.errors import SessionDeleted, SessionNotFound
from harness.events.event import Event
from harness.session.session import Session
from harness.stores.backend import Backend
from harness.stores.leases import TailingBackend
from harness.stores.store import SessionStore
from harness.testing.contract import one_turn
from harness.testing.samples import run


def chunks(session: Session, count: int, text: str = "piece") -> None:
    """A run of text deltas of one block: stored as a packed row."""
    for index in range(count):
        session.append(
            "assistant/chunk",
            {"turn": 1, "step": 1, "chunk": {"type": "text-delta", "index": 0, "text": f"{text} {index}"}},
        )


class Follower:
    """Iterates a tail in a task of its own (cancelling an ``__anext__`` would end the
    generator): ``events`` so far, ``until(n)`` waits for the n-th, ``error`` what ended it."""

    def __init__(self, tail: AsyncGenerator[Event, None]) -> None:
        self.tail = tail
        self.events: list[Event] = []
        self.error: BaseException | None = None
        self.task = asyncio.ensure_future(self._run())

    async def _run(self) -> None:
        try:
            async for event in self.tail:
                self.events.append(event)
        except Exception as error:
            self.error = error

    async def until(self, count: int, timeout: float = 10.0) -> list[Event]:
        deadline = asyncio.get_running_loop().time() + timeout
        while len(self.events) < count and self.error is None:
            assert asyncio.get_running_loop().time() < deadline, f"{len(self.events)} of {count} events"
            await asyncio.sleep(0.02)
        return self.events

    async def ended(self, timeout: float = 10.0) -> BaseException | None:
        await asyncio.wait_for(asyncio.shield(self.task), timeout)
        return self.error

    async def close(self) -> None:
        self.task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self.task
        await self.tail.aclose()

    async def __aenter__(self) -> Follower:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


class TailContract:
    """Subclass with ``make_backend(tmp_path)``: a backend on storage at ``tmp_path``, a new
    object each call (two calls: two writers or readers of the same storage)."""

    def make_backend(self, tmp_path: Path) -> Backend:
        raise NotImplementedError

    @contextlib.asynccontextmanager
    async def _stores(self, tmp_path: Path) -> AsyncIterator[tuple[SessionStore, TailingBackend]]:
        """A writing store and a second backend on the same storage that tails, both closed after."""
        writer = SessionStore(self.make_backend(tmp_path))
        reader = self.make_backend(tmp_path)
        assert isinstance(reader, TailingBackend)
        try:
            yield writer, reader
        finally:
            await writer.close()
            await reader.close()

    def test_t1_committed_events_then_each_new_batch_in_order(self, tmp_path: Path) -> None:
        async def scenario() -> None:
            async with self._stores(tmp_path) as (writer, reader):
                session = await writer.create(id="followed", cwd="/work/project")
                one_turn(session)
                chunks(session, 5)
                await writer.flush(session)
                async with Follower(reader.tail("followed")) as follower:
                    first = len(session.events)
                    await follower.until(first)
                    await asyncio.sleep(0.5)
                    assert [e.encode() for e in follower.events] == [e.encode() for e in session.events]
                    session.append("turn/start", {"turn": 2})
                    chunks(session, 4, "more")
                    session.append("turn/end", {"turn": 2, "reason": {"kind": "completed"}})
                    await writer.flush(session)
                    await follower.until(first + 6)
                    await asyncio.sleep(0.5)
                    assert [e.encode() for e in follower.events] == [e.encode() for e in session.events]
                    assert follower.error is None

        run(scenario())

    def test_t2_from_seq_starts_inside_a_packed_run(self, tmp_path: Path) -> None:
        async def scenario() -> None:
            async with self._stores(tmp_path) as (writer, reader):
                session = await writer.create(id="followed", cwd="/work/project")
                session.append("turn/start", {"turn": 1})
                chunks(session, 8)
                await writer.flush(session)
                async with Follower(reader.tail("followed", 4)) as follower:
                    await follower.until(5)
                    await asyncio.sleep(0.3)
                    assert [e.seq for e in follower.events] == [4, 5, 6, 7, 8]
                    assert [e.encode() for e in follower.events] == [e.encode() for e in session.events[4:]]

        run(scenario())

    def test_t3_an_unknown_session_is_not_found(self, tmp_path: Path) -> None:
        async def scenario() -> None:
            async with self._stores(tmp_path) as (writer, reader):
                one_turn(await writer.create(id="other", cwd="/work/project"))
                await writer.close()
                async with Follower(reader.tail("nobody")) as follower:
                    assert isinstance(await follower.ended(), SessionNotFound)

        run(scenario())

    def test_t4_a_session_created_in_this_backend_is_waited_for(self, tmp_path: Path) -> None:
        async def scenario() -> None:
            async with self._stores(tmp_path) as (store, _):
                session = await store.create(id="soon", cwd="/work/project")
                async with Follower(store.tail("soon")) as follower:
                    await asyncio.sleep(0.5)
                    assert follower.events == [] and follower.error is None
                    one_turn(session)
                    await store.flush(session)
                    await follower.until(len(session.events))
                    assert [e.encode() for e in follower.events] == [e.encode() for e in session.events]

        run(scenario())

    def test_t5_a_deleted_session_ends_its_tail(self, tmp_path: Path) -> None:
        async def scenario() -> None:
            async with self._stores(tmp_path) as (writer, reader):
                session = await writer.create(id="doomed", cwd="/work/project")
                one_turn(session)
                await writer.flush(session)
                async with Follower(reader.tail("doomed")) as follower:
                    await follower.until(len(session.events))
                    await writer.release(session)
                    await writer.delete("doomed")
                    assert isinstance(await follower.ended(), SessionDeleted)

        run(scenario())

    def test_t6_a_steady_writer_is_followed_without_loss(self, tmp_path: Path) -> None:
        async def scenario() -> None:
            async with self._stores(tmp_path) as (writer, reader):
                session = await writer.create(id="busy", cwd="/work/project")
                session.append("turn/start", {"turn": 1})
                await writer.flush(session)
                async with Follower(reader.tail("busy")) as follower:
                    for batch in range(20):  # 9 events a batch
                        chunks(session, 7, f"b{batch}")
                        session.append(
                            "todo/write", {"todos": [{"content": f"t{batch}", "status": "pending"}]}
                        )
                        session.append("session/title", {"title": f"title {batch}"})
                        await writer.flush(session)
                        await asyncio.sleep(0.01)
                    await follower.until(181, timeout=20)
                    await asyncio.sleep(0.3)
                    assert [e.seq for e in follower.events] == list(range(181))
                    assert [e.encode() for e in follower.events] == [e.encode() for e in session.events]

        run(scenario())

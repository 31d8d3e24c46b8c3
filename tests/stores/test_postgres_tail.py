"""Live tail on ``PostgresBackend``: events arrive in commit order, from any seq, without
polling, and a tail whose connection is killed resumes with nothing missed or repeated."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterator

import pytest

from harness.errors import SessionNotFound
from harness.events.event import Event
from harness.stores.store import SessionStore
from harness.testing.contract import one_turn, wire
from tests.stores.pg import PgSchema, chunk, fresh_schema, header, run, server_dsn

server_dsn()  # skip (or, under CI=true, fail) this module when no server answers


@pytest.fixture
def pg() -> Iterator[PgSchema]:
    yield from fresh_schema()


def tail_pids(pg: PgSchema) -> list[int]:
    with pg.connect() as conn:
        return [
            int(str(pid))
            for (pid,) in conn.execute(
                "SELECT pid FROM pg_stat_activity WHERE application_name = %s",
                (f"harness-test-{pg.name}-tail",),
            )
        ]


def kill_tails(pg: PgSchema) -> int:
    with pg.connect() as conn:
        return len(
            conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = %s",
                (f"harness-test-{pg.name}-tail",),
            ).fetchall()
        )


async def take(events: AsyncIterator[Event], count: int, into: list[Event]) -> None:
    async for event in events:
        into.append(event)
        if len(into) == count:
            return


async def until(condition: object, *, steps: int = 500) -> None:
    """Wait (yielding to the loop) until ``condition()`` holds; fail after ``steps`` tries."""
    assert callable(condition)
    for _ in range(steps):
        if condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("condition never held")


def test_events_arrive_in_order_as_they_commit(pg: PgSchema) -> None:
    async def go() -> None:
        store = SessionStore(pg.backend(), write_window_s=3600)
        try:
            session = await store.create(id="s1")
            one_turn(session)
            await store.flush(session)
            got: list[Event] = []
            tail = store.tail("s1")
            follower = asyncio.ensure_future(take(tail, 4 * len(session.events), got))
            await until(lambda: len(got) == len(session.events))  # the stored prefix first
            for turn in (2, 3, 4):
                one_turn(session, turn)
                await store.flush(session)
            await asyncio.wait_for(follower, 30)
            await tail.aclose()
            assert [e.seq for e in got] == list(range(len(session.events)))
            assert wire_of(got) == wire(session)
            assert [e.encode() for e in got] == [e.encode() for e in session.events]
        finally:
            await store.close()

    run(go())


def wire_of(events: list[Event]) -> list[dict[str, object]]:
    from harness.events.json import loads

    return [loads(e.encode()) for e in events]


def test_a_tail_starts_at_from_seq_and_can_wait_for_a_created_session(pg: PgSchema) -> None:
    async def go() -> None:
        async with pg.opened() as backend:
            await backend.create(header())
            got: list[Event] = []
            tail = backend.tail("s1", 2)  # created here, nothing stored yet: it waits
            follower = asyncio.ensure_future(take(tail, 3, got))
            await until(lambda: len(tail_pids(pg)) == 1)
            await backend.append("s1", [chunk(0), chunk(1), chunk(2)])
            await backend.append("s1", [chunk(3), chunk(4)])
            await asyncio.wait_for(follower, 30)
            await tail.aclose()
            assert [e.seq for e in got] == [2, 3, 4]
            assert [e.encode() for e in got] == [chunk(n).encode() for n in (2, 3, 4)]

    run(go())


def test_tailing_an_unknown_session_is_not_found(pg: PgSchema) -> None:
    async def go() -> None:
        async with pg.opened() as backend:
            with pytest.raises(SessionNotFound):
                await anext(backend.tail("nope"))
            with pytest.raises(ValueError):
                backend.tail("nope", -1)

    run(go())


def test_a_waiting_tail_does_not_poll(pg: PgSchema) -> None:
    async def go() -> None:
        async with pg.opened() as backend:
            await backend.create(header())
            await backend.append("s1", [chunk(0)])
            got: list[Event] = []
            tail = backend.tail("s1")
            follower = asyncio.ensure_future(take(tail, 2, got))
            await until(lambda: len(got) == 1)
            with pg.connect() as conn:
                query = "SELECT query_start, state FROM pg_stat_activity WHERE application_name = %s"
                name = f"harness-test-{pg.name}-tail"
                before = conn.execute(query, (name,)).fetchall()
                await asyncio.sleep(0.5)
                after = conn.execute(query, (name,)).fetchall()
            assert len(before) == 1 and before == after  # no statement ran while it waited
            assert before[0][1] == "idle"
            await backend.append("s1", [chunk(1)])  # a commit wakes it
            await asyncio.wait_for(follower, 30)
            await tail.aclose()
            assert [e.seq for e in got] == [0, 1]

    run(go())


def test_a_tail_resumes_after_its_connection_is_killed(pg: PgSchema) -> None:
    async def go() -> None:
        async with pg.opened() as backend:
            await backend.create(header())
            await backend.append("s1", [chunk(n) for n in range(5)])
            got: list[Event] = []
            tail = backend.tail("s1")
            follower = asyncio.ensure_future(take(tail, 35, got))
            await until(lambda: len(got) == 5)
            for round_ in range(3):
                (pid,) = tail_pids(pg)
                assert kill_tails(pg) == 1
                # Commit while the tail is down or reconnecting: it must read these from its cursor.
                start = 5 + round_ * 10
                await backend.append("s1", [chunk(n, f"r{round_}") for n in range(start, start + 5)])
                await until(lambda: len(tail_pids(pg)) == 1 and tail_pids(pg) != [pid])  # noqa: B023
                await backend.append("s1", [chunk(n, f"r{round_}") for n in range(start + 5, start + 10)])
                await until(lambda: len(got) == start + 10)  # noqa: B023
            await asyncio.wait_for(follower, 30)
            await tail.aclose()
            assert [e.seq for e in got] == list(range(len(got)))  # nothing missed, nothing repeated
            stored = await backend.read_exact("s1")
            assert wire_of(got) == stored.events[: len(got)]

    run(go())


def test_closing_a_tail_closes_its_connection(pg: PgSchema) -> None:
    async def go() -> None:
        async with pg.opened() as backend:
            await backend.create(header())
            await backend.append("s1", [chunk(0)])
            tail = backend.tail("s1")
            assert (await anext(tail)).seq == 0
            assert len(tail_pids(pg)) == 1
            await tail.aclose()
            await until(lambda: tail_pids(pg) == [])
            with contextlib.suppress(StopAsyncIteration):
                await anext(tail)

    run(go())

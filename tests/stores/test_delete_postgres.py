"""``PostgresBackend.delete``: leases decide who may delete, a leased writer of a deleted session
gets ``SessionDeleted``, a tail of it ends with ``SessionDeleted``, and the rows are gone."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from harness.errors import LeaseHeld, SessionDeleted
from harness.events.event import Event
from harness.stores.store import SessionStore
from tests.stores.contract import one_turn
from tests.stores.pg import PgSchema, fresh_schema, run, server_dsn

server_dsn()  # skip (or, under CI=true, fail) this module when no server answers


@pytest.fixture
def pg() -> Iterator[PgSchema]:
    yield from fresh_schema()


def rows(pg: PgSchema) -> tuple[int, int, list[tuple[object, ...]]]:
    with pg.connect() as conn:
        sessions = conn.execute("SELECT count(*) FROM sessions").fetchone()
        events = conn.execute("SELECT count(*) FROM events").fetchone()
        leases = conn.execute("SELECT session_id, expires_at > now() FROM leases").fetchall()
    assert sessions is not None and events is not None
    return int(str(sessions[0])), int(str(events[0])), leases


def test_a_live_lease_of_another_owner_refuses_the_delete_and_the_holder_may_delete(pg: PgSchema) -> None:
    async def go() -> None:
        holder = SessionStore(pg.backend(), write_window_s=10)
        other = SessionStore(pg.backend())
        session = await holder.create(id="leased")
        one_turn(session)
        await holder.flush(session)
        await holder.acquire("leased", "worker-a", 30)
        with pytest.raises(LeaseHeld, match="worker-a"):
            await other.delete("leased")
        assert [info.id for info in await other.list()] == ["leased"]  # nothing deleted
        await holder.delete("leased")
        sessions, events, leases = rows(pg)
        assert (sessions, events) == (0, 0)
        assert leases == [("leased", False)]  # expired, kept: fencing tokens keep growing
        await other.close()
        await holder.close()

    run(go())


def test_a_leased_writer_elsewhere_gets_session_deleted(pg: PgSchema) -> None:
    async def go() -> None:
        writer = SessionStore(pg.backend(), write_window_s=10)
        session = await writer.create(id="w")
        one_turn(session)
        await writer.flush(session)
        await writer.acquire("w", "worker-a", 30)
        deleter = SessionStore(pg.backend())
        with pytest.raises(LeaseHeld):
            await deleter.delete("w")
        with pg.connect() as conn:  # the lease runs out (a crashed holder)
            conn.execute("UPDATE leases SET expires_at = now() - interval '1 second'")
        await deleter.delete("w")
        one_turn(session, 2)
        with pytest.raises(SessionDeleted):
            await writer.flush(session)
        assert rows(pg)[:2] == (0, 0)
        await deleter.close()
        with pytest.raises(SessionDeleted):
            await writer.close()

    run(go())


def test_a_tail_of_a_deleted_session_ends_with_session_deleted(pg: PgSchema) -> None:
    async def go() -> None:
        store = SessionStore(pg.backend())
        session = await store.create(id="t")
        one_turn(session)
        await store.flush(session)
        seen: list[Event] = []

        async def follow() -> None:
            async for event in store.tail("t"):
                seen.append(event)

        task = asyncio.create_task(follow())
        while len(seen) < len(session.events):
            await asyncio.sleep(0.01)
        other = SessionStore(pg.backend())
        await other.delete("t")
        with pytest.raises(SessionDeleted):
            await asyncio.wait_for(task, 60)
        await other.close()
        await store.close()

    run(go())

"""``SessionStore.delete`` on ``PostgresBackend``: ownership (the session's lease) decides who may
delete. A live owner elsewhere makes ``delete`` raise ``SessionInUse`` and nothing is deleted;
the owner itself may delete, and so may anyone once it released the session or its lease ran
out. A writer whose lease ran out gets ``SessionDeleted`` once the session is deleted, a tail of
it ends with ``SessionDeleted``, and the rows are gone (the lease row stays, expired)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from harness.errors import SessionDeleted, SessionInUse
from harness.events.event import Event
from harness.stores.store import SessionStore
from harness.testing.contract import one_turn
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


def test_a_live_owner_elsewhere_refuses_the_delete_and_the_owner_may_delete(pg: PgSchema) -> None:
    async def go() -> None:
        holder = SessionStore(pg.backend(), write_window_s=10)
        other = SessionStore(pg.backend())
        session = await holder.create(id="leased")
        one_turn(session)
        await holder.flush(session)
        with pytest.raises(SessionInUse) as refused:
            await other.delete("leased")
        assert refused.value.owner is not None and refused.value.owner.store == holder.store_id
        assert [info.id for info in await other.list()] == ["leased"]  # nothing deleted
        assert rows(pg)[2] == [("leased", True)]  # the holder's lease is untouched
        await holder.delete("leased")
        sessions, events, leases = rows(pg)
        assert (sessions, events) == (0, 0)
        assert leases == [("leased", False)]  # expired, kept: fencing tokens keep growing
        with pytest.raises(SessionDeleted):
            await holder.flush(session)
        await other.close()
        await holder.close()

    run(go())


def test_a_released_session_is_deleted_by_another_store(pg: PgSchema) -> None:
    async def go() -> None:
        holder = SessionStore(pg.backend(), write_window_s=10)
        other = SessionStore(pg.backend())
        session = await holder.create(id="r")
        one_turn(session)
        await holder.flush(session)
        with pytest.raises(SessionInUse):
            await other.delete("r")
        assert rows(pg)[:2] == (1, len(session.events))  # nothing deleted
        await holder.release(session)
        assert await other.owner("r") is None
        await other.delete("r")
        assert rows(pg) == (0, 0, [("r", False)])
        assert await other.owner("r") is None  # the deleter gave its claim back
        await other.close()
        await holder.close()

    run(go())


def test_a_leased_writer_elsewhere_gets_session_deleted(pg: PgSchema) -> None:
    async def go() -> None:
        writer = SessionStore(pg.backend(), write_window_s=10)
        session = await writer.create(id="w")
        one_turn(session)
        await writer.flush(session)
        deleter = SessionStore(pg.backend())
        with pytest.raises(SessionInUse):
            await deleter.delete("w")
        assert rows(pg)[:2] == (1, len(session.events))  # nothing deleted
        with pg.connect() as conn:  # the lease runs out (a crashed or hung holder)
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
        with pytest.raises(SessionInUse):
            await other.delete("t")  # the writer owns it (a tail owns nothing)
        await store.release(session)  # the tail follows on
        await other.delete("t")
        with pytest.raises(SessionDeleted):
            await asyncio.wait_for(task, 60)
        await other.close()
        await store.close()

    run(go())

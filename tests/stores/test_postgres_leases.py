"""Fenced leases on ``PostgresBackend`` and through ``SessionStore``: tokens only grow, a live
lease blocks other owners, a takeover or an expiry fences the old holder off inside its append
transaction (its flush raises ``LeaseLost`` and its events stay queued), renewal keeps a lease."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

import harness
from harness.errors import LeaseHeld, LeaseLost, SessionConflict, StorageError
from harness.stores.leases import Lease
from harness.stores.memory import MemoryBackend
from harness.stores.postgres import PostgresBackend
from harness.stores.store import SessionStore
from tests.stores.contract import one_turn, wire
from tests.stores.pg import PgSchema, chunk, fresh_schema, header, run, server_dsn

server_dsn()  # skip (or, under CI=true, fail) this module when no server answers


@pytest.fixture
def pg() -> Iterator[PgSchema]:
    yield from fresh_schema()


def expire_now(pg: PgSchema, session_id: str) -> None:
    """What the passing of the TTL does, without waiting for it."""
    with pg.connect() as conn:
        conn.execute(
            "UPDATE leases SET expires_at = now() - interval '1 second' WHERE session_id = %s", (session_id,)
        )


def lease_row(pg: PgSchema, session_id: str) -> tuple[str, int] | None:
    with pg.connect() as conn:
        row = conn.execute("SELECT owner, token FROM leases WHERE session_id = %s", (session_id,)).fetchone()
    return None if row is None else (str(row[0]), int(str(row[1])))


def test_tokens_only_grow_and_a_live_lease_is_held(pg: PgSchema) -> None:
    async def go() -> None:
        async with pg.opened() as a, pg.opened() as b:
            first = await a.acquire("s1", "worker-a", 30)
            assert isinstance(first, Lease)
            assert (first.session_id, first.owner, first.token) == ("s1", "worker-a", 1)
            assert a.lease("s1") == first
            with pytest.raises(LeaseHeld, match="worker-a") as held:
                await b.acquire("s1", "worker-b", 30)
            assert held.value.owner == "worker-a" and held.value.expires_at == first.expires_at
            await a.release("s1")
            assert a.lease("s1") is None
            second = await b.acquire("s1", "worker-b", 30)  # released: free at once
            assert second.token == 2
            third = await a.acquire("s1", "worker-a", 30, takeover=True)
            assert third.token == 3
            again = await a.acquire("s1", "worker-a", 30)  # this backend's own lease: re-acquired
            assert again.token == 4
            expire_now(pg, "s1")
            assert (await b.acquire("s1", "worker-b", 30)).token == 5  # expired: free
            assert (await a.acquire("other", "worker-a", 30)).token == 1  # tokens are per session

    run(go())
    assert lease_row(pg, "s1") == ("worker-b", 5)


def test_bad_lease_arguments_are_refused(pg: PgSchema) -> None:
    async def go() -> None:
        async with pg.opened() as backend:
            for owner, ttl in (("", 1.0), ("a", 0), ("a", -1), ("a", float("nan")), ("a", float("inf"))):
                with pytest.raises(ValueError):
                    await backend.acquire("s1", owner, ttl)

    run(go())


def test_a_takeover_fences_the_old_holder_and_keeps_its_events_in_memory(pg: PgSchema) -> None:
    async def go() -> None:
        old = SessionStore(pg.backend(), write_window_s=3600)
        new = SessionStore(pg.backend(), write_window_s=3600)
        try:
            await old.acquire("s1", "old", 30)
            session = await old.create(id="s1")
            one_turn(session)
            await old.flush(session)
            committed = len(session.events)

            lease = await new.acquire("s1", "new", 30, takeover=True)
            assert lease.token == 2
            one_turn(session, 2)  # the old holder goes on, unaware
            with pytest.raises(LeaseLost, match="token 1") as lost:
                await old.flush(session)
            assert lost.value.token == 1
            assert old.pending(session) == len(session.events) - committed  # nothing dropped
            assert len(session.events) > committed
            assert await new.backend.stored_length("s1") == committed  # nothing written

            # The new holder continues from exactly the committed prefix.
            taken = await new.load("s1")
            assert wire(taken)[:committed] == wire(session)[:committed]
            one_turn(taken, 2)
            await new.flush(taken)

            # Retrying does not sneak the old events in, and says why: the lease is gone.
            with pytest.raises(LeaseLost):
                await old.flush(session)
            assert old.pending(session) > 0
            stored = await SessionStore(pg.backend()).inspect("s1")
            assert wire(stored)[: len(taken.events)] == wire(taken)
        finally:
            await new.close()
            with pytest.raises(LeaseLost):
                await old.close()  # its final flush is still refused

    run(go())


def test_an_expired_lease_cannot_write_even_if_nobody_took_over(pg: PgSchema) -> None:
    async def go() -> None:
        store = SessionStore(pg.backend(), write_window_s=3600)
        try:
            await store.acquire("s1", "me", 30)
            session = await store.create(id="s1")
            session.append("turn/start", {"turn": 1})
            await store.flush(session)
            expire_now(pg, "s1")
            session.append("step/start", {"turn": 1, "step": 1})
            with pytest.raises(LeaseLost):
                await store.flush(session)
            assert store.pending(session) == 1
            await store.acquire("s1", "me", 30)  # a new token: writing resumes where it stopped
            await store.flush(session)
            assert store.pending(session) == 0
            assert await store.backend.stored_length("s1") == 2
        finally:
            await store.close()

    run(go())


def test_a_background_write_refused_for_lease_loss_keeps_its_batch(pg: PgSchema) -> None:
    async def go() -> None:
        store = SessionStore(pg.backend(), write_window_s=0.01)
        other = pg.backend()
        try:
            await store.acquire("s1", "me", 30)
            session = await store.create(id="s1")
            session.append("turn/start", {"turn": 1})
            await store.flush(session)
            await other.acquire("s1", "thief", 30, takeover=True)
            session.append("step/start", {"turn": 1, "step": 1})
            for _ in range(200):  # the window expires and the background write is refused
                await asyncio.sleep(0.01)
                if await other.stored_length("s1") == 1 and store.pending(session) == 1:
                    writer = store._live_of(session).writer
                    if isinstance(writer.last_error, LeaseLost):
                        break
            assert isinstance(store._live_of(session).writer.last_error, LeaseLost)
            assert store.pending(session) == 1
            assert await other.stored_length("s1") == 1
        finally:
            await other.close()
            with pytest.raises(LeaseLost):
                await store.close()

    run(go())


def test_an_unleased_writer_is_refused_while_a_lease_is_live(pg: PgSchema) -> None:
    async def go() -> None:
        async with pg.opened() as holder, pg.opened() as outsider:
            await holder.create(header())
            await holder.acquire("s1", "holder", 30)
            await holder.append("s1", [chunk(0)])
            with pytest.raises(LeaseHeld, match="holder") as held:
                await outsider.append("s1", [chunk(1)])
            assert held.value.owner == "holder"
            await holder.release("s1")
            await outsider.append("s1", [chunk(1)])  # no live lease: the seq check alone guards
            assert await outsider.stored_length("s1") == 2
            with pytest.raises(SessionConflict):
                await holder.append("s1", [chunk(1, "late")])

    run(go())


def test_renewal_keeps_the_lease_beyond_its_ttl(pg: PgSchema) -> None:
    async def go() -> None:
        async with pg.opened() as backend:
            await backend.create(header())
            # Renewed every ttl / 3: a 1.5 s TTL leaves a renewal 1 s of lateness on a loaded machine.
            first = await backend.acquire("s1", "me", 1.5)
            await asyncio.sleep(3.75)  # two and a half TTLs: only renewals keep it alive
            renewed = backend.lease("s1")
            assert renewed is not None and renewed.token == first.token
            assert renewed.expires_at > first.expires_at
            await backend.append("s1", [chunk(0)])  # still ours
            with pytest.raises(LeaseHeld):
                await pg.backend().acquire("s1", "other", 1)

    run(go())


def test_a_lost_lease_is_not_renewed_back(pg: PgSchema) -> None:
    async def go() -> None:
        async with pg.opened() as backend:
            await backend.create(header())
            await backend.acquire("s1", "me", 0.6)
            expire_now(pg, "s1")
            await asyncio.sleep(0.5)  # at least one renewal attempt
            with pytest.raises(LeaseLost):
                await backend.append("s1", [chunk(0)])

    run(go())


def test_close_releases_held_leases(pg: PgSchema) -> None:
    async def go() -> None:
        store = SessionStore(pg.backend())
        await store.acquire("s1", "first", 30)
        await store.close()
        async with pg.opened() as other:
            assert (await other.acquire("s1", "second", 30)).token == 2  # no wait, no takeover

    run(go())


def test_load_repairs_under_the_lease(pg: PgSchema) -> None:
    async def go() -> None:
        writer = SessionStore(pg.backend())
        await writer.acquire("s1", "crashed", 30)
        session = await writer.create(id="s1")
        one_turn(session, close=False)  # left open by a crash
        await writer.flush(session)
        await writer.backend.close()  # (its lease is released with it)

        thief = pg.backend()
        await thief.acquire("s1", "thief", 30)
        loader = SessionStore(pg.backend())
        with pytest.raises(LeaseHeld):
            await loader.load("s1")  # its repair closers would write under another's lease
        await loader.acquire("s1", "loader", 30, takeover=True)
        loaded = await loader.load("s1")
        assert harness.repair_closers(list(loaded.events)) == []
        await loader.close()
        await thief.close()

    run(go())


def test_stores_without_leases_or_tails_say_so() -> None:
    async def go() -> None:
        store = SessionStore(MemoryBackend())
        with pytest.raises(StorageError, match="has no leases"):
            await store.acquire("s1", "me", 10)
        with pytest.raises(StorageError, match="has no leases"):
            await store.release_lease("s1")
        with pytest.raises(StorageError, match="cannot tail"):
            store.tail("s1")
        await store.close()

    run(go())


def test_release_of_an_unheld_lease_is_a_no_op(pg: PgSchema) -> None:
    async def go() -> None:
        backend = PostgresBackend(pg.dsn, schema=pg.name, application_name=f"harness-test-{pg.name}")
        try:
            await backend.release("nothing-held")
        finally:
            await backend.close()

    run(go())

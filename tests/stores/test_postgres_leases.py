"""Fenced leases on ``PostgresBackend``, and the ownership ``SessionStore`` takes through them.

Backend level (``acquire``/``release``/``lease``): tokens only grow, a live lease blocks other
owners (``LeaseHeld``, ``.holder`` its owner text), an unleased append is refused while a lease
is live, renewal keeps a lease beyond its TTL and a lost lease is not renewed back.

Store level (``create``/``load`` take the session's lease, ``release``/``discard``/``close``
give it up): a second store's ``load`` is refused with ``SessionInUse``; ``load(take_over=True)``
or an expiry fences the old holder off inside its append transaction (its flush, foreground or
background, raises ``LeaseLost`` and its events stay queued; to go on it discards and loads
again); ``close`` releases at once; ``load`` repairs a session another writer owns only after
taking it over."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

import harness
from harness.errors import LeaseHeld, LeaseLost, SessionConflict, SessionInUse, StorageError
from harness.events.json import loads
from harness.stores.leases import Lease
from harness.stores.memory import MemoryBackend
from harness.stores.postgres import PostgresBackend
from harness.stores.store import SessionStore
from harness.testing.contract import one_turn, wire
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
            assert held.value.holder == "worker-a" and held.value.expires_at == first.expires_at
            assert isinstance(held.value, SessionInUse) and held.value.owner is None  # a plain name
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
        reader = SessionStore(pg.backend())
        try:
            session = await old.create(id="s1")  # owned: the session's lease, token 1
            one_turn(session)
            await old.flush(session)
            committed = len(session.events)
            mine = await old.owner("s1")
            assert mine is not None and (mine.store, mine.token) == (old.store_id, 1)

            with pytest.raises(SessionInUse) as in_use:
                await new.load("s1")  # a live owner: refused, nothing taken
            assert in_use.value.owner is not None and in_use.value.owner.store == old.store_id
            taken = await new.load("s1", take_over=True)
            owner = await new.owner("s1")
            assert owner is not None and (owner.store, owner.token) == (new.store_id, 2)
            assert owner.took_over is not None and owner.took_over.store == old.store_id
            one_turn(session, 2)  # the old holder goes on, unaware
            with pytest.raises(LeaseLost, match="token 1") as lost:
                await old.flush(session)
            assert lost.value.token == 1
            by = lost.value.by  # who took over
            assert by is not None and (by.store, by.token) == (new.store_id, 2)
            assert old.pending(session) == len(session.events) - committed  # nothing dropped
            assert len(session.events) > committed
            assert await new.backend.stored_length("s1") == committed  # nothing written

            # The new holder continues from exactly the committed prefix.
            assert wire(taken)[:committed] == wire(session)[:committed]
            one_turn(taken, 2)
            await new.flush(taken)

            # Retrying does not sneak the old events in, and says why: the lease is gone.
            with pytest.raises(LeaseLost):
                await old.flush(session)
            assert old.pending(session) > 0
            stored = await reader.inspect("s1")
            assert wire(stored)[: len(taken.events)] == wire(taken)
        finally:
            await reader.close()
            await new.close()
            with pytest.raises(LeaseLost):
                await old.close()  # its final flush is still refused

    run(go())


def test_an_expired_lease_cannot_write_even_if_nobody_took_over(pg: PgSchema) -> None:
    async def go() -> None:
        store = SessionStore(pg.backend(), write_window_s=3600)
        try:
            session = await store.create(id="s1")
            one_turn(session)
            await store.flush(session)
            committed = len(session.events)
            expire_now(pg, "s1")
            assert await store.owner("s1") is None  # expired: nobody owns it now
            session.append("turn/start", {"turn": 2})
            with pytest.raises(LeaseLost) as lost:
                await store.flush(session)
            assert lost.value.token == 1 and lost.value.by is None  # expired, not taken over
            assert store.pending(session) == 1
            assert await store.backend.stored_length("s1") == committed  # nothing written
            with pytest.raises(LeaseLost):
                await store.flush(session)  # the expired lease stays lost
            # To go on, the writer drops what it could not write and loads again (a new token).
            unwritten = await store.discard(session)
            assert [event.type for event in unwritten] == ["turn/start"]
            again = await store.load("s1")
            owner = await store.owner("s1")
            assert owner is not None and (owner.store, owner.token) == (store.store_id, 2)
            assert wire(again)[:committed] == wire(session)[:committed]
            one_turn(again, 2)
            await store.flush(again)
            assert store.pending(again) == 0
            assert await store.backend.stored_length("s1") == len(again.events)
        finally:
            await store.close()

    run(go())


def test_a_background_write_refused_for_lease_loss_keeps_its_batch(pg: PgSchema) -> None:
    async def go() -> None:
        store = SessionStore(pg.backend(), write_window_s=0.01)
        thief = SessionStore(pg.backend(), write_window_s=3600)
        try:
            session = await store.create(id="s1")
            one_turn(session)
            await store.flush(session)
            committed = len(session.events)
            await thief.load("s1", take_over=True)  # nothing to repair: it writes nothing yet
            session.append("turn/start", {"turn": 2})
            for _ in range(200):  # the window expires and the background write is refused
                await asyncio.sleep(0.01)
                if await thief.backend.stored_length("s1") == committed and store.pending(session) == 1:
                    writer = store._live_of(session).writer
                    if isinstance(writer.last_error, LeaseLost):
                        break
            assert isinstance(store._live_of(session).writer.last_error, LeaseLost)
            assert store.pending(session) == 1
            assert await thief.backend.stored_length("s1") == committed
        finally:
            await thief.close()
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
            assert held.value.holder == "holder"
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
        other = SessionStore(pg.backend())
        try:
            session = await store.create(id="s1")
            one_turn(session)
            await store.flush(session)
            owner = await other.owner("s1")
            assert owner is not None and (owner.store, owner.token) == (store.store_id, 1)
            await store.close()
            assert await other.owner("s1") is None
            await other.load("s1")  # no wait, no takeover
            owner = await other.owner("s1")
            assert owner is not None and (owner.store, owner.token) == (other.store_id, 2)
            assert owner.took_over is None
        finally:
            await other.close()
            await store.close()

    run(go())


def test_load_repairs_only_after_take_over(pg: PgSchema) -> None:
    async def go() -> None:
        writer = SessionStore(pg.backend())
        loader = SessionStore(pg.backend())
        try:
            session = await writer.create(id="s1")
            one_turn(session, close=False)  # its turn is open: the writer is still at work
            await writer.flush(session)
            stored = len(session.events)

            with pytest.raises(SessionInUse) as in_use:
                await loader.load("s1")  # its repair closers would write under another's lease
            assert in_use.value.owner is not None and in_use.value.owner.store == writer.store_id
            assert await loader.backend.stored_length("s1") == stored  # nothing written

            loaded = await loader.load("s1", take_over=True)
            assert harness.repair_closers(list(loaded.events)) == []
            assert await loader.backend.stored_length("s1") > stored  # the closers are committed
            notes = [event for event in loaded.events if event.type == "harness/repair"]
            assert len(notes) == 1
            note = loads(notes[0].encode())["data"]
            assert note["reason"] == "taken-over" and note["previousOwner"]["store"] == writer.store_id
            session.append("plugin/late", {"after": "take-over"}, ignorable=True)
            with pytest.raises(LeaseLost):
                await writer.flush(session)  # the fenced writer writes nothing more
            # Nothing of the fenced writer's: what is stored is the loaded session but its end-seed.
            assert await loader.backend.stored_length("s1") == len(loaded.events) - 1
        finally:
            await loader.close()
            with pytest.raises(LeaseLost):
                await writer.close()

    run(go())


def test_stores_without_tails_say_so() -> None:
    async def go() -> None:
        store = SessionStore(MemoryBackend())
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

"""Real worker processes sharing one session through PostgreSQL leases.

* Two processes race for one session, round after round: each takes the lease,
  loads the session, writes a few flushed batches, checks that the lease row still
  names it with its token (nobody held it meanwhile), and releases. The final log
  has every seq once, each holding's events contiguous, and holdings ordered by
  token.
* A holder is killed with SIGKILL mid-run; the other process waits for its lease to
  expire (no takeover), loads the exact committed prefix and continues it.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import signal
from collections import defaultdict
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from psycopg import sql

from harness.errors import LeaseHeld, SessionNotFound
from harness.events.json import loads
from harness.session.session import Session
from harness.stores.postgres import PostgresBackend
from harness.stores.store import SessionStore
from tests.stores.pg import PgSchema, app_name, fresh_schema, run, server_dsn

server_dsn()  # skip (or, under CI=true, fail) this module when no server answers

SID = "shared"
ROUNDS = 4
BATCHES = 3
BATCH = 4


@pytest.fixture
def pg() -> Iterator[PgSchema]:
    yield from fresh_schema()


def backend(dsn: str, schema: str) -> PostgresBackend:
    return PostgresBackend(dsn, schema=schema, application_name=app_name(schema), min_size=1)


async def acquire_patiently(store: SessionStore, owner: str, ttl: float, refused: list[int]) -> int:
    """Acquire without takeover, retrying while another holds it (counting the refusals)."""
    while True:
        try:
            return (await store.acquire(SID, owner, ttl)).token
        except LeaseHeld:
            refused.append(1)
            await asyncio.sleep(0.005)


async def open_session(store: SessionStore) -> Session:
    try:
        return await store.load(SID)
    except SessionNotFound:
        return await store.create(id=SID)


def write_batch(session: Session, **tags: Any) -> None:
    for index in range(BATCH):
        session.append("plugin/race", {**tags, "i": index}, ignorable=True)


def lease_row(dsn: str, schema: str) -> tuple[str, int]:
    """The lease row as the database has it now (read on a connection of its own)."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute(
            sql.SQL("SELECT owner, token FROM {}.leases WHERE session_id = %s").format(
                sql.Identifier(schema)
            ),
            (SID,),
        ).fetchone()
    assert row is not None
    return str(row[0]), int(str(row[1]))


async def racer(dsn: str, schema: str, worker: int, results: Any, start: Any) -> None:
    store = SessionStore(backend(dsn, schema), write_window_s=3600)
    owner = f"worker-{worker}"
    refused: list[int] = []
    await store.list()  # connected and migrated before the race starts
    start.wait()
    try:
        for round_ in range(ROUNDS):
            token = await acquire_patiently(store, owner, 10.0, refused)
            session = await open_session(store)
            first = len(session.events)
            for batch in range(BATCHES):
                write_batch(session, worker=worker, round=round_, batch=batch, token=token)
                await store.flush(session)
                await asyncio.sleep(0.002)  # let the other process try to get in
            last = len(session.events) - 1
            assert lease_row(dsn, schema) == (owner, token), "someone else held the lease meanwhile"
            await store.release(session)
            await store.release_lease(SID)
            results.put((worker, round_, token, first, last))
            await asyncio.sleep(0.01)  # give the other worker its chance
        results.put(("refused", worker, len(refused)))
    finally:
        await store.close()


def racer_process(dsn: str, schema: str, worker: int, results: Any, start: Any) -> None:
    asyncio.run(racer(dsn, schema, worker, results, start))


def test_two_processes_race_for_one_session(pg: PgSchema) -> None:
    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    start = context.Barrier(2)
    processes = [
        context.Process(target=racer_process, args=(pg.dsn, pg.name, w, results, start)) for w in range(2)
    ]
    for process in processes:
        process.start()
    for process in processes:
        process.join(120)
        assert process.exitcode == 0
    reports = [results.get(timeout=5) for _ in range(2 * ROUNDS + 2)]
    holdings = [r for r in reports if r[0] != "refused"]
    assert sum(r[2] for r in reports if r[0] == "refused") > 0  # they did contend for the lease

    store = SessionStore(pg.backend())
    restored = run(store.inspect(SID))
    run(store.close())
    events = [loads(e.encode()) for e in restored.events]
    assert [e["seq"] for e in events] == list(range(len(events)))  # every seq exactly once
    blocks: dict[tuple[int, int], list[int]] = defaultdict(list)
    for event in events:
        if event["type"] == "plugin/race":
            blocks[(event["data"]["worker"], event["data"]["round"])].append(event["seq"])
    assert set(blocks) == {(w, r) for w in range(2) for r in range(ROUNDS)}
    by_token = sorted(holdings, key=lambda h: h[2])
    assert [h[2] for h in by_token] == list(range(1, 2 * ROUNDS + 1))  # one token per holding
    previous_end = -1
    for worker, round_, token, first, last in by_token:
        seqs = blocks[(worker, round_)]
        assert seqs == list(range(seqs[0], seqs[0] + BATCHES * BATCH)), "a holding's events interleaved"
        assert first <= seqs[0] and seqs[-1] == last
        assert seqs[0] > previous_end, "holdings overlap or are out of token order"
        assert {events[s]["data"]["token"] for s in seqs} == {token}
        previous_end = seqs[-1]


# -- kill -9 the holder -------------------------------------------------------------------------------

TTL = 1.0


async def doomed(dsn: str, schema: str, report: Any) -> None:
    store = SessionStore(backend(dsn, schema), write_window_s=3600)
    token = (await store.acquire(SID, "doomed", TTL)).token
    session = await store.create(id=SID)
    report.put(("holding", token))
    batch = 0
    while True:
        write_batch(session, worker=0, round=0, batch=batch, token=token)
        await store.flush(session)
        report.put(("flushed", len(session.events)))
        batch += 1
        await asyncio.sleep(0.003)


def doomed_process(dsn: str, schema: str, report: Any) -> None:
    asyncio.run(doomed(dsn, schema, report))


async def heir(dsn: str, schema: str, report: Any) -> None:
    store = SessionStore(backend(dsn, schema), write_window_s=3600)
    refused: list[int] = []
    try:
        await store.list()  # connected
        report.put(("ready",))
        token = await acquire_patiently(store, "heir", 10.0, refused)
        session = await store.load(SID)
        report.put(
            ("loaded", token, session.first_live_seq, [e.encode() for e in session.events], len(refused))
        )
        write_batch(session, worker=1, round=0, batch=0, token=token)
        await store.flush(session)
        report.put(("done", len(session.events)))
    finally:
        await store.close()


def heir_process(dsn: str, schema: str, report: Any) -> None:
    asyncio.run(heir(dsn, schema, report))


def test_the_heir_takes_over_a_killed_holder_after_expiry(pg: PgSchema) -> None:
    context = multiprocessing.get_context("spawn")
    report = context.Queue()
    holder = context.Process(target=doomed_process, args=(pg.dsn, pg.name, report))
    holder.start()
    try:
        kind, holder_token = report.get(timeout=60)
        assert kind == "holding"
        flushed = 0
        while flushed < 3 * BATCH:
            kind, flushed = report.get(timeout=30)
            assert kind == "flushed"
        heir_proc = context.Process(target=heir_process, args=(pg.dsn, pg.name, report))
        heir_proc.start()
        while (message := report.get(timeout=60))[0] == "flushed":
            flushed = message[1]
        assert message == ("ready",)
        os.kill(holder.pid or 0, signal.SIGKILL)
        holder.join(10)
        while (message := report.get(timeout=60))[0] == "flushed":  # reported before it died
            flushed = message[1]
        kind, heir_token, prefix, seen, refused = message
        assert kind == "loaded"
        assert refused > 0  # the lease was still live at first: the heir had to wait for expiry
        heir_proc.join(60)
        assert heir_proc.exitcode == 0
        assert report.get(timeout=5)[0] == "done"
    finally:
        if holder.is_alive():
            holder.kill()
    assert heir_token == holder_token + 1  # it waited for the expiry: no takeover, one new token
    assert prefix >= flushed  # every flushed event is in the prefix it continued from
    store = SessionStore(pg.backend())
    restored = run(store.inspect(SID))
    run(store.close())
    stored = [e.encode() for e in restored.events]
    assert stored[: len(seen)] == seen  # the heir went on from exactly what was committed
    events = [loads(line) for line in stored]
    holder_seqs = [e["seq"] for e in events if e["type"] == "plugin/race" and e["data"]["worker"] == 0]
    heir_seqs = [e["seq"] for e in events if e["type"] == "plugin/race" and e["data"]["worker"] == 1]
    assert holder_seqs == list(range(prefix)) and len(holder_seqs) % BATCH == 0  # whole batches only
    assert events[prefix]["type"] == "session/end-seed"  # no closers needed: no turn was open
    assert heir_seqs == list(range(prefix + 1, prefix + 1 + BATCH))

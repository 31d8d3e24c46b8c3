"""Real worker processes sharing one session through PostgreSQL leases.

``SessionStore.create``/``load`` make a store the session's owner by taking its fenced lease
(the owner record as the lease row's owner, as JSON); ``release`` gives it up.

* Two processes race for one session, round after round: each loads it (or creates it
  when none is stored), retrying while the other owns it (``SessionInUse``), writes a
  few flushed batches, checks that the lease row still names its store with its token
  (nobody held it meanwhile), and releases. The final log has every seq once, each
  holding's events contiguous, holdings ordered by token, and every token the lease
  table handed out accounted for (a holding, or a claim given back because the
  session was not stored yet or was stored meanwhile).
* A holder is killed with SIGKILL mid-run; the other process retries its ``load``
  while refused (no takeover) until the dead holder's lease expires, then loads the
  exact committed prefix and continues it with the next token.
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

from harness.errors import SessionExists, SessionInUse, SessionNotFound, SessionOwner
from harness.events.json import loads
from harness.session.session import Session
from harness.stores.postgres import PostgresBackend
from harness.stores.postgres.codec import from_db_text
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


def backend(dsn: str, schema: str, **options: Any) -> PostgresBackend:
    return PostgresBackend(dsn, schema=schema, application_name=app_name(schema), min_size=1, **options)


async def open_patiently(store: SessionStore, refused: list[int], given_back: list[int]) -> Session:
    """Load the session, or create it when none is stored, retrying while another store owns
    it (counting the refusals). A claim that succeeded but found no session to load, or found
    one stored meanwhile to create, is given back (counted: its token is spent)."""
    while True:
        try:
            try:
                return await store.load(SID)
            except SessionNotFound:
                given_back.append(1)
            try:
                return await store.create(id=SID)
            except SessionExists:
                given_back.append(1)  # the other created it between our load and create
        except SessionInUse:
            refused.append(1)
            await asyncio.sleep(0.005)


async def owner_token(store: SessionStore) -> int:
    """The fencing token of the lease this store holds on the session (it must own it)."""
    owner = await store.owner(SID)
    assert owner is not None and owner.store == store.store_id, owner
    assert owner.token is not None
    return owner.token


def write_batch(session: Session, **tags: Any) -> None:
    for index in range(BATCH):
        session.append("plugin/race", {**tags, "i": index}, ignorable=True)


def lease_row(dsn: str, schema: str) -> tuple[SessionOwner | None, int]:
    """The lease row as the database has it now (read on a connection of its own): the owner
    record its owner text holds (``None`` when it is not one) and its token. The owner column,
    like every text key column, holds its string's JSON body (``codec.db_text``)."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute(
            sql.SQL("SELECT owner, token FROM {}.leases WHERE session_id = %s").format(
                sql.Identifier(schema)
            ),
            (SID,),
        ).fetchone()
    assert row is not None
    try:
        record = SessionOwner.from_json(loads(from_db_text(str(row[0]))))
    except ValueError:
        record = None
    return record, int(str(row[1]))


async def racer(dsn: str, schema: str, worker: int, results: Any, start: Any) -> None:
    store = SessionStore(backend(dsn, schema), write_window_s=3600)
    refused: list[int] = []
    given_back: list[int] = []
    await store.list()  # connected and migrated before the race starts
    start.wait()
    try:
        for round_ in range(ROUNDS):
            session = await open_patiently(store, refused, given_back)
            token = await owner_token(store)
            first = len(session.events)
            for batch in range(BATCHES):
                write_batch(session, worker=worker, round=round_, batch=batch, token=token)
                await store.flush(session)
                await asyncio.sleep(0.002)  # let the other process try to get in
            last = len(session.events) - 1
            record, row_token = lease_row(dsn, schema)
            mine = record is not None and record.store == store.store_id and row_token == token
            assert mine, "someone else held the lease meanwhile"
            await store.release(session)
            results.put((worker, round_, token, first, last))
            await asyncio.sleep(0.01)  # give the other worker its chance
        results.put(("refused", worker, len(refused), len(given_back)))
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
    counts = [r for r in reports if r[0] == "refused"]
    assert sum(r[2] for r in counts) > 0  # they did contend for the lease
    given_back = sum(r[3] for r in counts)

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
    tokens = [h[2] for h in by_token]
    assert len(set(tokens)) == 2 * ROUNDS  # one token per holding
    # Every token handed out is a holding's or a claim given back: nobody else held the lease.
    assert tokens[-1] == 2 * ROUNDS + given_back
    # Only before the first holding is stored: each worker's load can find nothing once, and
    # one of them (not both) can then lose the create to the other.
    assert given_back <= 3
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
    store = SessionStore(backend(dsn, schema, lease_ttl_s=TTL), write_window_s=3600)
    session = await store.create(id=SID)
    token = await owner_token(store)
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
        while True:  # no takeover: refused while the holder's lease is live
            try:
                session = await store.load(SID)
                break
            except SessionInUse:
                refused.append(1)
                await asyncio.sleep(0.005)
        token = await owner_token(store)
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

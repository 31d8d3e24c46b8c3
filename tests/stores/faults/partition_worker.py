"""One worker of the PostgreSQL partition test (``test_postgres_partitions.py``), run in its own
network namespace.

``python -m tests.stores.faults.partition_worker NAME DSN SCHEMA TTL SESSION JOURNAL UNTIL``
owns ``SESSION`` whenever it can (waiting while another writer holds it) and writes turns of
numbered work events into it, a flush every few events, until the wall-clock time ``UNTIL``;
then it closes its store. Every work event carries the worker's name, the fencing token of
its ownership (``tok``) and a number counting from 1 in that ownership (``n``), so a checker
can tell whose each stored event is. It journals, one JSON line per fact, with the time:
``own`` (the token), ``attempt`` (a flush of events up to ``n`` starts), ``flushed``,
``unknown`` (``OutcomeUnknown``), ``failed`` (any other write error), ``lost`` (``LeaseLost``),
``discarded`` (the numbers ``discard`` returned as never written), ``renew-failed``,
``lease-gone`` (the lease became unusable here), ``closed``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import random
import sys
import time
from typing import Any

import harness
from harness.errors import (
    LeaseLost,
    OutcomeUnknown,
    SessionConflict,
    SessionInUse,
    SessionNotFound,
    StorageError,
)
from harness.session.session import Session
from harness.stores.postgres import PostgresBackend
from harness.stores.store import SessionStore

WORK = "plugin/work"  # an ignorable event type: the payload of a turn


class Journal:
    def __init__(self, path: str, name: str) -> None:
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        self._name = name

    def write(self, **record: Any) -> None:
        record["t"] = time.time()
        record["w"] = self._name
        os.write(self._fd, (json.dumps(record) + "\n").encode())


class _Renewals(logging.Handler):
    """Journals each failed lease renewal (the backend logs it as a warning)."""

    def __init__(self, journal: Journal) -> None:
        super().__init__(logging.WARNING)
        self._journal = journal

    def emit(self, record: logging.LogRecord) -> None:
        text = record.getMessage()
        if "lease renewal failed" in text:
            self._journal.write(e="renew-failed", msg=text[:300])
        elif "treated as lost" in text:
            self._journal.write(e="renew-gave-up", msg=text[:300])


def work_numbers(events: list[Any]) -> list[int]:
    return [int(event.data["n"]) for event in events if event.type == WORK]


async def own(store: SessionStore, sid: str, journal: Journal, until: float) -> Session | None:
    """Load (or create) the session once no one else holds it; ``None`` at the deadline."""
    while time.time() < until:
        try:
            try:
                return await store.load(sid)
            except SessionNotFound:
                return await store.create(id=sid)
        except SessionInUse:
            journal.write(e="refused")
        except StorageError as error:
            journal.write(e="load-failed", err=f"{type(error).__name__}: {error}"[:300])
        await asyncio.sleep(0.2)
    return None


async def discard(store: SessionStore, session: Session, journal: Journal, token: int, until: float) -> None:
    """Give the session up, learning which of its events were never written."""
    while True:
        try:
            unwritten = await store.discard(session)
        except OutcomeUnknown as error:
            journal.write(e="discard-unknown", tok=token, err=str(error)[:300])
            if time.time() > until + 60:
                raise
            await asyncio.sleep(0.5)
            continue
        journal.write(e="discarded", tok=token, ns=work_numbers(list(unwritten)))
        return


def open_turn(session: Session, name: str) -> int:
    turn = sum(1 for event in session.events if event.type == "turn/start") + 1
    session.append("turn/start", {"turn": turn})
    session.append("step/start", {"turn": turn, "step": 1})
    session.append("user/message", harness.user_message(f"work of {name}"), surface_op="append")
    return turn


def close_turn(session: Session, turn: int) -> None:
    session.append("step/end", {"turn": turn, "step": 1})
    session.append("turn/end", {"turn": turn, "reason": {"kind": "completed"}})


async def ownership(
    store: SessionStore,
    backend: PostgresBackend,
    session: Session,
    name: str,
    journal: Journal,
    rng: random.Random,
    until: float,
) -> bool:
    """Write into the owned session until the deadline (True) or until fenced off (False)."""
    sid = session.id
    lease = backend.lease(sid)
    assert lease is not None
    token = lease.token
    journal.write(e="own", tok=token, length=len(session.events))

    async def watch() -> None:  # the moment the lease stops being usable here, to 20 ms
        while backend.lease(sid) is not None:
            await asyncio.sleep(0.02)
        journal.write(e="lease-gone", tok=token)

    watcher = asyncio.create_task(watch())
    try:
        return await write(store, session, name, journal, rng, until, token)
    finally:
        watcher.cancel()


async def write(
    store: SessionStore,
    session: Session,
    name: str,
    journal: Journal,
    rng: random.Random,
    until: float,
    token: int,
) -> bool:
    n = 0
    batches = 0
    turn = open_turn(session, name)
    while time.time() < until:
        for _ in range(rng.randint(1, 3)):
            n += 1
            session.append(WORK, {"w": name, "tok": token, "n": n}, ignorable=True)
        journal.write(e="attempt", tok=token, upto=n)
        started = time.monotonic()
        try:
            await store.flush(session)
        except OutcomeUnknown as error:
            journal.write(
                e="unknown", tok=token, upto=n, dur=time.monotonic() - started, err=str(error)[:300]
            )
        except (LeaseLost, SessionConflict) as error:
            stored = getattr(error, "stored", None)
            journal.write(
                e="lost",
                tok=token,
                upto=n,
                dur=time.monotonic() - started,
                stored=stored,
                err=str(error)[:300],
            )
            await discard(store, session, journal, token, until)
            return False
        except StorageError as error:
            journal.write(
                e="failed",
                tok=token,
                upto=n,
                dur=time.monotonic() - started,
                kind=type(error).__name__,
                err=str(error)[:300],
            )
        else:
            journal.write(e="flushed", tok=token, upto=n, dur=time.monotonic() - started)
            batches += 1
            if batches % 15 == 0:
                close_turn(session, turn)
                turn = open_turn(session, name)
        await asyncio.sleep(0.03 + rng.random() * 0.04)
    close_turn(session, turn)
    return True


async def main(
    name: str, dsn: str, schema: str, ttl: float, sid: str, journal_path: str, until: float
) -> None:
    journal = Journal(journal_path, name)
    logging.getLogger("harness.stores.postgres").addHandler(_Renewals(journal))
    rng = random.Random(f"{name}-{os.getpid()}")
    backend = PostgresBackend(dsn, schema=schema, lease_ttl_s=ttl, application_name=f"partition-{name}")
    store = SessionStore(backend, write_window_s=3600)
    try:
        while time.time() < until:
            session = await own(store, sid, journal, until)
            if session is None:
                break
            if await ownership(store, backend, session, name, journal, rng, until):
                break
    finally:
        started = time.monotonic()
        try:
            await store.close()
        except StorageError as error:
            journal.write(e="closed", ok=False, dur=time.monotonic() - started, err=str(error)[:300])
        else:
            journal.write(e="closed", ok=True, dur=time.monotonic() - started)


if __name__ == "__main__":
    name, dsn, schema, ttl, sid, journal_path, until = sys.argv[1:8]
    asyncio.run(main(name, dsn, schema, float(ttl), sid, journal_path, float(until)))

"""PostgreSQL outages on a private cluster (``private_pg``; the shared server is never touched):
the server restarted during a writer loop, its backends terminated again and again, and
stopped for longer than the pool's timeout. While it is down every failure is a typed
harness error (``PersistenceFailed`` for a flush, ``StorageError`` for a read); once it is
back a flush succeeds; and the stored log is exactly the events appended, none lost, none
duplicated.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Awaitable, Callable

import psycopg
import pytest

import harness
from harness.errors import PersistenceFailed, StorageError
from harness.events.json import loads
from harness.stores.backend import read_whole
from harness.stores.postgres import PostgresBackend
from harness.stores.store import SessionStore
from harness.testing.samples import run
from tests.stores.faults.counts import COUNTS
from tests.stores.faults.private_pg import PrivateServer
from tests.stores.faults.writer import append_turn, turn_events

APP = "harness-faults-outage"


@pytest.fixture
def up(private_pg: PrivateServer) -> PrivateServer:
    """The private server (``conftest``), running (a test may leave it stopped)."""
    if not private_pg.running():
        private_pg.start()
    return private_pg


def backend(server: PrivateServer, schema: str) -> PostgresBackend:
    return PostgresBackend(
        server.dsn, schema=schema, min_size=1, timeout=1.0, connect_timeout=1.0, application_name=APP
    )


async def flush_until_ok(store: SessionStore, session: harness.Session, attempts: int = 60) -> int:
    """Flush until it returns (the server is back); the number of failed attempts."""
    failed = 0
    for _ in range(attempts):
        try:
            await store.flush(session)
            return failed
        except StorageError:
            failed += 1
            await asyncio.sleep(0.2)
    raise AssertionError(f"no flush succeeded in {attempts} attempts after the outage")


async def writer_loop(
    store: SessionStore, session: harness.Session, turns: int, errors: list[BaseException], first: int = 1
) -> None:
    """Append and flush ``turns`` turns; collect every failure (each must be typed)."""
    for turn in range(first, first + turns):
        append_turn(session, turn)
        try:
            await store.flush(session)
        except Exception as error:  # typed or not: checked by the caller
            errors.append(error)
        await asyncio.sleep(0.01)


async def check_stored(server: PrivateServer, schema: str, session: harness.Session) -> None:
    fresh = backend(server, schema)
    try:
        stored = (await read_whole(fresh, session.id)).events
    finally:
        await fresh.close()
    assert stored == [loads(event.encode()) for event in session.events], "lost or duplicated events"


def typed(errors: list[BaseException]) -> None:
    COUNTS["postgres typed errors while down"] += len(errors)
    untyped = [error for error in errors if not isinstance(error, PersistenceFailed)]
    assert not untyped, f"untyped or non-write errors from flush: {untyped!r}"
    for error in errors:  # no psycopg error escapes, and the message is one line
        assert not isinstance(error, psycopg.Error)
        assert "\n" not in str(error), str(error)


async def started(store: SessionStore, session_id: str) -> harness.Session:
    """A new session with its first turn durable."""
    session = await store.create(id=session_id)
    append_turn(session, 0)
    await store.flush(session)
    return session


async def during(action: Callable[[], None], work: Awaitable[None]) -> None:
    """Run the blocking ``action`` in a thread while ``work`` runs."""
    await asyncio.gather(asyncio.to_thread(action), work)


def test_restart_during_a_writer_loop(up: PrivateServer) -> None:
    schema = "faults_restart"

    async def scenario() -> None:
        errors: list[BaseException] = []
        async with SessionStore(backend(up, schema), write_window_s=3600) as store:
            session = await started(store, "restart")

            def restart() -> None:
                time.sleep(0.05)
                up.restart()
                COUNTS["postgres restarts"] += 1

            await during(restart, writer_loop(store, session, 20, errors))
            await flush_until_ok(store, session)
            typed(errors)
            await check_stored(up, schema, session)

    run(scenario())


def test_backends_terminated_again_and_again(up: PrivateServer, caplog: pytest.LogCaptureFixture) -> None:
    schema = "faults_terminate"
    stop = threading.Event()
    terminated = [0]

    def terminator() -> None:
        with psycopg.connect(up.dsn, autocommit=True) as admin:
            while not stop.is_set():
                row = admin.execute(
                    "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                    "WHERE application_name = %s",
                    (APP,),
                ).fetchone()
                terminated[0] += int(row[0]) if row else 0
                time.sleep(0.005)

    async def scenario() -> None:
        errors: list[BaseException] = []
        async with SessionStore(backend(up, schema), write_window_s=3600) as store:
            session = await started(store, "terminate")
            killer = threading.Thread(target=terminator, daemon=True)
            killer.start()
            try:
                await writer_loop(store, session, 30, errors)
            finally:
                stop.set()
                killer.join()
            await flush_until_ok(store, session)
            typed(errors)
            await check_stored(up, schema, session)
        assert terminated[0] > 0, "no backend was terminated"
        COUNTS["postgres backends terminated"] += terminated[0]
        # psycopg_pool's warnings come through harness's logger, one line each.
        pool = [record for record in caplog.records if "connection pool:" in record.getMessage()]
        assert pool, "the pool logged nothing about the broken connections"
        assert {record.name for record in pool} == {"harness.stores.postgres"}
        # (pytest hangs its capture handler on non-propagating loggers too: psycopg.pool's own
        # records show up in caplog, but they no longer propagate to the root's handlers.)
        pool_logger = logging.getLogger("psycopg.pool")
        assert not pool_logger.propagate
        ours = [r.getMessage() for r in caplog.records if r.name == "harness.stores.postgres"]
        assert not [message for message in ours if "\n" in message]

    run(scenario())


def test_stopped_longer_than_the_pool_timeout(up: PrivateServer) -> None:
    schema = "faults_stopped"

    async def scenario() -> None:
        errors: list[BaseException] = []
        async with SessionStore(backend(up, schema), write_window_s=3600) as store:
            session = await started(store, "stopped")
            up.stop()
            COUNTS["postgres stops"] += 1
            for turn in (1, 2):  # each flush waits out the 1 s pool timeout, then fails
                append_turn(session, turn)
                with pytest.raises(PersistenceFailed) as failed:
                    await store.flush(session)
                errors.append(failed.value)
            with pytest.raises(StorageError):
                await store.backend.stored_length(session.id)
            assert store.pending(session) == sum(len(turn_events(t)) for t in (1, 2))
            up.start()
            await flush_until_ok(store, session)
            typed(errors)
            await check_stored(up, schema, session)

    run(scenario())

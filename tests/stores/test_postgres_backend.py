"""``PostgresBackend``: the rows it writes, idempotent retries, atomicity, schema versions,
corruption, errors — against the real server, one fresh schema per test.

What every backend does (round trip, seq checks, ids, list, repair, two writers) is the store
contract, run on this server by ``test_contract_postgres.py``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import make_conninfo

import harness.stores.postgres.migrations as migrations
from harness.errors import (
    CorruptSession,
    PersistenceFailed,
    SessionConflict,
    StorageError,
    UnsupportedFormat,
)
from harness.events.event import Event
from harness.events.json import loads
from harness.stores.backend import Backend, StoredLog, StreamRejected, read_whole
from harness.stores.leases import LeasingBackend, TailingBackend
from harness.stores.postgres import SCHEMA_VERSION, PostgresBackend
from harness.stores.postgres.codec import encode_header
from harness.stores.store import SessionStore
from harness.stores.summary import summarize
from harness.testing.samples import check_listed_oldest_first, corruptions, full_header, write_samples
from tests.stores.pg import PgSchema, chunk, fresh_schema, header, run, sample_events, server_dsn, wire

server_dsn()  # skip (or, under CI=true, fail) this module when no server answers


@pytest.fixture
def pg() -> Iterator[PgSchema]:
    yield from fresh_schema()


# -- helpers ------------------------------------------------------------------------------------------


def rows(pg: PgSchema, session_id: str = "s1") -> list[tuple[int, str]]:
    with pg.connect() as conn:
        return conn.execute(
            "SELECT e.seq, e.line FROM events AS e JOIN sessions AS s ON s.key = e.session_key "
            "WHERE s.id = %s ORDER BY e.seq",
            (session_id,),
        ).fetchall()  # type: ignore[return-value]


def execute(pg: PgSchema, statement: str, *params: Any) -> None:
    with pg.connect() as conn:
        conn.execute(statement.encode(), params or None)


async def seeded(pg: PgSchema, count: int = 4) -> None:
    async with pg.opened() as backend:
        await backend.create(header())
        await backend.append("s1", [chunk(seq) for seq in range(count)])


async def read(pg: PgSchema, session_id: str = "s1") -> StoredLog:
    async with pg.opened() as backend:
        return await backend.read_exact(session_id)


# -- protocols, rows, reads ----------------------------------------------------------------------------


def test_is_a_backend_with_leases_and_tail(pg: PgSchema) -> None:
    backend = pg.backend()
    assert isinstance(backend, Backend)
    assert isinstance(backend, LeasingBackend)
    assert isinstance(backend, TailingBackend)


def test_the_stored_text_is_the_wire_line(pg: PgSchema) -> None:
    """The lossless round trip itself is in the store contract; here, the rows it leaves."""

    async def go() -> StoredLog:
        async with pg.opened() as backend:
            return await write_samples(backend)

    events = sample_events()
    log = run(go())
    assert log.torn is None and log.location is None
    # the stored text is exactly the wire line, byte for byte (no jsonb normalisation)
    assert [line.encode() for _, line in rows(pg)] == [event.encode() for event in events]
    assert [seq for seq, _ in rows(pg)] == list(range(len(events)))


def test_read_streams_the_same_events_as_the_exact_read(pg: PgSchema) -> None:
    events = sample_events()

    async def go() -> None:
        async with pg.opened() as backend:
            await backend.create(header())
            await backend.append("s1", events)
            log = await backend.read("s1")
            assert log.stream is not None and log.events == []
            assert log.header == (await backend.read_exact("s1")).header
            assert list(log.stream.events()) == wire(events)
            assert log.stream.progress.done == log.stream.progress.total == len(events)
            assert (await read_whole(backend, "s1")).events == wire(events)

    run(go())


def test_a_corrupt_row_met_by_the_stream_is_reported_by_the_exact_read(pg: PgSchema) -> None:
    run(seeded(pg, 4))
    execute(pg, "UPDATE events SET line = '[1]' WHERE seq = 2")

    async def go() -> None:
        async with pg.opened() as backend:
            log = await backend.read("s1")
            assert log.stream is not None
            with pytest.raises(StreamRejected):
                list(log.stream.events())
            with pytest.raises(CorruptSession, match="row at seq 2 does not hold"):
                await SessionStore(backend).inspect("s1")

    run(go())


def test_header_fields_are_stored_in_the_session_row(pg: PgSchema) -> None:
    full = full_header()  # that it reads back is in the store contract

    async def go() -> None:
        async with pg.opened() as backend:
            await backend.create(full)
            await backend.append("child", [chunk(0)])

    run(go())
    with pg.connect() as conn:
        row = conn.execute(
            "SELECT created_at, cwd, header, length FROM sessions WHERE id = 'child'"
        ).fetchone()
    assert row is not None
    assert row[:2] == (5, "/a") and row[3] == 1
    assert loads(str(row[2])) == {"type": "session", **full.to_json(line=True)}


# -- create, ids --------------------------------------------------------------------------------------


def test_create_alone_and_an_empty_batch_write_no_row(pg: PgSchema) -> None:
    async def go() -> None:
        async with pg.opened() as backend:
            await backend.create(header())
            await backend.append("s1", [])
            assert await backend.stored_length("s1") == 0

    run(go())
    with pg.connect() as conn:
        assert conn.execute("SELECT count(*) FROM sessions").fetchone() == (0,)


def test_a_different_header_under_the_same_id_is_a_conflict(pg: PgSchema) -> None:
    async def go() -> None:
        async with pg.opened() as first, pg.opened() as second:
            await first.create(header(created_at=1))
            await second.create(header(created_at=2))
            await first.append("s1", [chunk(0)])
            with pytest.raises(SessionConflict, match="another writer"):
                await second.append("s1", [chunk(0)])  # same event, but not the same session
            assert (await first.read_exact("s1")).header.created_at == 1

    run(go())


# -- idempotent retries, atomicity ----------------------------------------------------------------------


def test_reappending_identical_stored_events_is_idempotent(pg: PgSchema) -> None:
    async def go() -> None:
        async with pg.opened() as backend:
            await backend.create(header())
            await backend.append("s1", [chunk(0), chunk(1), chunk(2)])
            await backend.append("s1", [chunk(0), chunk(1), chunk(2)])  # the whole batch again
            await backend.append("s1", [chunk(2)])  # its stored tail again
            assert await backend.stored_length("s1") == 3
            await backend.append("s1", [chunk(1), chunk(2), chunk(3), chunk(4)])  # retried + new
            assert await backend.stored_length("s1") == 5

    run(go())
    assert [line for _, line in rows(pg)] == [chunk(n).encode().decode() for n in range(5)]


def test_different_bytes_at_a_stored_seq_are_a_conflict(pg: PgSchema) -> None:
    async def go() -> None:
        async with pg.opened() as backend:
            await backend.create(header())
            await backend.append("s1", [chunk(0), chunk(1), chunk(2)])
            with pytest.raises(SessionConflict, match=r"stored event at seq 2 differs") as info:
                await backend.append("s1", [chunk(1), chunk(2, "other"), chunk(3)])
            assert (info.value.expected, info.value.got) == (3, 1)
            # the same JSON value with another key order is different bytes: a conflict too
            reordered = Event(
                "assistant/chunk",
                2,
                1002,
                b'{"step":1,"turn":1,"chunk":{"type":"text-delta","index":0,"text":"hi"}}',
            )
            with pytest.raises(SessionConflict, match="differs"):
                await backend.append("s1", [reordered, chunk(3)])
            assert await backend.stored_length("s1") == 3

    run(go())


def test_a_first_append_retried_after_a_lost_reply_succeeds(pg: PgSchema) -> None:
    # The reply of the first (publishing) append is lost: the backend still holds the
    # reservation; the retry of the same batch must succeed and write nothing twice.
    async def go() -> None:
        async with pg.opened() as backend, pg.opened() as sneaky:
            await backend.create(header())
            await sneaky.create(header())
            await sneaky.append("s1", [chunk(0), chunk(1)])  # "our" commit whose reply was lost
            await backend.append("s1", [chunk(0), chunk(1), chunk(2)])
            assert await backend.stored_length("s1") == 3

    run(go())
    assert [seq for seq, _ in rows(pg)] == [0, 1, 2]


def test_a_failing_batch_is_all_or_nothing(pg: PgSchema) -> None:
    # A real server-side failure in the middle of the batch: the insert of seq 3 aborts.
    run(seeded(pg, 2))
    execute(
        pg,
        "CREATE FUNCTION fail_seq_3() RETURNS trigger LANGUAGE plpgsql AS "
        "$$ BEGIN IF NEW.seq = 3 THEN RAISE EXCEPTION 'injected failure'; END IF; RETURN NEW; END $$",
    )
    execute(
        pg, "CREATE TRIGGER fail_seq_3 BEFORE INSERT ON events FOR EACH ROW EXECUTE FUNCTION fail_seq_3()"
    )

    async def go() -> None:
        async with pg.opened() as backend:
            with pytest.raises(PersistenceFailed, match="injected failure") as info:
                await backend.append("s1", [chunk(2), chunk(3), chunk(4)])
            assert isinstance(info.value.__cause__, psycopg.Error)
            assert await backend.stored_length("s1") == 2
            assert [seq for seq, _ in rows(pg)] == [0, 1]  # seq 2 was inserted, then rolled back
            execute(pg, "DROP TRIGGER fail_seq_3 ON events")
            await backend.append("s1", [chunk(2), chunk(3), chunk(4)])
            assert [e["seq"] for e in (await backend.read_exact("s1")).events] == [0, 1, 2, 3, 4]

    run(go())


def test_a_failing_first_append_leaves_no_session(pg: PgSchema) -> None:
    async def go() -> None:
        async with pg.opened() as backend:
            await backend.create(header())
            await backend.stored_length("s1")  # the schema exists now
            execute(
                pg,
                "CREATE FUNCTION fail_seq_1() RETURNS trigger LANGUAGE plpgsql AS "
                "$$ BEGIN IF NEW.seq = 1 THEN RAISE EXCEPTION 'injected'; END IF; RETURN NEW; END $$",
            )
            execute(
                pg,
                "CREATE TRIGGER fail_seq_1 BEFORE INSERT ON events "
                "FOR EACH ROW EXECUTE FUNCTION fail_seq_1()",
            )
            with pytest.raises(PersistenceFailed):
                await backend.append("s1", [chunk(0), chunk(1)])
            with pg.connect() as conn:
                assert conn.execute("SELECT count(*) FROM sessions").fetchone() == (0,)
                assert conn.execute("SELECT count(*) FROM events").fetchone() == (0,)
            execute(pg, "DROP TRIGGER fail_seq_1 ON events")
            assert await backend.stored_length("s1") == 0  # still reserved
            await backend.append("s1", [chunk(0), chunk(1)])
            assert len((await backend.read_exact("s1")).events) == 2

    run(go())


# -- list -----------------------------------------------------------------------------------------------


def test_list_is_oldest_first_and_names_the_database(pg: PgSchema) -> None:
    async def go() -> None:
        async with pg.opened() as backend:
            await check_listed_oldest_first(backend, backend.location)

    run(go())


def test_an_idempotent_retry_leaves_the_listing_as_it_was(pg: PgSchema) -> None:
    """That ``list`` agrees with ``summarize`` is in the store contract; retries are ours."""
    batch = [Event.create("session/title", 1, 40, {"title": "b"}), chunk(2, time=35)]

    async def go() -> None:
        async with pg.opened() as backend:
            await backend.create(header("two", cwd=None, created_at=20))
            await backend.append("two", [Event.create("session/title", 0, 30, {"title": "a"})])
            await backend.append("two", batch)
            before = await backend.list()
            await backend.append("two", batch)  # an idempotent retry changes nothing
            assert await backend.list() == before
            (two,) = before
            assert (two.event_count, two.last_activity, two.title) == (3, 35, "b")
            log = await backend.read_exact("two")
            assert two == summarize(log.header, log.events, location=backend.location)

    run(go())


def test_list_shows_an_unreadable_header_as_damaged(pg: PgSchema) -> None:
    run(seeded(pg))
    execute(pg, "UPDATE sessions SET header = '{'")

    async def go() -> list[Any]:
        async with pg.opened() as backend:
            return await backend.list()

    (damaged,) = run(go())  # listed with the reason, never dropped
    assert (damaged.id, damaged.event_count, damaged.cwd) == ("s1", 4, "/work/project")
    assert damaged.problem is not None and "not a JSON object" in damaged.problem


# -- corruption --------------------------------------------------------------------------------------------


CORRUPTIONS = corruptions(
    "%s",
    ("DELETE FROM events WHERE seq = 1", (), "4 events recorded but 3 rows stored"),
    ("UPDATE sessions SET length = 5", (), "5 events recorded but 4 rows stored"),
)


@pytest.mark.parametrize(("statement", "params", "match"), CORRUPTIONS)
def test_corrupt_rows_are_refused(
    pg: PgSchema,
    statement: str,
    params: tuple[Any, ...],
    match: str,
) -> None:
    run(seeded(pg))
    execute(pg, statement, *params)
    with pytest.raises(CorruptSession, match=match) as info:
        run(read(pg))
    assert "'s1'" in str(info.value)
    assert info.value.path is not None and pg.name in info.value.path


@pytest.mark.parametrize(("version", "word"), [(1, "newer"), (42, "newer"), (-1, "older")])
def test_foreign_header_version_is_unsupported(pg: PgSchema, version: int, word: str) -> None:
    run(seeded(pg))
    execute(pg, "UPDATE sessions SET header = %s", f'{{"type":"session","version":{version},"id":"s1"}}')
    with pytest.raises(UnsupportedFormat, match=word):
        run(read(pg))


# -- schema versions ------------------------------------------------------------------------------------


def schema_versions(pg: PgSchema) -> list[int]:
    with pg.connect() as conn:
        return [int(str(v)) for (v,) in conn.execute("SELECT version FROM schema_version ORDER BY version")]


def test_first_use_creates_the_schema_at_the_current_version(pg: PgSchema) -> None:
    run(seeded(pg, 1))
    assert schema_versions(pg) == list(range(1, SCHEMA_VERSION + 1)) == [1, 2]
    with pg.connect() as conn:
        tables = {
            name
            for (name,) in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = %s", (pg.name,))
        }
    assert tables == {"schema_version", "sessions", "events", "leases"}


def test_a_newer_schema_version_is_refused_untouched(pg: PgSchema) -> None:
    run(seeded(pg, 1))
    execute(pg, "INSERT INTO schema_version (version) VALUES (%s)", SCHEMA_VERSION + 1)
    before = rows(pg)
    with pytest.raises(UnsupportedFormat, match="newer"):
        run(read(pg))
    with pytest.raises(UnsupportedFormat, match="newer"):
        run(pg.backend().append("s1", [chunk(1)]))
    assert rows(pg) == before
    assert schema_versions(pg) == [1, 2, 3]


def test_a_schema_that_is_not_ours_is_refused(pg: PgSchema) -> None:
    with psycopg.connect(pg.dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(pg.name)))
        conn.execute(sql.SQL("CREATE TABLE {}.sessions (x int)").format(sql.Identifier(pg.name)))
    with pytest.raises(UnsupportedFormat, match="not a harness session schema"):
        run(read(pg))


def test_an_older_schema_is_migrated_in_order(pg: PgSchema, monkeypatch: pytest.MonkeyPatch) -> None:
    run(seeded(pg, 2))
    calls: list[int] = []

    def to_3(s: sql.Identifier) -> list[sql.Composed]:
        calls.append(3)
        return [sql.SQL("ALTER TABLE {}.sessions ADD COLUMN note text").format(s)]

    def to_4(s: sql.Identifier) -> list[sql.Composed]:
        calls.append(4)
        return [sql.SQL("UPDATE {}.sessions SET note = 'migrated'").format(s)]

    monkeypatch.setattr(migrations, "MIGRATIONS", [*migrations.MIGRATIONS, to_3, to_4])
    log = run(read(pg))
    assert calls == [3, 4]
    assert schema_versions(pg) == [1, 2, 3, 4]
    assert len(log.events) == 2
    with pg.connect() as conn:
        assert conn.execute("SELECT note FROM sessions").fetchone() == ("migrated",)
    run(read(pg))  # already current: nothing runs again
    assert calls == [3, 4]


def test_a_version_1_schema_is_migrated_and_its_sessions_go_on(
    pg: PgSchema, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Version 2 replaces the append function: sessions written under version 1 read the same
    and take appends with the new one."""
    async def version_1() -> None:
        conn = await psycopg.AsyncConnection.connect(pg.dsn, autocommit=True)
        async with conn:
            await migrations.ensure_schema(conn, pg.name)

    with monkeypatch.context() as patch:
        patch.setattr(migrations, "MIGRATIONS", migrations.MIGRATIONS[:1])
        run(version_1())
    assert schema_versions(pg) == [1]
    with pg.connect() as conn:  # two events appended as version 1's function takes them
        lines = "\n".join(chunk(seq).encode().decode() for seq in range(2))
        conn.execute(
            "SELECT append_events('s1', %s, 1, NULL, 0, %s, 1, NULL, NULL, 'c')",
            (encode_header(header()), lines),
        )
    before = rows(pg)
    log = run(read(pg))
    assert schema_versions(pg) == [1, 2]
    assert rows(pg) == before and len(log.events) == 2
    run(pg.backend().append("s1", [chunk(2)]))
    assert len(run(read(pg)).events) == 3
    with pg.connect() as conn:
        arguments = [
            str(a)
            for (a,) in conn.execute(
                "SELECT pg_get_function_identity_arguments(p.oid) FROM pg_proc AS p "
                "JOIN pg_namespace AS n ON n.oid = p.pronamespace "
                "WHERE n.nspname = %s AND p.proname = 'append_events'",
                (pg.name,),
            )
        ]
    assert len(arguments) == 1 and arguments[0].endswith("p_retry boolean"), arguments


def test_a_failed_migration_rolls_back(pg: PgSchema, monkeypatch: pytest.MonkeyPatch) -> None:
    run(seeded(pg, 1))

    def broken(s: sql.Identifier) -> list[sql.Composed]:
        return [
            sql.SQL("ALTER TABLE {}.sessions ADD COLUMN note text").format(s),
            sql.SQL("SELECT * FROM {}.no_such_table").format(s),
        ]

    monkeypatch.setattr(migrations, "MIGRATIONS", [*migrations.MIGRATIONS, broken])
    with pytest.raises(PersistenceFailed, match="no_such_table"):
        run(read(pg))
    assert schema_versions(pg) == [1, 2]
    with pg.connect() as conn:
        columns = [
            c
            for (c,) in conn.execute(
                "SELECT column_name FROM information_schema.columns "
                "WHERE table_schema = %s AND table_name = 'sessions'",
                (pg.name,),
            )
        ]
    assert "note" not in columns


def test_backends_opening_a_fresh_schema_together_migrate_it_once(pg: PgSchema) -> None:
    async def go() -> None:
        backends = [pg.backend(min_size=1) for _ in range(6)]
        try:
            await asyncio.gather(*(b.create(header(f"s{n}")) for n, b in enumerate(backends)))
            await asyncio.gather(*(b.append(f"s{n}", [chunk(0)]) for n, b in enumerate(backends)))
        finally:
            for backend in backends:
                await backend.close()

    run(go())
    assert schema_versions(pg) == [1, 2]


# -- errors, connections, lifecycle -------------------------------------------------------------------------


def test_an_unreachable_server_is_a_storage_error_without_the_password() -> None:
    dsn = "postgresql://someone:s3cr%40t-pw@127.0.0.1:1/test"
    backend = PostgresBackend(dsn, connect_timeout=2)
    assert "s3cr" not in repr(backend) and "s3cr" not in backend.location
    with pytest.raises(StorageError) as info:
        run(backend.stored_length("s1"))
    text = str(info.value)
    assert "someone@127.0.0.1:1/test" in text
    assert "s3cr" not in text and "s3cr@t" not in text
    assert isinstance(info.value.__cause__, psycopg.Error)
    with pytest.raises(PersistenceFailed) as failed:  # a write: nothing was written
        run(backend.append("s1", [chunk(0)]))
    assert "s3cr" not in str(failed.value)


def test_the_password_never_appears_in_errors(pg: PgSchema) -> None:
    # The test server trusts every user; a password in the DSN is sent but never echoed.
    dsn = make_conninfo(pg.dsn, password="hunter2-secret")
    backend = PostgresBackend(dsn, schema=pg.name, application_name=f"harness-test-{pg.name}")
    assert "hunter2" not in repr(backend)

    async def go() -> None:
        try:
            await backend.create(header())
            await backend.append("s1", [chunk(0)])
            with pytest.raises(SessionConflict) as conflict:
                await backend.append("s1", [chunk(5)])
            assert "hunter2" not in str(conflict.value)
            with pytest.raises(CorruptSession) as corrupt:
                execute(pg, "UPDATE events SET line = 'x'")
                await backend.read_exact("s1")
            assert "hunter2" not in str(corrupt.value)
        finally:
            await backend.close()

    run(go())


def test_a_killed_pool_connection_is_replaced_and_the_call_retried(pg: PgSchema) -> None:
    async def go() -> None:
        async with pg.opened() as backend:
            await backend.create(header())
            await backend.append("s1", [chunk(0)])
            execute(
                pg,
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = %s",
                f"harness-test-{pg.name}",
            )
            await backend.append("s1", [chunk(1)])  # on a fresh connection, transparently
            assert [e["seq"] for e in (await backend.read_exact("s1")).events] == [0, 1]

    run(go())


def test_closed_backend_refuses_calls(pg: PgSchema) -> None:
    async def go() -> None:
        backend = pg.backend()
        await backend.close()
        await backend.close()  # idempotent
        with pytest.raises(StorageError):
            await backend.list()
        with pytest.raises(StorageError):
            await backend.append("s1", [chunk(0)])
        with pytest.raises(StorageError):
            backend.tail("s1")

    run(go())


def test_commits_are_durable_even_where_the_server_says_otherwise(pg: PgSchema) -> None:
    dsn = make_conninfo(pg.dsn, options="-c synchronous_commit=off")
    backend = PostgresBackend(dsn, schema=pg.name, application_name=f"harness-test-{pg.name}")

    async def setting(conn: psycopg.AsyncConnection[Any]) -> object:
        row = await (await conn.execute("SHOW synchronous_commit")).fetchone()
        return None if row is None else row[0]

    async def go() -> list[object]:
        try:
            await backend.create(header())
            await backend.append("s1", [chunk(0)])
            return [await backend._run(setting, "test", None, False) for _ in range(3)]
        finally:
            await backend.close()

    assert run(go()) == ["on", "on", "on"]

"""``PostgresBackend``: round trip, seq checks, idempotent retries, atomicity, racing writers,
schema versions, corruption, errors — against the real server, one fresh schema per test."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import msgspec
import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import make_conninfo

import harness.stores.postgres.migrations as migrations
from harness.errors import (
    CorruptSession,
    InvalidSessionId,
    PersistenceFailed,
    SessionConflict,
    SessionExists,
    SessionNotFound,
    StorageError,
    UnsupportedFormat,
)
from harness.events.event import Event
from harness.events.json import loads
from harness.session.header import SessionHeader
from harness.stores.backend import Backend, StoredLog, StreamRejected, read_whole
from harness.stores.leases import LeasingBackend, TailingBackend
from harness.stores.postgres import SCHEMA_VERSION, PostgresBackend
from harness.stores.store import SessionStore
from harness.stores.summary import summarize
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
    backend = pg.backend()
    try:
        await backend.create(header())
        await backend.append("s1", [chunk(seq) for seq in range(count)])
    finally:
        await backend.close()


async def read(pg: PgSchema, session_id: str = "s1") -> StoredLog:
    backend = pg.backend()
    try:
        return await backend.read_exact(session_id)
    finally:
        await backend.close()


# -- protocols and round trip -------------------------------------------------------------------------


def test_is_a_backend_with_leases_and_tail(pg: PgSchema) -> None:
    backend = pg.backend()
    assert isinstance(backend, Backend)
    assert isinstance(backend, LeasingBackend)
    assert isinstance(backend, TailingBackend)


def test_round_trip_is_lossless_and_stores_the_wire_line(pg: PgSchema) -> None:
    events = sample_events()

    async def go() -> StoredLog:
        backend = pg.backend()
        try:
            await backend.create(header())
            await backend.append("s1", events[:2])
            await backend.append("s1", events[2:])
            assert await backend.stored_length("s1") == len(events)
            return await backend.read_exact("s1")
        finally:
            await backend.close()

    log = run(go())
    assert log.torn is None and log.location is None
    assert log.header == SessionHeader(**{**msgspec.structs.asdict(header()), "delegation_depth": 0})
    assert log.events == wire(events)
    for got, event in zip(log.events, events, strict=True):
        assert list(got) == list(loads(event.encode()))  # key order
        assert list(got["data"] or {}) == list(event.to_json()["data"] or {})
    # the stored text is exactly the wire line, byte for byte (no jsonb normalisation)
    assert [line.encode() for _, line in rows(pg)] == [event.encode() for event in events]
    assert [seq for seq, _ in rows(pg)] == list(range(len(events)))


def test_read_streams_the_same_events_as_the_exact_read(pg: PgSchema) -> None:
    events = sample_events()

    async def go() -> None:
        backend = pg.backend()
        try:
            await backend.create(header())
            await backend.append("s1", events)
            log = await backend.read("s1")
            assert log.stream is not None and log.events == []
            assert log.header == (await backend.read_exact("s1")).header
            assert list(log.stream.events()) == wire(events)
            assert log.stream.progress.done == log.stream.progress.total == len(events)
            assert (await read_whole(backend, "s1")).events == wire(events)
        finally:
            await backend.close()

    run(go())


def test_a_corrupt_row_met_by_the_stream_is_reported_by_the_exact_read(pg: PgSchema) -> None:
    run(seeded(pg, 4))
    execute(pg, "UPDATE events SET line = '[1]' WHERE seq = 2")

    async def go() -> None:
        backend = pg.backend()
        try:
            log = await backend.read("s1")
            assert log.stream is not None
            with pytest.raises(StreamRejected):
                list(log.stream.events())
            with pytest.raises(CorruptSession, match="row at seq 2 does not hold"):
                await SessionStore(backend).inspect("s1")
        finally:
            await backend.close()

    run(go())


def test_data_survives_a_new_backend_and_reads_are_fresh(pg: PgSchema) -> None:
    run(seeded(pg, 2))
    first = run(read(pg))
    first.events[0]["data"]["turn"] = 99
    again = run(read(pg))
    assert again.events == wire([chunk(0), chunk(1)])
    assert again.header.to_json() == {**header().to_json(), "delegationDepth": 0}


def test_header_fields_are_stored(pg: PgSchema) -> None:
    full = SessionHeader(
        id="child",
        created_at=5,
        cwd="/a",
        parent_session="parent",
        seed_length=3,
        origin="subagent",
        delegation_depth=2,
        agent_preset="minimal",
    )

    async def go() -> StoredLog:
        backend = pg.backend()
        try:
            await backend.create(full)
            await backend.append("child", [chunk(0)])
            return await backend.read_exact("child")
        finally:
            await backend.close()

    assert run(go()).header == full
    with pg.connect() as conn:
        row = conn.execute(
            "SELECT created_at, cwd, header, length FROM sessions WHERE id = 'child'"
        ).fetchone()
    assert row is not None
    assert row[:2] == (5, "/a") and row[3] == 1
    assert loads(str(row[2])) == {"type": "session", **full.to_json(line=True)}


# -- create, ids --------------------------------------------------------------------------------------


def test_create_alone_writes_nothing_and_is_not_listed(pg: PgSchema) -> None:
    async def go() -> None:
        backend = pg.backend()
        try:
            await backend.create(header())
            assert await backend.stored_length("s1") == 0
            assert await backend.list() == []
            with pytest.raises(SessionNotFound, match="never appended"):
                await backend.read_exact("s1")
            await backend.append("s1", [])  # empty batch: a no-op
            assert await backend.stored_length("s1") == 0
        finally:
            await backend.close()

    run(go())
    with pg.connect() as conn:
        assert conn.execute("SELECT count(*) FROM sessions").fetchone() == (0,)


def test_create_known_id_is_refused_here_and_by_another_backend(pg: PgSchema) -> None:
    async def go() -> None:
        backend, other = pg.backend(), pg.backend()
        try:
            await backend.create(header())
            with pytest.raises(SessionExists):
                await backend.create(header())
            await backend.append("s1", [chunk(0)])
            with pytest.raises(SessionExists):
                await backend.create(header())
            with pytest.raises(SessionExists):
                await other.create(header())
        finally:
            await backend.close()
            await other.close()

    run(go())


def test_unknown_and_invalid_ids(pg: PgSchema) -> None:
    async def go() -> None:
        backend = pg.backend()
        try:
            with pytest.raises(SessionNotFound):
                await backend.read_exact("nope")
            with pytest.raises(SessionNotFound):
                await backend.stored_length("nope")
            with pytest.raises(SessionNotFound):
                await backend.append("nope", [chunk(0)])
            with pytest.raises(SessionNotFound):
                await backend.append("nope", [])
            for bad in ("", "a\x00b"):
                with pytest.raises(InvalidSessionId):
                    await backend.read_exact(bad)
                with pytest.raises(InvalidSessionId):
                    await backend.append(bad, [chunk(0)])
        finally:
            await backend.close()

    run(go())


def test_sessions_are_isolated_whatever_their_ids(pg: PgSchema) -> None:
    ids = ["a", "b/c", "..", "~x", "开发", "\ud800lone", " spaced ", 'q"uote', "back\\slash", "\\ud800"]
    ids += ["a'; DROP TABLE events; --", "tab\there", "é"]

    async def go() -> None:
        backend = pg.backend()
        try:
            for n, session_id in enumerate(ids):
                await backend.create(header(session_id, created_at=n))
            for seq in range(3):
                for n, session_id in enumerate(ids):
                    if seq <= n % 3:
                        await backend.append(session_id, [chunk(seq, f"{session_id}:{seq}")])
            for n, session_id in enumerate(ids):
                log = await backend.read_exact(session_id)
                assert log.header.id == session_id
                assert [e["data"]["chunk"]["text"] for e in log.events] == [
                    f"{session_id}:{seq}" for seq in range(n % 3 + 1)
                ]
                assert await backend.stored_length(session_id) == n % 3 + 1
            listed = await backend.list()
            assert [info.id for info in listed] == ids
            assert [info.event_count for info in listed] == [n % 3 + 1 for n in range(len(ids))]
        finally:
            await backend.close()

    run(go())


def test_lost_reservation_conflicts_once(pg: PgSchema) -> None:
    async def go() -> None:
        first, second = pg.backend(), pg.backend()
        try:
            await first.create(header())
            await second.create(header())
            await first.append("s1", [chunk(0)])
            with pytest.raises(SessionConflict, match="seq mismatch") as info:
                await second.append("s1", [chunk(0, "mine")])
            assert (info.value.expected, info.value.got) == (1, 0)
            assert await second.stored_length("s1") == 1
            await second.append("s1", [chunk(1)])
            assert [e["data"]["chunk"]["text"] for e in (await first.read_exact("s1")).events] == ["hi", "hi"]
        finally:
            await first.close()
            await second.close()

    run(go())


def test_a_different_header_under_the_same_id_is_a_conflict(pg: PgSchema) -> None:
    async def go() -> None:
        first, second = pg.backend(), pg.backend()
        try:
            await first.create(header(created_at=1))
            await second.create(header(created_at=2))
            await first.append("s1", [chunk(0)])
            with pytest.raises(SessionConflict, match="another writer"):
                await second.append("s1", [chunk(0)])  # same event, but not the same session
            assert (await first.read_exact("s1")).header.created_at == 1
        finally:
            await first.close()
            await second.close()

    run(go())


# -- seq checks, idempotent retries, atomicity ----------------------------------------------------------


def test_wrong_first_seq_conflicts_without_writing(pg: PgSchema) -> None:
    async def go() -> None:
        backend = pg.backend()
        try:
            await backend.create(header())
            with pytest.raises(
                SessionConflict, match=r"seq mismatch .* expected 0 at index 0, got 1"
            ) as info:
                await backend.append("s1", [chunk(1)])
            assert (info.value.expected, info.value.got) == (0, 1)
            await backend.append("s1", [chunk(0), chunk(1), chunk(2)])
            with pytest.raises(SessionConflict, match="expected 3 at index 0, got 4") as info:
                await backend.append("s1", [chunk(4)])  # a gap
            assert (info.value.expected, info.value.got) == (3, 4)
            with pytest.raises(SessionConflict, match="expected 3 at index 0, got 0"):
                await backend.append("s1", [chunk(0)])  # stored, but ends before the stored end
            with pytest.raises(SessionConflict, match="expected 5 at index 2, got 6"):
                await backend.append("s1", [chunk(3), chunk(4), chunk(6)])  # a gap inside the batch
            with pytest.raises(SessionConflict, match="expected 4 at index 1, got 3"):
                await backend.append("s1", [chunk(3), chunk(3)])
            assert await backend.stored_length("s1") == 3
        finally:
            await backend.close()

    run(go())
    assert [seq for seq, _ in rows(pg)] == [0, 1, 2]


def test_reappending_identical_stored_events_is_idempotent(pg: PgSchema) -> None:
    async def go() -> None:
        backend = pg.backend()
        try:
            await backend.create(header())
            await backend.append("s1", [chunk(0), chunk(1), chunk(2)])
            await backend.append("s1", [chunk(0), chunk(1), chunk(2)])  # the whole batch again
            await backend.append("s1", [chunk(2)])  # its stored tail again
            assert await backend.stored_length("s1") == 3
            await backend.append("s1", [chunk(1), chunk(2), chunk(3), chunk(4)])  # retried + new
            assert await backend.stored_length("s1") == 5
        finally:
            await backend.close()

    run(go())
    assert [line for _, line in rows(pg)] == [chunk(n).encode().decode() for n in range(5)]


def test_different_bytes_at_a_stored_seq_are_a_conflict(pg: PgSchema) -> None:
    async def go() -> None:
        backend = pg.backend()
        try:
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
        finally:
            await backend.close()

    run(go())


def test_a_first_append_retried_after_a_lost_reply_succeeds(pg: PgSchema) -> None:
    # The reply of the first (publishing) append is lost: the backend still holds the
    # reservation; the retry of the same batch must succeed and write nothing twice.
    async def go() -> None:
        backend, sneaky = pg.backend(), pg.backend()
        try:
            await backend.create(header())
            await sneaky.create(header())
            await sneaky.append("s1", [chunk(0), chunk(1)])  # "our" commit whose reply was lost
            await backend.append("s1", [chunk(0), chunk(1), chunk(2)])
            assert await backend.stored_length("s1") == 3
        finally:
            await backend.close()
            await sneaky.close()

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
        backend = pg.backend()
        try:
            with pytest.raises(PersistenceFailed, match="injected failure") as info:
                await backend.append("s1", [chunk(2), chunk(3), chunk(4)])
            assert isinstance(info.value.__cause__, psycopg.Error)
            assert await backend.stored_length("s1") == 2
            assert [seq for seq, _ in rows(pg)] == [0, 1]  # seq 2 was inserted, then rolled back
            execute(pg, "DROP TRIGGER fail_seq_3 ON events")
            await backend.append("s1", [chunk(2), chunk(3), chunk(4)])
            assert [e["seq"] for e in (await backend.read_exact("s1")).events] == [0, 1, 2, 3, 4]
        finally:
            await backend.close()

    run(go())


def test_a_failing_first_append_leaves_no_session(pg: PgSchema) -> None:
    async def go() -> None:
        backend = pg.backend()
        try:
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
        finally:
            await backend.close()

    run(go())


def test_repair_appends_closers(pg: PgSchema) -> None:
    async def go() -> None:
        backend = pg.backend()
        try:
            await backend.create(header())
            await backend.append("s1", [Event.create("turn/start", 0, 5, {"turn": 1})])
            log = await backend.read_exact("s1")
            closers = [Event.create("turn/end", 1, 5, {"turn": 1, "reason": {"kind": "interrupted"}})]
            await backend.repair("s1", log, closers)
            assert (await backend.read_exact("s1")).events == [*log.events, *wire(closers)]
        finally:
            await backend.close()

    run(go())


def test_two_backends_racing_for_the_same_seq(pg: PgSchema) -> None:
    async def go() -> None:
        a, b = pg.backend(), pg.backend()
        try:
            await a.create(header("race"))
            await a.append("race", [chunk(0)])
            for round_ in range(10):
                n = 1 + round_ * 2
                results = await asyncio.gather(
                    a.append("race", [chunk(n, "a"), chunk(n + 1, "a")]),
                    b.append("race", [chunk(n, "b"), chunk(n + 1, "b")]),
                    return_exceptions=True,
                )
                assert sum(r is None for r in results) == 1, results
                assert sum(isinstance(r, SessionConflict) for r in results) == 1, results
            events = (await b.read_exact("race")).events
            assert [e["seq"] for e in events] == list(range(21))
            for n in range(1, 21, 2):  # each pair was written by one backend
                assert events[n]["data"]["chunk"]["text"] == events[n + 1]["data"]["chunk"]["text"]
        finally:
            await a.close()
            await b.close()

    run(go())


# -- list -----------------------------------------------------------------------------------------------


def test_list_fields_match_summarize(pg: PgSchema) -> None:
    async def go() -> None:
        backend = pg.backend()
        try:
            await backend.create(header("one", cwd="/w/one", created_at=10))
            await backend.create(header("two", cwd=None, created_at=20))
            await backend.create(header("never", created_at=5))
            await backend.append("one", sample_events())
            await backend.append("one", [Event.create("session/title", 6, 2000, {"title": 7})])  # not a str
            await backend.append("one", [Event.create("plugin/x", 7, 1500, {})])
            await backend.append("two", [Event.create("session/title", 0, 30, {"title": "a"})])
            await backend.append(
                "two", [Event.create("session/title", 1, 40, {"title": "b"}), chunk(2, time=35)]
            )
            await backend.append(
                "two", [Event.create("session/title", 1, 40, {"title": "b"}), chunk(2, time=35)]
            )  # an idempotent retry changes nothing
            listed = await backend.list()
            assert [info.id for info in listed] == ["one", "two"]
            one, two = listed
            assert (one.created_at, one.cwd, one.event_count, one.last_activity, one.title) == (
                10,
                "/w/one",
                8,
                1500,
                "first",
            )
            assert (two.created_at, two.cwd, two.event_count, two.last_activity, two.title) == (
                20,
                None,
                3,
                35,
                "b",
            )
            for info in listed:
                log = await backend.read_exact(info.id)
                assert info == summarize(log.header, log.events, location=backend.location)
        finally:
            await backend.close()

    run(go())


def test_list_skips_an_unreadable_header(pg: PgSchema) -> None:
    run(seeded(pg))
    execute(pg, "UPDATE sessions SET header = '{'")

    async def go() -> list[Any]:
        backend = pg.backend()
        try:
            return await backend.list()
        finally:
            await backend.close()

    assert run(go()) == []


# -- corruption --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("statement", "params", "match"),
    [
        (
            "UPDATE events SET line = %s WHERE seq = 2",
            ('{"type":"assistant/chunk","seq":2,',),
            "unparsable committed event at seq 2",
        ),
        ("UPDATE events SET line = %s WHERE seq = 1", ("NaN",), "unparsable committed event at seq 1"),
        ("UPDATE events SET line = %s WHERE seq = 1", ("[1]",), "row at seq 1 does not hold"),
        (
            "UPDATE events SET line = replace(line, '\"seq\":3', '\"seq\":7') WHERE seq = 3",
            (),
            "row at seq 3",
        ),
        ("DELETE FROM events WHERE seq = 1", (), "4 events recorded but 3 rows stored"),
        ("UPDATE sessions SET length = 5", (), "5 events recorded but 4 rows stored"),
        ("UPDATE sessions SET header = %s", ("{",), "header is not a JSON object"),
        (
            "UPDATE sessions SET header = %s",
            ('{"type":"session","version":0,"id":"s1"}',),
            "invalid session header",
        ),
        (
            "UPDATE sessions SET header = %s",
            ('{"type":"x","version":0,"id":"s1","createdAt":1}',),
            "not tagged",
        ),
        (
            "UPDATE sessions SET header = %s",
            ('{"type":"session","version":0,"id":"other","createdAt":1,"delegationDepth":0}',),
            "does not match session id",
        ),
    ],
)
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
    assert schema_versions(pg) == list(range(1, SCHEMA_VERSION + 1)) == [1]
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
    assert schema_versions(pg) == [1, 2]


def test_a_schema_that_is_not_ours_is_refused(pg: PgSchema) -> None:
    with psycopg.connect(pg.dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(pg.name)))
        conn.execute(sql.SQL("CREATE TABLE {}.sessions (x int)").format(sql.Identifier(pg.name)))
    with pytest.raises(UnsupportedFormat, match="not a harness session schema"):
        run(read(pg))


def test_an_older_schema_is_migrated_in_order(pg: PgSchema, monkeypatch: pytest.MonkeyPatch) -> None:
    run(seeded(pg, 2))
    calls: list[int] = []

    def to_2(s: sql.Identifier) -> list[sql.Composed]:
        calls.append(2)
        return [sql.SQL("ALTER TABLE {}.sessions ADD COLUMN note text").format(s)]

    def to_3(s: sql.Identifier) -> list[sql.Composed]:
        calls.append(3)
        return [sql.SQL("UPDATE {}.sessions SET note = 'migrated'").format(s)]

    monkeypatch.setattr(migrations, "MIGRATIONS", [*migrations.MIGRATIONS, to_2, to_3])
    log = run(read(pg))
    assert calls == [2, 3]
    assert schema_versions(pg) == [1, 2, 3]
    assert len(log.events) == 2
    with pg.connect() as conn:
        assert conn.execute("SELECT note FROM sessions").fetchone() == ("migrated",)
    run(read(pg))  # already current: nothing runs again
    assert calls == [2, 3]


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
    assert schema_versions(pg) == [1]
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
    assert schema_versions(pg) == [1]


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
        backend = pg.backend()
        try:
            await backend.create(header())
            await backend.append("s1", [chunk(0)])
            execute(
                pg,
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = %s",
                f"harness-test-{pg.name}",
            )
            await backend.append("s1", [chunk(1)])  # on a fresh connection, transparently
            assert [e["seq"] for e in (await backend.read_exact("s1")).events] == [0, 1]
        finally:
            await backend.close()

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


def test_backend_works_across_event_loops(pg: PgSchema) -> None:
    backend = pg.backend()
    run(backend.create(header()))
    run(backend.append("s1", [chunk(0)]))
    assert run(backend.stored_length("s1")) == 1
    run(backend.close())


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

"""The CLI on PostgreSQL: ``--db`` / ``HARNESS_DATABASE_URL`` select it for every command, and
``harness tail`` follows a session live."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from harness.cli import app
from harness.stores.store import SessionStore
from harness.testing.contract import one_turn
from tests.interruptible import HARNESS_CLI, ChildLines
from tests.stores.pg import PgSchema, chunk, fresh_schema, run, server_dsn

server_dsn()  # skip (or, under CI=true, fail) this module when no server answers

runner = CliRunner()


@pytest.fixture
def pg() -> Iterator[PgSchema]:
    yield from fresh_schema()


def seed(pg: PgSchema, session_id: str = "demo-1") -> int:
    async def build() -> int:
        store = SessionStore(pg.backend())
        session = await store.create(id=session_id, cwd="/home/me/proj")
        one_turn(session)
        session.append("session/title", {"title": "In [Postgres]"})
        await store.close()
        return len(session.events)

    return run(build())


def invoke(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args), env={"COLUMNS": "220", **(env or {})})
    return result.exit_code, result.stdout, result.stderr


def test_db_option_selects_postgres_for_the_read_commands(pg: PgSchema) -> None:
    count = seed(pg)
    db = ["--db", pg.dsn, "--db-schema", pg.name]
    code, out, _ = invoke(*db, "sessions", "--json")
    assert code == 0
    (info,) = json.loads(out)
    assert (info["id"], info["cwd"], info["eventCount"], info["title"]) == (
        "demo-1",
        "/home/me/proj",
        count,
        "In [Postgres]",
    )
    code, out, _ = invoke(*db, "log", "demo-1", "--json")
    assert code == 0 and [json.loads(line)["seq"] for line in out.splitlines()] == list(range(count + 1))
    code, out, _ = invoke(*db, "verify", "demo-1", "--json")
    assert code == 0 and json.loads(out)["valid"] and json.loads(out)["events"] == count
    code, out, _ = invoke(*db, "surface", "demo-1")
    assert code == 0 and "3 nodes" in out and "3 messages" in out


def test_the_environment_selects_postgres_and_the_command_line_wins(pg: PgSchema, tmp_path: Path) -> None:
    seed(pg)
    env = {"HARNESS_DATABASE_URL": pg.dsn, "HARNESS_DATABASE_SCHEMA": pg.name}
    code, out, _ = invoke("sessions", "--json", env=env)
    assert code == 0 and [i["id"] for i in json.loads(out)] == ["demo-1"]
    from harness.stores.sqlite import SqliteBackend

    run(SessionStore(SqliteBackend(str(tmp_path / "s.db"))).close())  # a read command creates none
    code, out, _ = invoke("--sqlite", str(tmp_path / "s.db"), "sessions", "--json", env=env)
    assert code == 0 and json.loads(out) == []  # an explicit --sqlite beats the environment's URL
    code, _, err = invoke("--db", pg.dsn, "--sqlite", str(tmp_path / "s.db"), "sessions")
    assert code == 2 and "--db and --sqlite" in err


def test_an_unreachable_database_is_one_line_without_the_password() -> None:
    code, out, err = invoke("--db", "postgresql://me:pa55word-x@127.0.0.1:1/test", "sessions")
    assert code == 1
    assert "me@127.0.0.1:1/test" in err and "pa55word" not in err + out
    assert "Traceback" not in err + out


def test_tail_of_an_unknown_jsonl_session_is_not_found(tmp_path: Path) -> None:
    code, _, err = invoke("--root", str(tmp_path), "tail", "x")
    assert code == 1 and "no stored session 'x'" in err


def test_tail_prints_events_as_they_commit(pg: PgSchema) -> None:
    count = seed(pg)
    env = {**os.environ, "HARNESS_DATABASE_URL": pg.dsn, "HARNESS_DATABASE_SCHEMA": pg.name}
    command = [*HARNESS_CLI, "tail", "demo-1", "--from", "2"]
    process = subprocess.Popen([*command, "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    child = ChildLines(process)

    async def more() -> None:
        async with pg.opened() as backend:
            await backend.append("demo-1", [chunk(count), chunk(count + 1, "live")])

    try:
        child.until(count - 2)  # the stored events from seq 2
        run(more())
        lines = [json.loads(line) for line in child.until(count)]
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(30)
    assert [line["seq"] for line in lines] == list(range(2, count + 2))
    assert lines[-1] == json.loads(chunk(count + 1, "live").encode())
    assert process.returncode == 130


def test_tail_shows_a_readable_line_per_event(pg: PgSchema) -> None:
    count = seed(pg)
    env = {**os.environ, "HARNESS_DATABASE_URL": pg.dsn, "HARNESS_DATABASE_SCHEMA": pg.name, "COLUMNS": "200"}
    command = [*HARNESS_CLI, "tail", "demo-1"]
    process = subprocess.Popen(
        [*command, "--from", str(count - 1)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
    )
    output = b""
    try:
        assert process.stdout is not None
        deadline = time.monotonic() + 60
        while b"\n" not in output:
            assert time.monotonic() < deadline, "tail printed nothing"
            ready, _, _ = select.select([process.stdout], [], [], 0.1)
            if ready:
                output += os.read(process.stdout.fileno(), 65536)
    finally:
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=30)
    line = output.decode().splitlines()[0]
    assert line.split()[0] == str(count - 1)
    assert "session/title" in line and "In [Postgres]" in line
    assert b"following demo-1" in err

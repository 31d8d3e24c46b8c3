"""``--store`` after the command name: every command that reads or writes the store takes it
(``harness log ID --store sqlite:s.db``, as ``harness serve --store`` always did) and it
chooses the same store the root ``--store`` does. Being the option nearest the command, it wins
over a store chosen before the command (``--store``, ``--root``, ``--sqlite``, ``--db``) or by
the environment."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from harness.cli import app
from harness.stores.jsonl.backend import JsonlBackend
from harness.stores.sqlite import SqliteBackend
from harness.stores.store import SessionStore
from harness.testing.contract import one_turn

# Commands that never open a session store (the demo makes its own, eval-compaction generates
# its sessions, mcp reads an MCP config): every other command must take --store.
STORELESS = {"demo", "eval-compaction", "mcp"}


def cli(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args), env={"COLUMNS": "200", **(env or {})})
    return result.exit_code, result.stdout, result.stderr


_MADE_AT_LOAD = re.compile(r'"time": ?\d+|"id": ?"[0-9a-f-]{36}"|\b\d{4}-\d\d-\d\d[ T][0-9:.]+')
"""What a load makes afresh each time (the repair closers' times and message ids)."""


def same_reading(output: str) -> str:
    return _MADE_AT_LOAD.sub("…", output)


@pytest.fixture
def stores(tmp_path: Path) -> dict[str, str]:
    """A JSONL root and a SQLite file, each holding session ``s1`` (one turn, titled)."""

    async def build(store: SessionStore) -> None:
        session = await store.create(id="s1", cwd="/work/project")
        one_turn(session)
        session.append("session/title", {"title": "zebra crossing"})
        await store.close()

    asyncio.run(build(SessionStore(JsonlBackend(tmp_path / "root"))))
    asyncio.run(build(SessionStore(SqliteBackend(tmp_path / "s.db"))))
    return {"jsonl": str(tmp_path / "root"), "sqlite": f"sqlite:{tmp_path / 's.db'}"}


def test_every_store_command_takes_store_after_its_name() -> None:
    commands = typer.main.get_command(app).commands  # type: ignore[attr-defined]  # a click group
    assert set(commands) >= STORELESS and len(commands) > 20
    lacking = sorted(
        name
        for name, command in commands.items()
        if name not in STORELESS and not any("--store" in getattr(p, "opts", ()) for p in command.params)
    )
    assert lacking == []


READS = [
    ("sessions", "--json"),
    ("log", "s1", "--json"),
    ("surface", "s1", "--json"),
    ("verify", "s1", "--json"),
    ("show", "s1", "1", "--json"),
    ("trace", "s1", "1", "--json"),
    ("lineage", "s1", "--json"),
    ("export", "s1", "--format", "markdown"),
    ("search", "zebra", "--json"),
]


@pytest.mark.parametrize("kind", ["jsonl", "sqlite"])
@pytest.mark.parametrize("command", READS, ids=lambda command: command[0])
def test_store_after_the_command_reads_what_the_root_option_reads(
    stores: dict[str, str], kind: str, command: tuple[str, ...]
) -> None:
    before = cli("--store", stores[kind], *command)
    after = cli(*command, "--store", stores[kind])
    assert before[0] == 0, before
    assert (after[0], same_reading(after[1]), after[2]) == (before[0], same_reading(before[1]), before[2])
    assert "task 1" in after[1] or "s1" in after[1]  # the stored session, not an empty store


def test_store_after_the_command_wins_over_one_chosen_before_it(
    stores: dict[str, str], tmp_path: Path
) -> None:
    empty = tmp_path / "empty.db"
    for before in (
        ("--store", f"sqlite:{empty}"),
        ("--root", str(tmp_path / "no-root")),
        ("--sqlite", str(empty)),
        ("--db", "postgresql://root@127.0.0.1:5432/test"),
    ):
        assert cli(*before, "sessions", "--json", "--store", "sqlite:")[0] == 2  # still checked
        code, out, err = cli(*before, "sessions", "--json", "--store", stores["jsonl"])
        assert code == 0, (before, err)
        assert [row["id"] for row in json.loads(out)] == ["s1"], before


def test_store_after_the_command_beats_the_environment(stores: dict[str, str], tmp_path: Path) -> None:
    elsewhere = {"HARNESS_STORE": str(tmp_path / "nothing-here"), "HARNESS_SQLITE": str(tmp_path / "x.db")}
    assert cli("sessions", "--json", env=elsewhere)[1].strip() == "[]"  # the environment's store alone
    code, out, err = cli("sessions", "--json", "--store", stores["sqlite"], env=elsewhere)
    assert code == 0, err
    assert [row["id"] for row in json.loads(out)] == ["s1"]


def test_store_after_the_command_keeps_the_root_options_checks(stores: dict[str, str]) -> None:
    for spec, named in (("sqlite:", "sqlite:FILE"), ("jsonl:", "jsonl:DIR")):
        code, _, err = cli("log", "s1", "--store", spec)
        assert code == 2 and f"names no location: write {named}" in err


def test_the_old_store_options_still_work_with_one_deprecation_line(stores: dict[str, str]) -> None:
    sqlite = stores["sqlite"].removeprefix("sqlite:")
    old_ways: list[tuple[list[str], dict[str, str], str]] = [
        (["--root", stores["jsonl"]], {}, "--root (--store DIR)"),
        (["--sqlite", sqlite], {}, "--sqlite (--store sqlite:FILE)"),
        ([], {"HARNESS_ROOT": stores["jsonl"]}, "HARNESS_ROOT (HARNESS_STORE=DIR)"),
        ([], {"HARNESS_SQLITE": sqlite}, "HARNESS_SQLITE (HARNESS_STORE=sqlite:FILE)"),
    ]
    for args, env, named in old_ways:
        code, out, err = cli(*args, "sessions", "--json", env=env)
        assert code == 0, err
        assert [row["id"] for row in json.loads(out)] == ["s1"], args
        warnings = [line for line in err.splitlines() if line.startswith("warning:")]
        assert warnings == [f"warning: deprecated, use --store instead: {named}"], err
    for spec in stores.values():  # the one option: no warning
        code, out, err = cli("--store", spec, "sessions", "--json")
        assert code == 0 and err == "" and [row["id"] for row in json.loads(out)] == ["s1"]
        code, out, err = cli("sessions", "--json", env={"HARNESS_STORE": spec})
        assert code == 0 and err == "" and [row["id"] for row in json.loads(out)] == ["s1"]


def test_the_help_shows_one_store_option() -> None:
    code, out, _ = cli("--help")
    assert code == 0 and "--store" in out
    for hidden in ("--root", "--sqlite", "--db-schema", "--db "):
        assert hidden not in out

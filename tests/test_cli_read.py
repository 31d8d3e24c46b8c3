"""The read commands of the CLI: sessions, log, surface, verify (each with --json)."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

import harness
from harness.cli import app
from harness.stores import read_session_file
from harness.stores.jsonl.backend import JsonlBackend
from harness.stores.store import SessionStore
from harness.testing.contract import one_turn
from tests.test_fixtures_dsh import FIXTURES

runner = CliRunner()


@pytest.fixture
def root(tmp_path: Path) -> Path:
    async def build() -> None:
        store = SessionStore(JsonlBackend(tmp_path))
        session = await store.create(id="demo-1", cwd="/home/me/proj")
        one_turn(session)
        session.append("session/title", {"title": "Count [lines]"})
        one_turn(session, 2, close=False)
        await store.close()

    asyncio.run(build())
    return tmp_path


def invoke(root: Path, *args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, ["--store", str(root), *args], env={"COLUMNS": "220"})
    return result.exit_code, result.stdout, result.stderr


def test_sessions_lists_ids_and_titles(root: Path) -> None:
    code, out, _ = invoke(root, "sessions")
    assert code == 0 and "demo-1" in out and "Count [lines]" in out
    code, out, _ = invoke(root, "sessions", "--json")
    (info,) = json.loads(out)
    assert (info["id"], info["cwd"], info["eventCount"], info["title"]) == (
        "demo-1",
        "/home/me/proj",
        14,
        "Count [lines]",
    )


def test_log_filters_by_type_and_seq_and_prints_wire_json(root: Path) -> None:
    code, out, _ = invoke(root, "log", "demo-1", "--type", "turn/", "--json")
    assert code == 0
    kinds = [json.loads(line)["type"] for line in out.splitlines()]
    assert kinds == ["turn/start", "turn/end", "turn/start", "turn/end"]  # the closer is shown too
    code, out, _ = invoke(root, "log", "demo-1", "--since", "14", "--json")
    assert [json.loads(line)["seq"] for line in out.splitlines()] == [14, 15, 16, 17]
    code, out, _ = invoke(root, "log", "demo-1")
    assert code == 0 and "error TOOL_OUTCOME_UNKNOWN" in out and "tool/result" in out


def test_surface_shows_the_derived_messages(root: Path) -> None:
    code, out, _ = invoke(root, "surface", "demo-1", "--json")
    report = json.loads(out)
    assert code == 0 and report["replaceGeneration"] == 0
    assert [m["role"] for m in report["messages"]] == ["user", "assistant", "user"] * 2
    code, out, _ = invoke(root, "surface", "demo-1")
    assert "6 messages" in out


def test_verify_by_id_reports_an_open_turn_as_valid(root: Path) -> None:
    code, out, _ = invoke(root, "verify", "demo-1", "--json")
    report = json.loads(out)
    assert code == 0 and report["valid"] and report["closers"] == 3 and report["tornTail"] is None


def test_verify_exit_codes(tmp_path: Path) -> None:
    good = tmp_path / "good.jsonl"
    shutil.copy(FIXTURES / "02-tool-call.jsonl", good)
    assert invoke(tmp_path, "verify", str(good))[0] == 0
    torn = tmp_path / "torn.jsonl"
    shutil.copy(FIXTURES / "06-torn-tail-input-DERIVED.jsonl", torn)
    code, out, _ = invoke(tmp_path, "verify", str(torn))
    assert code == 0 and "torn tail" in out
    broken = tmp_path / "broken.jsonl"
    lines = good.read_bytes().split(b"\n")
    broken.write_bytes(b"\n".join([*lines[:10], b"garbage", *lines[10:]]))
    code, _, err = invoke(tmp_path, "verify", str(broken))
    assert code == 1 and "invalid" in err and "unparsable committed event" in err
    newer = tmp_path / "newer.jsonl"
    newer.write_bytes(b'{"type":"session","version":42,"id":"x"}\n')
    code, out, _ = invoke(tmp_path, "verify", str(newer), "--json")
    assert code == 2 and "newer" in json.loads(out)["problem"]
    assert invoke(tmp_path, "verify", str(tmp_path / "missing.jsonl"))[0] == 2
    assert invoke(tmp_path, "verify", str(tmp_path))[0] == 2


def test_errors_are_one_line_without_a_traceback(root: Path) -> None:
    code, out, err = invoke(root, "log", "no-such-session")
    assert code == 1 and "no stored session" in err and "Traceback" not in out + err
    assert len(err.strip().splitlines()) <= 2


def test_the_loading_bar_draws_on_a_terminal_and_stays_silent_otherwise() -> None:
    import io

    from rich.console import Console

    from harness.cli.progress import loading_bar

    screen = io.StringIO()
    with loading_bar(Console(file=screen, force_terminal=True, width=80), "loading s1") as advance:
        advance(50, 200)
        advance(200, 200)
    assert "loading s1" in screen.getvalue()
    piped = io.StringIO()
    with loading_bar(Console(file=piped, force_terminal=False), "loading s1") as advance:
        advance(50, 200)
    assert piped.getvalue() == ""


def test_store_spec_selects_each_backend() -> None:
    from harness.cli.app import DEFAULT_ROOT
    from harness.stores.open import StoreSpec, parse_store_spec

    assert parse_store_spec("postgresql://127.0.0.1/test") == StoreSpec("postgresql", "postgresql://127.0.0.1/test")
    assert parse_store_spec("postgres://h/db") == StoreSpec("postgresql", "postgres://h/db")
    assert parse_store_spec("sqlite:/tmp/s.db") == StoreSpec("sqlite", "/tmp/s.db")
    assert parse_store_spec("jsonl:/tmp/root") == StoreSpec("jsonl", "/tmp/root")
    assert parse_store_spec("/tmp/root") == StoreSpec("jsonl", "/tmp/root")
    assert DEFAULT_ROOT.endswith("harness/sessions")


def test_store_option_routes_commands_and_refuses_a_second_choice(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from harness.cli import app

    db = tmp_path / "s.db"
    missing = CliRunner().invoke(app, ["--store", f"sqlite:{db}", "sessions", "--json"])
    assert missing.exit_code == 2 and f"no SQLite file at {db}" in missing.stderr  # a read creates none
    assert not db.exists()
    from harness.stores.sqlite import SqliteBackend

    asyncio.run(SessionStore(SqliteBackend(str(db))).close())
    listed = CliRunner().invoke(app, ["--store", f"sqlite:{db}", "sessions", "--json"])
    assert listed.exit_code == 0, listed.output
    assert json.loads(listed.stdout) == []
    both = CliRunner().invoke(app, ["--store", f"sqlite:{db}", "--root", str(tmp_path), "sessions"])
    assert both.exit_code == 2
    assert "--store and --root" in both.output


def test_verify_a_missing_file_says_the_file_is_missing(tmp_path: Path) -> None:
    gone = tmp_path / "gone" / "session.jsonl"
    code, _, err = invoke(tmp_path / "store", "verify", str(gone))
    assert code == 2 and f"no such file: {gone}" in err and "no stored session" not in err
    code, out, _ = invoke(tmp_path / "store", "verify", "typo.jsonl.zstd", "--json")
    assert code == 2 and json.loads(out)["problem"] == "no such file: typo.jsonl.zstd"
    code, _, err = invoke(tmp_path / "store", "verify", "no-such-id")  # an id stays an id
    assert code == 2 and "no stored session 'no-such-id'" in err


def test_counts_of_one_are_singular(tmp_path: Path) -> None:
    async def build() -> None:
        store = SessionStore(JsonlBackend(tmp_path))
        one = await store.create(id="one-event")
        one.append("turn/start", {"turn": 1})
        few = await store.create(id="one-message")
        few.append("turn/start", {"turn": 1})
        few.append("step/start", {"turn": 1, "step": 1})
        few.append("user/message", harness.user_message("hello"), surface_op="append")
        few.append("step/end", {"turn": 1, "step": 1})
        await store.close()

    asyncio.run(build())
    code, out, _ = invoke(tmp_path, "verify", "one-event")
    assert code == 0 and "1 committed event\n" in out and "a load adds 1 closer\n" in out
    code, out, _ = invoke(tmp_path, "surface", "one-message")
    assert code == 0 and out.startswith("1 node, replace generation 0, 1 message\n")


def test_a_streamed_tool_result_says_1_more_line() -> None:
    import io

    from rich.console import Console

    from harness.cli.live import LivePrinter
    from harness.events.event import Event

    screen = io.StringIO()
    text = "\n".join(f"line {n}" for n in range(7))
    message = harness.tool_result_message("c1", text)
    LivePrinter(Console(file=screen, width=80))(Event.create("tool/result", 0, 0, {"message": message}))
    assert "… 1 more line\n" in screen.getvalue()


def test_verify_an_id_holding_a_slash_is_the_stored_session(tmp_path: Path) -> None:
    async def build() -> None:
        store = SessionStore(JsonlBackend(tmp_path, compression="none"))
        one_turn(await store.create(id="team/a"))
        await store.close()

    asyncio.run(build())
    code, out, _ = invoke(tmp_path, "verify", "team/a")
    assert code == 0 and "valid" in out
    (log,) = tmp_path.glob("*/team~002Fa/session.jsonl")
    log.write_bytes(b"{broken\n" + log.read_bytes().split(b"\n", 1)[1])
    code, _, err = invoke(tmp_path, "verify", "team/a")
    assert code == 1 and "header line is not valid JSON" in err and "no such file" not in err


@pytest.mark.parametrize("name", ["03-auto-compaction.jsonl", "03-manual-compact.jsonl.zstd"])
def test_log_and_surface_read_a_session_file(tmp_path: Path, name: str) -> None:
    path = FIXTURES / name
    expected = read_session_file(str(path))
    code, out, err = invoke(tmp_path, "log", str(path), "--json")
    assert code == 0, err
    assert len(out.splitlines()) == len(expected.events)
    code, out, err = invoke(tmp_path, "surface", str(path), "--json")
    assert code == 0, err
    assert len(json.loads(out)["messages"]) == len(expected.derive_messages())


def test_log_of_a_damaged_file_is_one_error_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b'{"bad\n')
    code, _, err = invoke(tmp_path, "log", str(bad))
    assert code == 1
    assert "corrupt session log" in err and "Traceback" not in err
    assert bad.read_bytes() == b'{"bad\n'

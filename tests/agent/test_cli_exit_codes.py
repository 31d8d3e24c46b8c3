"""What ``run`` and ``resume`` say and exit with (issue 12 item 12): a denied world-changing
call says how to allow it and exits 4, ``--json`` prints one JSON document, ``--session ""``
is a usage error, ``export`` has ``--json``. The real openai client talks to the local fake
DeepSeek server; tools touch a real temporary workspace."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

import harness
from harness.cli import app
from harness.stores.jsonl.backend import JsonlBackend
from harness.stores.store import SessionStore
from harness.testing.fake_deepseek import FakeDeepSeek, Reply
from tests.agent.cli_support import cli, offline_env

KEY = "sk-test-exit-codes-7"
WRITE = ("c1", "write_file", '{"path":"x.txt","content":"no"}')


@pytest.fixture
def workspace(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Path]:
    offline_env(monkeypatch, KEY)
    root = tmp_path / "ws"
    root.mkdir()
    (root / "notes.txt").write_text("alpha\n")
    yield root


def test_a_headless_denial_says_how_to_allow_it_and_exits_4(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "sessions"
    script = [Reply.tool_calls([WRITE]), Reply.text("I was not allowed to write.")] * 2
    with FakeDeepSeek(script, api_key=KEY) as server:
        monkeypatch.setenv("DEEPSEEK_BASE_URL", server.base_url)
        as_json = cli(root, "run", "write x", "-w", str(workspace), "--json")
        plain = cli(root, "run", "write x", "-w", str(workspace))
    assert not (workspace / "x.txt").exists()
    assert as_json.exit_code == 4, as_json.output
    document = json.loads(as_json.stdout)  # one JSON document, nothing else on stdout
    assert document["reason"] == {"kind": "completed"} and document["exit"] == 4
    assert document["denied"] == [{"tool": "write_file", "callId": "c1", "outcome": "unavailable"}]
    assert "--yes" in as_json.stderr
    assert plain.exit_code == 4
    assert "write_file" in plain.stdout and "rerun with --yes" in " ".join(plain.stdout.split())


def test_the_same_run_with_yes_exits_0(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with FakeDeepSeek([Reply.tool_calls([WRITE]), Reply.text("Written.")], api_key=KEY) as server:
        monkeypatch.setenv("DEEPSEEK_BASE_URL", server.base_url)
        result = cli(tmp_path / "sessions", "run", "write x", "-w", str(workspace), "--yes", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["denied"] == [] and (workspace / "x.txt").read_text() == "no"


def test_the_exit_codes_are_in_the_help() -> None:
    for command in ("run", "resume"):
        result = CliRunner().invoke(app, [command, "--help"], env={"COLUMNS": "200"})
        text = " ".join(result.stdout.split())
        assert "Exit codes: 0 done; 1 failed" in text and "4 a world-changing tool call was denied" in text


@pytest.mark.parametrize("command", ["run", "chat"])
def test_an_empty_session_option_is_a_usage_error(workspace: Path, tmp_path: Path, command: str) -> None:
    root = tmp_path / "sessions"
    args = [command, "hi"] if command == "run" else [command]
    with FakeDeepSeek([], api_key=KEY) as server:
        result = CliRunner().invoke(
            app,
            ["--store", str(root), *args, "-w", str(workspace), "--session", ""],
            env={"DEEPSEEK_BASE_URL": server.base_url, "COLUMNS": "200"},
            input="/exit\n",
        )
        assert server.requests == []
    assert result.exit_code == 2, result.output
    assert "--session" in result.stderr and "empty" in result.stderr
    assert not root.exists()  # no session was created instead


def _open_call_session(root: Path, workspace: Path) -> str:
    """A stored session killed in a world-changing call (its resume is blocked)."""
    session = harness.Session.create(harness.SessionHeader.new(cwd=str(workspace)))
    session.append("turn/start", {"turn": 1})
    session.append("step/start", {"turn": 1, "step": 1})
    session.append("user/message", harness.user_message("write it"), surface_op="append")
    arguments = '{"command":"touch a.txt"}'
    call = harness.tool_call_block("c1", "run_shell", arguments)
    reply = harness.assistant_message([call], provider="deepseek-official", model="deepseek-v4-flash")
    data = {"turn": 1, "step": 1, "message": reply}
    session.append("assistant/message", data, surface_op="append", source_event_seqs=[])
    session.append(
        "tool/call", {"turn": 1, "step": 1, "callId": "c1", "name": "run_shell", "arguments": arguments}
    )

    async def save() -> None:
        store = SessionStore(JsonlBackend(root))
        live = await store.create(session.header)
        for event in session.events:
            sources = event.source_event_seqs
            live.append(event.type, event.data, surface_op=event.surface_op, source_event_seqs=sources)
        await store.close()

    asyncio.run(save())
    return session.id


def test_resume_json_is_one_document(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "sessions"
    session_id = _open_call_session(root, workspace)
    with FakeDeepSeek([Reply.text("Checked; done.")], api_key=KEY) as server:
        monkeypatch.setenv("DEEPSEEK_BASE_URL", server.base_url)
        stopped = cli(root, "resume", session_id, "-w", str(workspace), "--json")
        resumed = cli(root, "resume", session_id, "-w", str(workspace), "--json", "--yes")
    assert stopped.exit_code == 3
    document = json.loads(stopped.stdout)  # the whole stdout is one document
    assert document["stopped"] == "blocking" and document["check"]["blocking"] is True
    assert document["repaired"][0]["code"] == "TOOL_OUTCOME_UNKNOWN" and document["exit"] == 3
    assert resumed.exit_code == 0, resumed.output
    document = json.loads(resumed.stdout)
    assert document["session"] == session_id and document["reason"] == {"kind": "completed"}
    assert document["stopped"] is None and document["exit"] == 0 and document["denied"] == []
    assert "action-outcome-unknown" in [f["kind"] for f in document["check"]["findings"]]


def test_export_has_json(workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "sessions"
    with FakeDeepSeek([Reply.text("Forty-two.")], api_key=KEY) as server:
        monkeypatch.setenv("DEEPSEEK_BASE_URL", server.base_url)
        ran = cli(root, "run", "the answer?", "-w", str(workspace), "--json")
    session_id = json.loads(ran.stdout)["session"]
    markdown = json.loads(cli(root, "export", session_id, "--json").stdout)
    assert (markdown["session"], markdown["format"], markdown["messages"]) == (session_id, "markdown", 2)
    assert "Forty-two." in markdown["content"]
    openai = json.loads(cli(root, "export", session_id, "--format", "openai", "--json").stdout)
    assert openai["format"] == "openai" and openai["content"]["messages"][-1]["content"] == "Forty-two."

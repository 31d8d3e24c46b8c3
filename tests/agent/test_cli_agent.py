"""``harness run`` / ``resume`` / ``export`` end to end: the real openai client talks to the
local fake DeepSeek server over HTTP, tools touch a real temporary workspace, and one run is
killed with SIGKILL in the middle of a tool."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import harness
from harness.cli import app
from harness.providers.deepseek import DeepSeekProvider
from harness.session.request import build_request
from harness.stores.jsonl.backend import JsonlBackend
from harness.stores.store import SessionStore
from harness.testing.fake_deepseek import FakeDeepSeek, Reply
from tests.agent.cli_support import cli, offline_env, stored
from tests.interruptible import HARNESS_MODULE

KEY = "sk-test-never-logged-4242"


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Path]:
    offline_env(monkeypatch, KEY)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "notes.txt").write_text("alpha\nbeta\n")
    yield workspace


def files_under(path: Path) -> Iterator[Path]:
    return (p for p in path.rglob("*") if p.is_file())


def test_run_reads_writes_with_yes_and_keeps_the_key_out_of_every_file(
    env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "sessions"
    script = [
        Reply.tool_calls([("c1", "read_file", '{"path":"notes.txt"}')], text="Reading first."),
        Reply.tool_calls([("c2", "write_file", '{"path":"out.txt","content":"gamma\\n"}')]),
        Reply.text("Done: out.txt written."),
    ]
    with FakeDeepSeek(script, api_key=KEY) as server:
        monkeypatch.setenv("DEEPSEEK_BASE_URL", server.base_url)
        result = cli(root, "run", "copy notes", "-w", str(env), "--yes", "--json")
        requests = list(server.requests)
    assert result.exit_code == 0, result.output
    outcome = json.loads(result.stdout.strip().splitlines()[-1])
    assert outcome["reason"] == {"kind": "completed"}
    assert (env / "out.txt").read_text() == "gamma\n"
    session = stored(root, outcome["session"])
    kinds = [e.type for e in session.events]
    assert kinds.count("tool/result") == 2 and kinds.count("approval/decided") == 1
    read_meta = next(e.data["meta"] for e in session.events if e.type == "tool/result")
    assert read_meta["files"][0]["path"] == "notes.txt"
    # the key went out in the Authorization header and nowhere else
    assert all(r.header("authorization") == f"Bearer {KEY}" for r in requests)
    for path in files_under(root):
        assert KEY.encode() not in path.read_bytes(), path
    for path in files_under(env):
        assert KEY.encode() not in path.read_bytes(), path


def test_every_request_sent_is_rebuilt_from_the_log_alone(
    env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "sessions"
    script = [
        Reply.reasoning("Let me look.", "Looking."),
        Reply.text("Second turn answer."),
    ]
    with FakeDeepSeek(script, api_key=KEY) as server:
        monkeypatch.setenv("DEEPSEEK_BASE_URL", server.base_url)
        first = cli(root, "run", "hello", "-w", str(env), "--json")
        session_id = json.loads(first.stdout.strip().splitlines()[-1])["session"]
        second = cli(root, "run", "again", "-w", str(env), "--session", session_id, "--json")
        requests = list(server.requests)
    assert first.exit_code == 0 and second.exit_code == 0
    session = stored(root, session_id)
    events = list(session.events)
    attempts: dict[tuple[int, int], int] = {}
    for e in events:
        if e.type == "assistant/chunk":
            attempts.setdefault((e.data["turn"], e.data["step"]), e.seq)
    firsts = sorted(attempts.values())
    assert len(requests) == len(firsts) == 2
    provider = DeepSeekProvider("http://127.0.0.1:9", api_key="unused")
    for boundary, sent in zip(firsts, requests, strict=True):
        prefix = harness.Session.from_restore(session_id, events[:boundary], session.header)
        rebuilt = provider.request_body(build_request(prefix))
        assert json.dumps(rebuilt) == json.dumps(sent.body)  # same values, same key order
    # the second request passes the first answer's reasoning back
    assert requests[1].messages[2]["reasoning_content"] == "Let me look."
    headers = [e.data["reason"] for e in events if e.type == "request/header"]
    assert headers == ["initial", "resume"]


def test_a_headless_run_without_yes_denies_world_changing_tools(
    env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "sessions"
    script = [
        Reply.tool_calls([("c1", "write_file", '{"path":"x.txt","content":"no"}')]),
        Reply.text("I was not allowed to write."),
    ]
    with FakeDeepSeek(script, api_key=KEY) as server:
        monkeypatch.setenv("DEEPSEEK_BASE_URL", server.base_url)
        result = cli(root, "run", "write x", "-w", str(env), "--json")
    assert result.exit_code == 4  # a denied call: the task may be undone (see test_cli_exit_codes.py)
    assert not (env / "x.txt").exists()
    session = stored(root, json.loads(result.stdout.strip().splitlines()[-1])["session"])
    decided = next(e for e in session.events if e.type == "approval/decided")
    assert decided.data["outcome"] == "unavailable"


def test_a_failed_model_call_exits_non_zero_with_its_code(
    env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with FakeDeepSeek([Reply.error(401)], api_key=KEY) as server:
        monkeypatch.setenv("DEEPSEEK_BASE_URL", server.base_url)
        result = cli(tmp_path / "sessions", "run", "hi", "-w", str(env), "--json")
    assert result.exit_code == 1
    assert json.loads(result.stdout.strip().splitlines()[-1])["reason"]["error"]["code"] == "AUTH"


def test_export_gives_markdown_and_openai_messages(
    env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "sessions"
    with FakeDeepSeek([Reply.text("Forty-two.")], api_key=KEY) as server:
        monkeypatch.setenv("DEEPSEEK_BASE_URL", server.base_url)
        result = cli(root, "run", "the answer?", "-w", str(env), "--json")
    session_id = json.loads(result.stdout.strip().splitlines()[-1])["session"]
    markdown = cli(root, "export", session_id)
    assert markdown.exit_code == 0
    assert "## user" in markdown.stdout and "Forty-two." in markdown.stdout
    exported = json.loads(cli(root, "export", session_id, "--format", "openai").stdout)
    assert [m["role"] for m in exported["messages"]] == ["system", "user", "assistant"]
    assert exported["messages"][2]["content"] == "Forty-two."
    assert cli(root, "export", session_id, "--format", "pdf").exit_code == 2


def _wait_for(predicate: Any, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting")
        time.sleep(0.05)


def test_killed_mid_tool_then_resumed_reports_an_unknown_outcome_and_finishes(
    env: Path, tmp_path: Path
) -> None:
    root = tmp_path / "sessions"
    marker = env / "started.txt"
    command = f"echo started > {marker.name}; sleep 60"
    script = [
        Reply.tool_calls([("c1", "run_shell", json.dumps({"command": command}))]),
        Reply.text("The earlier command may or may not have finished; I checked and we are done."),
    ]
    with FakeDeepSeek(script, api_key=KEY) as server:
        child_env = {**os.environ, "DEEPSEEK_BASE_URL": server.base_url, "DEEPSEEK_API_KEY": KEY}
        child = subprocess.Popen(
            [sys.executable, "-m", "harness", "--store", str(root), "run", "run it", "-w", str(env), "--yes"],
            env=child_env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        try:
            _wait_for(marker.exists)  # the tool body runs: its tool/call was flushed before
        finally:
            os.killpg(child.pid, signal.SIGKILL)
            child.communicate()
        assert child.returncode == -signal.SIGKILL
        (session_dir,) = [p for p in root.rglob("session.jsonl.zstd")]
        session_id = stored_id(session_dir)
        os.environ["DEEPSEEK_BASE_URL"] = server.base_url
        try:
            resumed = cli(root, "resume", session_id, "-w", str(env), "--yes")
        finally:
            del os.environ["DEEPSEEK_BASE_URL"]
    assert resumed.exit_code == 0, resumed.output
    assert "TOOL_OUTCOME_UNKNOWN" in resumed.output
    assert "action-outcome-unknown" in resumed.output  # the world check, printed before going on
    session = stored(root, session_id)
    results = [e for e in session.events if e.type == "tool/result"]
    assert results[0].data["error"]["code"] == "TOOL_OUTCOME_UNKNOWN"
    ends = [e.data["reason"]["kind"] for e in session.events if e.type == "turn/end"]
    assert ends == ["interrupted", "completed"]
    headers = [e.data["reason"] for e in session.events if e.type == "request/header"]
    assert headers == ["initial", "resume"]
    (check,) = [e for e in session.events if e.type == "recovery/check"]
    assert check.ignorable and check.data["blocking"] is True
    assert "action-outcome-unknown" in [f["kind"] for f in check.data["findings"]]


def test_resume_without_yes_stops_at_a_blocking_finding(
    env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "sessions"
    session = harness.Session.create(harness.SessionHeader.new(cwd=str(env)))
    session.append("turn/start", {"turn": 1})
    session.append("step/start", {"turn": 1, "step": 1})
    session.append("user/message", harness.user_message("write it"), surface_op="append")
    arguments = '{"command":"touch a.txt"}'
    call = harness.tool_call_block("c1", "run_shell", arguments)
    reply = harness.assistant_message([call], provider="deepseek-official", model="deepseek-v4-flash")
    session.append("assistant/message", {"turn": 1, "step": 1, "message": reply}, surface_op="append",
                   source_event_seqs=[])
    session.append("tool/call", {"turn": 1, "step": 1, "callId": "c1", "name": "run_shell",
                                 "arguments": arguments})

    async def save() -> None:
        store = SessionStore(JsonlBackend(root))
        live = await store.create(session.header)
        for event in session.events:
            live.append(event.type, event.data, surface_op=event.surface_op,
                        source_event_seqs=event.source_event_seqs)
        await store.close()

    asyncio.run(save())
    with FakeDeepSeek([], api_key=KEY) as server:
        monkeypatch.setenv("DEEPSEEK_BASE_URL", server.base_url)
        stopped = cli(root, "resume", session.id, "-w", str(env))
        assert server.requests == []
    assert stopped.exit_code == 3
    assert "blocking" in stopped.output
    checked = cli(root, "check", session.id, "-w", str(env), "--json")
    assert checked.exit_code == 1
    kinds = [f["kind"] for f in json.loads(checked.stdout)["findings"]]
    assert "action-outcome-unknown" in kinds
    # 1 is only ever "a finding blocks": a check that cannot run exits 2
    missing = cli(root, "check", "no-such-session", "-w", str(env), "--json")
    assert missing.exit_code == 2 and "no-such-session" in missing.stderr and missing.stdout == ""


def test_resume_tells_the_model_what_changed_in_the_workspace(
    env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "sessions"
    script = [
        Reply.tool_calls([("c1", "read_file", '{"path":"notes.txt"}')]),
        Reply.text("Read it."),
        Reply.text("I see notes.txt changed; carrying on."),
    ]
    with FakeDeepSeek(script, api_key=KEY) as server:
        monkeypatch.setenv("DEEPSEEK_BASE_URL", server.base_url)
        first = cli(root, "run", "read the notes", "-w", str(env), "--json")
        session_id = json.loads(first.stdout.strip().splitlines()[-1])["session"]
        quiet = cli(root, "check", session_id, "-w", str(env), "--json")
        (env / "notes.txt").write_text("alpha\nCHANGED\n")
        changed = cli(root, "check", session_id, "-w", str(env), "--json")
        resumed = cli(root, "resume", session_id, "-w", str(env), "--yes", "--json")
        last = server.requests[-1]
    assert quiet.exit_code == 0 and "file-changed" not in quiet.stdout
    assert changed.exit_code == 0
    assert [f["kind"] for f in json.loads(changed.stdout)["findings"]] == ["file-changed"]
    assert resumed.exit_code == 0, resumed.output
    user_texts = [m["content"] for m in last.messages if m["role"] == "user"]
    assert any("notes.txt" in text for text in user_texts[-2:-1])  # the drift note, before the prompt
    session = stored(root, session_id)
    notes = [m for m in session.derive_messages() if m.source.kind == "plugin"]
    assert len(notes) == 1 and "notes.txt" in (notes[0].text or "")


def _logged_text(root: Path) -> bool:
    """True once a stored session holds a text delta (the write-behind wrote it)."""
    from harness.stores.jsonl.reader import read_session_file

    for log in root.rglob("session.jsonl.zstd"):
        try:
            session = read_session_file(str(log))
        except harness.HarnessError:
            return False
        return any(
            e.type == "assistant/chunk" and e.data["chunk"]["type"] == "text-delta" for e in session.events
        )
    return False


def stored_id(path: Path) -> str:
    from harness.stores.jsonl.reader import read_log_file

    return read_log_file(str(path)).header.id


def test_chat_streams_turns_until_exit_and_compacts_on_request(
    env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "sessions"
    answers = iter(["First answer. " + "Some detail. " * 200, "More. " + "Detail. " * 200, "Third answer."])

    def reply(request: Any) -> Reply:
        if request.header("x-deepseek-harness-compact") == "1":
            return Reply.text("## Summary\nThe user said hello; the agent answered.")
        return Reply.text(next(answers))

    with FakeDeepSeek([reply] * 4, api_key=KEY) as server:
        monkeypatch.setenv("DEEPSEEK_BASE_URL", server.base_url)
        result = CliRunner().invoke(
            app,
            ["--store", str(root), "chat", "-w", str(env)],
            input="hello\nmore\n\n/compact\nagain\n/exit\n",
            catch_exceptions=False,
        )
    assert result.exit_code == 0, result.output
    assert "First answer." in result.output and "Third answer." in result.output
    assert "compacted" in " ".join(result.output.split()), result.output
    (log,) = root.rglob("session.jsonl.zstd")
    session = stored(root, stored_id(log))
    assert [e.data["reason"]["kind"] for e in session.events if e.type == "turn/end"] == ["completed"] * 3
    assert session.surface.replace_generation == 1


def test_effort_reaches_the_header_and_the_request(
    env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "sessions"
    with FakeDeepSeek([Reply.text("Quick.")], api_key=KEY) as server:
        monkeypatch.setenv("DEEPSEEK_BASE_URL", server.base_url)
        result = cli(root, "run", "quick one", "-w", str(env), "--effort", "off", "--json")
        body = server.requests[0].body
    assert result.exit_code == 0, result.output
    assert body["thinking"] == {"type": "disabled"} and "reasoning_effort" not in body
    session = stored(root, json.loads(result.stdout.strip().splitlines()[-1])["session"])
    header = next(e for e in session.events if e.type == "request/header").data["header"]
    assert header["config"]["reasoningEffort"] == "off"
    assert "reasoningEffort" not in header.get("adapterDefaults", {})


def test_ctrl_c_saves_the_delivered_prefix_and_ends_the_turn_aborted(env: Path, tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    with FakeDeepSeek([Reply.hang("Half an answer, then")], api_key=KEY) as server:
        child_env = {**os.environ, "DEEPSEEK_BASE_URL": server.base_url, "DEEPSEEK_API_KEY": KEY}
        child = subprocess.Popen(
            [*HARNESS_MODULE, "--store", str(root), "run", "explain", "-w", str(env)],
            env=child_env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        try:
            _wait_for(lambda: _logged_text(root))  # the deltas before the hang reached the log
            child.send_signal(signal.SIGINT)
            out, _ = child.communicate(timeout=30)
        finally:
            if child.poll() is None:
                child.kill()
    assert child.returncode == 130, out  # EXIT_INTERRUPTED: Ctrl-C cancelled the turn
    (log,) = root.rglob("session.jsonl.zstd")
    session = stored(root, stored_id(log))
    message = next(e for e in session.events if e.type == "assistant/message")
    assert message.data["interrupted"] is True
    assert message.data["message"]["content"] == [{"type": "text", "text": "Half an answer, then"}]
    end = next(e for e in session.events if e.type == "turn/end")
    assert end.data["reason"] == {"kind": "aborted", "reason": {"kind": "user"}}

"""Text a model cannot be sent is refused where it comes in, before anything is appended:
bytes that are not UTF-8 (``harness run $'bad \\xff'``), and empty prompts, on the command
line, on standard input to ``chat`` and in the library builders. ``/help`` in chat stays
local. A session that already holds such text still resumes."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import harness
from harness.agent.loop import Agent, AgentSettings
from harness.cli import app
from harness.cli.terminal import checked_prompt, decode_line
from harness.errors import InvalidMessage
from harness.messages.model import check_sendable, lone_surrogate, sendable, user_message
from harness.stores.jsonl.backend import JsonlBackend
from harness.stores.store import SessionStore
from harness.testing.fake_deepseek import FakeDeepSeek, Reply
from harness.testing.scripted import ScriptedProvider, text_reply
from tests.agent.cli_support import stored

KEY = "sk-test-prompt-boundary-58"


def child_env(server: FakeDeepSeek) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    return {**env, "DEEPSEEK_BASE_URL": server.base_url, "DEEPSEEK_API_KEY": KEY}


def harness_cmd(root: Path, *args: str | bytes) -> list[str | bytes]:
    return [sys.executable, "-m", "harness", "--store", str(root), *args]


def files(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file()] if root.exists() else []


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    path = tmp_path / "ws"
    path.mkdir()
    return path


# ---- the command line ---------------------------------------------------------------------


def test_run_refuses_a_task_that_is_not_utf8_and_stores_nothing(tmp_path: Path, workspace: Path) -> None:
    root = tmp_path / "sessions"
    with FakeDeepSeek([Reply.text("never")], api_key=KEY) as server:
        done = subprocess.run(
            harness_cmd(root, "run", b"bad \xff", "-w", str(workspace)),
            env=child_env(server),
            capture_output=True,
            timeout=60,
        )
        assert server.requests == []
    assert done.returncode == 2, done
    error = done.stderr.decode()
    assert "the task is not valid UTF-8 text (character 4 is the byte 0xff)" in " ".join(error.split())
    assert "Traceback" not in error and "TRANSPORT" not in error
    assert files(root) == []


def test_a_refused_prompt_leaves_the_session_as_it_was_and_usable(tmp_path: Path, workspace: Path) -> None:
    root = tmp_path / "sessions"
    script = [Reply.text("First."), Reply.text("Still fine.")]
    with FakeDeepSeek(script, api_key=KEY) as server:
        env = child_env(server)
        first = subprocess.run(
            harness_cmd(root, "run", "hello", "-w", str(workspace), "--json"), env=env, capture_output=True
        )
        session_id = json.loads(first.stdout.decode().strip().splitlines()[-1])["session"]
        count = len(stored(root, session_id).events)
        for bad in (b"bad \xff", b"\xc3", b"", b"   "):
            refused = subprocess.run(
                harness_cmd(root, "run", bad, "-w", str(workspace), "--session", session_id),
                env=env,
                capture_output=True,
            )
            assert refused.returncode == 2, (bad, refused)
            assert len(stored(root, session_id).events) == count
        again = subprocess.run(
            harness_cmd(root, "run", "again", "-w", str(workspace), "--session", session_id, "--json"),
            env=env,
            capture_output=True,
        )
        assert len(server.requests) == 2
    assert again.returncode == 0, again
    assert json.loads(again.stdout.decode().strip().splitlines()[-1])["reason"] == {"kind": "completed"}


def test_run_reads_the_task_from_stdin_with_the_same_checks(tmp_path: Path, workspace: Path) -> None:
    root = tmp_path / "sessions"
    with FakeDeepSeek([Reply.text("Done.")], api_key=KEY) as server:
        def run(stdin: bytes) -> subprocess.CompletedProcess[bytes]:
            command = harness_cmd(root, "run", "-", "-w", str(workspace), "--json")
            env = child_env(server)
            return subprocess.run(command, input=stdin, env=env, capture_output=True, timeout=60)

        bad, empty = run(b"fix \xffit\n"), run(b" \n\n")
        assert files(root) == [] and server.requests == []
        good = run(b"fix the test\nin tests/a.py\n")
        sent = server.requests
    assert bad.returncode == 2 and empty.returncode == 2
    refusal = " ".join(bad.stderr.decode().split())
    assert "the task on stdin is not valid UTF-8 text (byte 4 is 0xff)" in refusal
    assert "the task is empty" in empty.stderr.decode()
    assert good.returncode == 0, good
    assert sent[0].messages[-1] == {"role": "user", "content": "fix the test\nin tests/a.py"}


@pytest.mark.parametrize("prompt", ["", "   ", "\n\t "])
def test_empty_prompts_are_refused_by_run_and_resume(tmp_path: Path, workspace: Path, prompt: str) -> None:
    root = tmp_path / "sessions"
    ran = CliRunner().invoke(app, ["--store", str(root), "run", prompt, "-w", str(workspace)])
    assert ran.exit_code == 2
    assert "the task is empty" in ran.output
    resumed = CliRunner().invoke(app, ["--store", str(root), "resume", "session-x", prompt])
    assert resumed.exit_code == 2
    assert "the prompt is empty" in resumed.output
    assert files(root) == []


# ---- chat reads its lines as bytes ------------------------------------------------------------


def test_chat_refuses_bad_and_empty_lines_keeps_help_local_and_goes_on(
    tmp_path: Path, workspace: Path
) -> None:
    root = tmp_path / "sessions"
    lines = b"bad \xff line\n   \n\n/help\n/nonsense\nhello\n/exit\n"
    with FakeDeepSeek([Reply.text("Hello back.")], api_key=KEY) as server:
        done = subprocess.run(
            harness_cmd(root, "chat", "-w", str(workspace)),
            input=lines,  # a pipe: read by the event loop, decoded strictly
            env=child_env(server),
            capture_output=True,
            timeout=60,
        )
        sent = server.requests
    output = " ".join(done.stdout.decode().split())
    assert done.returncode == 0, done
    assert "not sent: the input is not valid UTF-8 text (byte 4 is 0xff)" in output
    assert "/compact" in output and "/exit" in output  # the command list
    assert "unknown command /nonsense" in output
    assert "Hello back." in output
    assert len(sent) == 1  # neither /help nor the refused lines went to the model
    assert [m["content"] for m in sent[0].messages if m["role"] == "user"] == ["hello"]


def test_chat_from_a_file_reads_the_same(tmp_path: Path, workspace: Path) -> None:
    root = tmp_path / "sessions"
    script = tmp_path / "lines.txt"
    script.write_bytes(b"\xfe\xfe\n/help\nhi there\n")  # ends without /exit: end of input leaves
    with FakeDeepSeek([Reply.text("Hi.")], api_key=KEY) as server, script.open("rb") as stdin:
        done = subprocess.run(
            harness_cmd(root, "chat", "-w", str(workspace)),
            stdin=stdin,
            env=child_env(server),
            capture_output=True,
            timeout=60,
        )
        sent = server.requests
    assert done.returncode == 0, done
    assert "not valid UTF-8" in done.stdout.decode()
    assert [m["content"] for m in sent[0].messages if m["role"] == "user"] == ["hi there"]


# ---- the library ----------------------------------------------------------------------------


def test_user_message_refuses_text_that_is_not_utf8_naming_where() -> None:
    with pytest.raises(InvalidMessage) as refused:
        user_message("bad \udcff")
    assert refused.value.path == "content[0].text"
    assert "character 4 is the byte 0xff" in str(refused.value)
    with pytest.raises(InvalidMessage, match="unpaired surrogate U\\+D800"):
        user_message([{"type": "text", "text": "ok"}, {"type": "text", "text": "\ud800!"}])
    assert user_message("a pair \ud83d\ude00 is fine")["content"][0]["text"].endswith("fine")


def test_text_helpers() -> None:
    assert lone_surrogate("plain") is None and lone_surrogate("é😀") is None
    assert lone_surrogate("\ud83d\ude00") is None and lone_surrogate("x\ude00") == 1
    assert sendable("a\udcffb") == "a\ufffdb" and sendable("\ud83d\ude00") == "\U0001f600"
    check_sendable({"deep": ["fine", {"x": "also"}]})
    with pytest.raises(InvalidMessage) as refused:
        check_sendable({"deep": ["fine", {"x": "\udc80"}]}, "data")
    assert refused.value.path == "data.deep[1].x"
    assert checked_prompt(" go ") == " go "
    with pytest.raises(InvalidMessage, match="empty"):
        checked_prompt(" \n")
    assert decode_line(b"caf\xc3\xa9\r\n") == "café"
    with pytest.raises(InvalidMessage, match="byte 3 is 0xc3"):
        decode_line(b"caf\xc3\n")


@pytest.mark.parametrize(
    "prompt",
    ["bad \udcff", "", "  \n", {"id": "u", "role": "user", "content": [{"type": "text", "text": "\udcff"}],
                                "source": {"kind": "user"}}],
)
def test_run_turn_refuses_before_anything_is_appended(prompt: Any, tmp_path: Path) -> None:
    session = harness.Session.create()
    provider = ScriptedProvider([text_reply("never")])
    agent = Agent(session, provider, [], AgentSettings(model="m"), workspace=tmp_path)
    with pytest.raises(InvalidMessage):
        asyncio.run(agent.run_turn(prompt))
    assert list(session.events) == [] and provider.requests == []
    assert asyncio.run(agent.run_turn("fine")).kind == "completed"  # and the agent goes on


# ---- a session that already holds such text -------------------------------------------------


def test_a_session_holding_a_lone_surrogate_resumes_instead_of_failing_transport(
    tmp_path: Path, workspace: Path
) -> None:
    root = tmp_path / "sessions"
    raw: dict[str, Any] = dict(user_message("placeholder"))
    raw["content"] = [{"type": "text", "text": "bad \udcff"}]  # as the old CLI stored it

    async def save() -> str:
        store = SessionStore(JsonlBackend(root))
        session = await store.create(cwd=str(workspace))
        session.append("turn/start", {"turn": 1})
        session.append("step/start", {"turn": 1, "step": 1})
        session.append("user/message", raw, surface_op="append")
        session.append("step/end", {"turn": 1, "step": 1})
        session.append("turn/end", {"turn": 1, "reason": {"kind": "error", "error": {
            "message": "transport failure: surrogates not allowed", "code": "TRANSPORT"}}})
        await store.close()
        return session.id

    session_id = asyncio.run(save())
    with FakeDeepSeek([Reply.text("Understood.")], api_key=KEY) as server:
        result = CliRunner().invoke(
            app,
            ["--store", str(root), "resume", session_id, "-w", str(workspace), "--yes", "--json"],
            env=child_env(server),
            catch_exceptions=False,
        )
        sent = server.requests
    assert result.exit_code == 0, result.output
    assert "TRANSPORT" not in result.stdout.splitlines()[-1]
    (request,) = sent
    assert next(m["content"] for m in request.messages if m["role"] == "user") == "bad \ufffd"
    session = stored(root, session_id)
    ends = [e.data["reason"]["kind"] for e in session.events if e.type == "turn/end"]
    assert ends == ["error", "completed"]
    first = next(e for e in session.events if e.type == "user/message")
    assert first.data["content"][0]["text"] == "bad \udcff"  # the log is never rewritten


def test_chat_help_keeps_its_columns_at_80() -> None:
    """``/help`` at 80 columns: a wrapped description stays under its column (it used to
    run back to column 0, "fails)" alone at the left edge)."""
    import io

    from rich.console import Console

    from harness.cli.terminal import CHAT_COMMANDS, chat_help

    screen = io.StringIO()
    chat_help(Console(file=screen, width=80, color_system=None))
    lines = screen.getvalue().splitlines()
    assert lines[0] == "commands"
    assert all(line.startswith("  ") for line in lines[1:]), lines
    flat = " ".join(" ".join(lines).split())
    assert all(name in flat and " ".join(what.split()) in flat for name, what in CHAT_COMMANDS.items())
    desc = lines[1].index("list these commands")
    wrapped = [line for line in lines[1:] if not line.strip().startswith("/") and "Anything" not in line]
    assert all(line[:desc].strip() == "" for line in wrapped if "Ctrl-C stops" not in line), lines

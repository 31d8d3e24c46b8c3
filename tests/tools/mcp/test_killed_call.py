"""A run killed (SIGKILL) in the middle of an MCP call, then resumed while its server cannot
start: the world check blocks on the unreachable server, since the call's outcome is unknown
and only the server could tell. Once the server is back, only the unknown outcome remains."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.stores.jsonl.reader import read_log_file
from harness.testing.fake_deepseek import FakeDeepSeek, Reply
from tests.agent.cli_support import cli, offline_env
from tests.tools.mcp.support import NOTES_SECRET, stdio_entry, write_config, write_spec

KEY = "sk-test-killed-mcp-31"


def test_a_call_cut_by_a_kill_blocks_the_resume_while_its_server_is_unreachable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    offline_env(monkeypatch, KEY)
    monkeypatch.setenv("NOTES_SECRET", NOTES_SECRET)
    root, ws = tmp_path / "sessions", tmp_path / "ws"
    ws.mkdir()
    log = tmp_path / "notes.log"
    started = Path(f"{log}.started")
    spec = write_spec(tmp_path / "notes.json", name="notes-server", version="1.0", log=str(log))
    write_config(ws / ".mcp.json", {"notes": stdio_entry(spec)})
    script = [Reply.tool_calls([("c1", "mcp__notes__slow", '{"seconds": 60}')])]
    with FakeDeepSeek(script, api_key=KEY) as model:
        monkeypatch.setenv("DEEPSEEK_BASE_URL", model.base_url)
        child = subprocess.Popen(
            [sys.executable, "-m", "harness", "--store", str(root), "run", "wait", "-w", str(ws), "--yes"],
            env={**os.environ},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            deadline = time.monotonic() + 120
            while not started.exists() or not started.read_text():
                assert child.poll() is None and time.monotonic() < deadline, "the call never started"
                time.sleep(0.05)
        finally:
            os.killpg(child.pid, signal.SIGKILL)
            child.wait()
            with contextlib.suppress(ProcessLookupError, ValueError):
                os.kill(int(started.read_text()), signal.SIGKILL)  # the server has its own session
        (path,) = root.rglob("session.jsonl*")
        session_id = read_log_file(str(path)).header.id

        write_spec(spec, crash=True)  # the server cannot start any more
        stopped = cli(root, "resume", session_id, "-w", str(ws), "--json")
        assert stopped.exit_code == 3, stopped.output
        document = json.loads(stopped.stdout)
        unreachable = [f for f in document["check"]["findings"] if f["kind"] == "mcp-server-unreachable"]
        assert [f["severity"] for f in unreachable] == ["block"]
        assert unreachable[0]["evidence"]["unknownOutcomeCalls"] == ["c1"]
        assert "refusing to start" in unreachable[0]["evidence"]["error"]  # the server's own stderr
        assert model.requests[1:] == []  # nothing was sent to the model

        write_spec(spec, name="notes-server", version="1.0", log=str(log))  # back as it was
        back = cli(root, "check", session_id, "-w", str(ws), "--json")
    assert back.exit_code == 1, back.output
    findings = json.loads(back.stdout)["findings"]
    blocking = [f["kind"] for f in findings if f["severity"] == "block"]
    assert blocking == ["action-outcome-unknown"]  # the call itself; the server is reachable again
    assert "mcp-server-unreachable" not in [f["kind"] for f in findings]

"""``harness demo``'s agent cycle: run, SIGKILL mid-tool, resume, log beside Surface."""

from __future__ import annotations

import io
import shlex
from pathlib import Path

import pytest
from rich.console import Console

from harness.demos.agent import run_agent_demo


def test_the_agent_demo_runs_the_whole_cycle_offline(tmp_path: Path) -> None:
    buffer = io.StringIO()
    session = run_agent_demo(Console(file=buffer, width=100), sessions=tmp_path / "sessions")
    out = buffer.getvalue()
    for expected in (
        "scripted",
        "killed the agent process with SIGKILL",
        "repaired: tool call call_shell → TOOL_OUTCOME_UNKNOWN",
        "turn 2 ended: completed",
        "file-changed",
        "notes.md",
        "Event Log",
        "Surface (generation 0)",
        "the demo key",
        "automatic compaction",
        "Surface (generation 1)",
        "user/compact",
        f"harness serve --store {tmp_path / 'sessions'} --open",  # how to open them in the viewer
        "mcp facts (workspace-facts 1.0)",  # the demo's MCP server, connected by run and resume
        "mcp-session-lost",
    ):
        assert expected in out, expected
    kinds = [event.type for event in session.events]
    assert kinds.count("approval/decided") == 2  # the read-only MCP tool was not asked for
    assert kinds.count("mcp/connect") == 2
    reasons = [e.data["reason"] for e in session.events if e.type == "request/header"]
    assert reasons == ["initial", "resume"]
    # the sessions stay where the demo said, both of them (the run and the compaction)
    assert len(list((tmp_path / "sessions").rglob("session.jsonl*"))) == 2


def test_the_viewer_hint_names_the_program_the_user_ran_when_harness_is_not_on_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from harness.demos.agent import _harness_command

    program = tmp_path / "my venv" / "bin" / "harness"
    program.parent.mkdir(parents=True)
    program.write_text("#!/bin/sh\n")
    monkeypatch.setattr("sys.argv", [str(program), "demo"])
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert _harness_command() == shlex.quote(str(program))
    monkeypatch.setenv("PATH", str(program.parent))
    program.chmod(0o755)
    assert _harness_command() == "harness"

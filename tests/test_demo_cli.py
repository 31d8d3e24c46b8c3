"""The offline demo and the ``harness`` command line around it."""

from __future__ import annotations

import io

import pytest
from rich.console import Console
from typer.testing import CliRunner

import harness
from harness.cli import app
from harness.demos.engine import (
    DemoCheckFailed,
    build_crash_fork,
    build_demo_session,
    encode_lines,
    restore_from_lines,
    run_demo,
    verify_restore,
)


def _demo_output() -> str:
    buffer = io.StringIO()
    run_demo(Console(file=buffer, width=100))
    return buffer.getvalue()


def test_demo_prints_log_surface_history_and_verdict() -> None:
    out = _demo_output()
    for expected in (
        "harness demo",
        "Event Log",
        "Surface (generation 1)",
        "Model history (derive_messages)",
        "request/header",
        "assistant/chunk",
        "tool/call",
        "repl 2-20",
        "(13)",  # the shadowed tool result is still listed
        "Restore matched",
        "re-encode byte for byte",
        "Crash repair",
        "TOOL_OUTCOME_UNKNOWN",
        "TOOL_NOT_STARTED",
        "turn 3 interrupted",
        "The closers pass restore",
    ):
        assert expected in out, expected


def test_demo_fits_a_100_column_terminal() -> None:
    assert max(len(line) for line in _demo_output().splitlines()) <= 100


def test_demo_session_is_balanced_and_restores() -> None:
    session = build_demo_session()
    assert harness.repair_closers(session.events) == []
    replacement = harness.fold_surface(session.events).replacements[-1]
    assert replacement.shadowed_seqs == (2, 11, 13, 20)
    # The replaced range holds the tool call's assistant message and its result together.
    shadowed_types = [session.events[seq].type for seq in replacement.shadowed_seqs]
    assert shadowed_types == ["user/message", "assistant/message", "tool/result", "assistant/message"]
    restored = restore_from_lines(session, encode_lines(session))
    assert "Restore matched" in verify_restore(session, restored)


def test_verify_restore_refuses_a_different_session() -> None:
    live = build_demo_session()
    other = harness.Session.from_restore(live.id, list(live.events)[:23], live.header)
    with pytest.raises(DemoCheckFailed, match="did not match"):
        verify_restore(live, other)


def test_crash_fork_closers() -> None:
    fork = build_crash_fork(build_demo_session())
    closers = harness.repair_closers(fork.events)
    assert [event.type for event in closers] == ["tool/result", "tool/result", "step/end", "turn/end"]
    assert [event.data["error"]["code"] for event in closers[:2]] == [
        "TOOL_OUTCOME_UNKNOWN",
        "TOOL_NOT_STARTED",
    ]


def test_cli_demo_exits_zero() -> None:
    result = CliRunner().invoke(app, ["demo", "--engine"])
    assert result.exit_code == 0, result.output
    assert "Restore matched" in result.output


def test_cli_demo_runs_the_agent_cycle() -> None:
    result = CliRunner().invoke(app, ["demo"])
    assert result.exit_code == 0, result.output
    assert "killed the agent process with SIGKILL" in result.output
    assert "action-outcome-unknown" in result.output


def test_cli_unknown_command_exits_non_zero() -> None:
    result = CliRunner().invoke(app, ["no-such-command"])
    assert result.exit_code != 0
    assert "Traceback" not in result.output

"""Cold recovery of what replay cannot bring back: MCP servers (unreachable, a tool removed,
a schema changed, another version, the lost session state), the provider key, and temporary
files commands created outside the workspace. Each raised, and absent when nothing changed."""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

import harness
from harness.providers.credentials import CredentialCheck
from harness.recovery import FindingKind, WorldReport, check_world, read_history
from harness.recovery.checks.tempfiles import created_temp_paths
from harness.recovery.history import ShellRun
from harness.tools.base import Tool, ToolContext, ToolOutcome, ToolSpec
from harness.tools.mcp import MCP_CONNECT, McpServerState, McpToolRecord
from harness.tools.registry import default_tools
from tests.recovery.helpers import agent_turn, cut_after, index_of, kinds, provider, restart

ADD = McpToolRecord("add", "mcp__notes__add", "a" * 64, True)
NOTE = McpToolRecord("note", "mcp__notes__note", "b" * 64, False)
LIST = McpToolRecord("list", "mcp__notes__list", "c" * 64, True)
NOTES = McpServerState(
    "notes", "stdio", "python3", True, "notes-server", "1.0", "2025-11-25", (ADD, NOTE, LIST)
)


class Fake:
    """A stand-in for an MCP tool under its offered name."""

    def __init__(self, record: McpToolRecord) -> None:
        self.record = record

    @property
    def spec(self) -> ToolSpec:
        return ToolSpec(self.record.exposed, f"[MCP server notes] {self.record.name}", {"type": "object"})

    @property
    def changes_world(self) -> bool:
        return not self.record.read_only

    @property
    def exclusive(self) -> bool:
        return False

    async def run(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolOutcome:
        return ToolOutcome("ok")


def tools(*records: McpToolRecord) -> list[Tool]:
    return [*default_tools(), *(Fake(record) for record in records)]


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


def used(ws: Path, *calls: tuple[str, Mapping[str, Any]]) -> harness.Session:
    """A session that connected NOTES and made ``calls`` in one turn."""
    session = harness.Session.create()
    session.append(MCP_CONNECT, NOTES.to_json(), ignorable=True)
    agent_turn(session, ws, list(calls), tools=tools(ADD, NOTE, LIST))
    return session


def report(
    session: harness.Session,
    ws: Path,
    now: list[McpServerState] | None,
    *records: McpToolRecord,
    credentials: CredentialCheck | None = None,
) -> WorldReport:
    return check_world(session, ws, tools(*records), provider(), mcp=now, credentials=credentials)


def test_an_unchanged_server_reports_only_that_its_session_state_was_lost(ws: Path) -> None:
    session = restart(used(ws, ("mcp__notes__add", {"a": 1}), ("mcp__notes__note", {"text": "x"})))
    found = report(session, ws, [NOTES], ADD, NOTE, LIST)
    assert kinds(found) == ["mcp-session-lost"]
    (lost,) = found.findings
    assert lost.severity == "info" and lost.evidence["servers"] == ["notes"]
    assert "did not survive" in (found.drift_message() or "")
    # a log that never used MCP has no MCP finding at all, reconnected or not
    plain = harness.Session.create()
    agent_turn(plain, ws, [("list_dir", {"path": "."})])
    assert kinds(check_world(restart(plain), ws, default_tools(), provider(), mcp=[])) == []
    assert check_world(restart(plain), ws, default_tools(), provider()).skipped == {}


def test_removed_and_changed_tools_and_another_version_each_raised(ws: Path) -> None:
    session = restart(used(ws, ("mcp__notes__note", {"text": "x"})))
    changed_add = replace(ADD, sha256="d" * 64)
    now = replace(NOTES, server_version="2.0", tools=(changed_add,))
    found = report(session, ws, [now], changed_add)
    by_kind = {item.kind: item for item in found.findings}
    assert sorted(by_kind) == sorted(
        ["mcp-tool-removed", "mcp-tool-schema-changed", "mcp-server-version-changed", "mcp-session-lost"]
    )
    removed = [item for item in found.findings if item.kind == "mcp-tool-removed"]
    assert {(item.evidence["tool"], item.severity) for item in removed} == {
        ("note", "warn"),
        ("list", "info"),
    }
    assert by_kind[FindingKind.MCP_TOOL_SCHEMA_CHANGED].evidence["exposedAs"] == "mcp__notes__add"
    version = by_kind[FindingKind.MCP_SERVER_CHANGED]
    assert version.severity == "warn" and (version.evidence["before"], version.evidence["now"]) == (
        "notes-server 1.0",
        "notes-server 2.0",
    )
    # the generic tool check leaves MCP tools to the MCP check: no duplicate tool-missing
    assert "tool-missing" not in kinds(found) and "tool-schema-changed" not in kinds(found)
    assert not found.blocking
    protocol_only = report(session, ws, [replace(NOTES, protocol_version="2026-07-28")], ADD, NOTE, LIST)
    (changed,) = protocol_only.of_kind(FindingKind.MCP_SERVER_CHANGED)
    assert changed.severity == "info"


def test_an_unreachable_server_warns_and_blocks_when_an_unfinished_call_used_it(ws: Path) -> None:
    done = restart(used(ws, ("mcp__notes__note", {"text": "x"})))
    down = replace(NOTES, reachable=False, tools=(), error="MCP server 'notes' (python3): exited")
    found = report(done, ws, [down])
    (unreachable,) = found.of_kind(FindingKind.MCP_SERVER_UNREACHABLE)
    assert unreachable.severity == "warn" and "exited" in unreachable.summary
    assert not found.blocking and "mcp-tool-removed" not in kinds(found)
    gone = report(done, ws, [])  # no longer configured at all
    (missing,) = gone.of_kind(FindingKind.MCP_SERVER_UNREACHABLE)
    assert missing.evidence["configured"] is False and "no longer configured" in missing.summary

    session = used(ws, ("mcp__notes__note", {"text": "x"}))
    crashed = cut_after(session, index_of(session, "tool/call", name="mcp__notes__note"))
    blocked = report(crashed, ws, [down])
    (unreachable,) = blocked.of_kind(FindingKind.MCP_SERVER_UNREACHABLE)
    assert unreachable.severity == "block" and unreachable.evidence["unknownOutcomeCalls"]
    assert blocked.blocking
    back = report(crashed, ws, [NOTES], ADD, NOTE, LIST)  # reachable again: only the call itself blocks
    assert "mcp-server-unreachable" not in kinds(back)
    assert [item.kind for item in back.findings if item.blocks] == ["action-outcome-unknown"]


def test_without_a_reconnect_only_the_lost_state_is_reported_and_the_rest_is_skipped(ws: Path) -> None:
    session = restart(used(ws, ("mcp__notes__add", {"a": 1})))
    found = check_world(session, ws, default_tools(), provider())
    assert kinds(found) == ["mcp-session-lost"]
    assert "mcp" in found.skipped


@pytest.mark.parametrize(
    ("check", "kind", "severity"),
    [
        (CredentialCheck("accepted", "r", "http://h", 200), None, None),
        (
            CredentialCheck("rejected", "r", "http://h", 401, "Authentication Fails"),
            "credentials-rejected",
            "block",
        ),
        (CredentialCheck("missing", reason="no API key"), "credentials-missing", "block"),
        (
            CredentialCheck("unreachable", "r", "http://h", None, "could not connect"),
            "credentials-unchecked",
            "warn",
        ),
        (CredentialCheck("unknown", "r", "http://h", 404, "no route"), "credentials-unchecked", "warn"),
    ],
)
def test_the_key_check_is_reported_by_its_outcome(
    ws: Path, check: CredentialCheck, kind: str | None, severity: str | None
) -> None:
    session = harness.Session.create()
    agent_turn(session, ws)
    found = check_world(restart(session), ws, default_tools(), provider(), credentials=check)
    assert kinds(found) == ([kind] if kind else [])
    if kind is not None:
        assert found.findings[0].severity == severity
    unchecked = check_world(
        restart(session),
        ws,
        default_tools(),
        provider(),
        credentials=CredentialCheck("unchecked", reason="off"),
    )
    assert kinds(unchecked) == [] and unchecked.skipped == {"credentials": "off"}


def test_temporary_files_a_command_created_and_that_are_gone_are_reported(ws: Path, tmp_path: Path) -> None:
    tag = uuid.uuid4().hex[:8]
    kept, lost, cleaned = (f"/tmp/harness-test-{tag}-{name}" for name in ("kept", "lost", "cleaned"))
    command = f"echo a > {kept} && echo b >> {lost} && touch {cleaned} && echo c > inside.txt"
    session = harness.Session.create()
    agent_turn(
        session, ws, [("run_shell", {"command": command}), ("run_shell", {"command": f"rm -f {cleaned}"})]
    )
    try:
        assert Path(kept).exists() and Path(lost).exists() and not Path(cleaned).exists()
        quiet = check_world(restart(session), ws, default_tools(), provider())
        assert "temp-file-vanished" not in kinds(quiet)
        os.unlink(lost)
        found = check_world(restart(session), ws, default_tools(), provider())
        (vanished,) = found.of_kind(FindingKind.TEMP_FILE_VANISHED)
        assert vanished.evidence["path"] == lost and vanished.severity == "warn"
        assert lost in (found.drift_message() or "")
    finally:
        for path in (kept, lost, cleaned):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)


@pytest.mark.parametrize(
    ("command", "output", "created", "removed"),
    [
        ("cmd > /tmp/a.log 2>&1", "", ["/tmp/a.log"], []),
        ("cmd 2>>/tmp/err.log", "", ["/tmp/err.log"], []),
        ("cmd | tee -a /tmp/t.txt", "", ["/tmp/t.txt"], []),
        ("mkdir -p /tmp/d/e && cp x.txt /tmp/d/e/x.txt", "", ["/tmp/d/e", "/tmp/d/e/x.txt"], []),
        ("curl -o /tmp/page.html http://h/", "", ["/tmp/page.html"], []),
        ("mktemp -d", "/tmp/tmp.Ab12\n\n[exit code 0]", ["/tmp/tmp.Ab12"], []),
        ("cat /tmp/only-read.txt", "", [], []),
        ("echo hi > /tmp", "", [], []),
        ("echo hi > notes.txt", "", [], []),
        ("rm -rf /tmp/old", "", [], ["/tmp/old"]),
        ("echo 'unbalanced > /tmp/q", "", ["/tmp/q"], []),
    ],
)
def test_what_a_command_tells_about_the_temporary_paths_it_made(
    command: str, output: str, created: list[str], removed: list[str]
) -> None:
    run = ShellRun(command, "/w", output, 3, "c1")
    assert created_temp_paths(run, ("/tmp",)) == (created, removed)


def test_history_reads_the_mcp_records_and_shell_runs(ws: Path) -> None:
    session = used(ws, ("run_shell", {"command": "echo hi"}))
    down = replace(NOTES, reachable=False, tools=())
    session.append(MCP_CONNECT, down.to_json(), ignorable=True)
    history = read_history(session.events)
    assert history.mcp["notes"].reachable  # a later unreachable record does not hide the last good one
    assert history.mcp_tools["mcp__notes__add"] == ("notes", "add")
    (run,) = history.shell_runs
    assert run.command == "echo hi" and "hi" in run.output

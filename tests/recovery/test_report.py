"""``WorldReport``: a quiet world gives an empty report; the JSON shape, ordering,
rendering, the drift message (and its plugin-source user message) and ``record_report``;
a check that fails or a malformed log never breaks the report."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest
from rich.console import Console

import harness
from harness.recovery import (
    DRIFT_SOURCE,
    RECOVERY_CHECK,
    FindingKind,
    Severity,
    WorldReport,
    check_world,
    record_report,
)
from harness.recovery.render import render_report
from harness.tools.registry import default_tools
from tests.recovery.helpers import (
    Call,
    agent_turn,
    check,
    cut_after,
    index_of,
    make_repo,
    provider,
    restart,
)

EVERY_TOOL: list[Call] = [
    ("read_file", {"path": "a.txt"}),
    ("list_dir", {"path": "."}),
    ("grep", {"pattern": "alpha"}),
    ("write_file", {"path": "out.txt", "content": "one\n"}),
    ("edit_file", {"path": "out.txt", "old": "one", "new": "two"}),
    ("run_shell", {"command": "echo hi"}),
    ("todo_write", {"todos": [{"content": "check", "status": "completed"}]}),
]


def text_of(report: WorldReport) -> str:
    console = Console(record=True, width=160, color_system=None)
    console.print(render_report(report))
    return console.export_text()


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "ws", {"a.txt": "alpha\n", "b.txt": "beta\n"})


@pytest.fixture
def quiet(ws: Path) -> harness.Session:
    """Two turns with every built-in tool, then a clean stop."""
    session = harness.Session.create()
    assert agent_turn(session, ws, EVERY_TOOL).kind == "completed"
    agent_turn(session, ws, [("read_file", {"path": "out.txt"})])
    return restart(session)


def test_a_quiet_world_gives_an_empty_report(quiet: harness.Session, ws: Path) -> None:
    results = [e for e in quiet.events if e.type == "tool/result"]
    assert not any("error" in e.data for e in results)  # every tool really ran
    report = check(quiet, ws)
    assert report.findings == ()
    assert not report.blocking
    assert report.skipped == {}
    assert report.drift_message() is None
    assert report.drift_user_message() is None
    assert "nothing changed" in text_of(report)


@pytest.mark.parametrize("kind", list(FindingKind))
def test_no_kind_is_raised_in_a_quiet_world(quiet: harness.Session, ws: Path, kind: FindingKind) -> None:
    assert check(quiet, ws).of_kind(kind) == ()


STORED_KINDS = {
    "WORKSPACE_MOVED": "workspace-moved",
    "FILE_CHANGED": "file-changed",
    "FILE_VANISHED": "file-vanished",
    "GIT_HEAD_MOVED": "git-head-moved",
    "GIT_DIRTY": "git-dirty",
    "BASELINE_MISSING": "baseline-missing",
    "TOOL_MISSING": "tool-missing",
    "TOOL_SCHEMA_CHANGED": "tool-schema-changed",
    "ROUTE_CHANGED": "route-changed",
    "ACTION_OUTCOME_UNKNOWN": "action-outcome-unknown",
    "ACTION_NOT_STARTED": "action-not-started",
    "APPROVAL_PENDING": "approval-pending",
    "COMPACTION_ORPHAN": "compaction-orphan",
    "BACKGROUND_PROCESS": "background-process",
    "TEMP_FILE_VANISHED": "temp-file-vanished",
    "MCP_SERVER_UNREACHABLE": "mcp-server-unreachable",
    "MCP_TOOL_REMOVED": "mcp-tool-removed",
    "MCP_TOOL_SCHEMA_CHANGED": "mcp-tool-schema-changed",
    "MCP_SERVER_CHANGED": "mcp-server-version-changed",
    "MCP_SESSION_LOST": "mcp-session-lost",
    "CREDENTIALS_MISSING": "credentials-missing",
    "CREDENTIALS_REJECTED": "credentials-rejected",
    "CREDENTIALS_UNCHECKED": "credentials-unchecked",
}


def test_kinds_and_severities_are_the_strings_stored_logs_hold() -> None:
    """The enums name what earlier releases wrote as bare strings: a stored report reads the same."""
    assert {kind.name: kind.value for kind in FindingKind} == STORED_KINDS  # in report order too
    assert list(STORED_KINDS) == [kind.name for kind in FindingKind]
    assert [level.value for level in Severity] == ["block", "warn", "info"]  # most severe first
    assert FindingKind("git-dirty") is FindingKind.GIT_DIRTY and str(FindingKind.GIT_DIRTY) == "git-dirty"
    assert f"{Severity.BLOCK}" == "block"


def test_no_bare_finding_kind_constant_is_public() -> None:
    """A kind is ``FindingKind.GIT_DIRTY``, never ``harness.recovery.GIT_DIRTY`` nor ``harness.GIT_DIRTY``."""
    import importlib
    import pkgutil

    import harness.recovery

    stored = set(STORED_KINDS.values()) | {level.value for level in Severity}
    modules = [harness, harness.recovery] + [
        importlib.import_module(info.name)
        for info in pkgutil.walk_packages(harness.recovery.__path__, "harness.recovery.")
    ]
    for module in modules:
        for name in [*getattr(module, "__all__", ()), *vars(module)]:
            if name.startswith("_"):
                continue
            value = getattr(module, name)
            where = f"{module.__name__}.{name}"
            assert name not in STORED_KINDS, where
            assert not (isinstance(value, str) and value in stored), where
            assert not (isinstance(value, (tuple, list)) and value and set(value) <= stored), where


def busy_report(ws: Path) -> tuple[harness.Session, WorldReport]:
    """A run killed in run_shell, with a.txt edited and b.txt deleted meanwhile, checked
    with another model."""
    session = harness.Session.create()
    agent_turn(
        session,
        ws,
        [
            ("read_file", {"path": "a.txt"}),
            ("read_file", {"path": "b.txt"}),
            ("run_shell", {"command": "echo hi"}),
        ],
    )
    crashed = cut_after(session, index_of(session, "tool/call", name="run_shell"))
    (ws / "a.txt").write_text("alpha, edited\n")
    (ws / "b.txt").unlink()
    return crashed, check(crashed, ws, model="m-2")


def test_the_json_shape(ws: Path) -> None:
    session, report = busy_report(ws)
    data = report.to_json()
    assert list(data) == [
        "version",
        "session",
        "workspace",
        "atSeq",
        "blocking",
        "counts",
        "skipped",
        "findings",
    ]
    assert data["version"] == 1
    assert data["session"] == session.id
    assert data["workspace"] == str(ws)
    assert data["atSeq"] == len(session.events) - 1
    assert data["blocking"] is True
    assert data["counts"] == {"block": 1, "warn": 3, "info": 0}
    assert [f["kind"] for f in data["findings"]] == [
        "action-outcome-unknown",
        "file-changed",
        "file-vanished",
        "route-changed",
    ]
    for item in data["findings"]:
        assert list(item) == ["kind", "severity", "summary", "evidence", "action"]
        assert "\n" not in item["summary"]
    assert json.loads(json.dumps(data)) == data


def test_findings_come_most_severe_first_and_are_frozen(ws: Path) -> None:
    _, report = busy_report(ws)
    order = {"block": 0, "warn": 1, "info": 2}
    assert [order[f.severity] for f in report.findings] == sorted(order[f.severity] for f in report.findings)
    first = report.findings[0]
    with pytest.raises(AttributeError):
        first.severity = Severity.INFO  # type: ignore[misc]
    with pytest.raises(TypeError):
        first.evidence["tool"] = "other"  # type: ignore[index]
    assert msgspec.structs.replace(first, severity=Severity.INFO).severity == "info"


def test_render_shows_every_finding_and_says_it_blocks(ws: Path) -> None:
    _, report = busy_report(ws)
    text = text_of(report)
    assert "1 block, 3 warn" in text
    assert "Resolve the blocking findings" in text
    for kind in ("action-outcome-unknown", "file-changed", "file-vanished", "route-changed"):
        assert kind in text


def test_the_drift_message_names_what_changed_in_our_words(ws: Path) -> None:
    _, report = busy_report(ws)
    message = report.drift_message()
    assert message is not None
    lines = message.splitlines()
    assert lines[0].startswith("Note from the harness")
    assert "- a.txt has changed since you last read it." in lines
    assert "- b.txt no longer exists (you last read it)." in lines
    assert "m-2" not in message  # the route and the unknown outcome are not workspace drift


def test_the_drift_user_message_has_a_plugin_source_and_restores(ws: Path) -> None:
    crashed, report = busy_report(ws)
    message = report.drift_user_message()
    assert message is not None
    assert (
        message["source"]
        == DRIFT_SOURCE
        == {"kind": "plugin", "plugin": "recovery", "form": "workspace-drift"}
    )
    crashed.append("user/message", message, surface_op="append")
    assert crashed.derive_messages()[-1].text == report.drift_message()
    wire = [e.to_json() for e in crashed.events]
    again = harness.Session.from_restore(crashed.id, wire, crashed.header)
    assert again.derive_messages()[-1].source.kind == "plugin"


def test_record_report_appends_an_ignorable_recovery_check_that_restores(ws: Path) -> None:
    crashed, report = busy_report(ws)
    event = record_report(crashed, report)
    assert (event.type, event.ignorable, event.seq) == (RECOVERY_CHECK, True, len(crashed.events) - 1)
    assert event.surface_op is None
    assert event.data == report.to_json()
    wire = [e.to_json() for e in crashed.events]
    again = harness.Session.from_restore(crashed.id, wire, crashed.header)
    assert again.events[event.seq].to_json() == event.to_json()


def test_a_failing_check_is_listed_as_skipped_and_the_rest_still_run(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: object) -> list[object]:
        raise RuntimeError("no /proc today")

    monkeypatch.setattr("harness.recovery.world.check_processes", broken)
    _, report = busy_report(ws)
    assert report.skipped == {"processes": "the check failed: RuntimeError: no /proc today"}
    assert [f.kind for f in report.findings] == [
        "action-outcome-unknown",
        "file-changed",
        "file-vanished",
        "route-changed",
    ]


def test_a_malformed_log_does_not_break_the_check(ws: Path) -> None:
    header = harness.Session.create().header
    # append refuses a numeric callId; a foreign writer's log holding one still restores
    seed = [
        {"type": "turn/start", "seq": 0, "time": 1, "data": {"turn": 1}},
        {"type": "workspace/baseline", "seq": 1, "time": 1, "data": {"root": 7, "git": "yes"}}
        | {"ignorable": True},
        {"type": "tool/call", "seq": 2, "time": 1, "data": {"turn": 1, "step": 1, "callId": 3, "name": None}},
    ]
    session = harness.Session.from_restore(header.id, seed, header)
    session.append("approval/asked", {"toolName": "x"})
    session.append("approval/decided", {"id": "never-asked", "outcome": "rejected"})
    session.append("compaction/end", {"compactionId": "never-started"})
    session.append("request/context", {"provider": 1, "model": ["m"]})
    # (a malformed request/header cannot be appended: restore would refuse it)
    session.append("turn/end", {"turn": 1, "reason": {"kind": "completed"}})
    report = check_world(session, ws, default_tools(), provider())  # live: restore would refuse it
    assert report.skipped == {}
    assert {f.kind for f in report.findings} <= {"route-changed"}

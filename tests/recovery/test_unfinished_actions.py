"""Unfinished actions: tool calls a crash left with an unknown outcome or not started,
and approvals asked and never answered. Crashes are cut into logs the real loop wrote
(the prefix up to the crash, then crash repair and the end-seed, as ``load`` does)."""

from __future__ import annotations

from pathlib import Path

import pytest

import harness
from harness.agent.approval import FixedApprover
from harness.recovery import FindingKind
from harness.tools.registry import default_tools
from tests.recovery.helpers import agent_turn, check, cut_after, index_of, kinds, make_repo, restart

UNFINISHED_KINDS = (
    FindingKind.ACTION_OUTCOME_UNKNOWN,
    FindingKind.ACTION_NOT_STARTED,
    FindingKind.APPROVAL_PENDING,
)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "ws", {"a.txt": "alpha\n", "notes.txt": "old notes\n"})


def ran(
    ws: Path, *calls: tuple[str, dict[str, str]], approver: FixedApprover | None = None
) -> harness.Session:
    session = harness.Session.create()
    agent_turn(session, ws, list(calls), approver=approver)
    return session


def crashed_in_call(session: harness.Session, tool: str) -> harness.Session:
    """Killed after ``tool``'s call was recorded (and its body ran), before its result."""
    return cut_after(session, index_of(session, "tool/call", name=tool))


@pytest.mark.parametrize("kind", UNFINISHED_KINDS)
def test_a_finished_turn_leaves_nothing_unfinished(ws: Path, kind: FindingKind) -> None:
    session = ran(ws, ("read_file", {"path": "a.txt"}), ("run_shell", {"command": "echo hi"}))
    assert check(restart(session), ws).of_kind(kind) == ()


@pytest.mark.parametrize("kind", UNFINISHED_KINDS)
def test_an_interrupted_turn_that_was_then_continued_is_not_reported_again(
    ws: Path, kind: FindingKind
) -> None:
    session = crashed_in_call(ran(ws, ("run_shell", {"command": "echo hi"})), "run_shell")
    assert check(session, ws).of_kind(FindingKind.ACTION_OUTCOME_UNKNOWN)  # reported once ...
    agent_turn(session, ws, [("read_file", {"path": "a.txt"})])  # ... the next turn dealt with it
    assert check(restart(session), ws).of_kind(kind) == ()


def test_a_resumed_turn_that_crashed_again_keeps_the_first_unknown_outcome(ws: Path) -> None:
    session = crashed_in_call(ran(ws, ("run_shell", {"command": "echo hi"})), "run_shell")
    session.append("turn/start", {"turn": 2})  # resumed, then killed before the model answered
    session.append("step/start", {"turn": 2, "step": 1})
    session.append("user/message", harness.user_message("carry on"), surface_op="append")
    again = restart(session)
    assert [e.data["reason"]["kind"] for e in again.events if e.type == "turn/end"] == [
        "interrupted",
        "interrupted",
    ]
    (item,) = check(again, ws).of_kind(FindingKind.ACTION_OUTCOME_UNKNOWN)
    assert (item.severity, item.evidence["tool"]) == ("block", "run_shell")


def test_a_killed_run_shell_blocks(ws: Path) -> None:
    session = crashed_in_call(ran(ws, ("run_shell", {"command": "echo one >> a.txt"})), "run_shell")
    report = check(session, ws)
    (item,) = report.of_kind(FindingKind.ACTION_OUTCOME_UNKNOWN)
    assert item.severity == "block" and report.blocking
    assert item.evidence["tool"] == "run_shell"
    assert item.evidence["code"] == "TOOL_OUTCOME_UNKNOWN"
    assert item.evidence["changesWorld"] is True
    assert item.evidence["arguments"] == '{"command": "echo one >> a.txt"}'
    assert session.events[item.evidence["callSeq"]].type == "tool/call"
    assert session.events[item.evidence["resultSeq"]].data["error"]["code"] == "TOOL_OUTCOME_UNKNOWN"


def test_a_killed_read_only_call_only_warns_it_is_safe_to_retry(ws: Path) -> None:
    session = crashed_in_call(ran(ws, ("read_file", {"path": "a.txt"})), "read_file")
    report = check(session, ws)
    (item,) = report.of_kind(FindingKind.ACTION_OUTCOME_UNKNOWN)
    assert (item.severity, item.evidence["changesWorld"]) == ("warn", False)
    assert "safe" in item.summary
    assert not report.blocking


def test_a_killed_call_of_a_tool_that_is_gone_blocks(ws: Path) -> None:
    session = crashed_in_call(ran(ws, ("read_file", {"path": "a.txt"})), "read_file")
    tools = [tool for tool in default_tools() if tool.spec.name != "read_file"]
    (item,) = check(session, ws, tools=tools).of_kind(FindingKind.ACTION_OUTCOME_UNKNOWN)
    assert (item.severity, item.evidence["changesWorld"]) == ("block", None)


def test_a_killed_write_whose_content_is_in_place_took_effect(ws: Path) -> None:
    session = ran(ws, ("write_file", {"path": "notes.txt", "content": "new notes\n"}))
    (item,) = check(crashed_in_call(session, "write_file"), ws).of_kind(FindingKind.ACTION_OUTCOME_UNKNOWN)
    assert (item.severity, item.evidence["verified"]) == ("warn", "applied")


def test_a_killed_write_that_left_the_file_as_it_was_did_not_take_effect(ws: Path) -> None:
    session = ran(
        ws,
        ("read_file", {"path": "notes.txt"}),
        ("write_file", {"path": "notes.txt", "content": "new notes\n"}),
    )
    crashed = crashed_in_call(session, "write_file")
    (ws / "notes.txt").write_text("old notes\n")  # the world as if the body never ran
    (item,) = check(crashed, ws).of_kind(FindingKind.ACTION_OUTCOME_UNKNOWN)
    assert (item.severity, item.evidence["verified"]) == ("warn", "not-applied")


def test_a_killed_write_of_a_new_file_that_is_absent_did_not_take_effect(ws: Path) -> None:
    session = ran(ws, ("write_file", {"path": "made.txt", "content": "made\n"}))
    crashed = crashed_in_call(session, "write_file")
    (ws / "made.txt").unlink()
    (item,) = check(crashed, ws).of_kind(FindingKind.ACTION_OUTCOME_UNKNOWN)
    assert item.evidence["verified"] == "not-applied"


def test_a_killed_write_whose_file_holds_something_else_blocks(ws: Path) -> None:
    session = ran(ws, ("write_file", {"path": "notes.txt", "content": "new notes\n"}))
    crashed = crashed_in_call(session, "write_file")
    (ws / "notes.txt").write_text("half of it\n")
    (item,) = check(crashed, ws).of_kind(FindingKind.ACTION_OUTCOME_UNKNOWN)
    assert item.severity == "block"
    assert "verified" not in item.evidence


def test_a_call_the_model_made_that_never_started_is_information(ws: Path) -> None:
    session = ran(ws, ("run_shell", {"command": "echo hi"}))
    message = index_of(session, "tool/call", name="run_shell") - 1
    assert session.events[message].type == "assistant/message"
    crashed = cut_after(session, message)
    report = check(crashed, ws)
    assert kinds(report) == [FindingKind.ACTION_NOT_STARTED]
    (item,) = report.findings
    assert (item.severity, item.evidence["code"], item.evidence["callSeq"]) == (
        "info",
        "TOOL_NOT_STARTED",
        None,
    )
    assert item.evidence["tool"] == "run_shell"


def test_an_approval_asked_and_never_answered_is_pending_and_the_call_never_ran(ws: Path) -> None:
    session = ran(ws, ("run_shell", {"command": "echo hi"}))
    crashed = cut_after(session, index_of(session, "approval/asked"))
    report = check(crashed, ws)
    (pending,) = report.of_kind(FindingKind.APPROVAL_PENDING)
    asked = session.events[index_of(session, "approval/asked")].data
    assert pending.severity == "warn"
    assert pending.evidence == {
        "id": asked["id"],
        "tool": "run_shell",
        "callId": asked["callId"],
        "askedSeq": index_of(session, "approval/asked"),
    }
    (unknown,) = report.of_kind(FindingKind.ACTION_OUTCOME_UNKNOWN)
    assert (unknown.severity, unknown.evidence["ran"]) == ("warn", False)
    assert unknown.evidence["approval"] == {"id": asked["id"], "outcome": None}
    assert not report.blocking


def test_an_answered_approval_is_not_pending(ws: Path) -> None:
    session = ran(ws, ("run_shell", {"command": "echo hi"}))
    crashed = cut_after(session, index_of(session, "approval/decided"))
    report = check(crashed, ws)
    assert report.of_kind(FindingKind.APPROVAL_PENDING) == ()
    (unknown,) = report.of_kind(FindingKind.ACTION_OUTCOME_UNKNOWN)
    assert unknown.severity == "block"  # allowed: it may have run


def test_a_rejected_call_cut_before_its_result_did_not_run(ws: Path) -> None:
    session = ran(ws, ("run_shell", {"command": "echo hi"}), approver=FixedApprover("rejected"))
    crashed = cut_after(session, index_of(session, "approval/decided"))
    (unknown,) = check(crashed, ws).of_kind(FindingKind.ACTION_OUTCOME_UNKNOWN)
    assert (unknown.severity, unknown.evidence["ran"]) == ("info", False)
    assert unknown.evidence["approval"]["outcome"] == "rejected"

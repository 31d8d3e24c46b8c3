"""An orphan compaction, and background processes run_shell left running: gone, reused
or still there. Each raised, and absent when nothing is left over."""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

import harness
from harness.recovery import FindingKind, read_history
from harness.recovery.checks.processes import check_processes
from harness.recovery.procs import ProcessProbe
from tests.recovery.helpers import agent_turn, check, index_of, kinds, restart
from tests.tools.helpers import gone_soon


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "plain"
    root.mkdir()
    (root / "a.txt").write_text("alpha\n")
    return root


@pytest.fixture
def reap() -> Iterator[list[int]]:
    """Pids a test leaves running; killed afterwards."""
    pids: list[int] = []
    yield pids
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def one_turn(ws: Path) -> harness.Session:
    session = harness.Session.create()
    agent_turn(session, ws, [("read_file", {"path": "a.txt"})])
    return session


def compact_first_turn(session: harness.Session, compaction_id: str, *, summary: bool, end: bool) -> None:
    """A manual compaction (between turns) of the whole Surface, stopped where asked."""
    start = session.append("compaction/start", {"compactionId": compaction_id, "turn": None})
    if summary:
        nodes = list(session.surface.nodes)
        written = session.append(
            "compaction/summary",
            {
                "compactionId": compaction_id,
                "summary": "The user asked to read a.txt; it holds alpha.",
                "shadowedRange": {"start": nodes[0], "end": nodes[-1]},
                "shadowedSeqs": nodes,
                "shadowedTokenCount": 40,
                "provider": "scripted",
                "model": "m-1",
            },
        )
        session.append(
            "user/message",
            harness.user_message("Earlier: a.txt was read; it holds alpha."),
            surface_op=harness.Replace(nodes[0], nodes[-1]),
            source_event_seqs=[start.seq, written.seq, *nodes],
        )
    if end:
        session.append("compaction/end", {"compactionId": compaction_id, "turn": None})


def test_a_finished_compaction_is_not_an_orphan(ws: Path) -> None:
    session = one_turn(ws)
    compact_first_turn(session, "k-1", summary=True, end=True)
    assert check(restart(session), ws).of_kind(FindingKind.COMPACTION_ORPHAN) == ()


def test_a_session_without_compactions_has_no_orphan(ws: Path) -> None:
    assert check(restart(one_turn(ws)), ws).of_kind(FindingKind.COMPACTION_ORPHAN) == ()


def test_a_compaction_cut_off_before_a_restart_is_stale_information(ws: Path) -> None:
    session = one_turn(ws)
    compact_first_turn(session, "k-1", summary=False, end=False)
    restored = restart(session)
    report = check(restored, ws)
    assert kinds(report) == [FindingKind.COMPACTION_ORPHAN]
    (item,) = report.findings
    assert item.severity == "info"
    assert item.evidence["compactionId"] == "k-1"
    assert item.evidence["summarySeq"] is None
    assert restored.events[item.evidence["endSeedSeq"]].type == "session/end-seed"
    assert "nothing was replaced" in item.summary


def test_an_orphan_whose_summary_was_committed_says_the_surface_was_replaced(ws: Path) -> None:
    session = one_turn(ws)
    compact_first_turn(session, "k-1", summary=True, end=False)
    (item,) = check(restart(session), ws).of_kind(FindingKind.COMPACTION_ORPHAN)
    assert item.evidence["summarySeq"] == index_of(session, "compaction/summary")
    assert "only the end marker is missing" in item.summary


def test_an_open_compaction_in_a_live_session_warns(ws: Path) -> None:
    session = one_turn(ws)
    compact_first_turn(session, "k-1", summary=False, end=False)
    (item,) = check(session, ws).of_kind(FindingKind.COMPACTION_ORPHAN)  # no restart after it
    assert item.severity == "warn"
    assert item.evidence["endSeedSeq"] is None


def background_session(ws: Path, reap: list[int]) -> tuple[harness.Session, int]:
    session = harness.Session.create()
    agent_turn(session, ws, [("run_shell", {"command": "sleep 30 > /dev/null 2>&1 & echo started"})])
    result = session.events[index_of(session, "tool/result")]
    (pid,) = result.data["meta"]["background"]
    reap.append(pid)
    return restart(session), pid


def test_a_shell_without_background_jobs_leaves_no_process_finding(ws: Path) -> None:
    session = harness.Session.create()
    agent_turn(session, ws, [("run_shell", {"command": "echo hi"})])
    assert check(restart(session), ws).of_kind(FindingKind.BACKGROUND_PROCESS) == ()


def test_a_background_process_that_died_is_gone(ws: Path, reap: list[int]) -> None:
    session, pid = background_session(ws, reap)
    os.kill(pid, signal.SIGKILL)
    assert gone_soon(pid)
    report = check(session, ws)
    (item,) = report.of_kind(FindingKind.BACKGROUND_PROCESS)
    assert (item.severity, item.evidence["state"], item.evidence["pid"]) == ("warn", "gone", pid)
    assert item.evidence["command"] == "sleep 30 > /dev/null 2>&1 & echo started"
    message = report.drift_message()
    assert message is not None and f"background process {pid}" in message


def test_a_background_process_still_running_is_information(ws: Path, reap: list[int]) -> None:
    session, _ = background_session(ws, reap)
    report = check(session, ws)
    (item,) = report.of_kind(FindingKind.BACKGROUND_PROCESS)
    assert (item.severity, item.evidence["state"]) == ("info", "running")
    if item.evidence["startedAt"] is not None:  # known on Linux
        assert item.evidence["startedAt"] <= item.evidence["recordedAt"] + 2000
    assert report.drift_message() is None


def test_a_pid_now_held_by_a_younger_process_is_reported_as_reused(ws: Path, reap: list[int]) -> None:
    session, pid = background_session(ws, reap)
    history = read_history(session.events)
    recorded = history.background[pid].result_time

    def younger(candidate: int) -> ProcessProbe:  # what /proc shows once the pid is recycled
        return ProcessProbe(alive=True, started_ms=recorded + 60_000)

    (item,) = check_processes(history, younger)
    assert (item.severity, item.evidence["state"]) == ("warn", "reused")
    assert f"never signal pid {pid}" in item.action

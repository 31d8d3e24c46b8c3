"""A real crash: a harness process running the agent loop over a JSONL store is killed
with SIGKILL while ``run_shell`` runs. Loading the session repairs it; the world check
then blocks on the unknown outcome and sees what the half-run command left behind."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import harness
from harness.recovery import RECOVERY_CHECK, FindingKind, WorldReport, check_world, record_report
from harness.stores.jsonl.backend import JsonlBackend
from harness.stores.store import SessionStore
from harness.tools.registry import default_tools
from tests.recovery.helpers import MODEL, kinds, make_repo, provider

REPO = Path(__file__).resolve().parents[2]

CHILD = textwrap.dedent(
    """
    import asyncio, json, sys
    from pathlib import Path
    sys.path.insert(0, sys.argv[3])
    from harness.stores.jsonl.backend import JsonlBackend
    from harness.stores.store import SessionStore
    from tests.recovery.helpers import agent_turn_async

    async def main() -> None:
        root, ws = Path(sys.argv[1]), Path(sys.argv[2])
        store = SessionStore(JsonlBackend(root))
        session = await store.create(cwd=str(ws))
        print(session.id, flush=True)
        command = "echo $$ > shell.pid; echo started > started.txt; sleep 30"
        await agent_turn_async(session, ws, [("run_shell", {"command": command})], checkpoint=store.flush)

    asyncio.run(main())
    """
)


def wait_for(path: Path, timeout_s: float = 20.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not path.exists() or not path.read_text().strip():
        if time.monotonic() > deadline:
            raise AssertionError(f"{path} did not appear")
        time.sleep(0.02)


def load_check_and_record(root: Path, session_id: str, ws: Path) -> tuple[harness.Session, WorldReport]:
    async def go() -> tuple[harness.Session, WorldReport]:
        store = SessionStore(JsonlBackend(root))
        try:
            session = await store.load(session_id)  # commits the crash-repair closers
            report = check_world(session, ws, default_tools(), provider(), model=MODEL)
            record_report(session, report)
            await store.flush(session)
            return session, report
        finally:
            await store.close()

    return asyncio.run(go())


def test_sigkill_during_run_shell_is_reported_as_a_blocking_unknown_outcome(tmp_path: Path) -> None:
    ws = make_repo(tmp_path / "ws", {"a.txt": "alpha\n"})
    root = tmp_path / "sessions"
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(root), str(ws), str(REPO)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    shell_pid: int | None = None
    try:
        assert child.stdout is not None
        session_id = child.stdout.readline().strip()
        wait_for(ws / "shell.pid")  # the body runs: its tool/call was flushed before it
        wait_for(ws / "started.txt")
        shell_pid = int((ws / "shell.pid").read_text())
        os.killpg(child.pid, signal.SIGKILL)
        child.communicate(timeout=20)
        assert child.returncode == -signal.SIGKILL
        session, report = load_check_and_record(root, session_id, ws)
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
            child.communicate(timeout=20)
        if shell_pid is not None:  # the shell runs in its own session: the kill did not reach it
            with contextlib.suppress(ProcessLookupError):
                os.killpg(shell_pid, signal.SIGKILL)

    assert kinds(report) == [FindingKind.ACTION_OUTCOME_UNKNOWN, FindingKind.GIT_DIRTY]
    unknown, dirty = report.findings
    assert unknown.severity == "block" and report.blocking
    assert unknown.evidence["tool"] == "run_shell"
    assert "sleep 30" in unknown.evidence["arguments"]
    repaired = session.events[unknown.evidence["resultSeq"]]
    assert repaired.type == "tool/result"
    assert repaired.data["error"]["code"] == "TOOL_OUTCOME_UNKNOWN"
    assert dirty.evidence["paths"] == ["shell.pid", "started.txt"]
    assert dirty.evidence["shellCallsAfter"] == 1  # the half-run command explains it

    async def reread() -> harness.Session:
        store = SessionStore(JsonlBackend(root))
        try:
            return await store.inspect(session_id)
        finally:
            await store.close()

    stored = asyncio.run(reread())
    (checked,) = [e for e in stored.events if e.type == RECOVERY_CHECK]
    assert checked.ignorable
    assert checked.data["blocking"] is True
    assert [f["kind"] for f in checked.data["findings"]] == [
        "action-outcome-unknown",
        "git-dirty",
    ]  # as stored

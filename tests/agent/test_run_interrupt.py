"""Ctrl-C in ``harness run`` on a real terminal (a pty) while it waits to retry a rate-limited
request: the turn ends ``aborted`` in the log and the command exits 130 (``EXIT_INTERRUPTED``,
as ``chat`` does), not 1, the code of a failed turn (issue 12 item 12, review)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from harness.agent.loop import TurnOutcome
from harness.cli.outcome import EXIT_CODES_HELP, EXIT_FAILED, EXIT_INTERRUPTED, exit_code
from harness.stores.jsonl.reader import read_log_file
from harness.testing.fake_deepseek import FakeDeepSeek, Reply
from tests.agent.pty_terminal import CTRL_C, Terminal

KEY = "sk-test-run-interrupt-5"


def test_ctrl_c_during_a_retry_wait_exits_130_and_closes_the_turn(tmp_path: Path) -> None:
    root, workspace = tmp_path / "sessions", tmp_path / "ws"
    workspace.mkdir()
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    args = [sys.executable, "-m", "harness", "--store", str(root), "run", "say hi", "-w", str(workspace)]
    with FakeDeepSeek([Reply.text("never sent")], api_key=KEY) as server:
        server.fail_next(429, retry_after=60)
        env.update(DEEPSEEK_BASE_URL=server.base_url, DEEPSEEK_API_KEY=KEY)
        with Terminal(args, env, columns=80) as terminal:
            terminal.expect(b"retrying in 60 s")
            terminal.send(CTRL_C)
            code = terminal.wait()
            shown = terminal.text()
    assert code == EXIT_INTERRUPTED == 130, shown
    assert "Traceback" not in shown and "Aborted" not in shown, shown
    (log,) = root.rglob("session.jsonl.zstd")
    events = read_log_file(str(log)).stored_log().events
    ends = [e["data"]["reason"] for e in events if e["type"] == "turn/end"]
    assert ends == [{"kind": "aborted", "reason": {"kind": "user"}}]


def test_exit_codes_tell_a_cancel_from_a_failure() -> None:
    cancelled = TurnOutcome(1, {"kind": "aborted", "reason": {"kind": "user"}})
    failed = TurnOutcome(1, {"kind": "error", "step": 1, "error": {"code": "TRANSPORT", "message": "x"}})
    assert exit_code(cancelled, []) == EXIT_INTERRUPTED
    assert exit_code(failed, []) == EXIT_FAILED
    assert "130" in EXIT_CODES_HELP

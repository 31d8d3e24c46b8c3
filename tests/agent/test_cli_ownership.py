"""Two terminals on one session, with real processes (issue 27's scenario).

``harness run --session K`` in terminal A streams a long answer while terminal B runs
``harness run --session K`` too. Before ownership, B committed a crash repair of A's live turn
and A's answer was lost ("final flush failed"). Now B exits 5 with one line naming A, and A's
turn is stored whole; ``--wait`` waits for A; ``--take-over`` fences A off (A says it was taken
over and that its turn was not stored); a SIGKILLed owner's session is repaired at once by the
next ``resume``, and the repair names the dead process; Ctrl-C lets the session go.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from harness.cli.ownership import EXIT_IN_USE, taken_over_line
from harness.errors import LeaseLost, SessionOwner
from harness.session.session import Session
from harness.testing.fake_deepseek import FakeDeepSeek, Reply
from tests.agent.cli_support import stored
from tests.agent.pty_terminal import CTRL_C, Terminal

KEY = "sk-test-ownership-27"
SLOW = 0.25  # seconds between the deltas of a long answer


@pytest.fixture
def workspace(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "ws"
    path.mkdir()
    yield path


def harness(root: Path, server: FakeDeepSeek, workspace: Path, *args: str) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    env.update(DEEPSEEK_BASE_URL=server.base_url, DEEPSEEK_API_KEY=KEY, COLUMNS="200")
    return subprocess.Popen(
        [sys.executable, "-m", "harness", "--store", str(root), *args, "-w", str(workspace)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def reader(root: Path, *args: str) -> subprocess.Popen[str]:
    """A read command (no workspace, no provider)."""
    return subprocess.Popen(
        [sys.executable, "-m", "harness", "--store", str(root), *args],
        env={**os.environ, "COLUMNS": "200"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finished(child: subprocess.Popen[str], timeout: float = 60) -> tuple[int, str]:
    out, err = child.communicate(timeout=timeout)
    return child.returncode, out + err


def wait_for(condition: Callable[[], bool], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting")
        time.sleep(0.02)


def first_session(root: Path, server: FakeDeepSeek, workspace: Path) -> str:
    code, output = finished(harness(root, server, workspace, "run", "hello"))
    assert code == 0, output
    (log,) = root.rglob("session.jsonl.zstd")
    from harness.stores.jsonl.reader import read_log_file

    return read_log_file(str(log)).header.id


def streaming(server: FakeDeepSeek, served: int) -> Callable[[], bool]:
    """True once the server has answered ``served`` chat requests (the long one is streaming)."""
    return lambda: sum(1 for r in server.requests if r.method == "POST") >= served


def turn_ends(session: Session) -> list[str]:
    return [e.data["reason"]["kind"] for e in session.events if e.type == "turn/end"]


def test_a_second_run_is_refused_while_the_first_streams(tmp_path: Path, workspace: Path) -> None:
    root = tmp_path / "sessions"
    story = [f"part {i} " for i in range(28)]  # 7 s: three CLI starts fit in it, even on a busy machine
    script = [Reply.text("hi"), Reply.text(story, delay_s=SLOW), Reply.text("4")]
    with FakeDeepSeek(script, api_key=KEY) as server:
        sid = first_session(root, server, workspace)
        a = harness(root, server, workspace, "run", "--session", sid, "tell me a long story")
        wait_for(streaming(server, 2))
        b_code, b_output = finished(harness(root, server, workspace, "run", "--session", sid, "what is 2+2"))
        log_code, log_output = finished(reader(root, "log", sid))
        list_code, list_output = finished(reader(root, "sessions"))
        a_code, a_output = finished(a)
    assert list_code == 0 and f"live: {sid} is owned by pid {a.pid} on host" in list_output, list_output
    assert log_code == 0, log_output
    assert f"live: turn 2 running, owner pid {a.pid} on host" in log_output, log_output
    assert "interrupted" not in log_output  # the running turn is shown as stored, not repaired
    assert b_code == EXIT_IN_USE == 5, b_output
    (line,) = [text for text in b_output.splitlines() if text.strip()]
    assert f"pid {a.pid} on host" in line and "--wait SECONDS" in line and "--take-over" in line, line
    assert "Traceback" not in b_output
    assert a_code == 0, a_output
    assert "ended: completed" in a_output and "final flush failed" not in a_output
    session = stored(root, sid)
    assert turn_ends(session) == ["completed", "completed"]  # no crash that never happened
    assert not any(e.type == "harness/repair" for e in session.events)
    replies = [e for e in session.events if e.type == "assistant/message"]
    assert "".join(story).strip() in str(replies[-1].data["message"])


def test_wait_runs_after_the_owner_finishes(tmp_path: Path, workspace: Path) -> None:
    root = tmp_path / "sessions"
    script = [Reply.text("hi"), Reply.text([f"p{i} " for i in range(8)], delay_s=SLOW), Reply.text("4")]
    with FakeDeepSeek(script, api_key=KEY) as server:
        sid = first_session(root, server, workspace)
        a = harness(root, server, workspace, "run", "--session", sid, "long story")
        wait_for(streaming(server, 2))
        b = harness(root, server, workspace, "run", "--session", sid, "what is 2+2", "--wait", "60")
        a_code, a_output = finished(a)
        b_code, b_output = finished(b)
    assert (a_code, b_code) == (0, 0), (a_output, b_output)
    session = stored(root, sid)
    assert turn_ends(session) == ["completed", "completed", "completed"]
    prompts = [str(e.data) for e in session.events if e.type == "user/message"]
    assert "long story" in prompts[1] and "what is 2+2" in prompts[2]  # A's turn whole, then B's


def test_take_over_fences_the_streaming_owner(tmp_path: Path, workspace: Path) -> None:
    root = tmp_path / "sessions"
    script = [Reply.text("hi"), Reply.text([f"p{i} " for i in range(12)], delay_s=SLOW), Reply.text("4")]
    with FakeDeepSeek(script, api_key=KEY) as server:
        sid = first_session(root, server, workspace)
        a = harness(root, server, workspace, "run", "--session", sid, "long story")
        wait_for(streaming(server, 2))
        b = harness(root, server, workspace, "run", "--session", sid, "what is 2+2", "--take-over")
        b_code, b_output = finished(b)
        a_code, a_output = finished(a)
    assert b_code == 0, b_output
    assert a_code == 1, a_output
    assert f"taken over by pid {b.pid} on host" in a_output, a_output
    assert "your turn was not stored" in a_output and "completed" not in a_output, a_output
    session = stored(root, sid)
    assert turn_ends(session) == ["completed", "interrupted", "completed"]
    (note,) = [e for e in session.events if e.type == "harness/repair"]
    assert note.data["reason"] == "taken-over" and note.data["closedTurn"] == 2
    assert note.data["previousOwner"]["pid"] == a.pid
    assert note.data["repairedBy"]["pid"] == b.pid


def test_a_killed_owner_is_repaired_at_once_and_named(tmp_path: Path, workspace: Path) -> None:
    root = tmp_path / "sessions"
    script = [Reply.text("hi"), Reply.hang("never finished"), Reply.text("recovered")]
    with FakeDeepSeek(script, api_key=KEY) as server:
        sid = first_session(root, server, workspace)
        a = harness(root, server, workspace, "run", "--session", sid, "long story")
        wait_for(streaming(server, 2))
        os.killpg(a.pid, signal.SIGKILL)
        a.communicate()
        b_code, b_output = finished(harness(root, server, workspace, "resume", sid, "go on", "--yes"))
    assert b_code == 0, b_output
    assert "closed as interrupted" in b_output
    session = stored(root, sid)
    assert turn_ends(session) == ["completed", "interrupted", "completed"]
    (note,) = [e for e in session.events if e.type == "harness/repair"]
    assert note.data["reason"] == "owner-gone" and note.data["previousOwner"]["pid"] == a.pid


def test_ctrl_c_lets_the_session_go(tmp_path: Path, workspace: Path) -> None:
    root = tmp_path / "sessions"
    script = [Reply.text("hi"), Reply.hang("waiting"), Reply.text("4")]
    with FakeDeepSeek(script, api_key=KEY) as server:
        sid = first_session(root, server, workspace)
        env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
        env.update(DEEPSEEK_BASE_URL=server.base_url, DEEPSEEK_API_KEY=KEY)
        args = [sys.executable, "-m", "harness", "--store", str(root), "run", "--session", sid, "wait"]
        with Terminal([*args, "-w", str(workspace)], env) as terminal:
            terminal.expect(b"waiting")
            terminal.send(CTRL_C)
            assert terminal.wait() == 130, terminal.text()
        b_code, b_output = finished(harness(root, server, workspace, "run", "--session", sid, "2+2"))
    assert b_code == 0, b_output  # owned by nobody: no --wait needed
    session = stored(root, sid)
    assert turn_ends(session) == ["completed", "aborted", "completed"]
    assert not any(e.type == "harness/repair" for e in session.events)


def test_the_options_need_a_session(tmp_path: Path, workspace: Path) -> None:
    with FakeDeepSeek([], api_key=KEY) as server:
        for extra in (["--take-over"], ["--wait", "5"]):
            code, output = finished(harness(tmp_path / "s", server, workspace, "run", "x", *extra))
            assert code == 2 and "--session" in output, output
        code, output = finished(
            harness(tmp_path / "s", server, workspace, "resume", "k", "--wait", "1", "--take-over")
        )
        assert code == 2 and "exclude each other" in output, output
        code, output = finished(harness(tmp_path / "s", server, workspace, "resume", "k", "--wait", "-1"))
        assert code == 2, output


def test_the_taken_over_line_says_from_where_the_turn_was_not_stored() -> None:
    by = SessionOwner(pid=42, host="h", store="s", since=None)
    assert taken_over_line(LeaseLost("x", by=by)).endswith("; your turn was not stored")
    # an earlier attempt of the refused batch had landed (PostgreSQL, a lost reply)
    line = taken_over_line(LeaseLost("x", by=by, stored=17))
    assert line.endswith("; your turn from seq 17 on was not stored")
    assert "pid 42 on host h" in taken_over_line(LeaseLost("x", by=by))

"""run_shell: exit codes, confinement of cwd, output cap, timeout, cancel, background jobs."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.tools.base import ToolError
from harness.tools.shell import RunShell, shell_environment

from .helpers import context, gone_soon, pid_alive, refusal, run

# A child that leaves the shell's process group but stays in its session.
OWN_GROUP_SLEEPER = shlex.quote(sys.executable) + " -c 'import os, time; os.setpgid(0, 0); time.sleep(60)'"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    workspace = tmp_path / "ws"
    (workspace / "sub").mkdir(parents=True)
    (tmp_path / "outside").mkdir()
    os.symlink("../outside", workspace / "out")
    return workspace


@pytest.fixture
def reap() -> Iterator[list[int]]:
    """Pids a test leaves running on purpose; killed afterwards."""
    pids: list[int] = []
    yield pids
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def read_pid(path: Path) -> int:
    return int(path.read_text().strip())


def test_output_and_exit_code(root: Path) -> None:
    outcome = run(RunShell(), {"command": "echo out; echo err >&2"}, root)
    assert not outcome.is_error
    assert outcome.text == "out\nerr\n\n[exit code 0]"
    assert outcome.meta == {"command": "echo out; echo err >&2", "exitCode": 0, "timedOut": False, "cwd": "."}
    assert run(RunShell(), {"command": "true"}, root).text == "(no output)\n\n[exit code 0]"


def test_non_zero_exit_is_an_error(root: Path) -> None:
    outcome = run(RunShell(), {"command": "echo failing; exit 3"}, root)
    assert outcome.is_error
    assert outcome.text.endswith("[exit code 3]")
    assert outcome.meta is not None and outcome.meta["exitCode"] == 3
    killed = run(RunShell(), {"command": "kill -9 $$"}, root)
    assert killed.is_error and killed.text.endswith("[killed by signal 9]")
    assert killed.meta is not None and killed.meta["exitCode"] is None and killed.meta["signal"] == 9


def test_cwd_is_confined(root: Path) -> None:
    outcome = run(RunShell(), {"command": "pwd", "cwd": "sub"}, root)
    assert outcome.text.splitlines()[0] == os.path.realpath(root / "sub")
    assert outcome.meta is not None and outcome.meta["cwd"] == "sub"
    assert run(RunShell(), {"command": "pwd"}, root).text.splitlines()[0] == os.path.realpath(root)
    for cwd in ("..", "out", str(root.parent)):
        refusal(RunShell(), {"command": "touch escaped", "cwd": cwd}, root, "PATH_ESCAPE")
    assert not (root.parent / "escaped").exists() and not (root.parent / "outside" / "escaped").exists()
    (root / "file").write_text("")
    refusal(RunShell(), {"command": "true", "cwd": "file"}, root, "NOT_A_DIRECTORY")
    refusal(RunShell(), {"command": "true", "cwd": "missing"}, root, "NOT_A_DIRECTORY")


def test_invalid_arguments(root: Path) -> None:
    for arguments in (
        {},
        {"command": ""},
        {"command": "true", "timeout_s": 0},
        {"command": "true", "timeout_s": 601},
        {"command": "true", "timeout_s": "5"},
        {"command": "true", "shell": "bash"},
    ):
        refusal(RunShell(), arguments, root, "INVALID_ARGUMENTS")


def test_output_cap_keeps_head_and_tail(root: Path) -> None:
    outcome = run(RunShell(max_output_bytes=1000), {"command": "seq 1 20000"}, root)
    body = outcome.text.removesuffix("\n\n[exit code 0]")
    assert body.startswith("1\n2\n3\n")
    assert body.endswith("19999\n20000")
    total = len("".join(f"{n}\n" for n in range(1, 20001)))
    assert f"[… {total - 1000} of {total} bytes of output cut here …]" in body
    assert len(body.encode()) < 1000 + 100


@pytest.mark.parametrize("child", ["sleep 60", OWN_GROUP_SLEEPER], ids=["same-group", "own-group"])
def test_timeout_kills_every_process(root: Path, child: str) -> None:
    command = f"echo started; {child} & echo $! > child.pid; wait"
    with pytest.raises(ToolError) as caught:
        run(RunShell(), {"command": command, "timeout_s": 2}, root)
    error = caught.value
    assert error.code == "TIMEOUT"
    assert error.message.startswith("started\n")
    assert "Timed out after 2 s" in error.message
    assert error.meta == {"command": command, "exitCode": None, "timedOut": True, "cwd": ".", "signal": 9}
    assert gone_soon(read_pid(root / "child.pid"))


async def wait_for_file(path: Path) -> None:
    for _ in range(1000):
        if path.exists() and path.read_text().strip():
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"{path} never appeared")


def test_cancel_kills_the_group(root: Path) -> None:
    async def scenario() -> ToolError:
        ctx = context(root)
        task = asyncio.create_task(RunShell().run({"command": "sleep 60 & echo $! > child.pid; wait"}, ctx))
        await wait_for_file(root / "child.pid")
        ctx.cancel.set()
        with pytest.raises(ToolError) as caught:
            await task
        return caught.value

    error = asyncio.run(scenario())
    assert error.code == "CANCELLED"
    assert error.meta is not None and error.meta["cancelled"] is True and error.meta["timedOut"] is False
    assert gone_soon(read_pid(root / "child.pid"))


def test_task_cancellation_kills_the_group(root: Path) -> None:
    async def scenario() -> None:
        task = asyncio.create_task(
            RunShell().run({"command": "sleep 60 & echo $! > child.pid; wait"}, context(root))
        )
        await wait_for_file(root / "child.pid")
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(scenario())
    assert gone_soon(read_pid(root / "child.pid"))


def test_cancelled_before_start_runs_nothing(root: Path) -> None:
    async def scenario() -> ToolError:
        ctx = context(root)
        ctx.cancel.set()
        with pytest.raises(ToolError) as caught:
            await RunShell().run({"command": "touch ran"}, ctx)
        return caught.value

    assert asyncio.run(scenario()).code == "CANCELLED"
    assert not (root / "ran").exists()


def test_background_jobs_are_recorded(root: Path, reap: list[int]) -> None:
    outcome = run(RunShell(), {"command": "sleep 30 > /dev/null 2>&1 & echo $!"}, root)
    pid = int(outcome.text.splitlines()[0])
    reap.append(pid)
    assert outcome.meta is not None and outcome.meta["background"] == [pid]
    assert f"Still running in the background: pid {pid}." in outcome.text
    assert pid_alive(pid)


def test_credentials_do_not_reach_the_command(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-very-secret-1")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "very-secret-2")
    monkeypatch.setenv("GITHUB_TOKEN", "very-secret-3")
    monkeypatch.setenv("TOKENIZERS_PARALLELISM", "kept-1")
    monkeypatch.setenv("HARNESS_VISIBLE", "kept-2")
    outcome = run(RunShell(), {"command": "env"}, root)
    assert "very-secret" not in outcome.text
    assert "kept-1" in outcome.text and "kept-2" in outcome.text
    env = shell_environment({"MY_PASSWORD": "x", "PATH": "/bin", "PAGER": "less"})
    assert env == {"PATH": "/bin", "PAGER": "cat", "GIT_PAGER": "cat", "GIT_TERMINAL_PROMPT": "0"}

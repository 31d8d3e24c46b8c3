"""``run_shell``: run a command with ``/bin/sh -c`` in the workspace.

The command runs in its own session and process group (``start_new_session``) with
stdin from ``/dev/null`` and stdout and stderr merged into one pipe, in ``cwd`` (a
directory inside the workspace, default its root). The environment is the harness's
own minus variables whose names look like credentials (``*_API_KEY``, ``*_TOKEN``,
``*_SECRET*``, ``*_PASSWORD``, …: an API key must never reach the log through ``env``),
with pagers off and git's terminal prompts disabled.

- **Output** is capped at ``max_output_bytes``: the first and last halves are kept and
  the cut is marked (``OutputCapture``).
- **Exit**: a non-zero exit code (or death by a signal) makes the outcome an error; the
  code is in the text and in ``meta``.
- **Timeout** (default 120 s, at most 600): the whole group and session are killed with
  SIGKILL and the call fails with ``ToolError("TIMEOUT")`` carrying the output so far and
  ``meta``. **Cancel** (``context.cancel``) does the same with ``CANCELLED``; so does
  cancelling the task running the tool (the ``CancelledError`` then propagates).
- **Background processes**: when the shell exits while members of its session are still
  alive (``cmd &``), they are left running and their pids recorded in ``meta`` as
  ``background``; our end of the output pipe is closed, so a job that keeps writing to it
  gets SIGPIPE (the description tells the model to redirect such output).

``meta`` (see ``records.shell_meta``): ``{"command", "exitCode", "timedOut", "cwd",
"signal"?, "cancelled"?, "background"?}``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import subprocess
from collections.abc import Mapping
from typing import Any

from harness.tools.base import ToolContext, ToolError, ToolOutcome, ToolSpec
from harness.tools.capture import OutputCapture
from harness.tools.processes import kill_members, session_members
from harness.tools.records import shell_meta
from harness.tools.schema import check_arguments
from harness.tools.workspace import Workspace

__all__ = ["RunShell", "shell_environment"]

_SECRET_NAME = re.compile(r"(^|_)(API_?KEY|ACCESS_?KEY|SECRET|TOKEN|PASSWORD|PASSWD|CREDENTIALS?)(_|$)", re.I)

_DESCRIPTION = (
    "Run a shell command with /bin/sh -c in the workspace (or in `cwd`, a directory inside "
    "it) and return its combined stdout and stderr followed by the exit code. There is no "
    "input and no terminal: do not start interactive programs. Long output keeps its "
    "beginning and end, with the middle cut. The command is killed, with everything it "
    "started, after `timeout_s` seconds (default {default:g}, at most {maximum:g}). A "
    "background job (`cmd &`) keeps running after the call returns; send its output to a "
    "file (`cmd > log.txt 2>&1 &`), because the call's output pipe is closed when the "
    "shell exits. Environment variables that look like credentials are not passed on."
)


def shell_environment(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment a command gets: ``base`` (default ``os.environ``) without
    credential-like names, with ``PAGER``/``GIT_PAGER`` set to ``cat`` and
    ``GIT_TERMINAL_PROMPT=0``."""
    source = os.environ if base is None else base
    env = {name: value for name, value in source.items() if not _SECRET_NAME.search(name)}
    env.update({"PAGER": "cat", "GIT_PAGER": "cat", "GIT_TERMINAL_PROMPT": "0"})
    return env


class _Pipe(asyncio.Protocol):
    """Feeds the read end of the output pipe into a capture; ``closed`` resolves at EOF."""

    def __init__(self, capture: OutputCapture, loop: asyncio.AbstractEventLoop) -> None:
        self.capture = capture
        self.closed: asyncio.Future[None] = loop.create_future()

    def data_received(self, data: bytes) -> None:
        self.capture.feed(data)

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.closed.done():
            self.closed.set_result(None)


class RunShell:
    """The ``run_shell`` tool (changes the world, exclusive); see the module doc."""

    changes_world = True
    exclusive = True

    def __init__(
        self,
        *,
        default_timeout_s: float = 120.0,
        max_timeout_s: float = 600.0,
        max_output_bytes: int = 30_000,
        eof_wait_s: float = 2.0,
        background_grace_s: float = 0.2,
    ) -> None:
        """Caps and waits are adjustable for tests. ``eof_wait_s`` bounds the wait for the
        output pipe to close once the shell is gone; ``background_grace_s`` is how long
        output is still read when background jobs hold the pipe open."""
        self.default_timeout_s = default_timeout_s
        self.max_timeout_s = max_timeout_s
        self.max_output_bytes = max_output_bytes
        self.eof_wait_s = eof_wait_s
        self.background_grace_s = background_grace_s
        self.spec = ToolSpec(
            name="run_shell",
            description=_DESCRIPTION.format(default=default_timeout_s, maximum=max_timeout_s),
            parameters={
                "type": "object",
                "properties": {
                    "command": {"type": "string", "minLength": 1, "description": "The shell command line."},
                    "timeout_s": {
                        "type": "number",
                        "minimum": 0.1,
                        "maximum": max_timeout_s,
                        "description": f"Seconds before it is killed. Default {default_timeout_s:g}.",
                    },
                    "cwd": {
                        "type": "string",
                        "minLength": 1,
                        "description": "Directory to run in, inside the workspace. Default: its root.",
                    },
                },
                "required": ["command"],
                "additionalProperties": False,
            },
        )

    async def run(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolOutcome:
        """Run the command (see the module doc)."""
        args = check_arguments(self.spec.name, self.spec.parameters, arguments)
        command: str = args["command"]
        timeout = float(args.get("timeout_s", self.default_timeout_s))
        workspace = Workspace(context.root)
        cwd = workspace.resolve(args.get("cwd", "."))
        cwd_shown = workspace.relative(cwd)
        if not cwd.is_dir():
            raise ToolError("NOT_A_DIRECTORY", f"cwd {cwd_shown} is not a directory.")
        if context.cancel.is_set():
            raise ToolError("CANCELLED", "The command was not started: the call was cancelled.")
        half = self.max_output_bytes // 2
        capture = OutputCapture(half, self.max_output_bytes - half)
        loop = asyncio.get_running_loop()
        read_fd, write_fd = os.pipe()
        reader = open(read_fd, "rb", buffering=0)  # noqa: SIM115 - the transport owns and closes it
        try:
            transport, pipe = await loop.connect_read_pipe(lambda: _Pipe(capture, loop), reader)
        except BaseException:
            reader.close()
            os.close(write_fd)
            raise
        try:
            try:
                process = await asyncio.create_subprocess_exec(
                    "/bin/sh",
                    "-c",
                    command,
                    stdin=subprocess.DEVNULL,
                    stdout=write_fd,
                    stderr=write_fd,
                    cwd=cwd,
                    env=shell_environment(),
                    start_new_session=True,
                )
            finally:
                os.close(write_fd)
        except OSError as error:
            transport.close()
            raise ToolError("SPAWN_FAILED", f"Could not start /bin/sh: {error.strerror or error}.") from None
        try:
            return await self._supervise(process, pipe, capture, context, command, cwd_shown, timeout)
        finally:
            transport.close()

    async def _supervise(
        self,
        process: asyncio.subprocess.Process,
        pipe: _Pipe,
        capture: OutputCapture,
        context: ToolContext,
        command: str,
        cwd: str,
        timeout: float,
    ) -> ToolOutcome:
        leader = process.pid
        finished = False
        exited = asyncio.ensure_future(process.wait())
        try:
            cancelled = asyncio.ensure_future(context.cancel.wait())
            try:
                done, _ = await asyncio.wait(
                    {exited, cancelled}, timeout=timeout, return_when="FIRST_COMPLETED"
                )
            finally:
                cancelled.cancel()
            background: list[int] = []
            if exited in done:
                ending = "exited"
                background = session_members(leader)
            else:
                ending = "cancelled" if cancelled in done else "timeout"
                kill_members(leader)
                await exited
            wait = self.background_grace_s if background else self.eof_wait_s
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(pipe.closed), wait)
            finished = True
        finally:
            if not finished:
                kill_members(leader)
                exited.cancel()
        code = exited.result()
        meta = shell_meta(
            command,
            cwd,
            exit_code=code if code >= 0 else None,
            timed_out=ending == "timeout",
            signal=-code if code < 0 else None,
            cancelled=ending == "cancelled",
            background=background,
        )
        output = capture.text().removesuffix("\n") or "(no output)"
        if ending == "timeout":
            raise ToolError(
                "TIMEOUT",
                f"{output}\n\n[Timed out after {timeout:g} s: the command and every process it started "
                "were killed.]",
                meta=meta,
            )
        if ending == "cancelled":
            raise ToolError(
                "CANCELLED",
                f"{output}\n\n[Cancelled: the command and every process it started were killed.]",
                meta=meta,
            )
        status = f"[exit code {code}]" if code >= 0 else f"[killed by signal {-code}]"
        if background:
            pids = ", ".join(str(pid) for pid in background)
            status += f"\n[Still running in the background: pid {pids}.]"
        return ToolOutcome(f"{output}\n\n{status}", is_error=code != 0, meta=meta)

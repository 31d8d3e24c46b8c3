"""``harness demo``: the whole cycle offline, with a scripted model.

A local fake DeepSeek server (``harness.testing``) plays a scripted model; the real
``openai`` client talks to it over HTTP. In a temporary workspace an agent process
(``harness run``) reads a file, writes one (an approval, granted by ``--yes``) and starts a
shell command; the demo kills that process with SIGKILL while the command runs. When the
``[mcp]`` extra is installed, the workspace's ``.mcp.json`` also starts the demo's MCP server
(``harness.demos.mcp_server``) and the model counts the todo list's lines with its read-only tool. Then
``notes.md`` is edited, as if by someone else. ``harness resume`` loads the session,
commits the crash repair (the command's outcome is unknown), checks the world against the
log (the edited file, the unfinished command), records and prints that report, tells the
model what changed, and the agent finishes the task. Last, the stored log is printed beside the
Surface folded from it, and the outcome is checked.
"""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

import harness
from harness.demos.engine import DemoCheckFailed, log_table, surface_table
from harness.stores.jsonl.reader import read_session_file
from harness.testing.fake_deepseek import FakeDeepSeek, RecordedRequest, Reply, usage

__all__ = ["DEMO_KEY", "TASK", "demo_script", "run_agent_demo"]

DEMO_KEY = "sk-demo-offline-not-a-real-key"
TASK = "Turn notes.md into a todo list in todo.md, then run greet.py and keep its greeting."
_SHELL = "python3 greet.py > greeting.txt && sleep 30"


def mcp_available() -> bool:
    """True when the ``mcp`` SDK is installed (the demo then uses its MCP server)."""
    import importlib.util

    return importlib.util.find_spec("mcp") is not None


def demo_script(mcp: bool = False) -> list[Reply]:
    """What the scripted model answers, request by request (``mcp``: with the MCP step)."""
    counted = [
        Reply.tool_calls(
            [("call_count", "mcp__facts__line_count", json.dumps({"path": "todo.md"}))],
            text="Checking the list with the workspace-facts MCP server.",
        )
    ]
    return [
        Reply.tool_calls(
            [("call_read", "read_file", json.dumps({"path": "notes.md"}))],
            text="I'll read the notes first.",
        ),
        Reply.tool_calls(
            [
                (
                    "call_write",
                    "write_file",
                    json.dumps({"path": "todo.md", "content": "- [ ] buy milk\n- [ ] call Ada\n"}),
                )
            ],
            text="Two items. Writing them as a todo list.",
        ),
        *(counted if mcp else []),
        Reply.tool_calls([("call_shell", "run_shell", json.dumps({"command": _SHELL}))]),
        # after the crash and the resume
        Reply.tool_calls(
            [("call_check", "read_file", json.dumps({"path": "greeting.txt"}))],
            text="The last command's outcome is unknown; checking what it left behind.",
        ),
        Reply.text(
            "greeting.txt holds the greeting. notes.md gained an item since I read it, so todo.md "
            "lists the two I saw; say if you want the new one added. Done."
        ),
    ]


def _pump(stream: IO[bytes], console: Console, lines: list[str]) -> None:
    for raw in iter(stream.readline, b""):
        line = raw.decode("utf-8", "replace").rstrip("\n")
        lines.append(line)
        console.print(Text("│ ", style="dim") + Text.from_ansi(line), highlight=False)


def _harness(root: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "harness", "--store", str(root), *args]


def _start(
    command: Sequence[str], env: dict[str, str], console: Console
) -> tuple[subprocess.Popen[bytes], list[str]]:
    process = subprocess.Popen(
        list(command),
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    lines: list[str] = []
    assert process.stdout is not None
    threading.Thread(target=_pump, args=(process.stdout, console, lines), daemon=True).start()
    return process, lines


def _wait_for(check: Callable[[], bool], process: subprocess.Popen[bytes], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if process.poll() is not None:
            raise DemoCheckFailed(f"the agent process exited early (status {process.returncode})")
        if time.monotonic() > deadline:
            raise DemoCheckFailed("the agent did not reach the shell command in time")
        time.sleep(0.05)


def _workspace(root: Path, mcp: bool) -> None:
    root.mkdir()
    (root / "notes.md").write_text("# Notes\n\nbuy milk\ncall Ada\n")
    (root / "greet.py").write_text('print("Hello from the workspace!")\n')
    if mcp:
        server = {"command": sys.executable, "args": ["-m", "harness.demos.mcp_server"]}
        (root / ".mcp.json").write_text(json.dumps({"mcpServers": {"facts": server}}, indent=2) + "\n")


def run_agent_demo(console: Console | None = None, sessions: Path | None = None) -> harness.Session:
    """Run the demo (see the module doc); returns the final stored session.

    The sessions are kept in ``sessions`` (a new directory; default: a fresh temporary one
    that is left in place), and the demo ends by saying how to open them in the viewer.
    Raises ``DemoCheckFailed`` when the cycle does not end as it must.
    """
    out = console or Console()
    if sessions is None:
        sessions = Path(tempfile.mkdtemp(prefix="harness-demo-sessions-")) / "sessions"
    with tempfile.TemporaryDirectory(prefix="harness-demo-") as tmp:
        base = Path(tmp)
        workspace = base / "workspace"
        mcp = mcp_available()
        _workspace(workspace, mcp)
        out.rule("[bold]harness demo[/]: an agent run, a crash, a resume — offline")
        out.print(
            "The model is [bold]scripted[/]: a local DeepSeek-compatible server on 127.0.0.1 answers "
            "the real openai client. Nothing leaves this machine.",
            highlight=False,
        )
        out.print(f"Workspace: {workspace}\nSessions:  {sessions}\nTask: {escape(TASK)}", highlight=False)
        if mcp:
            out.print(
                "The workspace's [bold].mcp.json[/] starts an MCP server (workspace-facts, over stdio): "
                "its read-only tool is offered to the model as mcp__facts__line_count.",
                highlight=False,
            )
        with FakeDeepSeek(demo_script(mcp), api_key=DEMO_KEY) as server:
            env = {**os.environ, "DEEPSEEK_BASE_URL": server.base_url, "DEEPSEEK_API_KEY": DEMO_KEY}
            env.setdefault("COLUMNS", str(max(out.width - 2, 60)))
            out.rule("1. harness run --yes (the agent process)")
            process, _ = _start(_harness(sessions, "run", TASK, "-w", str(workspace), "--yes"), env, out)
            try:
                _wait_for((workspace / "greeting.txt").exists, process)
                time.sleep(0.2)  # the shell command is now inside its `sleep`
            finally:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
            out.print(
                f"[bold red]✘ killed the agent process with SIGKILL[/] while run_shell was running "
                f"(exit status {process.returncode})",
                highlight=False,
            )
            (workspace / "notes.md").write_text("# Notes\n\nbuy milk\ncall Ada\nwater the plants\n")
            out.print(
                "Between the crash and the resume, someone edits [bold]notes.md[/] (which the agent "
                "had read): the resume's world check must notice.",
                highlight=False,
            )
            logs = list(sessions.rglob("session.jsonl*"))
            if len(logs) != 1:
                raise DemoCheckFailed(f"expected one session log, found {len(logs)}")
            session_id = read_session_file(str(logs[0])).id
            out.rule("2. harness resume (load, crash repair, world check, continue)")
            resumed, resume_lines = _start(
                _harness(sessions, "resume", session_id, "-w", str(workspace), "--yes"), env, out
            )
            status = resumed.wait(timeout=120)
            time.sleep(0.1)  # let the pump print the last lines
        session = read_session_file(str(logs[0]))
        _show(out, session)
        _check(session, status, resume_lines, sessions, workspace, mcp)
        compacted = asyncio.run(_compaction_section(out, sessions, workspace))
        _check_compaction(compacted)
        out.print(
            Text(
                "✔ Every flushed event survived the kill; the repair marked the interrupted command's "
                "outcome as unknown; the world check caught the edited file; the resumed agent "
                "finished the task; one automatic compaction kept the history in the log; the demo "
                "key is in no file."
                + (" The MCP server's read-only tool ran without an approval, and the resume "
                   "reconnected it and said its session state was lost." if mcp else ""),
                style="bold green",
            )
        )
        out.print(
            Text(
                f"The demo's sessions are kept in {sessions}. Browse them (the Event Log beside "
                "the Surface, the compaction, the world check, time travel) in the viewer:"
            ),
            highlight=False,
        )
        # one unbroken line, so that it can be copied
        out.print(
            f"  {escape(_harness_command())} serve --store {escape(shlex.quote(str(sessions)))} --open",
            highlight=False,
            soft_wrap=True,
        )
        return session


def _harness_command() -> str:
    """How the user runs harness: ``harness`` when it is on PATH, else the program's own path
    (``make demo`` runs ``.venv/bin/harness`` without activating the venv)."""
    program = sys.argv[0] if sys.argv else ""
    found = shutil.which("harness")
    if found is None and os.path.basename(program) == "harness" and os.path.exists(program):
        return shlex.quote(program)
    return "harness"


_WINDOW = 5000
"""The scripted model's context window in section 4: small, so pressure builds in three turns."""


def _compaction_reply(request: RecordedRequest) -> Reply:
    if request.header("x-deepseek-harness-compact") == "1":
        return Reply.text(
            "## Goal\nKeep the workspace notes and todo list in step.\n"
            "## Done so far\nThree long notes were reviewed; todo.md lists buy milk and call Ada.\n"
            "## Next\nAnswer the next question from this summary."
        )
    asked = request.messages[-1].get("content", "") if request.messages else ""
    answer = f"Noted ({len(str(asked))} characters). " + "Reviewed in detail. " * 60
    # a rough count, as a real model reports it: about four bytes of request per token
    return Reply.text(answer, usage=usage(len(request.raw_body) // 4, len(answer) // 4))


async def _compaction_section(out: Console, sessions: Path, workspace: Path) -> harness.Session:
    """A second session whose scripted model has a small window: the third turn's pre-step
    compacts automatically (the model writes the summary, over the compaction header)."""
    from harness.agent.loop import Agent, AgentSettings
    from harness.compaction import CompactionPolicy, ExtractiveSummarizer, FallbackSummarizer, LlmSummarizer
    from harness.providers.deepseek import DeepSeekProvider
    from harness.stores.open import open_store

    out.rule(f"4. automatic compaction (the scripted model's window: {_WINDOW:,} tokens)")
    store = open_store(f"jsonl:{sessions}")
    with FakeDeepSeek([_compaction_reply] * 8, api_key=DEMO_KEY) as server:
        provider = DeepSeekProvider(
            server.base_url, api_key=DEMO_KEY, model_windows={"deepseek-v4-flash": _WINDOW}
        )
        try:
            session = await store.create(cwd=str(workspace))
            summarizer = FallbackSummarizer(LlmSummarizer(provider), ExtractiveSummarizer())
            agent = Agent(
                session,
                provider,
                [],
                AgentSettings(model="deepseek-v4-flash", system="You keep notes short."),
                workspace=workspace,
                checkpoint=store.flush,
                summarizer=summarizer,
                compaction=CompactionPolicy(),
            )
            before: Table | None = None
            for index in range(1, 7):
                before = surface_table(session)
                note = f"Note {index}: " + "the garden needs water and the shed needs paint. " * 45
                await agent.run_turn(note)
                if session.surface.replace_generation:
                    break
            await store.flush(session)
        finally:
            await provider.aclose()
            await store.close()
    if before is not None:
        out.print(before)
    kinds = [event.type for event in session.events]
    if "compaction/summary" in kinds:
        start = kinds.index("compaction/start")
        summary = session.events[kinds.index("compaction/summary")].data
        shadowed = summary["shadowedRange"]
        out.print(
            f"Pressure crossed 80% of the window at the pre-step of turn "
            f"{session.events[start - 1].data.get('turn')}: compaction/start (seq {start}), the "
            f"model's summary, a checkpoint message replacing Surface nodes {shadowed['start']}…"
            f"{shadowed['end']} ({summary['shadowedTokenCount']} tokens), compaction/end. The "
            f"shadowed events stay in the log:",
            highlight=False,
        )
    out.print(surface_table(session))
    return session


def _check_compaction(session: harness.Session) -> None:
    kinds = [event.type for event in session.events]
    if kinds.count("compaction/end") != 1 or session.surface.replace_generation != 1:
        count = kinds.count("compaction/end")
        raise DemoCheckFailed(f"expected one automatic compaction, the log has {count}")
    end = next(e for e in session.events if e.type == "compaction/end")
    if end.data.get("error"):
        raise DemoCheckFailed(f"the compaction failed: {end.data['error']}")


def _show(out: Console, session: harness.Session) -> None:
    out.rule("3. the stored session: Event Log beside the Surface")
    grid = Table.grid(padding=(0, 2), expand=True)
    grid.add_column(vertical="top", ratio=62)
    grid.add_column(vertical="top", ratio=38)
    grid.add_row(log_table(session), surface_table(session))
    out.print(grid)


def _check(
    session: harness.Session,
    status: int,
    resume_lines: list[str],
    sessions: Path,
    workspace: Path,
    mcp: bool,
) -> None:
    events = list(session.events)
    ends = [e.data["reason"]["kind"] for e in events if e.type == "turn/end"]
    unknown = [
        e
        for e in events
        if e.type == "tool/result" and e.data.get("error", {}).get("code") == "TOOL_OUTCOME_UNKNOWN"
    ]
    problems = []
    if status != 0:
        problems.append(f"harness resume exited with {status}")
    if ends != ["interrupted", "completed"]:
        problems.append(f"turn ends were {ends}")
    if len(unknown) != 1:
        problems.append("no TOOL_OUTCOME_UNKNOWN result for the killed command")
    if not any("TOOL_OUTCOME_UNKNOWN" in line for line in resume_lines):
        problems.append("resume did not report the repair")
    checks = [e for e in events if e.type == "recovery/check"]
    kinds = {f["kind"] for e in checks for f in e.data["findings"]}
    if not {"file-changed", "action-outcome-unknown", *(["mcp-session-lost"] if mcp else [])} <= kinds:
        problems.append(f"the world check found {sorted(kinds)}")
    counted = [
        e.data["message"]["content"][0]["content"][0].get("text")
        for e in events
        if e.type == "tool/result" and e.data["message"]["source"].get("callId") == "call_count"
    ]
    if mcp and counted != ["2"]:
        problems.append(f"the MCP tool answered {counted}, not 2 lines")
    if not (workspace / "todo.md").exists():
        problems.append("todo.md was not written")
    for path in [*sessions.rglob("*"), *workspace.rglob("*")]:
        if path.is_file() and DEMO_KEY.encode() in path.read_bytes():
            problems.append(f"the API key was written to {path}")
    if problems:
        raise DemoCheckFailed("; ".join(problems))

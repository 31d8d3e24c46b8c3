"""The commands that run agents: ``run``, ``chat``, ``resume`` and ``export``.

They share the store options of the ``harness`` root command. The model is DeepSeek (or
any OpenAI-compatible endpoint: ``DEEPSEEK_BASE_URL``), the key comes from
``DEEPSEEK_API_KEY`` and never enters the log. World-changing tools ask for approval:
at a prompt in ``chat`` and ``resume`` on a terminal; a headless run denies them unless
``--yes``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.prompt import Confirm

from harness.agent.approval import ApprovalOutcome, ApprovalRequest, Approver, FixedApprover
from harness.agent.loop import Agent, AgentSettings, TurnOutcome
from harness.cli.app import _errors, _fail, _options, app
from harness.cli.live import LivePrinter
from harness.events.event import Event
from harness.providers.base import Provider
from harness.session.session import Session
from harness.stores.store import SessionStore
from harness.tools.base import Tool

__all__ = ["DEFAULT_MODEL", "PromptApprover", "system_prompt"]

DEFAULT_MODEL = "deepseek-v4-flash"
RESUME_PROMPT = "Carry on with the task from where the session stopped."


def system_prompt(workspace: Path) -> str:
    """The system prompt of a harness agent (our own wording)."""
    return (
        f"You are a careful coding agent. Your workspace is {workspace}; every path you use is "
        "inside it. Look before you change anything, make the smallest change that does the job, "
        "and say briefly what you did and what is left."
    )


class PromptApprover:
    """Asks the person at the terminal; anything but yes is a rejection."""

    def __init__(self, console: Console) -> None:
        self.console = console

    async def decide(self, request: ApprovalRequest) -> ApprovalOutcome:
        question = (
            f"Allow [bold]{escape(request.tool_name)}[/] with {escape(_short(request.arguments))}?"
        )
        try:
            allowed = await asyncio.to_thread(Confirm.ask, question, console=self.console, default=False)
        except (EOFError, KeyboardInterrupt):
            return "cancelled"
        return "allowed-once" if allowed else "rejected"


def _short(text: str, width: int = 160) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def _provider() -> Provider:
    from harness.providers.deepseek import DeepSeekProvider

    return DeepSeekProvider()


def _tools() -> list[Tool]:
    from harness.tools.registry import default_tools

    return list(default_tools())


def _approver(yes: bool, interactive: bool, console: Console) -> Approver:
    if yes:
        return FixedApprover("allowed-once")
    if interactive and sys.stdin.isatty():
        return PromptApprover(console)
    return FixedApprover("unavailable")


@contextlib.contextmanager
def _cancel_on_interrupt(agent: Agent) -> Iterator[None]:
    """Ctrl-C cancels the running turn (it ends ``aborted``); a second one stops hard."""
    loop = asyncio.get_running_loop()
    pressed = 0

    def interrupt() -> None:
        nonlocal pressed
        pressed += 1
        if pressed > 1:
            raise KeyboardInterrupt
        agent.cancel()

    try:
        loop.add_signal_handler(signal.SIGINT, interrupt)
    except (NotImplementedError, RuntimeError):  # not the main thread, or no signals here
        yield
        return
    try:
        yield
    finally:
        loop.remove_signal_handler(signal.SIGINT)


async def _run_turns(
    store: SessionStore,
    session: Session,
    prompts: list[str],
    *,
    model: str,
    workspace: Path,
    approver: Approver,
    console: Console,
) -> TurnOutcome | None:
    provider = _provider()
    agent = Agent(
        session,
        provider,
        _tools(),
        AgentSettings(model=model, system=system_prompt(workspace)),
        workspace=workspace,
        checkpoint=store.flush,
        approver=approver,
    )
    unsubscribe = session.subscribe(LivePrinter(console))
    outcome = None
    try:
        for prompt in prompts:
            with _cancel_on_interrupt(agent):
                outcome = await agent.run_turn(prompt)
            await store.flush(session)
    finally:
        unsubscribe()
        await provider.aclose()
    return outcome


def _workspace(path: str | None) -> Path:
    root = Path(path or os.getcwd()).resolve()
    if not root.is_dir():
        _fail(f"workspace {root} is not a directory", 2)
    return root


def _outcome_json(session: Session, outcome: TurnOutcome | None) -> dict[str, Any]:
    return {
        "session": session.id,
        "turn": outcome.turn if outcome else None,
        "reason": outcome.reason if outcome else None,
        "events": len(session.events),
    }


def _finish(session: Session, outcome: TurnOutcome | None, as_json: bool, console: Console) -> None:
    if as_json:
        sys.stdout.write(json.dumps(_outcome_json(session, outcome), ensure_ascii=False) + "\n")
    else:
        console.print(f"[dim]session {session.id}[/]", highlight=False)
    raise typer.Exit(0 if outcome is not None and outcome.kind == "completed" else 1)


def _repair_note(session: Session, console: Console) -> None:
    """Say what the load's crash repair added (the closers before the end-seed)."""
    events = list(session.events)
    closers = [event for event in events[: session.first_live_seq] if _is_closer(event)]
    for event in closers:
        data = event.data
        if event.type == "tool/result":
            call = data["message"]["source"].get("callId")
            code = data.get("error", {}).get("code")
            console.print(f"[yellow]repaired[/]: tool call {escape(str(call))} → {escape(str(code))}")
        elif event.type == "turn/end":
            console.print(f"[yellow]repaired[/]: turn {data.get('turn')} closed as interrupted")


def _is_closer(event: Event) -> bool:
    data = event.data
    if event.type == "turn/end":
        reason = data.get("reason") if isinstance(data, dict) else None
        return isinstance(reason, dict) and reason.get("kind") == "interrupted"
    if event.type == "tool/result":
        error = data.get("error") if isinstance(data, dict) else None
        return isinstance(error, dict) and error.get("code") in ("TOOL_OUTCOME_UNKNOWN", "TOOL_NOT_STARTED")
    return False


@app.command()
def run(
    ctx: typer.Context,
    task: str = typer.Argument(..., help="What the agent should do."),
    model: str = typer.Option(DEFAULT_MODEL, "--model", envvar="HARNESS_MODEL", help="Model id."),
    workspace: str | None = typer.Option(None, "--workspace", "-w", help="Workspace root (default: cwd)."),
    session_id: str | None = typer.Option(None, "--session", help="Continue this stored session."),
    yes: bool = typer.Option(False, "--yes", "-y", help="Allow every world-changing tool call."),
    as_json: bool = typer.Option(False, "--json", help="Print the outcome as JSON."),
) -> None:
    """Run one task headless. Exit 0 when the turn completes."""
    root = _workspace(workspace)
    console = Console(stderr=as_json)

    async def main() -> tuple[Session, TurnOutcome | None]:
        store = SessionStore(_options(ctx).backend())
        try:
            session = await (store.load(session_id) if session_id else store.create(cwd=str(root)))
            approver = _approver(yes, False, console)
            outcome = await _run_turns(
                store, session, [task], model=model, workspace=root, approver=approver, console=console
            )
            return session, outcome
        finally:
            await store.close()

    with _errors():
        session, outcome = asyncio.run(main())
    _finish(session, outcome, as_json, console)


@app.command()
def resume(
    ctx: typer.Context,
    session_id: str = typer.Argument(..., metavar="ID"),
    prompt: str = typer.Argument(RESUME_PROMPT, help="The message that continues the session."),
    model: str = typer.Option(DEFAULT_MODEL, "--model", envvar="HARNESS_MODEL", help="Model id."),
    workspace: str | None = typer.Option(None, "--workspace", "-w", help="Workspace root (default: cwd)."),
    yes: bool = typer.Option(False, "--yes", "-y", help="Allow every world-changing tool call."),
    as_json: bool = typer.Option(False, "--json", help="Print the outcome as JSON."),
) -> None:
    """Load a session (committing its crash repair), then continue it with one turn."""
    console = Console(stderr=as_json)

    async def main() -> tuple[Session, TurnOutcome | None]:
        store = SessionStore(_options(ctx).backend())
        try:
            session = await store.load(session_id)
            root = _workspace(workspace or session.header.cwd)
            _repair_note(session, console)
            approver = _approver(yes, True, console)
            outcome = await _run_turns(
                store, session, [prompt], model=model, workspace=root, approver=approver, console=console
            )
            return session, outcome
        finally:
            await store.close()

    with _errors():
        session, outcome = asyncio.run(main())
    _finish(session, outcome, as_json, console)


@app.command()
def chat(
    ctx: typer.Context,
    model: str = typer.Option(DEFAULT_MODEL, "--model", envvar="HARNESS_MODEL", help="Model id."),
    workspace: str | None = typer.Option(None, "--workspace", "-w", help="Workspace root (default: cwd)."),
    session_id: str | None = typer.Option(None, "--session", help="Continue this stored session."),
    yes: bool = typer.Option(False, "--yes", "-y", help="Allow every world-changing tool call."),
) -> None:
    """Talk with the agent. /exit leaves; /compact is reserved for compaction."""
    root = _workspace(workspace)
    console = Console()

    async def main() -> Session:
        store = SessionStore(_options(ctx).backend())
        try:
            session = await (store.load(session_id) if session_id else store.create(cwd=str(root)))
            console.print(f"[dim]session {session.id} · {model} · /exit to leave[/]", highlight=False)
            approver = _approver(yes, True, console)
            while True:
                try:
                    line = await asyncio.to_thread(console.input, "[bold]you>[/] ")
                except (EOFError, KeyboardInterrupt):
                    break
                text = line.strip()
                if not text:
                    continue
                if text == "/exit":
                    break
                if text == "/compact":
                    console.print("[yellow]/compact is not available in this version yet[/]")
                    continue
                await _run_turns(
                    store, session, [text], model=model, workspace=root, approver=approver, console=console
                )
            return session
        finally:
            await store.close()

    with _errors():
        session = asyncio.run(main())
    console.print(f"[dim]session {session.id}[/]", highlight=False)


@app.command()
def export(
    ctx: typer.Context,
    session_id: str = typer.Argument(..., metavar="ID"),
    format: str = typer.Option("markdown", "--format", help="markdown or openai (chat-completions JSON)."),
) -> None:
    """Print the model-visible history of a session as Markdown or as OpenAI chat messages."""
    from harness.cli.export import to_markdown, to_openai

    if format not in ("markdown", "openai"):
        _fail(f"--format must be markdown or openai, not {format!r}", 2)

    async def main() -> Session:
        store = SessionStore(_options(ctx).backend())
        try:
            return await store.inspect(session_id)
        finally:
            await store.close()

    with _errors():
        session = asyncio.run(main())
    if format == "openai":
        sys.stdout.write(json.dumps(to_openai(session), ensure_ascii=False, indent=2) + "\n")
    else:
        sys.stdout.write(to_markdown(session))

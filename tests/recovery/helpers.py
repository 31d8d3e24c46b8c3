"""Real worlds for the recovery tests: temporary git repositories, sessions written by
the real agent loop (scripted model, real tools), and crashes cut into their logs."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import harness
from harness.agent.approval import Approver, FixedApprover
from harness.agent.loop import Agent, AgentSettings, TurnOutcome
from harness.events.event import Event
from harness.providers.base import Provider
from harness.recovery import FindingKind, WorldReport, check_world
from harness.testing.scripted import ScriptedProvider, calls_reply, text_reply
from harness.tools.base import Tool
from harness.tools.registry import default_tools

MODEL = "m-1"
WINDOW = 1000

_GIT_ENV = {
    "GIT_AUTHOR_NAME": "Recovery Test",
    "GIT_AUTHOR_EMAIL": "recovery@example.invalid",
    "GIT_COMMITTER_NAME": "Recovery Test",
    "GIT_COMMITTER_EMAIL": "recovery@example.invalid",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
}


def git(root: Path, *args: str) -> str:
    """Run git in ``root`` with a fixed identity and no user configuration; its stdout."""
    done = subprocess.run(
        ["git", "-C", str(root), "-c", "commit.gpgsign=false", *args],
        env={**os.environ, **_GIT_ENV},
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    )
    return done.stdout.strip()


def make_repo(root: Path, files: Mapping[str, str]) -> Path:
    """A git repository at ``root`` whose first commit (branch ``main``) holds ``files``."""
    root.mkdir(parents=True, exist_ok=True)
    git(root, "init", "-q", "-b", "main")
    write_files(root, files)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "first")
    return root


def write_files(root: Path, files: Mapping[str, str]) -> None:
    """Write each ``path: text`` under ``root`` (parents created)."""
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def commit_all(root: Path, message: str) -> str:
    """Commit every change in ``root``; the new HEAD."""
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", message)
    return git(root, "rev-parse", "HEAD")


class OtherRoute(ScriptedProvider):
    """A scripted provider under another route name."""

    @property
    def route(self) -> str:
        return "elsewhere"


def provider(window: int = WINDOW) -> ScriptedProvider:
    """A provider like the one the helpers run turns with (no replies left)."""
    return ScriptedProvider([], window=window)


Call = tuple[str, Mapping[str, Any]]
Checkpoint = Callable[[harness.Session], Awaitable[None]]


def agent_turn(
    session: harness.Session,
    workspace: Path,
    calls: Sequence[Call] = (),
    *,
    tools: Sequence[Tool] | None = None,
    approver: Approver | None = None,
    baseline: bool = True,
    model: str = MODEL,
    window: int = WINDOW,
) -> TurnOutcome:
    """One turn of the real agent loop over ``session``: the scripted model makes each
    call in its own step, then answers. A ``workspace/baseline`` is recorded first (as
    the loop will at each turn start) unless ``baseline`` is False."""
    return asyncio.run(
        agent_turn_async(
            session,
            workspace,
            calls,
            tools=tools,
            approver=approver,
            baseline=baseline,
            model=model,
            window=window,
        )
    )


async def agent_turn_async(
    session: harness.Session,
    workspace: Path,
    calls: Sequence[Call] = (),
    *,
    tools: Sequence[Tool] | None = None,
    approver: Approver | None = None,
    baseline: bool = True,
    model: str = MODEL,
    window: int = WINDOW,
    checkpoint: Checkpoint | None = None,
) -> TurnOutcome:
    """``agent_turn`` inside a running event loop (``checkpoint``: e.g. ``store.flush``).
    The loop records the ``workspace/baseline`` itself unless ``baseline`` is False."""
    first = len(session.events)
    replies = [
        calls_reply((f"call-{first}-{index}", name, json.dumps(dict(arguments))))
        for index, (name, arguments) in enumerate(calls)
    ]
    replies.append(text_reply("done"))
    agent = Agent(
        session,
        ScriptedProvider(replies, window=window),
        list(tools) if tools is not None else default_tools(),
        AgentSettings(model=model),
        workspace=workspace,
        approver=approver or FixedApprover("allowed-once"),
        checkpoint=checkpoint,
        record_baseline=baseline,
    )
    return await agent.run_turn("carry on")


def cut_after(session: harness.Session, index: int) -> harness.Session:
    """The session a crash right after event ``index`` leaves behind once restored: the
    prefix, the crash-repair closers and the end-seed (what ``SessionStore.load`` does)."""
    prefix: list[Event] = list(session.events[: index + 1])
    wire = [event.to_json() for event in prefix]
    wire += [event.to_json() for event in harness.repair_closers(prefix)]
    return harness.Session.from_restore(session.id, wire, session.header)


def index_of(session: harness.Session, kind: str, *, nth: int = -1, **match: Any) -> int:
    """The seq of the ``nth`` event of ``kind`` whose data has the ``match`` items."""
    seqs = [
        event.seq
        for event in session.events
        if event.type == kind and all(event.data.get(key) == value for key, value in match.items())
    ]
    return seqs[nth]


def restart(session: harness.Session) -> harness.Session:
    """The session as a clean restart restores it (no crash: an end-seed only)."""
    return cut_after(session, len(session.events) - 1)


def check(
    session: harness.Session,
    workspace: Path,
    *,
    tools: Sequence[Tool] | None = None,
    provider_now: Provider | None = None,
    model: str | None = None,
) -> WorldReport:
    """``check_world`` with the tools and provider the helpers ran with, unless given."""
    return check_world(
        session,
        workspace,
        tools if tools is not None else default_tools(),
        provider_now if provider_now is not None else provider(),
        model=model,
    )


def kinds(report: WorldReport) -> list[FindingKind]:
    """The kinds of a report's findings, in report order."""
    return [item.kind for item in report.findings]

"""How ``run`` and ``resume`` end: the exit codes, the calls an approver denied, and the
outcome printed (one JSON document with ``--json``)."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from typing import Any

import msgspec
import typer
from rich.console import Console
from rich.markup import escape

from harness.agent.loop import TurnOutcome
from harness.session.session import Session

__all__ = [
    "EXIT_BLOCKED",
    "EXIT_CODES_HELP",
    "EXIT_DENIED",
    "EXIT_DONE",
    "EXIT_FAILED",
    "EXIT_INTERRUPTED",
    "EXIT_USAGE",
    "Denial",
    "denial_note",
    "denials",
    "exit_code",
    "finish",
    "outcome_json",
]

EXIT_DONE = 0
"""The turn completed, and every world-changing call it asked for was allowed."""
EXIT_FAILED = 1
"""The turn ended with an error (or a crash left it interrupted), or the store or session refused."""
EXIT_USAGE = 2
"""A bad option or argument, or a file that cannot be read."""
EXIT_BLOCKED = 3
"""``resume`` only: the world check found blocking problems, and no one said go on."""
EXIT_DENIED = 4
"""The turn ended, but a world-changing tool call was denied (no ``--yes`` in a headless
run, or "no" at the prompt): the task may be left undone."""
EXIT_INTERRUPTED = 130
"""Ctrl-C: the turn was cancelled (it ends ``aborted`` in the log, during a model request,
a retry wait or a tool) or stopped at once by a second Ctrl-C; 128 + SIGINT, as a shell
reports it and as ``chat`` exits."""

EXIT_CODES_HELP = (
    "Exit codes: 0 done; 1 failed (the turn ended with an error); "
    "2 usage; 3 resume stopped at blocking findings; 4 a world-changing tool call was denied "
    "(rerun with --yes to allow them); 5 the session is in use by another writer "
    "(--wait SECONDS or --take-over); 130 Ctrl-C cancelled the turn."
)


class Denial(msgspec.Struct, frozen=True):
    """A world-changing call the approver did not allow: tool, call id and outcome."""

    tool: str
    call_id: str | None
    outcome: str


def denials(session: Session, since: int) -> list[Denial]:
    """The approvals asked at seq ``since`` or later whose decision was not ``allowed-once``."""
    asked: dict[str, Mapping[str, Any]] = {}
    denied: list[Denial] = []
    for event in list(session.events)[since:]:
        data = event.data
        if not isinstance(data, Mapping):
            continue
        if event.type == "approval/asked":
            asked[str(data.get("id"))] = data
        elif event.type == "approval/decided" and data.get("outcome") != "allowed-once":
            request = asked.get(str(data.get("id")), {})
            call = request.get("callId")
            tool = str(request.get("toolName"))
            denied.append(Denial(tool, call if isinstance(call, str) else None, str(data.get("outcome"))))
    return denied


def denial_note(denied: list[Denial], console: Console) -> None:
    """Say which calls were not run and how to allow them."""
    if not denied:
        return
    calls = ", ".join(f"{d.tool} ({d.outcome})" for d in denied)
    how = (
        "a headless run cannot ask, so it denies world-changing tools: rerun with --yes to allow them"
        if any(d.outcome == "unavailable" for d in denied)
        else "answer yes at the prompt, or pass --yes to allow world-changing tools"
    )
    console.print(f"[yellow]not run[/]: {escape(calls)} — {how}", highlight=False, soft_wrap=True)


def outcome_json(session: Session, outcome: TurnOutcome | None, denied: list[Denial]) -> dict[str, Any]:
    return {
        "session": session.id,
        "turn": outcome.turn if outcome else None,
        "reason": outcome.reason if outcome else None,
        "events": len(session.events),
        "denied": [{"tool": d.tool, "callId": d.call_id, "outcome": d.outcome} for d in denied],
    }


def cancelled_by_user(outcome: TurnOutcome | None) -> bool:
    """Whether the turn ended ``aborted`` because the user cancelled it (Ctrl-C)."""
    if outcome is None or outcome.kind != "aborted":
        return False
    why = outcome.reason.get("reason")
    return isinstance(why, Mapping) and why.get("kind") == "user"


def exit_code(outcome: TurnOutcome | None, denied: list[Denial]) -> int:
    """The exit code of ``run``/``resume`` for how the turn ended (the ``EXIT_*`` constants)."""
    if cancelled_by_user(outcome):
        return EXIT_INTERRUPTED
    if outcome is None or outcome.kind != "completed":
        return EXIT_FAILED
    return EXIT_DENIED if denied else EXIT_DONE


def finish(
    session: Session,
    outcome: TurnOutcome | None,
    denied: list[Denial],
    as_json: bool,
    console: Console,
    extra: Mapping[str, Any] | None = None,
) -> None:
    """Print the outcome (one JSON document with ``--json``) and exit with its code."""
    code = exit_code(outcome, denied)
    denial_note(denied, console)
    if as_json:
        document = {**outcome_json(session, outcome, denied), **(extra or {}), "exit": code}
        sys.stdout.write(json.dumps(document, ensure_ascii=False) + "\n")
    else:
        console.print(f"[dim]session {escape(session.id)}[/]", highlight=False, soft_wrap=True)
    raise typer.Exit(code)

"""Who owns a session, for the commands that write one (``run``, ``resume``, ``chat``).

A command that continues a session takes ownership of it for as long as it runs (the store
does, in ``load``) and gives it up as it ends, however it ends. When another live writer
owns the session the command exits with ``EXIT_IN_USE`` (5) and one line naming the owner,
unless ``--wait SECONDS`` waits for it or ``--take-over`` fences it off.
"""

from __future__ import annotations

import math
from typing import Annotated

import typer

from harness.errors import LeaseLost, SessionInUse, SessionOwner
from harness.session.session import Session
from harness.stores.store import SessionStore

__all__ = [
    "EXIT_IN_USE",
    "TakeOverOption",
    "WaitOption",
    "in_use_line",
    "live_line",
    "load_owned",
    "taken_over_line",
]

EXIT_IN_USE = 5
"""The session is in use: another live writer owns it (no ``--wait``/``--take-over``)."""

_POLL_S = 0.2


def _wait_seconds(value: float | None) -> float | None:
    if value is not None and not (math.isfinite(value) and 0 <= value <= 86_400):
        raise typer.BadParameter("needs a number of seconds from 0 to 86400")
    return value


TakeOverOption = Annotated[
    bool,
    typer.Option(
        "--take-over",
        help="Fence off the session's live owner and continue it here (its unstored work is lost).",
    ),
]
WaitOption = Annotated[
    float | None,
    typer.Option(
        "--wait",
        metavar="SECONDS",
        help="Wait up to SECONDS for the session's live owner to finish.",
        callback=_wait_seconds,
    ),
]


async def load_owned(store: SessionStore, session_id: str, *, take_over: bool, wait: float | None) -> Session:
    """``store.load`` as a command does it: with ``wait``, a session in use is asked for again
    until the owner lets it go or the time is up (then ``SessionInUse``)."""
    return await store.load(session_id, take_over=take_over, wait=wait or 0.0)


def _who(owner: SessionOwner | None) -> str:
    return owner.describe() if owner is not None else "another writer"


def in_use_line(error: SessionInUse) -> str:
    """The one line a command prints when the session is in use."""
    name = f"session {error.session_id}" if error.session_id else "the session"
    token = error.owner.token if error.owner is not None else None
    lease = " (a PostgreSQL lease: an owner that was killed lets go when it runs out)" if token else ""
    return (
        f"{name} is in use by {_who(error.owner)}{lease}; "
        "rerun with --wait SECONDS to wait for it, or --take-over to fence it off"
    )


def taken_over_line(error: LeaseLost) -> str:
    """The line a command prints when another writer took its session over (``stored``: the
    seq from which its events were refused, when the backend knows it)."""
    rest = f" from seq {error.stored} on" if error.stored is not None else ""
    return f"taken over by {_who(error.by)}; your turn{rest} was not stored"


def live_line(session: Session, owner: SessionOwner) -> str:
    """What a read command says of a session a live writer owns (it shows the log as stored:
    an open turn there is running, not crashed)."""
    turn = None
    for event in reversed(session.events):
        if event.type == "turn/end":
            break
        if event.type == "turn/start":
            data = event.data
            turn = data.get("turn") if isinstance(data, dict) else None
            break
    doing = f"turn {turn} running" if turn is not None else "no turn running"
    return f"live: {doing}, owner {owner.describe()}"

"""The writer process of the fault runs: ``python -m tests.stores.faults.writer BACKEND ROOT TURNS``.

It creates one session in a store on ``BACKEND`` (``jsonl-none``, ``jsonl-zstd``, ``sqlite``,
``dsh-sqlite``)
under ``ROOT`` with a write window too long to fire, so only its explicit flushes write;
then, with ``HFAULT_ARM`` set, writes those rules to the shim's control file (so they count
calls from here on, not the backend's opening),
and for each of ``TURNS`` turns appends a deterministic turn (``turn_events``) and flushes.
It reports on stdout, one line each, flushed at once:

    appended N          N events are appended (in memory); a flush of them starts
    ok N                the flush returned: N events are durable
    err CLASS C MSG     the flush raised CLASS; C events are known durable; MSG one line

then ``done`` and waits to be killed (with ``HARNESS_WRITER_EXIT`` set it exits at once,
without closing the store). A failed flush is retried by the next turn's flush.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path
from typing import Any

import harness
from harness.stores.backend import Backend
from harness.stores.store import SessionStore

SESSION_ID = "fault-run"


def make_backend(kind: str, root: Path) -> Backend:
    if kind.startswith("jsonl-"):
        from harness.stores.jsonl.backend import JsonlBackend

        return JsonlBackend(root, compression=kind.removeprefix("jsonl-"))  # type: ignore[arg-type]
    if kind == "sqlite":
        from harness.stores.sqlite import SqliteBackend

        return SqliteBackend(root / "sessions.db")
    if kind == "dsh-sqlite":
        from harness.stores.dsh_sqlite import DshSqliteBackend

        return DshSqliteBackend(root / "sessions.sqlite")
    raise ValueError(f"unknown backend {kind!r}")


def turn_events(turn: int) -> list[tuple[str, Any, str | None]]:
    """The events of turn ``turn``: (type, data, surface_op), every payload derived from ``turn``."""
    reply = harness.assistant_message(f"turn {turn} answers " * 4, provider="p", model="m", id=f"a-{turn}")
    chunks: list[tuple[str, Any, str | None]] = [
        (
            "assistant/chunk",
            {"turn": turn, "step": 1, "chunk": {"type": "text-delta", "index": 0, "text": f"t{turn}.{i} "}},
            None,
        )
        for i in range(2)
    ]
    return [
        ("turn/start", {"turn": turn}, None),
        ("step/start", {"turn": turn, "step": 1}, None),
        ("user/message", harness.user_message(f"turn {turn} asks", id=f"u-{turn}"), "append"),
        *chunks,
        ("assistant/message", {"turn": turn, "step": 1, "message": reply}, "append"),
        ("step/end", {"turn": turn, "step": 1}, None),
        ("turn/end", {"turn": turn, "reason": {"kind": "completed"}}, None),
    ]


def append_turn(session: harness.Session, turn: int) -> None:
    """Append the events of ``turn_events(turn)`` to ``session``."""
    for event_type, data, op in turn_events(turn):
        if op is None:
            session.append(event_type, data)
        else:
            session.append(event_type, data, surface_op=op)  # type: ignore[arg-type]


def say(line: str) -> None:
    os.write(1, (line.replace("\n", " ") + "\n").encode())


async def main(kind: str, root: Path, turns: int) -> None:
    store = SessionStore(make_backend(kind, root), write_window_s=3600)
    session = await store.create(id=SESSION_ID)
    arm = os.environ.get("HFAULT_ARM")
    if arm is not None:  # the shim's rules from here on (its counters start now)
        control = Path(os.environ["HFAULT_CONTROL"])
        control.with_suffix(".arming").write_text(arm + "\n")
        os.replace(control.with_suffix(".arming"), control)
    durable = 0
    for turn in range(1, turns + 1):
        append_turn(session, turn)
        say(f"appended {len(session.events)}")
        try:
            await store.flush(session)
        except harness.HarnessError as error:
            durable = len(session.events) - store.pending(session)
            say(f"err {type(error).__name__} {durable} {error}")
        else:
            durable = len(session.events)
            say(f"ok {durable}")
        time.sleep(0.001)
    say("done")
    if os.environ.get("HARNESS_WRITER_EXIT"):
        os._exit(0)  # die without closing the store: no retry, no last flush
    await asyncio.sleep(3600)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], Path(sys.argv[2]), int(sys.argv[3])))

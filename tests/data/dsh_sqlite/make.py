"""Write the harness-made dsh SQLite databases of this folder (see README.md).

usage: .venv/bin/python tests/data/dsh_sqlite/make.py FIXTURES_DSH OUT_DIR

* ``exported.sqlite``: four dsh JSONL fixtures copied by ``harness export --to sqlite:FILE
  --layout dsh`` (``copy_sessions``: one append per session, so whole chunk runs pack);
* ``live.sqlite``: sessions written through ``SessionStore`` write-behind batches: chunk runs
  split by flushes and at 1,024 members, zstd rows, provenance, a replace, an ignorable event,
  a crash left open and repaired by a load, a torn final row cut by a load, a subagent header;
* ``continued.sqlite``: dsh's own ``04-killed-during-tool.sqlite`` (from ``../dsh-sqlite`` beside
  the JSONL fixtures) loaded here, so harness commits the killed turn's closers into dsh's file,
  then continued with a new turn.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sqlite3
import sys
import tempfile
from pathlib import Path

import harness
from harness.events.event import Replace
from harness.events.json import loads
from harness.session.header import SessionHeader
from harness.stores.dsh_sqlite import DshSqliteBackend
from harness.stores.jsonl.backend import JsonlBackend
from harness.stores.jsonl.paths import Layout
from harness.stores.store import SessionStore
from harness.stores.transfer import copy_sessions

EXPORTED = (
    "01-simple-chat.jsonl",
    "02-tool-call.jsonl",
    "03-auto-compaction.jsonl",
    "05-resumed-after-kill-during-tool.jsonl",
)
CLOCK = iter(range(1_800_000_000_000, 1_900_000_000_000, 7))


def clock() -> int:
    return next(CLOCK)


async def exported(fixtures: Path, out: Path) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        layout = Layout(Path(scratch) / "root", "none")
        for name in EXPORTED:  # each raw file where a JSONL root keeps it (dsh's logPath)
            lines = (fixtures / name).read_bytes()
            first = loads(lines.split(b"\n", 1)[0])
            target = Path(layout.log_path(first["cwd"], first["id"]))
            target.parent.mkdir(parents=True)
            target.write_bytes(lines)
        source = JsonlBackend(layout.root, compression="none")
        target_backend = DshSqliteBackend(out / "exported.sqlite", journal_mode="delete")
        try:
            await copy_sessions(source, target_backend)
        finally:
            await target_backend.close()
            await source.close()


def turn_events(session: harness.Session, turn: int, *, deltas: int, big: bool, close: bool) -> None:
    session.append("turn/start", {"turn": turn})
    session.append("step/start", {"turn": turn, "step": 1})
    session.append("user/message", harness.user_message(f"task {turn}"), surface_op="append")
    seqs = []
    for n in range(deltas):
        kind = "reasoning-delta" if n < 3 else "text-delta"
        chunk = {"type": kind, "index": 0 if n < 3 else 1, "text": f"w{n} "}
        seqs.append(session.append("assistant/chunk", {"turn": turn, "step": 1, "chunk": chunk}).seq)
    for n in range(4):
        chunk = {"type": "tool-call-delta", "index": 2, "id": f"call-{turn}", "argumentsDelta": "{}"[n % 2 :]}
        if n == 0:
            chunk["name"] = "read_file"
        seqs.append(session.append("assistant/chunk", {"turn": turn, "step": 1, "chunk": chunk}).seq)
    text = "x" * 6000 if big else "done"
    call = harness.tool_call_block(f"call-{turn}", "read_file", '{"path":"a.txt"}')
    reply = harness.assistant_message([harness.text_block(text), call], provider="deepseek", model="m")
    session.append(
        "assistant/message",
        {"turn": turn, "step": 1, "message": reply},
        surface_op="append",
        source_event_seqs=seqs,
    )
    started = session.append(
        "tool/call",
        {"turn": turn, "step": 1, "callId": f"call-{turn}", "name": "read_file", "arguments": "{}"},
    )
    if not close:
        return
    result = harness.tool_result_message(f"call-{turn}", "42 lines")
    session.append(
        "tool/result",
        {"turn": turn, "step": 1, "message": result},
        surface_op="append",
        source_event_seqs=[started.seq],
    )
    session.append("step/end", {"turn": turn, "step": 1})
    session.append("turn/end", {"turn": turn, "reason": {"kind": "completed"}})


async def live(out: Path) -> None:
    path = out / "live.sqlite"
    store = SessionStore(DshSqliteBackend(path, journal_mode="delete"), write_window_s=60, clock=clock)
    first = await store.create(SessionHeader(id="session-live-first", created_at=clock(), cwd="/work/live"))
    first.append("workspace/baseline", {"files": []}, ignorable=True)
    turn_events(first, 1, deltas=12, big=False, close=True)
    await store.flush(first)
    turn_events(first, 2, deltas=1030, big=True, close=True)  # one flush: the text run splits at 1,024
    first.append("session/title", {"title": "Live session"})
    await store.flush(first)
    checkpoint = harness.user_message("summary of turns 1-2")
    nodes = list(first.surface.nodes)
    first.append("user/message", checkpoint, surface_op=Replace(nodes[0], nodes[-1]), source_event_seqs=nodes)
    turn_events(first, 3, deltas=5, big=False, close=False)  # a crash leaves turn 3 open
    await store.flush(first)

    torn = await store.create(SessionHeader(id="session-live-torn", created_at=clock(), cwd="/work/live"))
    turn_events(torn, 1, deltas=4, big=False, close=True)
    await store.flush(torn)
    torn.append("turn/start", {"turn": 2})
    torn.append("step/start", {"turn": 2, "step": 1})
    await store.flush(torn)

    child = SessionHeader(
        id="session-live-child",
        created_at=clock(),
        cwd="/work/live/sub",
        parent_session="session-live-first",
        seed_length=0,
        origin="subagent",
        delegation_depth=1,
        agent_preset="explore",
    )
    sub = await store.create(child)
    turn_events(sub, 1, deltas=3, big=False, close=True)
    await store.close()

    with sqlite3.connect(path, isolation_level=None) as conn:  # the torn final row of a crash
        conn.execute(
            "UPDATE events SET data = '{\"turn\":2,\"st' WHERE session_id = 'session-live-torn' AND "
            "seq = (SELECT max(seq) FROM events WHERE session_id = 'session-live-torn')"
        )
    again = SessionStore(DshSqliteBackend(path, journal_mode="delete"), clock=clock)
    for session_id in ("session-live-first", "session-live-torn"):
        await again.load(session_id)  # commits the closers (and cuts the torn row)
    await again.close()


async def continued(fixtures: Path, out: Path) -> None:
    path = out / "continued.sqlite"
    shutil.copyfile(fixtures.parent / "dsh-sqlite" / "04-killed-during-tool.sqlite", path)
    os.chmod(path, 0o600)
    store = SessionStore(DshSqliteBackend(path, journal_mode="delete"), clock=clock)
    (info,) = await store.list()
    session = await store.load(info.id)  # commits the closers of the killed turn
    turn = 1 + max(event.data["turn"] for event in session.events if event.type == "turn/start")
    session.append("turn/start", {"turn": turn})
    session.append("step/start", {"turn": turn, "step": 1})
    session.append("user/message", harness.user_message("continued in harness"), surface_op="append")
    seqs = []
    for n in range(5):
        chunk = {"type": "text-delta", "index": 0, "text": f"p{n} "}
        seqs.append(session.append("assistant/chunk", {"turn": turn, "step": 1, "chunk": chunk}).seq)
    reply = harness.assistant_message("p0 p1 p2 p3 p4 ", provider="deepseek", model="deepseek-chat")
    session.append(
        "assistant/message",
        {"turn": turn, "step": 1, "message": reply},
        surface_op="append",
        source_event_seqs=seqs,
    )
    session.append("step/end", {"turn": turn, "step": 1})
    session.append("turn/end", {"turn": turn, "reason": {"kind": "completed"}})
    await store.close()


def main() -> None:
    fixtures, out = Path(sys.argv[1]), Path(sys.argv[2])
    out.mkdir(parents=True, exist_ok=True)
    os.chmod(out, 0o700)
    for name in ("exported.sqlite", "live.sqlite", "continued.sqlite"):
        (out / name).unlink(missing_ok=True)
    asyncio.run(exported(fixtures, out))
    asyncio.run(live(out))
    asyncio.run(continued(fixtures, out))


if __name__ == "__main__":
    main()

"""One worker of the many-writer torture test (``test_many_writers.py``), run as its own process.

``python -m tests.stores.many_writers SPEC JOURNAL SEED SECONDS SESSION...`` loads (or creates)
random sessions of ``SESSION...`` until ``SECONDS`` have passed, sometimes with ``take_over``,
and runs turns in them: every event it writes carries its episode (``k``: pid and a counter) so
a checker can tell whose it is. It journals, with an unbuffered write after the fact (the page
cache outlives a SIGKILL): each ownership it got (``own``), each refusal (``refused``), each
flush that returned (``flushed``: the episode's events up to ``upto`` are durable), each time it
found itself fenced off (``lost``), each clean end (``released``). The test kills workers at
random; what is journaled is what the log must hold.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import sys
import time
from typing import Any

import harness
from harness.errors import LeaseLost, SessionInUse, SessionNotFound
from harness.session.session import Session
from harness.stores.backend import Backend
from harness.stores.store import SessionStore

WORK = "plugin/work"  # an ignorable event type: the payload of a turn


def open_backend(spec: str) -> Backend:
    """``jsonl:none:DIR``, ``jsonl:zstd:DIR``, ``sqlite:FILE``, ``dsh:FILE`` or
    ``postgres:SCHEMA:TTL:DSN``."""
    kind, _, rest = spec.partition(":")
    if kind == "jsonl":
        compression, _, root = rest.partition(":")
        from harness.stores.jsonl.backend import JsonlBackend

        return JsonlBackend(root, compression=compression)  # type: ignore[arg-type]
    if kind == "sqlite":
        from harness.stores.sqlite import SqliteBackend

        return SqliteBackend(rest)
    if kind == "dsh":
        from harness.stores.dsh_sqlite import DshSqliteBackend

        return DshSqliteBackend(rest)
    if kind == "postgres":
        schema, _, rest = rest.partition(":")
        ttl, _, dsn = rest.partition(":")
        from harness.stores.postgres import PostgresBackend

        return PostgresBackend(
            dsn, schema=schema, lease_ttl_s=float(ttl), min_size=1, application_name=f"harness-test-{schema}"
        )
    raise ValueError(spec)


class Journal:
    def __init__(self, path: str) -> None:
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)

    def write(self, **record: Any) -> None:
        record["t"] = time.time()
        record["pid"] = os.getpid()
        os.write(self._fd, (json.dumps(record) + "\n").encode())


def turn_number(session: Session) -> int:
    return sum(1 for event in session.events if event.type == "turn/start") + 1


class _Turn:
    """What a worker's open turn still needs closing: its number and a started call."""

    def __init__(self, turn: int) -> None:
        self.turn = turn
        self.call: tuple[str, int] | None = None


async def episode(
    store: SessionStore, session: Session, k: str, journal: Journal, rng: random.Random
) -> None:
    """One turn (sometimes two) in the session, flushed batch by batch; then a clean release.
    Cancelled (SIGINT: ``asyncio.run`` cancels the main task), it ends its turn ``aborted``,
    as ``harness run`` does on Ctrl-C, and lets the session go."""
    open_turn: _Turn | None = None
    try:
        n = 0  # the episode's WORK events are numbered 1, 2, … across its turns
        for _ in range(rng.choice((1, 1, 2))):
            open_turn = _Turn(turn_number(session))
            n = await run_turn(store, session, k, journal, rng, open_turn, n)
            open_turn = None
    except asyncio.CancelledError:
        if open_turn is not None:
            abort(session, open_turn)
        try:
            await store.release(session)
        except LeaseLost:  # taken over meanwhile: nothing of ours is written any more
            journal.write(e="lost", s=session.id, k=k)
            await store.discard(session)
        else:
            journal.write(e="interrupted", s=session.id, k=k, closed=open_turn is not None)
        raise
    await store.release(session)
    journal.write(e="released", s=session.id, k=k)


def abort(session: Session, turn: _Turn) -> None:
    if turn.call is not None:
        call, seq = turn.call
        session.append(
            "tool/result",
            {"turn": turn.turn, "step": 1, "message": harness.tool_result_message(call, "aborted")},
            surface_op="append",
            source_event_seqs=[seq],
        )
    session.append("step/end", {"turn": turn.turn, "step": 1})
    session.append("turn/end", {"turn": turn.turn, "reason": {"kind": "aborted", "reason": {"kind": "user"}}})


async def run_turn(
    store: SessionStore,
    session: Session,
    k: str,
    journal: Journal,
    rng: random.Random,
    open_turn: _Turn,
    n: int,
) -> int:
    sid = session.id
    turn = open_turn.turn
    session.append("turn/start", {"turn": turn})
    session.append("step/start", {"turn": turn, "step": 1})
    session.append("user/message", harness.user_message(f"task {k}"), surface_op="append")
    for _batch in range(rng.randint(1, 4)):
        for _ in range(rng.randint(1, 5)):
            n += 1
            session.append(WORK, {"k": k, "n": n}, ignorable=True)
        await store.flush(session)
        journal.write(e="flushed", s=sid, k=k, upto=n)
        await asyncio.sleep(rng.random() * 0.02)
    call = f"call-{k}-{turn}"
    block = harness.tool_call_block(call, "read_file", '{"path":"a.txt"}')
    reply = harness.assistant_message([block], provider="p", model="m")
    session.append("assistant/message", {"turn": turn, "step": 1, "message": reply}, surface_op="append")
    started = session.append(
        "tool/call", {"turn": turn, "step": 1, "callId": call, "name": "read_file", "arguments": "{}"}
    )
    open_turn.call = (call, started.seq)
    await store.flush(session)
    journal.write(e="flushed", s=sid, k=k, upto=n)
    await asyncio.sleep(rng.random() * 0.02)  # a kill here leaves a started call
    session.append(
        "tool/result",
        {"turn": turn, "step": 1, "message": harness.tool_result_message(call, "done")},
        surface_op="append",
        source_event_seqs=[started.seq],
    )
    open_turn.call = None
    session.append("step/end", {"turn": turn, "step": 1})
    session.append("turn/end", {"turn": turn, "reason": {"kind": "completed"}})
    await store.flush(session)
    journal.write(e="flushed", s=sid, k=k, upto=n)
    return n


async def work(
    backend: Backend, journal_path: str, seed: int, seconds: float, sessions: list[str], worker: int
) -> None:
    """The worker's loop (see the module doc); ``worker`` names its episodes (its pid, or a
    number for a task of the in-process run on the memory backend)."""
    rng = random.Random(seed)
    journal = Journal(journal_path)
    store = SessionStore(backend, write_window_s=3600)
    deadline = time.monotonic() + seconds
    count = 0
    try:
        while time.monotonic() < deadline:
            sid = rng.choice(sessions)
            take_over = rng.random() < 0.15
            journal.write(e="attempt", s=sid, take=take_over)
            try:
                try:
                    session = await store.load(sid, take_over=take_over)
                except SessionNotFound:
                    session = await store.create(id=sid)
            except SessionInUse:
                journal.write(e="refused", s=sid)
                await asyncio.sleep(rng.random() * 0.01)
                continue
            except LeaseLost:  # taken over from us while our load repaired the session
                journal.write(e="lost-loading", s=sid)
                continue
            count += 1
            k = f"{worker}-{count}"
            journal.write(e="own", s=sid, k=k, take=take_over, first=len(session.events))
            try:
                await episode(store, session, k, journal, rng)
            except LeaseLost:
                journal.write(e="lost", s=sid, k=k)
                await store.discard(session)
    finally:
        await store.close()


if __name__ == "__main__":
    spec, journal_path, seed, seconds, *sessions = sys.argv[1:]
    try:
        asyncio.run(work(open_backend(spec), journal_path, int(seed), float(seconds), sessions, os.getpid()))
    except KeyboardInterrupt:  # Ctrl-C: the session was let go on the way out
        sys.exit(130)

"""Crash safety with real processes killed by SIGKILL (SPEC §5, FORMAT §11.4).

A child appends through a ``SessionStore`` on the JSONL backend and is killed mid-compaction.
On load the unmatched ``compaction/start`` sits before the new ``session/end-seed`` (stale, it
blocks nothing) and a new compaction succeeds; a stored ``compaction/summary`` or checkpoint
always has its ``compaction/start`` before it.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path

import pytest

from harness.compaction import (
    ExtractiveSummarizer,
    compact_now,
    is_checkpoint_message,
    live_compaction_start,
    stale_compaction_starts,
)
from harness.errors import SessionNotFound
from harness.session.session import Session
from harness.stores.jsonl.backend import JsonlBackend
from harness.stores.store import SessionStore
from tests.compaction.crash_child import SESSION_ID
from tests.compaction.helpers import Builder, run

ROOT = Path(__file__).resolve().parents[2]
KILLS = int(os.environ.get("HARNESS_COMPACTION_KILLS", "6"))

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL")


def spawn(*args: str) -> subprocess.Popen[str]:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    return subprocess.Popen(
        [sys.executable, "-m", "tests.compaction.crash_child", *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )


def wait_for(child: subprocess.Popen[str], prefix: str, count: int = 1, timeout_s: float = 20.0) -> None:
    """Read the child's lines until ``count`` of them start with ``prefix``."""
    assert child.stdout is not None
    deadline = time.monotonic() + timeout_s
    seen = 0
    while seen < count:
        if time.monotonic() > deadline:
            raise AssertionError(f"the child did not print {prefix!r} in time")
        line = child.stdout.readline()
        if not line:
            raise AssertionError(f"the child exited (code {child.poll()}) before printing {prefix!r}")
        if line.startswith(prefix):
            seen += 1


def kill(child: subprocess.Popen[str]) -> None:
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=10)
    if child.stdout is not None:
        child.stdout.close()


async def load(root: Path) -> tuple[SessionStore, Session]:
    store = SessionStore(JsonlBackend(root, compression="none"), write_window_s=0.001)
    return store, await store.load(SESSION_ID)


def check_brackets(session: Session) -> int:
    """Every summary and checkpoint has its start before it; returns how many checkpoints."""
    started: set[object] = set()
    checkpoints = 0
    for event in session.events:
        data = event.data
        if event.type == "compaction/start":
            started.add(data["compactionId"])
        elif event.type == "compaction/summary":
            assert data["compactionId"] in started, f"summary at {event.seq} without its start"
        elif event.type == "user/message" and isinstance(data, Mapping) and is_checkpoint_message(data):
            assert data["source"]["compactionId"] in started, f"checkpoint at {event.seq} without its start"
            previous = session.events[event.seq - 1]
            assert previous.type == "compaction/summary"
            assert previous.data["compactionId"] == data["source"]["compactionId"]
            assert event.source_event_seqs is not None and event.source_event_seqs[1] == previous.seq
            checkpoints += 1
    return checkpoints


def test_killed_during_summarization_the_orphan_start_is_stale_and_compaction_resumes(tmp_path: Path) -> None:
    child = spawn("block", str(tmp_path))
    try:
        wait_for(child, "summarizing")
    finally:
        kill(child)

    async def after() -> None:
        store, session = await load(tmp_path)
        try:
            types = [event.type for event in session.events]
            assert "compaction/summary" not in types
            orphan = types.index("compaction/start")  # durable before the summarizer ran
            assert types[orphan + 1 :] == ["session/end-seed"]
            assert live_compaction_start(session.events) is None
            assert [event.seq for event in stale_compaction_starts(session.events)] == [orphan]
            messages = [m.raw for m in session.derive_messages()]
            result = await compact_now(session, ExtractiveSummarizer(), checkpoint=store.flush)
            assert result is not None
            assert [m.raw for m in session.derive_messages()] != messages
            compacted = [m.raw for m in session.derive_messages()]
        finally:
            await store.close()
        store, again = await load(tmp_path)
        try:
            assert [m.raw for m in again.derive_messages()] == compacted
            assert check_brackets(again) == 1
            tail = [event.type for event in again.events][orphan:]
            assert tail[:2] == ["compaction/start", "session/end-seed"]
            assert tail[2:6] == ["compaction/start", "compaction/summary", "user/message", "compaction/end"]
        finally:
            await store.close()

    run(after())


def test_kills_during_write_behind_never_store_a_checkpoint_without_its_start(tmp_path: Path) -> None:
    rng = random.Random(20240611)
    committed, stored = 0, False
    for attempt in range(KILLS):
        child = spawn("loop", str(tmp_path), str(attempt))
        try:
            wait_for(child, "ready")
            wait_for(child, "compacted", count=rng.randint(1, 4))
            time.sleep(rng.uniform(0, 0.01))
        finally:
            kill(child)

        async def check() -> int:
            try:
                store, session = await load(tmp_path)
            except SessionNotFound:
                # The child flushes through write-behind only, so a kill before its first batch
                # reached disk leaves nothing stored: no flush returned, nothing is lost.
                return -1
            try:
                assert live_compaction_start(session.events) is None  # a stale start never blocks
                count = check_brackets(session)
                restored = Session.from_restore(
                    session.id, [event.to_json() for event in session.events], session.header
                )
                assert [m.raw for m in restored.derive_messages()] == [
                    m.raw for m in session.derive_messages()
                ]
                return count
            finally:
                await store.close()

        found = run(check())
        if found < 0:
            assert not stored, "a session stored by an earlier attempt vanished"
            continue
        stored, committed = True, found
    assert committed > 0  # compactions were committed (and stored) between the kills

    async def final() -> None:
        store, session = await load(tmp_path)
        try:
            builder = Builder(session)
            builder.turn = sum(1 for event in session.events if event.type == "turn/start")
            builder.headed = True
            builder.closed_turn("one more " * 40, "done " * 40, tools=1)
            assert await compact_now(session, ExtractiveSummarizer(), checkpoint=store.flush) is not None
        finally:
            await store.close()

    run(final())

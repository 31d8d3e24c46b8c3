"""Two processes append to one ADK session at once, each from the session it read before the
other wrote: exactly one wins, the other gets ADK's ``StaleSessionError`` (caused by a harness
``SessionInUse`` while the winner owns the session, or a ``SessionConflict`` once it let go), and
the stored session holds the winner's event only. Real subprocesses,
on a JSONL root, an SQLite file and PostgreSQL."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from harness.integrations.adk import HarnessSessionService
from harness.stores.store import SessionStore
from harness.testing.samples import run
from tests.integrations.adk.racer import backend_of
from tests.stores.pg import drop_schema

ROOT = Path(__file__).resolve().parents[3]


async def _create(kind: str, target: str, schema: str) -> None:
    store = SessionStore(backend_of(kind, target, schema))
    service = HarnessSessionService(store)
    await service.create_session(app_name="race", user_id="u", session_id="s")
    await service.close()
    await store.close()


async def _stored(kind: str, target: str, schema: str) -> list[str]:
    store = SessionStore(backend_of(kind, target, schema))
    service = HarnessSessionService(store)
    session = await service.get_session(app_name="race", user_id="u", session_id="s")
    await service.close()
    await store.close()
    assert session is not None
    return [event.id for event in session.events]


@pytest.mark.parametrize("kind", ["jsonl", "sqlite", "postgres"])
def test_two_processes_one_winner_one_stale(kind: str, tmp_path: Path) -> None:
    schema = f"adk_{uuid.uuid4().hex[:12]}"
    if kind == "postgres":
        from tests.stores.pg import server_dsn

        target = server_dsn()
    else:
        target = str(tmp_path / ("root" if kind == "jsonl" else "sessions.db"))
    try:
        run(_create(kind, target, schema))
        go = tmp_path / "go"
        ready = [tmp_path / f"ready-{n}" for n in ("a", "b")]
        racers = [
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "tests.integrations.adk.racer",
                    kind,
                    target,
                    schema,
                    n,
                    str(r),
                    str(go),
                ],
                cwd=ROOT,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env={
                    **os.environ,
                    "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
                },
            )
            for n, r in zip(("a", "b"), ready, strict=True)
        ]
        deadline = time.monotonic() + 120
        while not all(r.exists() for r in ready):  # both read the session before either writes
            assert time.monotonic() < deadline, "the racers never got ready"
            assert all(p.poll() is None for p in racers), [p.communicate() for p in racers]
            time.sleep(0.01)
        go.write_text("go")
        outcomes = {}
        for name, process in zip(("a", "b"), racers, strict=True):
            out, err = process.communicate(timeout=120)
            assert process.returncode == 0, err.decode()
            outcomes[name] = out.decode().strip()
        assert sorted(outcomes.values()) == ["stale", "won"], outcomes
        winner = next(name for name, outcome in outcomes.items() if outcome == "won")
        assert run(_stored(kind, target, schema)) == [winner]
    finally:
        if kind == "postgres":
            drop_schema(target, schema)

"""Two processes run one LangGraph thread at once, on a JSONL root, an SQLite file and PostgreSQL.

LangGraph's own savers let two runs of one thread each write a child of the checkpoint they
read, so the thread forks and one run's messages silently vanish from the newest state
(langgraph #8796). Here every ``put`` takes the thread's ownership and is refused with
``ThreadMoved`` when another writer moved the thread on since this saver read it. So the
chain of checkpoints stays one line (no checkpoint has two children), and the newest state
holds the answer of every run that completed, each once.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.integrations.langgraph import AsyncHarnessSaver
from harness.stores import open_store

ROOT = Path(__file__).resolve().parents[3]
RUNS = 8


@pytest.fixture(params=["jsonl", "sqlite", "postgres"])
def spec(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "jsonl":
        yield f"jsonl:{tmp_path / 'root'}"
    elif request.param == "sqlite":
        yield f"sqlite:{tmp_path / 'sessions.db'}"
    else:
        from tests.stores.pg import fresh_schema

        for schema in fresh_schema():
            yield schema.spec


async def chain(spec: str) -> tuple[list[Any], list[str]]:
    async with open_store(spec) as store:
        saver = AsyncHarnessSaver(store)
        config: Any = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
        tuples = [t async for t in saver.alist(config)]
        newest = await saver.aget_tuple(config)
        assert newest is not None
        return tuples, [m.content for m in newest.checkpoint["channel_values"]["messages"]]


def test_two_processes_never_fork_a_thread(spec: str, tmp_path: Path) -> None:
    go = tmp_path / "go"
    names = ["a", "b"]
    runners = [
        subprocess.Popen(
            [sys.executable, "-m", "tests.integrations.langgraph.runner", spec, name, str(RUNS), str(go)],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in names
    ]
    deadline = time.monotonic() + 60
    while not all(go.with_name(f"go.{name}.ready").exists() for name in names):
        started = time.monotonic() < deadline and all(r.poll() is None for r in runners)
        assert started, "a runner did not start"
        time.sleep(0.01)
    go.touch()
    results = []
    for runner in runners:
        out, err = runner.communicate(timeout=180)
        assert runner.returncode == 0, err
        results.append(json.loads(out.strip().splitlines()[-1]))
    tuples, messages = asyncio.run(chain(spec))
    parents = Counter(t.parent_config["configurable"]["checkpoint_id"] for t in tuples if t.parent_config)
    ids = {t.config["configurable"]["checkpoint_id"] for t in tuples}
    assert all(count == 1 for count in parents.values()), f"a checkpoint with two children: {parents}"
    assert set(parents) <= ids  # every parent is stored
    assert sum(1 for t in tuples if t.parent_config is None) == 1  # one root
    done = [text for result in results for text in result["done"]]
    refused = [text for result in results for text in result["refused"]]
    assert len(done) + len(refused) == 2 * RUNS and done
    answers = [text for text in messages if text.startswith("answer to ")]
    assert len(answers) == len(set(answers))
    assert {f"answer to {text}" for text in done} <= set(answers)  # no completed run vanished
    kind = spec.split(":")[0]
    print(
        f"\nlanggraph two processes [{kind}]: {len(done)} runs completed, {len(refused)} refused "
        f"(ThreadMoved), {len(tuples)} checkpoints in one line"
    )

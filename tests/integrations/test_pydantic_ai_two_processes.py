"""Two processes append to one pydantic-ai conversation at once, on a JSONL root, an SQLite file
and PostgreSQL, each saving with the revision it loaded and retrying on ``ConversationConflict``:
every message is in the conversation once, each process's in its order, and no save of a stale
copy was ever taken (a lost update would drop the other's message)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic_ai.conversation import Conversation
from pydantic_ai.messages import ModelRequest, UserPromptPart

from harness.integrations.pydantic_ai import HarnessConversationStore
from harness.stores import open_store

ROOT = Path(__file__).resolve().parents[2]
COUNT = 15


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


async def seed(spec: str) -> None:
    async with open_store(spec) as sessions:
        first = ModelRequest(parts=[UserPromptPart(content="start")])
        await HarnessConversationStore(sessions).save(Conversation(conversation_id="c", messages=[first]))


async def texts(spec: str) -> list[str]:
    async with open_store(spec) as sessions:
        conversation = await HarnessConversationStore(sessions).load("c")
        assert conversation is not None
        parts = [part for message in conversation.messages for part in message.parts]
        return [str(getattr(part, "content", "")) for part in parts]


def test_two_processes_lose_no_update(spec: str, tmp_path: Path) -> None:
    asyncio.run(seed(spec))
    go = tmp_path / "go"
    names = ["a", "b"]
    writers = [
        subprocess.Popen(
            [sys.executable, "-m", "tests.integrations.pydantic_ai_writer", spec, name, str(COUNT), str(go)],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in names
    ]
    deadline = time.monotonic() + 60
    while not all(go.with_name(f"go.{name}.ready").exists() for name in names):
        started = time.monotonic() < deadline and all(w.poll() is None for w in writers)
        assert started, "a writer did not start"
        time.sleep(0.01)
    go.touch()
    conflicts = 0
    for writer in writers:
        out, err = writer.communicate(timeout=180)
        assert writer.returncode == 0, err
        conflicts += json.loads(out.strip().splitlines()[-1])["conflicts"]
    stored = asyncio.run(texts(spec))
    assert stored[0] == "start" and len(stored) == len(set(stored)) == 1 + 2 * COUNT
    for name in names:
        assert [t for t in stored if t.startswith(f"{name}-")] == [f"{name}-{i}" for i in range(COUNT)]
    kind = spec.split(":")[0]
    saved = len(stored) - 1
    print(f"\npydantic-ai two processes [{kind}]: {saved} of {2 * COUNT} saved once, {conflicts} conflicts")

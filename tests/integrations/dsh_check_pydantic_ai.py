"""Developer check (not a CI test; needs the dsh loader of /work/shared/dsh-check): DeepSeek
Harness's own loader accepts the sessions ``HarnessConversationStore`` writes and derives the same
messages as harness.

    python -m tests.integrations.dsh_check_pydantic_ai /tmp/pyd-dsh

writes a JSONL root per compression holding conversations with tool calls, thinking, system
prompts, a file, a branch, a rewritten history, a fork, a delete and a new conversation of the
same id, then runs ``dsh-load.mjs ROOT none|zstd`` (``$NODE``, ``$DSH_LOAD``) on each root and
compares, per session, dsh's derived messages with harness's ``derive_messages()``. Exit 0 when
dsh accepts every session and every message list is equal.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from pydantic_ai.conversation import Conversation, ConversationTypeAdapter
from pydantic_ai.messages import (
    ImageUrl,
    ModelRequest,
    ModelResponse,
    SystemPromptPart,
    TextPart,
    ThinkingPart,
    UserPromptPart,
)

from harness.integrations.pydantic_ai import HarnessConversationStore
from harness.stores import JsonlBackend, SessionStore
from tests.integrations.pydantic_ai_support import T0, reply, turn, user

NODE = os.environ.get("NODE", "/work/dshc/node22/node_modules/node/bin/node")
DSH_LOAD = os.environ.get("DSH_LOAD", "/work/dshc/dsh-load.mjs")


async def write(root: Path, compression: str) -> None:
    sessions = SessionStore(JsonlBackend(root, compression=compression))  # type: ignore[arg-type]
    store = HarnessConversationStore(sessions, cwd="/work/project")
    opening = ModelRequest(
        parts=[
            SystemPromptPart("be brief", timestamp=T0),
            UserPromptPart(["look at", ImageUrl("https://example.com/cat.png")], timestamp=T0),
        ],
        timestamp=T0,
    )
    thought = ModelResponse(parts=[ThinkingPart("a cat"), TextPart("a cat")], timestamp=T0, model_name="m")
    await store.save(Conversation(conversation_id="chat", messages=[opening, thought, *turn(1), *turn(2)]))
    loaded = await store.load("chat")
    assert loaded is not None
    branched = await store.branch("chat", at=6, expected_revision=loaded.revision)
    branched.messages.extend([user("question 2, again"), reply("answer 2, again")])
    await store.save(branched)
    copy = ConversationTypeAdapter.validate_json(ConversationTypeAdapter.dump_json(branched))
    copy.messages[2:] = [user("rewritten")]
    await store.save(copy)
    await store.fork("chat", at=2, new_conversation_id="side")
    await store.save(Conversation(conversation_id="gone", messages=turn(3)))
    await store.delete("gone")
    await store.save(Conversation(conversation_id="gone", messages=turn(4)))
    await sessions.close()


async def harness_messages(root: Path, compression: str) -> dict[str, list[Any]]:
    sessions = SessionStore(JsonlBackend(root, compression=compression))  # type: ignore[arg-type]
    out = {}
    for info in await sessions.list():
        session = await sessions.inspect(info.id)
        out[info.id] = [dict(m.raw) for m in session.derive_messages()]
    await sessions.close()
    return out


def check(root: Path, compression: str) -> bool:
    asyncio.run(write(root, compression))
    ours = json.loads(json.dumps(asyncio.run(harness_messages(root, compression))))
    command = [NODE, DSH_LOAD, str(root), compression]
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    report = json.loads(done.stdout)
    good = report["listError"] is None
    for session in report["sessions"]:
        same = session["accepted"] and session["messages"] == ours.get(session["id"])
        good = good and same
        print(
            f"{compression:5} {session['id']:40} accepted={session['accepted']} "
            f"events={session['eventCount']} messages={len(session['messages'])} same_as_harness={same}"
        )
    good = good and len(report["sessions"]) == len(ours)
    return good


def main() -> int:
    base = Path(sys.argv[1] if len(sys.argv) > 1 else "/tmp/pyd-dsh-check")
    results = [check(base / compression, compression) for compression in ("none", "zstd")]
    print("dsh accepts every session and derives the same messages" if all(results) else "MISMATCH")
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())

"""One process of ``test_pydantic_ai_two_processes.py``: appends to one conversation.

``python -m tests.integrations.pydantic_ai_writer SPEC NAME COUNT GO`` writes ``GO.NAME.ready``,
waits for the file ``GO``, then ``COUNT`` times loads conversation ``c``, appends a user
message ``NAME-i`` and saves it with the revision it loaded; on ``ConversationConflict`` (the
other process saved first) it loads again and retries. Prints one JSON line: the conflicts.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time

from pydantic_ai.conversation_store import ConversationConflict
from pydantic_ai.messages import ModelRequest, UserPromptPart

from harness.integrations.pydantic_ai import HarnessConversationStore
from harness.stores import open_store


async def main(spec: str, name: str, count: int, go: str) -> dict[str, int]:
    async with open_store(spec) as sessions:
        store = HarnessConversationStore(sessions)
        with open(f"{go}.{name}.ready", "w"):
            pass
        while not os.path.exists(go):
            time.sleep(0.005)
        conflicts = 0
        for i in range(count):
            while True:
                conversation = await store.load("c")
                assert conversation is not None
                conversation.messages.append(ModelRequest(parts=[UserPromptPart(content=f"{name}-{i}")]))
                try:
                    await store.save(conversation)
                    break
                except ConversationConflict:
                    conflicts += 1
        return {"conflicts": conflicts}


if __name__ == "__main__":
    spec, name, count, go = sys.argv[1:]
    print(json.dumps(asyncio.run(main(spec, name, int(count), go))), flush=True)

"""One writer process of ``test_many_writers.py``: a ``HarnessSession`` on its own store.

``python -m tests.integrations.openai_agents.writer SPEC SESSION NAME COUNT GO [pop N]``
writes ``GO.NAME.ready`` and waits until the file ``GO`` exists (the test makes it once every
writer is ready, so they all start at once), then adds ``COUNT``
user items ``NAME-0`` … (one, two or three per ``add_items``, in order), or with ``pop N``
pops ``N`` items. It prints one JSON line: what it added or the items its pops returned.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from typing import Any

from harness.integrations.openai_agents import HarnessSession
from harness.stores import open_store


async def main(spec: str, session_id: str, name: str, count: int, go: str, pops: int) -> dict[str, Any]:
    async with open_store(spec) as store:
        session = HarnessSession(session_id, store, wait=60)
        with open(f"{go}.{name}.ready", "w"):
            pass
        while not os.path.exists(go):
            time.sleep(0.005)
        if pops:
            popped = [await session.pop_item() for _ in range(pops)]
            return {"popped": popped}
        added: list[str] = []
        sizes = (1, 2, 3)
        while len(added) < count:
            size = min(sizes[len(added) % 3], count - len(added))
            batch = [f"{name}-{len(added) + i}" for i in range(size)]
            await session.add_items([{"role": "user", "content": text} for text in batch])
            added.extend(batch)
        return {"added": added}


if __name__ == "__main__":
    spec, session_id, name, count, go, *rest = sys.argv[1:]
    pops = int(rest[1]) if rest[:1] == ["pop"] else 0
    print(json.dumps(asyncio.run(main(spec, session_id, name, int(count), go, pops))), flush=True)

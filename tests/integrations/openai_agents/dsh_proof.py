"""Developer check: dsh's own loader accepts what ``HarnessSession`` writes (not a CI test).

    .venv/bin/python tests/integrations/openai_agents/dsh_proof.py [ROOT]

Writes three sessions through ``HarnessSession`` into a JSONL root (every item type and two
pops; a compaction with an item added during it; a clear then new items), runs dsh's loader
(``/work/shared/dsh-check``: ``$NODE dsh-load.mjs ROOT none --load``) and compares, per session,
dsh's derived messages with harness's ``derive_messages()`` (role, text, tool-call ids) and with
``get_items``. Prints one line per session and exits non-zero on any difference.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from harness.compaction.summarizer import Summary, SummaryRequest
from harness.integrations.openai_agents import HarnessSession
from harness.stores.jsonl.backend import JsonlBackend
from harness.stores.store import SessionStore

DSHC = Path(os.environ.get("DSHC", "/work/dshc"))
NODE = DSHC / "node22" / "node_modules" / "node" / "bin" / "node"

ITEMS: list[Any] = [
    {"role": "developer", "content": "be brief"},
    {
        "role": "user",
        "content": [{"type": "input_text", "text": "look"}, {"type": "input_image", "image_url": "x"}],
    },
    {"type": "reasoning", "id": "rs", "summary": [{"type": "summary_text", "text": "thinking"}]},
    {"type": "function_call", "call_id": "c1", "name": "look", "arguments": "{}"},
    {"type": "function_call_output", "call_id": "c1", "output": "seen"},
    {"type": "web_search_call", "id": "ws", "status": "completed", "action": {"type": "search"}},
    {"type": "mcp_approval_response", "approval_request_id": "a", "approve": True},
    {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "done"}]},
    {"type": "custom_tool_call", "call_id": "c2", "name": "patch", "input": "diff"},
    {"type": "custom_tool_call_output", "call_id": "c2", "output": "ok"},
]


class Slow:
    """A summarizer during which another item is added."""

    def __init__(self, session: HarnessSession) -> None:
        self.session = session

    async def summarize(self, request: SummaryRequest) -> Summary:
        await self.session.add_items([{"role": "user", "content": "added during the summary"}])
        return Summary(texts=("short",), provider="test", model="slow")


async def write(root: Path) -> dict[str, Any]:
    expected: dict[str, Any] = {}
    async with SessionStore(JsonlBackend(root, compression="none")) as store:
        a = HarnessSession("all-items", store)
        await a.add_items(ITEMS)
        await a.pop_item()
        await a.pop_item()
        b = HarnessSession("compacted", store)
        b.summarizer = Slow(b)
        await b.add_items(
            [{"role": "user", "content": "q " * 200}, {"role": "assistant", "content": "a " * 200}] * 3
        )
        await b.run_compaction({"force": True})
        c = HarnessSession("cleared", store)
        await c.add_items(ITEMS[:5])
        await c.clear_session()
        await c.add_items([{"role": "user", "content": "fresh start"}])
        for session in (a, b, c):
            live = await session.session()
            expected[session.session_id] = {
                "messages": [summary(m.to_json()) for m in live.derive_messages()],
                "items": len(await session.get_items()),
            }
    return expected


def summary(message: Any) -> list[Any]:
    blocks = []
    for block in message.get("content", []):
        kind = block.get("type")
        if kind == "tool-call":
            blocks.append(["call", block.get("id")])
        elif kind == "tool-result":
            blocks.append(["result", block.get("toolCallId")])
        else:
            blocks.append([kind, block.get("text")])
    return [message.get("role"), blocks]


def main() -> int:
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp(prefix="dsh-proof-"))
    expected = asyncio.run(write(root))
    done = subprocess.run(
        [str(NODE), str(DSHC / "dsh-load.mjs"), str(root), "none", "--load"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    loaded = json.loads(done.stdout)
    ok = True
    for session in loaded["sessions"]:
        mine = expected[session["id"]]
        theirs = [summary(m) for m in session.get("messages", [])]
        same = session["accepted"] and theirs == mine["messages"]
        ok = ok and same
        print(
            f"{session['id']}: dsh accepted={session['accepted']} events={session['eventCount']} "
            f"messages={len(theirs)} (harness {len(mine['messages'])}, get_items {mine['items']}) "
            f"{'same' if same else 'DIFFERENT'}"
        )
        if not same:
            print(json.dumps({"dsh": theirs, "harness": mine["messages"], "error": session.get("error")}))
    return 0 if ok and len(loaded["sessions"]) == len(expected) else 1


if __name__ == "__main__":
    sys.exit(main())

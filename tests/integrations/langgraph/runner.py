"""One process of ``test_two_processes.py``: runs a LangGraph graph on a shared thread.

``python -m tests.integrations.langgraph.runner SPEC NAME RUNS GO`` writes ``GO.NAME.ready``,
waits for the file ``GO``, then invokes a one-node graph ``RUNS`` times on thread ``t`` (each
node "thinks" a few milliseconds, so the two processes' runs overlap). A run refused with
``ThreadMoved`` is counted, not retried. Prints one JSON line: the runs that completed and
the ones refused, by their input text.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from typing import Any

os.environ.setdefault("LANGSMITH_TRACING", "false")

from langchain_core.messages import AIMessage, HumanMessage
from langgraph.graph import END, START, MessagesState, StateGraph

from harness.errors import ThreadMoved
from harness.integrations.langgraph import AsyncHarnessSaver
from harness.stores import open_store


async def main(spec: str, name: str, runs: int, go: str) -> dict[str, Any]:
    async def respond(state: MessagesState) -> dict[str, Any]:
        await asyncio.sleep(0.01)  # the model thinks
        asked = state["messages"][-1].content
        return {"messages": [AIMessage(content=f"answer to {asked}", id=f"a-{asked}")]}

    builder = StateGraph(MessagesState)
    builder.add_node("respond", respond)
    builder.add_edge(START, "respond")
    builder.add_edge("respond", END)
    async with open_store(spec) as store:
        graph = builder.compile(checkpointer=AsyncHarnessSaver(store, wait=60))
        with open(f"{go}.{name}.ready", "w"):
            pass
        while not os.path.exists(go):
            time.sleep(0.005)
        done, refused = [], []
        config: Any = {"configurable": {"thread_id": "t"}}
        for run in range(runs):
            text = f"{name}-{run}"
            try:
                await graph.ainvoke({"messages": [HumanMessage(content=text, id=f"h-{text}")]}, config)
                done.append(text)
            except ThreadMoved:
                refused.append(text)
        return {"done": done, "refused": refused}


if __name__ == "__main__":
    spec, name, runs, go = sys.argv[1:]
    print(json.dumps(asyncio.run(main(spec, name, int(runs), go))), flush=True)

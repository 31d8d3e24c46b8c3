"""``HarnessSaver`` (harness.integrations.langgraph) on the LangGraph graph of ``peers.py``.

``bench/peers.py`` runs ``StateGraph(MessagesState)`` with ``SqliteSaver`` for its LangGraph
rows, then calls ``harness_saver_rows`` with SqliteSaver's figures: the same graph (one
``invoke`` per step whose node adds one AIMessage, ``durability="sync"``) runs on our
checkpointer over JSONL (plain and zstd) and SQLite, in the same process. Printed: ms per step
near step 100 and near the last step and their ratio (flat: near 1,000 / near 100 ≤ 1.5), the
same for the process's CPU time per step (which other load on the machine disturbs less), the
stored size, and that size over the sum of the messages' own sizes (target ≤ 2×; a message's
size is its serialized form, LangGraph's serde msgpack, and its JSON, ``model_dump_json``), with
SqliteSaver / ours ratios.
"""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness.integrations.langgraph import HarnessSaver
from harness.stores.backend import Backend
from harness.stores.jsonl import JsonlBackend
from harness.stores.sqlite import SqliteBackend
from harness.stores.store import SessionStore
from storage import tree_size

OUR_BACKENDS: dict[str, Callable[[Path], Backend]] = {
    "JSONL": lambda root: JsonlBackend(root, compression="none"),
    "JSONL zstd": lambda root: JsonlBackend(root, compression="zstd"),
    "SQLite": lambda root: SqliteBackend(root / "sessions.db"),
}


def messages_graph(checkpointer: Any, text_of: Callable[[int], str]) -> Any:
    """The graph of ``peers.langgraph_rows``: each invoke adds one AIMessage."""
    from langchain_core.messages import AIMessage
    from langgraph.graph import END, START, MessagesState, StateGraph

    def respond(state: MessagesState) -> dict[str, Any]:
        step = len(state["messages"])
        usage: Any = {"input_tokens": 1200, "output_tokens": 140, "total_tokens": 1340}
        return {"messages": [AIMessage(content=text_of(step), id=f"a-{step}", usage_metadata=usage)]}

    builder = StateGraph(MessagesState)
    builder.add_node("respond", respond)
    builder.add_edge(START, "respond")
    builder.add_edge("respond", END)
    return builder.compile(checkpointer=checkpointer)


def near(times: list[float], step: int) -> float:
    width = max(1, min(20, step // 2))
    return statistics.median(times[step - width : step])


def harness_saver_rows(
    base: Path, steps: int, text_of: Callable[[int], str], theirs_near: dict[int, float], theirs_size: int
) -> None:
    from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

    serde = JsonPlusSerializer()
    marks = sorted(theirs_near)
    print(f"HarnessSaver (harness.integrations.langgraph), same graph, {steps:,} steps:")
    for name, make in OUR_BACKENDS.items():
        root = base / f"harness-saver-{name.replace(' ', '-')}"
        root.mkdir()
        gc.collect()
        saver = HarnessSaver(SessionStore(make(root)))
        config: Any = {"configurable": {"thread_id": "bench"}}
        try:
            graph = messages_graph(saver, text_of)
            times, cpu = [], []
            for _ in range(steps):
                start, start_cpu = time.perf_counter(), time.process_time()
                graph.invoke({"messages": []}, config, durability="sync")
                times.append(time.perf_counter() - start)
                cpu.append(time.process_time() - start_cpu)
            messages = graph.get_state(config).values["messages"]
        finally:
            saver.close()
        assert len(messages) == steps
        size = tree_size(root)
        packed = sum(len(serde.dumps_typed(m)[1]) for m in messages)
        as_json = sum(len(m.model_dump_json()) for m in messages)
        ours = {mark: near(times, mark) for mark in marks}
        ours_cpu = {mark: near(cpu, mark) for mark in marks}
        figures = ", ".join(
            f"near {m:,}: {ours[m] * 1e3:.2f} ms [SqliteSaver / ours {theirs_near[m] / ours[m]:,.1f}×]"
            for m in marks
        )
        print(
            f"  on {name:<10} ms per step {figures}; flat: near {marks[-1]:,} / near {marks[0]:,} = "
            f"{ours[marks[-1]] / ours[marks[0]]:.2f}; CPU ms per step (every thread of the process, "
            f"less sensitive to other load) near {marks[0]:,}: {ours_cpu[marks[0]] * 1e3:.2f}, near "
            f"{marks[-1]:,}: {ours_cpu[marks[-1]] * 1e3:.2f}, ratio "
            f"{ours_cpu[marks[-1]] / ours_cpu[marks[0]]:.2f}; "
            f"stored {size / 1e6:,.2f} MB "
            f"[SqliteSaver / ours {theirs_size / size:,.0f}×] = {size / packed:.2f}× the messages' "
            f"serde size ({packed / 1e6:.2f} MB), {size / as_json:.2f}× their JSON ({as_json / 1e6:.2f} MB)"
        )

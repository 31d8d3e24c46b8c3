"""A LangGraph ``StateGraph`` runs 1,000 steps on ``HarnessSaver`` over JSONL (one durable
checkpoint per super-step), then a fresh saver over the same directory reads the thread back."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from harness.integrations.langgraph import HarnessSaver
from harness.stores.jsonl import JsonlBackend
from harness.stores.store import SessionStore
from tests.integrations.langgraph.support import messages_graph

STEPS = 1000
SERDE = JsonPlusSerializer()


def test_a_messages_graph_runs_1000_steps_and_reads_back_exactly(tmp_path: Path) -> None:
    config: Any = {"configurable": {"thread_id": "chat"}}
    with HarnessSaver(SessionStore(JsonlBackend(tmp_path, compression="none"))) as saver:
        graph = messages_graph(saver)
        for _ in range(STEPS):
            graph.invoke({"messages": []}, config, durability="sync")
        messages = graph.get_state(config).values["messages"]
        newest = list(saver.list(config, limit=4))
    assert [m.id for m in messages] == [f"a-{step}" for step in range(STEPS)]
    assert [t.metadata["step"] for t in newest] == [3 * STEPS - 2 - k for k in range(4)]
    assert [len(t.checkpoint["channel_values"]["messages"]) for t in newest] == [1000, 999, 999, 999]

    # linear storage: the file holds each message about once, not once per checkpoint
    stored = sum(path.stat().st_size for path in tmp_path.rglob("*") if path.is_file())
    payload = sum(len(SERDE.dumps_typed(m)[1]) for m in messages)
    assert stored < 4 * payload, (stored, payload)

    with HarnessSaver(SessionStore(JsonlBackend(tmp_path, compression="none"))) as reader:
        again = messages_graph(reader)
        state = again.get_state(config)
        assert SERDE.dumps_typed(state.values["messages"]) == SERDE.dumps_typed(messages)
        # step 9 of the graph is the 4th invoke's last checkpoint: 4 messages (an early one, rebuilt cold)
        early = next(iter(reader.list(config, filter={"step": 10})))
        assert [m.id for m in early.checkpoint["channel_values"]["messages"]] == [f"a-{k}" for k in range(4)]
        again.invoke({"messages": []}, config, durability="sync")  # and it goes on from there
        assert len(again.get_state(config).values["messages"]) == STEPS + 1

"""Shared pieces of the LangGraph checkpointer tests: backends, a messages graph, a message."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("LANGSMITH_TRACING", "false")  # never try to send traces

from langchain_core.messages import AIMessage
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.graph.state import CompiledStateGraph

from harness.stores.backend import Backend
from harness.stores.jsonl import JsonlBackend
from harness.stores.memory import MemoryBackend
from harness.stores.sqlite import SqliteBackend

BACKENDS: dict[str, Callable[[Path], Backend]] = {
    "memory": lambda root: MemoryBackend(),
    "jsonl": lambda root: JsonlBackend(root / "jsonl", compression="none"),
    "sqlite": lambda root: SqliteBackend(root / "sessions.db"),
}


def message(step: int) -> AIMessage:
    """The assistant message of ``step`` (about 900 bytes serialized)."""
    text = f"answer {step}: " + "lorem ipsum dolor sit amet " * 28
    return AIMessage(
        content=text,
        id=f"a-{step}",
        usage_metadata={"input_tokens": 1200, "output_tokens": 140, "total_tokens": 1340},
    )


def messages_graph(checkpointer: Any) -> CompiledStateGraph[Any, Any, Any, Any]:
    """``START -> respond -> END`` over ``MessagesState``: each invoke adds one message."""

    def respond(state: MessagesState) -> dict[str, Any]:
        return {"messages": [message(len(state["messages"]))]}

    builder = StateGraph(MessagesState)
    builder.add_node("respond", respond)
    builder.add_edge(START, "respond")
    builder.add_edge("respond", END)
    return builder.compile(checkpointer=checkpointer)

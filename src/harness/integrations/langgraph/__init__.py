"""harness as LangGraph's checkpointer (``pip install 'harness-sessions[langgraph]'``).

``HarnessSaver(store)`` (sync, runs the store on a loop of its own) and
``AsyncHarnessSaver(store)`` (on the caller's loop) implement LangGraph's
``BaseCheckpointSaver`` over any harness ``SessionStore`` (JSONL, SQLite, PostgreSQL, memory):
one harness session per thread, a growing message list stored once (linear storage), values
serialized by LangGraph's own serde. See docs/integrations/langgraph.md.

This module imports LangGraph; ``import harness`` never imports it.
"""

from __future__ import annotations

from harness.errors import InvalidCheckpointConfig, LangGraphThreadExists, NotALangGraphThread
from harness.integrations.langgraph.core import DEFAULT_PREFIX
from harness.integrations.langgraph.saver import AsyncHarnessSaver, HarnessSaver

__all__ = [
    "DEFAULT_PREFIX",
    "AsyncHarnessSaver",
    "HarnessSaver",
    "InvalidCheckpointConfig",
    "LangGraphThreadExists",
    "NotALangGraphThread",
]

"""harness as the session store of the OpenAI Agents SDK (``docs/integrations/openai-agents.md``).

Needs the optional extra: ``pip install 'harness-sessions[openai-agents]'`` (openai-agents
0.24). ``HarnessSession(session_id, store)`` implements the SDK's ``Session`` protocol and its
compaction-aware protocol over a harness ``SessionStore``; ``items`` maps the SDK's items onto
harness message events. ``import harness`` never imports this package.
"""

from __future__ import annotations

from harness.integrations.openai_agents.items import derive_item, item_payload
from harness.integrations.openai_agents.session import (
    DEFAULT_COMPACTION_THRESHOLD,
    HarnessSession,
    default_should_trigger_compaction,
)

__all__ = [
    "DEFAULT_COMPACTION_THRESHOLD",
    "HarnessSession",
    "default_should_trigger_compaction",
    "derive_item",
    "item_payload",
]

"""harness as the session store of other agent frameworks (``docs/integrations/``).

Each integration is a module of its own that needs its framework's optional extra (for
example ``pip install 'harness-sessions[openai-agents]'``); ``import harness`` never imports
one, and this package imports none of them.

- ``harness.integrations.openai_agents``: ``HarnessSession``, the OpenAI Agents SDK's ``Session``.
- ``harness.integrations.pydantic_ai``: ``HarnessConversationStore``, pydantic-ai's ``ConversationStore``.
- ``harness.integrations.langgraph``: ``HarnessSaver`` / ``AsyncHarnessSaver``, LangGraph checkpointers.
- ``harness.integrations.adk``: ``HarnessSessionService``, Google ADK's ``BaseSessionService``.
"""

from __future__ import annotations

__all__: list[str] = []

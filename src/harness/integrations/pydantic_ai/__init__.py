"""harness as pydantic-ai's conversation store (``pip install 'harness-sessions[pydantic-ai]'``).

``HarnessConversationStore(session_store)`` is a ``pydantic_ai.conversation_store.ConversationStore``
whose conversations are harness sessions on any harness backend: each message is an entry event
holding pydantic-ai's own serialized form plus the message events that show it in ``harness log``,
``harness surface`` and dsh; branches and forks are harness forks. See docs/integrations/pydantic-ai.md.

This module imports pydantic-ai; ``import harness`` never imports it.
"""

from __future__ import annotations

from harness.integrations.pydantic_ai.store import HarnessConversationStore

__all__ = ["HarnessConversationStore"]

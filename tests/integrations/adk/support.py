"""Making the services the ADK tests compare: ADK's ``InMemorySessionService`` and
``HarnessSessionService`` over a fresh harness backend of each kind."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

from google.adk.sessions.base_session_service import BaseSessionService
from google.adk.sessions.in_memory_session_service import InMemorySessionService

from harness.integrations.adk import HarnessSessionService
from harness.stores.store import SessionStore
from tests.integrations.pydantic_ai_support import make_backend

BACKENDS = ["memory", "jsonl", "sqlite", "postgres"]


@contextlib.asynccontextmanager
async def service_on(kind: str, tmp: Path, pg: tuple[str, str] | None) -> AsyncIterator[BaseSessionService]:
    """``InMemorySessionService`` for ``reference``, else ours on a fresh backend of ``kind``."""
    if kind == "reference":
        yield InMemorySessionService()
        return
    store = SessionStore(make_backend(kind, tmp, pg))
    service = HarnessSessionService(store)
    try:
        yield service
    finally:
        await service.close()
        await store.close()

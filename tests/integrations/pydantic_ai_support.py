"""What the pydantic-ai store tests share: fixed messages, the stores under test, and ``Observed``,
which turns what a scenario sees into plain values with the random parts (entry ids, revisions,
generated conversation ids, run ids, timestamps) replaced by labels in order of appearance, so
one scenario run on pydantic-ai's ``InMemoryConversationStore`` and on ours can be compared."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from pydantic_ai.conversation import Conversation
from pydantic_ai.conversation_store import (
    ConversationConflict,
    ConversationEntry,
    ConversationRecord,
    ConversationStore,
    InMemoryConversationStore,
)
from pydantic_ai.exceptions import UserError
from pydantic_ai.messages import (
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

from harness.integrations.pydantic_ai import HarnessConversationStore
from harness.stores import JsonlBackend, MemoryBackend, PostgresBackend, SessionStore, SqliteBackend
from harness.stores.backend import Backend

T = TypeVar("T")

T0 = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
LABELED = frozenset({"timestamp", "run_id", "conversation_id", "revision", "id", "parent_id", "head_id"})


def user(text: str) -> ModelRequest:
    return ModelRequest(parts=[UserPromptPart(text, timestamp=T0)], timestamp=T0)


def reply(text: str) -> ModelResponse:
    return ModelResponse(parts=[TextPart(text)], timestamp=T0, model_name="scripted", provider_name="test")


def call(name: str, args: dict[str, Any], call_id: str) -> ModelResponse:
    return ModelResponse(parts=[ToolCallPart(name, args, call_id)], timestamp=T0, model_name="scripted")


def returned(name: str, content: str, call_id: str) -> ModelRequest:
    return ModelRequest(parts=[ToolReturnPart(name, content, call_id, timestamp=T0)], timestamp=T0)


def turn(n: int) -> list[ModelMessage]:
    """Turn ``n`` of a scripted chat: a prompt, a tool call, its return and a reply."""
    return [
        user(f"question {n}"),
        call("lookup", {"n": n}, f"call-{n}"),
        returned("lookup", f"value {n}", f"call-{n}"),
        reply(f"answer {n}"),
    ]


class Observed:
    """The observable results of a scenario, as plain values with random strings labelled."""

    def __init__(self) -> None:
        self.labels: dict[str, str] = {}
        self.log: list[tuple[str, Any]] = []

    def label(self, value: object) -> object:
        if not isinstance(value, str):
            return value
        return self.labels.setdefault(value, f"#{len(self.labels)}")

    def _walk(self, value: Any) -> Any:
        if isinstance(value, dict):
            return {k: (self.label(v) if k in LABELED else self._walk(v)) for k, v in value.items()}
        if isinstance(value, list):
            return [self._walk(item) for item in value]
        return value

    def messages(self, messages: Sequence[ModelMessage]) -> Any:
        return self._walk(ModelMessagesTypeAdapter.dump_python(list(messages), mode="json"))

    def conversation(self, conversation: Conversation | None) -> Any:
        if conversation is None:
            return None
        return {
            "conversation_id": self.label(conversation.conversation_id),
            "messages": self.messages(conversation.messages),
            "usage": conversation.usage.requests,
            "input_tokens": conversation.usage.input_tokens,
            "deferred": None
            if conversation.deferred_tool_requests is None
            else [c.tool_call_id for c in conversation.deferred_tool_requests.calls],
            "revision": self.label(conversation.revision),
            "new_message_index": conversation.new_message_index,
        }

    def record(self, record: ConversationRecord | None) -> Any:
        if record is None:
            return None
        return {
            "conversation_id": self.label(record.conversation_id),
            "head_id": self.label(record.head_id),
            "usage": record.usage.requests,
            "deferred": record.deferred_tool_requests is not None,
            "scope": record.scope,
            "forked_from": self.label(record.forked_from),
            "forked_at": self.label(record.forked_at),
            "branches": [self.label(tip) for tip in record.branches],
            "revision": self.label(record.revision),
        }

    def entries(self, entries: Sequence[ConversationEntry] | None) -> Any:
        if entries is None:
            return None
        return [
            {
                "id": self.label(e.id),
                "parent_id": self.label(e.parent_id),
                "kind": e.kind,
                "message": self.messages([e.message]),
            }
            for e in entries
        ]

    def note(self, name: str, value: Any) -> None:
        self.log.append((name, value))

    async def attempt(self, name: str, awaitable: Awaitable[T]) -> T | None:
        """Await ``awaitable``, noting ``ok`` or the pydantic-ai error it raised."""
        try:
            value = await awaitable
        except ConversationConflict:
            self.note(name, "ConversationConflict")
            return None
        except UserError:
            self.note(name, "UserError")
            return None
        self.note(name, "ok")
        return value


Scenario = Callable[[ConversationStore, Observed], Awaitable[None]]


@contextlib.asynccontextmanager
async def harness_store(backend: Backend) -> AsyncIterator[HarnessConversationStore]:
    sessions = SessionStore(backend)
    try:
        yield HarnessConversationStore(sessions)
    finally:
        await sessions.close()


def make_backend(kind: str, tmp: Path, dsn_schema: tuple[str, str] | None = None) -> Backend:
    """A fresh backend of ``kind`` (``memory``, ``jsonl``, ``sqlite``, ``postgres``)."""
    if kind == "memory":
        return MemoryBackend()
    if kind == "jsonl":
        return JsonlBackend(tmp / "root", compression="none")
    if kind == "sqlite":
        return SqliteBackend(tmp / "sessions.sqlite")
    assert kind == "postgres" and dsn_schema is not None
    dsn, schema = dsn_schema
    return PostgresBackend(dsn, schema=schema, application_name=f"harness-test-{schema}")


@contextlib.asynccontextmanager
async def reference_store() -> AsyncIterator[ConversationStore]:
    yield InMemoryConversationStore()


__all__ = [
    "T0",
    "Observed",
    "Scenario",
    "call",
    "harness_store",
    "make_backend",
    "reference_store",
    "reply",
    "returned",
    "turn",
    "user",
]

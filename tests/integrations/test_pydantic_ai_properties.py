"""Properties (hypothesis): any ``ModelMessage`` history round-trips through our store exactly
(equal messages and byte-equal ``ModelMessagesTypeAdapter`` JSON) into sessions that harness
loads; and any sequence of saves, branches, rewrites and forks leaves our store and pydantic-ai's
``InMemoryConversationStore`` observing the same conversations."""

from __future__ import annotations

from datetime import UTC
from typing import Any

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from pydantic_ai.conversation import Conversation, ConversationTypeAdapter
from pydantic_ai.conversation_store import ConversationStore, InMemoryConversationStore
from pydantic_ai.messages import (
    BinaryContent,
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    SystemPromptPart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.usage import RequestUsage

from harness.integrations.pydantic_ai import HarnessConversationStore
from harness.stores import MemoryBackend, SessionStore
from harness.testing.samples import run
from tests.integrations.pydantic_ai_support import Observed, user

text = st.text(st.characters(exclude_categories=["Cs"]), max_size=12)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3),
    max_leaves=8,
)
moments = st.datetimes(timezones=st.just(UTC))
call_ids = st.one_of(st.just(""), text, st.uuids().map(str))

binaries = st.builds(BinaryContent, st.binary(max_size=8), media_type=st.just("image/png"))
request_parts: st.SearchStrategy[Any] = st.one_of(
    st.builds(UserPromptPart, st.one_of(text, st.lists(text, max_size=2)), timestamp=moments),
    st.builds(
        UserPromptPart,
        st.lists(binaries, max_size=1),
        timestamp=moments,
    ),
    st.builds(SystemPromptPart, text, timestamp=moments),
    st.builds(
        ToolReturnPart,
        text,
        st.one_of(text, json_values),
        call_ids,
        timestamp=moments,
        outcome=st.sampled_from(["success", "failed", "denied"]),
    ),
)
response_parts: st.SearchStrategy[Any] = st.one_of(
    st.builds(TextPart, text),
    st.builds(ThinkingPart, text, signature=st.none() | text),
    st.builds(ToolCallPart, text, st.one_of(st.dictionaries(text, json_values, max_size=3), text), call_ids),
)
requests = st.builds(
    ModelRequest,
    st.lists(request_parts, max_size=4),
    timestamp=st.none() | moments,
    instructions=st.none() | text,
)
responses = st.builds(
    ModelResponse,
    st.lists(response_parts, max_size=4),
    usage=st.builds(
        RequestUsage,
        input_tokens=st.integers(0, 2**62),
        output_tokens=st.integers(0, 10**6),
        cache_read_tokens=st.integers(0, 100),
    ),
    model_name=st.none() | text,
    provider_name=st.none() | text,
    timestamp=moments,
    provider_details=st.none() | st.dictionaries(text, json_values, max_size=2),
)
histories = st.lists(st.one_of(requests, responses), max_size=8)


def _dump(messages: list[ModelMessage]) -> bytes:
    return ModelMessagesTypeAdapter.dump_json(messages)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(history=histories, more=histories)
def test_any_history_round_trips_exactly(history: list[ModelMessage], more: list[ModelMessage]) -> None:
    # only what pydantic-ai's own adapter round-trips is ours to keep
    assume(ModelMessagesTypeAdapter.validate_json(_dump(history + more)) == history + more)

    async def go() -> tuple[Conversation | None, int]:
        sessions = SessionStore(MemoryBackend())
        store = HarnessConversationStore(sessions)
        conversation = Conversation(conversation_id="c", messages=list(history))
        await store.save(conversation)
        conversation.messages.extend(more)
        await store.save(conversation)
        # a fresh store over the same backend reads it back from the events alone
        loaded = await HarnessConversationStore(sessions).load("c")
        session = await sessions.inspect("c")  # harness loads it under every format rule
        return loaded, len(session.derive_messages())

    loaded, shown = run(go())
    assert loaded is not None
    assert loaded.messages == history + more
    assert _dump(loaded.messages) == _dump(history + more)
    assert shown <= sum(max(1, len(m.parts)) for m in history + more)


operations = st.lists(
    st.one_of(
        st.tuples(st.just("extend"), st.integers(1, 3)),
        st.tuples(st.just("branch"), st.floats(0, 1)),
        st.tuples(st.just("rewrite"), st.floats(0, 1)),
        st.tuples(st.just("fork"), st.floats(0, 1)),
        st.tuples(st.just("delete"), st.just(0.0)),
    ),
    min_size=1,
    max_size=8,
)


async def _drive(store: ConversationStore, ops: list[tuple[str, Any]], seen: Observed) -> None:
    counter = 0
    forks: list[str] = []
    for kind, amount in ops:
        conversation = await store.load("c") or Conversation(conversation_id="c")
        size = len(conversation.messages)
        if kind == "extend":
            for _ in range(amount):
                counter += 1
                conversation.messages.append(user(f"m{counter}"))
            await seen.attempt(f"extend {amount}", store.save(conversation))
        elif kind == "branch":
            at = round(amount * size)
            branched = store.branch("c", at=at, expected_revision=conversation.revision)
            await seen.attempt(f"branch {at}", branched)
        elif kind == "rewrite":
            at = round(amount * size)
            copy = ConversationTypeAdapter.validate_json(ConversationTypeAdapter.dump_json(conversation))
            counter += 1
            copy.messages[at:] = [user(f"r{counter}")]
            await seen.attempt(f"rewrite {at}", store.save(copy))
        elif kind == "fork":
            at = round(amount * size)
            name = f"f{len(forks)}"
            forks.append(name)
            await seen.attempt(f"fork {at}", store.fork("c", at=at, new_conversation_id=name))
        else:
            await store.delete("c")
        seen.note("record", seen.record(await store.read_record("c")))
    for name in ["c", *forks]:
        seen.note(name, seen.conversation(await store.load(name)))
        seen.note(f"{name} entries", seen.entries(await store.load_entries(name)))
    seen.note("listed", sorted(str(seen.label(r.conversation_id)) for r in await store.list_conversations()))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=operations)
def test_any_sequence_of_changes_matches_the_reference(ops: list[tuple[str, Any]]) -> None:
    async def observe(store: ConversationStore) -> list[tuple[str, Any]]:
        seen = Observed()
        await _drive(store, ops, seen)
        return seen.log

    expected = run(observe(InMemoryConversationStore()))
    got = run(observe(HarnessConversationStore(SessionStore(MemoryBackend()))))
    assert got == expected

"""Scenarios of pydantic-ai's ``ConversationStore``, written from its documented semantics (the
docstrings of ``pydantic_ai.conversation_store`` 2.68 and its guide): pydantic-ai publishes no
store tests. Each scenario drives a store through the public API only, asserts what the docs
promise, and notes what it observed; ``test_pydantic_ai_differential.py`` runs every one on
pydantic-ai's ``InMemoryConversationStore`` and on ``HarnessConversationStore`` and compares."""

from __future__ import annotations

import asyncio
import dataclasses

from pydantic_ai import Agent
from pydantic_ai.conversation import Conversation, ConversationTypeAdapter
from pydantic_ai.conversation_store import ConversationConflict, ConversationStore
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.tools import DeferredToolRequests
from pydantic_ai.usage import RunUsage

from tests.integrations.pydantic_ai_support import Observed, Scenario, call, reply, turn, user


async def _tick() -> None:
    # updated_at orders list_conversations; keep two saves from sharing a microsecond
    await asyncio.sleep(0.002)


async def save_then_load(store: ConversationStore, seen: Observed) -> None:
    conversation = Conversation(conversation_id="c", messages=turn(1))
    stored = await store.save(conversation)
    assert len(stored) == 4 and conversation.revision is not None
    seen.note("saved", seen.entries(stored))
    loaded = await store.load("c")
    assert loaded is not None and loaded.messages == turn(1)
    assert loaded.new_message_index == 4 and loaded.revision == conversation.revision
    seen.note("loaded", seen.conversation(loaded))
    seen.note("entries", seen.entries(await store.load_entries("c")))
    seen.note("missing", seen.conversation(await store.load("nobody")))
    seen.note("missing entries", seen.entries(await store.load_entries("nobody")))


async def save_appends_only_new(store: ConversationStore, seen: Observed) -> None:
    await store.save(Conversation(conversation_id="c", messages=turn(1)))
    loaded = await store.load("c")
    assert loaded is not None
    loaded.messages.extend(turn(2))
    stored = await store.save(loaded)
    assert [e.message for e in stored] == turn(2)
    seen.note("second save", seen.entries(stored))
    again = await store.save(loaded)  # nothing new: no entries, but a new revision
    assert again == []
    seen.note("third save", seen.entries(again))
    seen.note("entries", seen.entries(await store.load_entries("c")))
    seen.note("record", seen.record(await store.read_record("c")))


async def stale_writer_conflicts(store: ConversationStore, seen: Observed) -> None:
    await store.save(Conversation(conversation_id="c", messages=turn(1)))
    first, second = await store.load("c"), await store.load("c")
    assert first is not None and second is not None
    first.messages.append(user("from the first"))
    second.messages.append(user("from the second"))
    await seen.attempt("first saves", store.save(first))
    await seen.attempt("second saves over it", store.save(second))
    loaded = await store.load("c")
    assert loaded is not None and loaded.messages[-1] == user("from the first")
    loaded.messages.append(user("second, retried"))
    await seen.attempt("second retries after reloading", store.save(loaded))
    seen.note("final", seen.conversation(await store.load("c")))


async def create_over_existing_conflicts(store: ConversationStore, seen: Observed) -> None:
    await store.save(Conversation(conversation_id="c", messages=turn(1)))
    await seen.attempt("unloaded copy", store.save(Conversation(conversation_id="c", messages=turn(2))))
    seen.note("unchanged", seen.conversation(await store.load("c")))


async def rewritten_history_branches(store: ConversationStore, seen: Observed) -> None:
    await store.save(Conversation(conversation_id="c", messages=[*turn(1), *turn(2)]))
    loaded = await store.load("c")
    assert loaded is not None
    # serialized and read back: the save must compare, and store the edit as a branch
    copy = ConversationTypeAdapter.validate_json(ConversationTypeAdapter.dump_json(loaded))
    copy.messages[4:] = [user("question 2, edited"), reply("answer 2, edited")]
    stored = await store.save(copy)
    assert [e.message for e in stored] == copy.messages[4:]
    seen.note("rewrite", seen.entries(stored))
    record = await store.read_record("c")
    assert record is not None and len(record.branches) == 1
    seen.note("record", seen.record(record))
    seen.note("loaded", seen.conversation(await store.load("c")))
    back = await store.branch("c", from_entry=record.branches[0], expected_revision=record.revision)
    assert back.messages == [*turn(1), *turn(2)]
    seen.note("back", seen.conversation(back))
    seen.note("record after", seen.record(await store.read_record("c")))


async def branch_and_switch_back(store: ConversationStore, seen: Observed) -> None:
    await store.save(Conversation(conversation_id="c", messages=[*turn(1), *turn(2)]))
    loaded = await store.load("c")
    assert loaded is not None
    branched = await store.branch("c", at=5, expected_revision=loaded.revision)
    assert branched.messages == [*turn(1), user("question 2")]
    seen.note("branched", seen.conversation(branched))
    branched.messages.append(reply("a different answer"))
    seen.note("saved on the branch", seen.entries(await store.save(branched)))
    record = await store.read_record("c")
    assert record is not None and len(record.branches) == 1
    seen.note("record", seen.record(record))
    entries = await store.load_entries("c")
    assert entries is not None
    # switch back to the branch left, then to the current one again
    back = await store.branch("c", from_entry=record.branches[0], expected_revision=record.revision)
    seen.note("back", seen.conversation(back))
    again = await store.branch("c", from_entry=entries[-1].id, expected_revision=back.revision)
    seen.note("again", seen.conversation(again))
    seen.note("record after", seen.record(await store.read_record("c")))
    # and onwards from there
    again.messages.extend(turn(3))
    await store.save(again)
    seen.note("final", seen.conversation(await store.load("c")))


async def branch_refusals(store: ConversationStore, seen: Observed) -> None:
    await store.save(Conversation(conversation_id="c", messages=turn(1)))
    loaded = await store.load("c")
    assert loaded is not None
    revision = loaded.revision
    await seen.attempt("unknown conversation", store.branch("nobody", at=0, expected_revision=None))
    await seen.attempt("at past the end", store.branch("c", at=5, expected_revision=revision))
    await seen.attempt("at negative", store.branch("c", at=-1, expected_revision=revision))
    await seen.attempt("neither", store.branch("c", expected_revision=revision))
    await seen.attempt("both", store.branch("c", at=1, from_entry="x", expected_revision=revision))
    await seen.attempt("unknown entry", store.branch("c", from_entry="nope", expected_revision=revision))
    await seen.attempt("stale revision", store.branch("c", at=1, expected_revision="stale"))
    await seen.attempt("wrong scope", store.branch("c", at=1, expected_revision=revision, scope="x"))
    seen.note("unchanged", seen.conversation(await store.load("c")))
    zero = await seen.attempt("at zero", store.branch("c", at=0, expected_revision=revision))
    assert zero is not None and zero.messages == []
    seen.note("zero", seen.conversation(zero))
    zero.messages.extend(turn(2))
    await store.save(zero)
    seen.note("restarted", seen.conversation(await store.load("c")))


async def fork_shares_history(store: ConversationStore, seen: Observed) -> None:
    await store.save(
        Conversation(conversation_id="c", messages=[*turn(1), *turn(2)], usage=RunUsage(requests=4))
    )
    whole = await store.fork("c", new_conversation_id="whole")
    assert whole.usage.requests == 4
    seen.note("whole", seen.conversation(whole))
    part = await store.fork("c", at=4, new_conversation_id="part")
    assert part.messages == turn(1) and part.usage.requests == 0
    seen.note("part", seen.conversation(part))
    generated = await store.fork("c", at=2)
    assert generated.conversation_id not in ("c", "whole", "part")
    seen.note("generated", seen.conversation(generated))
    empty = await store.fork("c", at=0, new_conversation_id="empty")
    seen.note("empty", seen.conversation(empty))
    for name in ("whole", "part", "empty"):
        seen.note(f"record {name}", seen.record(await store.read_record(name)))
    await seen.attempt("taken id", store.fork("c", new_conversation_id="part"))
    await seen.attempt("unknown source", store.fork("nobody", new_conversation_id="x"))
    await seen.attempt("at out of range", store.fork("c", at=9, new_conversation_id="y"))
    await seen.attempt("both", store.fork("c", at=1, from_entry="e", new_conversation_id="z"))
    # the fork goes on alone; the original is untouched
    part.messages.extend(turn(9))
    await store.save(part)
    seen.note("part later", seen.conversation(await store.load("part")))
    seen.note("original", seen.conversation(await store.load("c")))
    empty.messages.append(user("fresh start"))
    await store.save(empty)
    seen.note("empty later", seen.conversation(await store.load("empty")))


async def fork_from_a_branch_left(store: ConversationStore, seen: Observed) -> None:
    await store.save(Conversation(conversation_id="c", messages=[*turn(1), *turn(2)]))
    loaded = await store.load("c")
    assert loaded is not None
    await store.branch("c", at=4, expected_revision=loaded.revision)
    record = await store.read_record("c")
    assert record is not None
    tip = record.branches[0]
    forked = await store.fork("c", from_entry=tip, new_conversation_id="f")
    assert forked.messages == [*turn(1), *turn(2)]
    seen.note("forked", seen.conversation(forked))
    seen.note("record", seen.record(await store.read_record("f")))


async def listing(store: ConversationStore, seen: Observed) -> None:
    for name, scope in (("a", "u1"), ("b", "u2"), ("c", "u1"), ("d", None)):
        await store.save(Conversation(conversation_id=name, messages=turn(1)), scope=scope)
        await _tick()
    loaded = await store.load("a")
    assert loaded is not None
    loaded.messages.append(user("a again"))
    await store.save(loaded)  # a is now the most recently saved

    def ids(records: list[object]) -> list[object]:
        return [seen.label(getattr(r, "conversation_id", None)) for r in records]

    seen.note("all", ids(list(await store.list_conversations())))
    seen.note("u1", ids(list(await store.list_conversations(scope="u1"))))
    seen.note("limit", ids(list(await store.list_conversations(limit=2))))
    seen.note("u1 limit 1", ids(list(await store.list_conversations(scope="u1", limit=1))))
    seen.note("zero", ids(list(await store.list_conversations(limit=0))))
    await seen.attempt("negative", store.list_conversations(limit=-1))
    seen.note("records", [seen.record(r) for r in await store.list_conversations()])


async def scopes_keep_owners_apart(store: ConversationStore, seen: Observed) -> None:
    await store.save(Conversation(conversation_id="c", messages=turn(1)), scope="alice")
    seen.note("alice loads", seen.conversation(await store.load("c", scope="alice")))
    seen.note("bob loads", seen.conversation(await store.load("c", scope="bob")))
    seen.note("bob entries", seen.entries(await store.load_entries("c", scope="bob")))
    loaded = await store.load("c")
    assert loaded is not None
    loaded.messages.append(user("more"))
    await seen.attempt("bob saves", store.save(loaded, scope="bob"))
    await seen.attempt("alice saves", store.save(loaded, scope="alice"))
    await seen.attempt("bob forks", store.fork("c", new_conversation_id="f1", source_scope="bob"))
    forked = await seen.attempt(
        "alice forks", store.fork("c", new_conversation_id="f2", source_scope="alice")
    )
    assert forked is not None
    seen.note("fork scope", seen.record(await store.read_record("f2")))
    await seen.attempt("fork to bob", store.fork("c", new_conversation_id="f3", scope="bob"))
    seen.note("f3", seen.record(await store.read_record("f3")))
    await store.delete("c", scope="bob")  # not bob's: left alone
    seen.note("after bob deletes", seen.conversation(await store.load("c")))
    await store.delete("c", scope="alice")
    seen.note("after alice deletes", seen.conversation(await store.load("c")))


async def delete_and_recreate(store: ConversationStore, seen: Observed) -> None:
    await store.save(Conversation(conversation_id="c", messages=turn(1)))
    await store.fork("c", new_conversation_id="f")
    old = await store.load("c")
    assert old is not None
    await store.delete("c")
    assert await store.load("c") is None
    seen.note("deleted", seen.conversation(await store.load("c")))
    seen.note("listed", [seen.label(r.conversation_id) for r in await store.list_conversations()])
    seen.note("fork survives", seen.conversation(await store.load("f")))
    await store.delete("c")  # deleting what is gone is a no-op
    old.messages.append(user("after the delete"))
    await seen.attempt("a copy loaded before the delete", store.save(old))
    fresh = Conversation(conversation_id="c", messages=turn(2))
    await seen.attempt("created again", store.save(fresh))
    seen.note("new one", seen.conversation(await store.load("c")))
    seen.note("new record", seen.record(await store.read_record("c")))
    await seen.attempt("the old copy still cannot", store.save(old))
    await seen.attempt("delete the fork", store.delete("f"))
    seen.note("fork gone", seen.conversation(await store.load("f")))
    seen.note("listed after", [seen.label(r.conversation_id) for r in await store.list_conversations()])


async def load_a_window(store: ConversationStore, seen: Observed) -> None:
    await store.save(Conversation(conversation_id="c", messages=[*turn(1), *turn(2)]))
    window = await store.load("c", limit=3)
    assert window is not None and window.messages == turn(2)[1:]
    seen.note("window", seen.conversation(window))
    seen.note("window entries", seen.entries(await store.load_entries("c", limit=2)))
    seen.note("zero", seen.conversation(await store.load("c", limit=0)))
    seen.note("past the start", seen.conversation(await store.load("c", limit=50)))
    await seen.attempt("negative", store.load("c", limit=-1))
    window.messages.append(user("on top of the window"))
    stored = await store.save(window)  # appends to the whole conversation
    assert [e.message for e in stored] == [user("on top of the window")]
    whole = await store.load("c")
    assert whole is not None and len(whole.messages) == 9
    seen.note("whole", seen.conversation(whole))


async def window_copy_compares_only_its_window(store: ConversationStore, seen: Observed) -> None:
    await store.save(Conversation(conversation_id="c", messages=[*turn(1), *turn(2)]))
    window = await store.load("c", limit=4)
    assert window is not None
    copy = ConversationTypeAdapter.validate_json(ConversationTypeAdapter.dump_json(window))
    copy.messages.append(user("after a serialized window"))
    seen.note("saved", seen.entries(await store.save(copy)))
    seen.note("whole", seen.conversation(await store.load("c")))
    seen.note("record", seen.record(await store.read_record("c")))


async def usage_and_deferred_requests(store: ConversationStore, seen: Observed) -> None:
    pending = DeferredToolRequests(calls=[ToolCallPart("approve_me", {"big": 2**60}, "call-x")])
    conversation = Conversation(
        conversation_id="c",
        messages=[user("do it"), call("approve_me", {"big": 2**60}, "call-x")],
        usage=RunUsage(requests=3, input_tokens=1200, output_tokens=40, tool_calls=1),
        deferred_tool_requests=pending,
    )
    await store.save(conversation)
    loaded = await store.load("c")
    assert loaded is not None
    assert loaded.deferred_tool_requests == pending and loaded.usage == conversation.usage
    seen.note("loaded", seen.conversation(loaded))
    # branching away from the head forgets the requests; a fork of the whole keeps them
    whole = await store.fork("c", new_conversation_id="f")
    assert whole.deferred_tool_requests == pending
    branched = await store.branch("c", at=1, expected_revision=loaded.revision)
    assert branched.deferred_tool_requests is None
    seen.note("branched", seen.conversation(branched))
    seen.note("fork", seen.conversation(whole))


async def changed_in_place_is_not_noticed(store: ConversationStore, seen: Observed) -> None:
    # documented: a message changed in place before the index is not noticed (replace it instead)
    await store.save(Conversation(conversation_id="c", messages=[user("one"), reply("two")]))
    loaded = await store.load("c")
    assert loaded is not None
    loaded.messages[1] = reply("two, replaced")  # replaced: compared, stored as a branch
    seen.note("replaced", seen.entries(await store.save(loaded)))
    seen.note("record", seen.record(await store.read_record("c")))
    seen.note("loaded", seen.conversation(await store.load("c")))


async def entries_read_back(store: ConversationStore, seen: Observed) -> None:
    stored = await store.save(Conversation(conversation_id="c", messages=turn(1)))
    for entry in stored:
        again = await store.read_entry(entry.id)
        assert again == entry
    history = await store.read_history(stored[-1].id)
    assert history == stored
    seen.note("history", seen.entries(history))
    seen.note("limited", seen.entries(await store.read_history(stored[-1].id, limit=2)))
    seen.note("empty", seen.entries(await store.read_history(None)))
    seen.note("middle", seen.entries(await store.read_history(stored[1].id)))


async def primitives_refuse(store: ConversationStore, seen: Observed) -> None:
    stored = await store.save(Conversation(conversation_id="c", messages=turn(1)))
    record = await store.read_record("c")
    assert record is not None
    stale = dataclasses.replace(record, revision="next")
    await seen.attempt("expected none over a record", store.write_record(stale, expected_revision=None))
    await seen.attempt("wrong expected", store.write_record(stale, expected_revision="wrong"))
    missing = dataclasses.replace(record, head_id="no-such-entry", revision="next2")
    await seen.attempt(
        "head nobody has", store.write_record(missing, expected_revision=record.revision)
    )
    await seen.attempt("delete stale", store.delete_record("c", expected_revision="wrong"))
    await seen.attempt("delete unknown", store.delete_record("nobody", expected_revision="x"))
    # a record that moves the head back without new entries is a valid write
    back = dataclasses.replace(record, head_id=stored[1].id, revision="next3")
    await seen.attempt("head moved back", store.write_record(back, expected_revision=record.revision))
    seen.note("record", seen.record(await store.read_record("c")))
    seen.note("loaded", seen.conversation(await store.load("c")))


async def agent_runs_through_the_store(store: ConversationStore, seen: Observed) -> None:
    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        last = messages[-1].parts[-1]
        if getattr(last, "part_kind", None) == "tool-return":
            return ModelResponse(parts=[TextPart(f"the sum is {last.content}")])  # type: ignore[union-attr]
        return ModelResponse(parts=[ToolCallPart("add", {"a": 2, "b": len(messages)}, "call-add")])

    agent = Agent(FunctionModel(model, model_name="scripted"))

    @agent.tool_plain
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    conversation = await store.load("chat") or Conversation(conversation_id="chat")
    result = await agent.run("add please", conversation=conversation)
    await store.save(result)
    again = await store.load("chat")
    assert again is not None and again.messages == result.all_messages()
    result2 = await agent.run("once more", conversation=again)
    await store.save(result2)
    final = await store.load("chat")
    assert final is not None and final.messages == result2.all_messages()
    assert final.usage.requests == 4
    seen.note("final", seen.conversation(final))
    seen.note("output", result2.output)


async def conflict_is_a_user_error_with_the_id(store: ConversationStore, seen: Observed) -> None:
    await store.save(Conversation(conversation_id="c", messages=turn(1)))
    try:
        await store.save(Conversation(conversation_id="c", messages=turn(1)))
    except ConversationConflict as conflict:
        seen.note("conflict", seen.label(conflict.conversation_id))
    else:
        raise AssertionError("a second unloaded save of the same id must conflict")
    seen.note("returned", [r.message for r in (await store.load_entries("c") or [])] == turn(1))
    seen.note("tool pair", [m.kind for m in (await store.load("c") or Conversation()).messages])


SCENARIOS: dict[str, Scenario] = {
    scenario.__name__: scenario
    for scenario in (
        save_then_load,
        save_appends_only_new,
        stale_writer_conflicts,
        create_over_existing_conflicts,
        rewritten_history_branches,
        branch_and_switch_back,
        branch_refusals,
        fork_shares_history,
        fork_from_a_branch_left,
        listing,
        scopes_keep_owners_apart,
        delete_and_recreate,
        load_a_window,
        window_copy_compares_only_its_window,
        usage_and_deferred_requests,
        changed_in_place_is_not_noticed,
        entries_read_back,
        primitives_refuse,
        agent_runs_through_the_store,
        conflict_is_a_user_error_with_the_id,
    )
}

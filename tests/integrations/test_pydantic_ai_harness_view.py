"""What a pydantic-ai conversation looks like from harness: valid format-v0 sessions whose message
events show the conversation (``harness log``/``surface``), branches and forks as harness forks
(``harness lineage``), the serialized messages kept byte for byte, deletes that lose nothing, and
the refusals of the primitives."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai.conversation import Conversation
from pydantic_ai.conversation_store import ConversationEntry, ConversationRecord
from pydantic_ai.exceptions import UserError
from pydantic_ai.messages import (
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    SystemPromptPart,
    TextPart,
    ThinkingPart,
    UserPromptPart,
)
from typer.testing import CliRunner

from harness.cli import app
from harness.integrations.pydantic_ai import HarnessConversationStore
from harness.query.forks import store_lineage
from harness.stores import JsonlBackend, MemoryBackend, SessionStore
from harness.testing.samples import run
from tests.integrations.pydantic_ai_support import T0, call, reply, returned, turn, user


def cli(root: Path, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["--store", str(root), *args], env={"COLUMNS": "80"})
    return result.exit_code, result.stdout


async def _chat_with_branch_and_fork(root: Path) -> None:
    sessions = SessionStore(JsonlBackend(root, compression="none"))
    store = HarnessConversationStore(sessions)
    await store.save(Conversation(conversation_id="chat", messages=[*turn(1), *turn(2)]))
    loaded = await store.load("chat")
    assert loaded is not None
    branched = await store.branch("chat", at=4, expected_revision=loaded.revision)
    branched.messages.extend([user("question 2, asked again"), reply("answer 2, second try")])
    await store.save(branched)
    await store.fork("chat", at=2, new_conversation_id="side")
    await sessions.close()


def test_the_log_and_the_surface_show_the_conversation(tmp_path: Path) -> None:
    run(_chat_with_branch_and_fork(tmp_path))
    code, out = cli(tmp_path, "surface", "chat", "--json")
    assert code == 0
    shown = json.loads(out)
    texts = [block.get("text") for message in shown["messages"] for block in message["content"]]
    assert "question 1" in texts and "answer 2" in texts
    roles = [message["role"] for message in shown["messages"]]
    assert roles == ["user", "assistant", "user", "assistant"] * 2
    code, out = cli(tmp_path, "log", "chat")
    assert code == 0 and "user/message" in out and "tool/result" in out and "pydantic-ai/entry" in out
    assert max(len(line) for line in out.splitlines()) <= 80


def test_branches_and_forks_are_harness_forks_in_the_lineage(tmp_path: Path) -> None:
    run(_chat_with_branch_and_fork(tmp_path))

    async def lineage() -> tuple[str | None, Any]:
        sessions = SessionStore(JsonlBackend(tmp_path, compression="none"))
        store = HarnessConversationStore(sessions)
        tip = await store.session_of("chat")
        found = await store_lineage(sessions, "chat")
        await sessions.close()
        return tip, found

    tip, found = run(lineage())
    assert tip is not None and tip.startswith("chat~branch-")
    assert sorted(found.descendant_ids()) == sorted([tip, "side"])
    code, out = cli(tmp_path, "lineage", "chat", "--json")
    assert code == 0
    assert {d["id"] for d in json.loads(out)["descendants"]} == {tip, "side"}
    # the branch session shows the branch: the first turn, then the second one asked again
    code, out = cli(tmp_path, "surface", tip, "--json")
    texts = [b.get("text") for m in json.loads(out)["messages"] for b in m["content"]]
    assert texts[-2:] == ["question 2, asked again", "answer 2, second try"]


def test_every_session_loads_and_verifies_in_harness(tmp_path: Path) -> None:
    run(_chat_with_branch_and_fork(tmp_path))

    async def load_all() -> list[tuple[str, int]]:
        sessions = SessionStore(JsonlBackend(tmp_path, compression="none"))
        out = []
        for info in await sessions.list():
            session = await sessions.inspect(info.id)
            out.append((info.id, len(session.derive_messages())))
        await sessions.close()
        return out

    loaded = run(load_all())
    assert len(loaded) == 3 and all(count > 0 for _, count in loaded)
    for session_id, _ in loaded:
        code, _ = cli(tmp_path, "verify", session_id)
        assert code == 0


def test_the_stored_form_is_pydantic_ais_own_serialization(tmp_path: Path) -> None:
    message = ModelResponse(
        parts=[ThinkingPart("hmm", signature="sig"), TextPart("big number follows")],
        timestamp=T0,
        model_name="m",
        provider_details={"huge": 2**63 + 5, "float": 0.1},
    )

    async def go() -> tuple[list[Any], Conversation | None]:
        sessions = SessionStore(MemoryBackend())
        store = HarnessConversationStore(sessions)
        await store.save(Conversation(conversation_id="c", messages=[user("hi"), message]))
        session = await sessions.inspect("c")
        entries = [e.data for e in session.events if e.type == "pydantic-ai/entry"]
        return entries, await store.load("c")

    entries, loaded = run(go())
    assert entries[1]["messages"] == ModelMessagesTypeAdapter.dump_json([message]).decode()
    assert loaded is not None and loaded.messages[1] == message
    assert loaded.messages[1].provider_details == {"huge": 2**63 + 5, "float": 0.1}


def test_system_prompts_and_files_are_shown_and_kept(tmp_path: Path) -> None:
    from pydantic_ai.messages import ImageUrl

    request = ModelRequest(
        parts=[
            SystemPromptPart("be brief", timestamp=T0),
            UserPromptPart(["look at", ImageUrl("https://example.com/cat.png")], timestamp=T0),
        ],
        timestamp=T0,
    )

    async def go() -> tuple[list[Any], Conversation | None]:
        sessions = SessionStore(MemoryBackend())
        store = HarnessConversationStore(sessions)
        await store.save(Conversation(conversation_id="c", messages=[request]))
        session = await sessions.inspect("c")
        return [m.raw for m in session.derive_messages()], await store.load("c")

    shown, loaded = run(go())
    assert shown[0]["source"] == {"kind": "plugin", "plugin": "pydantic-ai", "form": "instructions"}
    assert [b["text"] for b in shown[1]["content"]] == ["look at", "[image-url: https://example.com/cat.png]"]
    assert loaded is not None and loaded.messages == [request]


def test_delete_keeps_the_history_in_the_log() -> None:
    async def go() -> tuple[int, int, ConversationEntry, Conversation | None]:
        sessions = SessionStore(MemoryBackend())
        store = HarnessConversationStore(sessions)
        stored = await store.save(Conversation(conversation_id="c", messages=turn(1)))
        before = len(await sessions.inspect("c"))
        await store.delete("c")
        session = await sessions.inspect("c")
        # the documented difference from InMemoryConversationStore: the entries stay readable
        entry = await store.read_entry(stored[0].id)
        return before, len(session.derive_messages()), entry, await store.load("c")

    before, shown, entry, loaded = run(go())
    assert loaded is None
    assert shown == 4 and before > 0
    assert entry.message == turn(1)[0]


def test_a_harness_session_that_is_no_conversation_is_left_alone() -> None:
    async def go() -> tuple[Any, ...]:
        sessions = SessionStore(MemoryBackend())
        session = await sessions.create(id="agent-run")
        session.append("user/message", {"id": "u", "role": "user", "content": [], "source": {"kind": "user"}},
                       surface_op="append")
        await sessions.flush(session)
        await sessions.release(session)
        store = HarnessConversationStore(sessions)
        loaded = await store.load("agent-run")
        listed = await store.list_conversations()
        try:
            await store.save(Conversation(conversation_id="agent-run", messages=turn(1)))
        except UserError as error:
            refused = type(error).__name__
        else:
            refused = "saved"
        return loaded, listed, refused, len(await sessions.inspect("agent-run"))

    loaded, listed, refused, length = run(go())
    assert (loaded, listed, refused) == (None, [], "ConversationConflict")
    assert length == 2  # the user message and the end-seed of the inspection: nothing written


def test_write_record_refuses_entries_that_do_not_chain() -> None:
    async def go() -> list[str]:
        store = HarnessConversationStore(SessionStore(MemoryBackend()))
        first = ConversationEntry(parent_id=None, message=user("a"))
        stray = ConversationEntry(parent_id="elsewhere", message=reply("b"))
        refusals = []
        for entries, head in (([first, stray], stray.id), ([first], "not-the-last")):
            record = ConversationRecord(conversation_id="c", head_id=head)
            try:
                await store.write_record(record, new_entries=entries, expected_revision=None)
            except UserError as error:
                refusals.append(str(error))
        assert await store.read_record("c") is None
        return refusals

    refusals = run(go())
    assert len(refusals) == 2
    assert "does not follow" in refusals[0] and "is not the last new entry" in refusals[1]


def test_tool_calls_pair_with_their_results_in_the_view() -> None:
    async def go() -> list[Any]:
        sessions = SessionStore(MemoryBackend())
        store = HarnessConversationStore(sessions)
        await store.save(
            Conversation(
                conversation_id="c", messages=[user("q"), call("f", {}, "id-1"), returned("f", "r", "id-1")]
            )
        )
        return [m.raw for m in (await sessions.inspect("c")).derive_messages()]

    shown = run(go())
    assert shown[1]["content"][0] == {"type": "tool-call", "id": "id-1", "name": "f", "arguments": "{}"}
    assert shown[2]["source"] == {"kind": "tool", "callId": "id-1"}
    assert shown[2]["content"][0]["toolCallId"] == "id-1"


def test_import_harness_does_not_import_pydantic_ai() -> None:
    code = "import sys, harness, harness.integrations; print('pydantic_ai' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


@pytest.mark.parametrize("compression", ["none", "zstd"])
def test_conversations_survive_a_new_process_view(tmp_path: Path, compression: str) -> None:
    async def write() -> None:
        sessions = SessionStore(JsonlBackend(tmp_path, compression=compression))  # type: ignore[arg-type]
        await HarnessConversationStore(sessions).save(Conversation(conversation_id="c", messages=turn(1)))
        await sessions.close()

    async def read() -> Conversation | None:
        sessions = SessionStore(JsonlBackend(tmp_path, compression=compression))  # type: ignore[arg-type]
        loaded = await HarnessConversationStore(sessions).load("c")
        await sessions.close()
        return loaded

    run(write())
    loaded = asyncio.run(read())
    assert loaded is not None and loaded.messages == turn(1)


def test_a_message_refused_half_way_leaves_nothing_behind(monkeypatch: pytest.MonkeyPatch) -> None:
    from harness.errors import InvalidEventData
    from harness.integrations.pydantic_ai import render
    from harness.integrations.pydantic_ai import store as store_module

    real = render.render_message

    def refusing(entry_id: str, message: Any, *, turn: int, step: int) -> Any:
        if message == user("refuse me"):
            raise InvalidEventData("data.content", "refused for the test")
        return real(entry_id, message, turn=turn, step=step)

    monkeypatch.setattr(store_module, "render_message", refusing)

    async def go() -> tuple[Conversation | None, list[Any]]:
        sessions = SessionStore(MemoryBackend())
        store = HarnessConversationStore(sessions)
        await store.save(Conversation(conversation_id="c", messages=turn(1)))
        stored_before = await sessions.backend.stored_length("c")
        loaded = await store.load("c")
        assert loaded is not None
        loaded.messages.extend([user("fine"), user("refuse me")])
        with pytest.raises(InvalidEventData):
            await store.save(loaded)
        assert await sessions.backend.stored_length("c") == stored_before
        again = await store.load("c")
        assert again is not None
        again.messages.append(user("after the refusal"))
        await store.save(again)
        session = await sessions.inspect("c")
        texts = [b.get("text") for m in session.derive_messages() for b in m.raw["content"]]
        return await store.load("c"), texts

    final, texts = run(go())
    assert final is not None and final.messages == [*turn(1), user("after the refusal")]
    assert "fine" not in texts and texts[-1] == "after the refusal"


def test_a_fork_that_keeps_no_message_is_still_a_harness_fork() -> None:
    async def go() -> tuple[str | None, str | None, list[Any]]:
        sessions = SessionStore(MemoryBackend())
        store = HarnessConversationStore(sessions)
        await store.save(Conversation(conversation_id="c", messages=turn(1)))
        await store.fork("c", at=0, new_conversation_id="empty")
        await store.save(Conversation(conversation_id="fresh", messages=turn(2)))
        empty, fresh = await sessions.inspect("empty"), await sessions.inspect("fresh")
        return empty.header.parent_session, fresh.header.parent_session, empty.derive_messages()

    empty_parent, fresh_parent, shown = run(go())
    assert (empty_parent, fresh_parent, shown) == ("c", None, [])

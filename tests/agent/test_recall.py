"""The model recalls what compaction hid: a scripted agent run in which a constant given early
is compacted out of the model's view, the model calls ``session_search``, reads the constant
back from the shadowed event and answers with it."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import pytest
from typer.testing import CliRunner

import harness
from harness.agent.loop import Agent, AgentSettings
from harness.cli import app
from harness.compaction.checkpoint import PREAMBLE, RECALL_NOTE
from harness.compaction.summarizer import Summary, SummaryRequest
from harness.messages.request import GenerateOptions
from harness.messages.stream import StreamChunk
from harness.query import StoreReader, index_of
from harness.stores import JsonlBackend, SessionStore
from harness.testing.fake_deepseek import FakeDeepSeek, Reply
from harness.testing.scripted import ScriptedProvider, calls_reply, text_reply
from harness.tools.base import Tool
from harness.tools.session_search import SessionSearch

CONSTANT = "ZEBRA-4471"
SETTINGS = AgentSettings(model="m-1", system="You are terse.")


class ForgetfulSummarizer:
    """A summary that drops every detail (the constant included)."""

    async def summarize(self, request: SummaryRequest) -> Summary:
        return Summary(
            texts=("The user and the assistant chatted about a deployment.",), provider="t", model="t"
        )


class RecallingProvider(ScriptedProvider):
    """Scripted, except that after a ``session_search`` result it answers with the key id it
    reads in that result (or says it cannot find one)."""

    async def stream(
        self, options: GenerateOptions, *, cancel: asyncio.Event | None = None
    ) -> AsyncIterator[StreamChunk]:
        last = options.messages[-1].raw if options.messages else {}
        if last.get("source", {}).get("kind") == "tool":
            self.requests.append(options)
            result = json.dumps(last["content"])
            found = CONSTANT if CONSTANT in result else "not found"
            for chunk in text_reply(f"The key id was {found}."):
                yield chunk
            return
        async for chunk in super().stream(options, cancel=cancel):
            yield chunk


def _run(session: harness.Session, tools: Sequence[Tool]) -> tuple[RecallingProvider, harness.Session]:
    replies: list[Sequence[StreamChunk] | str] = [text_reply("Noted. " + "ok " * 300)]
    replies += [text_reply("ok " * 400) for _ in range(3)]
    replies.append(calls_reply(("call-r1", "session_search", json.dumps({"query": "deploy key id"}))))
    provider = RecallingProvider(replies, window=10**6)
    loop = Agent(
        session, provider, tools, SETTINGS, workspace=".", record_baseline=False,
        summarizer=ForgetfulSummarizer(),
    )  # fmt: skip
    asyncio.run(loop.run_turn(f"The deploy key id is {CONSTANT}. Remember it. " + "detail " * 300))
    for index in range(3):
        asyncio.run(loop.run_turn(f"question {index}: " + "detail " * 400))
    provider.window = 2000  # the next turn's pre-step check finds the context under pressure
    outcome = asyncio.run(loop.run_turn("What was the deploy key id?"))
    assert outcome.kind == "completed"
    return provider, session


def test_a_scripted_model_recovers_a_constant_that_compaction_dropped() -> None:
    provider, session = _run(harness.Session.create(), [SessionSearch()])
    kinds = [event.type for event in session.events]
    assert "compaction/end" in kinds and session.surface.replace_generation >= 1
    # the model's view before it searched holds no trace of the constant, but says how to look
    seen = provider.requests[-2]
    assert CONSTANT not in json.dumps([m.raw for m in seen.messages])
    checkpoint = seen.messages[0].raw["content"][0]["text"]
    assert checkpoint.startswith(PREAMBLE + " " + RECALL_NOTE.format(tool="session_search"))
    # the tool answered from the shadowed event that held the constant
    index = index_of(session)
    (result,) = [r for r in index.records() if r.type == "tool/result"]
    text = json.dumps(result.event.data["message"]["content"])
    assert CONSTANT in text and "shadowed: condensed away" in text
    (given,) = [
        r for r in index.records() if r.type == "user/message" and CONSTANT in json.dumps(r.event.data)
    ]
    assert given.classification == "shadowed" and f"#{given.seq} user/message" in text
    # and the model answered with it
    final = session.derive_messages()[-1]
    assert final.raw["role"] == "assistant" and final.text == f"The key id was {CONSTANT}."


def test_without_the_tool_the_checkpoint_keeps_its_plain_preamble() -> None:
    provider, session = _run(harness.Session.create(), [])
    first = provider.requests[-2].messages[0].raw["content"][0]["text"]
    assert first == PREAMBLE + "\n\n<compacted-summary>"
    assert "session_search" not in first
    # the call to a tool it was not offered is an error result, never a crash
    final = session.derive_messages()[-1]
    assert final.text == "The key id was not found."


def test_the_cli_agent_offers_session_search_and_it_reads_the_running_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-test-recall")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    root = tmp_path / "sessions"
    script = [
        Reply.tool_calls([("c1", "session_search", '{"query":"launch word"}')]),
        Reply.text("The launch word is HELIOTROPE."),
    ]
    with FakeDeepSeek(script, api_key="sk-test-recall") as server:
        monkeypatch.setenv("DEEPSEEK_BASE_URL", server.base_url)
        result = CliRunner().invoke(
            app,
            ["--store", str(root), "run", "The launch word is HELIOTROPE.", "-w", str(workspace), "--json"],
            catch_exceptions=False,
        )
        requests = list(server.requests)
    assert result.exit_code == 0, result.output
    assert "session_search" in [tool["function"]["name"] for tool in requests[0].body["tools"]]
    tool_result = requests[1].messages[-1]
    assert tool_result["role"] == "tool" and "#" in tool_result["content"]
    assert "user/message [current]" in tool_result["content"] and "HELIOTROPE" in tool_result["content"]


# ---- the fork line: a forked session recalls what its parent learned and compacted after the fork


async def _forked_store(root: Path) -> tuple[SessionStore, harness.Session, harness.Session]:
    """A JSONL store holding ``main`` (which learns CONSTANT after ``fork`` forked from it, then
    compacts it away with a summary that drops it), ``fork`` and a sibling fork ``sibling``."""
    store = SessionStore(JsonlBackend(root))
    parent = await store.create(id="main")
    replies: list[Sequence[StreamChunk] | str] = [text_reply("Planned.")]
    replies += [text_reply("Noted. " + "ok " * 300)] + [text_reply("ok " * 400) for _ in range(3)]
    replies.append(text_reply("Compacted and carrying on."))
    provider = RecallingProvider(replies, window=10**6)
    agent = Agent(
        parent, provider, [SessionSearch()], SETTINGS, workspace=".", record_baseline=False,
        summarizer=ForgetfulSummarizer(), checkpoint=store.flush,
    )  # fmt: skip
    await agent.run_turn("Let us plan the deployment.")
    child = await store.adopt(parent.fork(id="fork"))
    await store.flush(child)
    await agent.run_turn(f"The deploy key id is {CONSTANT}. Remember it. " + "detail " * 300)
    for index in range(3):
        await agent.run_turn(f"question {index}: " + "detail " * 400)
    provider.window = 2000  # the next turn's pre-step check compacts the parent
    await agent.run_turn("Carry on.")
    sibling = await store.adopt(parent.fork(id="sibling"))
    await store.flush(sibling)
    await store.flush(parent)
    return store, parent, child


def test_a_forked_session_recovers_a_constant_its_parent_learned_and_compacted_after_the_fork(
    tmp_path: Path,
) -> None:
    async def main() -> tuple[RecallingProvider, harness.Session, harness.Session]:
        store, parent, child = await _forked_store(tmp_path / "root")
        try:
            call = json.dumps({"query": "deploy key id"})
            provider = RecallingProvider([calls_reply(("call-f1", "session_search", call))], window=10**6)
            agent = Agent(
                child, provider, [SessionSearch()], SETTINGS, workspace=".", record_baseline=False,
                checkpoint=store.flush, sessions=StoreReader(store),
            )  # fmt: skip
            outcome = await agent.run_turn("What deploy key id did the main session get after we forked?")
            assert outcome.kind == "completed"
            return provider, parent, child
        finally:
            await store.close()

    provider, parent, child = asyncio.run(main())
    # the constant exists only in the parent's compacted history: shadowed there, absent here
    (given,) = [
        r
        for r in index_of(parent).records()
        if r.type == "user/message" and CONSTANT in json.dumps(r.event.data)
    ]
    assert given.classification == "shadowed"
    assert CONSTANT not in json.dumps([m.raw for m in parent.derive_messages()])
    assert CONSTANT not in json.dumps([m.raw for m in provider.requests[0].messages])
    (result,) = [r for r in index_of(child).records() if r.type == "tool/result"]
    assert not any(CONSTANT in json.dumps(e.data) for e in child.events[: result.seq])
    # the tool found it in the parent, said where, and the model answered with it
    text = json.dumps(result.event.data["message"]["content"])
    assert CONSTANT in text
    assert f"#{given.seq} user/message [shadowed: condensed away" in text
    assert "in session main (fork parent; not in this session's history)" in text
    final = child.derive_messages()[-1]
    assert final.raw["role"] == "assistant" and final.text == f"The key id was {CONSTANT}."


def test_a_forked_session_is_refused_a_sibling_fork_and_the_turn_goes_on(tmp_path: Path) -> None:
    async def main() -> harness.Session:
        store, _, child = await _forked_store(tmp_path / "root")
        try:
            call = json.dumps({"query": "deploy", "session": "sibling"})
            replies = [calls_reply(("call-s1", "session_search", call))]
            provider = RecallingProvider(replies, window=10**6)
            agent = Agent(
                child, provider, [SessionSearch()], SETTINGS, workspace=".", record_baseline=False,
                checkpoint=store.flush, sessions=StoreReader(store),
            )  # fmt: skip
            outcome = await agent.run_turn("Look in the sibling fork for the deploy key id.")
            assert outcome.kind == "completed"
            return child
        finally:
            await store.close()

    child = asyncio.run(main())
    (result,) = [e for e in child.events if e.type == "tool/result"]
    assert result.data["error"] == {"name": "ToolError", "code": "SESSION_OUT_OF_REACH"}
    content = result.data["message"]["content"][0]
    assert content["isError"] is True
    assert "cannot reach session 'sibling'" in json.dumps(content) and CONSTANT not in json.dumps(content)
    assert child.derive_messages()[-1].text == "The key id was not found."


def test_the_cli_resume_of_a_fork_reaches_its_parent_through_the_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-test-recall")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    root = tmp_path / "root"

    async def build() -> None:
        store, _, _ = await _forked_store(root)
        await store.close()

    asyncio.run(build())
    script = [
        Reply.tool_calls([("c1", "session_search", '{"query":"deploy key id is"}')]),
        Reply.text(f"The deploy key id was {CONSTANT}."),
    ]
    with FakeDeepSeek(script, api_key="sk-test-recall") as server:
        monkeypatch.setenv("DEEPSEEK_BASE_URL", server.base_url)
        result = CliRunner().invoke(
            app,
            ["--store", str(root), "resume", "fork", "What key id did main get?", "-w", str(workspace),
             "--yes", "--json"],
            catch_exceptions=False,
        )  # fmt: skip
        requests = list(server.requests)
    assert result.exit_code == 0, result.output
    tool_result = requests[-1].messages[-1]
    assert tool_result["role"] == "tool" and CONSTANT in tool_result["content"]
    assert "in session main (fork parent; not in this session's history)" in tool_result["content"]

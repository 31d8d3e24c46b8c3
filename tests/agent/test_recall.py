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
from harness.query import index_of
from harness.testing.fake_deepseek import FakeDeepSeek, Reply
from harness.tools.base import Tool
from harness.tools.session_search import SessionSearch
from tests.agent.scripted import ScriptedProvider, calls_reply, text_reply

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
            ["--root", str(root), "run", "The launch word is HELIOTROPE.", "-w", str(workspace), "--json"],
            catch_exceptions=False,
        )
        requests = list(server.requests)
    assert result.exit_code == 0, result.output
    assert "session_search" in [tool["function"]["name"] for tool in requests[0].body["tools"]]
    tool_result = requests[1].messages[-1]
    assert tool_result["role"] == "tool" and "#" in tool_result["content"]
    assert "user/message [current]" in tool_result["content"] and "HELIOTROPE" in tool_result["content"]

"""``request_at`` against real runs (issue 13 item 1): the agent loop, ``DeepSeekProvider``
through the real ``openai`` client and a scripted ``FakeDeepSeek``; for every request point,
``request_at`` serialized by the provider is exactly the body the server received."""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import hypothesis.strategies as st
import pytest
from hypothesis import HealthCheck, given, settings

import harness
from harness.agent.loop import Agent, AgentSettings
from harness.compaction import CompactionPolicy, ExtractiveSummarizer, LlmSummarizer
from harness.providers.deepseek import DeepSeekProvider
from harness.query.timetravel import request_at, request_before, request_points
from harness.stores.jsonl.backend import JsonlBackend
from harness.stores.sqlite import SqliteBackend
from harness.stores.store import SessionStore
from harness.testing import FakeDeepSeek, RecordedRequest, Reply, usage
from harness.testing.scripted import EchoTool

API_KEY = "sk-test-timetravel-0d9e"


# ---- the property against a real run: Agent + DeepSeekProvider + openai client + fake server -


@pytest.fixture(autouse=True)
def _no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)


async def _no_sleep(delay: float) -> None:
    return None


def _json(value: Any) -> Any:
    return json.loads(json.dumps(value))


def run_against_server(
    turns: Sequence[Sequence[Reply]],
    *,
    window: int = 1_000_000,
    summarizer: str = "extractive",
    effort: str | None = None,
    temperature: float | None = None,
    new_agent_per_turn: bool = False,
    store: SessionStore | None = None,
) -> tuple[harness.Session, DeepSeekProvider, list[RecordedRequest]]:
    """Run one turn per script entry through the real stack; returns the session, the
    provider and what the server received. With a ``store`` the session is created in it and
    made durable at every checkpoint of the loop."""
    script = [reply for turn in turns for reply in turn]
    session = harness.Session.create()
    with FakeDeepSeek(script, api_key=API_KEY) as server:
        provider = DeepSeekProvider(
            server.base_url, api_key=API_KEY, model_windows={"deepseek-v4-flash": window},
            idle_timeout_s=10, sleep=_no_sleep, rng=random.Random(3),
        )  # fmt: skip
        summary: Any = ExtractiveSummarizer() if summarizer == "extractive" else LlmSummarizer(provider)
        settings = AgentSettings(
            model="deepseek-v4-flash", system="You are a terse agent.", reasoning_effort=effort,
            temperature=temperature,
        )  # fmt: skip
        tools = [EchoTool("look"), EchoTool("grep", exclusive=True)]

        def make() -> Agent:
            return Agent(
                session, provider, tools, settings, workspace=".", record_baseline=False,
                summarizer=summary, compaction=CompactionPolicy(retain_tokens=window // 10),
                retry_sleep=_no_sleep, checkpoint=store.flush if store is not None else None,
            )  # fmt: skip

        async def go() -> None:
            nonlocal session
            if store is not None:  # a store lives on one event loop: this one
                session = await store.create()
            agent = make()
            try:
                for index in range(len(turns)):
                    if new_agent_per_turn and index:
                        agent = make()
                    await agent.run_turn(f"turn {index}: " + "please look at the files " * 20)
                if store is not None:
                    await store.flush(session)
            finally:
                await provider.aclose()
                if store is not None:
                    await store.close()

        asyncio.run(go())
        received = server.requests
    return session, provider, received


def assert_requests_match(
    session: harness.Session, provider: DeepSeekProvider, received: Sequence[RecordedRequest]
) -> None:
    """For every request point, ``request_at`` serialized by the provider is the body the server
    got for that request, in order; the summarizer's own requests are the only others."""
    model_requests = [r for r in received if r.header("x-deepseek-harness-compact") is None]
    points = request_points(session)
    assert len(points) == len(model_requests) > 0
    contexts = [event.seq for event in session.events if event.type == "request/context"]
    assert set(contexts) <= set(points)
    for point, sent in zip(points, model_requests, strict=True):
        options = request_at(session, point)
        assert _json(provider.request_body(options)) == sent.body
        assert sent.header("x-deepseek-harness-session-id") == session.id
    for event in session.events:  # what the model saw when it decided each message
        if event.type == "assistant/message":
            index = points.index(request_before(session, event.seq))
            assert (
                _json(provider.request_body(request_at(session, points[index]))) == model_requests[index].body
            )


def tool_step(*names: str) -> Reply:
    calls = [
        (f"call-{random.getrandbits(32):x}", name, json.dumps({"path": f"f{i}.txt"}))
        for i, name in enumerate(names)
    ]
    return Reply.tool_calls(calls, usage=usage(200, 20))


def test_a_real_run_with_tools_retries_and_pressure_compaction_sends_what_request_at_rebuilds() -> None:
    turns = [
        [tool_step("look", "grep"), Reply.text("found it", usage=usage(300, 5))],
        [Reply.error(503), Reply.reasoning("think", "ok then", usage=usage(400, 9))],
        [tool_step("look"), Reply.text("three", usage=usage(1000, 5))],
        [Reply.text("four", usage=usage(950, 5))],
    ]
    session, provider, received = run_against_server(turns, window=1200)
    kinds = [event.type for event in session.events]
    assert "compaction/summary" in kinds and session.surface.replace_generation >= 1
    assert "llm/retry" in kinds
    assert_requests_match(session, provider, received)


def test_a_real_run_with_an_overflow_compacted_by_the_model_sends_what_request_at_rebuilds() -> None:
    summary = Reply.text("## Primary Request and Intent\n- look at files", usage=usage(100, 10))
    turns = [
        [tool_step("look"), Reply.text("first", usage=usage(100, 5))],
        [Reply.text("second", usage=usage(120, 5))],
        [Reply.context_overflow(), summary, Reply.text("after the overflow", usage=usage(90, 5))],
    ]
    session, provider, received = run_against_server(turns, summarizer="llm", effort="max", temperature=0.3)
    compact = [r for r in received if r.header("x-deepseek-harness-compact") == "1"]
    assert len(compact) == 1
    assert "compaction/summary" in [event.type for event in session.events]
    assert_requests_match(session, provider, received)


@pytest.mark.parametrize("backend", ["jsonl", "sqlite"])
def test_a_session_reloaded_from_a_store_rebuilds_the_requests_that_were_sent(
    backend: str, tmp_path: Path
) -> None:
    """Time travel over a loaded session (JSONL: packed text-chunks rows; an end-seed) answers as over the
    live one: the log, not process memory, is what it reads."""

    def open_store() -> SessionStore:
        if backend == "jsonl":
            return SessionStore(JsonlBackend(tmp_path))
        return SessionStore(SqliteBackend(tmp_path / "sessions.db"))

    turns = [
        [tool_step("look", "grep"), Reply.text("found " * 30, usage=usage(300, 5))],
        [Reply.error(429, retry_after=0), Reply.reasoning("think " * 10, "ok", usage=usage(1000, 9))],
        [Reply.text("three", usage=usage(1000, 5))],
    ]
    live, provider, received = run_against_server(turns, window=1200, store=open_store())

    async def load() -> harness.Session:
        store = open_store()
        try:
            return await store.load(live.id)
        finally:
            await store.close()

    loaded = asyncio.run(load())
    assert "compaction/summary" in [event.type for event in loaded.events]
    assert [event.to_json() for event in loaded.events][: len(live.events)] == [
        event.to_json() for event in live.events
    ]
    assert_requests_match(loaded, provider, received)


REPLIES = st.sampled_from(["text", "reasoning", "tools", "parallel", "error", "overflow"])


def reply_of(kind: str, index: int) -> Reply:
    if kind == "text":
        return Reply.text(f"answer {index} " * 10, usage=usage(650 + index, 10))
    if kind == "reasoning":
        return Reply.reasoning(f"hmm {index}", f"answer {index}", usage=usage(600 + index, 12))
    if kind == "tools":
        return tool_step("look")
    if kind == "parallel":
        return tool_step("look", "look", "grep")
    if kind == "error":
        return Reply.error(429, retry_after=0)
    return Reply.context_overflow()


@settings(max_examples=16, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    turns=st.lists(st.lists(REPLIES, min_size=1, max_size=4), min_size=1, max_size=3),
    window=st.sampled_from([700, 1200, 1_000_000]),
    effort=st.sampled_from([None, "off", "low"]),
    new_agent_per_turn=st.booleans(),
)
def test_property_request_at_is_what_the_server_received_in_any_scripted_run(
    turns: list[list[str]], window: int, effort: str | None, new_agent_per_turn: bool
) -> None:
    """Random scripts (tool steps, parallel calls, reasoning, 429 retries, overflows that
    compact, small windows that compact under pressure, resumed loops): every request the
    server received is ``request_at`` of its request point. Each turn ends with a text reply."""
    script = [[*(reply_of(kind, i) for i, kind in enumerate(turn)), Reply.text("done")] for turn in turns]
    session, provider, received = run_against_server(
        script, window=window, effort=effort, new_agent_per_turn=new_agent_per_turn
    )
    assert_requests_match(session, provider, received)

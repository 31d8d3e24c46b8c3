"""Time travel (issue 13 item 1): ``surface_at``, ``messages_at`` and ``request_at`` answer with
the live fold at every seq, follow a growing session, refuse bad seqs with ``InvalidQuery``,
and ``request_at`` gives exactly the request a real agent run sent to the (fake) server."""

from __future__ import annotations

import asyncio
import gc
import json
import random
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import hypothesis.strategies as st
import pytest
from hypothesis import HealthCheck, given, settings

import harness
from harness.agent.loop import Agent, AgentSettings
from harness.compaction import CompactionPolicy, ExtractiveSummarizer, LlmSummarizer
from harness.errors import InvalidQuery
from harness.providers.deepseek import DeepSeekProvider
from harness.query import timetravel
from harness.query.timetravel import (
    TimeTravel,
    messages_at,
    request_at,
    request_before,
    request_points,
    surface_at,
    time_travel,
)
from harness.session.request import build_request
from harness.stores.jsonl.backend import JsonlBackend
from harness.stores.sqlite import SqliteBackend
from harness.stores.store import SessionStore
from harness.testing import FakeDeepSeek, RecordedRequest, Reply, usage
from tests.agent.scripted import EchoTool, ScriptedProvider, calls_reply, error_reply, text_reply
from tests.test_properties import SETTINGS, Built, fold_key, valid_logs

API_KEY = "sk-test-timetravel-0d9e"


def raws(messages: Sequence[harness.Message]) -> list[Mapping[str, Any]]:
    return [message.raw for message in messages]


def replay(session: harness.Session) -> Iterator[tuple[harness.Session, harness.Event]]:
    """Append ``session``'s events one by one to a new session, yielding after each."""
    copy = harness.Session.create(session.header)
    for event in session.events:
        appended = copy.append(
            event.type,
            event.data,
            surface_op=event.surface_op,
            source_event_seqs=event.source_event_seqs,
            ignorable=event.ignorable,
        )
        yield copy, appended


def prefix(session: harness.Session, seq: int) -> harness.Session:
    """The session restored from its events ``0..seq`` (an independent oracle)."""
    return harness.Session.from_restore(session.id, list(session.events)[: seq + 1], session.header)


# ---- the Surface and the history at every seq -----------------------------------------------


@SETTINGS
@given(built=valid_logs(), order=st.randoms(use_true_random=False))
def test_every_seq_answers_what_the_live_session_held_right_after_it(
    built: Built, order: random.Random
) -> None:
    """Live oracle: replay the log append by append, recording the live Surface and history
    after each; time travel, queried in random order while the replay grows (so it folds
    incrementally), gives the same at every seq, and ``fold_surface`` of the prefix agrees."""
    live_states: list[tuple[tuple[Any, ...], list[Mapping[str, Any]]]] = []
    traveller: TimeTravel | None = None
    copy: harness.Session | None = None
    for copy, _ in replay(built.session):
        if traveller is None:
            traveller = TimeTravel(copy)
        fold = harness.fold_surface(list(copy.events))
        live_states.append((fold_key(fold), raws(copy.derive_messages())))
        assert fold.nodes == tuple(copy.surface.nodes)
        if order.random() < 0.3:  # a query mid-growth, at a random seq so far
            seq = order.randrange(len(copy.events))
            assert fold_key(traveller.surface_at(seq)) == live_states[seq][0]
            assert raws(traveller.messages_at(seq)) == live_states[seq][1]
    if traveller is None:
        return
    seqs = list(range(len(live_states)))
    order.shuffle(seqs)
    for seq in seqs:
        assert fold_key(traveller.surface_at(seq)) == live_states[seq][0]
        assert raws(traveller.messages_at(seq)) == live_states[seq][1]
    assert copy is not None and raws(traveller.messages_at(len(seqs) - 1)) == raws(copy.derive_messages())


@SETTINGS
@given(built=valid_logs())
def test_every_request_point_rebuilds_the_request_of_the_restored_prefix(built: Built) -> None:
    session = built.session
    points = request_points(session)
    messages = [  # model answers (not replacements, which cite what they replace)
        event
        for event in session.events
        if event.type == "assistant/message" and event.surface_op == "append"
    ]
    for message in messages:  # the request that produced each message is found
        sources = message.source_event_seqs or ()
        expected = min(sources) - 1 if sources else message.seq - 1
        assert request_before(session, message.seq) == expected
        assert expected in points
    traveller = time_travel(session)
    for seq in range(len(session.events)):  # the header in force, as the live fold finds it
        assert traveller.header_at(seq) == harness.fold_request_header(session.events[: seq + 1])
    for point in points:
        restored = prefix(session, point)
        if harness.fold_request_header(restored.events) is None:
            with pytest.raises(InvalidQuery, match="no request/header is in force"):
                request_at(session, point)
            continue
        assert request_at(session, point) == build_request(restored)


def test_a_compacted_and_pruned_history_is_seen_as_it_was_before_and_after() -> None:
    session = harness.Session.create()
    first = session.append("user/message", harness.user_message("the constant is 42"), surface_op="append")
    session.append("user/message", harness.user_message("noted"), surface_op="append")
    call = session.append(
        "tool/call", {"turn": 1, "step": 1, "callId": "c1", "name": "ls", "arguments": "{}"}
    )
    result = session.append(
        "tool/result",
        {"turn": 1, "step": 1, "message": harness.tool_result_message("c1", [harness.text_block("x" * 50)])},
        surface_op="append",
        source_event_seqs=[call.seq],
    )
    before = len(session.events) - 1
    pruned_message = harness.tool_result_message(
        "c1", [harness.text_block("x…")], id=result.data["message"]["id"]
    )
    pruned = session.append(
        "tool/result",
        {"turn": 1, "step": 1, "message": pruned_message},
        surface_op=harness.Replace(result.seq, result.seq),
        source_event_seqs=[result.seq],
    )
    summary = session.append(
        "user/message",
        harness.user_message("summary: a constant was given"),
        surface_op=harness.Replace(first.seq, first.seq + 1),
        source_event_seqs=[first.seq, first.seq + 1],
    )
    assert list(surface_at(session, before).nodes) == [0, 1, 3]
    assert surface_at(session, before).replace_generation == 0
    assert list(surface_at(session, pruned.seq).nodes) == [0, 1, pruned.seq]
    assert list(surface_at(session, summary.seq).nodes) == [summary.seq, pruned.seq]
    assert surface_at(session, summary.seq).replace_generation == 2
    assert [m.text for m in messages_at(session, before)][:2] == ["the constant is 42", "noted"]
    assert messages_at(session, summary.seq)[0].text == "summary: a constant was given"
    assert raws(messages_at(session, summary.seq)) == raws(session.derive_messages())


def test_the_shared_traveller_follows_the_session_and_its_memo_never_goes_stale() -> None:
    session = harness.Session.create()
    a = session.append("user/message", harness.user_message("a"), surface_op="append")
    assert time_travel(session) is time_travel(session)
    assert raws(messages_at(session, a.seq)) == raws(session.derive_messages())
    b = session.append("user/message", harness.user_message("b"), surface_op="append")
    assert [m.text for m in messages_at(session, b.seq)] == ["a", "b"]
    r = session.append(
        "user/message", harness.user_message("ab"), surface_op=harness.Replace(a.seq, b.seq),
        source_event_seqs=[a.seq, b.seq],
    )  # fmt: skip
    c = session.append("user/message", harness.user_message("c"), surface_op="append")
    assert [m.text for m in messages_at(session, r.seq)] == ["ab"]
    assert [m.text for m in messages_at(session, c.seq)] == ["ab", "c"]
    assert [m.text for m in messages_at(session, b.seq)] == ["a", "b"]  # the past is unchanged
    assert [m.text for m in messages_at(session, c.seq)] == ["ab", "c"]


def test_evicted_generations_are_recomputed_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    """With a memo budget of a few slots every other query evicts; answers do not change."""
    session = harness.Session.create()
    for index in range(12):
        a = session.append("user/message", harness.user_message(f"a{index}"), surface_op="append")
        session.append("user/message", harness.user_message(f"b{index}"), surface_op="append")
        if index % 2:
            replace = harness.Replace(a.seq, a.seq + 1)
            sources = [a.seq, a.seq + 1]
            message = harness.user_message(f"r{index}")
            session.append("user/message", message, surface_op=replace, source_event_seqs=sources)
    expected = [raws(prefix(session, seq).derive_messages()) for seq in range(len(session.events))]
    monkeypatch.setattr(timetravel, "_MEMO_BUDGET", 6)
    traveller = TimeTravel(session)
    order = random.Random(5)
    for _ in range(3):
        seqs = list(range(len(session.events)))
        order.shuffle(seqs)
        for seq in seqs:
            assert raws(traveller.messages_at(seq)) == expected[seq]
        assert len(traveller._generations) <= 2


def test_the_shared_cache_does_not_keep_a_session_alive() -> None:
    session = harness.Session.create()
    session.append("user/message", harness.user_message("a"), surface_op="append")
    surface_at(session, 0)
    assert len(timetravel._shared) >= 1
    before = len(timetravel._shared)
    del session
    gc.collect()
    assert len(timetravel._shared) == before - 1


def test_the_view_build_request_reads_is_exactly_the_prefix() -> None:
    session = harness.Session.create()
    for text in "abcde":
        session.append("user/message", harness.user_message(text), surface_op="append")
    view = timetravel._Prefix(session.events, 3)
    expected = session.events[:3]
    assert len(view) == 3 and tuple(view) == expected and view[-1] is expected[-1] and view[0] is expected[0]
    assert view[1:] == expected[1:] and view[::-1] == expected[::-1]
    with pytest.raises(IndexError):
        view[3]
    assert harness.fold_request_header(view) is None


# ---- refusals -------------------------------------------------------------------------------


@pytest.mark.parametrize("seq", [-1, 3, 10**9, True, 1.0, "1", None])
def test_a_seq_outside_the_log_is_an_invalid_query(seq: Any) -> None:
    session = harness.Session.create()
    for text in ("a", "b", "c"):
        session.append("user/message", harness.user_message(text), surface_op="append")
    for query in (surface_at, messages_at, request_at, request_before):
        with pytest.raises(InvalidQuery, match=r"is out of range: session .* has 3 events \(seqs 0\.\.2\)"):
            query(session, seq)
    assert issubclass(InvalidQuery, ValueError) and issubclass(InvalidQuery, harness.HarnessError)


def test_an_empty_session_has_no_seq_to_ask_about() -> None:
    with pytest.raises(InvalidQuery, match="has no events"):
        surface_at(harness.Session.create(), 0)
    assert request_points(harness.Session.create()) == ()


def scripted_run() -> tuple[harness.Session, ScriptedProvider]:
    session = harness.Session.create()
    provider = ScriptedProvider(
        [calls_reply(("c1", "look", '{"a":1}')), error_reply("SERVER"), text_reply("done")]
    )
    agent = Agent(
        session, provider, [EchoTool("look")], AgentSettings(model="m-1", system="Be terse."),
        workspace=".", record_baseline=False,
    )  # fmt: skip
    asyncio.run(agent.run_turn("look around"))  # the server error ends turn 1
    asyncio.run(agent.run_turn("again"))
    return session, provider


def test_request_at_a_seq_that_is_no_request_point_says_so_and_where_the_request_was() -> None:
    session, _ = scripted_run()
    kinds = [event.type for event in session.events]
    user = kinds.index("user/message")
    with pytest.raises(InvalidQuery, match=rf"seq {user} \(user/message\) is not a request point"):
        request_at(session, user)
    message = kinds.index("assistant/message")
    point = request_before(session, message)
    with pytest.raises(InvalidQuery, match=rf"the request in force there was sent at seq {point}"):
        request_at(session, message)
    assert request_at(session, point).messages[-1].text == "look around"
    with pytest.raises(InvalidQuery, match="no model request was sent at or before seq 0"):
        request_before(session, 0)


def test_a_request_point_without_a_header_in_force_is_refused() -> None:
    session = harness.Session.create()
    session.append("step/start", {"turn": 1, "step": 1})
    session.append(
        "assistant/chunk", {"turn": 1, "step": 1, "chunk": {"type": "text-delta", "index": 0, "text": "x"}}
    )
    assert request_points(session) == (0,)
    with pytest.raises(InvalidQuery, match="no request/header is in force at seq 0"):
        request_at(session, 0)


def test_request_at_equals_every_request_a_scripted_provider_received() -> None:
    """Three requests (a tool step, a failed attempt, the next turn's answer) and no
    request/context after the first: every one is a request point and is rebuilt exactly."""
    session, provider = scripted_run()
    points = request_points(session)
    assert len(provider.requests) == 3
    assert [request_at(session, point) for point in points] == provider.requests
    assert [event.type for event in session.events].count("request/context") == 1


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

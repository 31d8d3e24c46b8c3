"""Model-request retries run by the agent loop and recorded as ``llm/retry`` /
``llm/retry-started`` (issue 12 item 7): the real ``openai`` client against the fake server,
which answers 429 / 503 for N attempts; the waits go through an injected sleep."""

from __future__ import annotations

import asyncio
import json
import shutil
import socket
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

import harness
from harness.agent.loop import Agent, AgentSettings, TurnOutcome
from harness.events.event import Event
from harness.present.summary import retry_line
from harness.providers.deepseek import DeepSeekProvider
from harness.providers.retry import RetryPolicy
from harness.stores.jsonl.backend import JsonlBackend
from harness.stores.store import SessionStore
from harness.testing import FakeDeepSeek, Reply
from harness.testing.scripted import EchoTool
from tests.providers.helpers import API_KEY, MakeProvider, Sleeps

SETTINGS = AgentSettings(model="deepseek-v4-flash", system="You are terse.")


def make_agent(
    session: harness.Session,
    provider: DeepSeekProvider,
    sleep: Callable[[float], Awaitable[None]],
    **options: Any,
) -> Agent:
    options.setdefault("record_baseline", False)
    tools = options.pop("tools", ())
    return Agent(session, provider, tools, SETTINGS, workspace=".", retry_sleep=sleep, **options)


def run_turn(agent: Agent, prompt: str = "hello") -> TurnOutcome:
    async def go() -> TurnOutcome:
        try:
            return await agent.run_turn(prompt)
        finally:
            await agent.provider.aclose()

    return asyncio.run(go())


def of_type(session: harness.Session, kind: str) -> list[Event]:
    return [event for event in session.events if event.type == kind]


def finish_failures(session: harness.Session) -> list[dict[str, Any]]:
    """The failure of every error finish chunk, in log order."""
    out = []
    for event in of_type(session, "assistant/chunk"):
        chunk = event.data["chunk"]
        if chunk["type"] == "finish" and chunk["reason"]["kind"] == "error":
            out.append(dict(chunk["reason"]["failure"]))
    return out


def test_a_rate_limit_is_recorded_waited_out_and_retried_in_the_same_step(
    server: FakeDeepSeek, make_provider: MakeProvider, sleeps: Sleeps
) -> None:
    server.fail_next(429, times=2, retry_after=2).add(Reply.text("after the wait"))
    session = harness.Session.create()
    outcome = run_turn(make_agent(session, make_provider(), sleeps))

    assert outcome.reason == {"kind": "completed"}
    assert sleeps.delays == [2.0, 2.0]
    assert len(server.requests) == 3
    assert len({request.raw_body for request in server.requests}) == 1  # the same request each time
    kinds = [event.type for event in session.events]
    assert kinds[:5] == ["turn/start", "step/start", "user/message", "request/header", "request/context"]
    assert kinds[5:11] == [
        "assistant/chunk", "llm/retry", "llm/retry-started",
        "assistant/chunk", "llm/retry", "llm/retry-started",
    ]  # fmt: skip
    assert kinds[-3:] == ["assistant/message", "step/end", "turn/end"]
    assert kinds.count("step/start") == 1 and kinds.count("request/header") == 1

    first, second = of_type(session, "llm/retry")
    failure = {
        "message": "HTTP 429: Rate limit reached for requests",
        "code": "RATE_LIMIT",
        "status": 429,
        "providerRetryAfterMs": 2000,
        "requestId": "fake-req-1",
    }
    assert dict(first.data) == {
        "retryId": first.data["retryId"],
        "turn": 1,
        "step": 1,
        "provider": "deepseek-official",
        "mode": "normal",
        "policyKey": RetryPolicy().key,
        "retry": 1,
        "maxRetries": 3,
        "delayMs": 2000,
        "failure": failure,
    }
    assert isinstance(first.data["retryId"], str) and first.data["retryId"]
    assert second.data["retryId"] == first.data["retryId"]  # one chain
    assert second.data["retry"] == 2
    assert second.data["failure"]["requestId"] == "fake-req-2"
    # the failure recorded is the one the failed attempt's finish chunk carries
    assert finish_failures(session) == [dict(first.data["failure"]), dict(second.data["failure"])]
    started = of_type(session, "llm/retry-started")
    assert [dict(event.data) for event in started] == [
        {"retryId": first.data["retryId"], "turn": 1, "step": 1, "retry": 1},
        {"retryId": first.data["retryId"], "turn": 1, "step": 1, "retry": 2},
    ]
    # the message cites the successful attempt's chunks only; failed chunks stay out of it
    message = of_type(session, "assistant/message")[0]
    assert min(message.source_event_seqs or [0]) > started[-1].seq
    assert [m.text for m in session.derive_messages()] == ["hello", "after the wait"]


def test_server_errors_back_off_then_the_failure_stands_when_retries_run_out(
    server: FakeDeepSeek, make_provider: MakeProvider, sleeps: Sleeps
) -> None:
    server.fail_next(503, times=4).add(Reply.text("unused"))
    session = harness.Session.create()
    outcome = run_turn(make_agent(session, make_provider(max_retries=3), sleeps))

    assert outcome.kind == "error"
    assert (outcome.reason["error"]["code"], outcome.reason["error"]["status"]) == ("SERVER", 503)
    retries = of_type(session, "llm/retry")
    assert [event.data["retry"] for event in retries] == [1, 2, 3]
    assert {event.data["retryId"] for event in retries} == {retries[0].data["retryId"]}
    assert all(event.data["maxRetries"] == 3 for event in retries)
    for number, event in enumerate(retries):
        ceiling = 500 * 2**number  # exponential backoff, jitter in [1/2, 1] of it
        assert ceiling / 2 <= event.data["delayMs"] <= ceiling
    assert [round(delay * 1000) for delay in sleeps.delays] == [e.data["delayMs"] for e in retries]
    assert len(of_type(session, "llm/retry-started")) == 3
    assert len(server.requests) == 4 and server.pending == 1
    assert [event.type for event in session.events][-3:] == ["assistant/chunk", "step/end", "turn/end"]
    assert of_type(session, "assistant/message") == []


@pytest.mark.parametrize(
    ("reply", "code"),
    [
        (Reply.error(401), "AUTH"),
        (Reply.error(429, retry_after=3600), "RATE_LIMIT"),  # longer than the policy waits
        (Reply.error(400), "INVALID_REQUEST"),
    ],
)
def test_a_failure_the_policy_does_not_retry_records_no_retry(
    server: FakeDeepSeek, make_provider: MakeProvider, sleeps: Sleeps, reply: Reply, code: str
) -> None:
    server.add(reply, Reply.text("unused"))
    session = harness.Session.create()
    outcome = run_turn(make_agent(session, make_provider(), sleeps))
    assert outcome.kind == "error" and outcome.reason["error"]["code"] == code
    assert of_type(session, "llm/retry") == [] and sleeps.delays == []
    assert len(server.requests) == 1


def test_an_error_mid_stream_is_retried_and_its_partial_chunks_stay_out_of_the_message(
    server: FakeDeepSeek, make_provider: MakeProvider, sleeps: Sleeps
) -> None:
    server.add(
        Reply.stream([{"delta": {"content": "so far"}}, '{"error": {"message": "overloaded"}}']),
        Reply.text("whole answer"),
    )
    session = harness.Session.create()
    outcome = run_turn(make_agent(session, make_provider(), sleeps))
    assert outcome.reason == {"kind": "completed"}
    (retry,) = of_type(session, "llm/retry")
    assert retry.data["failure"]["code"] == "SERVER"
    assert "overloaded" in retry.data["failure"]["message"]
    failed = [e for e in of_type(session, "assistant/chunk") if e.seq < retry.seq]
    assert any(e.data["chunk"]["type"] == "text-delta" for e in failed)
    message = of_type(session, "assistant/message")[0]
    assert message.source_event_seqs and not set(message.source_event_seqs) & {e.seq for e in failed}
    assert [m.text for m in session.derive_messages()] == ["hello", "whole answer"]


def test_each_step_has_its_own_retry_chain(
    server: FakeDeepSeek, make_provider: MakeProvider, sleeps: Sleeps
) -> None:
    server.add(
        Reply.error(429, retry_after=1),
        Reply.tool_calls([("c1", "look", "{}")]),
        Reply.error(503, retry_after=1),
        Reply.text("done"),
    )
    session = harness.Session.create()
    agent = make_agent(session, make_provider(), sleeps, tools=[EchoTool("look")])
    assert run_turn(agent).reason == {"kind": "completed"}
    one, two = of_type(session, "llm/retry")
    assert (one.data["step"], one.data["retry"]) == (1, 1)
    assert (two.data["step"], two.data["retry"]) == (2, 1)
    assert one.data["retryId"] != two.data["retryId"]


def test_a_cancel_during_the_wait_writes_no_started_and_ends_the_turn_aborted(
    server: FakeDeepSeek, make_provider: MakeProvider
) -> None:
    server.fail_next(429, retry_after=30).add(Reply.text("unused"))
    session = harness.Session.create()
    waiting = asyncio.Event()

    async def long_sleep(delay: float) -> None:
        waiting.set()
        await asyncio.sleep(3600)  # cancelled, never waited out

    agent = make_agent(session, make_provider(), long_sleep)

    async def go() -> TurnOutcome:
        task = asyncio.create_task(agent.run_turn("hello"))
        await asyncio.wait_for(waiting.wait(), 10)
        agent.cancel()
        try:
            return await asyncio.wait_for(task, 10)
        finally:
            await agent.provider.aclose()

    outcome = asyncio.run(go())
    assert outcome.reason == {"kind": "aborted", "reason": {"kind": "user"}}
    kinds = [event.type for event in session.events]
    assert "llm/retry" in kinds and "llm/retry-started" not in kinds
    assert kinds[-3:] == ["llm/retry", "step/end", "turn/end"]
    assert len(server.requests) == 1


def test_the_retry_record_is_durable_before_the_wait_and_the_session_reloads(
    server: FakeDeepSeek, make_provider: MakeProvider, tmp_path: Path
) -> None:
    server.fail_next(503, times=2, retry_after=0.5).add(Reply.text("recovered"))
    on_disk_at_wait: list[list[str]] = []

    async def go() -> str:
        store = SessionStore(JsonlBackend(tmp_path, "none", pack_chunks=False))
        try:
            session = await store.create(cwd=str(tmp_path))

            async def sleep(delay: float) -> None:
                [path] = list(tmp_path.rglob("session.jsonl"))
                lines = path.read_text(encoding="utf-8").splitlines()[1:]
                on_disk_at_wait.append([json.loads(line)["type"] for line in lines])

            agent = make_agent(session, make_provider(), sleep, checkpoint=store.flush)
            assert (await agent.run_turn("hello")).reason == {"kind": "completed"}
            await store.flush(session)
            await agent.provider.aclose()
            return session.id
        finally:
            await store.close()

    session_id = asyncio.run(go())
    assert len(on_disk_at_wait) == 2
    assert on_disk_at_wait[0][-1] == "llm/retry"  # written and flushed before the wait began
    assert on_disk_at_wait[1][-2:] == ["assistant/chunk", "llm/retry"]

    async def reload() -> harness.Session:
        store = SessionStore(JsonlBackend(tmp_path, "none"))
        try:
            return await store.load(session_id)
        finally:
            await store.close()

    loaded = asyncio.run(reload())  # harness's restore validation accepts the records
    assert [e.data["retry"] for e in loaded.events if e.type == "llm/retry-started"] == [1, 2]
    assert [m.text for m in loaded.derive_messages()] == ["hello", "recovered"]


def test_a_provider_stream_without_the_loop_still_retries_by_itself(
    server: FakeDeepSeek, make_provider: MakeProvider, sleeps: Sleeps
) -> None:
    """``retry=False`` is the loop's; other callers (the compaction summarizer) keep the
    provider's own retries."""
    from tests.providers.helpers import collect, options, run

    server.fail_next(429, retry_after=1).add(Reply.text("ok"), Reply.error(429, retry_after=1))
    provider = make_provider()
    assert len(run(collect(provider, options()))) > 1 and sleeps.delays == [1.0]

    async def once() -> list[Any]:
        return [chunk async for chunk in provider.stream(options(), retry=False)]

    chunks = run(once())
    assert chunks[-1].reason.failure.code == "RATE_LIMIT" and sleeps.delays == [1.0]


def test_the_live_line_says_what_failed_and_how_long_the_wait_is() -> None:
    data: dict[str, Any] = {
        "retry": 1,
        "maxRetries": 3,
        "delayMs": 2000,
        "failure": {"message": "HTTP 429: slow down", "code": "RATE_LIMIT", "status": 429},
    }
    assert retry_line(data) == "rate limited (HTTP 429), retrying in 2 s… (retry 1 of 3)"
    data.update(delayMs=1250, retry=2, failure={"message": "HTTP 503: busy", "code": "SERVER", "status": 503})
    assert retry_line(data) == "server error (HTTP 503), retrying in 1.25 s… (retry 2 of 3)"
    data.update(failure={"message": "could not connect to http://h:1/chat/completions", "code": "TRANSPORT"})
    assert retry_line(data).startswith("connection failed: could not connect to http://h:1/chat/completions")
    del data["maxRetries"]
    assert retry_line(data).endswith("(retry 2)")


def test_a_connection_error_names_the_url(sleeps: Sleeps) -> None:
    with socket.socket() as probe:  # bound but not listening: nothing accepts
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
        provider = DeepSeekProvider(f"http://127.0.0.1:{port}", api_key=API_KEY, max_retries=2)
        session = harness.Session.create()
        outcome = run_turn(make_agent(session, provider, sleeps))
    url = f"http://127.0.0.1:{port}/chat/completions"
    assert outcome.kind == "error"
    error = outcome.reason["error"]
    assert error["code"] == "TRANSPORT" and url in error["message"], error
    retries = of_type(session, "llm/retry")
    assert len(retries) == 2 and all(url in e.data["failure"]["message"] for e in retries)
    assert API_KEY not in json.dumps([dict(e.data) for e in retries])


def test_a_crash_during_the_wait_leaves_a_session_that_loads_and_goes_on(
    server: FakeDeepSeek, make_provider: MakeProvider, tmp_path: Path
) -> None:
    """The durable ``llm/retry`` with no ``llm/retry-started`` after it (the process died in the
    wait): load repairs the open turn, and the next turn starts a retry chain of its own."""
    live, crashed = tmp_path / "live", tmp_path / "crashed"
    server.fail_next(429, retry_after=5)

    async def first() -> str:
        store = SessionStore(JsonlBackend(live, "none"))
        try:
            session = await store.create(cwd=str(tmp_path))

            async def die(delay: float) -> None:
                shutil.copytree(live, crashed)  # the disk as a kill -9 in the wait leaves it
                raise asyncio.CancelledError

            agent = make_agent(session, make_provider(), die, checkpoint=store.flush)
            with pytest.raises(asyncio.CancelledError):
                await agent.run_turn("hello")
            await agent.provider.aclose()
            return session.id
        finally:
            await store.close()

    session_id = asyncio.run(first())
    server.fail_next(503, retry_after=1).add(Reply.text("back again"))

    async def resumed() -> harness.Session:
        store = SessionStore(JsonlBackend(crashed, "none"))
        try:
            session = await store.load(session_id)
            agent = make_agent(session, make_provider(), Sleeps(), checkpoint=store.flush)
            assert (await agent.run_turn("go on")).reason == {"kind": "completed"}
            await agent.provider.aclose()
            await store.flush(session)
            return session
        finally:
            await store.close()

    session = asyncio.run(resumed())
    ends = [dict(e.data["reason"]) for e in of_type(session, "turn/end")]
    assert ends == [{"kind": "interrupted"}, {"kind": "completed"}]
    retries = of_type(session, "llm/retry")
    assert [(e.data["turn"], e.data["retry"]) for e in retries] == [(1, 1), (2, 1)]
    assert retries[0].data["retryId"] != retries[1].data["retryId"]
    assert [e.data["turn"] for e in of_type(session, "llm/retry-started")] == [2]
    assert [m.text for m in session.derive_messages()] == ["hello", "go on", "back again"]


def test_when_the_retry_record_cannot_be_made_durable_there_is_no_wait_and_no_retry(
    server: FakeDeepSeek, make_provider: MakeProvider, sleeps: Sleeps
) -> None:
    server.fail_next(429, retry_after=1).add(Reply.text("unused"))
    session = harness.Session.create()
    flushed: list[str] = []

    async def checkpoint(live: harness.Session) -> None:
        flushed.append(live.events[-1].type)
        if live.events[-1].type == "llm/retry":
            raise OSError(5, "Input/output error (injected)")

    outcome = run_turn(make_agent(session, make_provider(), sleeps, checkpoint=checkpoint))
    assert outcome.kind == "error" and outcome.reason["error"]["code"] == "PERSISTENCE_FAILED"
    assert flushed == ["request/context", "llm/retry"]
    assert sleeps.delays == [] and len(server.requests) == 1
    assert of_type(session, "llm/retry-started") == []


def test_the_url_in_a_connection_failure_carries_no_credentials(sleeps: Sleeps) -> None:
    from tests.providers.helpers import collect, failure_code, finish_of, options, run

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
        base = f"http://user:hunter2-secret@127.0.0.1:{port}"
        provider = DeepSeekProvider(base, api_key=API_KEY, max_retries=0)
        chunks = run(collect(provider, options()))
    assert failure_code(chunks) == "TRANSPORT"
    message = finish_of(chunks).reason.failure.message  # type: ignore[union-attr]
    assert f"could not connect to http://127.0.0.1:{port}/chat/completions" in message
    assert "hunter2" not in message and API_KEY not in message

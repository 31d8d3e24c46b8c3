"""End to end over HTTP: the real ``openai`` client against the local fake server."""

from __future__ import annotations

import asyncio
import socket
from typing import Any

import pytest

from harness.messages.model import TokenUsage, assistant_message, tool_result_message
from harness.messages.stream import (
    BlockStart,
    FinishAborted,
    FinishError,
    FinishMaxTokens,
    FinishStop,
    FinishToolCalls,
    StreamChunk,
    TextDelta,
    ToolCallDelta,
    UsageChunk,
)
from harness.providers.base import Provider
from harness.providers.deepseek import DeepSeekProvider, OpenAICompatibleProvider
from harness.testing import FakeDeepSeek, Reply, usage
from tests.providers.helpers import (
    API_KEY,
    MakeProvider,
    Sleeps,
    blocks,
    collect,
    failure_code,
    finish_of,
    header,
    options,
    run,
    wire,
)


def test_is_a_provider(make_provider: MakeProvider) -> None:
    provider = make_provider()
    assert isinstance(provider, Provider)
    assert provider.route == "deepseek-official"
    run(provider.aclose())


def test_text_reply_streams_deltas_then_block_end_and_stop(
    server: FakeDeepSeek, make_provider: MakeProvider
) -> None:
    server.add(Reply.text(["Hel", "lo, ", "world"]))
    provider = make_provider()
    chunks = run(collect(provider, options(["say hello"])))
    assert wire(chunks) == [
        {"type": "block-start", "index": 0, "blockType": "text"},
        {"type": "text-delta", "index": 0, "text": "Hel"},
        {"type": "text-delta", "index": 0, "text": "lo, "},
        {"type": "text-delta", "index": 0, "text": "world"},
        {"type": "block-end", "index": 0, "block": {"type": "text", "text": "Hello, world"}},
        {"type": "finish", "reason": {"kind": "stop"}},
    ]
    request = server.last_request
    assert request.path == "/chat/completions"
    assert request.body["messages"] == [
        {"role": "system", "content": "You are a test agent."},
        {"role": "user", "content": "say hello"},
    ]


def test_reasoning_is_its_own_block_and_is_passed_back(
    server: FakeDeepSeek, make_provider: MakeProvider
) -> None:
    server.add(Reply.reasoning("Count the letters.", "Five."), Reply.text("Done."))
    provider = make_provider()

    async def conversation() -> list[list[StreamChunk]]:
        first = await collect(provider, options(["how many letters in hello?"]))
        reply = assistant_message(blocks(first), provider="deepseek-official", model="deepseek-v4-flash")
        second = await collect(provider, options(["how many letters in hello?", reply, "and in world?"]))
        return [first, second]

    first, second = run(conversation())
    # The empty first reasoning_content opens nothing; reasoning then text, by first appearance.
    assert [c.block_type for c in first if isinstance(c, BlockStart)] == ["reasoning", "text"]
    assert blocks(first) == [
        {"type": "reasoning", "text": "Count the letters."},
        {"type": "text", "text": "Five."},
    ]
    assert isinstance(finish_of(second).reason, FinishStop)
    sent = server.requests[1].messages
    assert sent[2] == {"role": "assistant", "content": "Five.", "reasoning_content": "Count the letters."}
    assert sent[3] == {"role": "user", "content": "and in world?"}


@pytest.mark.parametrize("interleave", [False, True])
def test_parallel_tool_calls_are_assembled(
    server: FakeDeepSeek, make_provider: MakeProvider, interleave: bool
) -> None:
    calls = [("call_1", "read_file", '{"path":"a.txt"}'), ("call_2", "list_dir", '{"path":"src","depth":2}')]
    server.add(Reply.tool_calls(calls, text="Let me look.", parts=3, interleave=interleave))
    provider = make_provider()
    chunks = run(collect(provider, options(["look around"])))
    assert isinstance(finish_of(chunks).reason, FinishToolCalls)
    assert blocks(chunks) == [
        {"type": "text", "text": "Let me look."},
        {"type": "tool-call", "id": "call_1", "name": "read_file", "arguments": '{"path":"a.txt"}'},
        {"type": "tool-call", "id": "call_2", "name": "list_dir", "arguments": '{"path":"src","depth":2}'},
    ]
    deltas = [c for c in chunks if isinstance(c, ToolCallDelta)]
    assert all(d.id == ("call_1" if d.index == 1 else "call_2") for d in deltas)
    assert [d.name for d in deltas if d.name] == ["read_file", "list_dir"]
    assert len([d for d in deltas if d.index == 1 and d.arguments_delta]) == 3


def test_tool_results_go_back_as_tool_messages(server: FakeDeepSeek, make_provider: MakeProvider) -> None:
    server.add(Reply.tool_calls([("c1", "read_file", "{}"), ("c2", "run_shell", "{}")]), Reply.text("ok"))
    provider = make_provider()

    async def conversation() -> None:
        first = await collect(provider, options(["go"]))
        reply = assistant_message(blocks(first), provider="deepseek-official", model="deepseek-v4-flash")
        results = [tool_result_message("c1", "file body"), tool_result_message("c2", "")]
        await collect(provider, options(["go", reply, *results]))

    run(conversation())
    sent = server.requests[1].messages
    assert sent[2]["tool_calls"] == [
        {"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": "{}"}},
        {"id": "c2", "type": "function", "function": {"name": "run_shell", "arguments": "{}"}},
    ]
    assert sent[3:] == [
        {"role": "tool", "tool_call_id": "c1", "content": "file body"},
        {"role": "tool", "tool_call_id": "c2", "content": "(no output)"},
    ]


def test_usage_maps_cache_hits_and_reasoning(server: FakeDeepSeek, make_provider: MakeProvider) -> None:
    server.add(
        Reply.reasoning("hm", "yes", usage=usage(1200, 80, cache_hit_tokens=1024, reasoning_tokens=30))
    )
    chunks = run(collect(make_provider(), options()))
    found = [c for c in chunks if isinstance(c, UsageChunk)]
    assert found == [
        UsageChunk(
            TokenUsage(input_tokens=176, output_tokens=80, cache_read_tokens=1024, reasoning_tokens=30)
        )
    ]
    assert isinstance(chunks[-2], UsageChunk)  # usage comes just before the finish


def test_usage_from_deepseek_hit_field_alone(server: FakeDeepSeek, make_provider: MakeProvider) -> None:
    # An OpenAI-style separate usage chunk (no choices), with only DeepSeek's cache-hit field.
    bare = {"prompt_tokens": 50, "completion_tokens": 5, "prompt_cache_hit_tokens": 20}
    server.add(
        Reply.stream([{"delta": {"content": "hi"}}, {"delta": {}, "finish_reason": "stop"}, {"usage": bare}])
    )
    chunks = run(collect(make_provider(), options()))
    assert [c.usage for c in chunks if isinstance(c, UsageChunk)] == [
        TokenUsage(input_tokens=30, output_tokens=5, cache_read_tokens=20)
    ]


def test_length_is_max_tokens(server: FakeDeepSeek, make_provider: MakeProvider) -> None:
    server.add(Reply.text("trunc", finish_reason="length"))
    chunks = run(collect(make_provider(), options()))
    assert isinstance(finish_of(chunks).reason, FinishMaxTokens)


def test_other_finish_reason_is_an_error_with_its_name(
    server: FakeDeepSeek, make_provider: MakeProvider
) -> None:
    server.add(Reply.text("nope", finish_reason="content_filter"))
    chunks = run(collect(make_provider(), options()))
    assert failure_code(chunks) == "CONTENT_FILTER"
    assert blocks(chunks) == [{"type": "text", "text": "nope"}]


def test_stop_without_content_is_empty_response(server: FakeDeepSeek, make_provider: MakeProvider) -> None:
    server.add(Reply.text(""))
    chunks = run(collect(make_provider(), options()))
    assert failure_code(chunks) == "EMPTY_RESPONSE"


@pytest.mark.parametrize(
    ("reply", "code", "status"),
    [
        (Reply.error(401), "AUTH", 401),
        (Reply.error(403), "AUTH", 403),
        (Reply.error(413), "INVALID_REQUEST", 413),
        (Reply.error(402), "QUOTA", 402),
        (Reply.error(429, "You exceeded your current quota"), "QUOTA", 429),
        (Reply.context_overflow(), "CONTEXT_WINDOW_EXCEEDED", 400),
        (Reply.error(400, "messages[1]: unknown role"), "INVALID_REQUEST", 400),
        (Reply.error(404, "model not found"), "HTTP_404", 404),
        (Reply.error(422, "unprocessable"), "HTTP_422", 422),
    ],
    ids=lambda value: value.label if isinstance(value, Reply) else str(value),
)
def test_http_errors_are_classified_and_not_retried(
    server: FakeDeepSeek, make_provider: MakeProvider, sleeps: Sleeps, reply: Reply, code: str, status: int
) -> None:
    server.add(reply, Reply.text("never sent"))
    chunks = run(collect(make_provider(), options()))
    assert len(chunks) == 1
    reason = finish_of(chunks).reason
    assert isinstance(reason, FinishError)
    assert (reason.failure.code, reason.failure.status) == (code, status)
    assert reason.failure.request_id == "fake-req-1"
    assert len(server.requests) == 1 and sleeps.delays == []


def test_wrong_key_is_auth(server: FakeDeepSeek, make_provider: MakeProvider) -> None:
    server.add(Reply.text("unused"))
    chunks = run(collect(make_provider(api_key="sk-wrong-key-000"), options()))
    assert failure_code(chunks) == "AUTH"
    assert server.pending == 1


def test_retry_after_is_honoured(server: FakeDeepSeek, make_provider: MakeProvider, sleeps: Sleeps) -> None:
    server.add(Reply.error(429, retry_after=2), Reply.text("after the wait"))
    chunks = run(collect(make_provider(), options()))
    assert isinstance(finish_of(chunks).reason, FinishStop)
    assert blocks(chunks) == [{"type": "text", "text": "after the wait"}]
    assert sleeps.delays == [2.0]
    assert len(server.requests) == 2
    assert server.requests[0].raw_body == server.requests[1].raw_body


def test_server_errors_back_off_exponentially(
    server: FakeDeepSeek, make_provider: MakeProvider, sleeps: Sleeps
) -> None:
    server.add(Reply.error(500), Reply.error(503), Reply.error(502), Reply.text("finally"))
    chunks = run(collect(make_provider(), options()))
    assert isinstance(finish_of(chunks).reason, FinishStop)
    assert len(sleeps.delays) == 3
    for attempt, delay in enumerate(sleeps.delays):
        ceiling = 0.5 * 2**attempt
        assert ceiling / 2 <= delay <= ceiling  # exponential, with jitter in [1/2, 1]


def test_retries_exhausted(server: FakeDeepSeek, make_provider: MakeProvider, sleeps: Sleeps) -> None:
    server.add(*[Reply.error(500)] * 5)
    chunks = run(collect(make_provider(max_retries=3), options()))
    reason = finish_of(chunks).reason
    assert isinstance(reason, FinishError)
    assert (reason.failure.code, reason.failure.status) == ("SERVER", 500)
    assert len(server.requests) == 4 and len(sleeps.delays) == 3
    assert server.pending == 1


def test_a_long_retry_after_is_reported_not_waited(
    server: FakeDeepSeek, make_provider: MakeProvider, sleeps: Sleeps
) -> None:
    server.add(Reply.error(429, retry_after=3600), Reply.text("unused"))
    chunks = run(collect(make_provider(), options()))
    reason = finish_of(chunks).reason
    assert isinstance(reason, FinishError)
    assert reason.failure.code == "RATE_LIMIT"
    assert reason.failure.provider_retry_after_ms == 3_600_000
    assert sleeps.delays == []


def test_transport_failure_is_retried_then_reported(sleeps: Sleeps) -> None:
    with socket.socket() as probe:  # a port that nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    provider = DeepSeekProvider(f"http://127.0.0.1:{port}", api_key=API_KEY, sleep=sleeps, max_retries=2)
    chunks = run(collect(provider, options()))
    assert failure_code(chunks) == "TRANSPORT"
    assert len(sleeps.delays) == 2


def test_cut_stream_is_stream_closed(server: FakeDeepSeek, make_provider: MakeProvider) -> None:
    server.add(Reply.cut(["part", "ial"]))
    chunks = run(collect(make_provider(), options()))
    assert failure_code(chunks) == "STREAM_CLOSED"
    assert "".join(c.text for c in chunks if isinstance(c, TextDelta)) == "partial"


def test_clean_end_without_done_is_stream_closed(server: FakeDeepSeek, make_provider: MakeProvider) -> None:
    server.add(Reply.stream([{"delta": {"content": "hi"}, "finish_reason": "stop"}], ending="eof"))
    chunks = run(collect(make_provider(), options()))
    assert failure_code(chunks) == "STREAM_CLOSED"


def test_malformed_event_is_malformed_response(server: FakeDeepSeek, make_provider: MakeProvider) -> None:
    server.add(Reply.malformed())
    assert failure_code(run(collect(make_provider(), options()))) == "MALFORMED_RESPONSE"


def test_wrongly_shaped_event_is_malformed_response(
    server: FakeDeepSeek, make_provider: MakeProvider
) -> None:
    server.add(Reply.stream([{"delta": {"content": 42}}]))
    assert failure_code(run(collect(make_provider(), options()))) == "MALFORMED_RESPONSE"


def test_error_event_mid_stream_is_server(server: FakeDeepSeek, make_provider: MakeProvider) -> None:
    server.add(Reply.stream([{"delta": {"content": "so"}}, '{"error": {"message": "overloaded"}}']))
    chunks = run(collect(make_provider(), options()))
    assert failure_code(chunks) == "SERVER"
    assert "overloaded" in finish_of(chunks).reason.failure.message  # type: ignore[union-attr]


def test_hang_is_timeout(server: FakeDeepSeek, make_provider: MakeProvider) -> None:
    server.add(Reply.hang("waiting"))
    chunks = run(collect(make_provider(idle_timeout_s=0.2), options()))
    assert failure_code(chunks) == "TIMEOUT"
    assert "".join(c.text for c in chunks if isinstance(c, TextDelta)) == "waiting"


def test_cancel_during_a_stream_is_aborted(server: FakeDeepSeek, make_provider: MakeProvider) -> None:
    server.add(Reply.hang("some text"), Reply.text("next"))
    provider = make_provider()

    async def scenario() -> list[Any]:
        cancel = asyncio.Event()
        seen = []
        async for chunk in provider.stream(options(), cancel=cancel):
            seen.append(chunk)
            if isinstance(chunk, TextDelta):
                cancel.set()
        # The provider stays usable after an abort.
        after = await collect(provider, options())
        return [seen, after]

    seen, after = run(scenario())
    reason = seen[-1].reason
    assert isinstance(reason, FinishAborted) and reason.failure.code == "ABORTED"
    assert isinstance(finish_of(after).reason, FinishStop)


def test_cancel_while_waiting_for_the_first_byte(server: FakeDeepSeek, make_provider: MakeProvider) -> None:
    server.add(Reply.hang())
    provider = make_provider()

    async def scenario() -> list[Any]:
        cancel = asyncio.Event()

        async def press_cancel() -> None:
            await server.wait_for_requests(1)
            cancel.set()

        pressing = asyncio.create_task(press_cancel())
        chunks = await collect(provider, options(), cancel)
        await pressing
        return chunks

    assert failure_code(run(scenario())) == "ABORTED"


def test_cancel_before_start_sends_nothing(server: FakeDeepSeek, make_provider: MakeProvider) -> None:
    cancel = asyncio.Event()
    cancel.set()
    chunks = run(collect(make_provider(), options(), cancel))
    assert failure_code(chunks) == "ABORTED"
    assert server.requests == []


def test_cancel_during_backoff(server: FakeDeepSeek) -> None:
    server.add(Reply.error(503), Reply.text("unused"))
    forever = asyncio.Event()

    async def stuck_sleep(delay: float) -> None:
        await forever.wait()

    provider = DeepSeekProvider(server.base_url, api_key=API_KEY, sleep=stuck_sleep)

    async def scenario() -> list[Any]:
        cancel = asyncio.Event()

        async def press_cancel() -> None:
            await server.wait_for_requests(1)
            await asyncio.sleep(0.01)
            cancel.set()

        pressing = asyncio.create_task(press_cancel())
        chunks = await collect(provider, options(), cancel)
        await pressing
        return chunks

    assert failure_code(run(scenario())) == "ABORTED"
    assert len(server.requests) == 1


def test_unsupported_effort_sends_nothing(server: FakeDeepSeek, make_provider: MakeProvider) -> None:
    chunks = run(collect(make_provider(), options(head=header(reasoning_effort="medium"))))
    assert failure_code(chunks) == "UNSUPPORTED_REASONING_EFFORT"
    assert server.requests == []


def test_headers(server: FakeDeepSeek, make_provider: MakeProvider) -> None:
    server.add(Reply.text("a"), Reply.text("b"))
    provider = make_provider(user_id="user-9")

    async def two_requests() -> None:
        await collect(provider, options(session_id="s-42"))
        await collect(provider, options(session_id=None, purpose="compaction"))

    run(two_requests())
    first, second = server.requests
    assert first.header("authorization") == f"Bearer {API_KEY}"
    assert first.header("accept") == "text/event-stream"
    assert first.header("content-type") == "application/json"
    assert (first.header("user-agent") or "").startswith("deepseek-harness-py/")
    assert first.header("x-deepseek-harness-user-id") == "user-9"
    assert first.header("x-deepseek-harness-session-id") == "s-42"
    assert first.header("x-deepseek-harness-compact") is None
    assert second.header("x-deepseek-harness-session-id") is None
    assert second.header("x-deepseek-harness-compact") == "1"
    assert first.header("x-stainless-retry-count") in (None, "0")


def test_body_on_the_wire_matches_request_body(server: FakeDeepSeek, make_provider: MakeProvider) -> None:
    server.add(Reply.text("x"))
    provider = make_provider()
    tools = [{"name": "read_file", "description": "Read a file", "parameters": {"type": "object"}}]
    request = options(["hi"], head=header(tools=tools, temperature=0.2, stop=["END"]))
    run(collect(provider, request))
    body = server.last_request.body
    assert body == provider.request_body(request)
    assert list(body) == [
        "model",
        "messages",
        "stream",
        "stream_options",
        "thinking",
        "reasoning_effort",
        "tools",
        "temperature",
        "max_tokens",
        "stop",
    ]


def test_breaking_out_early_leaves_the_provider_usable(
    server: FakeDeepSeek, make_provider: MakeProvider
) -> None:
    server.add(Reply.text("one two three", parts=5), Reply.text("again"))
    provider = make_provider()

    async def scenario() -> list[Any]:
        async for chunk in provider.stream(options()):
            if isinstance(chunk, TextDelta):
                break
        return await collect(provider, options())

    assert blocks(run(scenario())) == [{"type": "text", "text": "again"}]


def test_base_url_and_key_from_the_environment(server: FakeDeepSeek, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DEEPSEEK_BASE_URL", server.base_url)
    monkeypatch.setenv("DEEPSEEK_API_KEY", API_KEY)
    server.add(Reply.text("from env"))
    provider = DeepSeekProvider()
    assert blocks(run(collect(provider, options()))) == [{"type": "text", "text": "from env"}]


def test_default_base_url_is_the_public_endpoint() -> None:
    provider = DeepSeekProvider(api_key=API_KEY)  # built only; nothing is sent
    assert provider.base_url.rstrip("/") == "https://api.deepseek.com"


def test_openai_compatible_endpoint_by_url_and_model(server: FakeDeepSeek) -> None:
    server.add(Reply.text("compatible"))
    provider = OpenAICompatibleProvider(server.base_url, api_key=API_KEY, route="local-llm")
    head = provider.materialize(header(provider="local-llm", model="some-local-model"))
    chunks = run(collect(provider, options(["hi"], head=head)))
    assert blocks(chunks) == [{"type": "text", "text": "compatible"}]
    body = server.last_request.body
    assert body["model"] == "some-local-model"
    assert "thinking" not in body and "reasoning_effort" not in body and "max_tokens" not in body
    assert provider.route == "local-llm" and provider.context_window("some-local-model") is None


def test_script_exhausted_is_a_plain_http_error(server: FakeDeepSeek, make_provider: MakeProvider) -> None:
    chunks = run(collect(make_provider(), options()))
    assert failure_code(chunks) == "HTTP_410"

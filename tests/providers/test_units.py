"""Unit tests without HTTP: stream translation, usage, failure classification, retries, SSE."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

import pytest

from harness.messages.model import LlmFailure, TokenUsage
from harness.messages.stream import (
    BlockEnd,
    BlockStart,
    Finish,
    FinishError,
    FinishStop,
    ReasoningDelta,
    TextDelta,
    ToolCallDelta,
    UsageChunk,
)
from harness.providers.failures import classify_status, error_message, request_id_of, retry_after_ms, scrub
from harness.providers.retry import RetryPolicy
from harness.providers.sse import SseDecoder
from harness.providers.translate import MalformedStream, StreamTranslator, usage_from_json


def delta(**fields: Any) -> dict[str, Any]:
    return {"choices": [{"index": 0, "delta": fields, "finish_reason": None}]}


def finish(reason: str, **extra: Any) -> dict[str, Any]:
    return {"choices": [{"index": 0, "delta": {}, "finish_reason": reason}], **extra}


# ---- translation --------------------------------------------------------------------------


def test_indexes_follow_first_appearance_even_text_before_reasoning() -> None:
    t = StreamTranslator()
    out = t.feed(delta(content="A"))
    out += t.feed(delta(reasoning_content="r"))
    out += t.feed(delta(content="B"))
    out += t.feed(finish("stop"))
    out += t.done()
    assert out == [
        BlockStart(0, "text"),
        TextDelta(0, "A"),
        BlockStart(1, "reasoning"),
        ReasoningDelta(1, "r"),
        TextDelta(0, "B"),
        BlockEnd(0, {"type": "text", "text": "AB"}),
        BlockEnd(1, {"type": "reasoning", "text": "r"}),
        Finish(FinishStop()),
    ]


def test_empty_first_reasoning_opens_nothing() -> None:
    t = StreamTranslator()
    assert t.feed(delta(role="assistant", content=None, reasoning_content="")) == []
    assert t.feed(delta(content="")) == []


def test_tool_call_without_id_gets_a_stable_one() -> None:
    t = StreamTranslator()
    out = t.feed(delta(tool_calls=[{"index": 0, "function": {"name": "ls", "arguments": "{"}}]))
    out += t.feed(delta(tool_calls=[{"index": 0, "function": {"arguments": "}"}}]))
    assert out == [
        BlockStart(0, "tool-call"),
        ToolCallDelta(index=0, id="call_0", name="ls", arguments_delta="{"),
        ToolCallDelta(index=0, id="call_0", arguments_delta="}"),
    ]
    assert t.done()[0] == BlockEnd(0, {"type": "tool-call", "id": "call_0", "name": "ls", "arguments": "{}"})


def test_usage_before_finish_and_from_a_choiceless_chunk() -> None:
    t = StreamTranslator()
    t.feed(delta(content="x"))
    t.feed(finish("stop"))
    t.feed({"choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 2}})
    assert t.done()[-2:] == [UsageChunk(TokenUsage(10, 2)), Finish(FinishStop())]


@pytest.mark.parametrize(
    "data",
    [
        [],
        {"choices": {}},
        {"choices": ["x"]},
        {"choices": [{"delta": "x"}]},
        delta(content=1),
        delta(tool_calls={}),
        delta(tool_calls=[{"index": "0"}]),
    ],
)
def test_bad_shapes_raise_malformed(data: Any) -> None:
    with pytest.raises(MalformedStream):
        StreamTranslator().feed(data)


def test_unknown_finish_reason_is_upper_cased() -> None:
    t = StreamTranslator()
    t.feed(delta(content="x"))
    t.feed(finish("insufficient_system_resource"))
    reason = t.done()[-1]
    assert isinstance(reason, Finish) and isinstance(reason.reason, FinishError)
    assert reason.reason.failure.code == "INSUFFICIENT_SYSTEM_RESOURCE"


def test_usage_mapping_rules() -> None:
    assert usage_from_json(None) is None
    assert usage_from_json({}) is None
    both = {
        "prompt_tokens": 100,
        "completion_tokens": 9,
        "prompt_tokens_details": {"cached_tokens": 60},
        "prompt_cache_hit_tokens": 50,
        "completion_tokens_details": {"reasoning_tokens": 4},
    }
    # prompt_tokens_details.cached_tokens wins over prompt_cache_hit_tokens
    assert usage_from_json(both) == TokenUsage(40, 9, cache_read_tokens=60, reasoning_tokens=4)
    assert usage_from_json({"prompt_tokens": 7, "completion_tokens": 1}) == TokenUsage(7, 1)
    assert usage_from_json({"prompt_tokens": 7, "completion_tokens": 1}).to_json() == {  # type: ignore[union-attr]
        "inputTokens": 7,
        "outputTokens": 1,
    }


# ---- failures -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "message", "code"),
    [
        (401, "bad key", "AUTH"),
        (403, "forbidden", "AUTH"),
        (413, "too large; quota", "INVALID_REQUEST"),
        (402, "Insufficient Balance", "QUOTA"),
        (429, "out of credit", "QUOTA"),
        (429, "slow down", "RATE_LIMIT"),
        (400, "This model's maximum context length is 65536 tokens", "CONTEXT_WINDOW_EXCEEDED"),
        (400, "Prompt is too long", "CONTEXT_WINDOW_EXCEEDED"),
        (400, "invalid temperature", "INVALID_REQUEST"),
        (500, "boom", "SERVER"),
        (503, "overloaded", "SERVER"),
        (404, "no such model", "HTTP_404"),
        (409, "conflict", "HTTP_409"),
    ],
)
def test_status_classification(status: int, message: str, code: str) -> None:
    failure = classify_status(status, message)
    assert (failure.code, failure.status) == (code, status)


def test_failure_keeps_retry_after_and_request_id() -> None:
    failure = classify_status(429, "slow", {"Retry-After": "1.5", "X-DeepSeek-Request-Id": "rq-7"})
    assert failure.provider_retry_after_ms == 1500 and failure.request_id == "rq-7"
    assert request_id_of({"x-request-id": "a", "x-deepseek-request-id": "b"}) == "a"


def test_retry_after_forms() -> None:
    assert retry_after_ms({"retry-after": "2"}) == 2000
    assert retry_after_ms({"retry-after-ms": "250"}) == 250
    assert retry_after_ms({"retry-after": "0"}) is None
    assert retry_after_ms({"retry-after": "-3"}) is None
    assert retry_after_ms({"retry-after": "soon"}) is None
    assert retry_after_ms({}) is None
    now = datetime(2030, 1, 1, tzinfo=UTC)
    later = format_datetime(now + timedelta(seconds=30), usegmt=True)
    assert retry_after_ms({"retry-after": later}, now=now.timestamp) == 30_000


def test_error_messages_and_scrub() -> None:
    assert error_message({"message": "inner"}, "x") == "inner"
    assert error_message({"error": {"message": "nested"}}, "x") == "nested"
    assert error_message("plain text", "x") == "plain text"
    assert error_message(None, "fallback") == "fallback"
    assert scrub("key sk-abcdef is bad", "sk-abcdef") == "key *** is bad"
    assert len(scrub("x" * 2000, None)) <= 500


# ---- retries ------------------------------------------------------------------------------


def test_retry_policy() -> None:
    policy = RetryPolicy(max_retries=2, base_delay_s=1.0, max_delay_s=3.0)
    rng = random.Random(1)
    server = LlmFailure(message="m", code="SERVER")
    delays = [policy.delay_s(attempt, server, rng) for attempt in range(3)]
    assert delays[2] is None
    assert 0.5 <= delays[0] <= 1.0 and 1.0 <= delays[1] <= 2.0  # type: ignore[operator]
    assert policy.delay_s(0, LlmFailure(message="m", code="AUTH"), rng) is None
    assert policy.delay_s(0, LlmFailure(message="m", code="TIMEOUT"), rng) is None
    waited = LlmFailure(message="m", code="RATE_LIMIT", provider_retry_after_ms=2500)
    assert policy.delay_s(0, waited, rng) == 2.5
    capped = RetryPolicy(max_retries=10, base_delay_s=1.0, max_delay_s=3.0)
    assert capped.delay_s(9, LlmFailure(message="m", code="TRANSPORT"), rng) <= 3.0  # type: ignore[operator]


# ---- SSE ----------------------------------------------------------------------------------


def test_sse_decoder() -> None:
    decoder = SseDecoder()
    lines = [": keep-alive", "event: message", 'data: {"a":', "data: 1}", "", "data:[DONE]", ""]
    assert [decoder.feed(line) for line in lines] == [None, None, None, None, '{"a":\n1}', None, "[DONE]"]
    assert decoder.flush() is None
    decoder.feed("data: tail")
    assert decoder.flush() == "tail"

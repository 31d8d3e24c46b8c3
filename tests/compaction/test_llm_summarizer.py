"""``LlmSummarizer``: the request it sends and the output it refuses (FORMAT §11.6, §13 I.85)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from harness.compaction import (
    COMPACTION_INSTRUCTION,
    SECTION_HEADINGS,
    LlmSummarizer,
    SummaryFailed,
    compact,
    compact_now,
    select_compactable_range,
)
from harness.messages.model import LlmFailure, TokenUsage
from harness.messages.stream import (
    BlockEnd,
    BlockStart,
    Finish,
    FinishError,
    FinishMaxTokens,
    FinishStop,
    ReasoningDelta,
    StreamChunk,
    TextDelta,
    UsageChunk,
)
from harness.providers.deepseek import DeepSeekProvider
from harness.session.request import build_request
from harness.testing import FakeDeepSeek, Reply, usage
from tests.compaction.helpers import MODEL, SYSTEM, TOOLS, Builder, long_session, run, scripted

API_KEY = "sk-compaction-test-0000"
SUMMARY = "## Primary Request and Intent\n- count the numbers\n## Pending Jobs\n- (none)"


async def compact_over_http(server: FakeDeepSeek, session: Any, *, manual: bool = False) -> Any:
    """Compact with an ``LlmSummarizer`` on a provider for ``server`` (one event loop for both)."""
    provider = DeepSeekProvider(server.base_url, api_key=API_KEY, max_retries=0, idle_timeout_s=5)
    try:
        if manual:
            return await compact_now(session, LlmSummarizer(provider))
        return await compact(session, *_head(session), LlmSummarizer(provider))
    finally:
        await provider.aclose()


def text_reply(text: str, *, with_usage: bool = True) -> list[StreamChunk]:
    chunks: list[StreamChunk] = [
        BlockStart(0, "text"),
        TextDelta(0, text),
        BlockEnd(0, {"type": "text", "text": text}),
    ]
    if with_usage:
        chunks.append(UsageChunk(TokenUsage(input_tokens=100, output_tokens=20, cache_read_tokens=900)))
    chunks.append(Finish(FinishStop()))
    return chunks


def open_session() -> Builder:
    builder = long_session(turns=3)
    builder.open("and the next request")
    return builder


def test_the_instruction_is_ours_and_lists_the_sections_in_order() -> None:
    positions = [COMPACTION_INSTRUCTION.index(heading) for heading in SECTION_HEADINGS]
    assert positions == sorted(positions)
    assert "<compacted-summary>" in COMPACTION_INSTRUCTION
    assert "(none)" in COMPACTION_INSTRUCTION


def test_over_http_the_request_reuses_the_last_requests_prefix_and_is_marked_compact() -> None:
    session = open_session().session
    with FakeDeepSeek(
        [Reply.text(SUMMARY, usage=usage(5000, 80, cache_hit_tokens=4800))], api_key=API_KEY
    ) as server:
        probe = DeepSeekProvider(server.base_url, api_key=API_KEY)
        last_body = probe.request_body(build_request(session))  # what the loop sent last
        result = run(compact_over_http(server, session))
        request = server.last_request
    assert request.header("x-deepseek-harness-compact") == "1"
    assert request.header("x-deepseek-harness-session-id") == session.id
    body = request.body
    assert body["model"] == MODEL
    assert body["max_tokens"] == 8192
    assert body["tools"] == last_body["tools"]
    messages = body["messages"]
    assert messages[0] == {"role": "system", "content": SYSTEM}
    shadowed = messages[:-1]
    assert shadowed == last_body["messages"][: len(shadowed)]  # a byte-for-byte head prefix
    assert len(shadowed) < len(last_body["messages"])
    assert messages[-1] == {"role": "user", "content": COMPACTION_INSTRUCTION}
    summary = session.events[result.summary_seq].data
    assert summary["summary"] == SUMMARY
    assert summary["llmStreamCall"] is True
    assert summary["rawOutput"] == [{"type": "text", "text": SUMMARY}]
    assert (summary["provider"], summary["model"], summary["maxTokens"]) == ("deepseek-official", MODEL, 8192)
    assert summary["usage"] == {"inputTokens": 200, "outputTokens": 80, "cacheReadTokens": 4800}
    assert session.derive_messages()[0].content[1].raw["text"] == SUMMARY


def test_over_http_a_truncated_summary_is_max_tokens() -> None:
    session = open_session().session
    reply = Reply.text("## Primary", finish_reason="length")
    with FakeDeepSeek([reply], api_key=API_KEY) as server, pytest.raises(SummaryFailed) as raised:
        run(compact_over_http(server, session))
    assert raised.value.reason == "MAX_TOKENS"
    assert "MAX_TOKENS" in session.events[-1].data["error"]


def test_over_http_a_provider_error_keeps_its_code() -> None:
    session = long_session(turns=2).session
    reply = Reply.error(400, "Invalid request")
    with FakeDeepSeek([reply], api_key=API_KEY) as server, pytest.raises(SummaryFailed) as raised:
        run(compact_over_http(server, session, manual=True))
    assert raised.value.reason == "INVALID_REQUEST"
    assert session.events[-1].data["error"].startswith("INVALID_REQUEST")


def _head(session: Any) -> tuple[int, int]:
    region = select_compactable_range(session, 0)
    assert region is not None
    return region.start, region.end


@pytest.mark.parametrize(
    ("chunks", "reason"),
    [
        (
            [
                BlockStart(0, "reasoning"),
                ReasoningDelta(0, "thinking only"),
                BlockEnd(0, {"type": "reasoning", "text": "thinking only"}),
                Finish(FinishStop()),
            ],
            "EMPTY_SUMMARY",
        ),
        (
            [BlockStart(0, "text"), BlockEnd(0, {"type": "text", "text": "   "}), Finish(FinishStop())],
            "EMPTY_SUMMARY",
        ),
        (
            [
                BlockStart(0, "image"),
                BlockEnd(
                    0,
                    {
                        "type": "image",
                        "attachment": {
                            "attachmentId": "a",
                            "mediaType": "image/png",
                            "bytes": 1,
                            "width": 1,
                            "height": 1,
                        },
                    },
                ),
                BlockStart(1, "text"),
                BlockEnd(1, {"type": "text", "text": "caption"}),
                Finish(FinishStop()),
            ],
            "UNSUPPORTED_CONTENT",
        ),
        ([*text_reply("cut")[:-1], Finish(FinishMaxTokens())], "MAX_TOKENS"),
        ([Finish(FinishError(LlmFailure(message="overloaded", code="SERVER")))], "SERVER"),
    ],
)
def test_unusable_output_is_refused(chunks: Sequence[StreamChunk], reason: str) -> None:
    session = open_session().session
    nodes = list(session.surface.nodes)
    with pytest.raises(SummaryFailed) as raised:
        run(compact(session, *_head(session), LlmSummarizer(scripted(chunks))))
    assert raised.value.reason == reason
    assert reason in session.events[-1].data["error"]
    assert list(session.surface.nodes) == nodes


def test_reasoning_is_recorded_but_only_text_enters_the_checkpoint() -> None:
    session = open_session().session
    chunks: list[StreamChunk] = [
        BlockStart(0, "reasoning"),
        BlockEnd(0, {"type": "reasoning", "text": "private thoughts"}),
        *text_reply(SUMMARY),
    ]
    chunks[2:5] = [
        BlockStart(1, "text"),
        TextDelta(1, SUMMARY),
        BlockEnd(1, {"type": "text", "text": SUMMARY}),
    ]
    result = run(compact(session, *_head(session), LlmSummarizer(scripted(chunks))))
    summary = session.events[result.summary_seq].data
    assert [block["type"] for block in summary["rawOutput"]] == ["reasoning", "text"]
    checkpoint_text = "".join(b.raw.get("text", "") for b in session.derive_messages()[0].content)
    assert "private thoughts" not in checkpoint_text
    assert SUMMARY in checkpoint_text


def test_the_target_model_is_configured_or_taken_from_the_header() -> None:
    session = open_session().session
    provider = scripted(text_reply(SUMMARY), text_reply(SUMMARY))
    run(compact(session, *_head(session), LlmSummarizer(provider, model="deepseek-v4-pro", max_tokens=512)))
    sent = provider.requests[0]
    assert sent.config["model"] == "deepseek-v4-pro" and sent.config["maxTokens"] == 512
    assert sent.purpose == "compaction"
    assert sent.system == SYSTEM and [dict(t) for t in sent.tools] == TOOLS
    assert "reasoningEffort" not in sent.config and "temperature" not in sent.config
    other = open_session().session
    with pytest.raises(SummaryFailed) as raised:
        run(compact(other, *_head(other), LlmSummarizer(scripted(route="another-route"))))
    assert raised.value.reason == "NO_TARGET"

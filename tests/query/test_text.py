"""Semantic text (issue 13 item 1): messages, reasoning, tool calls and results, todos, approvals,
failures and world checks have text; structural events and raw chunks have none."""

from __future__ import annotations

from typing import Any

import pytest

import harness
from harness.events.event import Event
from harness.query import TEXT_TYPES, TextNeedle, event_text
from tests.query.helpers import streamed_turn


def make(kind: str, data: Any) -> Event:
    return Event.create(kind, 0, 0, data)


def texts_of(session: harness.Session) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for event in session.events:
        out.setdefault(event.type, []).append(event_text(event))
    return out


def test_a_streamed_turn_has_text_in_its_messages_calls_results_and_approvals() -> None:
    texts = texts_of(streamed_turn().session)
    assert texts["user/message"] == ["Please delete the temp files"]
    reply = texts["assistant/message"][0]
    assert reply.splitlines() == [
        "The user wants a cleanup.",  # reasoning counts
        "I will clean up.",
        "run_shell",
        '{"command": "rm -rf /tmp/x"}',
    ]
    assert texts["tool/call"] == ['run_shell\n{"command": "rm -rf /tmp/x"}']
    assert texts["tool/result"] == ["removed 3 files"]
    assert texts["approval/asked"] == ["run_shell\ndeletes"]
    assert texts["approval/decided"] == ["allowed-once"]
    for kind in (
        "turn/start",
        "step/start",
        "step/end",
        "assistant/chunk",
        "request/header",
        "request/context",
    ):
        assert set(texts[kind]) == {""}, kind
    assert texts["turn/end"] == [""]  # a completed turn is structure


@pytest.mark.parametrize(
    ("kind", "data", "expected"),
    [
        (
            "todo/write",
            {"todos": [{"content": "Fix the parser", "status": "pending"}]},
            "Fix the parser\npending",
        ),
        (
            "tool/result",
            {
                "turn": 1,
                "step": 1,
                "message": harness.tool_result_message("c", "boom", is_error=True),
                "error": {"name": "AbortError", "code": "ABORTED_BEFORE_DISPATCH"},
            },
            "boom\nAbortError\nABORTED_BEFORE_DISPATCH",
        ),
        (
            "turn/end",
            {
                "turn": 1,
                "reason": {"kind": "error", "error": {"message": "rate limited", "code": "RATE_LIMIT"}},
            },
            "error\nrate limited\nRATE_LIMIT",
        ),
        ("turn/end", {"turn": 1, "reason": {"kind": "aborted", "reason": {"kind": "user"}}}, "aborted\nuser"),
        ("turn/end", {"turn": 1, "reason": {"kind": "completed"}}, ""),
        (
            "llm/retry",
            {"retryId": "r", "failure": {"message": "overloaded", "code": "SERVER_BUSY"}},
            "overloaded\nSERVER_BUSY",
        ),
        (
            "compaction/end",
            {"compactionId": "x", "turn": None, "error": "summary: model down"},
            "summary: model down",
        ),
        ("compaction/end", {"compactionId": "x", "turn": None}, ""),
        ("approval/policy", {"policy": "never"}, "never"),
        ("session/title", {"title": "Fix the nightly job"}, "Fix the nightly job"),
        (
            "recovery/check",
            {
                "findings": [
                    {
                        "kind": "file-changed",
                        "severity": "warn",
                        "summary": "src/a.py changed since the last turn",
                        "evidence": {"path": "src/a.py"},
                        "action": "Read it again before editing.",
                    }
                ]
            },
            "file-changed\nwarn\nsrc/a.py changed since the last turn\nRead it again before editing.",
        ),
        ("compaction/summary", {"compactionId": "x", "summary": "the digest"}, ""),  # the checkpoint has it
        (
            "assistant/chunk",
            {"turn": 1, "step": 1, "chunk": {"type": "text-delta", "index": 0, "text": "x"}},
            "",
        ),
        ("vendor/private-note", {"text": "not ours"}, ""),  # an unknown type
    ],
)
def test_each_type_contributes_its_semantic_text(kind: str, data: Any, expected: str) -> None:
    assert event_text(make(kind, data)) == expected
    assert (kind in TEXT_TYPES) or expected == ""


def test_nested_tool_result_blocks_and_user_tool_calls_have_text() -> None:
    message = harness.user_message(
        [
            {"type": "tool-result", "toolCallId": "c", "content": [{"type": "text", "text": "inner result"}]},
            {
                "type": "image",
                "attachment": {"attachmentId": "i", "mediaType": "png", "bytes": 1, "width": 1},
            },
            {"type": "future-block", "text": "unknown blocks are not text"},
        ]
    )
    assert event_text(make("user/message", message)) == "inner result"


@pytest.mark.parametrize(
    "data",
    [
        None,
        [],
        "text",
        42,
        {"message": None},
        {"message": {"content": "not a list"}},
        {"message": {"content": [None, 1, "x", {"type": "text", "text": 5}]}},
        {"todos": [None, {"content": 3}]},
        {"reason": "completed"},
        {"findings": [1, None, {"summary": None}]},
    ],
)
@pytest.mark.parametrize("kind", sorted(TEXT_TYPES))
def test_data_of_an_unexpected_shape_never_raises(kind: str, data: Any) -> None:
    assert isinstance(event_text(make(kind, data)), str)


def test_text_parts_are_stripped_and_blank_ones_dropped() -> None:
    message = harness.user_message(
        [harness.text_block("  padded  "), harness.text_block("   "), harness.text_block("x")]
    )
    assert event_text(make("user/message", message)) == "padded\nx"


def test_deeply_nested_tool_results_stop_without_recursion_error() -> None:
    block: dict[str, Any] = {"type": "text", "text": "bottom"}
    for _ in range(200):
        block = {"type": "tool-result", "toolCallId": "c", "content": [block]}
    assert event_text(make("user/message", {"role": "user", "content": [block]})) == ""


# ---- the needle -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("needle", "text", "found"),
    [
        ("Launch Code", "the launch code is", True),
        ("launch   code", "the LAUNCH\n\t code is", True),
        ("  launch code  ", "launch code", True),
        ("launch code", "launchcode", False),
        ("a.b", "axb", False),
        ("a.b", "see a.b here", True),
        ("(x|y)*", "a (x|y)* b", True),
        ("(x|y)*", "xyxy", False),
        ("[a-z]+", "abc", False),
        ("\\d", "\\d", True),
        ("\\d", "7", False),
        ("straße", "STRASSE", False),  # simple case folding only
        ("ÄRGER", "ärger", True),
        ("line one line two", "line one\u00a0line\u2003two", True),  # Unicode spaces are whitespace
    ],
)
def test_a_needle_is_literal_case_insensitive_and_whitespace_flexible(
    needle: str, text: str, found: bool
) -> None:
    assert TextNeedle(needle).matches(text) is found


@pytest.mark.parametrize("needle", ["", " ", "\n\t", "\u2003"])
def test_a_needle_with_no_word_is_invalid(needle: str) -> None:
    with pytest.raises(harness.InvalidQuery, match="no word"):
        TextNeedle(needle)


def test_a_needle_must_be_a_string() -> None:
    with pytest.raises(harness.InvalidQuery, match="must be a string"):
        TextNeedle(b"bytes")  # type: ignore[arg-type]


def test_a_long_whitespace_run_is_one_pass() -> None:
    haystack = "a" + " " * 200_000 + "c"
    assert not TextNeedle("a b").matches(haystack)
    assert TextNeedle("a c").matches(haystack)


@pytest.mark.parametrize(
    ("needle", "text", "found"),
    [
        ("TTL", "settle the invoice", False),  # inside a longer word
        ("TTL", "le TTL des enregistrements", True),
        ("TTL", "(ttl)", True),
        ("deploy", "the deployment", True),  # a match may end inside a word
        ("Error", "ValueError: bad", False),
        ("Error", "Error: bad", True),
        ("响应时间", "接口响应时间不能超过", True),  # CJK text does not separate words
        ("数据", "3数据", True),
        ("-x", "a-x", True),  # a needle that does not start with a letter, digit or underscore
        ("a1", "ba1", False),
        ("ärger", "Verärgert", False),
    ],
)
def test_a_word_start_needle_does_not_match_inside_a_word(needle: str, text: str, found: bool) -> None:
    assert TextNeedle(needle, word_start=True).matches(text) is found
    assert TextNeedle(needle).matches(text) is (needle.casefold() in text.casefold())

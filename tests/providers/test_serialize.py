"""Request building against FORMAT §12: header materialization, body fields, messages."""

from __future__ import annotations

import json
from typing import Any

import pytest

from harness.events.json import dumps
from harness.messages.model import (
    Message,
    assistant_message,
    reasoning_block,
    text_block,
    tool_call_block,
    tool_result_message,
    user_message,
)
from harness.messages.request import EpochHeader
from harness.providers.deepseek import DeepSeekProvider, OpenAICompatibleProvider, export_messages
from harness.providers.serialize import (
    RequestRefused,
    build_body,
    serialize_messages,
    serialize_tools,
    thinking_fields,
)
from harness.session.session import Session
from tests.providers.helpers import API_KEY, header, options

# The request/header of FORMAT §4's example turn, as the adapter materializes it.
FORMAT_EXAMPLE_HEADER = {
    "config": {
        "provider": "deepseek-official",
        "model": "deepseek-v4-flash",
        "maxTokens": 256000,
        "reasoningEffort": "high",
    },
    "adapterDefaults": {"reasoningEffort": True, "maxTokens": True},
    "system": "You are a coding agent.",
    "tools": [{"name": "bash", "description": "Run a command", "parameters": {"type": "object"}}],
}


@pytest.fixture
def provider() -> DeepSeekProvider:
    return DeepSeekProvider("http://127.0.0.1:9", api_key=API_KEY)  # never contacted


def only_plain_containers(value: Any) -> bool:
    """True when ``value`` is built from plain ``dict`` / ``list`` only (no frozen views)."""
    if type(value) is dict:
        return all(only_plain_containers(item) for item in value.values())
    if type(value) is list:
        return all(only_plain_containers(item) for item in value)
    return value is None or type(value) in (str, int, float, bool)


# ---- materialize ---------------------------------------------------------------------------


def test_materialize_fills_defaults_like_the_format_example(provider: DeepSeekProvider) -> None:
    bare = EpochHeader.build(
        provider="deepseek-official",
        model="deepseek-v4-flash",
        system="You are a coding agent.",
        tools=[{"name": "bash", "description": "Run a command", "parameters": {"type": "object"}}],
    )
    done = provider.materialize(bare)
    assert dumps(done.raw) == dumps(FORMAT_EXAMPLE_HEADER)  # same keys, same order


def test_materialize_is_idempotent(provider: DeepSeekProvider) -> None:
    once = provider.materialize(header())
    twice = provider.materialize(once)
    assert twice is once
    assert twice == once and dumps(twice.raw) == dumps(once.raw)


def test_materialize_keeps_explicit_values_unmarked(provider: DeepSeekProvider) -> None:
    explicit = header(reasoning_effort="max", max_tokens=1000)
    assert provider.materialize(explicit) is explicit
    partly = provider.materialize(header(reasoning_effort="low"))
    assert partly.config["reasoningEffort"] == "low" and partly.config["maxTokens"] == 256_000
    assert dict(partly.adapter_defaults) == {"maxTokens": True}


def test_openai_compatible_materializes_only_the_effort() -> None:
    other = OpenAICompatibleProvider("http://127.0.0.1:9", api_key=API_KEY)
    done = other.materialize(header(provider="openai-compatible", model="m"))
    assert dict(done.config) == {"provider": "openai-compatible", "model": "m", "reasoningEffort": "off"}
    assert dict(done.adapter_defaults) == {"reasoningEffort": True}


def test_context_windows(provider: DeepSeekProvider) -> None:
    assert provider.context_window("deepseek-v4-flash") == 1_000_000
    assert provider.context_window("deepseek-v4-pro") == 1_000_000
    assert provider.context_window("deepseek-next") == 1_000_000  # unlisted: the default window
    custom = DeepSeekProvider("http://127.0.0.1:9", api_key=API_KEY, model_windows={"deepseek-small": 64_000})
    assert custom.context_window("deepseek-small") == 64_000


# ---- body fields ---------------------------------------------------------------------------


def test_minimal_body_omits_every_unset_field(provider: DeepSeekProvider) -> None:
    body = provider.request_body(options(["hi"], head=header(system=None)))
    assert body == {
        "model": "deepseek-v4-flash",
        "messages": [{"role": "user", "content": "hi"}],
        "stream": True,
        "stream_options": {"include_usage": True},
        "thinking": {"type": "enabled"},
        "reasoning_effort": "high",
        "max_tokens": 256_000,
    }
    assert list(body) == [
        "model",
        "messages",
        "stream",
        "stream_options",
        "thinking",
        "reasoning_effort",
        "max_tokens",
    ]


def test_full_body_order(provider: DeepSeekProvider) -> None:
    tools = [{"name": "bash", "description": "Run a command", "parameters": {"type": "object"}}]
    head = header(tools=tools, temperature=0.5, max_tokens=100, stop=["\n\n"], reasoning_effort="max")
    body = provider.request_body(options(head=head))
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
    assert body["tools"] == [
        {
            "type": "function",
            "function": {"name": "bash", "description": "Run a command", "parameters": {"type": "object"}},
        }
    ]
    assert (body["temperature"], body["max_tokens"], body["stop"]) == (0.5, 100, ["\n\n"])
    assert body["reasoning_effort"] == "max"


@pytest.mark.parametrize(
    ("effort", "fields"),
    [
        ("off", {"thinking": {"type": "disabled"}}),
        ("low", {"thinking": {"type": "enabled"}, "reasoning_effort": "low"}),
        ("high", {"thinking": {"type": "enabled"}, "reasoning_effort": "high"}),
        ("max", {"thinking": {"type": "enabled"}, "reasoning_effort": "max"}),
    ],
)
def test_efforts(effort: str, fields: dict[str, Any]) -> None:
    assert thinking_fields(effort, purpose=None) == fields


@pytest.mark.parametrize("effort", ["medium", "HIGH", "", 3, None])
def test_other_efforts_are_refused(effort: Any) -> None:
    with pytest.raises(RequestRefused) as refused:
        thinking_fields(effort, purpose=None)
    assert refused.value.failure.code == "UNSUPPORTED_REASONING_EFFORT"


def test_session_title_forces_thinking_off(provider: DeepSeekProvider) -> None:
    body = provider.request_body(options(head=header(reasoning_effort="max"), purpose="session-title"))
    assert body["thinking"] == {"type": "disabled"} and "reasoning_effort" not in body


def test_a_deployment_without_thinking_accepts_only_off() -> None:
    assert thinking_fields("off", purpose=None, reasoning=False) == {}
    with pytest.raises(RequestRefused):
        thinking_fields("high", purpose=None, reasoning=False)


def test_tools_without_description() -> None:
    assert serialize_tools([{"name": "t", "parameters": {}}]) == [
        {"type": "function", "function": {"name": "t", "parameters": {}}}
    ]


# ---- messages ------------------------------------------------------------------------------


def test_system_first_and_user_text_concatenated() -> None:
    image = {"type": "image", "attachment": {"attachmentId": "a", "mediaType": "image/png"}}
    message = Message(user_message([text_block("Read "), image, text_block("this.")]))
    assert serialize_messages("Be brief.", [message]) == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Read this."},
    ]


def test_assistant_message_with_reasoning_text_and_calls() -> None:
    content = [
        reasoning_block("First, "),
        text_block("I will read it."),
        reasoning_block("then read."),
        tool_call_block("call_a", "read_file", '{"path":"a"}'),
        tool_call_block("call_b", "read_file", '{"path":"b"}'),
    ]
    message = Message(assistant_message(content, provider="deepseek-official", model="deepseek-v4-pro"))
    assert serialize_messages(None, [message]) == [
        {
            "role": "assistant",
            "content": "I will read it.",
            "reasoning_content": "First, then read.",
            "tool_calls": [
                {
                    "id": "call_a",
                    "type": "function",
                    "function": {"name": "read_file", "arguments": '{"path":"a"}'},
                },
                {
                    "id": "call_b",
                    "type": "function",
                    "function": {"name": "read_file", "arguments": '{"path":"b"}'},
                },
            ],
        }
    ]


def test_assistant_with_only_calls_has_empty_content_and_no_reasoning() -> None:
    message = Message(
        assistant_message([tool_call_block("c", "ls", "{}")], provider="deepseek-official", model="m")
    )
    (entry,) = serialize_messages(None, [message])
    assert entry["content"] == "" and "reasoning_content" not in entry


def test_tool_results_become_tool_entries_without_a_user_entry() -> None:
    messages = [
        Message(tool_result_message("c1", "42 a.txt")),
        Message(tool_result_message("c2", [], is_error=True)),
        Message(tool_result_message("c3", [text_block("line 1\n"), text_block("line 2")])),
    ]
    assert serialize_messages(None, messages) == [
        {"role": "tool", "tool_call_id": "c1", "content": "42 a.txt"},
        {"role": "tool", "tool_call_id": "c2", "content": "(no output)"},
        {"role": "tool", "tool_call_id": "c3", "content": "line 1\nline 2"},
    ]


def test_build_body_refuses_without_sending(provider: DeepSeekProvider) -> None:
    with pytest.raises(RequestRefused):
        build_body(options(head=header(reasoning_effort="turbo")))
    with pytest.raises(RequestRefused):
        provider.request_body(options(head=header(reasoning_effort="turbo")))


def test_body_is_plain_json(provider: DeepSeekProvider) -> None:
    tools = [{"name": "bash", "description": "d", "parameters": {"type": "object", "required": ["cmd"]}}]
    body = provider.request_body(options(head=header(tools=tools, stop=["x"])))
    assert only_plain_containers(body)
    assert json.loads(json.dumps(body)) == body


def test_export_messages_from_a_session(provider: DeepSeekProvider) -> None:
    session = Session.create()
    assert export_messages(session) == {"model": "", "messages": []}
    tools = [{"name": "bash", "description": "Run", "parameters": {"type": "object"}}]
    head = provider.materialize(header(tools=tools))
    session.append("request/header", {"header": head.raw, "reason": "initial"})
    session.append("user/message", user_message("hello"), surface_op="append")
    assert export_messages(session) == {
        "model": "deepseek-v4-flash",
        "messages": [
            {"role": "system", "content": "You are a test agent."},
            {"role": "user", "content": "hello"},
        ],
        "tools": [{"type": "function", "function": dict(tools[0])}],
    }

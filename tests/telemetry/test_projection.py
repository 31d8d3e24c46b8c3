"""The projection of a log to GenAI spans, on every dsh fixture and on logs built here: the
tree's shape, the conventions' attributes, ids that do not change, no content unless asked,
no secret ever."""

from __future__ import annotations

import asyncio
import json
import re
import shutil
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

import harness
from harness.events.event import Event, Replace
from harness.stores.dsh_sqlite.backend import DshSqliteBackend
from harness.stores.jsonl.reader import read_session_file
from harness.stores.store import SessionStore
from harness.telemetry import (
    SEMCONV_VERSION,
    Projector,
    SpanRecord,
    project_session,
    render_tree,
    to_otlp_json,
)
from harness.telemetry import conventions as c
from tests.test_fixtures_dsh import FIXTURES

FIXTURE_FILES = sorted(p.name for p in FIXTURES.glob("*.jsonl*"))


def load(name: str) -> harness.Session:
    return read_session_file(str(FIXTURES / name))


def by_id(spans: list[SpanRecord]) -> dict[str, SpanRecord]:
    return {span.span_id: span for span in spans}


def test_the_fixtures_are_there() -> None:
    assert len(FIXTURE_FILES) >= 19, FIXTURE_FILES


@pytest.mark.parametrize("name", FIXTURE_FILES)
def test_every_dsh_fixture_projects_to_a_well_formed_tree(name: str) -> None:
    session = load(name)
    check_tree(session, project_session(session.id, session.events))


SQLITE_FILES = sorted(p.name for p in (FIXTURES.parent / "dsh-sqlite").glob("*.sqlite"))


@pytest.mark.parametrize("name", SQLITE_FILES)
def test_every_dsh_sqlite_fixture_projects_as_its_jsonl_twin(name: str, tmp_path: Path) -> None:
    """dsh's SQLite stores (read by DshSqliteBackend) hold the same sessions as the JSONL
    fixtures: each projects to a well-formed tree, span for span the same as its twin's."""
    copy = tmp_path / name
    shutil.copyfile(FIXTURES.parent / "dsh-sqlite" / name, copy)
    copy.chmod(0o600)  # the backend refuses a database others can read

    async def sessions() -> list[harness.Session]:
        store = SessionStore(DshSqliteBackend(copy))
        try:
            return [await store.inspect(info.id) for info in await store.list()]
        finally:
            await store.close()

    twins: dict[str, list[list[SpanRecord]]] = {}
    for file in FIXTURE_FILES:
        twin = load(file)
        twins.setdefault(twin.id, []).append(project_session(twin.id, twin.events))
    found = asyncio.run(sessions())
    assert found
    for session in found:
        spans = project_session(session.id, session.events)
        check_tree(session, spans)
        if session.id in twins:
            assert spans in twins[session.id]


def check_tree(session: harness.Session, spans: list[SpanRecord]) -> None:
    """The invariants every projection keeps (see the test above)."""
    events = list(session.events)
    ids = by_id(spans)
    assert len(ids) == len(spans), "span ids are unique"
    turns = [e for e in events if e.type == "turn/start"]
    roots = [s for s in spans if s.parent_span_id is None]
    agents = [s for s in spans if s.attributes.get(c.OPERATION) == c.INVOKE_AGENT]
    assert len(agents) == len(turns)
    assert all(s.parent_span_id is None and s.kind == "internal" for s in agents)
    assert {s.trace_id for s in roots} == {s.trace_id for s in spans}, "every trace has a root"
    for span in spans:
        assert re.fullmatch(r"[0-9a-f]{32}", span.trace_id) and re.fullmatch(r"[0-9a-f]{16}", span.span_id)
        assert span.end_ns >= span.start_ns
        if span.parent_span_id is not None:
            parent = ids[span.parent_span_id]
            assert parent.trace_id == span.trace_id
            assert parent.start_ns <= span.start_ns and span.end_ns <= parent.end_ns, span.name
        assert span.attributes[c.CONVERSATION] == session.id
    # one chat span per assistant message of a turn, one tool span per tool result
    chats = [s for s in spans if s.attributes.get(c.OPERATION) == c.CHAT and s.parent_span_id in ids]
    turn_chats = [
        s for s in chats if ids[s.parent_span_id or ""].attributes.get(c.OPERATION) == c.INVOKE_AGENT
    ]
    messages = [e for e in events if e.type == "assistant/message"]
    assert len(turn_chats) >= len(messages)
    for chat in chats:
        assert chat.kind == "client" and chat.name == f"chat {chat.attributes[c.REQUEST_MODEL]}"
        assert chat.attributes[c.PROVIDER] == "deepseek"
    tools = [s for s in spans if s.attributes.get(c.OPERATION) == c.EXECUTE_TOOL]
    results = [e for e in events if e.type == "tool/result"]
    assert Counter(s.attributes[c.TOOL_CALL_ID] for s in tools) == Counter(
        e.data["message"]["source"]["callId"] for e in results
    ) + Counter(
        e.data["callId"]
        for e in events
        if e.type == "tool/call"
        and e.data["callId"] not in {r.data["message"]["source"]["callId"] for r in results}
    )
    # usage: the conventions' input count includes the cache reads FORMAT keeps apart
    with_usage = [e for e in messages if "usage" in e.data]
    for event in with_usage:
        usage = event.data["usage"]
        match = [s for s in chats if s.attributes.get(c.RESPONSE_ID) == event.data["message"]["id"]]
        assert len(match) == 1
        attributes = match[0].attributes
        assert attributes[c.INPUT_TOKENS] == usage["inputTokens"] + usage.get("cacheReadTokens", 0)
        assert attributes[c.CACHE_READ_TOKENS] == usage.get("cacheReadTokens")
        assert attributes[c.OUTPUT_TOKENS] == usage["outputTokens"]
    # exporting twice gives the same trace; another session id gives another
    assert project_session(session.id, events) == spans
    other = project_session(session.id + "-fork", events)
    assert not {s.span_id for s in other} & set(ids)
    assert not {s.trace_id for s in other} & {s.trace_id for s in spans}


@pytest.mark.parametrize("name", FIXTURE_FILES)
def test_no_content_leaves_the_log_unless_asked(name: str) -> None:
    session = load(name)
    plain = json.dumps(to_otlp_json(project_session(session.id, session.events)))
    texts = []
    for event in session.events:
        if event.type in ("user/message", "assistant/message", "tool/result"):
            data = event.data
            message = data.get("message", data)
            for block in message.get("content") or ():
                for text in (block.get("text"), *(b.get("text") for b in block.get("content") or ())):
                    if isinstance(text, str) and len(text.strip()) > 12:
                        texts.append(text)
    assert texts
    for text in texts:
        assert json.dumps(text)[1:-1] not in plain
    for key in c.CONTENT_KEYS:
        assert f'"{key}"' not in plain
    with_content = project_session(session.id, session.events, capture_content=True)
    agents = [s for s in with_content if s.attributes.get(c.OPERATION) == c.INVOKE_AGENT]
    for span in agents:
        for key in (c.INPUT_MESSAGES, c.OUTPUT_MESSAGES):
            messages = json.loads(str(span.attributes[key]))
            assert isinstance(messages, list)
            assert all(set(m) >= {"role", "parts"} for m in messages)
    everything = json.dumps(to_otlp_json(with_content))
    prompt = next(e for e in session.events if e.type == "user/message").data["content"][0]["text"]
    assert json.dumps(prompt)[1:-1][:40] in everything


def test_the_tool_call_fixture_gives_the_expected_tree_and_attributes() -> None:
    session = load("02-tool-call.jsonl")
    spans = project_session(session.id, session.events)
    assert render_tree(spans, details=False).splitlines()[1:] == [
        "  invoke_agent harness",
        "    chat deepseek-v4-flash",
        "    execute_tool read",
        "    chat deepseek-v4-flash",
    ]
    agent = next(s for s in spans if s.parent_span_id is None)
    first_chat, tool, second_chat = sorted((s for s in spans if s.parent_span_id), key=lambda s: s.start_ns)
    assert agent.attributes[c.AGENT_NAME] == "harness" and agent.attributes[c.END_REASON] == "completed"
    assert agent.attributes[c.INPUT_TOKENS] == (4112 + 4112) + (4173 + 4172)
    assert agent.attributes[c.CACHE_READ_TOKENS] == 4112 + 4172
    assert agent.attributes[c.OUTPUT_TOKENS] == 21 + 16
    assert first_chat.attributes[c.FINISH_REASONS] == ["tool_calls"]
    assert second_chat.attributes[c.FINISH_REASONS] == ["stop"]
    assert first_chat.attributes[c.REQUEST_MAX_TOKENS] == 256000
    assert first_chat.attributes[c.REASONING_EFFORT] == "high"
    assert first_chat.attributes[c.RESPONSE_ID] == "55b383c0-db1d-4414-84fb-ca66986ad4a6"
    assert first_chat.attributes[c.RESPONSE_MODEL] == "deepseek-v4-flash"
    assert first_chat.attributes[c.HARNESS_PROVIDER] == "deepseek-official"
    assert first_chat.attributes[c.STEP] == 1
    assert tool.attributes[c.TOOL_NAME] == "read" and tool.attributes[c.TOOL_CALL_ID] == "call_fake_15"
    assert tool.attributes[c.TOOL_TYPE] == "function" and c.TOOL_DESCRIPTION in tool.attributes
    assert tool.status == "unset" and c.ERROR_TYPE not in tool.attributes
    times = {e.seq: e.time * 1_000_000 for e in session.events}
    assert (tool.start_ns, tool.end_ns) == (times[38], times[40])  # tool/call .. the result citing it
    assert (first_chat.start_ns, first_chat.end_ns) == (times[6], times[37])  # step/start .. message
    assert (agent.start_ns, agent.end_ns) == (times[4], times[67])


def test_a_crash_repair_is_an_event_and_the_unknown_outcome_an_error() -> None:
    session = load("05-resumed-after-kill-during-tool.jsonl")
    spans = project_session(session.id, session.events)
    first, second = sorted((s for s in spans if s.parent_span_id is None), key=lambda s: s.start_ns)
    assert first.status == "error" and first.attributes[c.ERROR_TYPE] == "interrupted"
    assert [e.name for e in first.events] == [c.EVENT_CRASH_REPAIR, c.EVENT_CRASH_REPAIR]
    assert first.events[0].attributes[c.ERROR_TYPE] == "TOOL_OUTCOME_UNKNOWN"
    tool = next(s for s in spans if s.attributes.get(c.OPERATION) == c.EXECUTE_TOOL)
    assert tool.status == "error" and tool.attributes[c.ERROR_TYPE] == "TOOL_OUTCOME_UNKNOWN"
    assert second.status == "unset" and second.attributes[c.END_REASON] == "completed"


def test_a_log_cut_mid_turn_ends_its_open_spans_as_incomplete() -> None:
    session = load("02-tool-call.jsonl")
    cut = list(session.events)[:39]  # mid tool call: the turn, the second step and the call are open
    spans = project_session(session.id, cut)
    assert render_tree(spans, details=False).splitlines()[1:] == [
        "  invoke_agent harness",
        "    chat deepseek-v4-flash",
        "    execute_tool read",
    ]
    open_ones = [s.name for s in spans if s.attributes.get(c.INCOMPLETE) is True]
    assert sorted(open_ones) == ["execute_tool read", "invoke_agent harness"]
    assert max(s.end_ns for s in spans) == cut[-1].time * 1_000_000


def test_a_compaction_is_a_span_with_its_tokens_and_outcome() -> None:
    session = load("03-manual-compact.jsonl")
    spans = project_session(session.id, session.events)
    compactions = [s for s in spans if s.name == c.COMPACTION_SPAN]
    assert compactions
    summaries = {e.data["compactionId"]: e.data for e in session.events if e.type == "compaction/summary"}
    for span in compactions:
        data = summaries.get(str(span.attributes[c.COMPACTION_ID]))
        if data is None:
            assert span.attributes[c.COMPACTION_OUTCOME] in ("failed", "nothing")
            continue
        assert span.attributes[c.COMPACTION_OUTCOME] == "compacted"
        assert span.attributes[c.TOKENS_BEFORE] == data["shadowedTokenCount"]
        after, before = span.attributes[c.TOKENS_AFTER], span.attributes[c.TOKENS_BEFORE]
        assert isinstance(after, int) and isinstance(before, int) and 0 < after < before
        summarizer = [s for s in spans if s.parent_span_id == span.span_id]
        assert [s.attributes[c.OPERATION] for s in summarizer] == (
            [c.CHAT] if data.get("llmStreamCall") else []
        )
    manual = [s for s in compactions if s.attributes[c.MANUAL] is True]
    assert manual and all(s.parent_span_id is None for s in manual)  # /compact between turns: its own trace


def test_the_convention_version_is_stated() -> None:
    assert SEMCONV_VERSION == "1.41.0"
    document = to_otlp_json([])
    assert document["resourceSpans"][0]["scopeSpans"][0]["schemaUrl"].endswith("/1.41.0")


# ---- logs built here -----------------------------------------------------------------------

SECRETS = (
    "sk-live-abcdefghijklmnop1234",
    "ghp_abcdefghijklmnopqrstuvwxyz012345",
    "hunter2-the-password",
    "AKIAABCDEFGHIJKLMNOP",
)


def _turn(session: harness.Session, *, error: Mapping[str, Any] | None = None) -> None:
    """One turn with a tool call whose arguments, result, prompt and failure hold secrets."""
    turn = 1 + sum(1 for e in session.events if e.type == "turn/start")
    session.append("turn/start", {"turn": turn})
    session.append("step/start", {"turn": turn, "step": 1})
    session.append(
        "user/message",
        {
            "id": f"u-{turn}",
            "role": "user",
            "source": {"kind": "user"},
            "content": [{"type": "text", "text": f"use key {SECRETS[0]} and password={SECRETS[2]}"}],
        },
        surface_op="append",
    )
    session.append(
        "request/header",
        {
            "header": {
                "config": {
                    "provider": "deepseek-official",
                    "model": "m1",
                    "temperature": 0.5,
                    "stop": ["END"],
                },
                "system": f"token: {SECRETS[1]}",
                "tools": [{"name": "bash", "description": "Run a command", "parameters": {"type": "object"}}],
            },
            "reason": "initial",
        },
    )
    arguments = json.dumps({"cmd": f"curl -H 'Authorization: Bearer {SECRETS[1]}'", "password": SECRETS[2]})
    chunk = session.append(
        "assistant/chunk",
        {
            "turn": turn,
            "step": 1,
            "chunk": {"type": "usage", "usage": {"inputTokens": 10, "outputTokens": 2}},
        },
    )
    call_id = f"call-{turn}" if turn == 1 else f"call-{SECRETS[3]}"  # an id is not content: redacted too
    session.append(
        "assistant/message",
        {
            "turn": turn,
            "step": 1,
            "message": {
                "id": f"a-{turn}",
                "role": "assistant",
                "source": {"kind": "model", "provider": "deepseek-official", "model": "m1"},
                "content": [{"type": "tool-call", "id": call_id, "name": "bash", "arguments": arguments}],
            },
            "usage": {"inputTokens": 10, "outputTokens": 2, "cacheWriteTokens": 3, "reasoningTokens": 1},
        },
        surface_op="append",
        source_event_seqs=[chunk.seq],
    )
    call = session.append(
        "tool/call", {"turn": turn, "step": 1, "callId": call_id, "name": "bash", "arguments": arguments}
    )
    session.append("approval/asked", {"id": f"ap-{turn}", "toolName": "bash", "callId": call_id})
    session.append("approval/decided", {"id": f"ap-{turn}", "outcome": "allowed-once"})
    session.append(
        "tool/result",
        {
            "turn": turn,
            "step": 1,
            "message": {
                "id": f"t-{turn}",
                "role": "user",
                "source": {"kind": "tool", "callId": call_id},
                "content": [
                    {
                        "type": "tool-result",
                        "toolCallId": call_id,
                        "content": [{"type": "text", "text": f"AWS_ACCESS_KEY_ID={SECRETS[3]}"}],
                        "isError": True,
                    }
                ],
            },
        },
        surface_op="append",
        source_event_seqs=[call.seq],
    )
    session.append("step/end", {"turn": turn, "step": 1})
    reason: dict[str, Any] = (
        {"kind": "completed"} if error is None else {"kind": "error", "error": dict(error)}
    )
    session.append("turn/end", {"turn": turn, "reason": reason})


def new_session(session_id: str) -> harness.Session:
    header = {"type": "session", "version": 0, "id": session_id, "createdAt": 1_000, "cwd": "/tmp"}
    return harness.Session.create(header)


def secret_session() -> harness.Session:
    session = new_session("secret-session")
    _turn(session)
    session.append(
        "recovery/check",
        {
            "blocking": False,
            "counts": {"block": 0, "warn": 1, "info": 0},
            "findings": [{"kind": "file-changed"}],
        },
        ignorable=True,
    )
    _turn(session, error={"message": f"upstream said api_key={SECRETS[0]}", "code": "HTTP_401"})
    return session


@pytest.mark.parametrize("content", [False, True])
def test_no_secret_ever_reaches_a_span(content: bool) -> None:
    session = secret_session()
    text = json.dumps(to_otlp_json(project_session(session.id, session.events, capture_content=content)))
    for secret in SECRETS:
        assert secret not in text
    if content:
        assert "[redacted]" in text and "curl" in text  # the content is there, its secrets are not


def test_a_log_built_here_has_every_attribute_and_event_it_asks_for() -> None:
    session = secret_session()
    spans = project_session(session.id, session.events, capture_content=True)
    first, second = sorted((s for s in spans if s.parent_span_id is None), key=lambda s: s.start_ns)
    chat = next(s for s in spans if s.attributes.get(c.OPERATION) == c.CHAT and s.trace_id == first.trace_id)
    assert chat.attributes[c.REQUEST_TEMPERATURE] == 0.5 and chat.attributes[c.REQUEST_STOP] == ["END"]
    assert chat.attributes[c.INPUT_TOKENS] == 13 and chat.attributes[c.CACHE_CREATION_TOKENS] == 3
    assert chat.attributes[c.REASONING_TOKENS] == 1
    output = json.loads(str(chat.attributes[c.OUTPUT_MESSAGES]))
    assert output[0]["role"] == "assistant" and output[0]["parts"][0]["type"] == "tool_call"
    assert output[0]["parts"][0]["arguments"]["password"] == "[redacted]"
    tool = next(
        s for s in spans if s.attributes.get(c.OPERATION) == c.EXECUTE_TOOL and s.trace_id == first.trace_id
    )
    assert tool.attributes[c.ERROR_TYPE] == "tool_error" and tool.status == "error"
    assert tool.attributes[c.TOOL_DESCRIPTION] == "Run a command"
    assert [e.name for e in tool.events] == [c.EVENT_APPROVAL_ASKED, c.EVENT_APPROVAL_DECIDED]
    assert tool.events[1].attributes["harness.approval.outcome"] == "allowed-once"
    assert json.loads(str(tool.attributes[c.TOOL_RESULT])) == "AWS_ACCESS_KEY_ID=[redacted]"
    # the world check between the turns is an event of the next turn
    assert [e.name for e in second.events] == [c.EVENT_WORLD_CHECK]
    assert second.events[0].attributes["harness.recovery.findings"] == ["file-changed"]
    assert second.status == "error" and second.attributes[c.ERROR_TYPE] == "HTTP_401"
    assert "[redacted]" in second.status_message
    assert c.SYSTEM_INSTRUCTIONS in first.attributes


def test_an_event_between_turns_with_no_turn_after_it_gets_a_span_of_its_own() -> None:
    session = new_session("check-only")
    session.append(
        "recovery/check", {"blocking": True, "counts": {"block": 1}, "findings": []}, ignorable=True
    )
    spans = project_session(session.id, session.events)
    assert [(s.name, [e.name for e in s.events]) for s in spans] == [
        (c.BETWEEN_TURNS_SPAN, [c.EVENT_WORLD_CHECK])
    ]


def test_malformed_events_are_skipped_never_raised_on() -> None:
    session = new_session("odd")
    odd: list[tuple[str, Any]] = [
        ("turn/start", "not an object"),
        ("turn/start", {"turn": "one"}),
        ("step/start", {"step": None}),
        ("assistant/chunk", {"chunk": "x"}),
        ("assistant/chunk", {"chunk": {"type": "finish", "reason": "stop"}}),
        ("llm/retry", {"failure": None, "retry": True}),
        ("tool/call", {"callId": 7}),
        ("tool/call", {"callId": "c", "name": None}),
        ("approval/asked", {"id": 3}),
        ("approval/decided", {}),
        ("compaction/start", {"compactionId": None}),
        ("compaction/summary", {"compactionId": "nope"}),
        ("compaction/end", {"compactionId": "nope", "error": "x"}),
        ("recovery/check", {"counts": "many", "findings": [1, None]}),
        ("request/header", {"header": {"config": "x"}}),
        ("turn/end", {"reason": None}),
        ("turn/end", {"reason": {"kind": "error", "error": "not an object"}}),
    ]
    events = [Event.create(kind, seq, 1_000 + seq, data) for seq, (kind, data) in enumerate(odd)]
    spans = project_session(session.id, events)
    assert [s.name for s in spans if s.parent_span_id is None][:1] == ["invoke_agent harness"]
    for span in spans:
        json.dumps(to_otlp_json([span]))


def test_the_live_and_the_whole_projection_agree_event_by_event() -> None:
    session = load("03-auto-compaction.jsonl")
    projector = Projector(session.id)
    streamed: list[SpanRecord] = []
    for event in session.events:
        streamed.extend(projector.feed(event))
    streamed.extend(projector.finish())
    assert streamed == project_session(session.id, session.events)
    assert isinstance(session.events[0].surface_op, (str, Replace, type(None)))


def test_the_otlp_json_encoding_follows_the_protocol(tmp_path: Path) -> None:
    session = load("02-tool-call.jsonl")
    document = to_otlp_json(project_session(session.id, session.events), resource={"service.name": "t"})
    scope = document["resourceSpans"][0]["scopeSpans"][0]
    assert scope["scope"]["name"] == c.SCOPE_NAME
    span = scope["spans"][0]
    assert isinstance(span["startTimeUnixNano"], str) and span["startTimeUnixNano"].isdigit()
    assert span["kind"] in (1, 3)
    ints = [a for s in scope["spans"] for a in s["attributes"] if "intValue" in a["value"]]
    assert ints and all(isinstance(a["value"]["intValue"], str) for a in ints)
    arrays = [a for s in scope["spans"] for a in s["attributes"] if a["key"] == c.FINISH_REASONS]
    assert arrays[0]["value"] == {"arrayValue": {"values": [{"stringValue": "tool_calls"}]}}

"""The agent loop against a scripted in-process provider: event order, tools, approvals,
cancel, failures, checkpoints and request headers."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

import harness
from harness.agent.approval import ApprovalRequest, FixedApprover
from harness.agent.loop import Agent, AgentSettings, TurnOutcome
from harness.errors import PersistenceFailed
from harness.messages.stream import StreamChunk
from harness.session.request import build_request
from harness.stores.faults import FaultyBackend
from harness.stores.memory import MemoryBackend
from harness.stores.store import SessionStore
from harness.testing.scripted import EchoTool, ScriptedProvider, calls_reply, error_reply, text_reply
from harness.tools.base import Tool

SETTINGS = AgentSettings(model="m-1", system="You are terse.")


def agent(
    session: harness.Session,
    replies: Sequence[Sequence[StreamChunk] | str],
    tools: Sequence[Tool] = (),
    **options: Any,
) -> tuple[Agent, ScriptedProvider]:
    provider = ScriptedProvider(replies)
    settings = options.pop("settings", SETTINGS)
    options.setdefault("record_baseline", False)
    return Agent(session, provider, tools, settings, workspace=".", **options), provider


def types(session: harness.Session) -> list[str]:
    return [event.type for event in session.events]


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_a_text_turn_writes_the_events_in_format_order() -> None:
    session = harness.Session.create()
    loop, provider = agent(session, [text_reply("Hel", "lo")])
    outcome = run(loop.run_turn("say hello"))
    assert outcome == TurnOutcome(1, {"kind": "completed"})
    assert types(session) == [
        "turn/start", "step/start", "user/message", "request/header", "request/context",
        *["assistant/chunk"] * 6, "assistant/message", "step/end", "turn/end",
    ]  # fmt: skip
    events = session.events
    header = events[3].data
    assert header["reason"] == "initial"
    assert header["header"]["config"] == {"provider": "scripted", "model": "m-1", "maxTokens": 4096}
    assert header["header"]["adapterDefaults"] == {"maxTokens": True}
    assert events[4].data == {"provider": "scripted", "model": "m-1", "contextWindow": 1000}
    message = events[11]
    assert message.source_event_seqs == tuple(range(5, 11))
    assert message.data["message"]["content"] == [{"type": "text", "text": "Hello"}]
    assert message.data["usage"] == {"inputTokens": 10, "outputTokens": 2}
    assert [m.text for m in session.derive_messages()] == ["say hello", "Hello"]
    # the request the provider got is the one the log rebuilds
    assert provider.requests[0].messages == tuple(session.derive_messages()[:1])


def test_every_request_is_rebuilt_from_the_log_prefix_before_its_first_chunk() -> None:
    session = harness.Session.create()
    tool = EchoTool("look")
    loop, provider = agent(
        session, [calls_reply(("c1", "look", '{"a":1}')), text_reply("done")], [tool]
    )
    run(loop.run_turn("look around"))
    starts = [
        event.seq
        for event in session.events
        if event.type == "assistant/chunk" and event.data["chunk"]["type"] == "block-start"
    ]
    assert len(starts) == len(provider.requests) == 2
    for first_chunk, sent in zip(starts, provider.requests, strict=True):
        prefix = harness.Session.from_restore(session.id, list(session.events)[:first_chunk], session.header)
        assert build_request(prefix) == sent


def test_tool_calls_run_and_results_follow_in_the_models_order() -> None:
    session = harness.Session.create()
    slow, fast = EchoTool("slow", delay=0.05), EchoTool("fast")
    loop, _ = agent(
        session,
        [calls_reply(("c1", "slow", '{"n":1}'), ("c2", "fast", '{"n":2}')), text_reply("both done")],
        [slow, fast],
    )
    outcome = run(loop.run_turn("go"))
    assert outcome.kind == "completed"
    calls = [e for e in session.events if e.type == "tool/call"]
    results = [e for e in session.events if e.type == "tool/result"]
    assert [c.data["callId"] for c in calls] == ["c1", "c2"]
    assert [r.data["message"]["source"]["callId"] for r in results] == ["c1", "c2"]
    assert [r.source_event_seqs for r in results] == [(calls[0].seq,), (calls[1].seq,)]
    assert results[0].data["meta"] == {"echo": True}
    assert slow.ran == [{"n": 1}] and fast.ran == [{"n": 2}]
    steps = [e.data["step"] for e in session.events if e.type == "step/start"]
    assert steps == [1, 2]
    harness.Session.from_restore(session.id, list(session.events), session.header)  # it validates


def test_a_world_changing_tool_asks_and_a_headless_run_denies() -> None:
    session = harness.Session.create()
    writer = EchoTool("write", changes_world=True, exclusive=True)
    loop, _ = agent(session, [calls_reply(("c1", "write", "{}")), text_reply("ok")], [writer])
    run(loop.run_turn("write it"))
    assert writer.ran == []
    asked = next(e for e in session.events if e.type == "approval/asked")
    decided = next(e for e in session.events if e.type == "approval/decided")
    assert asked.data["toolName"] == "write" and asked.data["callId"] == "c1"
    assert decided.data == {"id": asked.data["id"], "outcome": "unavailable"}
    result = next(e for e in session.events if e.type == "tool/result")
    assert result.data["error"] == {"name": "ApprovalDenied", "code": "APPROVAL_DENIED"}
    assert types(session).index("tool/call") < types(session).index("approval/asked")
    assert types(session).index("approval/decided") < types(session).index("tool/result")


def test_an_allowed_call_runs_and_policy_never_skips_the_question() -> None:
    session = harness.Session.create()
    writer = EchoTool("write", changes_world=True, exclusive=True)
    seen: list[ApprovalRequest] = []

    class Yes:
        async def decide(self, request: ApprovalRequest) -> Any:
            seen.append(request)
            return "allowed-once"

    replies = [calls_reply(("c1", "write", '{"x":1}')), text_reply("ok")]
    loop, _ = agent(session, replies, [writer], approver=Yes())
    run(loop.run_turn("write it"))
    assert writer.ran == [{"x": 1}] and seen[0].arguments == '{"x":1}'
    session.append("approval/policy", {"policy": "never"})
    loop2, _ = agent(session, [calls_reply(("c2", "write", "{}")), text_reply("ok")], [writer])
    run(loop2.run_turn("again"))
    assert len(writer.ran) == 2
    assert types(session).count("approval/asked") == 1


def test_cancel_mid_stream_saves_the_delivered_prefix_and_aborts() -> None:
    session = harness.Session.create()
    loop, _ = agent(session, ["hang"])

    async def scenario() -> TurnOutcome:
        cancel = asyncio.Event()
        task = asyncio.create_task(loop.run_turn("tell me", cancel=cancel))
        while not any(e.type == "assistant/chunk" for e in session.events):
            await asyncio.sleep(0)
        await asyncio.sleep(0)
        cancel.set()
        return await task

    outcome = run(scenario())
    assert outcome.reason == {"kind": "aborted", "reason": {"kind": "user"}}
    message = next(e for e in session.events if e.type == "assistant/message")
    assert message.data["interrupted"] is True
    assert message.data["message"]["content"] == [{"type": "text", "text": "partial answer"}]
    assert types(session)[-2:] == ["step/end", "turn/end"]


def test_a_provider_failure_ends_the_turn_with_its_failure_and_no_message() -> None:
    session = harness.Session.create()
    loop, _ = agent(session, [error_reply("RATE_LIMIT")])
    outcome = run(loop.run_turn("hi"))
    assert outcome.kind == "error"
    assert outcome.reason["error"]["code"] == "RATE_LIMIT"
    assert "assistant/message" not in types(session)
    assert "assistant/chunk" in types(session)


def test_max_tokens_drops_tool_calls_and_is_sticky() -> None:
    session = harness.Session.create()
    tool = EchoTool("look")
    loop, _ = agent(session, [calls_reply(("c1", "look", "{}"), max_tokens=True)], [tool])
    outcome = run(loop.run_turn("hi"))
    assert outcome.reason == {"kind": "max-tokens"}
    assert tool.ran == [] and "tool/call" not in types(session)
    message = next(e for e in session.events if e.type == "assistant/message")
    assert message.data["message"]["content"] == []


def test_a_failed_checkpoint_stops_the_request() -> None:
    async def scenario() -> tuple[harness.Session, TurnOutcome, ScriptedProvider]:
        backend = FaultyBackend(MemoryBackend())
        store = SessionStore(backend, write_window_s=3600)
        session = await store.create()
        loop, provider = agent(session, [text_reply("never sent")], checkpoint=store.flush)
        backend.fail_next_append(PersistenceFailed("disk full"))
        outcome = await loop.run_turn("hi")
        return session, outcome, provider

    session, outcome, provider = run(scenario())
    assert provider.requests == []
    assert outcome.reason["error"]["code"] == "PERSISTENCE_FAILED"
    assert "assistant/chunk" not in types(session)


def test_cancel_before_dispatch_gives_aborted_results_for_every_call() -> None:
    session = harness.Session.create()
    tool = EchoTool("look")
    cancel = asyncio.Event()

    class CancelOnAsk:
        async def decide(self, request: ApprovalRequest) -> Any:
            cancel.set()
            return "allowed-once"

    writer = EchoTool("write", changes_world=True, exclusive=True)
    loop, _ = agent(
        session,
        [calls_reply(("c1", "write", "{}"), ("c2", "look", "{}"))],
        [writer, tool],
        approver=CancelOnAsk(),
    )
    outcome = run(loop.run_turn("go", cancel=cancel))
    assert outcome.reason["kind"] == "aborted"
    results = [e for e in session.events if e.type == "tool/result"]
    assert [r.data["error"]["code"] for r in results] == ["ABORTED_BEFORE_DISPATCH"] * 2
    assert writer.ran == [] and tool.ran == []


def test_a_new_loop_records_resume_and_a_new_model_records_change() -> None:
    session = harness.Session.create()
    first, _ = agent(session, [text_reply("one")])
    run(first.run_turn("1"))
    second, _ = agent(session, [text_reply("two"), text_reply("three")])
    run(second.run_turn("2"))
    second.settings = AgentSettings(model="m-2")
    run(second.run_turn("3"))
    headers = [e.data["reason"] for e in session.events if e.type == "request/header"]
    assert headers == ["initial", "resume", "change"]
    contexts = [e.data["model"] for e in session.events if e.type == "request/context"]
    assert contexts == ["m-1", "m-2"]
    turns = [e.data["turn"] for e in session.events if e.type == "turn/start"]
    assert turns == [1, 2, 3]


def test_unknown_tools_and_bad_arguments_become_error_results(tmp_path: Path) -> None:
    session = harness.Session.create()
    tool = EchoTool("look")
    loop, _ = agent(
        session,
        [calls_reply(("c1", "nope", "{}"), ("c2", "look", "{not json")), text_reply("ok")],
        [tool],
    )
    run(loop.run_turn("go"))
    codes = [e.data["error"]["code"] for e in session.events if e.type == "tool/result"]
    assert codes == ["UNKNOWN_TOOL", "INVALID_ARGUMENTS"]


def test_duplicate_tool_names_are_refused() -> None:
    with pytest.raises(ValueError, match="two tools"):
        agent(harness.Session.create(), [], [EchoTool("a"), EchoTool("a")])


def test_fixed_approver_answers_the_same() -> None:
    request = ApprovalRequest(id="a", tool_name="t", call_id="c", arguments="{}")
    assert run(FixedApprover("rejected").decide(request)) == "rejected"


def test_each_turn_records_a_workspace_baseline_before_it_starts(tmp_path: Path) -> None:
    session = harness.Session.create()
    provider = ScriptedProvider([text_reply("one"), text_reply("two")])
    loop = Agent(session, provider, [], SETTINGS, workspace=tmp_path)
    run(loop.run_turn("1"))
    run(loop.run_turn("2", context=[harness.user_message("note: a file changed")]))
    baselines = [e for e in session.events if e.type == "workspace/baseline"]
    assert len(baselines) == 2 and all(e.ignorable for e in baselines)
    assert baselines[0].data == {"root": str(tmp_path.resolve()), "git": None}
    assert [session.events[e.seq + 1].type for e in baselines] == ["turn/start", "turn/start"]
    texts = [m.text for m in session.derive_messages() if m.role == "user"]
    assert texts == ["1", "note: a file changed", "2"]
    harness.Session.from_restore(session.id, list(session.events), session.header)


def _long_turns(session: harness.Session, count: int, words: int = 400) -> None:
    loop, _ = agent(session, [text_reply("ok " * words) for _ in range(count)])
    for index in range(count):
        run(loop.run_turn(f"question {index}: " + "detail " * words))


def test_pressure_compacts_automatically_before_a_step() -> None:
    from harness.compaction import ExtractiveSummarizer

    session = harness.Session.create()
    _long_turns(session, 3)
    provider = ScriptedProvider([text_reply("after compaction")], window=2000)
    loop = Agent(
        session, provider, [], SETTINGS, workspace=".", record_baseline=False,
        summarizer=ExtractiveSummarizer(),
    )  # fmt: skip
    outcome = run(loop.run_turn("and now?"))
    assert outcome.kind == "completed"
    kinds = types(session)
    start = kinds.index("compaction/start")
    assert kinds[start - 1] == "turn/start" and kinds[start:start + 4] == [
        "compaction/start", "compaction/summary", "user/message", "compaction/end",
    ]  # fmt: skip
    assert kinds[start + 4] == "step/start"
    assert session.surface.replace_generation == 1
    sent = provider.requests[0].messages
    assert "compacted-summary" in (sent[0].text or "")
    assert sent[-1].text == "and now?"
    restored = harness.Session.from_restore(session.id, list(session.events)[:-1], session.header)
    assert [m.raw for m in restored.derive_messages()] == [m.raw for m in session.derive_messages()]


def test_context_window_exceeded_compacts_and_retries_in_the_same_step() -> None:
    from harness.compaction import ExtractiveSummarizer

    session = harness.Session.create()
    _long_turns(session, 3)
    replies = [error_reply("CONTEXT_WINDOW_EXCEEDED"), text_reply("fits now")]
    provider = ScriptedProvider(replies, window=10**6)
    loop = Agent(
        session, provider, [], SETTINGS, workspace=".", record_baseline=False,
        summarizer=ExtractiveSummarizer(),
    )  # fmt: skip
    outcome = run(loop.run_turn("one more"))
    assert outcome.kind == "completed"
    assert len(provider.requests) == 2
    kinds = types(session)
    last_turn = kinds[len(kinds) - 1 - kinds[::-1].index("turn/start") :]
    assert last_turn.count("step/start") == 1
    assert "compaction/end" in last_turn
    assert len(provider.requests[1].messages) < len(provider.requests[0].messages)


def test_context_window_exceeded_without_a_summarizer_ends_the_turn() -> None:
    session = harness.Session.create()
    loop, _ = agent(session, [error_reply("CONTEXT_WINDOW_EXCEEDED")])
    outcome = run(loop.run_turn("hi"))
    assert outcome.reason["error"]["code"] == "CONTEXT_WINDOW_EXCEEDED"


def test_the_policy_tracker_follows_a_growing_log_like_the_full_scan() -> None:
    from harness.agent.approval import PolicyTracker, policy_in_force

    session = harness.Session.create()
    tracker = PolicyTracker()
    assert tracker.current(session.events) == "ask"
    for policy in ("never", "bogus", "ask", "never"):
        session.append("approval/policy", {"policy": policy})
        session.append("session/title", {"title": "between"})
        assert tracker.current(session.events) == policy_in_force(session.events)
    assert tracker.current(session.events) == "never"
    assert tracker.current(harness.Session.create().events) == "ask"  # another log: starts over

"""Ctrl-C on a real terminal (a pty: the kernel turns the Ctrl-C byte into SIGINT) in
``harness chat``, against the local fake DeepSeek server; and the loop's side of it: a
cancelled or stopped turn always answers its calls and closes its step and its turn."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import harness
from harness.agent.approval import ApprovalRequest
from harness.agent.loop import Agent, AgentSettings
from harness.cli import app
from harness.session.request import build_request
from harness.stores.jsonl.reader import read_log_file
from harness.testing.fake_deepseek import FakeDeepSeek, Reply
from harness.testing.scripted import EchoTool, ScriptedProvider, calls_reply, text_reply
from harness.tools.base import ToolContext, ToolOutcome, ToolSpec
from tests.agent.cli_support import stored
from tests.agent.pty_terminal import CTRL_C, ENTER, Terminal
from tests.agent.test_request_guard import assert_every_call_answered, save

KEY = "sk-test-chat-interrupt-77"
WRITE = ("c1", "write_file", '{"path":"x.txt","content":"no"}')


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    path = tmp_path / "ws"
    path.mkdir()
    return path


def child_env(server: FakeDeepSeek) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    return {**env, "DEEPSEEK_BASE_URL": server.base_url, "DEEPSEEK_API_KEY": KEY}


def chat_args(root: Path, workspace: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "harness", "--store", str(root), "chat", "-w", str(workspace), *extra]


def only_session(root: Path) -> harness.Session:
    (log,) = root.rglob("session.jsonl.zstd")
    return stored(root, read_log_file(str(log)).header.id)


def assert_turn_closed_after_its_call(session: harness.Session, call_id: str) -> None:
    """The call has a decision and a result, and its step and turn are closed, in order."""
    events = list(session.events)
    kinds = [e.type for e in events]
    call = next(i for i, e in enumerate(events) if e.type == "tool/call" and e.data["callId"] == call_id)
    result = next(
        i
        for i, e in enumerate(events)
        if e.type == "tool/result" and e.data["message"]["source"]["callId"] == call_id
    )
    decided = next(e for e in events if e.type == "approval/decided")
    assert decided.data["outcome"] == "cancelled"
    assert result > call
    assert kinds[result + 1 : result + 3] == ["step/end", "turn/end"], kinds
    assert events[result + 2].data["reason"] == {"kind": "aborted", "reason": {"kind": "user"}}


# ---- on a real terminal ------------------------------------------------------------------


def test_double_ctrl_c_at_the_approval_prompt_ends_at_once_and_closes_the_turn(
    tmp_path: Path, workspace: Path
) -> None:
    root = tmp_path / "sessions"
    with (
        FakeDeepSeek([Reply.tool_calls([WRITE])], api_key=KEY) as server,
        Terminal(chat_args(root, workspace), child_env(server)) as term,
    ):
        term.expect(b"you>")
        term.send(b"write x" + ENTER)
        term.expect(b"Allow")
        term.send(CTRL_C)
        time.sleep(0.2)  # two presses, as a hand makes them (one write would be one signal)
        term.send(CTRL_C)
        code = term.wait()  # nothing is typed: no Enter is needed to get out
    assert code in (0, 130), term.text()
    assert not (workspace / "x.txt").exists()
    session = only_session(root)
    assert_turn_closed_after_its_call(session, "c1")

    # Resumed, the request answers the call before the new prompt.
    with FakeDeepSeek([Reply.text("Not writing it.")], api_key=KEY) as server:
        env = child_env(server)
        result = CliRunner().invoke(
            app,
            ["--store", str(root), "resume", session.id, "-w", str(workspace), "--yes", "--json"],
            env=env,
            catch_exceptions=False,
        )
        sent = server.requests
    assert result.exit_code == 0, result.output
    assert len(sent) == 1
    roles = [m["role"] for m in sent[0].messages]
    assert roles == ["system", "user", "assistant", "tool", "user"], roles
    assert_every_call_answered(sent[0].messages)


def test_ctrl_c_at_the_approval_prompt_cancels_the_turn_and_the_chat_goes_on(
    tmp_path: Path, workspace: Path
) -> None:
    root = tmp_path / "sessions"
    script = [Reply.tool_calls([WRITE]), Reply.text("Fine, no file then.")]
    with FakeDeepSeek(script, api_key=KEY) as server:
        with Terminal(chat_args(root, workspace), child_env(server)) as term:
            term.expect(b"you>")
            term.send(b"write x" + ENTER)
            term.expect(b"Allow")
            term.send(CTRL_C)
            term.expect(b"aborted")
            term.expect(b"you>")
            term.send(b"carry on" + ENTER)
            term.expect(b"Fine, no file then.")
            term.expect(b"you>")
            term.send(CTRL_C)  # at the idle prompt: leaves at once
            code = term.wait()
        sent = server.requests
    assert code == 0, term.text()
    assert len(sent) == 2
    assert [m["role"] for m in sent[1].messages] == ["system", "user", "assistant", "tool", "user"]
    assert sent[1].messages[-1]["content"] == "carry on"
    assert_every_call_answered(sent[1].messages)
    session = only_session(root)
    assert_turn_closed_after_its_call(session, "c1")
    ends = [e.data["reason"]["kind"] for e in session.events if e.type == "turn/end"]
    assert ends == ["aborted", "completed"]


def test_ctrl_c_at_the_idle_prompt_leaves_at_once(tmp_path: Path, workspace: Path) -> None:
    root = tmp_path / "sessions"
    with (
        FakeDeepSeek([], api_key=KEY) as server,
        Terminal(chat_args(root, workspace), child_env(server)) as term,
    ):
        term.expect(b"you>")
        term.send(CTRL_C)
        code = term.wait()
        assert server.requests == []
    assert code == 0, term.text()
    assert "session session-" in term.text().split("you>")[-1]


def test_ctrl_c_at_the_blocking_findings_question_stops_resume_at_once(
    tmp_path: Path, workspace: Path
) -> None:
    root = tmp_path / "sessions"
    session = harness.Session.create(harness.SessionHeader.new(cwd=str(workspace)))
    session.append("turn/start", {"turn": 1})
    session.append("step/start", {"turn": 1, "step": 1})
    session.append("user/message", harness.user_message("touch it"), surface_op="append")
    arguments = '{"command":"touch a.txt"}'
    reply = harness.assistant_message(
        [harness.tool_call_block("c1", "run_shell", arguments)], provider="deepseek-official", model="m"
    )
    data = {"turn": 1, "step": 1, "message": reply}
    session.append("assistant/message", data, surface_op="append", source_event_seqs=[])
    call = {"turn": 1, "step": 1, "callId": "c1", "name": "run_shell", "arguments": arguments}
    session.append("tool/call", call)  # started, never finished: its outcome is unknown
    save(root, session)
    args = [sys.executable, "-m", "harness", "--store", str(root), "resume", session.id, "-w", str(workspace)]
    with FakeDeepSeek([], api_key=KEY) as server, Terminal(args, child_env(server)) as term:
        term.expect(b"Continue anyway?")
        term.send(CTRL_C)
        code = term.wait()
        assert server.requests == []
    assert code == 3, term.text()
    assert "blocking" in term.text().split("Continue anyway?")[-1]


# ---- the loop: a cancel, or a stopped task, still closes everything ------------------------

SETTINGS = AgentSettings(model="m-1", system="You are terse.")


class Silent:
    """An approver that never answers (a person who walked away)."""

    def __init__(self) -> None:
        self.asked = asyncio.Event()

    async def decide(self, request: ApprovalRequest) -> Any:
        self.asked.set()
        await asyncio.Event().wait()


class Stubborn:
    """A tool whose body ignores the turn's cancel (it only stops when its task is cancelled)."""

    def __init__(self) -> None:
        self.started = asyncio.Event()

    @property
    def spec(self) -> ToolSpec:
        return ToolSpec("stubborn", "runs until stopped", {"type": "object"})

    changes_world = False
    exclusive = False

    async def run(self, arguments: Any, context: ToolContext) -> ToolOutcome:
        self.started.set()
        await asyncio.Event().wait()
        raise AssertionError("unreachable")


def _agent(session: harness.Session, replies: list[Any], tools: list[Any], **options: Any) -> Agent:
    return Agent(session, ScriptedProvider(replies), tools, SETTINGS, workspace=".", record_baseline=False,
                 **options)


def test_a_cancel_withdraws_an_unanswered_approval_question_at_once() -> None:
    session = harness.Session.create()
    approver = Silent()
    writer = EchoTool("write", changes_world=True, exclusive=True)
    loop = _agent(
        session, [calls_reply(("c1", "write", "{}"), ("c2", "write", "{}"))], [writer], approver=approver
    )

    async def scenario() -> Any:
        cancel = asyncio.Event()
        turn = asyncio.ensure_future(loop.run_turn("go", cancel=cancel))
        await asyncio.wait_for(approver.asked.wait(), 10)
        cancel.set()
        return await asyncio.wait_for(turn, 10)  # the old loop waited for the approver forever

    outcome = asyncio.run(scenario())
    assert outcome.reason == {"kind": "aborted", "reason": {"kind": "user"}}
    assert writer.ran == []
    decided = [e.data["outcome"] for e in session.events if e.type == "approval/decided"]
    assert decided == ["cancelled"]
    codes = [e.data["error"]["code"] for e in session.events if e.type == "tool/result"]
    assert codes == ["APPROVAL_DENIED", "ABORTED_BEFORE_DISPATCH"]
    assert [e.type for e in session.events][-2:] == ["step/end", "turn/end"]


@pytest.mark.parametrize("where", ["approval", "tool"])
def test_a_stopped_turn_task_still_answers_every_call_and_closes_the_turn(where: str) -> None:
    session = harness.Session.create()
    approver, tool = Silent(), Stubborn()
    writer = EchoTool("write", changes_world=True, exclusive=True)
    calls = [("c1", "write", "{}")]
    if where == "tool":
        calls = [("c1", "stubborn", "{}"), ("c2", "stubborn", "{}")]
    loop = _agent(session, [calls_reply(*calls), text_reply("never")], [tool, writer], approver=approver)

    async def scenario() -> None:
        turn = asyncio.ensure_future(loop.run_turn("go"))
        await asyncio.wait_for((tool.started if where == "tool" else approver.asked).wait(), 10)
        turn.cancel()
        with pytest.raises(asyncio.CancelledError):
            await turn

    asyncio.run(scenario())
    events = list(session.events)
    kinds = [e.type for e in events]
    assert kinds[-2:] == ["step/end", "turn/end"], kinds
    assert events[-1].data["reason"] == {"kind": "aborted", "reason": {"kind": "user"}}
    results = {e.data["message"]["source"]["callId"]: e.data for e in events if e.type == "tool/result"}
    assert set(results) == {call[0] for call in calls}
    if where == "tool":
        assert {r["error"]["code"] for r in results.values()} == {"ABORTED"}  # both bodies had started
    else:
        assert [e.data["outcome"] for e in events if e.type == "approval/decided"] == ["cancelled"]
        assert results["c1"]["error"]["code"] == "ABORTED_BEFORE_DISPATCH"
    # and the log is one harness loads and resumes from
    restored = harness.Session.from_restore(session.id, events, session.header)
    header = harness.EpochHeader.build(provider="scripted", model="m-1")
    messages = build_request(restored, header).messages
    assert [m.role for m in messages] == ["user", "assistant", *["user"] * len(calls)]

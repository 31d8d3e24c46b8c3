"""Session builders, scripted summarizers and a scripted provider for the compaction tests."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, TypeVar

import harness
from harness.compaction.summarizer import Summary, SummaryRequest
from harness.events.event import Event, SurfaceOp
from harness.messages.model import TokenUsage
from harness.messages.request import EpochHeader
from harness.messages.stream import StreamChunk
from harness.session.session import Session
from harness.testing.scripted import ScriptedProvider

T = TypeVar("T")

PROVIDER = "deepseek-official"
MODEL = "deepseek-v4-flash"
SYSTEM = "You are a test agent. Keep answers short."
TOOLS: list[dict[str, Any]] = [
    {"name": "read_file", "description": "Read a file.", "parameters": {"type": "object"}},
    {"name": "run_shell", "description": "Run a command.", "parameters": {"type": "object"}},
]


def run(work: Awaitable[T]) -> T:
    """Run one coroutine on a fresh event loop."""

    async def main() -> T:
        return await work

    return asyncio.run(main())


def new_session(session_id: str = "s-test", *, kind: type[Session] = Session) -> Session:
    """An empty session (of class ``kind``) with a deterministic clock."""
    counter = itertools.count(1_000)
    return kind.create({"version": 0, "id": session_id, "createdAt": 1}, clock=lambda: next(counter))


class RefusingSession(Session):
    """A session whose ``append`` raises ``InvalidEvent`` for events ``refuse`` picks."""

    refuse: Callable[[str, Any], bool] | None = None

    def append(
        self,
        type: str,
        data: Any,
        *,
        surface_op: SurfaceOp | Mapping[str, Any] | None = None,
        source_event_seqs: Sequence[int] | None = None,
        ignorable: bool = False,
    ) -> Event:
        if self.refuse is not None and self.refuse(type, data):
            raise harness.InvalidEvent(f"{type} refused for the test")
        return super().append(
            type, data, surface_op=surface_op, source_event_seqs=source_event_seqs, ignorable=ignorable
        )


class Builder:
    """Appends events in loop order. ``turn`` / ``step`` track the open ones."""

    def __init__(self, session: Session | None = None) -> None:
        self.session = session if session is not None else new_session()
        self.turn = 0
        self.step = 0
        self.calls = 0
        self.headed = False

    # ---- turns and steps ------------------------------------------------------------------

    def open(self, prompt: str | None = None) -> Builder:
        """``turn/start``, ``step/start`` and (optionally) the user's message; the first time also
        ``request/header`` + ``request/context``."""
        self.turn += 1
        self.step = 0
        self.session.append("turn/start", {"turn": self.turn})
        self.next_step()
        if prompt is not None:
            self.user(prompt)
        if not self.headed:
            self.header()
        return self

    def header(self, *, system: str = SYSTEM, tools: Sequence[Mapping[str, Any]] = TOOLS) -> Event:
        self.headed = True
        header = EpochHeader.build(
            provider=PROVIDER, model=MODEL, system=system, tools=tools, max_tokens=256000
        )
        event = self.session.append("request/header", {"header": header.to_json(), "reason": "initial"})
        self.session.append(
            "request/context", {"provider": PROVIDER, "model": MODEL, "contextWindow": 1_000_000}
        )
        return event

    def next_step(self) -> Builder:
        if self.step:
            self.session.append("step/end", {"turn": self.turn, "step": self.step})
        self.step += 1
        self.session.append("step/start", {"turn": self.turn, "step": self.step})
        return self

    def close(self) -> Builder:
        """``step/end`` and ``turn/end``."""
        self.session.append("step/end", {"turn": self.turn, "step": self.step})
        self.session.append("turn/end", {"turn": self.turn, "reason": {"kind": "completed"}})
        self.step = 0
        return self

    # ---- surface events -------------------------------------------------------------------

    def user(self, text: str) -> Event:
        return self.session.append("user/message", harness.user_message(text), surface_op="append")

    def say(self, text: str, *, usage: TokenUsage | None = None) -> Event:
        message = harness.assistant_message(text, provider=PROVIDER, model=MODEL)
        data: dict[str, Any] = {"turn": self.turn, "step": self.step, "message": message}
        if usage is not None:
            data["usage"] = usage.to_json()
        return self.session.append("assistant/message", data, surface_op="append", source_event_seqs=[])

    def calls_message(self, names: Sequence[tuple[str, str]]) -> tuple[Event, list[str]]:
        """An assistant message calling ``(name, arguments)`` tools; returns it and the call ids."""
        ids = []
        blocks = []
        for name, arguments in names:
            self.calls += 1
            call_id = f"call-{self.calls}"
            ids.append(call_id)
            blocks.append(harness.tool_call_block(call_id, name, arguments))
        message = harness.assistant_message(blocks, provider=PROVIDER, model=MODEL)
        event = self.session.append(
            "assistant/message",
            {"turn": self.turn, "step": self.step, "message": message},
            surface_op="append",
            source_event_seqs=[],
        )
        return event, ids

    def result(self, call_id: str, name: str, text: str, *, is_error: bool = False) -> Event:
        call = self.session.append(
            "tool/call",
            {"turn": self.turn, "step": self.step, "callId": call_id, "name": name, "arguments": "{}"},
        )
        message = harness.tool_result_message(call_id, text, is_error=is_error)
        return self.session.append(
            "tool/result",
            {"turn": self.turn, "step": self.step, "message": message},
            surface_op="append",
            source_event_seqs=[call.seq],
        )

    def tool(self, name: str, arguments: str, output: str, *, is_error: bool = False) -> Builder:
        """One tool round trip in its own step: call message, ``tool/call``, ``tool/result``."""
        _, ids = self.calls_message([(name, arguments)])
        self.result(ids[0], name, output, is_error=is_error)
        self.next_step()
        return self

    def closed_turn(self, prompt: str, answer: str, *, tools: int = 0, output: str = "ok") -> Builder:
        """A whole turn: prompt, ``tools`` tool round trips, the answer."""
        self.open(prompt)
        for index in range(tools):
            self.tool("run_shell", f'{{"command": "step {index}"}}', f"{output} {index}")
        self.say(answer)
        return self.close()


def long_session(turns: int = 4, *, words: int = 60, session: Session | None = None) -> Builder:
    """Closed turns with long enough text that compaction always shrinks them."""
    builder = Builder(session)
    for index in range(turns):
        builder.closed_turn(
            f"Request {index}: " + "please look at the numbers again " * (words // 6),
            f"Answer {index}: " + "the numbers look fine to me now " * (words // 6),
            tools=1,
            output="output line " * words,
        )
    return builder


# ---- summarizers -------------------------------------------------------------------------


class FixedSummarizer:
    """Returns ``text``; records every request."""

    def __init__(self, text: str = "## Primary Request and Intent\n- short summary") -> None:
        self.text = text
        self.requests: list[SummaryRequest] = []

    async def summarize(self, request: SummaryRequest) -> Summary:
        self.requests.append(request)
        return Summary(texts=(self.text,), provider="test", model="fixed")


class FailingSummarizer:
    """Raises ``error``."""

    def __init__(self, error: BaseException) -> None:
        self.error = error

    async def summarize(self, request: SummaryRequest) -> Summary:
        raise self.error


class HookSummarizer:
    """Calls ``hook(session)`` while "summarizing", then returns a short summary."""

    def __init__(self, hook: Callable[[Session], object]) -> None:
        self.hook = hook

    async def summarize(self, request: SummaryRequest) -> Summary:
        await asyncio.sleep(0)
        self.hook(request.session)
        return Summary(texts=("short",), provider="test", model="hook")


class BlockingSummarizer:
    """Waits until released (or forever); ``started`` is set once it runs."""

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.release = asyncio.Event()
        self.cancelled = False

    async def summarize(self, request: SummaryRequest) -> Summary:
        self.started.set()
        try:
            await self.release.wait()
        except asyncio.CancelledError:
            self.cancelled = True
            raise
        return Summary(texts=("released",), provider="test", model="blocking")


class Flushes:
    """A ``checkpoint`` callable that records the log length at each call (and can fail)."""

    def __init__(self, fail_at: set[int] | None = None) -> None:
        self.lengths: list[int] = []
        self.fail_at = fail_at or set()

    async def __call__(self, session: Session) -> None:
        self.lengths.append(len(session.events))
        if len(self.lengths) in self.fail_at:
            raise OSError("disk full")


# ---- a scripted provider -------------------------------------------------------------------


def scripted(*replies: Sequence[StreamChunk], route: str = PROVIDER) -> ScriptedProvider:
    """``harness.testing``'s provider as the summarizer tests use it: headers sent as given."""
    return ScriptedProvider(list(replies), route=route, window=1_000_000, default_max_tokens=None)


def types_after(session: Session, seq: int) -> list[str]:
    """The types of the events after ``seq``."""
    return [event.type for event in session.events[seq + 1 :]]


def compaction_events(session: Session) -> list[Event]:
    return [e for e in session.events if e.type.startswith("compaction/")]

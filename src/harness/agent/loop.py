"""``Agent``: runs turns over a Session, a Provider and tools, writing every fact (SPEC §6).

The event order of a turn (FORMAT §4)::

    turn/start, step/start, user/message (first step), request/header?, request/context?,
    assistant/chunk*, assistant/message, (tool/call, approval/asked?, approval/decided?,
    tool/result)*, step/end, … next step …, turn/end

Durability checkpoints (FORMAT §10), fail-closed: the session is flushed before every
model request and before every tool body; when that flush fails, the request or the tool
does not run and the turn ends ``error`` with code ``PERSISTENCE_FAILED``.

Cancel (``cancel`` event, or ``Agent.cancel()``): the provider stops, the delivered text
and reasoning are saved as an ``interrupted`` assistant message, calls not yet started
get ``ABORTED_BEFORE_DISPATCH`` results, and the turn ends ``aborted``. A provider failure
ends the turn ``error`` with the provider's ``LlmFailure``; its chunks stay in the log,
no message is written for the failed attempt. When the provider is a ``RetryingProvider``
and its policy retries the failure, the step goes on instead: ``llm/retry`` (durable), the
wait, ``llm/retry-started``, the request again (``harness.agent.retries``).
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import msgspec

from harness.agent.approval import ApprovalRequest, Approver, FixedApprover, PolicyTracker
from harness.agent.assembly import StreamAssembly
from harness.agent.retries import RetryRunner, Sleep
from harness.compaction import (
    CompactionPolicy,
    OverflowRecovery,
    Summarizer,
    compact_if_needed,
)
from harness.errors import CompactionCancelled, InvalidMessage
from harness.events.event import Event
from harness.events.json import loads
from harness.messages.model import (
    LlmFailure,
    assistant_message,
    check_sendable,
    tool_result_message,
    user_message,
)
from harness.messages.records import (
    assistant_record,
    chunk_record,
    step_bound,
    tool_call_record,
    tool_result_record,
    turn_end,
    turn_start,
)
from harness.messages.request import EpochHeader, classify_request_header
from harness.messages.stream import (
    Finish,
    FinishAborted,
    FinishError,
    FinishMaxTokens,
    FinishReason,
    StreamChunk,
)
from harness.providers.base import Provider, RetryingProvider
from harness.query.line import SessionReader
from harness.recovery import WORKSPACE_BASELINE, capture_baseline
from harness.session.request import build_request, fold_request_header
from harness.session.session import Session
from harness.tools.base import Tool, ToolContext, ToolError, ToolOutcome

__all__ = ["Agent", "AgentSettings", "TurnOutcome"]

logger = logging.getLogger("harness.agent")

Checkpoint = Callable[[Session], Awaitable[None]]

ABORTED_BEFORE_DISPATCH_TEXT = "Not run: the turn was cancelled before this call started."
ABORTED_WHILE_RUNNING_TEXT = (
    "Stopped while running: the turn was cancelled. The call may have had some of its effects; "
    "check before repeating it."
)
APPROVAL_DENIED_TEXT = "Not run: approval was not given for this call (outcome: {outcome})."


class AgentSettings(msgspec.Struct, frozen=True, kw_only=True):
    """What the loop asks the model for. Unset optionals are left to the provider."""

    model: str
    system: str | None = None
    reasoning_effort: str | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    max_steps: int = 64
    parallel_tools: int = 4


class TurnOutcome(msgspec.Struct, frozen=True):
    """How a turn ended: its number and its ``turn/end`` reason JSON."""

    turn: int
    reason: dict[str, Any]

    @property
    def kind(self) -> str:
        return str(self.reason.get("kind"))


class _TurnEnded(Exception):
    def __init__(self, reason: dict[str, Any]) -> None:
        super().__init__(reason.get("kind"))
        self.reason = reason


class Agent:
    """Runs turns on ``session``. ``checkpoint`` makes the session durable (usually
    ``store.flush``); without one, nothing is flushed (an in-memory run). ``retry_sleep``
    replaces ``asyncio.sleep`` for the waits between model-request retries (tests).
    ``sessions`` is a read-only handle on the store (``harness.query.StoreReader``) that the
    tools get in their context: ``session_search`` reaches the session's fork ancestors
    through it."""

    def __init__(
        self,
        session: Session,
        provider: Provider,
        tools: Sequence[Tool],
        settings: AgentSettings,
        *,
        workspace: str | Path,
        checkpoint: Checkpoint | None = None,
        approver: Approver | None = None,
        record_baseline: bool = True,
        summarizer: Summarizer | None = None,
        compaction: CompactionPolicy | None = None,
        retry_sleep: Sleep | None = None,
        sessions: SessionReader | None = None,
    ) -> None:
        self.session = session
        self.sessions = sessions
        self.provider = provider
        self.settings = settings
        self.workspace = Path(workspace)
        self._tools: dict[str, Tool] = {}
        for tool in tools:
            if tool.spec.name in self._tools:
                raise ValueError(f"two tools are named {tool.spec.name!r}")
            self._tools[tool.spec.name] = tool
        self._checkpoint = checkpoint
        self._approver: Approver = approver or FixedApprover("unavailable")
        self._first_request = True
        self._cancel: asyncio.Event | None = None
        self.record_baseline = record_baseline
        self._policy = PolicyTracker()
        self.summarizer = summarizer
        self.compaction = compaction or CompactionPolicy()
        self._overflow = OverflowRecovery(self.compaction)
        # A provider that lets us run its retries gets them run here, each one recorded.
        self._retries = (
            RetryRunner(provider.retry_policy, sleep=retry_sleep)
            if isinstance(provider, RetryingProvider)
            else None
        )

    # ---- public ---------------------------------------------------------------------

    def cancel(self) -> None:
        """Cancel the running turn (it ends ``aborted``)."""
        if self._cancel is not None:
            self._cancel.set()

    def header(self) -> EpochHeader:
        """The request header this agent sends now (materialized by the provider)."""
        settings = self.settings
        return self.provider.materialize(
            EpochHeader.build(
                provider=self.provider.route,
                model=settings.model,
                system=settings.system,
                tools=[tool.spec.to_json() for tool in self._tools.values()],
                reasoning_effort=settings.reasoning_effort,
                temperature=settings.temperature,
                max_tokens=settings.max_tokens,
            )
        )

    async def run_turn(
        self,
        prompt: str | Mapping[str, Any],
        *,
        cancel: asyncio.Event | None = None,
        context: Sequence[Mapping[str, Any]] = (),
    ) -> TurnOutcome:
        """Run one turn for ``prompt`` (text, or a user message JSON) to its ``turn/end``.

        ``context``: user messages the model reads just before the prompt (a resume passes
        the note of what changed in the workspace). Right before ``turn/start`` a log-only
        ``workspace/baseline`` event records the workspace state for cold recovery.

        Raises ``InvalidMessage``, with nothing appended, for an empty prompt or one holding
        text that is not valid UTF-8. Cancelling the task running the turn still closes it
        (every call answered, the step and the turn ended ``aborted``), then re-raises.
        """
        session = self.session
        # Refused before anything is appended: a prompt a model cannot be sent.
        messages = [*context, _user_message(prompt)]
        cancel = cancel or asyncio.Event()
        self._cancel = cancel
        turn = _next_turn(session.events)
        if self.record_baseline:  # log-only, so it sits between turns
            # git runs in a worker thread; the append happens here, on the loop's thread
            # (sessions and their observers are not thread-safe).
            baseline = await asyncio.to_thread(capture_baseline, self.workspace)
            session.append(WORKSPACE_BASELINE, baseline, ignorable=True)
        session.append("turn/start", turn_start(turn))
        stopped: asyncio.CancelledError | None = None
        try:
            reason = await self._steps(turn, messages, cancel)
        except _TurnEnded as ended:
            reason = ended.reason
        except asyncio.CancelledError as error:  # the task was cancelled: still close the turn
            reason, stopped = dict(_ABORTED_BY_USER), error
        except Exception as error:  # a bug below must still close the turn
            logger.exception("turn %d of session %s failed", turn, session.id)
            reason = _error_reason(f"{type(error).__name__}: {error}", "UNKNOWN")
        finally:
            self._cancel = None
        session.append("turn/end", turn_end(turn, reason))
        if stopped is not None:
            raise stopped
        return TurnOutcome(turn, reason)

    # ---- steps ----------------------------------------------------------------------

    async def _steps(
        self, turn: int, messages: Sequence[Mapping[str, Any]], cancel: asyncio.Event
    ) -> dict[str, Any]:
        session = self.session
        truncated = False
        for step in range(1, self.settings.max_steps + 1):
            await self._pre_step(cancel)
            session.append("step/start", step_bound(turn, step))
            try:
                if step == 1:
                    for message in messages:
                        session.append("user/message", message, surface_op="append")
                calls, finish = await self._request(turn, step, cancel)
                if isinstance(finish, FinishMaxTokens):
                    truncated = True
                if calls:
                    await self._run_calls(turn, step, calls, cancel)
                if cancel.is_set():
                    raise _TurnEnded({"kind": "aborted", "reason": {"kind": "user"}})
            finally:
                session.append("step/end", step_bound(turn, step))
            if not calls:
                return {"kind": "max-tokens"} if truncated else {"kind": "completed"}
        return _error_reason(f"the turn reached its limit of {self.settings.max_steps} steps", "MAX_STEPS")

    async def _pre_step(self, cancel: asyncio.Event) -> None:
        """Automatic compaction at the pressure threshold (FORMAT §11), before a step starts."""
        if self.summarizer is None or not self.compaction.auto or cancel.is_set():
            return
        header = fold_request_header(self.session.events)
        window = self.provider.context_window(header.model) if header is not None else None
        try:
            outcome = await compact_if_needed(
                self.session,
                self.summarizer,
                context_window=window,
                policy=self.compaction,
                checkpoint=self._checkpoint,
                cancel=cancel,
            )
        except CompactionCancelled:
            raise _TurnEnded({"kind": "aborted", "reason": {"kind": "user"}}) from None
        if outcome.error is not None:
            logger.warning("session %s: automatic compaction failed: %s", self.session.id, outcome.error)

    async def _durable(self) -> None:
        if self._checkpoint is None:
            return
        try:
            await self._checkpoint(self.session)
        except Exception as error:
            raise _TurnEnded(
                _error_reason(f"the session could not be made durable: {error}", "PERSISTENCE_FAILED")
            ) from error

    def _record_header(self) -> None:
        session = self.session
        current = self.header()
        previous = fold_request_header(session.events)
        reason = classify_request_header(previous, current, first_request_of_loop=self._first_request)
        if reason is not None:
            session.append("request/header", {"header": current.to_json(), "reason": reason})
        context: dict[str, Any] = {"provider": current.provider, "model": current.model}
        window = self.provider.context_window(current.model)
        if window is not None:
            context["contextWindow"] = window
        if _last_context(session.events) != context:
            session.append("request/context", context)

    async def _request(
        self, turn: int, step: int, cancel: asyncio.Event
    ) -> tuple[list[dict[str, Any]], FinishReason]:
        """One model request: header, checkpoint, stream, message. Returns the tool calls."""
        session = self.session
        while True:
            assembly, seqs = await self._attempt(turn, step, cancel)
            finish = assembly.finish
            if finish is None:
                message = "the provider's stream ended without a finish"
                failure = LlmFailure(message=message, code="STREAM_CLOSED")
                raise _TurnEnded({"kind": "error", "error": dict(failure.to_json())})
            if not isinstance(finish, FinishError):
                break
            if finish.failure.code == "CONTEXT_WINDOW_EXCEEDED" and await self._recover_overflow(cancel):
                continue  # compacted: send the request again, in the same step
            if await self._retry(turn, step, finish.failure, cancel):
                continue  # waited out llm/retry: send the request again, in the same step
            raise _TurnEnded({"kind": "error", "error": dict(finish.failure.to_json())})
        header = fold_request_header(session.events)
        assert header is not None
        if isinstance(finish, FinishAborted):
            content = assembly.content(interrupted=True)
            if content:
                self._message(turn, step, header, content, assembly, seqs, interrupted=True)
            raise _TurnEnded({"kind": "aborted", "reason": {"kind": "user"}})
        content = assembly.content(max_tokens=isinstance(finish, FinishMaxTokens))
        self._message(turn, step, header, content, assembly, seqs)
        return [block for block in content if block.get("type") == "tool-call"], finish

    async def _attempt(
        self, turn: int, step: int, cancel: asyncio.Event
    ) -> tuple[StreamAssembly, list[int]]:
        """Record the header, make the session durable, send the request, log each chunk."""
        self._record_header()
        await self._durable()
        if cancel.is_set():
            raise _TurnEnded({"kind": "aborted", "reason": {"kind": "user"}})
        options = build_request(self.session)
        self._first_request = False
        assembly = StreamAssembly()
        seqs: list[int] = []
        if self._retries is not None:  # one attempt: the retries are ours (see _retry)
            assert isinstance(self.provider, RetryingProvider)
            stream = self.provider.stream(options, cancel=cancel, retry=False)
        else:
            stream = self.provider.stream(options, cancel=cancel)
        try:
            async for chunk in stream:
                seqs.append(self._chunk(turn, step, chunk).seq)
                assembly.feed(chunk)
                if isinstance(chunk, Finish):
                    break
        except Exception as error:  # the provider broke its contract: still a failed attempt
            logger.exception("provider %s raised instead of finishing", self.provider.route)
            failure = LlmFailure(message=f"{type(error).__name__}: {error}", code="UNKNOWN")
            raise _TurnEnded({"kind": "error", "error": dict(failure.to_json())}) from error
        return assembly, seqs

    async def _retry(self, turn: int, step: int, failure: LlmFailure, cancel: asyncio.Event) -> bool:
        """After a failed attempt: ``llm/retry`` (durable), the wait, ``llm/retry-started``;
        ``True`` to send again. A cancel during the wait ends the turn ``aborted``."""
        if self._retries is None:
            return False
        waited = await self._retries.retry(
            self.session, turn, step, failure, cancel=cancel, durable=self._durable
        )
        if waited is None:
            raise _TurnEnded({"kind": "aborted", "reason": {"kind": "user"}})
        return waited

    async def _recover_overflow(self, cancel: asyncio.Event) -> bool:
        """After ``CONTEXT_WINDOW_EXCEEDED``: compact (or prune) and say whether to retry."""
        if self.summarizer is None:
            return False
        try:
            outcome = await self._overflow.recover(
                self.session,
                "CONTEXT_WINDOW_EXCEEDED",
                self.summarizer,
                checkpoint=self._checkpoint,
                cancel=cancel,
            )
        except CompactionCancelled:
            raise _TurnEnded({"kind": "aborted", "reason": {"kind": "user"}}) from None
        return bool(outcome.retry)

    def _chunk(self, turn: int, step: int, chunk: StreamChunk) -> Event:
        return self.session.append("assistant/chunk", chunk_record(turn, step, chunk.to_json()))

    def _message(
        self,
        turn: int,
        step: int,
        header: EpochHeader,
        content: list[dict[str, Any]],
        assembly: StreamAssembly,
        seqs: list[int],
        *,
        interrupted: bool = False,
    ) -> None:
        message = assistant_message(content, provider=header.provider, model=header.model)
        usage = assembly.usage.to_json() if assembly.usage is not None else None
        data = assistant_record(turn, step, message, usage=usage, interrupted=interrupted)
        self.session.append("assistant/message", data, surface_op="append", source_event_seqs=seqs)

    # ---- tools ----------------------------------------------------------------------

    async def _run_calls(
        self, turn: int, step: int, calls: list[dict[str, Any]], cancel: asyncio.Event
    ) -> None:
        """Dispatch the step's calls: exclusive ones alone, parallel-safe neighbours together;
        results are committed in the model's order."""
        for group in _groups(calls, self._tools):
            await self._run_group(turn, step, group, cancel)

    async def _run_group(
        self, turn: int, step: int, group: list[dict[str, Any]], cancel: asyncio.Event
    ) -> None:
        session = self.session
        call_seqs: list[int] = []
        for call in group:
            data = tool_call_record(turn, step, call["id"], call["name"], call["arguments"])
            event = session.append("tool/call", data)
            call_seqs.append(event.seq)
        outcomes: dict[int, tuple[ToolOutcome, dict[str, str] | None]] = {}
        started: set[int] = set()
        try:
            await self._prepare_and_run(group, outcomes, started, cancel)
        except BaseException:
            # Cancelled (or a bug) mid-group: every call still gets its result, or the next
            # request would carry calls with no reply. Bodies that started are cut short.
            cut_short = ToolOutcome(ABORTED_WHILE_RUNNING_TEXT, is_error=True)
            for position in started - outcomes.keys():
                outcomes[position] = (cut_short, _ABORTED_RUNNING)
            self._commit_results(turn, step, group, call_seqs, outcomes)
            raise
        self._commit_results(turn, step, group, call_seqs, outcomes)

    async def _prepare_and_run(
        self,
        group: list[dict[str, Any]],
        outcomes: dict[int, tuple[ToolOutcome, dict[str, str] | None]],
        started: set[int],
        cancel: asyncio.Event,
    ) -> None:
        """Ask and run the group's calls, filling ``outcomes`` (and ``started`` as bodies start)."""
        runnable: list[tuple[int, Tool, dict[str, Any]]] = []
        for position, call in enumerate(group):
            prepared = await self._prepare(call, cancel)
            if isinstance(prepared, tuple):
                outcomes[position] = prepared
            else:
                runnable.append((position, prepared, call))
        if runnable:
            try:
                await self._durable()
            except _TurnEnded:
                for position, _, _ in runnable:
                    outcomes[position] = (
                        ToolOutcome("Not run: the session could not be made durable first.", is_error=True),
                        {"name": "PersistenceError", "code": "PERSISTENCE_FAILED"},
                    )
                raise
            limit = asyncio.Semaphore(max(1, self.settings.parallel_tools))

            async def run_one(position: int, tool: Tool, call: dict[str, Any]) -> None:
                async with limit:
                    started.add(position)
                    outcomes[position] = await self._run_tool(tool, call, cancel)

            await asyncio.gather(*(run_one(position, tool, call) for position, tool, call in runnable))

    def _commit_results(
        self,
        turn: int,
        step: int,
        group: list[dict[str, Any]],
        call_seqs: list[int],
        outcomes: Mapping[int, tuple[ToolOutcome, dict[str, str] | None]],
    ) -> None:
        for position, call in enumerate(group):
            outcome, error = outcomes.get(
                position,
                (ToolOutcome(ABORTED_BEFORE_DISPATCH_TEXT, is_error=True), _ABORTED),
            )
            message = tool_result_message(call["id"], outcome.text, is_error=outcome.is_error)
            data = tool_result_record(turn, step, message, error=error, meta=outcome.meta)
            self.session.append(
                "tool/result", data, surface_op="append", source_event_seqs=[call_seqs[position]]
            )

    async def _prepare(
        self, call: dict[str, Any], cancel: asyncio.Event
    ) -> Tool | tuple[ToolOutcome, dict[str, str] | None]:
        """The tool to run for ``call``, or the result that stands for it (unknown tool,
        cancelled, approval not given)."""
        if cancel.is_set():
            return ToolOutcome(ABORTED_BEFORE_DISPATCH_TEXT, is_error=True), _ABORTED
        tool = self._tools.get(call["name"])
        if tool is None:
            known = ", ".join(sorted(self._tools)) or "none"
            text = f"There is no tool named {call['name']!r} (tools: {known})."
            return ToolOutcome(text, is_error=True), {"name": "ToolError", "code": "UNKNOWN_TOOL"}
        if tool.changes_world and self._policy.current(self.session.events) == "ask":
            outcome = await self._ask(tool, call, cancel)
            if outcome != "allowed-once":
                text = APPROVAL_DENIED_TEXT.format(outcome=outcome)
                return ToolOutcome(text, is_error=True), {"name": "ApprovalDenied", "code": "APPROVAL_DENIED"}
            if cancel.is_set():
                return ToolOutcome(ABORTED_BEFORE_DISPATCH_TEXT, is_error=True), _ABORTED
        return tool

    async def _ask(self, tool: Tool, call: dict[str, Any], cancel: asyncio.Event) -> str:
        """Ask the approver; a cancel of the turn stops the question at once (``cancelled``)."""
        session = self.session
        request = ApprovalRequest(
            id=f"approval-{secrets.token_hex(8)}",
            tool_name=tool.spec.name,
            call_id=call["id"],
            arguments=call["arguments"],
        )
        session.append(
            "approval/asked", {"id": request.id, "toolName": request.tool_name, "callId": request.call_id}
        )
        deciding = asyncio.ensure_future(self._approver.decide(request))
        cancelled = asyncio.ensure_future(cancel.wait())
        try:
            await asyncio.wait((deciding, cancelled), return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            deciding.cancel()
            session.append("approval/decided", {"id": request.id, "outcome": "cancelled"})
            raise
        finally:
            cancelled.cancel()
        outcome: str
        if not deciding.done():  # the turn was cancelled first: the question is withdrawn
            deciding.cancel()
            outcome = "cancelled"
        elif deciding.cancelled():
            outcome = "cancelled"
        elif (error := deciding.exception()) is not None:
            logger.warning("approver failed on %s: %s", request.id, error)
            outcome = "unavailable"
        else:
            outcome = deciding.result()
        if outcome not in ("allowed-once", "rejected", "cancelled", "unavailable"):
            outcome = "unavailable"
        session.append("approval/decided", {"id": request.id, "outcome": outcome})
        return outcome

    def _record(self, kind: str, data: Mapping[str, Any]) -> None:
        self.session.append(kind, data)

    async def _run_tool(
        self, tool: Tool, call: dict[str, Any], cancel: asyncio.Event
    ) -> tuple[ToolOutcome, dict[str, str] | None]:
        if cancel.is_set():
            return ToolOutcome(ABORTED_BEFORE_DISPATCH_TEXT, is_error=True), _ABORTED
        try:
            arguments = loads(call["arguments"] or "{}")
        except ValueError as error:
            text = f"The arguments are not valid JSON: {error}"
            return ToolOutcome(text, is_error=True), {"name": "ToolError", "code": "INVALID_ARGUMENTS"}
        if not isinstance(arguments, dict):
            text = "The arguments must be a JSON object."
            return ToolOutcome(text, is_error=True), {"name": "ToolError", "code": "INVALID_ARGUMENTS"}
        context = ToolContext(
            self.workspace,
            call_id=call["id"],
            cancel=cancel,
            record=self._record,
            events=self.session.events,
            header=self.session.header,
            sessions=self.sessions,
        )
        try:
            return await tool.run(arguments, context), None
        except ToolError as error:
            outcome = ToolOutcome(error.message, is_error=True, meta=error.meta)
            return outcome, {"name": "ToolError", "code": error.code}
        except Exception as error:
            logger.exception("tool %s crashed", tool.spec.name)
            text = f"The tool failed unexpectedly: {type(error).__name__}: {error}"
            return ToolOutcome(text, is_error=True), {"name": type(error).__name__, "code": "TOOL_CRASHED"}


_ABORTED: dict[str, str] = {"name": "AbortError", "code": "ABORTED_BEFORE_DISPATCH"}
_ABORTED_RUNNING: dict[str, str] = {"name": "AbortError", "code": "ABORTED"}
_ABORTED_BY_USER: dict[str, Any] = {"kind": "aborted", "reason": {"kind": "user"}}


def _error_reason(message: str, code: str) -> dict[str, Any]:
    return {"kind": "error", "error": {"message": message, "code": code}}


def _user_message(prompt: str | Mapping[str, Any]) -> Mapping[str, Any]:
    if isinstance(prompt, str):
        if not prompt.strip():
            raise InvalidMessage("the prompt is empty: say what the agent should do", path="prompt")
        return user_message(prompt)
    check_sendable(prompt.get("content"), "prompt.content")
    return prompt


def _next_turn(events: Sequence[Event]) -> int:
    for index in range(len(events) - 1, -1, -1):
        event = events[index]
        if event.type in ("turn/start", "turn/end"):
            data = event.data
            number = data.get("turn") if isinstance(data, Mapping) else None
            if type(number) is int:
                return number + 1
    return 1


def _last_context(events: Sequence[Event]) -> Mapping[str, Any] | None:
    for index in range(len(events) - 1, -1, -1):
        if events[index].type == "request/context":
            data = events[index].data
            return data if isinstance(data, Mapping) else None
    return None


def _groups(calls: list[dict[str, Any]], tools: Mapping[str, Tool]) -> list[list[dict[str, Any]]]:
    """Runs of parallel-safe calls together; every exclusive (or unknown) call alone."""
    groups: list[list[dict[str, Any]]] = []
    previous_parallel = False
    for call in calls:
        tool = tools.get(call["name"])
        parallel = tool is not None and not tool.exclusive
        if parallel and previous_parallel:
            groups[-1].append(call)
        else:
            groups.append([call])
        previous_parallel = parallel
    return groups

"""What the log says about the outside world, read in one pass (``read_history``).

Nothing here touches the world: it only collects the recorded facts the checks compare
with it. Malformed data is skipped, never raised: a check must work on any loadable log.
Only the event types it needs are decoded.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.events.event import Event
from harness.messages.request import EpochHeader
from harness.recovery.baseline import Baseline, read_baseline
from harness.recovery.vocabulary import WORKSPACE_BASELINE
from harness.tools.mcp.records import MCP_CONNECT, McpServerState, read_connect
from harness.tools.records import background_pids, file_accesses

__all__ = [
    "Approval",
    "BackgroundProcess",
    "CallRecord",
    "Compaction",
    "FileRecord",
    "History",
    "ShellRun",
    "UnfinishedCall",
    "read_history",
]

UNKNOWN_OUTCOME_CODES = ("TOOL_OUTCOME_UNKNOWN", "TOOL_NOT_STARTED")

_WANTED = frozenset(
    {
        "turn/start",
        "turn/end",
        "assistant/message",
        "tool/call",
        "tool/result",
        "approval/asked",
        "approval/decided",
        "compaction/start",
        "compaction/summary",
        "compaction/end",
        "request/header",
        "request/context",
        "session/end-seed",
        WORKSPACE_BASELINE,
        MCP_CONNECT,
    }
)


@dataclass(frozen=True, slots=True)
class CallRecord:
    """A tool call: its id, tool name and arguments; ``seq`` of its ``tool/call`` event
    (None when only the model's message names it: it was never started)."""

    call_id: str
    name: str
    arguments: str
    seq: int | None


@dataclass(frozen=True, slots=True)
class FileRecord:
    """The last recorded state of one workspace file (from ``tool/result`` meta)."""

    path: str
    sha256: str | None
    access: str
    seq: int
    tool: str | None


@dataclass(frozen=True, slots=True)
class UnfinishedCall:
    """A repair result (``TOOL_OUTCOME_UNKNOWN`` or ``TOOL_NOT_STARTED``) and its call."""

    call_id: str
    code: str
    result_seq: int
    call: CallRecord | None


@dataclass(slots=True)
class Approval:
    """An ``approval/asked`` and, when there is one, its decision."""

    id: str
    tool_name: str | None
    call_id: str | None
    asked_seq: int
    outcome: str | None = None
    decided_seq: int | None = None


@dataclass(slots=True)
class Compaction:
    """A ``compaction/start`` and what followed it with the same id."""

    id: str
    start_seq: int
    turn: int | None
    summary_seq: int | None = None
    end_seq: int | None = None


@dataclass(frozen=True, slots=True)
class BackgroundProcess:
    """A pid a ``run_shell`` result says was left running, with the recording event."""

    pid: int
    command: str | None
    result_seq: int
    result_time: int
    call_id: str | None


@dataclass(frozen=True, slots=True)
class ShellRun:
    """A ``run_shell`` result: the command, where it ran, the text the model read."""

    command: str
    cwd: str | None
    output: str
    result_seq: int
    call_id: str | None


@dataclass(slots=True)
class History:
    """The recorded facts (see the module doc)."""

    length: int = 0
    files: dict[str, FileRecord] = field(default_factory=dict)
    calls: dict[str, CallRecord] = field(default_factory=dict)
    tool_calls: dict[str, list[int]] = field(default_factory=dict)
    baseline: Baseline | None = None
    header: EpochHeader | None = None
    header_seq: int | None = None
    context: Mapping[str, Any] | None = None
    context_seq: int | None = None
    turn_starts: list[int] = field(default_factory=list)
    settled: int = -1
    end_seeds: list[int] = field(default_factory=list)
    repaired: list[UnfinishedCall] = field(default_factory=list)
    approvals: dict[str, Approval] = field(default_factory=dict)
    compactions: dict[str, Compaction] = field(default_factory=dict)
    background: dict[int, BackgroundProcess] = field(default_factory=dict)
    mcp: dict[str, McpServerState] = field(default_factory=dict)
    mcp_tools: dict[str, tuple[str, str]] = field(default_factory=dict)
    shell_runs: list[ShellRun] = field(default_factory=list)

    @property
    def last_turn_start(self) -> int | None:
        """Seq of the last ``turn/start`` (None before the first turn)."""
        return self.turn_starts[-1] if self.turn_starts else None

    @property
    def last_end_seed(self) -> int | None:
        """Seq of the last ``session/end-seed`` (None for a log never restored)."""
        return self.end_seeds[-1] if self.end_seeds else None

    def unsettled(self, seq: int) -> bool:
        """True when ``seq`` lies after the last turn that ended on its own terms (a
        ``turn/end`` whose reason is not ``interrupted``). Crash repair only closes the
        last turn; a resumed turn that crashed again keeps the earlier one unsettled."""
        return seq > self.settled

    def unfinished(self) -> list[UnfinishedCall]:
        """Repair results of the unsettled turns, in log order."""
        return [item for item in self.repaired if self.unsettled(item.result_seq)]

    def pending_approvals(self) -> list[Approval]:
        """Approvals of the unsettled turns that were asked and never decided."""
        return [
            item
            for item in self.approvals.values()
            if item.outcome is None and self.unsettled(item.asked_seq)
        ]

    def tool_calls_after(self, name: str, seq: int) -> list[int]:
        """Seqs of ``tool/call`` events for ``name`` later than ``seq``."""
        return [call for call in self.tool_calls.get(name, ()) if call > seq]


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _int(value: Any) -> int | None:
    return value if type(value) is int else None


def read_history(events: Sequence[Event]) -> History:
    """Collect the recorded facts of ``events`` (see the module doc)."""
    history = History(length=len(events))
    for event in events:
        kind = event.type
        if kind not in _WANTED:
            continue
        data = event.data
        if not isinstance(data, Mapping):
            continue
        _READERS[kind](history, event, data)
    return history


def _turn_start(history: History, event: Event, data: Mapping[str, Any]) -> None:
    history.turn_starts.append(event.seq)


def _turn_end(history: History, event: Event, data: Mapping[str, Any]) -> None:
    reason = data.get("reason")
    if not (isinstance(reason, Mapping) and reason.get("kind") == "interrupted"):
        history.settled = event.seq


def _end_seed(history: History, event: Event, data: Mapping[str, Any]) -> None:
    history.end_seeds.append(event.seq)


def _baseline(history: History, event: Event, data: Mapping[str, Any]) -> None:
    history.baseline = read_baseline(event.seq, data)


def _assistant(history: History, event: Event, data: Mapping[str, Any]) -> None:
    message = data.get("message")
    content = message.get("content") if isinstance(message, Mapping) else None
    if not isinstance(content, Sequence) or isinstance(content, str):
        return
    for block in content:
        if not isinstance(block, Mapping) or block.get("type") != "tool-call":
            continue
        call_id, name = _str(block.get("id")), _str(block.get("name"))
        if call_id is not None and name is not None:  # ids may repeat across turns: latest wins
            history.calls[call_id] = CallRecord(call_id, name, _str(block.get("arguments")) or "", None)


def _tool_call(history: History, event: Event, data: Mapping[str, Any]) -> None:
    call_id, name = _str(data.get("callId")), _str(data.get("name"))
    if call_id is None or name is None:
        return
    history.calls[call_id] = CallRecord(call_id, name, _str(data.get("arguments")) or "", event.seq)
    history.tool_calls.setdefault(name, []).append(event.seq)


def _tool_result(history: History, event: Event, data: Mapping[str, Any]) -> None:
    message = data.get("message")
    source = message.get("source") if isinstance(message, Mapping) else None
    call_id = _str(source.get("callId")) if isinstance(source, Mapping) else None
    call = history.calls.get(call_id) if call_id is not None else None
    error = data.get("error")
    code = _str(error.get("code")) if isinstance(error, Mapping) else None
    if call_id is not None and code in UNKNOWN_OUTCOME_CODES:
        assert code is not None
        history.repaired.append(UnfinishedCall(call_id, code, event.seq, call))
    meta = data.get("meta")
    if meta is None:
        return
    tool = call.name if call is not None else None
    for access in file_accesses(meta):
        history.files[access.path] = FileRecord(access.path, access.sha256, access.access, event.seq, tool)
    command = meta.get("command") if isinstance(meta, Mapping) else None
    if isinstance(command, str):
        cwd = _str(meta.get("cwd"))
        history.shell_runs.append(ShellRun(command, cwd, _result_text(message), event.seq, call_id))
    pids = background_pids(meta)
    if pids:
        command = _str(meta.get("command")) if isinstance(meta, Mapping) else None
        for pid in pids:
            history.background[pid] = BackgroundProcess(pid, command, event.seq, event.time, call_id)


def _result_text(message: Any) -> str:
    content = message.get("content") if isinstance(message, Mapping) else None
    texts: list[str] = []
    for block in content if isinstance(content, Sequence) and not isinstance(content, str) else ():
        inner = block.get("content") if isinstance(block, Mapping) else None
        for part in inner if isinstance(inner, Sequence) and not isinstance(inner, str) else ():
            if isinstance(part, Mapping) and isinstance(part.get("text"), str):
                texts.append(part["text"])
    return "\n".join(texts)


def _mcp_connect(history: History, event: Event, data: Mapping[str, Any]) -> None:
    """The latest record of a server that reached it (else the latest) is the one compared;
    ``mcp_tools`` maps every offered name any record gave to its ``(server, tool)``."""
    state = read_connect(event.seq, data)
    if state is None:
        return
    before = history.mcp.get(state.name)
    if state.reachable or before is None or not before.reachable:
        history.mcp[state.name] = state
    for tool in state.tools:
        history.mcp_tools[tool.exposed] = (state.name, tool.name)


def _approval_asked(history: History, event: Event, data: Mapping[str, Any]) -> None:
    approval_id = _str(data.get("id"))
    if approval_id is not None:
        history.approvals[approval_id] = Approval(
            approval_id, _str(data.get("toolName")), _str(data.get("callId")), event.seq
        )


def _approval_decided(history: History, event: Event, data: Mapping[str, Any]) -> None:
    approval = history.approvals.get(_str(data.get("id")) or "")
    if approval is not None:
        approval.outcome = _str(data.get("outcome")) or "unknown"
        approval.decided_seq = event.seq


def _compaction_start(history: History, event: Event, data: Mapping[str, Any]) -> None:
    compaction_id = _str(data.get("compactionId"))
    if compaction_id is not None:
        history.compactions[compaction_id] = Compaction(compaction_id, event.seq, _int(data.get("turn")))


def _compaction_summary(history: History, event: Event, data: Mapping[str, Any]) -> None:
    compaction = history.compactions.get(_str(data.get("compactionId")) or "")
    if compaction is not None:
        compaction.summary_seq = event.seq


def _compaction_end(history: History, event: Event, data: Mapping[str, Any]) -> None:
    compaction = history.compactions.get(_str(data.get("compactionId")) or "")
    if compaction is not None:
        compaction.end_seq = event.seq


def _request_header(history: History, event: Event, data: Mapping[str, Any]) -> None:
    header = data.get("header")
    if isinstance(header, Mapping):
        history.header = EpochHeader(header)
        history.header_seq = event.seq


def _request_context(history: History, event: Event, data: Mapping[str, Any]) -> None:
    history.context = data
    history.context_seq = event.seq


_READERS = {
    "turn/start": _turn_start,
    "turn/end": _turn_end,
    "session/end-seed": _end_seed,
    WORKSPACE_BASELINE: _baseline,
    MCP_CONNECT: _mcp_connect,
    "assistant/message": _assistant,
    "tool/call": _tool_call,
    "tool/result": _tool_result,
    "approval/asked": _approval_asked,
    "approval/decided": _approval_decided,
    "compaction/start": _compaction_start,
    "compaction/summary": _compaction_summary,
    "compaction/end": _compaction_end,
    "request/header": _request_header,
    "request/context": _request_context,
}

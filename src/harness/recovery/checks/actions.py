"""Unfinished actions of the unsettled turns (since the last turn that ended on its own
terms): tool calls crash repair closed with an unknown outcome or as not started, and
approvals that were asked and never answered."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from harness.recovery.findings import Finding, finding
from harness.recovery.history import Approval, CallRecord, History, UnfinishedCall
from harness.recovery.vocabulary import FindingKind, Severity
from harness.tools.base import Tool, ToolError
from harness.tools.workspace import Workspace

__all__ = ["check_actions", "verify_write"]

MAX_ARGUMENTS = 500
Verified = Literal["applied", "not-applied"]


def _arguments(call: CallRecord | None) -> str | None:
    if call is None:
        return None
    text = call.arguments
    return text if len(text) <= MAX_ARGUMENTS else text[: MAX_ARGUMENTS - 1] + "…"


def verify_write(call: CallRecord, root: Path, history: History) -> Verified | None:
    """For a ``write_file`` call of unknown outcome: ``applied`` when the file now holds
    exactly the content the call meant to write, ``not-applied`` when it is absent or
    still holds the content recorded before the call, None when that cannot be told."""
    if call.name != "write_file":
        return None
    try:
        arguments = json.loads(call.arguments or "{}")
    except ValueError:
        return None
    path = arguments.get("path") if isinstance(arguments, dict) else None
    content = arguments.get("content") if isinstance(arguments, dict) else None
    if not isinstance(path, str) or not isinstance(content, str):
        return None
    try:
        workspace = Workspace(root)
        real = workspace.resolve(path)
        now = workspace.sha256(path)
        intended = hashlib.sha256(content.encode("utf-8")).hexdigest()
        shown = workspace.relative(real)
    except (ToolError, OSError, UnicodeEncodeError):
        return None
    if now == intended:
        return "applied"
    if now is None:
        return "not-applied"  # a finished write_file always leaves the file behind
    record = history.files.get(shown)
    if record is not None and call.seq is not None and record.seq < call.seq and record.sha256 == now:
        return "not-applied"
    return None


def _approval_for(history: History, call_id: str) -> Approval | None:
    found = None
    for approval in history.approvals.values():
        if approval.call_id == call_id and history.unsettled(approval.asked_seq):
            found = approval
    return found


def _evidence(item: UnfinishedCall, tool: Tool | None, approval: Approval | None) -> dict[str, Any]:
    call = item.call
    evidence: dict[str, Any] = {
        "callId": item.call_id,
        "tool": call.name if call else None,
        "arguments": _arguments(call),
        "code": item.code,
        "callSeq": call.seq if call else None,
        "resultSeq": item.result_seq,
        "changesWorld": tool.changes_world if tool is not None else None,
    }
    if approval is not None:
        evidence["approval"] = {"id": approval.id, "outcome": approval.outcome}
    return evidence


def _unknown(item: UnfinishedCall, tools: Mapping[str, Tool], root: Path, history: History) -> Finding:
    call = item.call
    name = call.name if call else "an unknown tool"
    tool = tools.get(call.name) if call else None
    approval = _approval_for(history, item.call_id)
    evidence = _evidence(item, tool, approval)
    label = f"{name} call {item.call_id} (seq {evidence['callSeq']})"
    if approval is not None and approval.outcome is None:
        return finding(
            FindingKind.ACTION_OUTCOME_UNKNOWN,
            Severity.WARN,
            f"The {label} was waiting for approval when the session stopped, so it never ran.",
            "Tell the model the call did not run; if it is still wanted, the user is asked again.",
            **evidence,
            ran=False,
        )
    if approval is not None and approval.outcome != "allowed-once":
        return finding(
            FindingKind.ACTION_OUTCOME_UNKNOWN,
            Severity.INFO,
            f"The {label} was not run: its approval was {approval.outcome}.",
            "Nothing to undo; tell the model the call did not run.",
            **evidence,
            ran=False,
        )
    if tool is not None and not tool.changes_world:
        return finding(
            FindingKind.ACTION_OUTCOME_UNKNOWN,
            Severity.WARN,
            f"The {label} started but its result was lost; {name} only reads, so running it again is safe.",
            "Let the model run it again if it still needs the result.",
            **evidence,
        )
    verified = verify_write(call, root, history) if call is not None else None
    if verified == "applied":
        return finding(
            FindingKind.ACTION_OUTCOME_UNKNOWN,
            Severity.WARN,
            f"The {label} started but its result was lost; the file now holds exactly the content it was "
            "to write, so it took effect.",
            "Tell the model the write is in place; it need not be repeated.",
            **evidence,
            verified=verified,
        )
    if verified == "not-applied":
        return finding(
            FindingKind.ACTION_OUTCOME_UNKNOWN,
            Severity.WARN,
            f"The {label} started but its result was lost; the file is unchanged, so it did not take effect.",
            "Tell the model the write did not happen; it may write again.",
            **evidence,
            verified=verified,
        )
    why = (
        "it changes the world"
        if tool is not None
        else "its tool is not available now to say whether it is safe"
    )
    return finding(
        FindingKind.ACTION_OUTCOME_UNKNOWN,
        Severity.BLOCK,
        f"The {label} started but its result was lost: it may have run fully, partly or not at all, "
        f"and {why}.",
        "Do not let the model repeat it blindly: verify its effects (files, processes, remote systems) "
        "or let the user decide before continuing.",
        **evidence,
    )


def _not_started(item: UnfinishedCall, tools: Mapping[str, Tool]) -> Finding:
    call = item.call
    name = call.name if call else "an unknown tool"
    tool = tools.get(call.name) if call else None
    return finding(
        FindingKind.ACTION_NOT_STARTED,
        Severity.INFO,
        f"The {name} call {item.call_id} was interrupted before it started; it did not run.",
        "Nothing to undo; the model may call it again if it is still needed.",
        **_evidence(item, tool, None),
    )


def _pending(approval: Approval) -> Finding:
    tool = approval.tool_name or "a tool"
    return finding(
        FindingKind.APPROVAL_PENDING,
        Severity.WARN,
        f"Approval {approval.id} for {tool} (call {approval.call_id}) was asked at seq {approval.asked_seq} "
        "and never answered.",
        "The call did not run. Ask the user again if the model still wants it; do not take the silence "
        "as a yes.",
        id=approval.id,
        tool=approval.tool_name,
        callId=approval.call_id,
        askedSeq=approval.asked_seq,
    )


def check_actions(history: History, tools: Mapping[str, Tool], root: Path) -> list[Finding]:
    """Findings for the repair results and the unanswered approvals of the unsettled turns."""
    found: list[Finding] = []
    for item in history.unfinished():
        if item.code == "TOOL_NOT_STARTED":
            found.append(_not_started(item, tools))
        else:
            found.append(_unknown(item, tools, root, history))
    found.extend(_pending(approval) for approval in history.pending_approvals())
    return found

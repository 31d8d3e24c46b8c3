"""The drift message: what changed in the world, told to the model in a user message
with a plugin source when a resumed session continues."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from harness.events.json import FrozenDict
from harness.messages.model import user_message
from harness.recovery.findings import Finding, plural
from harness.recovery.vocabulary import DRIFT_KINDS, FindingKind, Severity

__all__ = ["DRIFT_SOURCE", "drift_text", "drift_user_message"]

DRIFT_SOURCE: Final = FrozenDict(kind="plugin", plugin="recovery", form="workspace-drift")
"""The source of the drift user message."""

MAX_LINES = 30

_OPENING = (
    "Note from the harness: this session was stopped and has now been resumed. While it was stopped, "
    "the world outside the conversation changed, so some of what you saw earlier is out of date:"
)
_CLOSING = (
    "Read a file again before you rely on it or edit it, and start again any process you still need. "
    "Do not undo these changes unless the user asks you to: someone may have made them on purpose."
)


def _short(head: Any) -> str:
    return head[:12] if isinstance(head, str) else "(no commit)"


def _did(evidence: Mapping[str, Any]) -> str:
    return "wrote" if evidence.get("access") == "write" else "read"


def _line(item: Finding) -> str | None:
    e = item.evidence
    kind = item.kind
    if kind == FindingKind.WORKSPACE_MOVED:
        return f"The workspace is now {e.get('now')}; earlier turns worked in {e.get('recorded')}."
    if kind == FindingKind.FILE_CHANGED:
        if e.get("problem"):
            return f"{e.get('path')} cannot be checked now: {e.get('problem')}"
        if e.get("recorded") is None:
            return f"{e.get('path')} exists now; it did not when you last {_did(e)} it."
        return f"{e.get('path')} has changed since you last {_did(e)} it."
    if kind == FindingKind.FILE_VANISHED:
        return f"{e.get('path')} no longer exists (you last {_did(e)} it)."
    if kind == FindingKind.GIT_HEAD_MOVED:
        if e.get("now") is None:
            return "The workspace can no longer be read as a git repository."
        how = ""
        if isinstance(e.get("added"), int) and isinstance(e.get("dropped"), int):
            how = f" ({plural(e['added'], 'commit')} added, {e['dropped']} taken away)"
        branch = ""
        if e.get("branchBefore") != e.get("branchNow"):
            branch = f", and the branch is now {e.get('branchNow') or 'a detached HEAD'}"
        return f"git HEAD moved from {_short(e.get('before'))} to {_short(e.get('now'))}{how}{branch}."
    if kind == FindingKind.GIT_DIRTY:
        if e.get("now") == "clean":
            return "The uncommitted changes that were in the tree are gone (reverted or stashed)."
        paths = list(e.get("paths") or ())
        more = int(e.get("count") or len(paths)) - len(paths)
        listed = ", ".join(paths) + (f" and {more} more" if more > 0 else "")
        return f"These files changed without your tools being involved: {listed}."
    if kind == FindingKind.BACKGROUND_PROCESS:
        return f"The background process {e.get('pid')} (`{e.get('command')}`) is no longer running."
    if kind == FindingKind.TEMP_FILE_VANISHED:
        return f"{e.get('path')}, which an earlier command created outside the workspace, is gone."
    return _mcp_line(kind, e)


def _mcp_line(kind: str, e: Mapping[str, Any]) -> str | None:
    server = e.get("server")
    if kind == FindingKind.MCP_SERVER_UNREACHABLE:
        return f"The MCP server {server} cannot be reached now; its tools are not available."
    if kind == FindingKind.MCP_TOOL_REMOVED:
        return f"The MCP server {server} no longer has the tool {e.get('tool')} ({e.get('exposedAs')})."
    if kind == FindingKind.MCP_TOOL_SCHEMA_CHANGED:
        return (
            f"The tool {e.get('exposedAs')} of the MCP server {server} changed its definition: check its "
            "parameters before you call it again."
        )
    if kind == FindingKind.MCP_SERVER_CHANGED:
        return f"The MCP server {server} is now {e.get('now')}; earlier turns used {e.get('before')}."
    if kind == FindingKind.MCP_SESSION_LOST:
        servers = ", ".join(str(name) for name in e.get("servers") or ())
        return (
            f"The MCP servers ({servers}) were connected again: state kept on their side (subscriptions, "
            "context from earlier calls) did not survive."
        )
    return None


def drift_text(findings: Sequence[Finding]) -> str | None:
    """The message text for the drift findings (workspace, git, background processes,
    temporary files, MCP servers; ``info`` ones left out, except that MCP session state was
    lost), or None when there are none."""
    lines = [
        line
        for item in findings
        if item.kind in DRIFT_KINDS
        and (item.severity != Severity.INFO or item.kind == FindingKind.MCP_SESSION_LOST)
        and (line := _line(item)) is not None
    ]
    if not lines:
        return None
    shown = lines[:MAX_LINES]
    if len(lines) > MAX_LINES:
        shown.append(f"… and {len(lines) - MAX_LINES} more changes like these.")
    return "\n".join([_OPENING, *(f"- {line}" for line in shown), _CLOSING])


def drift_user_message(findings: Sequence[Finding]) -> FrozenDict | None:
    """A ``user/message`` payload carrying ``drift_text`` with the ``DRIFT_SOURCE``
    plugin source, or None when nothing drifted."""
    text = drift_text(findings)
    return None if text is None else user_message(text, source=DRIFT_SOURCE)

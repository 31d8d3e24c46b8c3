"""Names cold recovery writes and reports: its two log-only event types, the finding kinds
and the severities (SPEC §7).

Both event types are unknown to a DeepSeek Harness reader, so they are always appended
with ``ignorable=True``: a reader that does not know them skips them.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Final

__all__ = [
    "DRIFT_KINDS",
    "RECOVERY_CHECK",
    "WORKSPACE_BASELINE",
    "FindingKind",
    "Severity",
]

WORKSPACE_BASELINE: Final = "workspace/baseline"
"""Log-only, ignorable: the workspace state at a turn start (``capture_baseline``)."""

RECOVERY_CHECK: Final = "recovery/check"
"""Log-only, ignorable: one ``WorldReport`` as JSON (``record_report``)."""


class Severity(StrEnum):
    """How much a finding matters. Most severe first: the order findings are reported in
    (``list(Severity)``). A member is its stored string: ``Severity.BLOCK == "block"``."""

    BLOCK = "block"
    WARN = "warn"
    INFO = "info"


class FindingKind(StrEnum):
    """Every kind of finding ``check_world`` reports, in report order within one severity
    (``list(FindingKind)``). A member is the string a ``recovery/check`` event stores:
    ``FindingKind.GIT_DIRTY == "git-dirty"``."""

    # Workspace drift.
    WORKSPACE_MOVED = "workspace-moved"
    FILE_CHANGED = "file-changed"
    FILE_VANISHED = "file-vanished"
    GIT_HEAD_MOVED = "git-head-moved"
    GIT_DIRTY = "git-dirty"
    BASELINE_MISSING = "baseline-missing"
    # Tools.
    TOOL_MISSING = "tool-missing"
    TOOL_SCHEMA_CHANGED = "tool-schema-changed"
    # Model route.
    ROUTE_CHANGED = "route-changed"
    # Unfinished actions.
    ACTION_OUTCOME_UNKNOWN = "action-outcome-unknown"
    ACTION_NOT_STARTED = "action-not-started"
    APPROVAL_PENDING = "approval-pending"
    # Compaction.
    COMPACTION_ORPHAN = "compaction-orphan"
    # External resources.
    BACKGROUND_PROCESS = "background-process"
    TEMP_FILE_VANISHED = "temp-file-vanished"
    # MCP servers.
    MCP_SERVER_UNREACHABLE = "mcp-server-unreachable"
    MCP_TOOL_REMOVED = "mcp-tool-removed"
    MCP_TOOL_SCHEMA_CHANGED = "mcp-tool-schema-changed"
    MCP_SERVER_CHANGED = "mcp-server-version-changed"
    MCP_SESSION_LOST = "mcp-session-lost"
    # Credentials.
    CREDENTIALS_MISSING = "credentials-missing"
    CREDENTIALS_REJECTED = "credentials-rejected"
    CREDENTIALS_UNCHECKED = "credentials-unchecked"


DRIFT_KINDS: Final = frozenset(
    {
        FindingKind.WORKSPACE_MOVED,
        FindingKind.FILE_CHANGED,
        FindingKind.FILE_VANISHED,
        FindingKind.GIT_HEAD_MOVED,
        FindingKind.GIT_DIRTY,
        FindingKind.BACKGROUND_PROCESS,
        FindingKind.TEMP_FILE_VANISHED,
        FindingKind.MCP_SERVER_UNREACHABLE,
        FindingKind.MCP_TOOL_REMOVED,
        FindingKind.MCP_TOOL_SCHEMA_CHANGED,
        FindingKind.MCP_SERVER_CHANGED,
        FindingKind.MCP_SESSION_LOST,
    }
)
"""Kinds that describe the outside world changing under the model (``drift_message``)."""

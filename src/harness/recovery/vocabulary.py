"""Names cold recovery writes and reports: its two log-only event types, the finding kinds
and the severities (SPEC §7).

Both event types are unknown to a DeepSeek Harness reader, so they are always appended
with ``ignorable=True``: a reader that does not know them skips them.
"""

from __future__ import annotations

from typing import Final, Literal, TypeAlias

__all__ = [
    "ACTION_NOT_STARTED",
    "ACTION_OUTCOME_UNKNOWN",
    "APPROVAL_PENDING",
    "BACKGROUND_PROCESS",
    "BASELINE_MISSING",
    "COMPACTION_ORPHAN",
    "CREDENTIALS_MISSING",
    "CREDENTIALS_REJECTED",
    "CREDENTIALS_UNCHECKED",
    "DRIFT_KINDS",
    "FILE_CHANGED",
    "FILE_VANISHED",
    "FINDING_KINDS",
    "GIT_DIRTY",
    "GIT_HEAD_MOVED",
    "MCP_SERVER_CHANGED",
    "MCP_SERVER_UNREACHABLE",
    "MCP_SESSION_LOST",
    "MCP_TOOL_REMOVED",
    "MCP_TOOL_SCHEMA_CHANGED",
    "RECOVERY_CHECK",
    "ROUTE_CHANGED",
    "SEVERITIES",
    "TEMP_FILE_VANISHED",
    "TOOL_MISSING",
    "TOOL_SCHEMA_CHANGED",
    "WORKSPACE_BASELINE",
    "WORKSPACE_MOVED",
    "Severity",
]

WORKSPACE_BASELINE: Final = "workspace/baseline"
"""Log-only, ignorable: the workspace state at a turn start (``capture_baseline``)."""

RECOVERY_CHECK: Final = "recovery/check"
"""Log-only, ignorable: one ``WorldReport`` as JSON (``record_report``)."""

Severity: TypeAlias = Literal["info", "warn", "block"]
SEVERITIES: Final[tuple[Severity, ...]] = ("block", "warn", "info")
"""Most severe first (the order findings are reported in)."""

# Workspace drift.
WORKSPACE_MOVED: Final = "workspace-moved"
FILE_CHANGED: Final = "file-changed"
FILE_VANISHED: Final = "file-vanished"
GIT_HEAD_MOVED: Final = "git-head-moved"
GIT_DIRTY: Final = "git-dirty"
BASELINE_MISSING: Final = "baseline-missing"
# Tools.
TOOL_MISSING: Final = "tool-missing"
TOOL_SCHEMA_CHANGED: Final = "tool-schema-changed"
# Model route.
ROUTE_CHANGED: Final = "route-changed"
# Unfinished actions.
ACTION_OUTCOME_UNKNOWN: Final = "action-outcome-unknown"
ACTION_NOT_STARTED: Final = "action-not-started"
APPROVAL_PENDING: Final = "approval-pending"
# Compaction.
COMPACTION_ORPHAN: Final = "compaction-orphan"
# External resources.
BACKGROUND_PROCESS: Final = "background-process"
TEMP_FILE_VANISHED: Final = "temp-file-vanished"
# MCP servers.
MCP_SERVER_UNREACHABLE: Final = "mcp-server-unreachable"
MCP_TOOL_REMOVED: Final = "mcp-tool-removed"
MCP_TOOL_SCHEMA_CHANGED: Final = "mcp-tool-schema-changed"
MCP_SERVER_CHANGED: Final = "mcp-server-version-changed"
MCP_SESSION_LOST: Final = "mcp-session-lost"
_MCP_KINDS = (
    MCP_SERVER_UNREACHABLE,
    MCP_TOOL_REMOVED,
    MCP_TOOL_SCHEMA_CHANGED,
    MCP_SERVER_CHANGED,
    MCP_SESSION_LOST,
)
# Credentials.
CREDENTIALS_MISSING: Final = "credentials-missing"
CREDENTIALS_REJECTED: Final = "credentials-rejected"
CREDENTIALS_UNCHECKED: Final = "credentials-unchecked"

FINDING_KINDS: Final = (
    WORKSPACE_MOVED,
    FILE_CHANGED,
    FILE_VANISHED,
    GIT_HEAD_MOVED,
    GIT_DIRTY,
    BASELINE_MISSING,
    TOOL_MISSING,
    TOOL_SCHEMA_CHANGED,
    ROUTE_CHANGED,
    ACTION_OUTCOME_UNKNOWN,
    ACTION_NOT_STARTED,
    APPROVAL_PENDING,
    COMPACTION_ORPHAN,
    BACKGROUND_PROCESS,
    TEMP_FILE_VANISHED,
    *_MCP_KINDS,
    CREDENTIALS_MISSING,
    CREDENTIALS_REJECTED,
    CREDENTIALS_UNCHECKED,
)
"""Every kind ``check_world`` reports, in report order within one severity."""

DRIFT_KINDS: Final = frozenset(
    {
        WORKSPACE_MOVED,
        FILE_CHANGED,
        FILE_VANISHED,
        GIT_HEAD_MOVED,
        GIT_DIRTY,
        BACKGROUND_PROCESS,
        TEMP_FILE_VANISHED,
        *_MCP_KINDS,
    }
)
"""Kinds that describe the outside world changing under the model (``drift_message``)."""

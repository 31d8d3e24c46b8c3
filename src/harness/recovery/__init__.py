"""Cold recovery (SPEC §7): after a session is restored, check the world it recorded
against the world as it is, before the session acts again.

- ``capture_baseline`` / ``record_baseline``: the ``workspace/baseline`` event (root,
  git HEAD, dirty flag, branch) written at each turn start;
- ``check_world`` → ``WorldReport``: findings with a kind, a severity (``info``,
  ``warn``, ``block``), a summary, evidence and an action;
- ``record_report``: the ``recovery/check`` event holding the report.

Both events are log-only and appended with ``ignorable=True``.

"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness._lazy import lazy_exports

if TYPE_CHECKING:
    from harness.recovery.baseline import Baseline, capture_baseline, read_baseline
    from harness.recovery.findings import Finding
    from harness.recovery.git import GitState, probe_git
    from harness.recovery.history import History, read_history
    from harness.recovery.message import DRIFT_SOURCE, drift_text, drift_user_message
    from harness.recovery.render import render_report
    from harness.recovery.report import REPORT_VERSION, WorldReport
    from harness.recovery.vocabulary import (
        ACTION_NOT_STARTED,
        ACTION_OUTCOME_UNKNOWN,
        APPROVAL_PENDING,
        BACKGROUND_PROCESS,
        BASELINE_MISSING,
        COMPACTION_ORPHAN,
        CREDENTIALS_MISSING,
        CREDENTIALS_REJECTED,
        CREDENTIALS_UNCHECKED,
        DRIFT_KINDS,
        FILE_CHANGED,
        FILE_VANISHED,
        FINDING_KINDS,
        GIT_DIRTY,
        GIT_HEAD_MOVED,
        MCP_SERVER_CHANGED,
        MCP_SERVER_UNREACHABLE,
        MCP_SESSION_LOST,
        MCP_TOOL_REMOVED,
        MCP_TOOL_SCHEMA_CHANGED,
        RECOVERY_CHECK,
        ROUTE_CHANGED,
        SEVERITIES,
        TEMP_FILE_VANISHED,
        TOOL_MISSING,
        TOOL_SCHEMA_CHANGED,
        WORKSPACE_BASELINE,
        WORKSPACE_MOVED,
        Severity,
    )
    from harness.recovery.world import check_world, record_baseline, record_report

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
    "DRIFT_SOURCE",
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
    "REPORT_VERSION",
    "ROUTE_CHANGED",
    "SEVERITIES",
    "TEMP_FILE_VANISHED",
    "TOOL_MISSING",
    "TOOL_SCHEMA_CHANGED",
    "WORKSPACE_BASELINE",
    "WORKSPACE_MOVED",
    "Baseline",
    "Finding",
    "GitState",
    "History",
    "Severity",
    "WorldReport",
    "capture_baseline",
    "check_world",
    "drift_text",
    "drift_user_message",
    "probe_git",
    "read_baseline",
    "read_history",
    "record_baseline",
    "record_report",
    "render_report",
]

_EXPORTS = {
    "harness.recovery.baseline": ("Baseline", "capture_baseline", "read_baseline"),
    "harness.recovery.findings": ("Finding",),
    "harness.recovery.git": ("GitState", "probe_git"),
    "harness.recovery.history": ("History", "read_history"),
    "harness.recovery.message": ("DRIFT_SOURCE", "drift_text", "drift_user_message"),
    "harness.recovery.render": ("render_report",),
    "harness.recovery.report": ("REPORT_VERSION", "WorldReport"),
    "harness.recovery.vocabulary": (
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
    ),
    "harness.recovery.world": ("check_world", "record_baseline", "record_report"),
}

if not TYPE_CHECKING:  # at run time each name is imported on first use (PEP 562)
    __getattr__, __dir__ = lazy_exports(__name__, globals(), _EXPORTS)

"""Cold recovery (SPEC §7): after a session is restored, check the world it recorded
against the world as it is, before the session acts again.

- ``capture_baseline`` / ``record_baseline``: the ``workspace/baseline`` event (root,
  git HEAD, dirty flag, branch) written at each turn start;
- ``check_world`` → ``WorldReport``: findings with a kind (``FindingKind``), a severity
  (``Severity``: ``block``, ``warn``, ``info``), a summary, evidence and an action;
- ``record_report``: the ``recovery/check`` event holding the report.

Both events are log-only and appended with ``ignorable=True``.

"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness._lazy import exported_names, lazy_exports

if TYPE_CHECKING:  # the table below as imports, for type checkers and IDEs (a test checks they agree)
    from harness.recovery.baseline import Baseline as Baseline
    from harness.recovery.baseline import capture_baseline as capture_baseline
    from harness.recovery.baseline import read_baseline as read_baseline
    from harness.recovery.findings import Finding as Finding
    from harness.recovery.git import GitState as GitState
    from harness.recovery.git import probe_git as probe_git
    from harness.recovery.history import History as History
    from harness.recovery.history import read_history as read_history
    from harness.recovery.message import DRIFT_SOURCE as DRIFT_SOURCE
    from harness.recovery.message import drift_text as drift_text
    from harness.recovery.message import drift_user_message as drift_user_message
    from harness.recovery.render import render_report as render_report
    from harness.recovery.report import REPORT_VERSION as REPORT_VERSION
    from harness.recovery.report import WorldReport as WorldReport
    from harness.recovery.vocabulary import DRIFT_KINDS as DRIFT_KINDS
    from harness.recovery.vocabulary import RECOVERY_CHECK as RECOVERY_CHECK
    from harness.recovery.vocabulary import WORKSPACE_BASELINE as WORKSPACE_BASELINE
    from harness.recovery.vocabulary import FindingKind as FindingKind
    from harness.recovery.vocabulary import Severity as Severity
    from harness.recovery.world import check_world as check_world
    from harness.recovery.world import record_baseline as record_baseline
    from harness.recovery.world import record_report as record_report

_EXPORTS = {
    "harness.recovery.baseline": ("Baseline", "capture_baseline", "read_baseline"),
    "harness.recovery.findings": ("Finding",),
    "harness.recovery.git": ("GitState", "probe_git"),
    "harness.recovery.history": ("History", "read_history"),
    "harness.recovery.message": ("DRIFT_SOURCE", "drift_text", "drift_user_message"),
    "harness.recovery.render": ("render_report",),
    "harness.recovery.report": ("REPORT_VERSION", "WorldReport"),
    "harness.recovery.vocabulary": (
        "DRIFT_KINDS",
        "RECOVERY_CHECK",
        "WORKSPACE_BASELINE",
        "FindingKind",
        "Severity",
    ),
    "harness.recovery.world": ("check_world", "record_baseline", "record_report"),
}

if not TYPE_CHECKING:  # at run time: the table's names, each imported on first use (PEP 562)
    __all__ = exported_names(_EXPORTS)
    __getattr__, __dir__ = lazy_exports(__name__, globals(), _EXPORTS)

"""``check_world``: compare what a restored session recorded with the world as it is now;
``record_report`` and ``record_baseline`` write the two log-only events."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from harness.events.event import Event
from harness.events.json import FrozenDict
from harness.providers.base import Provider
from harness.providers.credentials import CredentialCheck
from harness.recovery.baseline import capture_baseline
from harness.recovery.checks.actions import check_actions
from harness.recovery.checks.compaction import check_compactions
from harness.recovery.checks.credentials import check_credentials_finding
from harness.recovery.checks.files import check_files, check_root
from harness.recovery.checks.mcp import check_mcp, session_lost
from harness.recovery.checks.processes import check_processes
from harness.recovery.checks.repository import check_repository
from harness.recovery.checks.route import check_route
from harness.recovery.checks.tempfiles import check_temp_files
from harness.recovery.checks.tools import check_tools
from harness.recovery.findings import Finding
from harness.recovery.git import DEFAULT_TIMEOUT_S
from harness.recovery.history import read_history
from harness.recovery.report import WorldReport
from harness.recovery.vocabulary import RECOVERY_CHECK, WORKSPACE_BASELINE, Severity
from harness.session.session import Session
from harness.tools.base import Tool
from harness.tools.mcp.records import McpServerState

__all__ = ["check_world", "record_baseline", "record_report"]

logger = logging.getLogger("harness.recovery")


def check_world(
    session: Session,
    workspace: str | os.PathLike[str],
    tools: Iterable[Tool],
    provider: Provider | None,
    *,
    model: str | None = None,
    git_timeout: float = DEFAULT_TIMEOUT_S,
    mcp: Sequence[McpServerState] | None = None,
    credentials: CredentialCheck | None = None,
) -> WorldReport:
    """Compare the recorded world of ``session`` with the real one and report each
    difference (the workspace at ``workspace``, ``tools`` offered now, ``provider``
    with ``model`` — None keeps the recorded model). A ``None`` provider skips the route
    check. ``mcp`` is every configured MCP server as connected now (``McpHub.states``):
    None when the log's servers were not reconnected (only the lost session state is then
    reported, and ``skipped`` says so). ``credentials`` is the key check made just before
    (``harness.providers.check_credentials``); None leaves credentials out. Reads only:
    nothing is appended (see ``record_report``). Never raises over the world: a check that
    fails is listed in ``skipped``. Blocking (runs ``git``); call it from a worker thread in
    async code."""
    events = session.events
    history = read_history(events)
    root = Path(os.path.realpath(workspace))
    by_name = {tool.spec.name: tool for tool in tools}
    checks: list[tuple[str, Callable[[], list[Finding]]]] = [
        ("workspace", lambda: check_root(history, root)),
        ("files", lambda: check_files(history, root)),
        ("git", lambda: check_repository(history, root, timeout=git_timeout)),
        ("tools", lambda: check_tools(history, by_name)),
    ]
    skipped: dict[str, str] = {}
    if provider is None:
        skipped["route"] = "no provider was given"
    else:
        checks.append(("route", lambda: check_route(history, provider, model)))
    checks += [
        ("actions", lambda: check_actions(history, by_name, root)),
        ("compaction", lambda: check_compactions(history)),
        ("processes", lambda: check_processes(history)),
        ("temporary files", lambda: check_temp_files(history, root)),
    ]
    if mcp is not None:
        checks.append(("mcp", lambda: check_mcp(history, mcp)))
    elif history.mcp:
        skipped["mcp"] = "the session's MCP servers were not connected again"
        checks.append(("mcp", lambda: session_lost(history)))
    if credentials is not None and credentials.status == "unchecked":
        skipped["credentials"] = credentials.reason or "not checked"
    elif credentials is not None:
        checks.append(("credentials", lambda: check_credentials_finding(credentials)))
    findings: list[Finding] = []
    for name, check in checks:
        try:
            findings.extend(check())
        except Exception as error:
            logger.exception("the %s check of session %s failed", name, session.id)
            skipped[name] = f"the check failed: {type(error).__name__}: {error}"
    order = list(Severity)
    findings.sort(key=lambda item: order.index(item.severity))
    return WorldReport(
        session=session.id,
        workspace=str(root),
        at_seq=len(events) - 1,
        findings=tuple(findings),
        skipped=FrozenDict(skipped),
    )


def record_report(session: Session, report: WorldReport) -> Event:
    """Append the report as a log-only, ignorable ``recovery/check`` event."""
    return session.append(RECOVERY_CHECK, report.to_json(), ignorable=True)


def record_baseline(session: Session, workspace: str | os.PathLike[str]) -> Event:
    """Append a log-only, ignorable ``workspace/baseline`` event for ``workspace`` now."""
    return session.append(WORKSPACE_BASELINE, capture_baseline(Path(workspace)), ignorable=True)

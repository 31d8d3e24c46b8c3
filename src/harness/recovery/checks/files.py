"""Workspace files: the root itself, and each file the session read or wrote, compared
by content hash with the last hash the file tools recorded."""

from __future__ import annotations

import os
from pathlib import Path

from harness.recovery.findings import Finding, finding, plural
from harness.recovery.history import FileRecord, History
from harness.recovery.vocabulary import FindingKind, Severity
from harness.tools.base import ToolError
from harness.tools.workspace import Workspace

__all__ = ["check_files", "check_root", "current_hash"]

SHELL = "run_shell"


def check_root(history: History, root: Path) -> list[Finding]:
    """The workspace is missing, or is not the directory the last baseline recorded."""
    real = os.path.realpath(root)
    if not os.path.isdir(real):
        return [
            finding(
                FindingKind.WORKSPACE_MOVED,
                Severity.BLOCK,
                f"The workspace {real} does not exist (or is not a directory).",
                "Point the session at its workspace (--workspace) or restore the directory first.",
                recorded=history.baseline.root if history.baseline else None,
                now=real,
                exists=False,
            )
        ]
    baseline = history.baseline
    if baseline is None or baseline.root is None or baseline.root == real:
        return []
    return [
        finding(
            FindingKind.WORKSPACE_MOVED,
            Severity.WARN,
            f"The workspace is {real}, but the last turn worked in {baseline.root}.",
            "Make sure this is the intended workspace: recorded file paths are checked against the new "
            "root, and the model should be told where it now works.",
            recorded=baseline.root,
            now=real,
            baselineSeq=baseline.seq,
        )
    ]


def current_hash(workspace: Workspace, path: str) -> tuple[str | None, str | None]:
    """``(sha256 or None when absent, problem or None)`` for a recorded path now."""
    try:
        return workspace.sha256(path), None
    except ToolError as error:
        return None, error.message
    except OSError as error:
        return None, f"it cannot be read now: {error.strerror or error}"


def _verb(record: FileRecord) -> str:
    return "wrote" if record.access == "write" else "read"


def check_files(history: History, root: Path) -> list[Finding]:
    """A recorded file whose content changed, or which is gone, since its last record."""
    if not history.files or not os.path.isdir(root):
        return []
    workspace = Workspace(root)
    found: list[Finding] = []
    for path in sorted(history.files):
        record = history.files[path]
        now, problem = current_hash(workspace, path)
        if problem is None and now == record.sha256:
            continue
        shell_after = len(history.tool_calls_after(SHELL, record.seq))
        hint = (
            f"; {plural(shell_after, 'later run_shell call')} of the session may account for it"
            if shell_after
            else ""
        )
        evidence = {
            "path": path,
            "recorded": record.sha256,
            "now": now,
            "access": record.access,
            "seq": record.seq,
            "tool": record.tool,
            "shellCallsAfter": shell_after,
        }
        if problem is not None:
            found.append(
                finding(
                    FindingKind.FILE_CHANGED,
                    Severity.WARN,
                    f"{path}, which the session last {_verb(record)} at seq {record.seq}, cannot be "
                    f"checked: {problem}",
                    "Look at the file by hand before the session uses it again.",
                    **evidence,
                    problem=problem,
                )
            )
        elif now is None:
            found.append(
                finding(
                    FindingKind.FILE_VANISHED,
                    Severity.WARN,
                    f"{path}, which the session last {_verb(record)} at seq {record.seq}, no longer "
                    f"exists{hint}.",
                    "Tell the model the file is gone; it must not assume its old content.",
                    **evidence,
                )
            )
        else:
            what = "did not exist then and exists now" if record.sha256 is None else "has different content"
            found.append(
                finding(
                    FindingKind.FILE_CHANGED,
                    Severity.WARN,
                    f"{path} {what} since the session last {_verb(record)} it at seq {record.seq}{hint}.",
                    "Tell the model; it should read the file again before relying on or editing it.",
                    **evidence,
                )
            )
    return found

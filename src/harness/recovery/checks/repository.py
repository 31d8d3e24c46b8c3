"""Git: HEAD moved, or the tree dirtied (or cleaned) since the last baseline."""

from __future__ import annotations

import os
from pathlib import Path

from harness.recovery.findings import Finding, finding, plural
from harness.recovery.git import DEFAULT_TIMEOUT_S, GitState, commit_distance, probe_git
from harness.recovery.history import History
from harness.recovery.vocabulary import FindingKind, Severity

__all__ = ["check_repository"]

SHELL = "run_shell"
MAX_PATHS = 20


def _short(head: str | None) -> str:
    return head[:12] if head else "(no commit)"


def check_repository(history: History, root: Path, *, timeout: float = DEFAULT_TIMEOUT_S) -> list[Finding]:
    """Compare the last ``workspace/baseline`` with git now (nothing before the first turn)."""
    if history.last_turn_start is None:
        return []
    baseline = history.baseline
    if baseline is None:
        return [
            finding(
                FindingKind.BASELINE_MISSING,
                Severity.INFO,
                "The log records no workspace baseline, so git HEAD and the tree state cannot be compared.",
                "Nothing to do; recorded file hashes are still checked. Later turns record a baseline.",
                turns=len(history.turn_starts),
            )
        ]
    before = baseline.git
    if before is None or not os.path.isdir(root):
        return []
    now = probe_git(root, timeout=timeout, list_paths=True)
    shell_after = len(history.tool_calls_after(SHELL, baseline.seq))
    if now is None:
        return [
            finding(
                FindingKind.GIT_HEAD_MOVED,
                Severity.WARN,
                f"The workspace was a git repository at {_short(before.head)} when the last turn started; "
                "git cannot read it now.",
                "Check the repository (was .git removed, or is git missing?) before the session continues.",
                before=before.head,
                now=None,
                branchBefore=before.branch,
                baselineSeq=baseline.seq,
                shellCallsAfter=shell_after,
            )
        ]
    found: list[Finding] = []
    if before.head != now.head:
        found.append(_moved(root, before, now, baseline.seq, shell_after, timeout))
    found.extend(_dirty(history, root, before, now, baseline.seq, shell_after))
    return found


def _moved(
    root: Path, before: GitState, now: GitState, baseline_seq: int, shell_after: int, timeout: float
) -> Finding:
    distance = (
        commit_distance(root, before.head, now.head, timeout=timeout) if before.head and now.head else None
    )
    if distance is None:
        how = ""
    elif distance[0] == 0:
        how = f" ({plural(distance[1], 'new commit')})"
    elif distance[1] == 0:
        how = f" ({plural(distance[0], 'commit')} taken back)"
    else:
        how = f" (diverged: {plural(distance[0], 'commit')} dropped, {distance[1]} added)"
    branch = ""
    if before.branch != now.branch:
        branch = f"; branch {before.branch or '(detached)'} → {now.branch or '(detached)'}"
    hint = (
        f"; {plural(shell_after, 'run_shell call')} of the last turn may have done it" if shell_after else ""
    )
    return finding(
        FindingKind.GIT_HEAD_MOVED,
        Severity.WARN,
        f"git HEAD moved from {_short(before.head)} to {_short(now.head)}{how}{branch}{hint}.",
        "Tell the model the checked-out code changed; it should re-read what it relies on.",
        before=before.head,
        now=now.head,
        branchBefore=before.branch,
        branchNow=now.branch,
        dropped=distance[0] if distance else None,
        added=distance[1] if distance else None,
        baselineSeq=baseline_seq,
        shellCallsAfter=shell_after,
    )


def _dirty(
    history: History, root: Path, before: GitState, now: GitState, baseline_seq: int, shell_after: int
) -> list[Finding]:
    if not before.dirty and now.dirty:
        # A file the session recorded is either as it last saw it (its own change) or
        # reported by the file check already; only files it never touched are new here.
        unexplained = [path for path in now.paths if path not in history.files]
        if not unexplained:
            return []
        more = len(unexplained) - 3
        shown = ", ".join(unexplained[:3]) + (f" and {more} more" if more > 0 else "")
        hint = (
            f"; {plural(shell_after, 'run_shell call')} of the last turn may account for it"
            if shell_after
            else ""
        )
        return [
            finding(
                FindingKind.GIT_DIRTY,
                Severity.WARN,
                f"The tree was clean when the last turn started and now has changes the session did not "
                f"record: {shown}{hint}.",
                "Tell the model which files changed outside its view (git status shows them).",
                before="clean",
                now="dirty",
                paths=unexplained[:MAX_PATHS],
                count=len(unexplained),
                baselineSeq=baseline_seq,
                shellCallsAfter=shell_after,
            )
        ]
    if before.dirty and not now.dirty and before.head == now.head:
        return [
            finding(
                FindingKind.GIT_DIRTY,
                Severity.WARN,
                "The tree had uncommitted changes when the last turn started; now it is clean at the same "
                "HEAD (the changes were reverted or stashed).",
                "Tell the model the uncommitted changes it may rely on are gone; `git stash list` may "
                "still hold them.",
                before="dirty",
                now="clean",
                paths=[],
                count=0,
                baselineSeq=baseline_seq,
                shellCallsAfter=shell_after,
            )
        ]
    return []

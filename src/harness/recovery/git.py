"""Asking ``git`` about a workspace: HEAD, branch, whether the tree is dirty and which
paths are. Every call has a short timeout; any failure (not a repository, git missing,
a timeout, an unreadable repository) gives ``None`` rather than an error.

Only ``git status --porcelain=v2`` is parsed, limited to the workspace (pathspec ``.``),
with ``GIT_OPTIONAL_LOCKS=0`` so that looking never takes the index lock.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

__all__ = ["GitState", "commit_distance", "probe_git"]

DEFAULT_TIMEOUT_S = 5.0
_DROPPED_ENV = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR", "GIT_PREFIX")


@dataclass(frozen=True, slots=True)
class GitState:
    """What git says about a workspace. ``head`` is None before the first commit,
    ``branch`` None on a detached HEAD; ``paths`` (changed, staged or untracked, relative
    to the workspace root) is filled only when asked for."""

    head: str | None
    branch: str | None
    dirty: bool
    paths: tuple[str, ...] = ()


def _environment() -> dict[str, str]:
    env = {name: value for name, value in os.environ.items() if name not in _DROPPED_ENV}
    env.update({"GIT_OPTIONAL_LOCKS": "0", "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"})
    return env


def _git(root: Path, args: list[str], timeout: float) -> bytes | None:
    try:
        done = subprocess.run(
            ["git", "-C", str(root), *args],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            env=_environment(),
            timeout=timeout,
            check=False,
        )
    except (OSError, subprocess.SubprocessError, ValueError):
        return None
    return done.stdout if done.returncode == 0 else None


def _entry_path(record: bytes) -> bytes | None:
    """The path of one porcelain v2 entry (for a rename, the new path)."""
    kind = record[:1]
    fields = {b"1": 8, b"2": 9, b"u": 10}.get(kind)
    if fields is not None:
        parts = record.split(b" ", fields)
        return parts[fields] if len(parts) > fields else None
    if kind == b"?":
        return record[2:]
    return None


def probe_git(root: Path, *, timeout: float = DEFAULT_TIMEOUT_S, list_paths: bool = False) -> GitState | None:
    """The git state of the workspace at ``root``, or None when it cannot be had.

    ``list_paths`` also lists every changed path (untracked files one by one), each
    relative to ``root``; without it untracked directories are not walked.
    """
    untracked = "all" if list_paths else "normal"
    out = _git(
        root,
        ["status", "--porcelain=v2", "--branch", "-z", f"--untracked-files={untracked}", "--", "."],
        timeout,
    )
    if out is None:
        return None
    head: str | None = None
    branch: str | None = None
    changed: list[bytes] = []
    records = out.split(b"\0")
    index = 0
    while index < len(records):
        record = records[index]
        index += 1
        if record.startswith(b"# branch.oid "):
            value = record[len(b"# branch.oid ") :].decode("ascii", "replace")
            head = None if value == "(initial)" else value
        elif record.startswith(b"# branch.head "):
            value = record[len(b"# branch.head ") :].decode("utf-8", "replace")
            branch = None if value == "(detached)" else value
        elif record[:1] in (b"1", b"2", b"u", b"?"):
            path = _entry_path(record)
            if path is not None:
                changed.append(path)
            if record[:1] == b"2" and index < len(records):
                changed.append(records[index])  # the rename's original path
                index += 1
    paths: tuple[str, ...] = ()
    if list_paths and changed:
        paths = _relative_paths(root, changed, timeout)
    return GitState(head=head, branch=branch, dirty=bool(changed), paths=paths)


def _relative_paths(root: Path, changed: list[bytes], timeout: float) -> tuple[str, ...]:
    """Porcelain paths (relative to the repository's top) made relative to ``root``."""
    top = _git(root, ["rev-parse", "--show-toplevel"], timeout)
    if top is None:
        return tuple(sorted({os.fsdecode(path) for path in changed}))
    toplevel = os.path.realpath(os.fsdecode(top.rstrip(b"\n")))
    real_root = os.path.realpath(root)
    found: set[str] = set()
    for path in changed:
        absolute = os.path.join(toplevel, os.fsdecode(path))
        found.add(os.path.relpath(absolute, real_root).replace(os.sep, "/"))
    return tuple(sorted(found))


def commit_distance(
    root: Path, before: str, now: str, *, timeout: float = DEFAULT_TIMEOUT_S
) -> tuple[int, int] | None:
    """``(dropped, added)``: commits reachable from ``before`` but not ``now``, and the
    reverse; None when git cannot tell (e.g. ``before`` is no longer in the repository)."""
    out = _git(root, ["rev-list", "--left-right", "--count", f"{before}...{now}", "--"], timeout)
    if out is None:
        return None
    parts = out.split()
    if len(parts) != 2 or not all(part.isdigit() for part in parts):
        return None
    return int(parts[0]), int(parts[1])

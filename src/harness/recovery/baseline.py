"""The workspace baseline: what the workspace looked like at a turn start.

``capture_baseline(workspace)`` returns the data of a ``workspace/baseline`` event::

    {"root": "/real/path/of/workspace",
     "git": {"head": "<40 hex>" | null, "dirty": bool, "branch"?: "main"} | null}

``git`` is null when the workspace is not inside a git repository, git is missing or
did not answer in time; ``head`` is null before the first commit and ``branch`` is left
out on a detached HEAD. ``dirty`` counts staged, unstaged and untracked (not ignored)
changes under the workspace. Capturing never raises: the turn must not fail over it.

``read_baseline`` reads such data back from a logged event without trusting it.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.recovery.git import DEFAULT_TIMEOUT_S, GitState, probe_git

__all__ = ["Baseline", "capture_baseline", "read_baseline"]

logger = logging.getLogger("harness.recovery")


def capture_baseline(workspace: Path, *, timeout: float = DEFAULT_TIMEOUT_S) -> dict[str, Any]:
    """The ``workspace/baseline`` data for ``workspace`` now (see the module doc)."""
    root = os.path.realpath(workspace)
    try:
        state = probe_git(Path(root), timeout=timeout)
    except Exception:  # never fail the turn over a baseline
        logger.exception("could not read the git state of %s", root)
        state = None
    return {"root": root, "git": None if state is None else _git_json(state)}


def _git_json(state: GitState) -> dict[str, Any]:
    data: dict[str, Any] = {"head": state.head, "dirty": state.dirty}
    if state.branch is not None:
        data["branch"] = state.branch
    return data


@dataclass(frozen=True, slots=True)
class Baseline:
    """A logged baseline: its seq, the root and the git state (None when not a repository)."""

    seq: int
    root: str | None
    git: GitState | None


def read_baseline(seq: int, data: Any) -> Baseline:
    """The baseline in a ``workspace/baseline`` event's data (malformed parts read as absent)."""
    if not isinstance(data, Mapping):
        return Baseline(seq, None, None)
    root = data.get("root")
    git = data.get("git")
    state: GitState | None = None
    if isinstance(git, Mapping):
        head, dirty, branch = git.get("head"), git.get("dirty"), git.get("branch")
        state = GitState(
            head=head if isinstance(head, str) else None,
            branch=branch if isinstance(branch, str) else None,
            dirty=dirty is True,
        )
    return Baseline(seq, root if isinstance(root, str) else None, state)

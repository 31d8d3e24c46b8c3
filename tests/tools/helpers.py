"""Shared helpers for the tool tests: run a tool synchronously, catch its refusal."""

from __future__ import annotations

import asyncio
import hashlib
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from harness.tools.base import Tool, ToolContext, ToolError, ToolOutcome

Recorded = list[tuple[str, dict[str, Any]]]


def context(root: Path, recorded: Recorded | None = None) -> ToolContext:
    """A context on ``root`` whose ``record`` appends to ``recorded``."""

    def record(kind: str, data: Mapping[str, Any]) -> None:
        if recorded is not None:
            recorded.append((kind, dict(data)))

    return ToolContext(root, call_id="call-test", record=record)


def run(
    tool: Tool, arguments: Mapping[str, Any], root: Path, recorded: Recorded | None = None
) -> ToolOutcome:
    """Run ``tool`` to completion in a fresh event loop."""
    return asyncio.run(tool.run(arguments, context(root, recorded)))


def refusal(tool: Tool, arguments: Mapping[str, Any], root: Path, code: str) -> ToolError:
    """Run ``tool`` expecting ``ToolError`` with ``code``; return the error."""
    with pytest.raises(ToolError) as caught:
        run(tool, arguments, root)
    assert caught.value.code == code, caught.value.message
    return caught.value


def sha(path: Path) -> str:
    """hashlib's SHA-256 of the file at ``path``."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def snapshot(directory: Path) -> dict[str, bytes | str]:
    """Every entry under ``directory``: file bytes, link targets, ``"dir"`` for directories."""
    found: dict[str, bytes | str] = {}
    for base, dirs, files in os.walk(directory):
        for name in dirs + files:
            path = Path(base, name)
            key = str(path.relative_to(directory))
            if path.is_symlink():
                found[key] = "-> " + os.readlink(path)
            elif path.is_dir():
                found[key] = "dir"
            else:
                found[key] = path.read_bytes()
    return found


def pid_alive(pid: int) -> bool:
    """True when ``pid`` is a live process (a zombie counts as gone)."""
    if not os.path.isdir("/proc/self"):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True
    try:
        raw = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return False
    state = raw[raw.rfind(b")") + 2 :].split()[0]
    return state not in (b"Z", b"X")


def gone_soon(pid: int) -> bool:
    """True once ``pid`` is no longer a live process; False if it still is after ~10 s.

    A SIGKILL is delivered asynchronously, so a check right after ``kill`` may still see
    the process for a moment.
    """
    for _ in range(1000):
        if not pid_alive(pid):
            return True
        time.sleep(0.01)
    return False

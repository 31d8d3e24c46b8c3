"""``list_dir``: the entries under a workspace directory, to a given depth.

Output: one entry per line, as a path relative to the workspace root (so it can be passed
straight to the other tools), sorted by name, each directory listed before its contents.
Directories end with ``/``; symbolic links are shown as ``path -> target`` and never
followed; ``.git`` is listed but not entered. The listing stops after ``max_entries``
lines with a note.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from harness.tools.base import ToolContext, ToolError, ToolOutcome, ToolSpec
from harness.tools.schema import check_arguments
from harness.tools.workspace import Workspace

__all__ = ["SKIPPED_DIRECTORIES", "ListDir"]

SKIPPED_DIRECTORIES = frozenset({".git", ".hg", ".svn"})
"""Directories listed but never entered (by ``list_dir``) or searched (by ``grep``)."""

_DESCRIPTION = (
    "List what a workspace directory holds, one path per line relative to the workspace "
    "root, sorted by name. Directories end with '/', symbolic links show their target. "
    "`depth` 1 (the default) lists only the directory's own entries; higher values go that "
    "many levels down. Version-control folders such as .git are not entered."
)


class ListDir:
    """The ``list_dir`` tool (read-only, parallel-safe); see the module doc."""

    changes_world = False
    exclusive = False

    def __init__(self, *, max_entries: int = 1000) -> None:
        """``max_entries`` caps the lines listed."""
        self.max_entries = max_entries
        self.spec = ToolSpec(
            name="list_dir",
            description=_DESCRIPTION,
            parameters={
                "type": "object",
                "properties": {
                    "path": {
                        "type": "string",
                        "minLength": 1,
                        "description": "Directory to list. Default: the workspace root.",
                    },
                    "depth": {
                        "type": "integer",
                        "minimum": 1,
                        "maximum": 10,
                        "description": "How many levels to descend. Default 1.",
                    },
                },
                "required": [],
                "additionalProperties": False,
            },
        )

    async def run(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolOutcome:
        """List the directory (in a worker thread)."""
        args = check_arguments(self.spec.name, self.spec.parameters, arguments)
        workspace = Workspace(context.root)
        return await asyncio.to_thread(self._list, workspace, args, context)

    def _list(self, workspace: Workspace, args: dict[str, Any], context: ToolContext) -> ToolOutcome:
        real = workspace.resolve(args.get("path", "."))
        shown = workspace.relative(real)
        if not real.exists():
            raise ToolError("NOT_FOUND", f"There is no directory at {shown}.")
        if not real.is_dir():
            raise ToolError(
                "NOT_A_DIRECTORY", f"{shown} is a file, not a directory; use read_file to read it."
            )
        lines: list[str] = []
        complete = self._walk(workspace, real, args.get("depth", 1), lines, context)
        if not lines:
            return ToolOutcome(f"({shown} is empty.)")
        text = "\n".join(lines)
        if not complete:
            text += (
                f"\n\n[Listing stopped after {self.max_entries} entries; list a subdirectory or "
                "use a smaller depth to see the rest.]"
            )
        return ToolOutcome(text)

    def _walk(
        self, workspace: Workspace, directory: Path, depth: int, lines: list[str], context: ToolContext
    ) -> bool:
        """Append entries of ``directory`` depth-first; False when the cap was hit."""
        if context.cancel.is_set():
            raise ToolError("CANCELLED", "The listing was cancelled.")
        try:
            with os.scandir(directory) as scan:
                entries = sorted(scan, key=lambda entry: entry.name)
        except OSError as error:
            lines.append(f"{workspace.relative(directory)}/ [unreadable: {error.strerror or error}]")
            return len(lines) < self.max_entries
        for entry in entries:
            if len(lines) >= self.max_entries:
                return False
            path = Path(entry.path)
            shown = workspace.relative(path)
            if entry.is_symlink():
                try:
                    target = os.readlink(path)
                except OSError:
                    target = "?"
                lines.append(f"{shown} -> {target}")
            elif entry.is_dir(follow_symlinks=False):
                lines.append(f"{shown}/")
                descend = depth > 1 and entry.name not in SKIPPED_DIRECTORIES
                if descend and not self._walk(workspace, path, depth - 1, lines, context):
                    return False
            else:
                lines.append(shown)
        return True

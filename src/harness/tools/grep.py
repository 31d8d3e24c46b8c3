"""``grep``: search the text files of the workspace for a regular expression.

Pure Python (``re`` + ``os.walk``): Python regular-expression syntax, matched against each
line (split on ``\\n``) with ``re.search``. Output lines are ``path:line:text`` with the
path relative to the workspace root, files in sorted order. ``.git`` (and ``.hg``,
``.svn``) are skipped, so are binary files (NUL in the first 8 KiB), files over
``max_file_bytes``, and symbolic links whose target is outside the workspace; directory
links are not followed. The search stops after ``max_matches`` matches, long lines are
cut, and a closing note says what was cut or skipped.

``glob`` is a shell-style pattern (``fnmatch``, case-sensitive) matched against the file
name, or against the root-relative path when it contains ``/`` (``*`` then also matches
``/``).
"""

from __future__ import annotations

import asyncio
import fnmatch
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.tools.base import ToolContext, ToolError, ToolOutcome, ToolSpec
from harness.tools.list_dir import SKIPPED_DIRECTORIES
from harness.tools.schema import check_arguments
from harness.tools.textfile import display_lines, looks_binary
from harness.tools.workspace import Workspace

__all__ = ["Grep"]

_DESCRIPTION = (
    "Search the workspace's text files for a regular expression (Python `re` syntax), line "
    "by line. Prints each matching line as path:line-number:text, paths relative to the "
    "workspace root. `path` limits the search to a directory or one file; `glob` keeps only "
    "files whose name matches a shell pattern such as '*.py' (a pattern containing '/' is "
    "matched against the relative path instead). Binary files and .git are skipped; output "
    "stops after a fixed number of matches."
)


@dataclass
class _Search:
    regex: re.Pattern[str]
    glob: str | None
    matches: list[str] = field(default_factory=list)
    binary: int = 0
    large: int = 0
    outside: int = 0
    unreadable: int = 0
    files: int = 0
    stopped: bool = False


class Grep:
    """The ``grep`` tool (read-only, parallel-safe); see the module doc."""

    changes_world = False
    exclusive = False

    def __init__(self, *, max_matches: int = 500, max_line_chars: int = 400, max_file_bytes: int = 5 << 20):
        """The caps are adjustable for tests."""
        self.max_matches = max_matches
        self.max_line_chars = max_line_chars
        self.max_file_bytes = max_file_bytes
        self.spec = ToolSpec(
            name="grep",
            description=_DESCRIPTION,
            parameters={
                "type": "object",
                "properties": {
                    "pattern": {"type": "string", "minLength": 1, "description": "Regular expression."},
                    "path": {
                        "type": "string",
                        "minLength": 1,
                        "description": "Directory or file to search. Default: the workspace root.",
                    },
                    "glob": {
                        "type": "string",
                        "minLength": 1,
                        "description": "Only search files matching this shell pattern, e.g. '*.py'.",
                    },
                    "ignore_case": {
                        "type": "boolean",
                        "description": "Match case-insensitively. Default false.",
                    },
                },
                "required": ["pattern"],
                "additionalProperties": False,
            },
        )

    async def run(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolOutcome:
        """Run the search (in a worker thread; it checks ``context.cancel`` between files)."""
        args = check_arguments(self.spec.name, self.spec.parameters, arguments)
        flags = re.IGNORECASE if args.get("ignore_case", False) else 0
        try:
            regex = re.compile(args["pattern"], flags)
        except re.error as error:
            raise ToolError(
                "INVALID_ARGUMENTS", f"The pattern is not a valid regular expression: {error}."
            ) from None
        workspace = Workspace(context.root)
        return await asyncio.to_thread(
            self._search, workspace, args, _Search(regex, args.get("glob")), context
        )

    def _search(
        self, workspace: Workspace, args: dict[str, Any], search: _Search, context: ToolContext
    ) -> ToolOutcome:
        top = workspace.resolve(args.get("path", "."))
        shown = workspace.relative(top)
        if top.is_file():
            self._file(workspace, top, search, explicit=True)
        elif top.is_dir():
            self._tree(workspace, top, search, context)
        else:
            raise ToolError("NOT_FOUND", f"There is no file or directory at {shown}.")
        return ToolOutcome(self._report(search, args["pattern"], shown))

    def _tree(self, workspace: Workspace, top: Path, search: _Search, context: ToolContext) -> None:
        for directory, subdirectories, names in os.walk(top):
            subdirectories[:] = sorted(name for name in subdirectories if name not in SKIPPED_DIRECTORIES)
            for name in sorted(names):
                if context.cancel.is_set():
                    raise ToolError("CANCELLED", "The search was cancelled.")
                path = Path(directory, name)
                if search.glob is not None:
                    subject = workspace.relative(path) if "/" in search.glob else name
                    if not fnmatch.fnmatchcase(subject, search.glob):
                        continue
                self._file(workspace, path, search, explicit=False)
                if search.stopped:
                    return

    def _file(self, workspace: Workspace, path: Path, search: _Search, *, explicit: bool) -> None:
        shown = workspace.relative(path)
        real = Path(os.path.realpath(path))
        if not workspace.contains(real):
            search.outside += 1
            return
        if not real.is_file():
            return
        try:
            if real.stat().st_size > self.max_file_bytes:
                search.large += 1
                return
            data = real.read_bytes()
        except OSError:
            search.unreadable += 1
            return
        if looks_binary(data):
            if explicit:
                raise ToolError("BINARY_FILE", f"{shown} looks like a binary file; grep searches text only.")
            search.binary += 1
            return
        search.files += 1
        text = data.decode("utf-8", errors="replace")
        for number, line in enumerate(display_lines(text), start=1):
            if search.regex.search(line) is None:
                continue
            if len(search.matches) >= self.max_matches:
                search.stopped = True
                return
            if len(line) > self.max_line_chars:
                line = f"{line[: self.max_line_chars]} [… cut]"
            search.matches.append(f"{shown}:{number}:{line}")

    def _report(self, search: _Search, pattern: str, shown: str) -> str:
        notes: list[str] = []
        if search.stopped:
            notes.append(
                f"Stopped after {self.max_matches} matches; narrow the pattern, path or glob to see the rest."
            )
        skipped = [
            (search.binary, "binary"),
            (search.large, f"over {self.max_file_bytes} bytes"),
            (search.outside, "linked from outside the workspace"),
            (search.unreadable, "unreadable"),
        ]
        skipped_text = ", ".join(f"{count} {why}" for count, why in skipped if count)
        if skipped_text:
            notes.append(f"Files skipped: {skipped_text}.")
        if not search.matches:
            head = f"No matches for {pattern!r} in {shown} ({search.files} text files searched)."
            return head + ("\n[" + " ".join(notes) + "]" if notes else "")
        text = "\n".join(search.matches)
        return text + ("\n\n[" + " ".join(notes) + "]" if notes else "")

"""``read_file``: a text file's lines, numbered, a window at a time.

Output format: one line per file line, ``<number right-aligned to 6>\\t<text>`` (numbers
start at 1 and are not part of the file). A line longer than ``max_line_chars`` is cut
and the cut marked. The window stops at ``limit`` lines or before ``max_output_chars``
characters, whichever comes first, and a closing bracketed note says which lines were
shown and which ``offset`` reads on. Bytes that are not UTF-8 are shown as U+FFFD (and a
note says so); a file with a NUL byte in its first 8 KiB is refused as binary.

The whole file is hashed, whatever window was shown: ``meta`` is
``{"files": [{"path", "sha256", "access": "read"}]}``.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Mapping
from typing import Any

from harness.tools.base import ToolContext, ToolError, ToolOutcome, ToolSpec
from harness.tools.records import read_meta
from harness.tools.schema import check_arguments
from harness.tools.textfile import display_lines, looks_binary, read_regular_file
from harness.tools.workspace import Workspace

__all__ = ["ReadFile"]

_DESCRIPTION = (
    "Show the text of a file in the workspace with line numbers: each output line is the "
    "line number, a tab, then the line (the numbers are not part of the file). Reads up to "
    "`limit` lines starting at line `offset`; a note at the end says how to read on when the "
    "file is longer. Very long lines are cut. Binary files are refused. Paths are relative "
    "to the workspace root (absolute paths must lie inside it)."
)


class ReadFile:
    """The ``read_file`` tool (read-only, parallel-safe); see the module doc."""

    changes_world = False
    exclusive = False

    def __init__(
        self,
        *,
        default_limit: int = 2000,
        max_line_chars: int = 2000,
        max_output_chars: int = 60_000,
        max_file_bytes: int = 20 * 1024 * 1024,
    ) -> None:
        """The caps are adjustable for tests; the defaults suit a model's context."""
        self.default_limit = default_limit
        self.max_line_chars = max_line_chars
        self.max_output_chars = max_output_chars
        self.max_file_bytes = max_file_bytes
        self.spec = ToolSpec(
            name="read_file",
            description=_DESCRIPTION,
            parameters={
                "type": "object",
                "properties": {
                    "path": {"type": "string", "minLength": 1, "description": "File to read."},
                    "offset": {
                        "type": "integer",
                        "minimum": 1,
                        "description": "First line to show (1-based). Default 1.",
                    },
                    "limit": {
                        "type": "integer",
                        "minimum": 1,
                        "maximum": 10_000,
                        "description": f"Most lines to show. Default {default_limit}.",
                    },
                },
                "required": ["path"],
                "additionalProperties": False,
            },
        )

    async def run(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolOutcome:
        """Read the window the arguments ask for (in a worker thread)."""
        args = check_arguments(self.spec.name, self.spec.parameters, arguments)
        workspace = Workspace(context.root)
        return await asyncio.to_thread(self._read, workspace, args)

    def _read(self, workspace: Workspace, args: dict[str, Any]) -> ToolOutcome:
        real = workspace.resolve(args["path"])
        shown = workspace.relative(real)
        data = read_regular_file(real, shown, self.max_file_bytes)
        digest = hashlib.sha256(data).hexdigest()
        if looks_binary(data):
            raise ToolError(
                "BINARY_FILE",
                f"{shown} looks like a binary file ({len(data)} bytes); read_file shows text only.",
            )
        meta = read_meta(shown, digest)
        try:
            text, exact = data.decode("utf-8"), True
        except UnicodeDecodeError:
            text, exact = data.decode("utf-8", errors="replace"), False
        lines = display_lines(text)
        if not lines:
            return ToolOutcome(f"({shown} is empty.)", meta=meta)
        offset = args.get("offset", 1)
        limit = args.get("limit", self.default_limit)
        if offset > len(lines):
            raise ToolError(
                "INVALID_ARGUMENTS",
                f"offset {offset} is past the end of {shown}, which has {len(lines)} "
                f"line{'' if len(lines) == 1 else 's'}.",
            )
        parts: list[str] = []
        size = 0
        last = offset - 1
        for number in range(offset, min(len(lines), offset - 1 + limit) + 1):
            line = lines[number - 1]
            if len(line) > self.max_line_chars:
                cut = len(line) - self.max_line_chars
                line = f"{line[: self.max_line_chars]} [… line cut: {cut} more characters]"
            entry = f"{number:>6}\t{line}"
            if parts and size + len(entry) + 1 > self.max_output_chars:
                break
            parts.append(entry)
            size += len(entry) + 1
            last = number
        notes: list[str] = []
        if offset > 1 or last < len(lines):
            note = f"[Lines {offset}–{last} of {len(lines)} shown."
            if last < len(lines):
                note += f" Call read_file with offset={last + 1} to read on."
            notes.append(note + "]")
        if not exact:
            notes.append("[The file is not valid UTF-8: undecodable bytes are shown as U+FFFD.]")
        body = "\n".join(parts)
        return ToolOutcome(body + ("\n\n" + "\n".join(notes) if notes else ""), meta=meta)

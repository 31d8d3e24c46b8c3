"""``write_file``: make a file's whole content the given text (UTF-8), creating missing
parent directories inside the workspace.

An existing file is replaced atomically (``filewrite``); a write that would not change
the bytes leaves the file alone. ``meta`` is
``{"files": [{"path", "sha256": after, "before": before-or-null, "access": "write"}]}``.
The tool runs in the event loop's thread without awaiting, so once started it finishes
before a cancel can land: a cancelled call never writes half a file behind the log.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from typing import Any

from harness.tools.base import ToolContext, ToolError, ToolOutcome, ToolSpec
from harness.tools.filewrite import write_whole_file
from harness.tools.records import write_meta
from harness.tools.schema import check_arguments
from harness.tools.workspace import Workspace, file_sha256

__all__ = ["WriteFile", "count_lines"]

_DESCRIPTION = (
    "Write text to a file in the workspace, replacing everything it held before (or creating "
    "it, with any missing parent directories). Give the complete new content. For a small "
    "change to an existing file, edit_file is cheaper and safer."
)


def count_lines(text: str) -> int:
    """Lines in ``text``: newlines, plus one for a last line without a newline."""
    return text.count("\n") + (1 if text and not text.endswith("\n") else 0)


class WriteFile:
    """The ``write_file`` tool (changes the world, exclusive); see the module doc."""

    changes_world = True
    exclusive = True

    def __init__(self, *, max_bytes: int = 10 * 1024 * 1024) -> None:
        """``max_bytes`` caps the encoded content."""
        self.max_bytes = max_bytes
        self.spec = ToolSpec(
            name="write_file",
            description=_DESCRIPTION,
            parameters={
                "type": "object",
                "properties": {
                    "path": {"type": "string", "minLength": 1, "description": "File to write."},
                    "content": {"type": "string", "description": "The file's complete new text."},
                },
                "required": ["path", "content"],
                "additionalProperties": False,
            },
        )

    async def run(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolOutcome:
        """Write the file (synchronously: see the module doc)."""
        args = check_arguments(self.spec.name, self.spec.parameters, arguments)
        workspace = Workspace(context.root)
        real = workspace.resolve(args["path"])
        shown = workspace.relative(real)
        content: str = args["content"]
        try:
            data = content.encode("utf-8")
        except UnicodeEncodeError:
            raise ToolError(
                "INVALID_ARGUMENTS", "The content holds an unpaired surrogate and cannot be written as UTF-8."
            ) from None
        if len(data) > self.max_bytes:
            raise ToolError(
                "INVALID_ARGUMENTS",
                f"The content is {len(data)} bytes; write_file takes at most {self.max_bytes}.",
            )
        if os.path.isdir(real):
            raise ToolError("IS_A_DIRECTORY", f"{shown} is a directory; give a file path.")
        if os.path.lexists(real) and not os.path.isfile(real):
            raise ToolError("NOT_A_FILE", f"{shown} exists and is not a regular file.")
        try:
            before = file_sha256(real)
        except OSError as error:
            raise ToolError("IO_ERROR", f"Could not read {shown}: {error.strerror or error}.") from None
        after = hashlib.sha256(data).hexdigest()
        meta = write_meta(shown, before, after)
        lines = count_lines(content)
        if before == after:
            return ToolOutcome(f"{shown} already holds exactly this content; nothing was changed.", meta=meta)
        try:
            os.makedirs(real.parent, exist_ok=True)
            write_whole_file(real, data)
        except (NotADirectoryError, FileExistsError):
            raise ToolError(
                "NOT_A_DIRECTORY",
                f"Cannot create {shown}: a part of its parent path is a file, not a directory.",
            ) from None
        except OSError as error:
            raise ToolError("IO_ERROR", f"Could not write {shown}: {error.strerror or error}.") from None
        verb = "Created" if before is None else "Overwrote"
        counts = f"{len(data)} byte{'' if len(data) == 1 else 's'}, {lines} line{'' if lines == 1 else 's'}"
        return ToolOutcome(f"{verb} {shown} ({counts}).", meta=meta)

"""``edit_file``: replace an exact piece of a text file with new text.

``old`` must occur in the file exactly as given (whitespace and line endings included).
No occurrence refuses with ``NO_MATCH``; more than one without ``replace_all`` refuses
with ``AMBIGUOUS_MATCH`` (naming the lines) and changes nothing. Occurrences are counted
and replaced as ``str.count`` / ``str.replace`` do (left to right, not overlapping).
Only UTF-8 text is edited. ``meta`` is as for ``write_file``:
``{"files": [{"path", "sha256": after, "before": before, "access": "write"}]}``; like
``write_file`` it runs without awaiting and replaces the file atomically.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from harness.tools.base import ToolContext, ToolError, ToolOutcome, ToolSpec
from harness.tools.filewrite import write_whole_file
from harness.tools.records import write_meta
from harness.tools.schema import check_arguments
from harness.tools.textfile import looks_binary, read_regular_file
from harness.tools.workspace import Workspace

__all__ = ["EditFile"]

_DESCRIPTION = (
    "Change a text file in the workspace by replacing `old` with `new`. `old` must match the "
    "file's current text exactly, character for character (indentation and line breaks "
    "included); copy it from read_file output without the line-number prefix. If `old` occurs "
    "more than once, include more surrounding text to single one out, or set replace_all to "
    "change every occurrence."
)

_LINES_SHOWN = 20


class EditFile:
    """The ``edit_file`` tool (changes the world, exclusive); see the module doc."""

    changes_world = True
    exclusive = True

    def __init__(self, *, max_file_bytes: int = 10 * 1024 * 1024) -> None:
        """``max_file_bytes`` caps the size of a file it will edit."""
        self.max_file_bytes = max_file_bytes
        self.spec = ToolSpec(
            name="edit_file",
            description=_DESCRIPTION,
            parameters={
                "type": "object",
                "properties": {
                    "path": {"type": "string", "minLength": 1, "description": "File to change."},
                    "old": {"type": "string", "minLength": 1, "description": "Exact text to replace."},
                    "new": {"type": "string", "description": "Text to put in its place."},
                    "replace_all": {
                        "type": "boolean",
                        "description": "Replace every occurrence instead of exactly one. Default false.",
                    },
                },
                "required": ["path", "old", "new"],
                "additionalProperties": False,
            },
        )

    async def run(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolOutcome:
        """Apply the replacement (synchronously, like ``write_file``)."""
        args = check_arguments(self.spec.name, self.spec.parameters, arguments)
        old: str = args["old"]
        new: str = args["new"]
        replace_all: bool = args.get("replace_all", False)
        if old == new:
            raise ToolError(
                "INVALID_ARGUMENTS", "`old` and `new` are the same text; there is nothing to change."
            )
        workspace = Workspace(context.root)
        real = workspace.resolve(args["path"])
        shown = workspace.relative(real)
        data = read_regular_file(real, shown, self.max_file_bytes)
        if looks_binary(data):
            raise ToolError("BINARY_FILE", f"{shown} looks like a binary file; edit_file changes text only.")
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise ToolError(
                "NOT_UTF8",
                f"{shown} is not valid UTF-8 text; edit_file would damage it. Use write_file instead.",
            ) from None
        count = text.count(old)
        if count == 0:
            raise ToolError("NO_MATCH", _no_match_message(shown, text, old))
        if count > 1 and not replace_all:
            lines = _line_list(_start_lines(text, old, count))
            raise ToolError(
                "AMBIGUOUS_MATCH",
                f"`old` occurs {count} times in {shown} (starting on lines {lines}). Include more "
                "surrounding text so it matches once, or set replace_all to true to change all of them.",
            )
        updated = text.replace(old, new) if replace_all else text.replace(old, new, 1)
        try:
            encoded = updated.encode("utf-8")
        except UnicodeEncodeError:
            raise ToolError(
                "INVALID_ARGUMENTS", "`new` holds an unpaired surrogate and cannot be written as UTF-8."
            ) from None
        replaced = count if replace_all else 1
        where = _line_list(_start_lines(updated, new, replaced, starts=_new_starts(text, old, new, replaced)))
        try:
            write_whole_file(real, encoded)
        except OSError as error:
            raise ToolError("IO_ERROR", f"Could not write {shown}: {error.strerror or error}.") from None
        meta = write_meta(shown, hashlib.sha256(data).hexdigest(), hashlib.sha256(encoded).hexdigest())
        if replaced == 1:
            text_out = f"Replaced 1 occurrence in {shown} (the new text starts on line {where})."
        else:
            text_out = f"Replaced {replaced} occurrences in {shown} (the new text starts on lines {where})."
        return ToolOutcome(text_out, meta=meta)


def _new_starts(text: str, old: str, new: str, replaced: int) -> list[int]:
    """Where each inserted ``new`` starts in the edited text."""
    starts: list[int] = []
    position = 0
    shift = 0
    for _ in range(min(replaced, _LINES_SHOWN + 1)):
        found = text.find(old, position)
        starts.append(found + shift)
        shift += len(new) - len(old)
        position = found + len(old)
    return starts


def _start_lines(text: str, needle: str, count: int, *, starts: list[int] | None = None) -> list[int]:
    """1-based line numbers where the first ``count`` occurrences of ``needle`` start."""
    if starts is None:
        starts = []
        position = 0
        for _ in range(min(count, _LINES_SHOWN + 1)):
            found = text.find(needle, position)
            if found < 0:
                break
            starts.append(found)
            position = found + len(needle)
    lines: list[int] = []
    line, scanned = 1, 0
    for start in starts[: _LINES_SHOWN + 1]:
        line += text.count("\n", scanned, start)
        scanned = start
        lines.append(line)
    return lines


def _line_list(lines: list[int]) -> str:
    shown = ", ".join(str(line) for line in lines[:_LINES_SHOWN])
    return shown + (", …" if len(lines) > _LINES_SHOWN else "")


def _no_match_message(shown: str, text: str, old: str) -> str:
    message = f"`old` does not occur in {shown}."
    if "\r\n" in text and "\n" in old and old.replace("\n", "\r\n") in text:
        message += " The file uses CRLF line endings; write `old` with \\r\\n line breaks."
    elif old.strip() and old.strip() in text:
        message += " It does occur without its leading or trailing whitespace; check the indentation."
    else:
        message += " Read the file again and copy the text exactly."
    return message

"""Reading files as text: the checks ``read_file``, ``edit_file`` and ``grep`` share.

A file is binary when its first 8 KiB hold a NUL byte. Lines are split on ``\\n`` only
(a trailing ``\\r`` is dropped for display), so line numbers agree across the tools.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from harness.tools.base import ToolError

__all__ = ["SNIFF_BYTES", "display_lines", "looks_binary", "read_regular_file"]

SNIFF_BYTES = 8192


def looks_binary(data: bytes) -> bool:
    """True when ``data`` (or its first ``SNIFF_BYTES``) holds a NUL byte."""
    return b"\x00" in data[:SNIFF_BYTES]


def display_lines(text: str) -> list[str]:
    """``text`` split on ``\\n``, without a final empty piece, each without a trailing ``\\r``."""
    if not text:
        return []
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def read_regular_file(real: Path, shown: str, max_bytes: int) -> bytes:
    """The bytes of the regular file ``real`` (``shown`` is its name in messages).

    Raises ``ToolError`` with ``NOT_FOUND``, ``IS_A_DIRECTORY``, ``NOT_A_FILE``,
    ``FILE_TOO_LARGE`` (over ``max_bytes``) or ``IO_ERROR``.
    """
    try:
        info = os.stat(real)
    except (FileNotFoundError, NotADirectoryError):
        raise ToolError("NOT_FOUND", f"There is no file at {shown}.") from None
    except OSError as error:
        raise ToolError("IO_ERROR", f"Could not inspect {shown}: {error.strerror or error}.") from None
    if stat.S_ISDIR(info.st_mode):
        raise ToolError("IS_A_DIRECTORY", f"{shown} is a directory; use list_dir to see what it holds.")
    if not stat.S_ISREG(info.st_mode):
        raise ToolError("NOT_A_FILE", f"{shown} is not a regular file (a device, socket or pipe).")
    if info.st_size > max_bytes:
        raise ToolError(
            "FILE_TOO_LARGE",
            f"{shown} is {info.st_size} bytes, more than the {max_bytes} this tool handles; "
            "use grep, or run_shell with head, tail or sed, to look at parts of it.",
        )
    try:
        with open(real, "rb") as handle:
            data = handle.read(max_bytes + 1)
    except OSError as error:
        raise ToolError("IO_ERROR", f"Could not read {shown}: {error.strerror or error}.") from None
    if len(data) > max_bytes:
        raise ToolError("FILE_TOO_LARGE", f"{shown} grew past {max_bytes} bytes while being read.")
    return data

"""Workspace confinement: turn a path the model gave into a real path inside the root.

A path is relative to the workspace root or absolute. It is accepted only when its real
path (``os.path.realpath``: every symbolic link on the way resolved, ``..`` applied after
the link it follows) is the root itself or lies below it. This covers ``..`` escapes,
absolute paths elsewhere, and symbolic links anywhere on the path that lead outside,
also for paths that do not exist yet (a write target whose parent directory is a link
to somewhere else, or a dangling link whose target is outside). Everything else raises
``ToolError("PATH_ESCAPE", ...)`` naming the path.

The check happens when the path is resolved; a link swapped in between the check and the
use is not caught (the model's own tools run one changing call at a time).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from harness.tools.base import ToolError

__all__ = ["Workspace", "file_sha256"]

_CHUNK = 1 << 20


def file_sha256(path: str | os.PathLike[str]) -> str | None:
    """Hex SHA-256 of the bytes of the regular file at ``path``; None when there is none.

    A missing path, a path through a non-directory, or a directory all give None; other
    ``OSError``s (e.g. permission denied) propagate.
    """
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as handle:
            while chunk := handle.read(_CHUNK):
                digest.update(chunk)
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return None
    return digest.hexdigest()


class Workspace:
    """The directory tree the file tools may touch (see the module doc)."""

    __slots__ = ("given", "root")

    def __init__(self, root: str | os.PathLike[str]) -> None:
        """``root`` must be an existing directory; it is kept as its real path."""
        self.given = os.path.abspath(root)
        real = os.path.realpath(root)
        if not os.path.isdir(real):
            raise ToolError("WORKSPACE_MISSING", f"The workspace root {self.given} is not a directory.")
        self.root = Path(real)

    def contains(self, real: str | os.PathLike[str]) -> bool:
        """True when the already resolved path ``real`` is the root or lies below it."""
        return _inside(os.fspath(real), str(self.root))

    def resolve(self, path: str) -> Path:
        """The real path for ``path`` (relative to the root, or absolute inside it).

        Raises ``ToolError("INVALID_ARGUMENTS")`` for an empty path or one holding a NUL
        byte, and ``ToolError("PATH_ESCAPE")`` when the path leads outside the root.
        """
        if not path:
            raise ToolError("INVALID_ARGUMENTS", "The path is empty; give a path inside the workspace.")
        if "\x00" in path:
            raise ToolError("INVALID_ARGUMENTS", f"The path {path!r} contains a NUL byte.")
        candidate = path if os.path.isabs(path) else os.path.join(self.root, path)
        try:
            real = os.path.realpath(candidate)
        except (OSError, ValueError) as error:
            raise ToolError("INVALID_ARGUMENTS", f"The path {path!r} cannot be used: {error}.") from None
        if not self.contains(real):
            raise ToolError("PATH_ESCAPE", self._escape_message(path, candidate, real))
        return Path(real)

    def relative(self, path: str | os.PathLike[str]) -> str:
        """``path`` (a resolved path inside the root) relative to the root, with ``/``
        separators; ``.`` for the root itself."""
        real = os.fspath(path)
        if not self.contains(real):
            raise ToolError("PATH_ESCAPE", f"{real} is outside the workspace root {self.root}.")
        relative = os.path.relpath(real, self.root)
        return relative.replace(os.sep, "/")

    def sha256(self, path: str) -> str | None:
        """Content hash of the file at the model-style ``path`` as it is now (None when
        absent); what cold recovery compares with the hashes the file tools recorded."""
        return file_sha256(self.resolve(path))

    def _escape_message(self, path: str, candidate: str, real: str) -> str:
        lexical = os.path.normpath(candidate)
        if _inside(lexical, str(self.root)) or _inside(lexical, self.given):
            how = f"a symbolic link on the way leads to {real}"
        elif os.path.isabs(path):
            how = "it is an absolute path elsewhere"
        else:
            how = "its '..' parts climb above the root"
        return (
            f"Refused: the path {path!r} is outside the workspace root {self.root} ({how}). "
            "Only paths inside the workspace can be used."
        )

    def __repr__(self) -> str:
        return f"Workspace({str(self.root)!r})"


def _inside(path: str, root: str) -> bool:
    if path == root:
        return True
    prefix = root if root.endswith(os.sep) else root + os.sep
    return path.startswith(prefix)

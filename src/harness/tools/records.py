"""The ``meta`` JSON the built-in tools record in ``tool/result``, and readers for it.

Builders here are the one place the shapes are written; the readers let cold recovery
(SPEC §7) get them back from logged events without trusting them (anything malformed is
skipped, never raised).

File tools::

    {"files": [{"path": "src/a.py", "sha256": "<hex>", "access": "read"}]}
    {"files": [{"path": "src/a.py", "sha256": "<hex after>", "before": "<hex>" | null,
                "access": "write"}]}

``path`` is relative to the workspace root (``/`` separators) and names the real file
(after following links inside the workspace). ``before`` is null when the write created
the file.

``run_shell``::

    {"command": str, "exitCode": int | null, "timedOut": bool, "cwd": str,
     "signal"?: int, "cancelled"?: true, "background"?: [pid, ...]}

``exitCode`` is null when the shell was ended by a signal (then ``signal`` names it).
``background`` lists processes of the command's session still running when the shell
exited: they outlive the call, and a resumed session must treat them as gone.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

__all__ = [
    "FileAccess",
    "background_pids",
    "file_accesses",
    "read_meta",
    "shell_meta",
    "write_meta",
]


@dataclass(frozen=True, slots=True)
class FileAccess:
    """One file a tool read or wrote, with its content hash at that moment."""

    path: str
    sha256: str | None
    access: Literal["read", "write"]
    before: str | None = None


def read_meta(path: str, sha256: str) -> dict[str, Any]:
    """``meta`` of a read: the file and the hash of the bytes that were read."""
    return {"files": [{"path": path, "sha256": sha256, "access": "read"}]}


def write_meta(path: str, before: str | None, after: str) -> dict[str, Any]:
    """``meta`` of a write or edit: the hash before (None when created) and after."""
    return {"files": [{"path": path, "sha256": after, "before": before, "access": "write"}]}


def shell_meta(
    command: str,
    cwd: str,
    *,
    exit_code: int | None,
    timed_out: bool,
    signal: int | None = None,
    cancelled: bool = False,
    background: Sequence[int] = (),
) -> dict[str, Any]:
    """``meta`` of a ``run_shell`` call (see the module doc)."""
    meta: dict[str, Any] = {"command": command, "exitCode": exit_code, "timedOut": timed_out, "cwd": cwd}
    if signal is not None:
        meta["signal"] = signal
    if cancelled:
        meta["cancelled"] = True
    if background:
        meta["background"] = list(background)
    return meta


def file_accesses(meta: Any) -> list[FileAccess]:
    """The well-formed file records in a ``tool/result`` ``meta`` (others skipped)."""
    if not isinstance(meta, Mapping):
        return []
    files = meta.get("files")
    if not isinstance(files, Sequence) or isinstance(files, str):
        return []
    found: list[FileAccess] = []
    for entry in files:
        if not isinstance(entry, Mapping):
            continue
        path, digest, access = entry.get("path"), entry.get("sha256"), entry.get("access")
        before = entry.get("before")
        if not isinstance(path, str) or access not in ("read", "write"):
            continue
        if not _hash_or_none(digest) or not _hash_or_none(before):
            continue
        found.append(FileAccess(path, digest, access, before))
    return found


def background_pids(meta: Any) -> list[int]:
    """The pids a ``run_shell`` ``meta`` says were left running (empty when none)."""
    if not isinstance(meta, Mapping):
        return []
    pids = meta.get("background")
    if not isinstance(pids, Sequence) or isinstance(pids, str):
        return []
    return [pid for pid in pids if type(pid) is int and pid > 0]


def _hash_or_none(value: Any) -> bool:
    return value is None or isinstance(value, str)

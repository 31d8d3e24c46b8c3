"""Where a JSONL session lives on disk (FORMAT §9.1).

``<root>/<project>/<encodedId>/session.jsonl.zstd`` (or ``session.jsonl`` without
compression). ``<project>`` is ``_no-cwd`` or ``project_key(cwd)``; ``<encodedId>``
is ``encode_segment(id)``. Both walk UTF-16 code units like the reference, so the
same id and cwd name the same directories as DeepSeek Harness.

A root holds one encoding and one layout. ``Layout`` finds logs and refuses a root
that breaks that: an opposite-suffix log, a flat ``<project>/<encodedId>.jsonl``
file, or one id in two projects.
"""

from __future__ import annotations

import errno
import os
from typing import Final, Literal

from harness.errors import CorruptSession, InvalidSessionId, UnsupportedFormat

__all__ = [
    "DIR_MODE",
    "FILE_MODE",
    "NO_CWD",
    "Compression",
    "Layout",
    "decode_segment",
    "encode_segment",
    "log_suffix",
    "project_key",
    "root_compression",
]

Compression = Literal["zstd", "none"]

DIR_MODE: Final = 0o700
FILE_MODE: Final = 0o600
NO_CWD: Final = "_no-cwd"
LOG_NAME: Final = "session"
MAX_SEGMENT: Final = 255
_PROJECT_SLUG_MAX: Final = 251
_SAFE: Final = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-")
_SEPARATORS: Final = frozenset("/\\:")


def _utf16_units(text: str) -> list[int]:
    """The UTF-16 code units of ``text`` (lone surrogates kept as themselves)."""
    raw = text.encode("utf-16-le", "surrogatepass")
    return [raw[i] | (raw[i + 1] << 8) for i in range(0, len(raw), 2)]


def _escape(unit: int) -> str:
    return f"~{unit:04X}"


def encode_segment(raw: str) -> str:
    """``raw`` as one safe path segment, injective over all strings (FORMAT §9.1).

    ``[A-Za-z0-9._-]`` stay literal, every other UTF-16 unit (``~`` too) becomes
    ``~XXXX``; ``.`` and ``..`` are escaped whole. Raises ``InvalidSessionId`` on ``""``.
    """
    if not isinstance(raw, str) or not raw:
        raise InvalidSessionId(f"cannot encode an empty path segment: {raw!r}")
    if raw == ".":
        return "~002E"
    if raw == "..":
        return "~002E~002E"
    if _SAFE.issuperset(raw):
        return raw  # literal characters only (most ids): one C-level scan
    if raw.isascii():
        return "".join(ch if ch in _SAFE else _escape(ord(ch)) for ch in raw)
    return "".join(chr(unit) if chr(unit) in _SAFE else _escape(unit) for unit in _utf16_units(raw))


def decode_segment(segment: str) -> str | None:
    """The string ``encode_segment`` made ``segment`` from, or ``None`` when ``segment``
    is not one of its outputs (a directory someone else named)."""
    if segment == "~002E":
        return "."
    if segment == "~002E~002E":
        return ".."
    if _SAFE.issuperset(segment):
        # Literal characters only (most ids): the segment is its own encoding, but for the
        # names encode_segment never writes literally. One C-level scan, not a loop per
        # character (``list()`` decodes every session directory's name).
        return None if segment in ("", ".", "..") else segment
    units: list[int] = []
    index = 0
    while index < len(segment):
        ch = segment[index]
        if ch in _SAFE:
            units.append(ord(ch))
            index += 1
            continue
        hexa = segment[index + 1 : index + 5]
        if ch != "~" or len(hexa) != 4 or any(c not in "0123456789ABCDEF" for c in hexa):
            return None
        units.append(int(hexa, 16))
        index += 5
    if not units:
        return None
    raw = b"".join(unit.to_bytes(2, "little") for unit in units)
    decoded = raw.decode("utf-16-le", "surrogatepass")
    return decoded if encode_segment(decoded) == segment else None


def project_key(cwd: str) -> str:
    """The readable project directory name of ``cwd`` (FORMAT §9.1).

    Runs of ``/ \\ :`` become one ``-``, ``[A-Za-z0-9._-]`` stay, other UTF-16 units
    become ``~XXXX``; leading ``-`` are stripped, empty becomes ``root``, the slug is
    cut to 251 characters and wrapped as ``--slug--``. Lossy on purpose.
    """
    if not cwd:
        raise InvalidSessionId("cannot encode an empty project path")
    parts: list[str] = []
    separator_run = False
    for unit in _utf16_units(cwd):
        ch = chr(unit)
        if ch in _SEPARATORS:
            if not separator_run:
                parts.append("-")
            separator_run = True
        else:
            parts.append(ch if ch in _SAFE else _escape(unit))
            separator_run = False
    slug = "".join(parts).lstrip("-") or "root"
    return f"--{slug[:_PROJECT_SLUG_MAX]}--"


def log_suffix(compression: Compression) -> str:
    return ".jsonl.zstd" if compression == "zstd" else ".jsonl"


def _exists(path: str) -> bool:
    """True when ``path`` exists; only "absent" answers False, other errors surface."""
    try:
        os.stat(path)
    except FileNotFoundError:
        return False
    except OSError as error:
        if error.errno == errno.ENAMETOOLONG:
            return False
        raise
    return True


class Layout:
    """The directory layout of one root in one encoding."""

    def __init__(self, root: str | os.PathLike[str], compression: Compression) -> None:
        if compression not in ("zstd", "none"):
            raise ValueError(f"compression must be 'zstd' or 'none', got {compression!r}")
        self.root = os.path.abspath(os.path.expanduser(os.fspath(root)))  # "~/…" as a shell means it
        self.compression: Compression = compression
        self.suffix = log_suffix(compression)
        self.opposite_suffix = log_suffix("none" if compression == "zstd" else "zstd")
        self.log_name = LOG_NAME + self.suffix

    # ---- naming -------------------------------------------------------------------------

    def project_dir(self, cwd: str | None) -> str:
        return os.path.join(self.root, NO_CWD if cwd is None else project_key(cwd))

    def session_dir(self, cwd: str | None, session_id: str) -> str:
        return os.path.join(self.project_dir(cwd), encode_segment(session_id))

    def log_path(self, cwd: str | None, session_id: str) -> str:
        return os.path.join(self.session_dir(cwd, session_id), self.log_name)

    def opposite_log_path(self, cwd: str | None, session_id: str) -> str:
        return os.path.join(self.session_dir(cwd, session_id), LOG_NAME + self.opposite_suffix)

    # ---- refusals -----------------------------------------------------------------------

    def encoding_mismatch(self, path: str) -> UnsupportedFormat:
        return UnsupportedFormat(
            f"session log {path} is a {self.opposite_suffix} log, but this store reads {self.suffix} "
            f"(compression {self.compression!r}), and a root holds one encoding (FORMAT §9.1): "
            "use the matching compression or a separate root"
        )

    def flat_layout(self, path: str) -> UnsupportedFormat:
        return UnsupportedFormat(
            f"session log {path!r} uses the unsupported flat-file layout; move it into "
            f"<project>/<session>/{self.log_name} or use a separate root"
        )

    def duplicate(self, session_id: str, paths: list[str]) -> CorruptSession:
        return CorruptSession(
            f"session id {session_id!r} appears in more than one project directory: {', '.join(paths)}",
            path=paths[0],
        )

    # ---- discovery ----------------------------------------------------------------------

    def project_dirs(self) -> list[str]:
        """The project directories under the root (none when the root does not exist)."""
        try:
            entries = list(os.scandir(self.root))
        except FileNotFoundError:
            return []
        return sorted(entry.path for entry in entries if entry.is_dir())

    def session_dirs(self, project: str) -> list[str]:
        """The session directories of one project; a flat log file there is refused."""
        dirs: list[str] = []
        for entry in sorted(os.scandir(project), key=lambda e: e.name):
            if entry.is_dir():
                dirs.append(entry.path)
            elif entry.name.endswith((".jsonl", ".jsonl.zstd")) and entry.is_file():
                raise self.flat_layout(entry.path)
        return dirs

    def check_root(self) -> None:
        """Refuse a root that holds the other encoding or the flat layout anywhere."""
        for project in self.project_dirs():
            for session in self.session_dirs(project):
                opposite = os.path.join(session, LOG_NAME + self.opposite_suffix)
                if _exists(opposite):
                    raise self.encoding_mismatch(opposite)

    def find_log(self, session_id: str) -> str | None:
        """The one log of ``session_id`` in any project, or ``None``.

        Refuses a flat-layout file or an opposite-suffix log for this id, and an id
        stored in two projects.
        """
        encoded = encode_segment(session_id)
        if len(encoded) > MAX_SEGMENT:
            return None
        found: list[str] = []
        for project in self.project_dirs():
            for suffix in (self.suffix, self.opposite_suffix):
                flat = os.path.join(project, encoded + suffix)
                if _exists(flat):
                    raise self.flat_layout(flat)
            session = os.path.join(project, encoded)
            opposite = os.path.join(session, LOG_NAME + self.opposite_suffix)
            if _exists(opposite):
                raise self.encoding_mismatch(opposite)
            path = os.path.join(session, self.log_name)
            if _exists(path):
                found.append(path)
        if len(found) > 1:
            raise self.duplicate(session_id, found)
        return found[0] if found else None

    def all_logs(self) -> list[str]:
        """Every log file under the root in this encoding (layout refusals raise)."""
        logs: list[str] = []
        for project in self.project_dirs():
            for session in self.session_dirs(project):
                opposite = os.path.join(session, LOG_NAME + self.opposite_suffix)
                if _exists(opposite):
                    raise self.encoding_mismatch(opposite)
                path = os.path.join(session, self.log_name)
                if _exists(path):
                    logs.append(path)
        return logs

    def same_file(self, path: str, expected: str) -> bool:
        """True when ``path`` is where a header's id and cwd say the log must be."""
        if path == expected:
            return True
        try:
            return os.path.realpath(path) == os.path.realpath(expected) and _exists(expected)
        except OSError:
            return False


def root_compression(root: str | os.PathLike[str]) -> Compression | None:
    """The encoding of the session logs under ``root``: ``"zstd"``, ``"none"``, or ``None``
    when it holds no log yet (or does not exist).

    Looks at ``<root>/<project>/<session>/session.jsonl[.zstd]`` only (no file is read).
    A root holding both encodings breaks FORMAT §9.1's one-encoding rule: that raises
    ``UnsupportedFormat`` naming a log of the rarer encoding.
    """
    found: dict[str, list[str]] = {log_suffix("zstd"): [], log_suffix("none"): []}
    try:
        projects = sorted(entry.path for entry in os.scandir(os.path.abspath(root)) if entry.is_dir())
    except (FileNotFoundError, NotADirectoryError):
        return None
    for project in projects:
        for entry in sorted(os.scandir(project), key=lambda e: e.name):
            for suffix, paths in found.items():
                path = os.path.join(entry.path, LOG_NAME + suffix)
                if entry.is_dir() and _exists(path):
                    paths.append(path)
    zstd, plain = found[log_suffix("zstd")], found[log_suffix("none")]
    if zstd and plain:
        (rare_suffix, rare), (common_suffix, common) = sorted(found.items(), key=lambda item: len(item[1]))
        others = f"{len(common)} {common_suffix} {'log' if len(common) == 1 else 'logs'}"
        raise UnsupportedFormat(
            f"{rare[0]} is a {rare_suffix} log in a root that also holds {others} "
            f"({common[0]}{', …' if len(common) > 1 else ''}): a root holds one encoding "
            "(FORMAT §9.1); move one kind to a separate root"
        )
    if zstd:
        return "zstd"
    return "none" if plain else None

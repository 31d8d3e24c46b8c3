"""The file operations of the JSONL backend, behind one replaceable object.

Every OS call that writes, syncs or cuts a log goes through a ``FileOps`` so tests
can make one fail (``backend._os = FailingOps(...)``) and check that nothing half
written survives. ``read_stable`` reads a whole file under a stable revision.
"""

from __future__ import annotations

import os
from typing import Final

__all__ = ["FileOps", "read_at", "read_stable", "revision", "write_all"]

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX
    fcntl = None  # type: ignore[assignment]

_O_CLOEXEC: Final = getattr(os, "O_CLOEXEC", 0)
_O_DIRECTORY: Final = getattr(os, "O_DIRECTORY", 0)


# fdatasync is enough for a log file: it flushes the data and the size that reading
# it needs, not timestamps, and costs ~20% less than fsync here. Names are made
# durable by a full fsync of their directory. Platforms without it fall back to fsync.
_sync_data: Final = getattr(os, "fdatasync", os.fsync)


class FileOps:
    """Thin wrappers of the ``os`` calls the backend makes. Subclass to inject faults."""

    def open(self, path: str, flags: int, mode: int = 0o600) -> int:
        return os.open(path, flags | _O_CLOEXEC, mode)

    def write(self, fd: int, data: bytes | memoryview) -> int:
        return os.write(fd, data)

    def pwrite(self, fd: int, data: bytes | memoryview, offset: int) -> int:
        return os.pwrite(fd, data, offset)

    def fsync(self, fd: int, *, directory: bool = False) -> None:
        """Make a file's data and the metadata needed to read it (its size) durable, or
        with ``directory`` all of an open directory (a full fsync)."""
        if directory:
            os.fsync(fd)
        else:
            _sync_data(fd)

    def ftruncate(self, fd: int, size: int) -> None:
        os.ftruncate(fd, size)

    def size(self, fd: int) -> int:
        return os.fstat(fd).st_size

    def close(self, fd: int) -> None:
        os.close(fd)

    def lock(self, fd: int) -> None:
        """Take an exclusive advisory lock on an open log (released when ``fd`` closes).

        Appends and repairs hold it from the size check to the fsync, so two writers in
        different processes (or two backends in one) can never interleave their bytes.
        """
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_EX)

    def mkdir(self, path: str, mode: int) -> None:
        os.mkdir(path, mode)

    def link(self, source: str, target: str) -> None:
        os.link(source, target)

    def unlink(self, path: str) -> None:
        os.unlink(path)

    def fsync_dir(self, path: str) -> None:
        """Make a directory's entries durable (POSIX)."""
        fd = os.open(path, os.O_RDONLY | _O_DIRECTORY | _O_CLOEXEC)
        try:
            self.fsync(fd, directory=True)
        finally:
            os.close(fd)


def write_all(ops: FileOps, fd: int, data: bytes, offset: int | None = None) -> None:
    """Write every byte of ``data`` (``os.write`` may write less than asked), at the file
    position or, with ``offset``, from there on (``pwrite``)."""
    view = memoryview(data)
    while view:
        written = ops.write(fd, view) if offset is None else ops.pwrite(fd, view, offset)
        if written <= 0:
            raise OSError("write returned no progress")
        view = view[written:]
        if offset is not None:
            offset += written


def read_at(fd: int, size: int, offset: int) -> bytes:
    """``size`` bytes from ``offset`` (fewer at the end of the file)."""
    parts: list[bytes] = []
    while size > 0:
        part = os.pread(fd, size, offset)
        if not part:
            break
        parts.append(part)
        size -= len(part)
        offset += len(part)
    return b"".join(parts)


def revision(stat: os.stat_result) -> str:
    """``dev:ino:size:mtimeNs:ctimeNs`` (FORMAT §9.7)."""
    return f"{stat.st_dev}:{stat.st_ino}:{stat.st_size}:{stat.st_mtime_ns}:{stat.st_ctime_ns}"


def read_stable(path: str, attempts: int = 100) -> bytes:
    """The file's bytes, read again while a writer changes it between two stats."""
    for _ in range(attempts):
        before = revision(os.stat(path))
        with open(path, "rb") as handle:
            data = handle.read()
        if revision(os.stat(path)) == before:
            return data
    return data

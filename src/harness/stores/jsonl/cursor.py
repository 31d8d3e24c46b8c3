"""What the JSONL backend knows of one session's log (``Cursor``), and how it resyncs from
the file after a write of unknown outcome (``resync``).

A write's outcome is unknown when its fsync failed and so did the rollback, or when a
publish's directory fsync failed (see ``backend``): the file may hold the batch, a part
of it or nothing, and the bytes it shows may not be durable (fsyncgate: after a failed
fsync the kernel may keep the pages clean in its cache although they never reached the
disk, so a second bare fsync would prove nothing). ``resync`` looks at the file:

* it holds the whole batch at its offset: adopted — the bytes are written again at
  their offset and fsync'd, and the cursor moves past them;
* it holds a prefix of it (or nothing past the committed end): cut back to the committed
  end and fsync'd; the caller writes the batch anew;
* anything else: ``SessionConflict`` (the log changed outside this backend).

A failure while resyncing is again ``OutcomeUnknown`` and the cursor stays unknown.
"""

from __future__ import annotations

import asyncio
import contextlib
import os

from harness.errors import OutcomeUnknown, PersistenceFailed, SessionConflict
from harness.session.header import SessionHeader
from harness.stores.jsonl.fileio import FileOps, read_at, write_all
from harness.stores.jsonl.reader import LogScan

__all__ = ["Cursor", "Unknown", "io_error", "linked", "resync", "unknown_error"]


class Unknown:
    """A write whose outcome is unknown: ``data`` meant to land at byte ``offset`` (0 for a
    publish: the whole file), after which the session would hold ``length`` events."""

    __slots__ = ("data", "length", "offset")

    def __init__(self, offset: int, data: bytes, length: int) -> None:
        self.offset = offset
        self.data = data
        self.length = length


class Cursor:
    """What the backend knows of one session's log."""

    __slots__ = (
        "committed",
        "header",
        "ino",
        "length",
        "lock",
        "path",
        "published",
        "scan",
        "unknown",
        "writer",
    )

    def __init__(self, header: SessionHeader, path: str) -> None:
        self.header = header
        self.path = path
        self.published = False
        self.writer: str | None = None  # the store of the write under way (``writing_as``)
        self.length = 0  # committed events
        self.committed = 0  # byte size of the committed log; appends start here
        self.ino: int | None = None  # the log file's inode when last seen (a new file: changed)
        self.scan: LogScan | None = None  # the last read, while it found a torn tail
        self.unknown: Unknown | None = None  # a failed write to resync from the file first
        self.lock = asyncio.Lock()

    def adopt(self, scan: LogScan) -> None:
        """Take the state of a fresh read of the log."""
        assert scan.path is not None
        self.header = scan.header
        self.path = scan.path
        self.published = True
        self.length = len(scan.events)
        # With a torn tail the file is longer than the committed region: appends are
        # refused (size check) until ``repair`` cuts it.
        self.committed = scan.size if scan.torn is None else scan.committed
        self.scan = scan if scan.torn is not None else None


def io_error(action: str, path: str, error: OSError) -> PersistenceFailed:
    """A failed write that left nothing behind."""
    failed = PersistenceFailed(f"{action} {path} failed: {error}")
    failed.__cause__ = error
    return failed


def unknown_error(action: str, path: str, error: OSError) -> OutcomeUnknown:
    """A failed write whose outcome is unknown."""
    failed = OutcomeUnknown(
        f"{action} {path} failed: {error}; outcome unknown: the next attempt reads the log back first"
    )
    failed.__cause__ = error
    return failed


def linked(temp: str, path: str) -> bool:
    """True when ``path`` names the file ``temp`` names (a link reported failed may have been made)."""
    try:
        return os.path.samefile(temp, path)
    except OSError:
        return False


def resync(ops: FileOps, cursor: Cursor) -> None:
    """Settle ``cursor.unknown`` from the file (see the module doc); clears it on success."""
    unknown = cursor.unknown
    assert unknown is not None
    if cursor.published:
        _resync_append(ops, cursor, unknown)
    else:
        _resync_publish(ops, cursor, unknown)
    cursor.unknown = None


def _resync_publish(ops: FileOps, cursor: Cursor, unknown: Unknown) -> None:
    """A publish whose directory fsync failed: sync the name again if it is ours."""
    path = cursor.path
    try:
        with open(path, "rb") as handle:
            held = handle.read(len(unknown.data) + 1)
    except FileNotFoundError:
        return  # not published: the retry publishes anew
    except OSError as error:
        raise unknown_error("reading back", path, error) from error
    if held != unknown.data:
        return  # another writer's log: the retry's publish reports the conflict
    try:
        # The file's bytes were fsync'd before the link; only the name was in doubt.
        ops.fsync_dir(os.path.dirname(path))
    except OSError as error:
        raise unknown_error("syncing the directory of", path, error) from error
    cursor.published = True
    cursor.committed = len(unknown.data)
    cursor.length = unknown.length


def _resync_append(ops: FileOps, cursor: Cursor, unknown: Unknown) -> None:
    """An append whose rollback failed: adopt the batch if the file holds all of it
    (written again and fsync'd), cut it back if it holds a part, else refuse."""
    path = cursor.path
    offset, data = unknown.offset, unknown.data
    try:
        fd = ops.open(path, os.O_RDWR)
    except OSError as error:
        raise unknown_error("opening", path, error) from error
    try:
        ops.lock(fd)
        size = ops.size(fd)
        if size < offset:
            raise SessionConflict(f"session log {path} is shorter than its committed region ({offset} bytes)")
        held = read_at(fd, min(size - offset, len(data)), offset)
        if held == data:
            write_all(ops, fd, data, offset)  # written again, not only synced (module doc)
            ops.fsync(fd)
            cursor.committed = offset + len(data)
            cursor.length = unknown.length
            cursor.scan = None
        elif data.startswith(held):
            if size > offset:
                ops.ftruncate(fd, offset)
            ops.fsync(fd)  # the cut (or the truncation that did happen) made durable
        else:
            raise SessionConflict(
                f"session log {path} changed outside this backend after a write of unknown outcome; "
                "read it again"
            )
    except OSError as error:
        raise unknown_error("resyncing", path, error) from error
    finally:
        with contextlib.suppress(OSError):
            ops.close(fd)

"""``JsonlBackend``: one append-only JSONL log per session, DeepSeek Harness format v0.

Layout and naming are FORMAT §9.1 (``paths``), the bytes §9.2–9.3 (raw lines, or
one checksummed zstd frame per durable batch), reading §9.6 (``reader``). The
write protocol:

* ``create`` writes nothing. It validates the header and refuses an id that is
  known in memory or stored anywhere under the root.
* The first non-empty ``append`` publishes the log (§9.4): make the root, project
  and session directories (0700), fsyncing each parent; write the header and the
  batch (two frames in zstd mode) to ``<log>.<12 hex>.tmp`` opened exclusively
  (0600); fsync; ``link`` it to the log name (never a rename over an existing
  file); fsync the session directory; remove the temp name.
* Later appends (§9.5) open the log for append, check its size is the committed
  size this backend knows, write the lines (or one frame), fsync. On failure the
  file is truncated back and fsync'd, and ``PersistenceFailed`` raised (nothing
  written). When the rollback fails too, or the directory fsync of a publish, the
  outcome is unknown: ``OutcomeUnknown`` names both errors and the cursor remembers
  the bytes it meant to write. The next call on the session (append, stored_length,
  read, repair) first resyncs from the file: bytes equal to that batch are adopted,
  written again at their offset and fsync'd (a failed fsync may leave pages clean in
  the cache yet never written, so a second bare fsync would prove nothing); a prefix
  of it is cut back; anything else is a ``SessionConflict``. A session is never left
  stuck by our own failed write.
* ``repair`` truncates a torn tail to the committed offset, fsyncs, then appends in
  one batch (zstd: one frame) the events recovered from a torn frame and the closers.
* ``delete`` unlinks the log holding its ``flock``, fsyncs the session directory and
  removes it. A writer that finds the log gone, or unlinked once it holds the lock,
  writes nothing and raises ``SessionNotFound``.

Each session has a cursor: its stored length and the byte size of its committed
log. An append whose first seq is not the stored length is refused with
``SessionConflict`` before anything is written; so is an append to a file whose
size is not the committed size (another writer, or a torn tail not yet repaired).

File I/O runs in worker threads (``BlockingWorkers``, as many as the default
executor would use) by default so an fsync does not stall the event loop;
``threaded=False`` runs it inline. All OS calls that write go through
``self._os`` (a ``FileOps``) so tests can inject failures.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import AsyncGenerator, Callable, Iterator, Sequence
from typing import Any, Final, TypeVar

import zstandard

from harness.errors import (
    CorruptSession,
    HarnessError,
    InvalidSessionId,
    OutcomeUnknown,
    SessionConflict,
    SessionExists,
    SessionNotFound,
    SessionOwner,
    UnsupportedFormat,
)
from harness.events.event import Event
from harness.events.json import dumps
from harness.events.packed import pack_rows
from harness.session.header import SessionHeader, validate_header
from harness.stores.backend import ReadProgress, SessionInfo, StoredLog, TornTail, WireStream, check_batch
from harness.stores.base import never_appended, taken_first
from harness.stores.ids import check_session_id
from harness.stores.jsonl.cursor import Cursor, Unknown, io_error, linked, resync, unknown_error
from harness.stores.jsonl.fileio import FileOps, write_all
from harness.stores.jsonl.frames import encode_frame
from harness.stores.jsonl.headerline import parse_header_line
from harness.stores.jsonl.paths import (
    DIR_MODE,
    FILE_MODE,
    MAX_SEGMENT,
    Compression,
    Layout,
    decode_segment,
    encode_segment,
)
from harness.stores.jsonl.reader import LogScan, read_log_file
from harness.stores.jsonl.scan import first_header, tail_summary
from harness.stores.jsonl.stream import open_log, plain_events, plain_lines, zstd_events, zstd_lines
from harness.stores.jsonl.tail import tail_log
from harness.stores.ownership import Claim, LockFiles, current_writer
from harness.stores.worker import BlockingWorkers

__all__ = ["JsonlBackend"]

_T = TypeVar("_T")
# As many threads as asyncio's default executor: sessions fsync in parallel, each in its order.
_THREADS: Final = min(32, (os.cpu_count() or 1) + 4)
_ENVELOPE: Final = frozenset({"type", "seq", "time", "data"})
OWNERS_DIR: Final = ".harness-owners"
"""The lock files of the sessions' owners (``harness.stores.ownership``), at the root's top:
dsh's loader takes it for a project directory and finds no session in it."""


class _PublishedElsewhere(Exception):
    """Publishing found a log already at the path: another writer created the id first."""


def _deleted(path: str) -> SessionNotFound:
    return SessionNotFound(f"session log {path} was deleted: nothing was written")


def _plain_event(obj: dict[str, Any]) -> Event | None:
    """A recovered wire event as an ``Event`` when its envelope is exactly the plain one."""
    if obj.keys() != _ENVELOPE or type(obj["seq"]) is not int or type(obj["time"]) is not int:
        return None
    kind = obj["type"]
    if type(kind) is not str:
        return None
    return Event(kind, obj["seq"], obj["time"], dumps(obj["data"]))


class JsonlBackend:
    """Session logs as files under ``root`` (FORMAT §9). See the module doc.

    ``compression``: ``"zstd"`` (default, ``session.jsonl.zstd``) or ``"none"``
    (``session.jsonl``). ``pack_chunks``: write runs of delta chunks as packed rows
    (reading them is unconditional).
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        compression: Compression = "zstd",
        pack_chunks: bool = True,
        *,
        threaded: bool = True,
    ) -> None:
        self._layout = Layout(root, compression)
        self._compression: Compression = compression
        self._pack = pack_chunks
        self._threaded = threaded
        self._cursors: dict[str, Cursor] = {}
        self._root_checked = False
        self._os = FileOps()
        self._worker = BlockingWorkers("harness-jsonl", threads=_THREADS)
        self._claims = LockFiles(os.path.join(self._layout.root, OWNERS_DIR))

    @property
    def root(self) -> str:
        return self._layout.root

    @property
    def compression(self) -> Compression:
        return self._compression

    tail_polls = True
    """Its live tail polls the log (``capabilities.tail_wakes_on_commit``)."""

    def session_files(self) -> Iterator[tuple[str, str]]:
        """``(session id, path)`` of every log under the root (``capabilities.SessionFiles``);
        a folder whose name harness did not make is skipped, as the store skips it."""
        for path in self._layout.all_logs():
            session_id = decode_segment(os.path.basename(os.path.dirname(path)))
            if session_id is not None:
                yield session_id, path

    def reopen(self) -> JsonlBackend:
        """A new backend over the same root, with nothing this one learned cached."""
        return JsonlBackend(self.root, self._compression, self._pack, threaded=self._threaded)

    def locate(self, header: SessionHeader) -> str:
        """The log path of a session (nothing is touched)."""
        return self._layout.log_path(header.cwd, header.id)

    async def _run(self, function: Callable[..., _T], *args: Any) -> _T:
        if self._threaded:
            return await self._worker.run(function, *args)
        return function(*args)

    def _check_root(self) -> None:
        if not self._root_checked:
            self._layout.check_root()
            self._root_checked = True

    # ---- encoding ---------------------------------------------------------------------

    def _body(self, lines: list[bytes]) -> bytes:
        body = b"\n".join(lines) + b"\n"
        return encode_frame(body) if self._compression == "zstd" else body

    def _lines(self, batch: Sequence[Event]) -> list[bytes]:
        return pack_rows(batch) if self._pack else [event.encode() for event in batch]

    def _header_bytes(self, header: SessionHeader) -> bytes:
        line = dumps(header.to_json(line=True)) + b"\n"
        return encode_frame(line) if self._compression == "zstd" else line

    # ---- discovery --------------------------------------------------------------------

    def _read_sync(self, session_id: str) -> LogScan:
        """Find and parse the log of ``session_id``; its header must name this id and path."""
        self._check_root()
        path = self._layout.find_log(session_id)
        if path is None:
            raise SessionNotFound(f"no stored session {session_id!r} under {self._layout.root}")
        scan = read_log_file(path, self._compression, session_id)
        self._check_identity(session_id, scan.header, path)
        return scan

    def _check_identity(self, session_id: str, header: SessionHeader, path: str) -> None:
        """The header read from ``path`` must name ``session_id`` and belong at ``path``."""
        if header.id != session_id:
            raise CorruptSession(
                f"corrupt session log: requested id {session_id!r} does not match header id {header.id!r}",
                path=path,
                offset=0,
            )
        expected = self._layout.log_path(header.cwd, header.id)
        if not self._layout.same_file(path, expected):
            raise CorruptSession(
                f"corrupt session log: header id {header.id!r} and cwd {header.cwd!r} identify {expected}",
                path=path,
                offset=0,
            )

    async def _cursor(self, session_id: str) -> Cursor:
        """The cursor of a known session, learning a stored one from disk."""
        cursor = self._cursors.get(session_id)
        if cursor is not None:
            return cursor
        check_session_id(session_id)
        scan = await self._run(self._read_sync, session_id)
        cursor = self._cursors.get(session_id)  # another task may have got there first
        if cursor is None:
            assert scan.path is not None
            cursor = Cursor(scan.header, scan.path)
            cursor.adopt(scan)
            with contextlib.suppress(OSError):  # the file read; a later check compares sizes
                cursor.ino = os.stat(scan.path).st_ino
            self._cursors[session_id] = cursor
        return cursor

    # ---- create -----------------------------------------------------------------------

    def _check_new_sync(self, header: SessionHeader) -> None:
        self._check_root()
        existing = self._layout.find_log(header.id)
        if existing is not None:
            raise SessionExists(f"session {header.id!r} already exists at {existing}")
        opposite = self._layout.opposite_log_path(header.cwd, header.id)
        if os.path.lexists(opposite):
            raise self._layout.encoding_mismatch(opposite)

    async def create(self, header: SessionHeader) -> None:
        check_session_id(header.id)
        validate_header(header)  # InvalidHeader for a bad createdAt and the like
        if len(encode_segment(header.id)) > MAX_SEGMENT:
            raise InvalidSessionId(f"session id {header.id!r} is too long to name a directory")
        if header.id in self._cursors:
            raise SessionExists(f"session {header.id!r} already exists")
        await self._run(self._check_new_sync, header)
        if header.id in self._cursors:
            raise SessionExists(f"session {header.id!r} already exists")
        self._cursors[header.id] = Cursor(header, self.locate(header))

    # ---- append -----------------------------------------------------------------------

    async def append(self, session_id: str, batch: Sequence[Event]) -> None:
        cursor = await self._cursor(session_id)
        if not batch:
            return
        async with cursor.lock:
            await self._settle(cursor)
            check_batch(session_id, cursor.length, batch)
            # Encoding is CPU work under the GIL: done here it runs warm on the loop's
            # thread instead of costing a second thread the same time (measured ~20% less).
            lines = self._lines(batch)
            length = batch[-1].seq + 1
            cursor.writer = current_writer()
            if cursor.published:
                try:
                    await self._run(self._append_sync, cursor, lines, length)
                except SessionNotFound:
                    self._forget(session_id, cursor)
                    raise
                return
            try:
                await self._run(self._publish_sync, cursor, lines, length)
                return
            except _PublishedElsewhere:
                # Another writer published this id first: our reservation lapses, and
                # the caller may go on from the stored length like any other writer.
                if self._cursors.get(session_id) is cursor:
                    del self._cursors[session_id]
        stored = await self._cursor(session_id)
        raise taken_first(session_id, stored.length, batch[0].seq)

    def _make_dir(self, path: str) -> None:
        """Create ``path`` (0700) and any missing parents, then fsync the parent."""
        parent = os.path.dirname(path)
        if not os.path.isdir(path):
            if parent != path and not os.path.isdir(parent):
                self._make_dir(parent)
            with contextlib.suppress(FileExistsError):
                self._os.mkdir(path, DIR_MODE)
        self._os.fsync_dir(parent)

    def _publish_sync(self, cursor: Cursor, lines: list[bytes], length: int) -> None:
        layout = self._layout
        header = cursor.header
        path = cursor.path
        session_dir = os.path.dirname(path)
        data = self._header_bytes(header) + self._body(lines)
        try:
            self._make_dir(layout.root)
            self._make_dir(os.path.dirname(session_dir))
            self._make_dir(session_dir)
        except OSError as error:
            raise io_error("creating the directories of", path, error) from error
        if os.path.lexists(path):
            raise _PublishedElsewhere(path)
        self._claims.check(header.id, cursor.writer)
        opposite = layout.opposite_log_path(header.cwd, header.id)
        if os.path.lexists(opposite):
            raise layout.encoding_mismatch(opposite)
        ops = self._os
        temp = f"{path}.{secrets.token_hex(6)}.tmp"
        try:
            fd = ops.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
        except OSError as error:
            raise io_error("creating", temp, error) from error
        try:
            try:
                write_all(ops, fd, data)
                ops.fsync(fd)
            finally:
                ops.close(fd)
        except OSError as error:
            self._discard(temp)
            raise io_error("publishing", path, error) from error
        try:
            ops.link(temp, path)
        except FileExistsError:
            self._discard(temp)
            raise _PublishedElsewhere(path) from None
        except OSError as error:
            if not linked(temp, path):  # else the link was made and only its report failed
                self._discard(temp)
                raise io_error("publishing", path, error) from error
        self._discard(temp)
        try:
            ops.fsync_dir(session_dir)
        except OSError as error:
            # The name is there but may not survive a crash: the next attempt syncs it again
            # (or publishes anew if it is gone), never reports it absent.
            cursor.unknown = Unknown(0, data, length)
            raise unknown_error("syncing the directory of", path, error) from error
        cursor.published = True
        cursor.committed = len(data)
        cursor.length = length
        with contextlib.suppress(OSError):
            cursor.ino = os.stat(path).st_ino

    # ---- resync after a write of unknown outcome ----------------------------------------

    async def _settle(self, cursor: Cursor) -> None:
        """Resolve a write of unknown outcome from the file (call it holding ``cursor.lock``)."""
        if cursor.unknown is not None:
            await self._run(resync, self._os, cursor)

    async def _settled(self, session_id: str) -> Cursor:
        """The cursor of a known session, with any unknown outcome resolved first."""
        cursor = await self._cursor(session_id)
        if cursor.unknown is not None:
            async with cursor.lock:
                await self._settle(cursor)
        return cursor

    def _discard(self, temp: str) -> None:
        with contextlib.suppress(OSError):
            self._os.unlink(temp)

    def _append_sync(self, cursor: Cursor, lines: list[bytes], length: int) -> None:
        self._write_sync(cursor, self._body(lines), length)

    def _write_sync(self, cursor: Cursor, data: bytes, length: int) -> None:
        """Append ``data`` durably at the committed end of the log (the session then holds
        ``length`` events), or leave the log as it was, or, when even the rollback fails,
        record the write as unknown (``OutcomeUnknown``)."""
        ops = self._os
        path = cursor.path
        try:
            fd = ops.open(path, os.O_WRONLY | os.O_APPEND)
        except FileNotFoundError:
            raise _deleted(path) from None
        except OSError as error:
            raise io_error("opening", path, error) from error
        try:
            try:
                ops.lock(fd)
                if os.fstat(fd).st_nlink == 0:  # deleted between our open and our lock
                    raise _deleted(path)
                self._claims.check(cursor.header.id, cursor.writer)
                size = ops.size(fd)
            except OSError as error:
                raise io_error("reading the size of", path, error) from error
            if size != cursor.committed:
                raise SessionConflict(
                    f"session log {path} has {size} bytes where {cursor.committed} are committed: "
                    f"{self._who_wrote(cursor.header.id)}; read it again (and repair it) first"
                )
            try:
                write_all(ops, fd, data)
                ops.fsync(fd)
            except OSError as error:
                try:
                    ops.ftruncate(fd, size)
                    ops.fsync(fd)
                except OSError as rollback:
                    cursor.unknown = Unknown(size, data, length)
                    raise OutcomeUnknown(
                        f"failed to roll back append to {path}: the append failed ({error}) and "
                        f"truncating back to {size} bytes failed ({rollback}); outcome unknown: "
                        "the next attempt reads the log back and adopts or cuts the batch"
                    ) from ExceptionGroup(f"failed to roll back append to {path}", [error, rollback])
                raise io_error("appending to", path, error) from error
            cursor.committed = size + len(data)
            cursor.length = length
            cursor.ino = os.fstat(fd).st_ino
        finally:
            with contextlib.suppress(OSError):
                ops.close(fd)

    # ---- read / repair ----------------------------------------------------------------

    async def _readable(self, session_id: str) -> Cursor | None:
        """The cursor of a session to read (``None``: not known here yet), settled; a session
        created here and not yet appended to is ``SessionNotFound``."""
        cursor = self._cursors.get(session_id)
        if cursor is not None and cursor.unknown is not None:
            cursor = await self._settled(session_id)
        if cursor is not None and not cursor.published:
            raise never_appended(session_id)
        check_session_id(session_id)
        return cursor

    async def read(self, session_id: str) -> StoredLog:
        """The log as a ``WireStream`` when it opens cleanly (events decoded as the
        store validates them), else the exact read (see ``read_exact``)."""
        cursor = await self._readable(session_id)
        if cursor is None or cursor.scan is None:
            try:
                opened = await self._run(self._open_stream, session_id)
            except (HarnessError, OSError, ValueError, zstandard.ZstdError):
                opened = None  # the exact read says precisely what is wrong
            if opened is not None:
                return opened
        return await self.read_exact(session_id)

    def _open_stream(self, session_id: str) -> StoredLog | None:
        self._check_root()
        path = self._layout.find_log(session_id)
        if path is None:
            return None
        opened = open_log(path, session_id, zstd=self._compression == "zstd")
        if opened is None:
            return None
        header = opened.header
        self._check_identity(session_id, header, path)
        size = opened.size
        finished = self._stream_finished(header, path, size)
        progress = ReadProgress(size)
        buf = opened.buf
        if buf is not None:
            frames = opened.frames
            events = lambda: zstd_events(buf, frames, finished, progress)  # noqa: E731
            lines = lambda: zstd_lines(buf, frames, progress)  # noqa: E731
        else:
            start = opened.start
            events = lambda: plain_events(path, start, size, finished, progress)  # noqa: E731
            lines = lambda: plain_lines(path, start, size, progress)  # noqa: E731
        stream = WireStream(
            events, lambda: self.read_exact(session_id), progress, lines=lines, finished=finished
        )
        return StoredLog(header, [], None, path, stream=stream)

    def _stream_finished(self, header: SessionHeader, path: str, size: int) -> Callable[[int], None]:
        def finished(length: int) -> None:
            cursor = self._cursors.get(header.id)
            if cursor is None:
                cursor = self._cursors[header.id] = Cursor(header, path)
            elif cursor.lock.locked() or cursor.scan is not None or cursor.unknown is not None:
                return  # a write, a repair or a resync is under way: keep what it knows
            cursor.header = header
            cursor.path = path
            cursor.published = True
            cursor.length = length
            cursor.committed = size

        return finished

    async def read_exact(self, session_id: str) -> StoredLog:
        """The whole committed log decoded, with a torn tail found and reported."""
        cursor = await self._readable(session_id)
        if cursor is None:
            scan = await self._run(self._read_sync, session_id)
            cursor = self._cursors.get(session_id)
            if cursor is None:
                assert scan.path is not None
                cursor = self._cursors[session_id] = Cursor(scan.header, scan.path)
            async with cursor.lock:
                cursor.adopt(scan)
        else:
            async with cursor.lock:
                try:
                    scan = await self._run(self._read_sync, session_id)
                except SessionNotFound:
                    self._forget(session_id, cursor)  # deleted by another writer
                    raise
                cursor.adopt(scan)
        return scan.stored_log()

    async def repair(self, session_id: str, log: StoredLog, closers: Sequence[Event]) -> None:
        cursor = await self._cursor(session_id)
        async with cursor.lock:
            cursor.writer = current_writer()
            await self._settle(cursor)
            if log.torn is None:
                if closers:
                    check_batch(session_id, cursor.length, closers)
                    await self._run(self._append_sync, cursor, self._lines(closers), closers[-1].seq + 1)
                return
            check_batch(session_id, len(log.events), closers)
            await self._run(self._repair_sync, cursor, log, log.torn, closers)

    def _repair_sync(self, cursor: Cursor, log: StoredLog, torn: TornTail, closers: Sequence[Event]) -> None:
        scan = cursor.scan
        if scan is None or scan.torn != torn:
            # Not the tail this backend last read: look at the file again.
            scan = self._read_sync(cursor.header.id)
            if scan.torn != torn:
                raise SessionConflict(
                    f"session log {cursor.path} changed since it was read; read it again before repairing"
                )
            cursor.scan = scan
        if len(log.events) < scan.stored_below:
            raise SessionConflict("the log given to repair is shorter than the stored committed region")
        ops = self._os
        path = cursor.path
        try:
            fd = ops.open(path, os.O_WRONLY)
        except FileNotFoundError:
            raise _deleted(path) from None
        except OSError as error:
            raise io_error("opening", path, error) from error
        try:
            ops.lock(fd)
            if os.fstat(fd).st_nlink == 0:
                raise _deleted(path)
            self._claims.check(cursor.header.id, cursor.writer)
            size = ops.size(fd)
            if size < torn.committed_offset:
                raise SessionConflict(f"session log {path} is shorter than its committed region")
            if size > torn.committed_offset:
                ops.ftruncate(fd, torn.committed_offset)
                ops.fsync(fd)
        except OSError as error:
            raise io_error("truncating the torn tail of", path, error) from error
        finally:
            ops.close(fd)
        # Cut. Until the batch below is durable the cursor keeps this scan, so a retry
        # of the same repair writes the batch again without cutting anything more.
        cursor.committed = torn.committed_offset
        cursor.length = scan.stored_below
        lines: list[bytes] = []
        plain: list[Event] = []
        for obj in log.events[scan.stored_below :]:
            event = _plain_event(obj)
            if event is not None:
                plain.append(event)
                continue
            lines.extend(self._lines(plain))
            plain.clear()
            lines.append(dumps(obj))
        plain.extend(closers)
        lines.extend(self._lines(plain))
        length = len(log.events) + len(closers)
        if lines:
            self._write_sync(cursor, self._body(lines), length)
        cursor.length = length
        cursor.scan = None

    # ---- delete -----------------------------------------------------------------------

    def _forget(self, session_id: str, cursor: Cursor) -> None:
        if self._cursors.get(session_id) is cursor:
            del self._cursors[session_id]

    async def delete(self, session_id: str) -> None:
        """Unlink the log under its writers' lock, durably, and remove its session directory
        (kept when something else is in it). A writer that opened the log before it went
        sees the file unlinked once it holds the lock, and writes nothing."""
        check_session_id(session_id)
        cursor = self._cursors.get(session_id)
        writer = current_writer()
        if cursor is None:
            removed = await self._run(self._delete_sync, session_id, writer)
        else:
            async with cursor.lock:  # after a write of ours in flight, never during it
                removed = await self._run(self._delete_sync, session_id, writer)
                self._forget(session_id, cursor)
        if not removed and (cursor is None or cursor.published):
            raise SessionNotFound(f"no stored session {session_id!r} under {self._layout.root}")

    def _delete_sync(self, session_id: str, writer: str | None) -> bool:
        self._check_root()
        path = self._layout.find_log(session_id)
        if path is None:
            return False
        ops = self._os
        session_dir = os.path.dirname(path)
        try:
            fd = ops.open(path, os.O_RDONLY)
        except FileNotFoundError:
            return False
        except OSError as error:
            raise io_error("opening", path, error) from error
        try:
            try:
                ops.lock(fd)
                if os.fstat(fd).st_nlink == 0:
                    return False  # another deleter got there first
                self._claims.check(session_id, writer)
                ops.unlink(path)
                ops.fsync_dir(session_dir)
            except OSError as error:
                raise io_error("deleting", path, error) from error
        finally:
            ops.close(fd)
        try:
            os.rmdir(session_dir)
            ops.fsync_dir(os.path.dirname(session_dir))
        except OSError:
            pass  # not empty (a file that is not ours) or already gone: the log is what counts
        return True

    # ---- the rest ---------------------------------------------------------------------

    def tail(self, session_id: str, from_seq: int = 0) -> AsyncGenerator[Event, None]:
        """The committed events with ``seq >= from_seq`` in order, then each new one as it
        commits, until the iterator is closed (``TailingBackend``; see ``jsonl.tail``: it
        polls the log's stat and reads only what a write lock does not cover)."""
        check_session_id(session_id)

        def find_log(wanted: str) -> str | None:
            self._check_root()
            return self._layout.find_log(wanted)

        def pending(wanted: str) -> bool:
            cursor = self._cursors.get(wanted)
            return cursor is not None and not cursor.published

        return tail_log(session_id, from_seq, find_log=find_log, pending=pending, run=self._run)

    async def stored_length(self, session_id: str) -> int:
        """The committed event count; after a write of unknown outcome, learned from the file.
        A log another process wrote since this backend last saw it is read again."""
        cursor = await self._settled(session_id)
        async with cursor.lock:
            unchanged = self._unchanged_sync(cursor)  # one stat: no hop
        if not unchanged:
            if self._cursors.get(session_id) is cursor:
                del self._cursors[session_id]
            cursor = await self._settled(session_id)
        return cursor.length

    def _unchanged_sync(self, cursor: Cursor) -> bool:
        """True while the log file is the one this backend last wrote or read, at that size."""
        if not cursor.published:
            return True  # created here, nothing written yet: there is no file to compare
        try:
            stat = os.stat(cursor.path)
        except OSError:
            return False
        return stat.st_size == cursor.committed and cursor.ino in (None, stat.st_ino)

    def _list_sync(self) -> list[SessionInfo]:
        self._check_root()
        layout = self._layout
        seen: dict[str, str] = {}
        out: list[SessionInfo] = []
        for path in layout.all_logs():
            folder = os.path.basename(os.path.dirname(path))
            named = decode_segment(folder) or folder  # the id this directory stands for
            if named in seen:
                raise layout.duplicate(named, [seen[named], path])
            seen[named] = path
            try:
                header = self._listed_header(path)
            except (CorruptSession, UnsupportedFormat) as error:
                out.append(self._damaged(named, path, str(error)))
                continue
            tail = tail_summary(path, self._compression)
            out.append(
                SessionInfo(
                    id=header.id,
                    created_at=header.created_at,
                    cwd=header.cwd,
                    event_count=tail.event_count,
                    last_activity=tail.last_activity,
                    title=tail.title,
                    location=path,
                    parent=header.parent_session,
                )
            )
        return out

    def _listed_header(self, path: str) -> SessionHeader:
        """The header of the log at ``path``, which must belong there; otherwise the error
        a load would raise (FORMAT §13 case 57: a corrupt header frame is one)."""
        line = first_header(path, self._compression)
        if line is None:
            raise CorruptSession("corrupt session log: empty or header-less session log", path=path, offset=0)
        header = parse_header_line(line, path=path)
        try:
            expected = self._layout.log_path(header.cwd, header.id)
        except InvalidSessionId as error:
            raise CorruptSession(
                f"corrupt session log: header id and cwd cannot name a storage path ({error})",
                path=path,
                offset=0,
            ) from None
        if not self._layout.same_file(path, expected):
            raise CorruptSession(
                f"corrupt session log: header id {header.id!r} and cwd {header.cwd!r} identify {expected}",
                path=path,
                offset=0,
            )
        return header

    def _damaged(self, session_id: str, path: str, problem: str) -> SessionInfo:
        """A listed session whose header does not read (named by its directory)."""
        try:
            tail = tail_summary(path, self._compression)
        except (OSError, ValueError):
            tail = None
        return SessionInfo(
            id=session_id,
            created_at=None,
            cwd=None,
            event_count=tail.event_count if tail is not None else 0,
            last_activity=tail.last_activity if tail is not None else None,
            location=path,
            problem=problem,
        )

    async def list(self) -> list[SessionInfo]:
        """Every log under the root, from its header and the end of the file (FORMAT §9.7).

        A log whose header does not read as a load reads it (empty, header-less, a zstd
        header frame failing its checksum — §13 case 57 —, not a header, a newer version,
        a header naming another path) is listed with ``problem`` set, named by its
        directory; the reference skips some of these and fails the whole listing on
        others. A root breaking the layout rules (§9.1) raises."""
        return await self._run(self._list_sync)

    # ---- ownership (harness.stores.ownership) -----------------------------------------

    async def claim(self, session_id: str, owner: SessionOwner, *, take_over: bool = False) -> Claim:
        """Take the session's lock file (see ``LockFiles``); a takeover renames its own over
        the old one while holding the log's ``flock``, so no write of the old owner runs."""
        check_session_id(session_id)
        if not take_over:  # a few local syscalls that never wait (a taken lock is refused): no hop
            return self._claims.claim(session_id, owner, False, self._fence(session_id))
        return await self._run(self._claims.claim, session_id, owner, take_over, self._fence(session_id))

    def _fence(self, session_id: str) -> Callable[[Callable[[], None]], None]:
        def fence(action: Callable[[], None]) -> None:
            path = self._layout.find_log(session_id)
            if path is None:
                action()
                return
            try:
                fd = os.open(path, os.O_RDONLY)
            except FileNotFoundError:
                action()
                return
            try:
                self._os.lock(fd)
                action()
            finally:
                os.close(fd)

        return fence

    async def unclaim(self, session_id: str) -> None:
        self._claims.release(session_id)  # an unlock, an unlink and a close: no hop

    async def owner(self, session_id: str) -> SessionOwner | None:
        check_session_id(session_id)
        return await self._run(self._claims.owner, session_id)

    def _who_wrote(self, session_id: str) -> str:
        """Why a log is not the size this backend committed, as far as ownership can tell."""
        owner = self._claims.owner(session_id)
        if owner is not None and not self._claims.holds(session_id):
            return f"it was written by its owner, {owner.describe()}"
        return "it changed outside this backend (a writer that owned nothing) or has a torn tail"

    async def close(self) -> None:
        await self._run(self._claims.release_all)
        # A write of unknown outcome is remembered: a later use resyncs before trusting the file.
        self._cursors = {key: cursor for key, cursor in self._cursors.items() if cursor.unknown is not None}
        self._worker.close()
        self._worker = BlockingWorkers("harness-jsonl", threads=_THREADS)  # the backend stays usable

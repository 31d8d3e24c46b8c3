"""Reading a JSONL log into its committed events (FORMAT §9.2–9.3, §9.6, §7.4).

``parse_log`` turns the bytes of a raw or zstd log into a ``LogScan``: the header,
the committed events (wire objects, packed rows expanded), where the committed
region ends and, when a crash cut the last write short, a ``TornTail``. Damage the
format calls corruption raises ``CorruptSession`` (with the byte offset); a foreign
version raises ``UnsupportedFormat``. Nothing here writes.

``read_session_file(path)`` opens one log file as a ``Session`` without writing
anything: the stored events plus the closers a crash repair would commit.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import zstandard

from harness.errors import CorruptSession, HarnessError, InvalidSeed
from harness.events.collector import collector_paused
from harness.session.header import SessionHeader
from harness.session.session import Session
from harness.stores.backend import ReadProgress, StoredLog, StreamRejected, TornTail
from harness.stores.fastrestore import fast_events
from harness.stores.jsonl.fileio import read_stable
from harness.stores.jsonl.frames import (
    FrameError,
    decode_frame,
    decode_torn,
    frames_follow,
    header_line_of,
    scan_frames,
)
from harness.stores.jsonl.headerline import parse_header_line
from harness.stores.jsonl.paths import Compression
from harness.stores.jsonl.scanner import LineScanner
from harness.stores.jsonl.stream import open_log, plain_lines, zstd_lines
from harness.stores.legacy import check_closers
from harness.stores.store import restore_stored

__all__ = ["LogScan", "compression_of", "parse_log", "read_log_file", "read_session_file"]

_ZSTD = "corrupt Zstandard session log"


@dataclass
class LogScan:
    """What a log holds.

    ``committed`` is the byte offset where the committed region ends: the file size
    when nothing is torn, else where a repair truncates (raw: after the last good
    line; zstd: the start of the torn frame). ``stored_below`` counts the events
    stored before ``committed``; in zstd mode the events after them were recovered
    from the torn frame and a repair writes them again.
    """

    header: SessionHeader
    events: list[dict[str, Any]]
    size: int
    committed: int
    stored_below: int
    torn: TornTail | None
    path: str | None = None

    def stored_log(self) -> StoredLog:
        return StoredLog(self.header, self.events, self.torn, self.path)


def compression_of(path: str) -> Compression:
    return "zstd" if path.endswith(".zstd") else "none"


def _parse_raw(buf: bytes, path: str | None, session_id: str | None) -> LogScan:
    end = buf.find(b"\n")
    if end == -1:
        raise CorruptSession("corrupt session log: empty or header-less session log", path=path, offset=0)
    header = parse_header_line(buf[:end], session_id=session_id, path=path)
    scanner = LineScanner(path=path, start=end + 1)
    scanner.feed(buf[end + 1 :])
    torn = None
    if not scanner.clean:
        issue = scanner.issue
        detail = issue.message if issue is not None else "the last line has no newline"
        torn = TornTail(scanner.committed, f"torn tail at byte {scanner.committed}: {detail}")
    size = len(buf)
    events = scanner.events
    return LogScan(header, events, size, scanner.committed, len(events), torn, path)


def _parse_zstd(buf: bytes, path: str | None, session_id: str | None) -> LogScan:
    try:
        scan = scan_frames(buf)
    except FrameError as error:
        raise CorruptSession(f"{_ZSTD}: {error}", path=path, offset=error.offset) from None
    if not scan.frames:
        raise CorruptSession(f"{_ZSTD}: empty or header-less session log", path=path, offset=0)
    torn_start = scan.torn_start
    if torn_start is not None:
        follow = frames_follow(buf, torn_start)
        if follow is not None:
            raise CorruptSession(
                f"{_ZSTD}: the frame at byte {torn_start} is damaged (complete frames follow it at byte "
                f"{follow})",
                path=path,
                offset=torn_start,
            )
    view = memoryview(buf)
    first_start, first_end = scan.frames[0]
    first = header_line_of(view[first_start:first_end], path=path, offset=first_start)
    header = parse_header_line(first, session_id=session_id, path=path)
    scanner = LineScanner(path=path, start=len(first) + 1)
    for start, end in scan.frames[1:]:
        try:
            plaintext = decode_frame(view[start:end])
        except (zstandard.ZstdError, ValueError) as error:
            raise CorruptSession(
                f"{_ZSTD}: complete frame at byte {start} failed validation ({error})",
                path=path,
                offset=start,
            ) from None
        scanner.feed(plaintext, error_offset=start)
        if not scanner.clean:
            issue = scanner.issue
            detail = issue.message if issue is not None else "its last line has no newline"
            raise CorruptSession(
                f"{_ZSTD}: complete frame contains a torn JSONL record ({detail})", path=path, offset=start
            )
    stored_below = len(scanner.events)
    torn = None
    committed = len(buf)
    if torn_start is not None:
        committed = torn_start
        scanner.feed(decode_torn(view[torn_start:]), error_offset=torn_start)
        recovered = len(scanner.events) - stored_below
        torn = TornTail(
            torn_start,
            f"torn Zstandard frame at byte {torn_start} ({len(buf) - torn_start} bytes); "
            f"{recovered} complete events recovered from it",
        )
    return LogScan(header, scanner.events, len(buf), committed, stored_below, torn, path)


def parse_log(
    buf: bytes, compression: Compression, *, path: str | None = None, session_id: str | None = None
) -> LogScan:
    """Parse a whole log (see the module doc). ``session_id`` names a refused session
    whose header has no id; ``path`` is reported in errors."""
    with collector_paused():
        if compression == "zstd":
            return _parse_zstd(buf, path, session_id)
        return _parse_raw(buf, path, session_id)


def read_log_file(
    path: str, compression: Compression | None = None, session_id: str | None = None
) -> LogScan:
    """``parse_log`` of a file read under a stable revision (the suffix picks the encoding)."""
    return parse_log(read_stable(path), compression or compression_of(path), path=path, session_id=session_id)


def read_session_file(path: str) -> Session:
    """Open the log at ``path`` (raw, or zstd when it ends in ``.zstd``) as a ``Session``.

    Inspect semantics: nothing is written, not even a torn tail's truncation. The
    file goes through the load pipeline of FORMAT §7.4 (``restore_stored``: format
    refusals, legacy normalisation, full validation, crash repair), so the session
    holds the committed events, then the closers a crash repair would add for a turn
    left open (FORMAT §8), then the ``session/end-seed`` every restore appends.
    Raises ``CorruptSession`` or ``UnsupportedFormat`` like a load.
    """
    streamed = _read_streamed(path)
    if streamed is not None:
        return streamed
    scan = read_log_file(path)
    session, _closers = restore_stored(scan.header.id, scan.stored_log())
    return session


def _open_lines(path: str) -> tuple[SessionHeader, Iterator[bytes]] | None:
    """The header and the lines of a log that opens cleanly, else ``None``."""
    opened = open_log(path, None, zstd=compression_of(path) == "zstd")
    if opened is None:
        return None
    progress = ReadProgress(0)
    if opened.buf is not None:
        return opened.header, zstd_lines(opened.buf, opened.frames, progress)
    return opened.header, plain_lines(path, opened.start, opened.size, progress)


def _read_streamed(path: str) -> Session | None:
    """``read_session_file`` on the fast path (``harness.stores.fastrestore``); ``None``
    for anything it does not settle, which the exact pipeline then reads."""
    try:
        opened = _open_lines(path)
    except (HarnessError, OSError, ValueError, zstandard.ZstdError):
        return None  # the exact read says precisely what is wrong
    if opened is None:
        return None
    header, lines = opened
    try:
        with collector_paused():
            session, closers = Session.from_checked(header.id, fast_events(lines), header)
            check_closers(closers)
    except (StreamRejected, InvalidSeed):
        return None
    return session

"""Streamed reading of a healthy JSONL log, for a restore that keeps no decoded copy.

A healthy log is the common case: every line parses, seqs run on from 0, the last
line ends with its newline (zstd: every frame is complete and checksums). The
generators here decode such a log one line at a time, reading a plain file in
blocks and a zstd file one frame at a time, so a restore holds the committed
events it builds and one block, never the whole decoded log. Anything else (a
torn tail, damage, a file that changed while read) raises ``StreamRejected``: the
backend's exact reader (``reader.parse_log``) then applies the format's rules.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import Any, Final, NamedTuple

import zstandard

from harness.events.json import loads
from harness.events.packed import PackedRowError, expand_row, is_packed_row
from harness.session.header import SessionHeader
from harness.stores.backend import ReadProgress, StreamRejected
from harness.stores.jsonl.fileio import read_stable
from harness.stores.jsonl.frames import decode_frame, header_line_of, scan_frames
from harness.stores.jsonl.headerline import parse_header_line

__all__ = ["BLOCK_SIZE", "LogStart", "open_log", "plain_events", "plain_lines", "zstd_events", "zstd_lines"]

BLOCK_SIZE: Final = 1 << 16
"""Bytes read at a time: a block, its split lines and the next one's join are a restore's only
transient copies of the file (64 KiB: 1.14× the file at peak for a 10 MB log, 1 MiB: 1.38×)."""

HEADER_LIMIT: Final = 1 << 20
"""A longer first line is left to the exact reader."""


class LogStart(NamedTuple):
    """Where the events of a log that opens cleanly begin (``open_log``)."""

    header: SessionHeader
    size: int
    """The file's size when it was opened (the stream reads no further)."""
    start: int
    """Plain: the byte after the header line."""
    buf: bytes | None
    """zstd: the whole file, read once; ``None`` for a plain log."""
    frames: list[tuple[int, int]]
    """zstd: the complete frames after the header frame."""


def open_log(path: str, session_id: str | None, *, zstd: bool) -> LogStart | None:
    """The header and extent of the log at ``path``, or ``None`` when it does not open
    cleanly (a first line without its newline, a zstd file with a torn frame): the exact
    reader then says why. ``session_id``, when given, is checked against the header."""
    if zstd:
        buf = read_stable(path)
        scan = scan_frames(buf)
        if scan.torn_start is not None or not scan.frames:
            return None
        first_start, first_end = scan.frames[0]
        line = header_line_of(memoryview(buf)[first_start:first_end], path=path, offset=first_start)
        header = parse_header_line(line, session_id=session_id, path=path)
        return LogStart(header, len(buf), 0, buf, scan.frames[1:])
    with open(path, "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        first = handle.readline(HEADER_LIMIT)
    if not first.endswith(b"\n"):
        return None
    header = parse_header_line(first[:-1], session_id=session_id, path=path)
    return LogStart(header, size, len(first), None, [])

Finished = Callable[[int], None]
"""Called with the event count once a stream was read to its end."""


class _Lines:
    """Turns newline-terminated lines into events with contiguous seqs."""

    __slots__ = ("expected",)

    def __init__(self) -> None:
        self.expected = 0

    def events(self, lines: list[bytes]) -> Iterator[dict[str, Any]]:
        for line in lines:
            try:
                record = loads(line)
            except ValueError as error:  # UnrepresentableJson too: the exact read says which
                raise StreamRejected(f"a line that does not decode ({error})") from None
            if type(record) is not dict:
                raise StreamRejected("a line that is not an object")
            if is_packed_row(record):
                try:
                    members = expand_row(record)
                except PackedRowError:
                    raise StreamRejected("an invalid packed row") from None
            else:
                members = [record]
            for event in members:
                seq = event.get("seq")
                if type(seq) is not int or seq != self.expected:
                    raise StreamRejected(f"seq {seq!r} where {self.expected} was due")
                self.expected += 1
                yield event


def _plain_blocks(path: str, start: int, size: int, progress: ReadProgress) -> Iterator[list[bytes]]:
    """The lines of the plain log at ``path`` from byte ``start`` to ``size``, a block at a time."""
    with open(path, "rb") as handle:
        handle.seek(start)
        remaining = size - start
        pending: list[bytes] = []  # the start of a line longer than a block: joined once, at its end
        while remaining > 0:
            block = handle.read(min(BLOCK_SIZE, remaining))
            if not block:
                raise StreamRejected("the log shrank while it was read")
            remaining -= len(block)
            progress.done = size - remaining
            if pending:
                pending.append(block)
                if b"\n" not in block:
                    continue
                block = b"".join(pending)
            pieces = block.split(b"\n")
            tail = pieces.pop()
            pending = [tail] if tail else []
            del block
            yield pieces
    if pending:
        raise StreamRejected("the last line has no newline")


def _zstd_blocks(buf: bytes, frames: list[tuple[int, int]], progress: ReadProgress) -> Iterator[list[bytes]]:
    """The lines of the complete zstd frames ``frames`` of ``buf``, a frame at a time."""
    view = memoryview(buf)
    for start, end in frames:
        try:
            plaintext = decode_frame(view[start:end])
        except (zstandard.ZstdError, ValueError):
            raise StreamRejected(f"the frame at byte {start} does not decode") from None
        pieces = plaintext.split(b"\n")
        if pieces.pop():
            raise StreamRejected(f"the frame at byte {start} ends inside a line")
        del plaintext
        progress.done = end
        yield pieces


def plain_events(
    path: str, start: int, size: int, finished: Finished, progress: ReadProgress
) -> Iterator[dict[str, Any]]:
    """The events of the plain log at ``path`` between byte ``start`` (after the
    header line) and ``size`` (its size when the read began). ``progress`` counts bytes."""
    lines = _Lines()
    for pieces in _plain_blocks(path, start, size, progress):
        yield from lines.events(pieces)
    finished(lines.expected)


def plain_lines(path: str, start: int, size: int, progress: ReadProgress) -> Iterator[bytes]:
    """The lines (no newline) ``plain_events`` decodes, for ``WireStream.lines``."""
    for pieces in _plain_blocks(path, start, size, progress):
        yield from pieces


def zstd_events(
    buf: bytes, frames: list[tuple[int, int]], finished: Finished, progress: ReadProgress
) -> Iterator[dict[str, Any]]:
    """The events of the complete zstd frames ``frames`` of ``buf`` (the header frame
    excluded), each frame decoded and checked when it is reached. ``progress`` counts
    compressed bytes."""
    lines = _Lines()
    for pieces in _zstd_blocks(buf, frames, progress):
        yield from lines.events(pieces)
    finished(lines.expected)


def zstd_lines(buf: bytes, frames: list[tuple[int, int]], progress: ReadProgress) -> Iterator[bytes]:
    """The lines (no newline) ``zstd_events`` decodes, for ``WireStream.lines``."""
    for pieces in _zstd_blocks(buf, frames, progress):
        yield from pieces

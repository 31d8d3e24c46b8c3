"""Cheap looks at a log for ``list()`` (FORMAT §9.7).

``first_header`` reads only the header: the first line of a raw log, the first
frame of a zstd log (validated by its checksum). ``tail_summary`` finds the event
count, the last activity and the latest title from the end of the log without
validating the whole log; a load does that.
"""

from __future__ import annotations

from typing import Any, Final

import zstandard

from harness.errors import CorruptSession
from harness.events.json import loads
from harness.events.packed import PackedRowError, expand_row, is_packed_row
from harness.stores.jsonl.fileio import read_stable
from harness.stores.jsonl.frames import FrameError, decode_frame, decode_torn, header_line_of, scan_frames
from harness.stores.jsonl.paths import Compression

__all__ = ["TailSummary", "first_header", "tail_summary"]

_CHUNK: Final = 64 * 1024
_ZSTD = "corrupt Zstandard session log"
_TITLE: Final = b'"session/title"'


def _first_raw_line(path: str) -> bytes | None:
    parts: list[bytes] = []
    with open(path, "rb") as handle:
        while True:
            chunk = handle.read(_CHUNK)
            if not chunk:
                return None
            end = chunk.find(b"\n")
            if end != -1:
                parts.append(chunk[:end])
                return b"".join(parts)
            parts.append(chunk)


def _first_zstd_line(path: str) -> bytes | None:
    content = b""
    with open(path, "rb") as handle:
        while True:
            chunk = handle.read(_CHUNK)
            if not chunk:
                return None
            content += chunk
            try:
                scan = scan_frames(content, max_frames=1)
            except FrameError as error:
                raise CorruptSession(f"{_ZSTD}: {error}", path=path, offset=error.offset) from None
            if not scan.frames:
                continue
            start, end = scan.frames[0]
            return header_line_of(content[start:end], path=path, offset=start)


def first_header(path: str, compression: Compression) -> bytes | None:
    """The header line (without newline), or ``None`` for a file without a complete one."""
    return _first_zstd_line(path) if compression == "zstd" else _first_raw_line(path)


class TailSummary:
    __slots__ = ("event_count", "last_activity", "title")

    def __init__(self, event_count: int, last_activity: int | None, title: str | None) -> None:
        self.event_count = event_count
        self.last_activity = last_activity
        self.title = title


def _plaintext(path: str, compression: Compression) -> bytes:
    data = read_stable(path)
    if compression != "zstd":
        return data
    try:
        scan = scan_frames(data)
    except FrameError:
        return b""
    pieces: list[bytes] = []
    view = memoryview(data)
    for start, end in scan.frames:
        try:
            pieces.append(decode_frame(view[start:end]))
        except (zstandard.ZstdError, ValueError):
            return b"".join(pieces)
    if scan.torn_start is not None:
        pieces.append(decode_torn(view[scan.torn_start :]))
    return b"".join(pieces)


def _records(line: bytes) -> list[Any]:
    try:
        record = loads(line)
        if is_packed_row(record):
            return list(expand_row(record))
    except (ValueError, PackedRowError):
        return []
    return [record]


def tail_summary(path: str, compression: Compression) -> TailSummary:
    """Count, last activity and latest ``session/title`` read from the end of the log.

    The count is one more than the seq of the last readable terminated record. Best
    effort: a damaged log gives what its readable tail says.
    """
    text = _plaintext(path, compression)
    header_end = text.find(b"\n")
    if header_end == -1:
        return TailSummary(0, None, None)
    end = text.rfind(b"\n")  # last terminated line ends here
    count, last = 0, None
    while end > header_end:
        start = text.rfind(b"\n", 0, end) + 1
        events = _records(text[start:end])
        final = events[-1] if events else None
        if type(final) is dict and type(final.get("seq")) is int:
            count = final["seq"] + 1
            moment = final.get("time")
            last = moment if type(moment) is int else None
            break
        end = start - 1
    title = None
    found = text.rfind(_TITLE)
    while found > header_end:
        start = text.rfind(b"\n", 0, found) + 1
        stop = text.find(b"\n", found)
        if stop == -1:
            break
        for event in _records(text[start:stop]):
            data = event.get("data") if type(event) is dict and event.get("type") == "session/title" else None
            value = data.get("title") if type(data) is dict else None
            if isinstance(value, str):
                title = value
        if title is not None:
            break
        found = text.rfind(_TITLE, 0, start)
    return TailSummary(count, last, title)

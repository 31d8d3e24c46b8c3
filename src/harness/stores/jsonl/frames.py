"""Zstandard frames of a ``session.jsonl.zstd`` log (FORMAT §9.3, §9.6).

A log is concatenated standard frames, each with the content-checksum flag: frame 1
holds the header line, each later frame one durable batch. ``scan_frames`` walks
the frame structure without decompressing (magic ``0xFD2FB528``, frame header,
block headers, checksum) to find the complete frames and where a torn last frame
starts. ``decode_frame`` decompresses one complete frame and verifies its checksum;
``decode_torn`` recovers what plaintext an incomplete frame still yields.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Final

import zstandard

from harness.errors import CorruptSession

__all__ = [
    "MAGIC",
    "FrameError",
    "FrameScan",
    "decode_frame",
    "decode_torn",
    "encode_frame",
    "frames_follow",
    "scan_frames",
]

MAGIC: Final = b"\x28\xb5\x2f\xfd"  # 0xFD2FB528 little-endian
LEVEL: Final = 3  # zstd's default level


class FrameError(ValueError):
    """Frame bytes that break the Zstandard format. ``offset`` is the byte at fault."""

    def __init__(self, message: str, offset: int) -> None:
        super().__init__(message)
        self.offset = offset


@dataclass
class FrameScan:
    """Complete frames as ``(start, end)`` byte ranges, and where a torn last frame starts."""

    frames: list[tuple[int, int]] = field(default_factory=list)
    torn_start: int | None = None


def _frame_end(buf: bytes, start: int) -> int | None:
    """End offset of the frame at ``start``, or ``None`` when EOF cuts it short."""
    size = len(buf)
    if size - start < 4:
        return None
    if buf[start : start + 4] != MAGIC:
        raise FrameError(f"invalid Zstandard frame magic at byte {start}", start)
    offset = start + 4
    if offset >= size:
        return None
    descriptor = buf[offset]
    if descriptor & 0x18:
        raise FrameError(f"reserved Zstandard frame-header bit set at byte {offset}", offset)
    offset += 1
    size_flag = descriptor >> 6
    single_segment = bool(descriptor & 0x20)
    checksum = bool(descriptor & 0x04)
    dict_flag = descriptor & 0x03
    header_rest = (
        (0 if single_segment else 1)
        + (4 if dict_flag == 3 else dict_flag)
        + ((1 if single_segment else 0) if size_flag == 0 else 1 << size_flag)
    )
    if size - offset < header_rest:
        return None
    offset += header_rest
    while True:
        if size - offset < 3:
            return None
        block = buf[offset] | (buf[offset + 1] << 8) | (buf[offset + 2] << 16)
        block_type = (block >> 1) & 0x03
        if block_type == 3:
            raise FrameError(f"reserved Zstandard block type at byte {offset}", offset)
        offset += 3
        payload = 1 if block_type == 1 else block >> 3
        if size - offset < payload:
            return None
        offset += payload
        if block & 1:
            break
    if checksum:
        if size - offset < 4:
            return None
        offset += 4
    return offset


def scan_frames(buf: bytes, max_frames: int | None = None, start: int = 0) -> FrameScan:
    """Walk the frames of ``buf`` from ``start`` (structure only, nothing decompressed).

    EOF inside a frame makes it torn (``torn_start``); a bad magic, a reserved
    frame-header bit or a reserved block type raises ``FrameError``. With
    ``max_frames``, stops after that many complete frames.
    """
    scan = FrameScan()
    offset = start
    while offset < len(buf):
        end = _frame_end(buf, offset)
        if end is None:
            scan.torn_start = offset
            return scan
        scan.frames.append((offset, end))
        offset = end
        if max_frames is not None and len(scan.frames) >= max_frames:
            return scan
    return scan


def frames_follow(buf: bytes, torn_start: int) -> int | None:
    """Where complete frames ending exactly at EOF start after ``torn_start``, if anywhere.

    A real torn frame is the last write, so nothing complete can follow it. When a
    damaged frame header or block size makes a middle frame look torn, the frames
    after it are still there: finding them turns a would-be truncation into
    corruption instead of silently discarding committed frames.
    """
    position = buf.find(MAGIC, torn_start + 1)
    while position != -1:
        try:
            rest = scan_frames(buf, start=position)
        except FrameError:
            rest = None
        if rest is not None and rest.frames and rest.torn_start is None:
            return position
        position = buf.find(MAGIC, position + 1)
    return None


_local = threading.local()


def _decompressor() -> zstandard.ZstdDecompressor:
    decompressor: zstandard.ZstdDecompressor | None = getattr(_local, "decompressor", None)
    if decompressor is None:
        decompressor = _local.decompressor = zstandard.ZstdDecompressor()
    return decompressor


def decode_frame(frame: bytes | memoryview) -> bytes:
    """The plaintext of one complete frame, its checksum verified.

    Raises ``zstandard.ZstdError`` (or ``ValueError`` when the frame ends early or
    carries extra bytes).
    """
    decoder = _decompressor().decompressobj()
    plaintext = decoder.decompress(frame)
    if not decoder.eof:
        raise ValueError("frame ends before its last block")
    if decoder.unused_data:
        raise ValueError("frame carries bytes after its end")
    return plaintext


def decode_torn(frame: bytes | memoryview) -> bytes:
    """The plaintext an incomplete last frame still yields (``b""`` when none or undecodable)."""
    try:
        return _decompressor().decompressobj().decompress(frame)
    except zstandard.ZstdError:
        return b""


def encode_frame(plaintext: bytes) -> bytes:
    """One standard frame of ``plaintext``: default level, content size and checksum written."""
    compressor: zstandard.ZstdCompressor | None = getattr(_local, "compressor", None)
    if compressor is None:
        compressor = zstandard.ZstdCompressor(level=LEVEL, write_checksum=True, write_content_size=True)
        _local.compressor = compressor
    return compressor.compress(plaintext)


CORRUPT_ZSTD: Final = "corrupt Zstandard session log"


def header_line_of(frame: bytes | memoryview, *, path: str | None, offset: int) -> bytes:
    """The header line (without its newline) held by a zstd log's first frame.

    Raises ``CorruptSession`` when the frame fails its checksum or is not exactly one line.
    """
    try:
        plaintext = decode_frame(frame)
    except (zstandard.ZstdError, ValueError) as error:
        raise CorruptSession(
            f"{CORRUPT_ZSTD}: header frame failed validation ({error})", path=path, offset=offset
        ) from None
    if not plaintext or plaintext.find(b"\n") != len(plaintext) - 1:
        raise CorruptSession(
            f"{CORRUPT_ZSTD}: first frame is not exactly one header line", path=path, offset=0
        )
    return plaintext[:-1]

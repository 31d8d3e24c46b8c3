"""Following a JSONL log as it grows: ``JsonlBackend.tail``.

The tail polls the log's ``stat`` (every ``POLL_S``); when the file changed it takes a
*shared* ``flock`` on it, which every append, repair and delete of the log excludes (they
hold the exclusive lock from their size check to their fsync), and reads the bytes past
what it has read. So it only ever sees whole batches: complete lines of a plain log,
complete frames of a zstd one. Each line is decoded as a restore decodes it (a packed chunk
row gives its members) and must carry the next seq; the events are yielded in order from
``from_seq`` on, never one twice, never one skipped.

* Before the log exists: ``SessionNotFound``, unless the session was created in this
  backend and not yet appended to (then the tail waits for its first batch).
* The log unlinked (``harness delete``), or replaced by another file: ``SessionDeleted``.
* A line that does not decode, a seq out of order, a log that shrank below what was read:
  ``CorruptSession``. A torn last line or frame (a writer that crashed) is waited on: the
  next writer's repair cuts it.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncGenerator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Final

import zstandard

from harness.errors import CorruptSession, SessionDeleted, SessionNotFound
from harness.events.event import Event
from harness.stores.jsonl.frames import FrameError, decode_frame, scan_frames
from harness.stores.jsonl.stream import open_log
from harness.stores.rows import row_events

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX
    fcntl = None  # type: ignore[assignment]

__all__ = ["POLL_S", "tail_log"]

POLL_S: Final = 0.1
"""How often a waiting tail looks at the log's ``stat``."""

Run = Callable[..., Awaitable[Any]]


@dataclass
class _Followed:
    """What a tail has read of one log."""

    path: str
    ident: tuple[int, int]  # (st_dev, st_ino) of the file it follows
    zstd: bool
    offset: int  # the byte after the last complete line or frame read
    seq: int  # the seq the next event must carry
    skip_below: int = 0  # events before this seq are checked and counted, not built
    stamp: tuple[int, int, int] = (0, 0, 0)  # (inode, size, mtime_ns) at the last read
    events: list[Event] = field(default_factory=list)


def _stamp(info: os.stat_result) -> tuple[int, int, int]:
    return info.st_ino, info.st_size, info.st_mtime_ns


def _corrupt(path: str, detail: str) -> CorruptSession:
    return CorruptSession(f"session log {path} is corrupt: {detail}", path=path)


def _decode(state: _Followed, lines: list[bytes]) -> None:
    """Decode ``lines`` (complete, in order) into ``state.events``, checking each seq."""

    def corrupt(detail: str) -> CorruptSession:
        return _corrupt(state.path, detail)

    for line in lines:
        state.seq = row_events(line, state.seq, state.skip_below, corrupt, state.events)


def _new_bytes(state: _Followed, fd: int, size: int) -> None:
    """Decode what the log holds past ``state.offset`` (the caller holds the shared lock)."""
    if size < state.offset:
        raise _corrupt(state.path, f"it shrank to {size} bytes below the {state.offset} already read")
    if size > state.offset:
        _consume(state, os.pread(fd, size - state.offset, state.offset))


def _consume(state: _Followed, chunk: bytes) -> None:
    """Decode the whole lines (or frames) of ``chunk``, the log's bytes from ``state.offset``."""
    if state.zstd:
        try:
            scan = scan_frames(chunk)
        except FrameError as error:
            raise _corrupt(state.path, f"a frame after byte {state.offset}: {error}") from None
        view = memoryview(chunk)
        for start, end in scan.frames:
            try:
                text = decode_frame(view[start:end])
            except (zstandard.ZstdError, ValueError) as error:
                raise _corrupt(state.path, f"the frame at byte {state.offset + start}: {error}") from None
            lines = text.split(b"\n")
            if lines.pop():
                raise _corrupt(state.path, f"the frame at byte {state.offset + start} ends inside a line")
            _decode(state, lines)
        if scan.frames:
            state.offset += scan.frames[-1][1]
        return
    end = chunk.rfind(b"\n") + 1  # a torn last line waits for its writer's repair
    if end:
        _decode(state, chunk[: end - 1].split(b"\n"))
        state.offset += end


def _locked(path: str) -> tuple[int, os.stat_result] | None:
    """``path`` open with a shared lock, and its ``fstat`` (None when it is not there)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_SH)
        return fd, os.fstat(fd)
    except BaseException:
        os.close(fd)
        raise


_MISSING: Final = "missing"
_UNCLEAN: Final = "unclean"
_GONE: Final = "gone"


def _first(session_id: str, path: str, from_seq: int) -> _Followed | str:
    """Open the log at ``path``: its events so far, or ``_MISSING`` (it is not there) or
    ``_UNCLEAN`` (it does not open cleanly: a torn last frame a repair will cut)."""
    opened = _locked(path)
    if opened is None:
        return _MISSING
    fd, info = opened
    try:
        if info.st_nlink == 0:
            return _MISSING
        zstd = path.endswith(".zstd")
        start = open_log(path, session_id, zstd=zstd)  # the path is this file while we hold the lock
        if start is None:
            return _UNCLEAN
        state = _Followed(path, (info.st_dev, info.st_ino), zstd, 0, 0, from_seq)
        if start.buf is not None:  # zstd: open_log read the file once; its frames follow the header's
            state.offset = start.frames[0][0] if start.frames else start.size
            _consume(state, start.buf[state.offset : start.size])
        else:
            state.offset = start.start
            _new_bytes(state, fd, info.st_size)
        state.stamp = _stamp(info)
        return state
    finally:
        os.close(fd)


def _step(
    session_id: str, from_seq: int, find_log: Callable[[str], str | None], state: _Followed | None
) -> _Followed | str:
    """One look at the log: the state (its new events in ``events``), or ``_MISSING``,
    ``_UNCLEAN`` (not followed yet) or ``_GONE`` (unlinked or replaced since followed)."""
    if state is None:
        path = find_log(session_id)
        return _MISSING if path is None else _first(session_id, path, from_seq)
    try:
        info = os.stat(state.path)
    except FileNotFoundError:
        return _GONE
    if (info.st_dev, info.st_ino) != state.ident:
        return _GONE
    if _stamp(info) == state.stamp:
        return state
    opened = _locked(state.path)
    if opened is None:
        return _GONE
    fd, info = opened
    try:
        if info.st_nlink == 0 or (info.st_dev, info.st_ino) != state.ident:
            return _GONE
        _new_bytes(state, fd, info.st_size)
        state.stamp = _stamp(info)
        return state
    finally:
        os.close(fd)


async def tail_log(
    session_id: str,
    from_seq: int,
    *,
    find_log: Callable[[str], str | None],
    pending: Callable[[str], bool],
    run: Run,
    poll_s: float = POLL_S,
) -> AsyncGenerator[Event, None]:
    """The tail generator (see the module docs). ``find_log`` locates a session's log,
    ``pending`` says whether the session was created here and not yet published, ``run``
    runs a blocking call on the backend's worker."""
    state: _Followed | None = None
    while True:
        found = await run(_step, session_id, from_seq, find_log, state)
        if found == _GONE:
            raise SessionDeleted(f"session {session_id!r} was deleted while it was tailed")
        if found == _MISSING and not pending(session_id):
            raise SessionNotFound(f"no session {session_id!r}")
        if isinstance(found, _Followed):
            state = found
            if state.events:
                events, state.events = state.events, []
                for event in events:
                    yield event
                continue
        await asyncio.sleep(poll_s)

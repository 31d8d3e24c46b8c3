"""The JSONL backend against FORMAT §9 and the §13 F (JSONL) and G (packed rows) cases.

Every test works on real files under ``tmp_path`` and calls the backend methods
directly (``asyncio.run``). Besides the numbered cases: the real dsh logs in
``shared/fixtures/dsh`` read back through a root layout, a torn tail at every byte
of the last record, flipped bytes, byte identity with ``Event.encode()`` lines and
zstd plaintext equal to raw mode.
"""

from __future__ import annotations

import asyncio
import errno
import io
import shutil
from collections.abc import Awaitable, Sequence
from pathlib import Path
from typing import Any, TypeVar, cast

import pytest
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st

import harness
from harness.errors import (
    CorruptSession,
    InvalidSessionId,
    OutcomeUnknown,
    PersistenceFailed,
    SessionConflict,
    SessionExists,
    SessionNotFound,
    UnsupportedFormat,
)
from harness.events.event import Event
from harness.events.json import MAX_SAFE_INTEGER, dumps, loads
from harness.events.packed import expand_row, is_packed_row, pack_rows
from harness.session.header import SessionHeader
from harness.stores.backend import StoredLog
from harness.stores.jsonl import JsonlBackend, encode_segment, project_key, read_session_file
from harness.stores.jsonl.fileio import FileOps
from harness.stores.jsonl.frames import MAGIC, decode_frame, encode_frame, scan_frames
from harness.stores.jsonl.paths import Compression, Layout, decode_segment
from harness.stores.jsonl.reader import parse_log, read_log_file
from tests.test_fixtures_dsh import FIXTURES

T = TypeVar("T")

MODES: list[Compression] = ["zstd", "none"]
SID = "session-1"
CWD = "/work/proj"
HEADER = SessionHeader.new(id=SID, cwd=CWD, created_at=1767225600000)


def run(coro: Awaitable[T]) -> T:
    async def main() -> T:
        return await coro

    return asyncio.run(main())


FIXTURE_FILES = sorted(p.name for p in FIXTURES.glob("*.jsonl*"))


# ---- event helpers ----------------------------------------------------------------------


def ev(kind: str, seq: int, data: Any, time: int | None = None) -> Event:
    return Event.create(kind, seq, 1000 + seq if time is None else time, data)


def delta(
    seq: int,
    text: str = "x",
    *,
    kind: str = "text-delta",
    turn: int = 1,
    step: int = 1,
    index: int = 0,
    time: int | None = None,
) -> Event:
    chunk = {"type": kind, "index": index, "text": text}
    return ev("assistant/chunk", seq, {"turn": turn, "step": step, "chunk": chunk}, time)


def tool_delta(seq: int, args: str, *, call: str = "call_1", name: str | None = "bash") -> Event:
    chunk: dict[str, Any] = {"type": "tool-call-delta", "index": 1, "id": call}
    if name is not None:
        chunk["name"] = name
    chunk["argumentsDelta"] = args
    return ev("assistant/chunk", seq, {"turn": 1, "step": 1, "chunk": chunk})


def closed_turn(start: int, turn: int = 1, chunks: int = 2) -> list[Event]:
    """turn/start, step/start, ``chunks`` text deltas, step/end, turn/end from seq ``start``."""
    events = [ev("turn/start", start, {"turn": turn}), ev("step/start", start + 1, {"turn": turn, "step": 1})]
    seq = start + 2
    for k in range(chunks):
        events.append(delta(seq, f"w{k} ", turn=turn))
        seq += 1
    events.append(ev("step/end", seq, {"turn": turn, "step": 1}))
    events.append(ev("turn/end", seq + 1, {"turn": turn, "reason": {"kind": "completed"}}))
    return events


def wire(events: Sequence[Event]) -> list[dict[str, Any]]:
    return [loads(event.encode()) for event in events]


def line(obj: Any) -> bytes:
    return dumps(obj) + b"\n"


def closers_for(log: StoredLog) -> list[Event]:
    """The FORMAT §8 closers of a read log (what a store's load would commit)."""
    events = [Event.create(e["type"], e["seq"], e["time"], e["data"]) for e in log.events]
    return harness.repair_closers(events)


# ---- file helpers -----------------------------------------------------------------------


def backend(root: Path, compression: Compression = "zstd", pack: bool = True) -> JsonlBackend:
    return JsonlBackend(root, compression, pack, threaded=False)


def write_session(root: Path, batches: Sequence[Sequence[Event]], compression: Compression) -> Path:
    """Create ``HEADER``'s session through the backend and append each batch."""

    async def scenario() -> None:
        store = JsonlBackend(root, compression)
        await store.create(HEADER)
        for batch in batches:
            await store.append(SID, batch)
        await store.close()

    run(scenario())
    return Path(Layout(root, compression).log_path(CWD, SID))


def place(
    root: Path, content: bytes, compression: Compression, *, sid: str = SID, cwd: str | None = CWD
) -> Path:
    """Write ``content`` where the layout keeps session ``sid`` of ``cwd``."""
    path = Path(Layout(root, compression).log_path(cwd, sid))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)
    return path


def header_line(**changes: Any) -> bytes:
    obj = HEADER.to_json(line=True)
    obj.update(changes)
    return line(obj)


def raw_body(events: Sequence[Event]) -> bytes:
    return b"".join(event.encode() + b"\n" for event in events)


def frames_of(path: Path) -> list[bytes]:
    data = path.read_bytes()
    scan = scan_frames(data)
    assert scan.torn_start is None
    return [decode_frame(data[start:end]) for start, end in scan.frames]


def read(root: Path, compression: Compression, sid: str = SID) -> StoredLog:
    return run(backend(root, compression).read_exact(sid))


def standard_plaintext(data: bytes) -> bytes:
    """Decode concatenated frames with the stock ``zstandard`` stream reader."""
    reader = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(data), read_across_frames=True)
    return reader.read()


# =========================================================================================
# F. JSONL
# =========================================================================================


def test_f45_default_zstd_one_turn_is_two_frames_and_loads_identically(tmp_path: Path) -> None:
    root = tmp_path / "root"
    turn = closed_turn(0, chunks=2)
    path = write_session(root, [turn], "zstd")
    assert path.name == "session.jsonl.zstd"
    assert run(JsonlBackend(root).read_exact(SID)).location == str(path)  # zstd is the default
    header_frame, batch_frame = frames_of(path)
    assert header_frame == line(HEADER.to_json(line=True))
    assert batch_frame == raw_body(turn)  # one line per event (two deltas do not pack)
    log = read(root, "zstd")
    assert log.events == wire(turn)
    assert log.torn is None
    assert HEADER.delegation_depth is None
    assert log.header.delegation_depth == 0
    assert log.header == SessionHeader(id=SID, cwd=CWD, created_at=HEADER.created_at, delegation_depth=0)
    assert stat_mode(path) == 0o600
    for directory in (path.parent, path.parent.parent, root):
        assert stat_mode(directory) == 0o700
    assert not [p for p in path.parent.iterdir() if p.name.endswith(".tmp")]


def stat_mode(path: Path) -> int:
    return path.stat().st_mode & 0o777


@pytest.mark.parametrize("compression", MODES)
def test_f46_create_alone_writes_nothing_and_is_not_listed(tmp_path: Path, compression: Compression) -> None:
    root = tmp_path / "root"

    async def scenario() -> None:
        store = backend(root, compression)
        await store.create(HEADER)
        assert await store.stored_length(SID) == 0
        assert await store.list() == []
        with pytest.raises(SessionNotFound):
            await store.read_exact(SID)
        with pytest.raises(SessionExists):
            await store.create(HEADER)
        await store.append(SID, [])  # an empty batch publishes nothing either
        with pytest.raises(SessionNotFound):
            await backend(root, compression).read_exact(SID)

    run(scenario())
    assert not root.exists()


@pytest.mark.parametrize("compression", MODES)
def test_f47_wrong_first_seq_or_reappend_is_a_seq_mismatch(tmp_path: Path, compression: Compression) -> None:
    root = tmp_path / "root"
    turn = closed_turn(0)
    path = write_session(root, [turn], compression)
    before = path.read_bytes()

    async def scenario() -> None:
        store = backend(root, compression)
        with pytest.raises(SessionConflict, match="seq mismatch") as caught:
            await store.append(SID, turn[2:4])
        assert "expected 6 at index 0, got 2" in str(caught.value)
        with pytest.raises(SessionConflict, match="expected 7 at index 1, got 8"):
            await store.append(SID, [ev("turn/start", 6, {"turn": 2}), ev("step/start", 8, {})])
        with pytest.raises(SessionConflict, match="seq mismatch"):
            await store.append(SID, [ev("turn/start", 9, {"turn": 2})])
        assert await store.stored_length(SID) == 6
        with pytest.raises(SessionConflict, match="seq mismatch"):
            await store.append(SID, [ev("turn/start", 0, {"turn": 2})])  # before publishing too

    run(scenario())
    assert path.read_bytes() == before

    async def unpublished() -> None:
        store = backend(tmp_path / "other", compression)
        await store.create(HEADER)
        with pytest.raises(SessionConflict, match="expected 0 at index 0, got 1"):
            await store.append(SID, [ev("turn/start", 1, {"turn": 1})])

    run(unpublished())
    assert not (tmp_path / "other").exists()


def test_f48_raw_torn_fragment_after_open_turn_is_cut_and_closed(tmp_path: Path) -> None:
    root = tmp_path / "root"
    committed = [
        *closed_turn(0),
        ev("turn/start", 6, {"turn": 2}),
        ev("step/start", 7, {"turn": 2, "step": 1}),
    ]
    fragment = b'{"type":"assistant/chunk","seq":8,"time":1'
    path = place(root, header_line() + raw_body(committed) + fragment, "none")
    old = path.read_bytes()

    async def scenario() -> None:
        store = backend(root, "none")
        log = await store.read_exact(SID)
        assert [e["seq"] for e in log.events] == list(range(8))
        assert log.torn is not None
        assert log.torn.committed_offset == len(old) - len(fragment)
        assert path.read_bytes() == old  # read never writes
        closers = closers_for(log)
        assert [(c.type, c.seq) for c in closers] == [("step/end", 8), ("turn/end", 9)]
        await store.repair(SID, log, closers)
        assert await store.stored_length(SID) == 10
        await store.append(SID, [ev("session/end-seed", 10, {})])

        again = await backend(root, "none").read_exact(SID)
        assert [e["seq"] for e in again.events] == list(range(11))
        assert again.torn is None
        assert [e["type"] for e in again.events[8:10]] == ["step/end", "turn/end"]
        assert again.events[9]["data"] == {"turn": 2, "reason": {"kind": "interrupted"}}

    run(scenario())
    new = path.read_bytes()
    assert fragment not in new
    assert new.startswith(old[: len(old) - len(fragment)])


def test_f49_raw_seq_gap_keeps_prefix_unless_a_turn_end_follows(tmp_path: Path) -> None:
    body = raw_body([ev("turn/start", 0, {"turn": 1}), ev("step/start", 2, {"turn": 1, "step": 1})])
    place(tmp_path / "a", header_line() + body, "none")
    log = read(tmp_path / "a", "none")
    assert [e["seq"] for e in log.events] == [0]
    assert log.torn is not None and "seq gap" in log.torn.detail

    turn_end = ev("turn/end", 3, {"turn": 1, "reason": {"kind": "completed"}})
    path = place(tmp_path / "b", header_line() + body + raw_body([turn_end]), "none")
    before = path.read_bytes()
    with pytest.raises(CorruptSession, match="seq gap in committed region") as caught:
        read(tmp_path / "b", "none")
    assert caught.value.offset == len(header_line()) + len(raw_body([ev("turn/start", 0, {"turn": 1})]))
    assert caught.value.path == str(path)
    assert path.read_bytes() == before


def test_f50_raw_unparsable_line_is_corruption_only_before_a_turn_end(tmp_path: Path) -> None:
    good = raw_body([ev("turn/start", 0, {"turn": 1})])
    bad = b'{"type":"step/start","seq":1,\n'
    turn_end = raw_body([ev("turn/end", 1, {"turn": 1, "reason": {"kind": "completed"}})])
    place(tmp_path / "a", header_line() + good + bad + turn_end, "none")
    with pytest.raises(CorruptSession, match="unparsable committed event at line 3") as caught:
        read(tmp_path / "a", "none")
    assert caught.value.offset == len(header_line()) + len(good)

    place(tmp_path / "b", header_line() + good + bad, "none")
    log = read(tmp_path / "b", "none")
    assert [e["seq"] for e in log.events] == [0]
    assert log.torn is not None and log.torn.committed_offset == len(header_line()) + len(good)

    place(tmp_path / "c", header_line() + good + b"\n" + turn_end, "none")  # empty lines are unparsable
    with pytest.raises(CorruptSession, match="unparsable committed event at line 3"):
        read(tmp_path / "c", "none")


def test_f51_raw_gap_after_a_turn_end_keeps_the_closed_turn(tmp_path: Path) -> None:
    events = [
        ev("turn/start", 0, {"turn": 1}),
        ev("turn/end", 1, {"turn": 1, "reason": {"kind": "completed"}}),
        ev("step/start", 9, {"turn": 1, "step": 1}),
    ]
    place(tmp_path, header_line() + raw_body(events), "none")
    log = read(tmp_path, "none")
    assert [e["seq"] for e in log.events] == [0, 1]
    assert log.torn is not None
    assert log.torn.committed_offset == len(header_line()) + len(raw_body(events[:2]))


@pytest.mark.parametrize("compression", MODES)
def test_f52_header_only_log_has_no_events_and_commits_at_the_header(
    tmp_path: Path, compression: Compression
) -> None:
    content = header_line() if compression == "none" else encode_frame(header_line())
    path = place(tmp_path, content, compression)
    scan = read_log_file(str(path))
    assert scan.events == [] and scan.torn is None
    assert scan.committed == len(content)

    async def scenario() -> None:
        store = backend(tmp_path, compression)
        log = await store.read_exact(SID)
        assert log.events == [] and log.torn is None
        assert await store.stored_length(SID) == 0
        await store.append(SID, [ev("turn/start", 0, {"turn": 1})])

    run(scenario())
    assert path.read_bytes().startswith(content)
    assert read(tmp_path, compression).events == wire([ev("turn/start", 0, {"turn": 1})])


def _torn_frame(plaintext: bytes, cut: int) -> bytes:
    """A frame whose first block ends ``cut`` bytes into ``plaintext``, then EOF mid-frame."""
    compressor = zstandard.ZstdCompressor(write_checksum=True).compressobj()
    head = compressor.compress(plaintext[:cut]) + compressor.flush(zstandard.COMPRESSOBJ_FLUSH_BLOCK)
    tail = compressor.compress(plaintext[cut:]) + compressor.flush()
    assert tail
    return head


def test_f53_zstd_torn_frame_lines_are_recovered_and_rewritten_with_closers(tmp_path: Path) -> None:
    root = tmp_path / "root"
    opening = [ev("turn/start", 0, {"turn": 1}), ev("step/start", 1, {"turn": 1, "step": 1})]
    path = write_session(root, [opening], "zstd")
    complete = path.read_bytes()
    lost = [delta(2, "a"), delta(3, "b"), delta(4, "c")]
    plaintext = raw_body(lost)
    partial_third = len(raw_body(lost[:2])) + 12
    with path.open("ab") as handle:
        handle.write(_torn_frame(plaintext, partial_third))
    old = path.read_bytes()

    async def scenario() -> list[Event]:
        store = backend(root, "zstd")
        log = await store.read_exact(SID)
        assert log.events == wire([*opening, *lost[:2]])
        assert log.torn is not None and log.torn.committed_offset == len(complete)
        assert "2 complete events recovered" in log.torn.detail
        closers = closers_for(log)
        assert [(c.type, c.seq) for c in closers] == [("step/end", 4), ("turn/end", 5)]
        await store.repair(SID, log, closers)
        assert await store.stored_length(SID) == 6
        again = await backend(root, "zstd").read_exact(SID)
        assert again.torn is None
        assert again.events == wire([*opening, *lost[:2], *closers])
        return closers

    closers = run(scenario())
    assert path.read_bytes()[: len(complete)] == old[: len(complete)]
    frames = frames_of(path)  # the file ends on a complete frame
    assert len(frames) == 3
    assert frames[2] == raw_body([*lost[:2], *closers])  # one new frame: recovered + closers


def test_f54_zstd_two_stray_magic_bytes_are_a_torn_tail_cut_back(tmp_path: Path) -> None:
    root = tmp_path / "root"
    turn = closed_turn(0)
    path = write_session(root, [turn], "zstd")
    clean = path.read_bytes()
    path.write_bytes(clean + MAGIC[:2])

    async def scenario() -> None:
        store = backend(root, "zstd")
        log = await store.read_exact(SID)
        assert log.events == wire(turn)
        assert log.torn is not None and log.torn.committed_offset == len(clean)
        assert closers_for(log) == []
        await store.repair(SID, log, [])

    run(scenario())
    assert path.read_bytes() == clean


def test_f55_zstd_last_frame_missing_its_last_checksum_byte_is_recovered(tmp_path: Path) -> None:
    root = tmp_path / "root"
    first, second = closed_turn(0), closed_turn(6, turn=2, chunks=4)
    path = write_session(root, [first, second], "zstd")
    full = path.read_bytes()
    last_start = scan_frames(full).frames[-1][0]
    path.write_bytes(full[:-1])

    async def scenario() -> None:
        store = backend(root, "zstd")
        log = await store.read_exact(SID)
        assert log.events == wire([*first, *second])
        assert log.torn is not None and log.torn.committed_offset == last_start
        assert "4 complete events" not in log.torn.detail and "8 complete events recovered" in log.torn.detail
        await store.repair(SID, log, [])
        again = await backend(root, "zstd").read_exact(SID)
        assert again.torn is None and again.events == log.events
        await store.append(SID, [ev("session/end-seed", 14, {})])

    run(scenario())
    data = path.read_bytes()
    assert data[:last_start] == full[:last_start]
    assert len(frames_of(path)) == 4


def test_f56_zstd_complete_frame_without_final_newline_is_corruption(tmp_path: Path) -> None:
    root = tmp_path / "root"
    path = write_session(root, [closed_turn(0)], "zstd")
    clean = path.read_bytes()
    path.write_bytes(clean + encode_frame(ev("turn/start", 6, {"turn": 2}).encode()))
    before = path.read_bytes()
    with pytest.raises(CorruptSession, match="complete frame contains a torn JSONL record") as caught:
        read(root, "zstd")
    assert caught.value.offset == len(clean)
    assert path.read_bytes() == before

    unparsable = encode_frame(b'{"type":"turn/start",\n')
    path.write_bytes(clean + unparsable)
    with pytest.raises(CorruptSession, match="complete frame contains a torn JSONL record"):
        read(root, "zstd")


def test_f57_zstd_first_frame_rules_and_list_header_validation(tmp_path: Path) -> None:
    two_lines = encode_frame(header_line() + raw_body([ev("turn/start", 0, {"turn": 1})]))
    place(tmp_path / "a", two_lines, "zstd")
    with pytest.raises(CorruptSession, match="first frame is not exactly one header line"):
        read(tmp_path / "a", "zstd")
    (damaged,) = run(backend(tmp_path / "a", "zstd").list())  # listed with the reason, never dropped
    assert damaged.id == SID and damaged.problem is not None
    assert "first frame is not exactly one header line" in damaged.problem

    place(tmp_path / "b", MAGIC, "zstd")
    with pytest.raises(CorruptSession, match="empty or header-less"):
        read(tmp_path / "b", "zstd")
    place(tmp_path / "b2", b"", "zstd")
    with pytest.raises(CorruptSession, match="empty or header-less"):
        read(tmp_path / "b2", "zstd")

    path = write_session(tmp_path / "c", [closed_turn(0)], "zstd")
    data = bytearray(path.read_bytes())
    header_end = scan_frames(bytes(data)).frames[0][1]
    data[header_end - 1] ^= 0xFF  # the header frame's checksum
    path.write_bytes(bytes(data))
    (damaged,) = run(backend(tmp_path / "c", "zstd").list())
    assert (damaged.id, damaged.created_at, damaged.location) == (SID, None, str(path))
    assert damaged.problem is not None and "header frame failed validation" in damaged.problem
    with pytest.raises(CorruptSession, match="header frame failed validation"):
        read(tmp_path / "c", "zstd")


class FailingOps(FileOps):
    """Makes the next ``fsyncs`` fsync calls (and, with ``truncate``, every ftruncate) fail with EIO."""

    def __init__(self, fsyncs: int = 1, *, truncate: bool = False) -> None:
        self.fsyncs = fsyncs
        self.truncate = truncate

    def fsync(self, fd: int, *, directory: bool = False) -> None:
        if self.fsyncs:
            self.fsyncs -= 1
            raise OSError(errno.EIO, "Input/output error (injected fsync)")
        super().fsync(fd, directory=directory)

    def ftruncate(self, fd: int, size: int) -> None:
        if self.truncate:
            raise OSError(errno.EIO, "Input/output error (injected ftruncate)")
        super().ftruncate(fd, size)


@pytest.mark.parametrize("compression", MODES)
def test_f58_fsync_failure_rolls_back_and_a_retry_is_contiguous(
    tmp_path: Path, compression: Compression
) -> None:
    root = tmp_path / "root"
    first, second = closed_turn(0), closed_turn(6, turn=2)

    async def scenario() -> None:
        store = JsonlBackend(root, compression)  # threaded: fsync runs in a worker
        await store.create(HEADER)
        await store.append(SID, first)
        path = Path(store.locate(HEADER))
        before = path.read_bytes()
        store._os = FailingOps()
        with pytest.raises(PersistenceFailed, match="Input/output error") as caught:
            await store.append(SID, second)
        assert isinstance(caught.value.__cause__, OSError)
        assert path.read_bytes() == before  # size restored
        assert await store.stored_length(SID) == 6
        await store.append(SID, second)  # the same batch again
        assert (await backend(root, compression).read_exact(SID)).events == wire([*first, *second])

        store._os = FailingOps(truncate=True)
        third = [ev("session/end-seed", 12, {})]
        with pytest.raises(OutcomeUnknown, match="failed to roll back append to") as failed:
            await store.append(SID, third)
        message = str(failed.value)
        assert str(path) in message and "injected fsync" in message and "injected ftruncate" in message
        assert "outcome unknown" in message
        group = failed.value.__cause__
        assert isinstance(group, ExceptionGroup) and len(group.exceptions) == 2
        # The file holds the whole batch: the next call adopts it (written again and fsync'd).
        assert await store.stored_length(SID) == 13
        assert (await backend(root, compression).read_exact(SID)).events == wire([*first, *second, *third])

    run(scenario())


class NthFsyncFails(FileOps):
    """The ``n``-th fsync (files and directories alike) fails with EIO."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.calls = 0

    def fsync(self, fd: int, *, directory: bool = False) -> None:
        self.calls += 1
        if self.calls == self.n:
            raise OSError(errno.EIO, "Input/output error (injected fsync)")
        super().fsync(fd, directory=directory)


@pytest.mark.parametrize("compression", MODES)
def test_f58_fsync_failure_while_publishing_leaves_nothing(tmp_path: Path, compression: Compression) -> None:
    root = tmp_path / "root"
    turn = closed_turn(0)

    async def scenario() -> None:
        store = backend(root, compression)
        await store.create(HEADER)
        path = Path(store.locate(HEADER))
        # root's parent, root, project, the temp file (before the link: nothing published)
        for failing in range(1, 5):
            store._os = NthFsyncFails(failing)
            with pytest.raises(PersistenceFailed, match="injected fsync") as failed:
                await store.append(SID, turn)
            assert not isinstance(failed.value, OutcomeUnknown)
            assert not path.exists()
            assert not list(path.parent.glob("*.tmp"))
            assert await store.stored_length(SID) == 0
        # The session directory's fsync, after the link: the name may or may not survive a crash.
        store._os = counting = NthFsyncFails(5)
        with pytest.raises(OutcomeUnknown, match="outcome unknown"):
            await store.append(SID, turn)
        assert path.exists() and not list(path.parent.glob("*.tmp"))
        assert counting.calls == 5
        assert await store.stored_length(SID) == len(turn)  # adopted: the directory synced again
        assert counting.calls == 6
        assert (await backend(root, compression).read_exact(SID)).events == wire(turn)

    run(scenario())


@settings(max_examples=300, deadline=None)
@given(st.text(min_size=1))
def test_a_directory_name_decodes_back_to_its_id(session_id: str) -> None:
    """``list()`` names a session whose header is damaged by its directory."""
    assert decode_segment(encode_segment(session_id)) == session_id


def test_a_directory_name_no_id_encodes_to_decodes_to_nothing() -> None:
    for name in ("a b", "~zz12", "~00", "~002e", "", "~0041", ".", "..", "a.~"):  # "~0041" would be "A"
        assert decode_segment(name) is None, name


@given(st.text(alphabet="Az09._-~", max_size=12))
def test_a_directory_name_decodes_to_the_id_whose_encoding_it_is(name: str) -> None:
    decoded = decode_segment(name)
    if decoded is None:  # no id is written so; the literal candidates at least are not
        assert name == "" or all(encode_segment(candidate) != name for candidate in (name, ".", ".."))
    else:
        assert encode_segment(decoded) == name


def test_f59_path_encoding_matches_the_reference() -> None:
    assert encode_segment("..") == "~002E~002E"
    assert encode_segment(".") == "~002E"
    assert encode_segment("a/b") == "a~002Fb"
    assert encode_segment("a~b") == "a~007Eb"
    assert encode_segment("\ud800") == "~D800"
    assert encode_segment("😀") == "~D83D~DE00"
    assert encode_segment("session-1.x_y") == "session-1.x_y"
    with pytest.raises(InvalidSessionId):
        encode_segment("")
    assert project_key("/开发/~agent") == "--~5F00~53D1-~007Eagent--"
    assert project_key("C:\\work\\agent") == "--C-work-agent--"
    assert project_key("/") == "--root--"
    assert project_key("/home/dev/runs/02n/ws") == "--home-dev-runs-02n-ws--"
    long = project_key("/" + "a" * 1000)
    assert len(long) == 255 and long == "--" + "a" * 251 + "--"
    layout = Layout("/srv/sessions", "zstd")
    assert layout.log_path(None, "a/b") == "/srv/sessions/_no-cwd/a~002Fb/session.jsonl.zstd"
    assert Layout("/srv/sessions", "none").log_path("/x", "s") == "/srv/sessions/--x--/s/session.jsonl"


@pytest.mark.parametrize("compression", MODES)
def test_f60_opposite_suffix_or_flat_layout_in_root_is_refused(
    tmp_path: Path, compression: Compression
) -> None:
    opposite: Compression = "none" if compression == "zstd" else "zstd"
    mixed = tmp_path / "mixed"
    write_session(mixed, [closed_turn(0)], opposite)
    store = backend(mixed, compression)
    with pytest.raises(UnsupportedFormat, match=r"is a \.jsonl(\.zstd)? log.*one encoding"):
        run(store.read_exact(SID))
    with pytest.raises(UnsupportedFormat):
        run(backend(mixed, compression).list())
    with pytest.raises(UnsupportedFormat):
        run(backend(mixed, compression).create(SessionHeader.new(id="other", cwd=CWD, created_at=1)))
    with pytest.raises(UnsupportedFormat):
        run(backend(mixed, compression).stored_length(SID))

    flat = tmp_path / "flat"
    project = flat / project_key(CWD)
    project.mkdir(parents=True)
    (project / f"{SID}.jsonl").write_bytes(header_line())
    with pytest.raises(UnsupportedFormat, match="flat-file layout"):
        run(backend(flat, compression).read_exact(SID))
    with pytest.raises(UnsupportedFormat, match="flat-file layout"):
        run(backend(flat, compression).list())

    twice = tmp_path / "twice"
    write_session(twice, [closed_turn(0)], compression)
    elsewhere = Path(Layout(twice, compression).log_path("/other/project", SID))
    elsewhere.parent.mkdir(parents=True)
    shutil.copy(Layout(twice, compression).log_path(CWD, SID), elsewhere)
    with pytest.raises(CorruptSession, match="more than one project"):
        run(backend(twice, compression).read_exact(SID))
    with pytest.raises(CorruptSession):
        run(backend(twice, compression).list())
    with pytest.raises(CorruptSession, match="more than one project"):
        run(backend(twice, compression).create(HEADER))


@pytest.mark.parametrize("compression", MODES)
def test_f61_header_id_rewritten_to_another_session_fails_and_modifies_nothing(
    tmp_path: Path, compression: Compression
) -> None:
    root = tmp_path / "root"
    other = SessionHeader.new(id="session-2", cwd=CWD, created_at=1)

    async def scenario() -> None:
        store = JsonlBackend(root, compression)
        for header in (HEADER, other):
            await store.create(header)
            await store.append(header.id, closed_turn(0))

    run(scenario())
    mine = Path(Layout(root, compression).log_path(CWD, SID))
    theirs = Path(Layout(root, compression).log_path(CWD, "session-2"))
    rewritten_header = header_line(id="session-2")
    if compression == "zstd":
        rest = mine.read_bytes()[scan_frames(mine.read_bytes()).frames[0][1] :]
        mine.write_bytes(encode_frame(rewritten_header) + rest)
    else:
        mine.write_bytes(rewritten_header + mine.read_bytes().split(b"\n", 1)[1])
    before = (mine.read_bytes(), theirs.read_bytes())

    async def load() -> None:
        store = backend(root, compression)
        with pytest.raises(CorruptSession, match="does not match header id"):
            await store.read_exact(SID)
        with pytest.raises(CorruptSession):
            await store.append(SID, [ev("turn/start", 6, {"turn": 2})])
        assert len((await store.read_exact("session-2")).events) == 6
        listed = {info.id: info for info in await store.list()}  # the damaged one is not dropped
        assert listed["session-2"].problem is None
        assert "identify" in str(listed[SID].problem)

    run(load())
    assert (mine.read_bytes(), theirs.read_bytes()) == before


# ---- header lines (FORMAT §1, §9.6; the JSONL side of §13 A 4–7) --------------------------


@pytest.mark.parametrize("compression", MODES)
def test_a04_foreign_version_is_refused_from_the_raw_header(tmp_path: Path, compression: Compression) -> None:
    raw = line({"type": "session", "version": 42, "id": SID})
    path = place(tmp_path, raw if compression == "none" else encode_frame(raw), compression)
    with pytest.raises(UnsupportedFormat, match="newer harness") as caught:
        read(tmp_path, compression)
    assert str(caught.value).endswith(f"(raw log: {path})")
    assert f'"{SID}"' in str(caught.value) and "upgrade" in str(caught.value)


@pytest.mark.parametrize(
    ("header", "error", "words"),
    [
        (b"42\n", CorruptSession, "first line is not a session header"),
        (line({"type": "session", "version": 42, "id": 123}), UnsupportedFormat, 'session "123"'),
        (
            line({"type": "session", "version": -1, "id": SID}),
            UnsupportedFormat,
            "older than the supported v0",
        ),
        (line({"version": 3}), UnsupportedFormat, f'session "{SID}"'),
        (b"{not json\n", CorruptSession, "not valid JSON"),
        (b"\n", CorruptSession, "not valid JSON"),
        (header_line(type="event"), CorruptSession, "first line is not a session header"),
    ],
)
def test_a05_header_line_refusals(tmp_path: Path, header: bytes, error: type[Exception], words: str) -> None:
    path = place(tmp_path, header, "none")
    with pytest.raises(error, match=words):
        read(tmp_path, "none")
    assert path.read_bytes() == header


def _header_without(key: str) -> bytes:
    obj = HEADER.to_json(line=True)
    del obj[key]
    return line(obj)


@pytest.mark.parametrize(
    "header",
    [
        _header_without("delegationDepth"),
        header_line().replace(b'"delegationDepth":0', b'"delegationDepth":-0'),
        header_line(delegationDepth=1.5),
        header_line(delegationDepth="1"),
        header_line(delegationDepth=-1),
        header_line().replace(b'"createdAt":1767225600000', b'"createdAt":-0'),
        header_line(createdAt=1.5),
        header_line(createdAt=-1),
        header_line(createdAt=2**53),
        header_line(agentPreset=7),
        header_line(origin="root"),
        header_line(cwd="relative/path"),
        header_line(approvalPolicy="ask"),
        header_line(sandboxMode="off"),
    ],
    ids=lambda h: h.decode()[30:90],
)
def test_a06_a07_header_line_defects_are_corruption(tmp_path: Path, header: bytes) -> None:
    place(tmp_path, header, "none")
    with pytest.raises(CorruptSession):
        read(tmp_path, "none")


@pytest.mark.parametrize("compression", MODES)
def test_a06_agent_preset_and_integral_floats_round_trip(tmp_path: Path, compression: Compression) -> None:
    raw = header_line(agentPreset="minimal", createdAt=1767225600000.0, delegationDepth=2.0).replace(
        b'"version":0', b'"version":-0'
    )
    place(tmp_path, raw if compression == "none" else encode_frame(raw), compression)
    header = read(tmp_path, compression).header
    assert (header.agent_preset, header.created_at, header.delegation_depth) == ("minimal", 1767225600000, 2)
    assert type(header.created_at) is int


# =========================================================================================
# G. Packed rows
# =========================================================================================


def _rows(events: Sequence[Event]) -> list[Any]:
    return [loads(row) for row in pack_rows(events)]


def _expanded(rows: Sequence[bytes]) -> list[Any]:
    out: list[Any] = []
    for raw in rows:
        obj = loads(raw)
        out.extend(expand_row(obj) if is_packed_row(obj) else [obj])
    return out


def test_g62_five_text_deltas_pack_into_one_row_and_decode_exactly(tmp_path: Path) -> None:
    events = [delta(k, f"t{k}", time=1000 + 10 * k) for k in range(5)]
    rows = pack_rows(events)
    assert rows == [
        b'{"type":"text-chunks","seq0":0,"time0":1000,"data":{"turn":1,"step":1,"index":0,'
        b'"dt":[10,10,10,10],"texts":["t0","t1","t2","t3","t4"]}}'
    ]
    assert _expanded(rows) == wire(events)
    assert [dumps(e) for e in _expanded(rows)] == [e.encode() for e in events]  # key order too

    reasoning = [delta(k, "r", kind="reasoning-delta") for k in range(3)]
    assert _rows(reasoning)[0]["type"] == "reasoning-chunks"
    assert _expanded(pack_rows(reasoning)) == wire(reasoning)

    path = write_session(tmp_path, [events], "none")
    assert path.read_bytes() == header_line() + rows[0] + b"\n"
    assert read(tmp_path, "none").events == wire(events)


@pytest.mark.parametrize(
    "events",
    [
        [delta(0), delta(1)],
        [delta(0), delta(1), delta(3), delta(4)],
        [delta(0), delta(1), delta(2, kind="reasoning-delta"), delta(3, kind="reasoning-delta")],
        [delta(0), delta(1), delta(2, index=1), delta(3, index=1)],
        [delta(0), delta(1), delta(2, step=2), delta(3, step=2)],
        [delta(0), delta(1), delta(2, turn=2), delta(3, turn=2)],
    ],
    ids=["two", "seq-gap", "kind", "index", "step", "turn"],
)
def test_g63_short_or_broken_runs_stay_verbatim(events: list[Event]) -> None:
    assert pack_rows(events) == [event.encode() for event in events]


def test_g63_a_broken_run_packs_each_long_enough_part() -> None:
    events = [delta(0), delta(1), delta(2), delta(3, index=1), delta(4, index=1)]
    rows = _rows(events)
    assert [row["type"] for row in rows] == ["text-chunks", "assistant/chunk", "assistant/chunk"]
    assert _expanded(pack_rows(events)) == wire(events)


def test_g64_tool_call_runs_pack_only_with_one_id_and_name() -> None:
    changing_id = [tool_delta(0, "a"), tool_delta(1, "b"), tool_delta(2, "c", call="call_2")]
    assert pack_rows(changing_id) == [e.encode() for e in changing_id]
    changing_name = [tool_delta(0, "a"), tool_delta(1, "b"), tool_delta(2, "c", name=None)]
    assert pack_rows(changing_name) == [e.encode() for e in changing_name]

    named = [tool_delta(0, '{"c'), tool_delta(1, 'md":'), tool_delta(2, '"ls"}')]
    (row,) = _rows(named)
    assert row == {
        "type": "tool-call-chunks",
        "seq0": 0,
        "time0": 1000,
        "data": {
            "turn": 1,
            "step": 1,
            "index": 1,
            "dt": [1, 1],
            "id": "call_1",
            "name": "bash",
            "args": ['{"c', 'md":', '"ls"}'],
        },
    }
    assert _expanded(pack_rows(named)) == wire(named)

    nameless = [tool_delta(k, str(k), name=None) for k in range(3)]
    (row,) = _rows(nameless)
    assert "name" not in row["data"]
    expanded = _expanded(pack_rows(nameless))
    assert expanded == wire(nameless)
    assert all("name" not in e["data"]["chunk"] for e in expanded)


def test_g65_anything_but_the_exact_shape_stays_verbatim() -> None:
    base = [delta(0), delta(1)]

    def third(event: Event) -> None:
        events = [*base, event]
        assert pack_rows(events) == [e.encode() for e in events]

    chunk = {"turn": 1, "step": 1, "chunk": {"type": "text-delta", "index": 0, "text": "x"}}
    third(Event.create("assistant/chunk", 2, 1002, chunk, ignorable=True))
    third(Event.create("assistant/chunk", 2, 1002, chunk, source_event_seqs=(0,)))
    third(Event.create("assistant/chunk", 2, 1002, chunk, surface_op="append"))
    third(ev("assistant/chunk", 2, {**chunk, "extra": 1}))
    third(
        ev(
            "assistant/chunk",
            2,
            {"turn": 1, "step": 1, "chunk": {"type": "text-delta", "index": 0, "text": 5}},
        )
    )
    third(
        ev(
            "assistant/chunk",
            2,
            {"turn": 1, "step": 1, "chunk": {"type": "text-delta", "index": 0, "text": "x", "more": True}},
        )
    )
    third(ev("assistant/chunk", 2, {"turn": "1", "step": 1, "chunk": chunk["chunk"]}))
    third(Event("assistant/chunk", 2, cast(int, 1002.5), dumps(chunk)))
    third(ev("assistant/chunk", 2, {"turn": 1.0, "step": 1, "chunk": chunk["chunk"]}))

    far = [delta(0, time=-MAX_SAFE_INTEGER), delta(1, time=MAX_SAFE_INTEGER), delta(2, time=MAX_SAFE_INTEGER)]
    assert pack_rows(far) == [e.encode() for e in far]
    safe_edge = [delta(0, time=0), delta(1, time=MAX_SAFE_INTEGER), delta(2, time=MAX_SAFE_INTEGER)]
    assert _expanded(pack_rows(safe_edge)) == wire(safe_edge)
    assert len(pack_rows(safe_edge)) == 1


def test_g66_backward_times_give_negative_gaps_and_decode_exactly() -> None:
    events = [delta(4, "a", time=1000), delta(5, "b", time=990), delta(6, "c", time=995)]
    (row,) = _rows(events)
    assert (row["seq0"], row["time0"], row["data"]["dt"]) == (4, 1000, [-10, 5])
    assert _expanded(pack_rows(events)) == wire(events)


def test_g67_bad_rows_are_unparsable_and_a_skipping_tail_row_is_dropped(tmp_path: Path) -> None:
    opening = raw_body([ev("turn/start", 0, {"turn": 1})])
    bad_row = line(
        {
            "type": "text-chunks",
            "seq0": 1,
            "time0": 1,
            "data": {"turn": 1, "step": 1, "index": 0, "dt": [1], "texts": ["a", "b", "c"]},
        }
    )
    turn_end = raw_body([ev("turn/end", 4, {"turn": 1, "reason": {"kind": "completed"}})])
    place(tmp_path / "a", header_line() + opening + bad_row + turn_end, "none")
    with pytest.raises(CorruptSession, match="unparsable committed event at line 3"):
        read(tmp_path / "a", "none")

    skipping = line(
        {
            "type": "text-chunks",
            "seq0": 2,
            "time0": 1,
            "data": {"turn": 1, "step": 1, "index": 0, "dt": [1, 1], "texts": ["a", "b", "c"]},
        }
    )
    place(tmp_path / "b", header_line() + opening + skipping, "none")
    log = read(tmp_path / "b", "none")
    assert [e["seq"] for e in log.events] == [0]
    assert log.torn is not None and log.torn.committed_offset == len(header_line() + opening)

    place(tmp_path / "c", header_line() + opening + skipping + turn_end, "none")
    with pytest.raises(CorruptSession, match="seq gap in committed region"):
        read(tmp_path / "c", "none")


@pytest.mark.parametrize("compression", MODES)
def test_g_runs_never_span_write_batches(tmp_path: Path, compression: Compression) -> None:
    batches = [[delta(0), delta(1)], [delta(2), delta(3)], [delta(4), delta(5), delta(6)]]
    path = write_session(tmp_path, batches, compression)
    plaintext = standard_plaintext(path.read_bytes()) if compression == "zstd" else path.read_bytes()
    records = [loads(x) for x in plaintext.splitlines()[1:]]
    assert [r["type"] for r in records] == ["assistant/chunk"] * 4 + ["text-chunks"]
    assert read(tmp_path, compression).events == wire([e for batch in batches for e in batch])


# =========================================================================================
# Real dsh files, torn tails, flipped bytes, byte identity
# =========================================================================================


def _fixture_root(tmp_path: Path, name: str) -> tuple[Path, str, Compression, Path]:
    """Copy one fixture where dsh kept it: ``<root>/<project>/<encodedId>/session.jsonl[.zstd]``."""
    source = FIXTURES / name
    compression: Compression = "zstd" if name.endswith(".zstd") else "none"
    data = source.read_bytes()
    if compression == "zstd":
        start, end = scan_frames(data, max_frames=1).frames[0]
        header = loads(decode_frame(data[start:end]))
    else:
        header = loads(data.split(b"\n", 1)[0])
    root = tmp_path / name
    path = place(root, data, compression, sid=header["id"], cwd=header.get("cwd"))
    return root, header["id"], compression, path


def _independent_events(name: str) -> list[Any]:
    """A fixture's events decoded without the reader under test (stock zstd, line split)."""
    data = (FIXTURES / name).read_bytes()
    plaintext = standard_plaintext(data) if name.endswith(".zstd") else data
    return _expanded(plaintext.split(b"\n")[1:-1])


def test_fixtures_are_present() -> None:
    assert len(FIXTURE_FILES) >= 19, f"expected the dsh fixtures in {FIXTURES}"


@pytest.mark.parametrize("name", [n for n in FIXTURE_FILES if "DERIVED" not in n])
def test_dsh_fixture_reads_through_the_root_layout(tmp_path: Path, name: str) -> None:
    root, sid, compression, path = _fixture_root(tmp_path, name)
    before = path.read_bytes()

    async def scenario() -> None:
        store = backend(root, compression)
        log = await store.read_exact(sid)
        assert log.torn is None
        assert log.events == _independent_events(name)
        assert log.location == str(path)
        assert await store.stored_length(sid) == len(log.events)
        (info,) = await store.list()
        assert (info.id, info.event_count) == (sid, len(log.events))
        assert info.last_activity == log.events[-1]["time"]
        assert info.title == "Fixture session title"

    run(scenario())
    assert path.read_bytes() == before


@pytest.mark.parametrize("name", [n for n in FIXTURE_FILES if "DERIVED" in n])
def test_dsh_torn_fixture_keeps_what_dsh_kept(tmp_path: Path, name: str) -> None:
    root, sid, compression, path = _fixture_root(tmp_path, name)
    original = path.read_bytes()
    resumed_name = name.replace("input-DERIVED", "resumed")
    resumed = _independent_events(resumed_name)
    resumed_bytes = (FIXTURES / resumed_name).read_bytes()

    async def scenario() -> int:
        store = backend(root, compression)
        log = await store.read_exact(sid)
        assert log.torn is not None
        kept = len(log.events)
        assert kept == (63 if compression == "none" else 62)
        assert log.events == resumed[:kept]
        assert path.read_bytes() == original
        offset = log.torn.committed_offset
        assert resumed_bytes[:offset] == original[:offset]  # dsh cut at the same byte
        closers = closers_for(log)
        assert [c.type for c in closers] == [e["type"] for e in resumed[kept : kept + len(closers)]]
        assert resumed[kept + len(closers)]["type"] == "session/end-seed"
        await store.repair(sid, log, closers)
        again = await backend(root, compression).read_exact(sid)
        assert again.torn is None
        assert again.events == [*log.events, *wire(closers)]
        return offset

    offset = run(scenario())
    assert path.read_bytes()[:offset] == original[:offset]


@pytest.mark.parametrize(
    ("killed", "resumed"),
    [
        ("04-killed-during-tool.jsonl", "05-resumed-after-kill-during-tool.jsonl"),
        ("04-killed-mid-stream.jsonl", "05-resumed-after-kill-mid-stream.jsonl"),
        ("04-killed-mid-stream.jsonl.zstd", "05-resumed-after-kill-mid-stream.jsonl.zstd"),
        ("06-torn-tail-input-DERIVED.jsonl", "06-torn-tail-resumed.jsonl"),
        ("06-torn-tail-input-DERIVED.jsonl.zstd", "06-torn-tail-resumed.jsonl.zstd"),
    ],
)
def test_read_session_file_inspects_without_writing(killed: str, resumed: str) -> None:
    before = (FIXTURES / killed).read_bytes()
    session = read_session_file(str(FIXTURES / killed))
    assert (FIXTURES / killed).read_bytes() == before
    expected = _independent_events(resumed)
    stored = len(read_log_file(str(FIXTURES / killed)).events)
    ours = wire(list(session.events))
    assert ours[:stored] == expected[:stored]
    closers = ours[stored:-1]
    assert [c["type"] for c in closers] == [e["type"] for e in expected[stored : stored + len(closers)]]
    assert expected[stored + len(closers)]["type"] == "session/end-seed"
    assert session.events[-1].type == "session/end-seed"


def test_read_session_file_of_a_clean_fixture_has_no_closers() -> None:
    name = "05-resumed-after-kill-during-tool.jsonl"
    session = read_session_file(str(FIXTURES / name))
    assert len(session.events) == len(_independent_events(name)) + 1


@pytest.mark.parametrize("compression", MODES)
def test_truncation_at_every_byte_of_the_last_record_is_a_torn_tail(
    tmp_path: Path, compression: Compression
) -> None:
    first, second = closed_turn(0), closed_turn(6, turn=2, chunks=5)
    source = write_session(tmp_path / "source", [first, second], compression)
    full = source.read_bytes()
    everything = wire([*first, *second])
    if compression == "none":
        last_start = full.rstrip(b"\n").rfind(b"\n") + 1
        prefix = everything[:-1]
    else:
        last_start = scan_frames(full).frames[-1][0]
        prefix = wire(first)
    root = tmp_path / "cut"
    path = place(root, b"", compression)
    for cut in range(last_start, len(full)):
        path.write_bytes(full[:cut])
        log = read(root, compression)
        assert log.events[: len(prefix)] == prefix
        assert log.events == everything[: len(log.events)]
        if cut == last_start:
            assert log.torn is None and log.events == prefix
        else:
            assert log.torn is not None and log.torn.committed_offset == last_start
        assert path.read_bytes() == full[:cut]
    # one last cut of a zstd frame keeps everything its blocks held
    if compression == "zstd":
        path.write_bytes(full[:-1])
        assert read(root, compression).events == everything


def test_one_flipped_byte_in_a_middle_zstd_frame_is_corruption(tmp_path: Path) -> None:
    batches = [closed_turn(0), closed_turn(6, turn=2, chunks=3), closed_turn(13, turn=3)]
    source = write_session(tmp_path / "source", batches, "zstd")
    full = source.read_bytes()
    everything = wire([e for batch in batches for e in batch])
    start, end = scan_frames(full).frames[2]
    path = place(tmp_path / "root", b"", "zstd")

    flipped = bytearray(full)
    flipped[(start + end) // 2] ^= 0xFF
    path.write_bytes(bytes(flipped))
    with pytest.raises(CorruptSession) as caught:
        read(tmp_path / "root", "zstd")
    assert caught.value.offset is not None and start <= caught.value.offset < end
    assert path.read_bytes() == bytes(flipped)

    undetected = trials = 0
    for position in range(start, end):
        for bit in (0x01, 0x10, 0x80):
            damaged = bytearray(full)
            damaged[position] ^= bit
            trials += 1
            path.write_bytes(bytes(damaged))
            try:
                log = read(tmp_path / "root", "zstd")
            except CorruptSession as error:
                assert error.offset is not None
                continue
            # Some bits of a compressed block do not change what it decodes to.
            assert log.torn is None and log.events == everything
            undetected += 1
            assert path.read_bytes() == bytes(damaged)
    assert undetected * 50 < trials


def test_one_flipped_byte_in_a_middle_raw_line_is_corruption(tmp_path: Path) -> None:
    source = write_session(tmp_path / "source", [closed_turn(0), closed_turn(6, turn=2)], "none")
    full = source.read_bytes()
    lines = full.split(b"\n")
    middle = len(b"\n".join(lines[:4])) + 1  # the first byte of line 5
    assert full[middle : middle + 1] == b"{"
    damaged = bytearray(full)
    damaged[middle] ^= 0xFF
    path = place(tmp_path / "root", bytes(damaged), "none")
    with pytest.raises(CorruptSession, match="unparsable committed event at line 5") as caught:
        read(tmp_path / "root", "none")
    assert caught.value.offset == middle
    assert path.read_bytes() == bytes(damaged)


def test_raw_files_are_exactly_the_encoded_event_lines(tmp_path: Path) -> None:
    events = [*closed_turn(0, chunks=4), ev("session/title", 8, {"title": "naïve \ud800 ok"})]
    root = tmp_path / "plain"
    path = write_session(root, [events[:3], events[3:]], "none")
    unpacked = tmp_path / "unpacked"

    async def scenario() -> None:
        store = JsonlBackend(unpacked, "none", pack_chunks=False)
        await store.create(HEADER)
        await store.append(SID, events[:3])
        await store.append(SID, events[3:])

    run(scenario())
    expected = dumps(HEADER.to_json(line=True)) + b"\n" + b"".join(e.encode() + b"\n" for e in events)
    assert Path(Layout(unpacked, "none").log_path(CWD, SID)).read_bytes() == expected
    assert read(unpacked, "none").events == wire(events)
    assert read(root, "none").events == wire(events)  # the packed file decodes to the same events
    assert path.read_bytes() != expected  # its chunk run was packed


@pytest.mark.parametrize("pack", [True, False])
def test_zstd_plaintext_is_the_raw_file(tmp_path: Path, pack: bool) -> None:
    batches = [closed_turn(0, chunks=5), closed_turn(9, turn=2, chunks=1), [ev("session/end-seed", 14, {})]]

    async def scenario(root: Path, compression: Compression) -> Path:
        store = JsonlBackend(root, compression, pack)
        await store.create(HEADER)
        for batch in batches:
            await store.append(SID, batch)
        return Path(store.locate(HEADER))

    raw = run(scenario(tmp_path / "raw", "none")).read_bytes()
    compressed = run(scenario(tmp_path / "zstd", "zstd")).read_bytes()
    assert standard_plaintext(compressed) == raw
    assert len(scan_frames(compressed).frames) == 1 + len(batches)
    for start, end in scan_frames(compressed).frames:
        assert zstandard.get_frame_parameters(compressed[start:end]).has_checksum


# ---- backend behaviour beyond the numbered cases ------------------------------------------


@pytest.mark.parametrize("compression", MODES)
def test_two_backends_on_one_root_never_interleave(tmp_path: Path, compression: Compression) -> None:
    root = tmp_path / "root"
    write_session(root, [closed_turn(0)], compression)

    async def scenario() -> None:
        first, second = backend(root, compression), backend(root, compression)
        assert await first.stored_length(SID) == 6
        assert await second.stored_length(SID) == 6
        await first.append(SID, [ev("turn/start", 6, {"turn": 2})])
        with pytest.raises(SessionConflict):
            await second.append(SID, [ev("turn/start", 6, {"turn": 9})])
        await second.read_exact(SID)
        await second.append(SID, [ev("step/start", 7, {"turn": 2, "step": 1})])
        assert [e["seq"] for e in (await first.read_exact(SID)).events] == list(range(8))

    run(scenario())


@pytest.mark.parametrize("compression", MODES)
def test_a_torn_tail_blocks_appends_until_repaired(tmp_path: Path, compression: Compression) -> None:
    root = tmp_path / "root"
    path = write_session(root, [closed_turn(0)], compression)
    path.write_bytes(path.read_bytes() + (MAGIC[:3] if compression == "zstd" else b'{"type":'))

    async def scenario() -> None:
        store = backend(root, compression)
        log = await store.read_exact(SID)
        assert log.torn is not None
        with pytest.raises(SessionConflict, match="torn tail"):
            await store.append(SID, [ev("turn/start", 6, {"turn": 2})])
        await store.repair(SID, log, [])
        await store.append(SID, [ev("turn/start", 6, {"turn": 2})])
        assert len((await backend(root, compression).read_exact(SID)).events) == 7

    run(scenario())


@pytest.mark.parametrize("compression", MODES)
def test_list_reads_headers_and_summarises_tails(tmp_path: Path, compression: Compression) -> None:
    root = tmp_path / "root"
    events = [*closed_turn(0, chunks=4), ev("session/title", 8, {"title": "Counting lines"}, time=5000)]
    write_session(root, [events], compression)
    other = Path(Layout(root, compression).log_path("/elsewhere", "s-empty"))
    other.parent.mkdir(parents=True)
    other.write_bytes(b"")  # an empty file is listed as damaged
    headerless = Path(Layout(root, compression).log_path("/elsewhere", "s-junk"))
    headerless.parent.mkdir(parents=True)
    headerless.write_bytes(
        b'{"type":"turn/start","seq":0,"time":1,"data":{}}\n' if compression == "none" else MAGIC
    )
    listed = {info.id: info for info in run(backend(root, compression).list())}
    info = listed.pop(SID)
    problems = {key: str(value.problem).split(" (")[0] for key, value in listed.items()}
    assert problems == {  # listed with the reason, not dropped
        "s-empty": "corrupt session log: empty or header-less session log",
        "s-junk": (
            "corrupt session log: empty or header-less session log"
            if compression == "zstd"
            else 'corrupt session log: first line is not a session header: type is not "session"'
        ),
    }
    assert info.problem is None
    assert info.id == SID and info.cwd == CWD and info.created_at == HEADER.created_at
    assert (info.event_count, info.last_activity, info.title) == (9, 5000, "Counting lines")
    assert info.location == str(Layout(root, compression).log_path(CWD, SID))


def test_create_refuses_an_id_stored_on_disk_and_bad_ids(tmp_path: Path) -> None:
    root = tmp_path / "root"
    write_session(root, [closed_turn(0)], "zstd")

    async def scenario() -> None:
        store = backend(root)
        with pytest.raises(SessionExists):
            await store.create(HEADER)
        with pytest.raises(SessionExists):  # in another project too
            await store.create(SessionHeader.new(id=SID, cwd="/somewhere/else", created_at=1))
        with pytest.raises(InvalidSessionId):
            await store.create(SessionHeader(id="", created_at=1))
        with pytest.raises(InvalidSessionId):
            await store.create(SessionHeader(id="~" * 60, created_at=1))
        with pytest.raises(harness.InvalidHeader):
            await store.create(SessionHeader(id="neg", created_at=-5))
        with pytest.raises(SessionNotFound):
            await store.append("never-created", [ev("turn/start", 0, {"turn": 1})])
        with pytest.raises(SessionNotFound):
            await store.stored_length("never-created")

    run(scenario())


def test_ids_that_look_like_paths_stay_inside_the_root(tmp_path: Path) -> None:
    root = tmp_path / "root"

    async def scenario() -> None:
        store = backend(root)
        for sid in ("..", ".", "../escape", "a/b", "/abs", "x\\y", "~", "😀"):
            header = SessionHeader.new(id=sid, created_at=1)
            await store.create(header)
            await store.append(sid, [ev("turn/start", 0, {"turn": 1})])
            assert (await backend(root).read_exact(sid)).header.id == sid
        assert len(await backend(root).list()) == 8

    run(scenario())
    assert sorted(p.name for p in (root / "_no-cwd").iterdir()) == sorted(
        encode_segment(s) for s in ("..", ".", "../escape", "a/b", "/abs", "x\\y", "~", "😀")
    )
    assert [p.name for p in tmp_path.iterdir()] == ["root"]


def test_parse_log_never_raises_other_errors_on_garbage() -> None:
    header = header_line()
    for junk in (b"\x00" * 7, b"\xff\xfe\n", b'{"seq":5}\n', b"[1,2]\n", b"null\n", b"1e999\n"):
        scan = parse_log(header + junk, "none")
        assert scan.events == [] and scan.torn is not None
    with pytest.raises(CorruptSession):
        parse_log(MAGIC + b"\x00" * 12, "zstd")
    with pytest.raises(CorruptSession):
        parse_log(encode_frame(header) + b"\x00\x01\x02\x03\x04", "zstd")

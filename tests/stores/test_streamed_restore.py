"""A streamed restore (``WireStream``) ends exactly where the exact pipeline does.

``SessionStore`` restores from a backend's stream and falls back to the exact read
at the first thing the stream's fast checks do not settle. Here every damaged,
legacy and healthy log is restored both ways and the outcomes compared: the same
events, or the same error with the same message.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import harness
from harness.errors import HarnessError
from harness.events.json import dumps, loads
from harness.stores.backend import StoredLog
from harness.stores.jsonl import JsonlBackend
from harness.stores.jsonl.frames import encode_frame, scan_frames
from harness.stores.jsonl.paths import Compression
from harness.stores.legacy import is_current
from harness.stores.store import SessionStore, restore_stored, restore_streamed
from tests.stores.test_jsonl_format import HEADER, SID, closed_turn, place, write_session
from tests.test_fixtures_dsh import FIXTURES

Outcome = tuple[str, Any]


def outcome(action: Callable[[], harness.Session]) -> Outcome:
    try:
        session = action()
    except HarnessError as error:
        return type(error).__name__, str(error)
    return "ok", [loads(event.encode()) for event in session.events]


def both_ways(root: Path, compression: Compression, sid: str = SID) -> tuple[Outcome, Outcome]:
    """(streamed through the store, exact read + exact pipeline)."""

    async def streamed() -> Outcome:
        store = SessionStore(JsonlBackend(root, compression, threaded=False), clock=lambda: 7)
        try:
            session = await store.inspect(sid)
        except HarnessError as error:
            return type(error).__name__, str(error)
        finally:
            await store.close()
        return "ok", [loads(event.encode()) for event in session.events]

    async def exact() -> StoredLog:
        return await JsonlBackend(root, compression, threaded=False).read_exact(sid)

    def exactly() -> harness.Session:
        return restore_stored(sid, asyncio.run(exact()), clock=lambda: 7)[0]

    first = asyncio.run(streamed())
    return first, outcome(exactly)


def batches() -> list[list[harness.Event]]:
    return [closed_turn(0), closed_turn(6, turn=2, chunks=5), closed_turn(15, turn=3, chunks=1)]


@pytest.mark.parametrize("compression", ["none", "zstd"])
def test_a_healthy_log_is_restored_from_the_stream_without_the_exact_read(
    tmp_path: Path, compression: Compression
) -> None:
    write_session(tmp_path, batches(), compression)

    async def go() -> None:
        backend = JsonlBackend(tmp_path, compression, threaded=False)
        log = await backend.read(SID)
        assert log.stream is not None and log.events == []

        async def refuse() -> StoredLog:
            raise AssertionError("a healthy log must not need the exact read")

        log.stream.exact = refuse
        restored = restore_streamed(SID, log)
        assert restored is not None
        session, closers = restored
        assert closers == []
        assert len(session.events) == 21  # 20 stored + the end-seed

    asyncio.run(go())


@pytest.mark.parametrize("compression", ["none", "zstd"])
def test_every_truncation_and_every_flipped_byte_ends_as_the_exact_pipeline_does(
    tmp_path: Path, compression: Compression
) -> None:
    source = write_session(tmp_path / "source", batches(), compression)
    full = source.read_bytes()
    root = tmp_path / "damaged"
    path = place(root, b"", compression)
    variants = [full[:cut] for cut in range(len(full) - 300, len(full))]
    step = max(1, len(full) // 150)
    for position in range(0, len(full), step):
        flipped = bytearray(full)
        flipped[position] ^= 0x5A
        variants.append(bytes(flipped))
    kinds = set()
    for content in variants:
        path.write_bytes(content)
        streamed, exact = both_ways(root, compression)
        assert streamed == exact
        kinds.add(streamed[0])
        assert path.read_bytes() == content  # inspect writes nothing
    assert "ok" in kinds and "CorruptSession" in kinds


@pytest.mark.parametrize(
    ("name", "event"),
    [
        ("retired type", {"type": "mode/set", "seq": 6, "time": 1, "data": {}}),
        ("unknown type", {"type": "x/new", "seq": 6, "time": 1, "data": {}}),
        ("ignorable unknown", {"type": "x/new", "seq": 6, "time": 1, "data": {}, "ignorable": True}),
        (
            "legacy turn start",
            {"type": "turn/start", "seq": 6, "time": 1, "data": {"turn": 2, "trigger": "user"}},
        ),
        ("fallback header", {"type": "request/header", "seq": 6, "time": 1, "data": {"reason": "fallback"}}),
        ("invalid envelope", {"type": "session/title", "seq": 6, "time": "noon", "data": {}}),
        ("seq gap", {"type": "session/title", "seq": 9, "time": 1, "data": {"title": "t"}}),
        ("not an object", [1, 2]),
    ],
)
@pytest.mark.parametrize("compression", ["none", "zstd"])
def test_unusual_events_end_as_the_exact_pipeline_does(
    tmp_path: Path, compression: Compression, name: str, event: Any
) -> None:
    lines = [HEADER.to_json(line=True), *(loads(e.encode()) for e in closed_turn(0)), event]
    if compression == "none":
        content = b"".join(dumps(obj) + b"\n" for obj in lines)
    else:
        content = encode_frame(dumps(lines[0]) + b"\n") + encode_frame(
            b"".join(dumps(obj) + b"\n" for obj in lines[1:])
        )
    place(tmp_path, content, compression)
    streamed, exact = both_ways(tmp_path, compression)
    assert streamed == exact


def test_every_dsh_fixture_restores_the_same_both_ways(tmp_path: Path) -> None:
    logs = sorted(p for p in FIXTURES.rglob("*") if p.name.endswith((".jsonl", ".jsonl.zstd")))
    assert logs
    for log in logs:
        compression: Compression = "zstd" if log.name.endswith(".zstd") else "none"
        content = log.read_bytes()
        root = tmp_path / log.name
        sid, cwd = _identity(content, compression)
        place(root, content, compression, sid=sid, cwd=cwd)
        streamed, exact = both_ways(root, compression, sid)
        assert streamed == exact, log.name


def _identity(content: bytes, compression: Compression) -> tuple[str, str | None]:
    from harness.stores.jsonl.frames import header_line_of

    if compression == "zstd":
        start, end = scan_frames(content).frames[0]
        first = header_line_of(content[start:end], path=None, offset=start)
    else:
        first = content.split(b"\n", 1)[0]
    header = loads(first)
    return header["id"], header.get("cwd")


def test_is_current_refuses_every_shape_the_legacy_passes_touch() -> None:
    assert is_current({"type": "turn/start", "seq": 0, "time": 1, "data": {"turn": 1}})
    assert is_current({"type": "x/new", "seq": 0, "time": 1, "data": {}, "ignorable": True})
    refused: list[dict[str, Any]] = [
        {"type": "mode/set", "data": {}},
        {"type": "mode/set", "data": {}, "ignorable": True},
        {"type": "request/header-delta", "data": {}},
        {"type": "steering/message", "data": {"message": {}}, "ignorable": True},
        {"type": "x/new", "data": {}},
        {"type": "turn/start", "data": {"turn": 1, "trigger": "user"}},
        {"type": "turn/start", "data": {"turn": 1, "trigger": {"kind": "user"}}},
        {"type": "turn/end", "data": {"turn": 1, "reason": "aborted"}},
        {"type": "turn/end", "data": {"turn": 1, "reason": {"kind": "aborted"}}},
        {"type": "turn/end", "data": {"turn": 1, "reason": {"kind": "error", "message": "m"}}},
        {"type": "turn/end", "data": {"turn": 1, "reason": {"kind": "completed"}, "x": 1}},
        {"type": "turn/end", "data": {"turn": 0, "reason": {"kind": "completed"}}},
        {"type": "user/message", "data": {"content": [], "source": {"kind": "user"}}},
        {"type": "assistant/message", "data": {"content": [], "provenance": {}}},
        {"type": "tool/result", "data": {"callId": "c", "content": [], "isError": False}},
        {"type": "request/header", "data": {"reason": "fallback"}},
    ]
    for event in refused:
        assert not is_current(event), event


@pytest.mark.parametrize("kind", ["none", "zstd", "sqlite"])
def test_a_restore_reports_its_progress_up_to_the_whole(
    tmp_path: Path, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import harness.stores.jsonl.stream as stream_module
    import harness.stores.store as store_module
    from harness.stores.sqlite import SqliteBackend

    monkeypatch.setattr(store_module, "_PROGRESS_EVERY", 10)
    monkeypatch.setattr(stream_module, "BLOCK_SIZE", 256)  # a plain file is read in blocks

    def make() -> Any:
        if kind == "sqlite":
            return SqliteBackend(tmp_path / "sessions.db")
        return JsonlBackend(tmp_path, kind, threaded=False)  # type: ignore[arg-type]

    async def go() -> list[tuple[int, int]]:
        store = SessionStore(make())
        session = await store.create()
        for index in range(25):
            session.append("session/title", {"title": f"title {index}"})
            await store.flush(session)  # one durable batch (zstd: one frame) per event
        await store.close()
        seen: list[tuple[int, int]] = []
        again = SessionStore(make())
        restored = await again.inspect(session.id, progress=lambda done, total: seen.append((done, total)))
        assert len(restored.events) == 26
        await again.close()
        return seen

    seen = asyncio.run(go())
    assert len(seen) == 3  # after 10 and 20 events, then the end
    totals = {total for _, total in seen}
    assert len(totals) == 1 and totals.pop() > 0
    done = [d for d, _ in seen]
    assert done == sorted(done) and done[-1] == seen[-1][1] and done[0] < done[-1]

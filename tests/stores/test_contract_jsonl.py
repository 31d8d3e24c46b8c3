"""The store contract on ``JsonlBackend``, plain and zstd."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

import harness
from harness.errors import SessionDeleted
from harness.stores.backend import Backend
from harness.stores.jsonl.backend import JsonlBackend
from harness.stores.jsonl.fileio import FileOps
from harness.stores.jsonl.frames import encode_frame, scan_frames
from harness.stores.store import SessionStore
from harness.testing.contract import StoreContract, one_turn, wire


class TestJsonlPlain(StoreContract):
    compression = "none"

    def make_backend(self, tmp_path: Path) -> Backend:
        return JsonlBackend(tmp_path / "root", compression=self.compression)  # type: ignore[arg-type]

    def second_backend(self, tmp_path: Path, first: Backend) -> Backend:
        return JsonlBackend(tmp_path / "root", compression=self.compression)  # type: ignore[arg-type]

    def corrupt_header(self, tmp_path: Path, backend: Backend, session_id: str) -> None:
        (path,) = (tmp_path / "root").glob(f"*/{session_id}/session.*")
        data = path.read_bytes()
        if self.compression == "zstd":
            rest = data[scan_frames(data).frames[0][1] :]
            path.write_bytes(encode_frame(b"{not a header\n") + rest)
        else:
            path.write_bytes(b"{not a header\n" + data.split(b"\n", 1)[1])


class TestJsonlZstd(TestJsonlPlain):
    compression = "zstd"


def test_adoption_cuts_a_torn_tail_before_writing(tmp_path: Path) -> None:
    async def scenario() -> None:
        store = SessionStore(JsonlBackend(tmp_path, compression="none"), write_window_s=10)
        original = await store.create()
        one_turn(original)
        await store.flush(original)
        await store.close()
        (path,) = tmp_path.rglob("session.jsonl")
        intact = path.read_bytes()
        path.write_bytes(intact + b'{"type":"turn/start","seq":7,"ti')  # a crash mid-write

        copy = harness.Session.from_restore(original.id, wire(original), original.header)
        one_turn(copy, 2)
        again = SessionStore(JsonlBackend(tmp_path, compression="none"), write_window_s=10)
        await again.adopt(copy)
        await again.flush(copy)
        assert path.read_bytes().startswith(intact)
        check = await SessionStore(JsonlBackend(tmp_path, compression="none")).inspect(copy.id)
        assert wire(check)[: len(copy.events)] == wire(copy)
        await again.close()

    asyncio.run(scenario())


def test_delete_removes_the_session_directory_and_keeps_the_project(tmp_path: Path) -> None:
    async def scenario() -> None:
        store = SessionStore(JsonlBackend(tmp_path, compression="none"))
        gone = await store.create(id="gone", cwd="/work/project")
        kept = await store.create(id="kept", cwd="/work/project")
        one_turn(gone)
        one_turn(kept)
        await store.flush(gone)
        await store.flush(kept)
        (log,) = tmp_path.glob("*/gone/session.jsonl")
        await store.delete("gone")
        assert not log.parent.exists()
        assert [path.name for path in log.parent.parent.iterdir()] == ["kept"]
        await store.close()

    asyncio.run(scenario())


class _UnlinkBeforeLock(FileOps):
    """Deletes the log between a writer's open and its lock: the deleter won the lock."""

    def __init__(self) -> None:
        self.path: str | None = None

    def lock(self, fd: int) -> None:
        if self.path is not None:
            os.unlink(self.path)
            self.path = None
        super().lock(fd)


def test_a_writer_that_opened_the_log_before_it_was_deleted_writes_nothing(tmp_path: Path) -> None:
    async def scenario() -> None:
        backend = JsonlBackend(tmp_path, compression="none", threaded=False)
        store = SessionStore(backend, write_window_s=10)
        session = await store.create(id="raced")
        one_turn(session)
        await store.flush(session)
        (log,) = tmp_path.rglob("session.jsonl")
        ops = _UnlinkBeforeLock()
        backend._os = ops
        one_turn(session, 2)
        ops.path = str(log)
        with pytest.raises(SessionDeleted):
            await store.flush(session)
        assert not log.exists()  # nothing written to the unlinked file, nor a new one made
        assert await SessionStore(JsonlBackend(tmp_path, compression="none")).list() == []
        with pytest.raises(SessionDeleted):
            await store.close()

    asyncio.run(scenario())

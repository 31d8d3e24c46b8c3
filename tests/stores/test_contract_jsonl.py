"""The store contract on ``JsonlBackend``, plain and zstd."""

from __future__ import annotations

import asyncio
from pathlib import Path

import harness
from harness.stores.backend import Backend
from harness.stores.jsonl.backend import JsonlBackend
from harness.stores.jsonl.frames import encode_frame, scan_frames
from harness.stores.store import SessionStore
from tests.stores.contract import StoreContract, one_turn, wire


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

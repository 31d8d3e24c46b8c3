"""The store contract on ``MemoryBackend``."""

from __future__ import annotations

from pathlib import Path

from harness.stores.backend import Backend
from harness.stores.memory import MemoryBackend
from harness.testing.contract import StoreContract


class TestMemoryBackend(StoreContract):
    def make_backend(self, tmp_path: Path) -> Backend:
        return MemoryBackend()

    def second_backend(self, tmp_path: Path, first: Backend) -> Backend:
        inner = getattr(first, "inner", first)
        assert isinstance(inner, MemoryBackend)
        return inner

    def corrupt_header(self, tmp_path: Path, backend: Backend, session_id: str) -> None:
        inner = getattr(backend, "inner", backend)
        assert isinstance(inner, MemoryBackend)
        inner._headers[session_id] = b"{not a header"

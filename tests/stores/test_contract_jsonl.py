"""The store contract on ``JsonlBackend``, plain and zstd."""

from __future__ import annotations

from pathlib import Path

from harness.stores.backend import Backend
from harness.stores.jsonl.backend import JsonlBackend
from tests.stores.contract import StoreContract


class TestJsonlPlain(StoreContract):
    compression = "none"

    def make_backend(self, tmp_path: Path) -> Backend:
        return JsonlBackend(tmp_path / "root", compression=self.compression)  # type: ignore[arg-type]

    def second_backend(self, tmp_path: Path, first: Backend) -> Backend:
        return JsonlBackend(tmp_path / "root", compression=self.compression)  # type: ignore[arg-type]


class TestJsonlZstd(TestJsonlPlain):
    compression = "zstd"

"""The tail contract (``tail_contract.py``) on a harness SQLite database."""

from __future__ import annotations

from pathlib import Path

from harness.stores.backend import Backend
from harness.stores.sqlite import SqliteBackend
from harness.testing.tail_contract import TailContract


class TestTailSqlite(TailContract):
    def make_backend(self, tmp_path: Path) -> Backend:
        return SqliteBackend(tmp_path / "sessions.db")

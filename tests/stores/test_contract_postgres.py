"""The store contract on ``PostgresBackend``, against the real server, one fresh schema per test."""

from __future__ import annotations

from pathlib import Path

from harness.stores.backend import Backend
from harness.testing.contract import StoreContract
from tests.stores.pg import SchemaPerTest, server_dsn

server_dsn()  # skip (or, under CI=true, fail) this module when no server answers


class TestPostgresContract(SchemaPerTest, StoreContract):
    def second_backend(self, tmp_path: Path, first: Backend) -> Backend:
        return self.schema.backend()

    def corrupt_header(self, tmp_path: Path, backend: Backend, session_id: str) -> None:
        with self.schema.connect() as conn:
            conn.execute(b"UPDATE sessions SET header = '{not a header' WHERE id = %s", (session_id,))

"""The store contract on ``PostgresBackend``, against the real server, one fresh schema per test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.stores.backend import Backend
from tests.stores.contract import StoreContract
from tests.stores.pg import PgSchema, fresh_schema, server_dsn

server_dsn()  # skip (or, under CI=true, fail) this module when no server answers


class TestPostgresContract(StoreContract):
    schema: PgSchema

    @pytest.fixture(autouse=True)
    def _schema(self) -> Iterator[None]:
        for schema in fresh_schema():
            self.schema = schema
            yield

    def make_backend(self, tmp_path: Path) -> Backend:
        return self.schema.backend()

    def second_backend(self, tmp_path: Path, first: Backend) -> Backend:
        return self.schema.backend()

    def corrupt_header(self, tmp_path: Path, backend: Backend, session_id: str) -> None:
        with self.schema.connect() as conn:
            conn.execute(b"UPDATE sessions SET header = '{not a header' WHERE id = %s", (session_id,))

"""The tail contract (``tail_contract.py``) on ``PostgresBackend`` too: the same promises as
the JSONL and SQLite tails, against the real server (``test_postgres_tail.py`` has its own:
LISTEN/NOTIFY without polling, a killed connection)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.stores.backend import Backend
from tests.stores.pg import PgSchema, fresh_schema, server_dsn
from tests.stores.tail_contract import TailContract

server_dsn()  # skip (or, under CI=true, fail) this module when no server answers


class TestTailPostgres(TailContract):
    schema: PgSchema

    @pytest.fixture(autouse=True)
    def _schema(self) -> Iterator[None]:
        for schema in fresh_schema():
            self.schema = schema
            yield

    def make_backend(self, tmp_path: Path) -> Backend:
        return self.schema.backend()

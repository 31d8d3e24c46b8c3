"""The tail contract (``tail_contract.py``) on ``PostgresBackend`` too: the same promises as
the JSONL and SQLite tails, against the real server (``test_postgres_tail.py`` has its own:
LISTEN/NOTIFY without polling, a killed connection)."""

from __future__ import annotations

from harness.testing.tail_contract import TailContract
from tests.stores.pg import SchemaPerTest, server_dsn

server_dsn()  # skip (or, under CI=true, fail) this module when no server answers


class TestTailPostgres(SchemaPerTest, TailContract):
    """One fresh schema per test."""

"""The PostgreSQL test server: where it is, whether it is up, and a fresh schema per test.

The tests use the server on ``127.0.0.1:5432`` (database ``test``, trust auth; user
``root``, else ``postgres``), or ``HARNESS_TEST_DATABASE_URL`` when set. When no
server answers, every PostgreSQL test is skipped with one reason line, except under
``CI=true``, where they fail: CI must run them (``.ci/run`` starts the server).
"""

from __future__ import annotations

import contextlib
import functools
import os
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import TypeVar

import psycopg
import pytest
from psycopg import sql

from harness.stores.postgres import PostgresBackend
from harness.testing.samples import chunk, header, run, sample_events, wire  # shared with the SQLite tests

T = TypeVar("T")

CANDIDATES = (
    "postgresql://root@127.0.0.1:5432/test",
    "postgresql://postgres@127.0.0.1:5432/test",
)


@functools.cache
def _probe() -> tuple[str | None, str]:
    """The first DSN that answers, or ``None`` and why none did."""
    explicit = os.environ.get("HARNESS_TEST_DATABASE_URL")
    problems = []
    for dsn in (explicit,) if explicit else CANDIDATES:
        try:
            with psycopg.connect(dsn, connect_timeout=3, autocommit=True) as conn:
                conn.execute("SELECT 1")
            return dsn, ""
        except psycopg.Error as error:
            problems.append(f"{dsn}: {str(error).strip().splitlines()[0]}")
    return None, "; ".join(problems)


def server_up() -> bool:
    """Whether a test server answers (without skipping anything)."""
    return _probe()[0] is not None


def server_dsn() -> str:
    """The test server's DSN. When none answers: fail under ``CI=true``, else skip.

    Call it at module level in each PostgreSQL test module (and at the start of a test
    body elsewhere), not in a fixture: pytest then reports every skip at this one
    line, so ``-ra`` folds them into one line with the reason.
    """
    dsn, why = _probe()
    if dsn is None:
        reason = f"PostgreSQL tests need a server on 127.0.0.1:5432 (database test): {why}"
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true and {reason}", pytrace=False)
        pytest.skip(reason, allow_module_level=True)
    return dsn


def admin(dsn: str) -> psycopg.Connection[tuple[object, ...]]:
    """A plain autocommit connection for setting up and inspecting tests."""
    return psycopg.connect(dsn, autocommit=True)


def drop_schema(dsn: str, schema: str) -> None:
    """Disconnect the test's own sessions (tagged by application name) and drop its schema."""
    with admin(dsn) as conn:
        conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE application_name LIKE %s AND pid <> pg_backend_pid()",
            (app_name(schema) + "%",),
        )
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


def app_name(schema: str) -> str:
    """The application name the test's backends connect with (to find and end them)."""
    return f"harness-test-{schema}"


class PgSchema:
    """One test's fresh schema on the test server."""

    def __init__(self, dsn: str, name: str) -> None:
        self.dsn = dsn
        self.name = name

    @property
    def spec(self) -> str:
        """The store spec of this schema (``--store``, ``open_store``): the DSN with ``?schema=``."""
        return f"{self.dsn}{'&' if '?' in self.dsn else '?'}schema={self.name}"

    def backend(self, **options: object) -> PostgresBackend:
        """A new backend on this schema (tagged so that teardown ends its connections)."""
        return PostgresBackend(
            self.dsn,
            schema=self.name,
            application_name=app_name(self.name),
            **options,  # type: ignore[arg-type]
        )

    @contextlib.asynccontextmanager
    async def opened(self, **options: object) -> AsyncIterator[PostgresBackend]:
        """``backend(**options)``, closed when the block ends."""
        backend = self.backend(**options)
        try:
            yield backend
        finally:
            await backend.close()

    def connect(self) -> psycopg.Connection[tuple[object, ...]]:
        """An admin connection with ``search_path`` set to this schema."""
        conn = admin(self.dsn)
        conn.execute(sql.SQL("SET search_path TO {}").format(sql.Identifier(self.name)))
        return conn


def fresh_schema() -> Iterator[PgSchema]:
    """Fixture body: a fresh schema name for one test, dropped (with its connections) afterwards.

    Each test module wraps it in its own ``pg`` fixture::

        @pytest.fixture
        def pg() -> Iterator[PgSchema]:
            yield from fresh_schema()
    """
    dsn = server_dsn()
    schema = PgSchema(dsn, f"t_{uuid.uuid4().hex[:12]}")
    try:
        yield schema
    finally:
        drop_schema(dsn, schema.name)


def backend_schema(request: pytest.FixtureRequest, prefix: str = "t") -> Iterator[tuple[str, str] | None]:
    """Fixture body for tests parametrised by ``backend``: ``(dsn, fresh schema name)`` when the
    backend is ``postgres`` (dropped afterwards), else ``None``."""
    if request.node.callspec.params.get("backend") != "postgres":
        yield None
        return
    dsn = server_dsn()
    schema = f"{prefix}_{uuid.uuid4().hex[:12]}"
    try:
        yield dsn, schema
    finally:
        drop_schema(dsn, schema)


__all__ = ["chunk", "header", "run", "sample_events", "wire"]


class SchemaPerTest:
    """A suite mixin: each test gets a fresh schema (``self.schema``) and ``make_backend``
    opens a ``PostgresBackend`` on it (a new object each call, as the contract suites ask)."""

    schema: PgSchema

    @pytest.fixture(autouse=True)
    def _schema(self) -> Iterator[None]:
        for schema in fresh_schema():
            self.schema = schema
            yield

    def make_backend(self, tmp_path: Path) -> PostgresBackend:
        return self.schema.backend()

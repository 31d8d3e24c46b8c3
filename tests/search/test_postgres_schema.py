"""The PostgreSQL index's own versioned schema: made on first use, once when two processes open
it together, refused when newer, and leaving the store's schema version alone."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import psycopg
import pytest

from harness.errors import UnsupportedFormat
from harness.search import open_search_index
from harness.search.pgindex import SEARCH_SCHEMA_VERSION, ensure_search_schema
from harness.stores.postgres import SCHEMA_VERSION
from harness.stores.store import SessionStore
from tests.compaction.helpers import Builder
from tests.stores.pg import PgSchema, fresh_schema, server_dsn

server_dsn()


@pytest.fixture
def pg() -> Iterator[PgSchema]:
    yield from fresh_schema()


def test_two_openers_migrate_once_and_a_newer_version_is_refused(pg: PgSchema) -> None:
    async def main() -> None:
        async with pg.opened() as backend:
            store = SessionStore(backend)
            session = await store.create(id="one")
            Builder(session).closed_turn("launch code", "ok")
            await store.flush(session)

            async def migrate() -> None:
                async with await psycopg.AsyncConnection.connect(pg.dsn, autocommit=True) as conn:
                    await ensure_search_schema(conn, pg.name)

            await asyncio.gather(*(migrate() for _ in range(4)))
            index = open_search_index(store)
            assert (await index.search("launch code")).hits
            await index.close()

    asyncio.run(main())
    with pg.connect() as conn:
        versions = [row[0] for row in conn.execute("SELECT version FROM search_schema_version")]
        assert versions == [SEARCH_SCHEMA_VERSION]
        assert [row[0] for row in conn.execute("SELECT max(version) FROM schema_version")] == [SCHEMA_VERSION]
        rows = conn.execute("SELECT indexdef FROM pg_indexes WHERE tablename = 'search_rows'")
        assert any("USING gin (tsv)" in str(row[0]) for row in rows)
        conn.execute("INSERT INTO search_schema_version (version) VALUES (%s)", (SEARCH_SCHEMA_VERSION + 1,))

    async def newer() -> None:
        async with pg.opened() as backend:
            index = open_search_index(backend)
            with pytest.raises(UnsupportedFormat, match="newer"):
                await index.search("launch")

    asyncio.run(newer())

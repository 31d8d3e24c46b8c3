"""The SQLite sidecar: where it lives, that the store never sees it, and what happens when a
session or the sidecar itself is removed, replaced or damaged."""

from __future__ import annotations

import asyncio
import os
import shutil
import sqlite3
from pathlib import Path

import pytest

from harness.errors import SearchIndexCorrupt
from harness.search import INDEX_SIDECAR, open_search_index
from harness.stores.jsonl.backend import JsonlBackend
from harness.stores.jsonl.paths import root_compression
from harness.stores.sqlite import SqliteBackend
from harness.stores.store import SessionStore
from tests.compaction.helpers import Builder
from tests.search.helpers import all_pages, brute, found


async def _two_sessions(store: SessionStore) -> None:
    for sid, words in (("one", "alpha launch code"), ("two", "beta launch window")):
        session = await store.create(id=sid)
        Builder(session).closed_turn(f"please {words}", f"done: {words}", tools=1)
        await store.release(session)  # stored, and free for another writer


def _log_dir(root: Path, session_id: str) -> Path:
    (found_dir,) = [p.parent for p in root.rglob("session.jsonl*") if p.parent.name == session_id]
    return found_dir


@pytest.mark.parametrize("compression", ["none", "zstd"])
def test_a_jsonl_root_keeps_the_sidecar_at_its_top_and_never_lists_it(
    tmp_path: Path, compression: str
) -> None:
    root = tmp_path / "root"

    async def main() -> None:
        async with SessionStore(JsonlBackend(root, compression=compression)) as store:  # type: ignore[arg-type]
            await _two_sessions(store)
            before = await store.list()
            async with open_search_index(store) as index:
                assert index.location == str(root / INDEX_SIDECAR)
                assert (await index.search("launch")).hits
                # while the index is open (WAL files beside it), the store reads as before
                assert [info.id for info in await store.list()] == [info.id for info in before]
                assert root_compression(root) == compression
                assert {(await store.inspect("one")).id, (await store.inspect("two")).id} == {"one", "two"}
            assert (root / INDEX_SIDECAR).is_file()
            assert [p.name for p in root.iterdir() if p.is_file()] == [INDEX_SIDECAR]

    asyncio.run(main())


def test_an_sqlite_store_keeps_its_index_beside_its_file(tmp_path: Path) -> None:
    db = tmp_path / "sessions.db"

    async def main() -> None:
        async with SessionStore(SqliteBackend(db)) as store:
            await _two_sessions(store)
            async with open_search_index(store) as index:
                assert index.location == str(db) + INDEX_SIDECAR
                assert len((await index.search("launch")).hits) >= 2

    asyncio.run(main())
    with sqlite3.connect(db) as conn:  # the store's own database gained nothing
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_schema WHERE type = 'table'")}
    assert tables == {"sessions", "events"}
    assert Path(str(db) + INDEX_SIDECAR).is_file()


def test_a_removed_session_leaves_the_index_and_a_replaced_one_is_indexed_again(tmp_path: Path) -> None:
    root = tmp_path / "root"

    async def main() -> None:
        async with SessionStore(JsonlBackend(root, compression="none")) as store:
            await _two_sessions(store)
            async with open_search_index(store) as index:
                assert {hit.session_id for hit in (await index.search("launch")).hits} == {"one", "two"}
                shutil.rmtree(_log_dir(root, "two"))
                report = await index.catch_up()
                assert report.removed == 1
                assert {hit.session_id for hit in (await index.search("launch")).hits} == {"one"}
                # "one" is replaced: same id, another header and other words, same length
                shutil.rmtree(_log_dir(root, "one"))
                async with SessionStore(JsonlBackend(root, compression="none")) as writer:
                    again = await writer.create(id="one", cwd="/elsewhere")
                    Builder(again).closed_turn("please gamma orbit", "done: gamma orbit", tools=1)
                    await writer.flush(again)
                report = await index.catch_up()
                assert report.reset == 1
                assert not (await index.search("launch")).hits
                assert [hit.session_id for hit in (await index.search("gamma orbit")).hits] == ["one", "one"]
                sessions = [await SessionStore(JsonlBackend(root, compression="none")).inspect("one")]
                hits, _ = await all_pages(index, "o")
                assert found(hits) == brute(sessions, "o")

    asyncio.run(main())


def test_a_damaged_session_is_reported_stale_and_the_others_still_answer(tmp_path: Path) -> None:
    root = tmp_path / "root"

    async def main() -> None:
        async with SessionStore(JsonlBackend(root, compression="none")) as store:
            await _two_sessions(store)
            async with open_search_index(store) as index:
                await index.catch_up()
                log = _log_dir(root, "two") / "session.jsonl"
                lines = log.read_bytes().split(b"\n")
                lines[3] = b'{"seq": 2, "type": "nonsense"'  # a damaged line in the middle: corrupt
                log.write_bytes(b"\n".join(lines))
                page = await index.search("launch")
                assert [stale.session_id for stale in page.stale] == ["two"]
                assert {hit.session_id for hit in page.hits} == {"one", "two"}  # "two" as indexed before

    asyncio.run(main())


@pytest.mark.parametrize("damage", ["garbage", "truncated", "foreign"])
def test_a_damaged_sidecar_is_a_typed_error_and_rebuild_mends_it(tmp_path: Path, damage: str) -> None:
    root = tmp_path / "root"
    sidecar = root / INDEX_SIDECAR

    async def build() -> None:
        async with SessionStore(JsonlBackend(root, compression="none")) as store:
            await _two_sessions(store)
            for turn in range(30):  # enough pages that a cut file loses some
                session = await store.create(id=f"more-{turn}")
                Builder(session).closed_turn(f"launch sequence {turn} " * 50, "ok " * 200, tools=2)
                await store.flush(session)
            async with open_search_index(store) as index:
                await index.catch_up()

    asyncio.run(build())
    if damage == "garbage":
        sidecar.write_bytes(os.urandom(4096) * 4)
    elif damage == "truncated":
        data = sidecar.read_bytes()
        sidecar.write_bytes(data[: len(data) // 3])
    else:
        sidecar.unlink()
        with sqlite3.connect(sidecar) as conn:
            conn.execute("CREATE TABLE mine (x)")

    async def search_then_rebuild() -> None:
        async with (
            SessionStore(JsonlBackend(root, compression="none")) as store,
            open_search_index(store) as index,
        ):
            with pytest.raises(SearchIndexCorrupt, match="rebuild"):
                for text in ("launch", "sequence 7", "ok"):
                    await index.search(text)
            report = await index.rebuild()
            assert report.reset == report.sessions == 32
            sessions = [await store.inspect(info.id) for info in await store.list()]
            hits, _ = await all_pages(index, "sequence 7", limit=50)
            assert found(hits) == brute(sessions, "sequence 7")

    asyncio.run(search_then_rebuild())


def test_a_deleted_sidecar_is_made_again(tmp_path: Path) -> None:
    root = tmp_path / "root"

    async def main() -> None:
        async with SessionStore(JsonlBackend(root, compression="none")) as store:
            await _two_sessions(store)
            async with open_search_index(store) as index:
                first = found((await index.search("launch")).hits)
            (root / INDEX_SIDECAR).unlink()
            async with open_search_index(store) as index:
                report = await index.catch_up()
                assert report.reset == 2
                assert found((await index.search("launch")).hits) == first

    asyncio.run(main())


def test_an_index_of_an_older_version_is_dropped_and_rebuilt(tmp_path: Path) -> None:
    root = tmp_path / "root"

    async def main() -> None:
        async with SessionStore(JsonlBackend(root, compression="none")) as store:
            await _two_sessions(store)
            async with open_search_index(store) as index:
                expected = found((await index.search("launch")).hits)
            with sqlite3.connect(root / INDEX_SIDECAR) as conn:
                conn.execute("PRAGMA user_version = 0")
            async with open_search_index(store) as index:
                assert found((await index.search("launch")).hits) == expected
                assert (await index.catch_up()).updated == 0

    asyncio.run(main())


def test_a_sidecar_held_by_another_connection_waits_for_wal_instead_of_failing(tmp_path: Path) -> None:
    """Two indexers opening one new sidecar at once: the second must wait for the first's lock
    (SQLite refuses the switch into WAL at once, without its busy handler), not fail."""
    import threading

    root = tmp_path / "root"
    root.mkdir()
    sidecar = root / INDEX_SIDECAR
    holder = sqlite3.connect(sidecar, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN IMMEDIATE")  # a second indexer, between creating the file and WAL
    released = threading.Event()

    def release() -> None:
        released.wait(10)
        holder.execute("ROLLBACK")
        holder.close()

    thread = threading.Thread(target=release)
    thread.start()

    async def scenario() -> None:
        store = SessionStore(JsonlBackend(root))
        index = open_search_index(store)
        try:
            asyncio.get_running_loop().call_later(0.3, released.set)
            await index.catch_up()
            assert await index.states() == {}
        finally:
            await index.close()

    try:
        asyncio.run(scenario())
    finally:
        released.set()
        thread.join()

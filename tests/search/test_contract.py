"""The search index's contract, on every store: a JSONL root (plain and zstd), SQLite, PostgreSQL
(the real test server) and memory.

Every answer is compared with the query layer's own answer over the same sessions (``brute``):
the same events, the same classification. The stores grow, compact and are rebuilt between
searches; the cursor pages through every hit and refuses a damaged or foreign one.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path

import pytest

from harness.compaction import compact_now
from harness.errors import InvalidQuery
from harness.query import EventFilter, Range
from harness.search import SearchIndex, open_search_index
from harness.session.session import Session
from harness.stores.store import SessionStore
from tests.compaction.helpers import Builder, FixedSummarizer
from tests.search.helpers import KINDS, Place, all_pages, brute, found

HOSTILE = [
    '"',
    '""',
    "*",
    "a*",
    "NEAR(",
    "NEAR(a b)",
    "OR",
    "a OR b",
    "AND",
    "NOT x",
    "-x",
    "x -y",
    ":",
    "body:launch",
    "^launch",
    "launch*",
    "'",
    "it's",
    "\\",
    "a & !b | c <-> d",
    "(",
    ")",
    "{}",
    "[x]",
    "%_",
    "\x00",
    "launch\x00code",
    "\ud800",
    "Ärger",
    "ÄRGER ärger",
    "ſtraße",
    "检查点",
    "中文",
    "中",
    "数据库之前",
    "🙂🙂🙂",
]


@pytest.fixture(params=KINDS)
def place(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Place]:
    if request.param == "postgres":
        from tests.stores.pg import server_dsn

        server_dsn()  # skips (or fails under CI) when no server answers
    where = Place(request.param, tmp_path)
    try:
        yield where
    finally:
        where.drop()


def run(place: Place, scenario: Callable[[SessionStore, SearchIndex], Awaitable[None]]) -> None:
    async def main() -> None:
        async with place.store() as store:
            index = open_search_index(store)
            try:
                await scenario(store, index)
            finally:
                await index.close()

    asyncio.run(main())


async def inspected(store: SessionStore) -> list[Session]:
    return [await store.inspect(info.id) for info in await store.list()]


async def assert_same(
    store: SessionStore,
    index: SearchIndex,
    text: str,
    *,
    filter: EventFilter | None = None,
    session: str | None = None,
) -> dict[tuple[str, int], str]:
    """Every page of the search equals the query layer's answer; returns it."""
    hits, _ = await all_pages(index, text, filter=filter, session=session)
    expected = brute(await inspected(store), text, filter, session)
    assert found(hits) == expected, text
    return expected


async def fill(store: SessionStore) -> tuple[Session, Session]:
    alpha = await store.create(id="alpha")
    builder = Builder(alpha)
    builder.closed_turn("Remember: the launch code is ZEBRA-4471.", "Noted the LAUNCH\n  code.", tools=2)
    builder.closed_turn("Ärger mit der Straße; ſtraße too", "it's a [x] NEAR(a b) OR -x:body", tools=1)
    builder.closed_turn("launch*", "a & !b | c <-> d and %_ and \\ and \"quoted\"", output="🙂🙂🙂 tool out")
    beta = await store.create(id="beta 检查")
    other = Builder(beta)
    other.closed_turn("在保存到数据库之前运行检查点", "中文文本测试: 检查点 ok", tools=1, output="中 out")
    other.closed_turn("launch the rocket", "launched; relaunch later")
    await store.flush(alpha)
    await store.flush(beta)
    return alpha, beta


def test_search_equals_the_query_layer_and_follows_growth(place: Place) -> None:
    async def scenario(store: SessionStore, index: SearchIndex) -> None:
        alpha, _ = await fill(store)
        report = await index.catch_up()
        assert (report.sessions, report.updated, report.reset, report.stale) == (2, 2, 2, ())
        for text in ["launch code", "launch", "ZEBRA-4471", "检查点", "中文", "ok", "ärger", *HOSTILE[:-1]]:
            if not text.split():
                continue
            await assert_same(store, index, text)
        assert not (await index.search("never written anywhere")).hits
        before = (await index.states())["alpha"].cursor
        Builder(alpha).closed_turn("one more launch   code, please", "ok: LAUNCH CODE sent")
        await store.flush(alpha)
        expected = await assert_same(store, index, "launch code")  # the search catches up first
        assert any(seq >= before for (_, seq) in expected)
        again = await index.catch_up()
        assert (again.updated, again.events, again.reset) == (0, 0, 0)

    run(place, scenario)


def test_a_compaction_after_indexing_changes_the_classification(place: Place) -> None:
    async def scenario(store: SessionStore, index: SearchIndex) -> None:
        alpha, _ = await fill(store)
        first = {hit.seq: hit for hit in (await index.search("launch code", session="alpha")).hits}
        assert first and all(hit.classification == "current" for hit in first.values())
        compacted = await compact_now(alpha, FixedSummarizer(), retain_tokens=0)
        assert compacted is not None
        await store.flush(alpha)
        report = await index.catch_up()
        assert report.reclassified > 0 and report.reset == 0
        hits = await assert_same(store, index, "launch code", session="alpha")
        now = {seq: cls for (_, seq), cls in hits.items() if seq in first}
        assert now == dict.fromkeys(first, "shadowed")
        page = await index.search("launch code", filter=EventFilter(classifications=("shadowed",)))
        assert {hit.seq for hit in page.hits} >= set(first)
        assert all(hit.shadowed_by is not None and hit.compaction_id for hit in page.hits if hit.seq in first)
        current = await index.search("launch code", filter=EventFilter(classifications=("current",)))
        assert not [hit for hit in current.hits if hit.seq in first]

    run(place, scenario)


def test_rebuild_gives_the_same_answers(place: Place) -> None:
    async def scenario(store: SessionStore, index: SearchIndex) -> None:
        alpha, _ = await fill(store)
        await compact_now(alpha, FixedSummarizer(), retain_tokens=0)
        await store.flush(alpha)
        before, _ = await all_pages(index, "launch")
        report = await index.rebuild()
        assert (report.updated, report.reset) == (2, 2)
        after, _ = await all_pages(index, "launch", catch_up=False)
        assert found(after) == found(before)
        await assert_same(store, index, "launch")

    run(place, scenario)


def test_the_cursor_pages_through_every_hit_and_refuses_another_query(place: Place) -> None:
    async def scenario(store: SessionStore, index: SearchIndex) -> None:
        pager = await store.create(id="pager")
        builder = Builder(pager)
        for turn in range(12):
            builder.closed_turn(f"page marker {turn}", f"page marker reply {turn}")
        await store.flush(pager)
        await fill(store)
        for text in ("page marker", "reply", "e"):  # ranked, ranked, unranked (one letter)
            hits, pages = await all_pages(index, text, limit=5)
            assert len(pages) > 1
            assert found(hits) == brute(await inspected(store), text)
        first = await index.search("page marker", limit=5)
        cursor = first.next_cursor
        assert cursor is not None
        for bad in (
            cursor[:-1] + ("0" if cursor[-1] != "0" else "1"),
            cursor.replace("hs1.", "hs1.x", 1),
            "hs1.",
            "garbage",
            cursor + "=",
        ):
            with pytest.raises(InvalidQuery):
                await index.search("page marker", limit=5, cursor=bad)
        for other in (
            {"text": "page markers"},
            {"text": "page marker", "session": "pager"},
            {"text": "page marker", "filter": EventFilter(types=("user/message",))},
        ):
            text = str(other.pop("text"))
            with pytest.raises(InvalidQuery, match="another query"):
                await index.search(text, limit=5, cursor=cursor, **other)  # type: ignore[arg-type,unused-ignore]
        for refused in ({"limit": 0}, {"limit": 501}, {"limit": True}, {"session": ""}):
            with pytest.raises(InvalidQuery):
                await index.search("page", **refused)  # type: ignore[arg-type,unused-ignore]
        for blank in ("", "   ", "\n\t"):
            with pytest.raises(InvalidQuery):
                await index.search(blank)

    run(place, scenario)


def test_the_query_layer_filters_apply(place: Place) -> None:
    async def scenario(store: SessionStore, index: SearchIndex) -> None:
        alpha, _ = await fill(store)
        await compact_now(alpha, FixedSummarizer(), retain_tokens=0)
        Builder(alpha).closed_turn("launch code after", "launch code reply", tools=1, output="launch code")
        await store.flush(alpha)
        times = sorted(event.time for event in alpha.events)
        filters = [
            EventFilter(types=("tool/result",)),
            EventFilter(types=("tool/*", "user/message")),
            EventFilter(classifications=("current", "log-only")),
            EventFilter(turns=(1, 4)),
            EventFilter(turns=(1,), steps=(1,)),
            EventFilter(seqs=(Range(5, 20), Range(40, None))),
            EventFilter(times=(Range(times[len(times) // 2], None),)),
            EventFilter(text=("ZEBRA", "reply")),
        ]
        for where in filters:
            for text in ("launch code", "o"):
                await assert_same(store, index, text, filter=where)
        await assert_same(store, index, "检查点", session="beta 检查")
        assert not (await index.search("launch", session="nobody")).hits

    run(place, scenario)


def test_hostile_queries_are_data(place: Place) -> None:
    async def scenario(store: SessionStore, index: SearchIndex) -> None:
        await fill(store)
        for text in HOSTILE:
            await assert_same(store, index, text)
        assert (await index.search("NEAR(")).hits  # it is in the text, and found as text
        assert (await index.search("a & !b | c <-> d")).hits
        assert (await index.search('"quoted"')).hits
        assert (await index.search("数据库之前")).hits and (await index.search("中文")).hits

    run(place, scenario)


def test_two_indexers_at_once_agree(place: Place) -> None:
    async def scenario(store: SessionStore, index: SearchIndex) -> None:
        await fill(store)
        other = open_search_index(store) if place.kind != "memory" else index
        try:
            await asyncio.gather(index.catch_up(), other.catch_up())
        finally:
            if other is not index:
                await other.close()
        await assert_same(store, index, "launch")
        states = await index.states()
        assert set(states) == {"alpha", "beta 检查"}

    run(place, scenario)

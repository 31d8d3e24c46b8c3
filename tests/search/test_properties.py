"""Properties of the index: what it finds is exactly what the query layer finds.

The equivalence is exact, for any query with a word in it (not only whole words): over all
pages, the hits of ``search(q, filter=f)`` are the events ``f`` keeps whose semantic text
``TextNeedle(q)`` matches, each with its query-layer classification. Tokenization never
decides a hit: the index narrows by the trigrams of the folded words of ``q`` (a superset,
by the folding's property checked below) and every candidate is checked with the needle.
Only the order differs from a scan: ranked by the backend's relevance (or store order when
no word has three characters).
"""

from __future__ import annotations

import asyncio
import contextlib
import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.compaction import compact_now
from harness.errors import CompactionError
from harness.query import EventFilter
from harness.search import open_search_index
from harness.search.fold import fold_char, fold_text, query_terms
from harness.stores.memory import MemoryBackend
from harness.stores.store import SessionStore
from tests.compaction.helpers import Builder, FixedSummarizer
from tests.search.helpers import all_pages, brute, found


def test_folding_keeps_every_character_in_its_ignorecase_class() -> None:
    """The property the index's recall rests on: ``fold_char`` is constant on each class of
    characters ``re.IGNORECASE`` makes equal, and maps a character into its own class."""
    for code in range(1, 0x10000):
        if 0xD800 <= code <= 0xDFFF:
            continue
        char = chr(code)
        pattern = re.compile(re.escape(char), re.IGNORECASE)
        folded = fold_char(code)
        assert pattern.fullmatch(chr(folded)), (hex(code), hex(folded))
        for other in {char.lower(), char.upper(), char.title(), char.swapcase(), char.casefold()}:
            if len(other) == 1 and pattern.fullmatch(other):
                assert fold_char(ord(other)) == folded, (hex(code), other)
    for special in ("ſ", "K", "İ", "ı", "ς", "Σ", "ẞ"):
        pattern = re.compile(re.escape(special), re.IGNORECASE)
        for code in range(1, 0x10000):
            if not 0xD800 <= code <= 0xDFFF and pattern.fullmatch(chr(code)):
                assert fold_char(code) == fold_char(ord(special))


def test_folding_is_one_character_for_one_and_blanks_what_no_index_holds() -> None:
    text = "Ab\x00ſ\ud800中文ẞ"
    assert len(fold_text(text)) == len(text)
    assert fold_text(text) == "ab\ufffds\ufffd中文ß"
    assert fold_text("ASCII\x00") == "ascii\ufffd"
    assert query_terms("ab c") == []
    assert query_terms("abcd") == ["abc", "bcd"]
    assert len(query_terms("x" * 10 + " " + "".join(chr(0x4E00 + i) for i in range(200)))) == 48


ALPHABET = [*"abcABC xyz-*\"'():_%ſKkİiıςσΣ中文检查点数据\n\t\u3000", "  "]
texts = st.lists(st.sampled_from(ALPHABET), min_size=1, max_size=40).map("".join)


def _query_from(data: st.DataObject, corpus: list[str]) -> str:
    if data.draw(st.booleans()):
        source = data.draw(st.sampled_from(corpus))
        start = data.draw(st.integers(0, max(len(source) - 1, 0)))
        end = data.draw(st.integers(start, len(source)))
        piece = source[start:end]
        if data.draw(st.booleans()):
            piece = piece.swapcase()
        if piece.split():
            return piece
    query = data.draw(texts)
    return query if query.split() else "a"


WHERE = [
    None,
    EventFilter(types=("user/message",)),
    EventFilter(classifications=("shadowed",)),
    EventFilter(types=("tool/*",), turns=(1, 2)),
]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), corpus=st.lists(texts, min_size=2, max_size=10), split=st.integers(0, 10))
def test_search_equals_the_brute_force_scan_and_incremental_equals_rebuilt(
    data: st.DataObject, corpus: list[str], split: int
) -> None:
    queries = [_query_from(data, corpus) for _ in range(4)]
    where = data.draw(st.sampled_from(WHERE))
    compact_at = data.draw(st.integers(0, len(corpus)))

    async def main() -> None:
        backend = MemoryBackend()
        store = SessionStore(backend)
        sessions = [await store.create(id="p"), await store.create(id="q 中")]
        builders = [Builder(session) for session in sessions]
        incremental = open_search_index(store)
        for number, text in enumerate(corpus):
            builders[number % 2].closed_turn(text, text[::-1], tools=number % 3, output=text.upper())
            if number == compact_at:
                with contextlib.suppress(CompactionError):  # a summary no smaller than the turns
                    await compact_now(sessions[number % 2], FixedSummarizer(text), retain_tokens=0)
            for session in sessions:
                await store.flush(session)
            if number == split:
                await incremental.catch_up()  # index a prefix; the rest arrives later
        fresh = open_search_index(store)
        inspected = [await store.inspect(session.id) for session in sessions]
        for query in queries:
            expected = brute(inspected, query, where)
            for index in (incremental, fresh):
                hits, _ = await all_pages(index, query, limit=3, filter=where)
                assert found(hits) == expected, query
        await incremental.close()
        await fresh.close()

    asyncio.run(main())

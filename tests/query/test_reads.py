"""Bounded reads (issue 13 item 1): one event with N before/after, and pages with a cursor; both
carry the classification."""

from __future__ import annotations

import base64
import json

import pytest

from harness.errors import EventNotFound, InvalidQuery
from harness.query import MAX_PAGE, MAX_WINDOW, EventFilter, Range, filter_events, index_of, page, window
from tests.query.helpers import Compacted, compacted


@pytest.fixture(scope="module")
def case() -> Compacted:
    return compacted(3)


def test_a_window_is_the_event_and_its_raw_neighbours(case: Compacted) -> None:
    index = index_of(case.session)
    seq = case.first.shadowed_seqs[2]
    found = window(index, seq, before=2, after=3)
    assert found.target.seq == seq
    assert [r.seq for r in found.records] == list(range(seq - 2, seq + 4))
    assert (found.first, found.last, found.length) == (seq - 2, seq + 3, len(index))
    assert [r.classification for r in found.records] == [index.classification(r.seq) for r in found.records]
    assert found.target.classification == "shadowed" and found.target.shadowed_by == case.first.checkpoint_seq


def test_a_window_is_clipped_at_the_ends_of_the_log(case: Compacted) -> None:
    n = len(case.session.events)
    assert [r.seq for r in window(case.session, 1, before=5, after=0).records] == [0, 1]
    assert [r.seq for r in window(case.session, n - 1, before=0, after=5).records] == [n - 1]
    assert [r.seq for r in window(case.session, 0, before=0, after=0).records] == [0]


def test_a_filtered_window_takes_the_nearest_matching_neighbours(case: Compacted) -> None:
    where = EventFilter(types=("user/message", "assistant/message"))
    messages = [r.seq for r in filter_events(case.session, where)]
    target = case.late_result  # a tool/result: not kept by the filter, but the target is always in
    found = window(case.session, target, before=2, after=1, where=where)
    earlier = [s for s in messages if s < target][-2:]
    later = [s for s in messages if s > target][:1]
    assert [r.seq for r in found.records] == [*earlier, target, *later]
    assert [r.seq for r in window(case.session, 0, before=3, after=0, where=where).records] == [0]


@pytest.mark.parametrize(("before", "after"), [(-1, 0), (0, -1), (MAX_WINDOW + 1, 0), (1.0, 1), (True, 0)])
def test_a_window_out_of_bounds_is_invalid(case: Compacted, before: object, after: object) -> None:
    with pytest.raises(InvalidQuery, match=r"before|after"):
        window(case.session, 3, before=before, after=after)  # type: ignore[arg-type]


def test_a_window_of_a_missing_seq_is_event_not_found(case: Compacted) -> None:
    with pytest.raises(EventNotFound):
        window(case.session, 10_000)


def test_pages_walk_the_filtered_log_exactly_once(case: Compacted) -> None:
    where = EventFilter(types=("tool/result", "user/message"))
    expected = [r.seq for r in filter_events(case.session, where)]
    seen: list[int] = []
    cursor = None
    pages = 0
    while True:
        found = page(case.session, where=where, limit=4, cursor=cursor)
        pages += 1
        assert 0 < len(found.records) <= 4
        seen += [r.seq for r in found.records]
        cursor = found.next_cursor
        if cursor is None:
            break
    assert seen == expected and pages == -(-len(expected) // 4)


def test_a_page_starts_at_a_seq_and_carries_classification(case: Compacted) -> None:
    index = index_of(case.session)
    found = page(index, start=10, limit=5)
    assert [r.seq for r in found.records] == [10, 11, 12, 13, 14]
    assert [r.classification for r in found.records] == [index.classification(s) for s in range(10, 15)]
    assert found.length == len(index)
    last = page(index, start=len(index) - 2, limit=5)
    assert [r.seq for r in last.records] == [len(index) - 2, len(index) - 1] and last.next_cursor is None
    assert page(index, start=len(index) + 3).records == ()


def test_an_exactly_full_last_page_has_no_cursor(case: Compacted) -> None:
    where = EventFilter(types=("user/message",))
    count = len(filter_events(case.session, where))
    assert page(case.session, where=where, limit=count).next_cursor is None


def test_a_cursor_stays_usable_as_the_session_grows() -> None:
    grown = compacted(4)
    session = grown.session
    first = page(session, limit=5)
    assert first.next_cursor is not None
    session.append("session/title", {"title": "later"})
    second = page(session, limit=5, cursor=first.next_cursor)
    assert second.records[0].seq == 5


def test_a_cursor_belongs_to_its_filter(case: Compacted) -> None:
    where = EventFilter(types=("tool/result",))
    cursor = page(case.session, where=where, limit=1).next_cursor
    assert cursor is not None
    with pytest.raises(InvalidQuery, match="another query"):
        page(case.session, where=EventFilter(types=("user/message",)), limit=1, cursor=cursor)
    with pytest.raises(InvalidQuery, match="another query"):
        page(case.session, limit=1, cursor=cursor)
    with pytest.raises(InvalidQuery, match="either start or cursor"):
        page(case.session, where=where, start=3, cursor=cursor)


def forged(body: object) -> str:
    return "hq1." + base64.urlsafe_b64encode(json.dumps(body).encode()).decode().rstrip("=")


@pytest.mark.parametrize(
    "cursor",
    [
        "",
        "nonsense",
        "hq1.",
        "hq1.!!!",
        "hq1.e30",
        forged([1]),
        forged({"n": -1, "f": ""}),
        forged({"n": True}),
    ],
)
def test_a_damaged_cursor_is_invalid(case: Compacted, cursor: str) -> None:
    with pytest.raises(InvalidQuery, match="cursor"):
        page(case.session, cursor=cursor)


@pytest.mark.parametrize("limit", [0, -3, MAX_PAGE + 1, 2.5, None])
def test_a_page_size_out_of_bounds_is_invalid(case: Compacted, limit: object) -> None:
    with pytest.raises(InvalidQuery, match="limit"):
        page(case.session, limit=limit)  # type: ignore[arg-type]


@pytest.mark.parametrize("start", [-1, "0", 1.0])
def test_a_bad_start_is_invalid(case: Compacted, start: object) -> None:
    with pytest.raises(InvalidQuery, match="start"):
        page(case.session, start=start)  # type: ignore[arg-type]


def test_reads_are_json(case: Compacted) -> None:
    body = window(case.session, 5, before=1, after=1).to_json()
    assert body["target"] == 5 and [r["seq"] for r in body["records"]] == [4, 5, 6]
    assert body["records"][0]["event"]["seq"] == 4
    paged = page(case.session, where=EventFilter(seqs=(Range(0, 1),)), limit=1).to_json()
    assert paged["nextCursor"] and [r["seq"] for r in paged["records"]] == [0]

"""The fork line (issue 13 item 4): a session and its fork ancestors through a read-only store
handle, each with the part of its log the line did not inherit; every way the chain can end."""

from __future__ import annotations

from pathlib import Path

import pytest

import harness
from harness.errors import CorruptSession, InvalidSessionId, SessionNotFound
from harness.query import ForkLine, LineMember, StoreReader, fork_line
from harness.session.header import SessionHeader, validate_header
from harness.session.session import Session
from harness.stores import JsonlBackend, MemoryBackend, SessionStore
from tests.compaction.helpers import run


def _say(session: Session, text: str) -> None:
    session.append("user/message", harness.user_message(text), surface_op="append")


async def chain(store: SessionStore) -> tuple[Session, Session, Session]:
    """g (3 events) -> p forked at g's seq 1 (seed 2) -> c forked at p's end (seed 5)."""
    g = await store.create(id="g")
    for text in ("one", "two", "three"):
        _say(g, text)
    await store.flush(g)
    p = await store.adopt(g.fork(1, id="p"))  # p: g's 0-1, its end-seed at 2
    _say(p, "p-three")
    _say(p, "p-four")
    await store.flush(p)
    c = await store.adopt(p.fork(id="c"))  # c: p's 0-4, its end-seed at 5
    await store.flush(c)
    return g, p, c


def test_each_ancestor_starts_where_the_line_forked_from_it() -> None:
    async def main() -> ForkLine:
        store = SessionStore(MemoryBackend())
        _, _, c = await chain(store)
        return await fork_line(StoreReader(store), c.header)

    line = run(main())
    assert line.end == "root" and line.stop is None
    assert line.members == (
        LineMember("c", 0, 0, None),
        LineMember("p", 1, 5, 5),  # what p did after c forked from it
        LineMember("g", 2, 2, 2),  # what g did after p forked from it; c holds g's 0-1
    )
    c, p, g = line.members
    assert [m.relation for m in line.members] == ["this session", "fork parent", "fork grandparent"]
    assert LineMember("x", 5).relation == "fork ancestor 5"
    assert c.holds_own_history(10**6) and p.holds_own_history(4) and not p.holds_own_history(5)
    assert g.holds_own_history(1) and not g.holds_own_history(2)
    assert line.member("p") is p and line.member("nobody") is None


def test_a_grandparent_forked_later_than_the_parent_is_inherited_only_up_to_the_lower_fork() -> None:
    async def main() -> ForkLine:
        store = SessionStore(MemoryBackend())
        g = await store.create(id="g")
        for text in ("one", "two", "three", "four"):
            _say(g, text)
        p = await store.adopt(g.fork(id="p"))  # p: g's 0-3, end-seed 4
        c = await store.adopt(p.fork(1, id="c"))  # c: g's 0-1 only
        for session in (g, p, c):
            await store.flush(session)
        return await fork_line(StoreReader(store), c.header)

    _, p, g = run(main()).members
    assert (p.start, p.inherited) == (2, 2) and (g.start, g.inherited) == (4, 2)


def test_without_a_reader_or_past_most_the_line_is_cut_at_the_parent_it_did_not_read() -> None:
    async def main() -> tuple[ForkLine, ForkLine, ForkLine]:
        store = SessionStore(MemoryBackend())
        _, _, c = await chain(store)
        reader = StoreReader(store)
        return (
            await fork_line(None, c.header),
            await fork_line(reader, c.header, most=1),
            await fork_line(reader, c.header, most=0),
        )

    bare, one, none = run(main())
    assert [m.id for m in bare.members] == ["c"] and (bare.end, bare.stop) == ("cut", "p")
    assert [m.id for m in one.members] == ["c", "p"] and (one.end, one.stop) == ("cut", "g")
    assert [m.id for m in none.members] == ["c"] and none.end == "cut"


def test_a_top_level_session_is_a_line_of_one() -> None:
    line = run(fork_line(None, SessionHeader.new(id="solo")))
    assert line.members == (LineMember("solo", 0),) and line.end == "root"


class Headers:
    """A reader over fixed headers (``inspect`` is never needed by the walk)."""

    def __init__(self, *headers: SessionHeader, broken: frozenset[str] = frozenset()) -> None:
        self.headers = {header.id: header for header in headers}
        self.broken = broken
        self.asked: list[str] = []

    async def header(self, session_id: str) -> SessionHeader:
        self.asked.append(session_id)
        if session_id in self.broken:
            raise CorruptSession(f"session {session_id!r} is damaged")
        try:
            return self.headers[session_id]
        except KeyError:
            raise SessionNotFound(session_id) from None

    async def inspect(self, session_id: str) -> Session:
        raise AssertionError("the walk reads headers only")


def header(sid: str, parent: str | None = None, seed: int | None = 1) -> SessionHeader:
    return validate_header(
        {
            "version": 0,
            "id": sid,
            "createdAt": 1,
            **({"parentSession": parent} if parent else {}),
            **({"seedLength": seed} if parent and seed is not None else {}),
        }
    )


def test_a_missing_a_damaged_and_a_looping_parent_end_the_line_where_they_are() -> None:
    missing = run(fork_line(Headers(), header("c", "gone")))
    assert [m.id for m in missing.members] == ["c"] and (missing.end, missing.stop) == ("missing", "gone")
    damaged = run(fork_line(Headers(header("p", "g"), broken=frozenset({"g"})), header("c", "p")))
    assert [m.id for m in damaged.members] == ["c", "p"]
    assert (damaged.end, damaged.stop) == ("unreadable", "g")
    loop = Headers(header("a", "b"), header("b", "a"))
    looped = run(fork_line(loop, header("c", "a")))
    assert [m.id for m in looped.members] == ["c", "a", "b"] and (looped.end, looped.stop) == ("cycle", "a")
    itself = run(fork_line(Headers(), header("c", "c")))
    assert itself.end == "cycle" and [m.id for m in itself.members] == ["c"]


def test_a_reader_answering_with_another_session_is_no_ancestor() -> None:
    liar = Headers(header("p", None))
    liar.headers["q"] = liar.headers["p"]  # asked for q, it answers with p's header
    line = run(fork_line(liar, header("c", "q")))
    assert [m.id for m in line.members] == ["c"] and (line.end, line.stop) == ("unreadable", "q")


def test_a_header_without_seed_length_gives_its_parent_from_seq_zero() -> None:
    line = run(fork_line(Headers(header("p")), header("c", "p", seed=None)))
    assert line.members[1] == LineMember("p", 1, 0, 0)


def test_the_walk_reads_only_ids_taken_from_headers() -> None:
    reader = Headers(header("p", "g"), header("g"))
    line = run(fork_line(reader, header("c", "p")))
    assert reader.asked == ["p", "g"] and line.end == "root"
    assert line.member("../p") is None and line.member("/g") is None and line.member("") is None


def test_the_store_reader_reads_stored_and_unwritten_live_sessions_and_writes_nothing(tmp_path: Path) -> None:
    async def main() -> None:
        store = SessionStore(JsonlBackend(tmp_path))
        try:
            _, _, c = await chain(store)
            reader = StoreReader(store)
            before = sorted(
                (path, path.stat().st_size)
                for path in tmp_path.rglob("*")
                if path.is_file() and ".harness-owners" not in str(path)
            )
            assert (await reader.header("p")).parent_session == "g"
            seen = (await reader.inspect("p")).events  # as a load gives it: a new end-seed at 5
            assert [e.seq for e in seen] == [0, 1, 2, 3, 4, 5] and seen[5].type == "session/end-seed"
            fresh = await store.create(id="fresh")  # live, nothing written yet
            assert (await reader.header("fresh")).id == "fresh"
            with pytest.raises(SessionNotFound):
                await reader.header("nobody")
            with pytest.raises(InvalidSessionId):
                await reader.header("")
            after = sorted((path, path.stat().st_size) for path in tmp_path.rglob("*") if path.is_file())
            # create took ownership of "fresh" (its lock file); the reader wrote nothing
            assert [p for p in after if ".harness-owners" not in str(p[0])] == before
            assert fresh.id == "fresh" and c.id == "c"
        finally:
            await store.close()

    run(main())
    public = {name for name in dir(StoreReader) if not name.startswith("_")}
    assert public == {"header", "inspect"}

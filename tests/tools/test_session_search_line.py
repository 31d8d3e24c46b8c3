"""``session_search`` over the fork line (issue 13 item 4): the session's own log and its fork
ancestors' logs through a read-only store handle, each event found once and named by its
session; siblings, descendants, other lines and made-up ids refused as typed tool errors."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.errors import CorruptSession
from harness.events.event import Replace
from harness.messages.model import assistant_message, user_message
from harness.query import StoreReader
from harness.session.session import Session
from harness.stores import JsonlBackend, MemoryBackend, SessionStore, SqliteBackend
from harness.stores.backend import Backend
from harness.tools.base import ToolContext, ToolError, ToolOutcome
from harness.tools.session_search import SessionSearch

CONSTANT = "ZEBRA-4471"


def _say(session: Session, text: str) -> int:
    return session.append("user/message", user_message(text), surface_op="append").seq


def _answer(session: Session, text: str) -> int:
    message = assistant_message([{"type": "text", "text": text}], provider="p", model="m")
    return session.append("assistant/message", {"message": message}, surface_op="append").seq


def _compact(session: Session, first: int, last: int, summary: str) -> int:
    return session.append(
        "user/message",
        user_message(summary),
        surface_op=Replace(first, last),
        source_event_seqs=[first, last],
    ).seq


class Tree:
    """g -> p -> c (the running session), p -> s (a sibling of c), c -> d (a descendant),
    u (another line). p learns CONSTANT after c forked, then compacts it away."""

    def __init__(self, store: SessionStore) -> None:
        self.store = store

    async def build(self) -> Tree:
        store = self.store
        g = await store.create(id="g")
        _say(g, "The colour is TEAL.")
        _answer(g, "Understood.")
        p = await store.adopt(g.fork(id="p"))  # p: g's 0-1, end-seed 2
        _say(g, "Later in g: GRAND-ONLY-11.")
        _say(p, "In p before the fork: PARENT-EARLY-3.")
        c = await store.adopt(p.fork(id="c"))  # c: p's 0-3, end-seed 4
        first = _say(p, f"The deploy key id is {CONSTANT}; remember it.")
        last = _answer(p, "Noted.")
        _compact(p, first, last, "[summary: the user gave a deploy key id]")
        s = await store.adopt(p.fork(id="s"))
        _say(s, "Only the sibling knows SIBLING-ONLY-5.")
        _say(c, "the child goes on")
        d = await store.adopt(c.fork(id="d"))
        _say(d, "Only the descendant knows DESC-ONLY-6.")
        u = await store.create(id="u")
        _say(u, "Another line knows OTHER-ONLY-7 and the deploy key id OTHER-KEY.")
        for session in (g, p, c, s, d, u):
            await store.flush(session)
        self.g, self.p, self.c = g, p, c
        return self

    def context(self, session: Session | None = None, *, reader: bool = True) -> ToolContext:
        running = session or self.c
        return ToolContext(
            Path("."),
            call_id="call-now",
            events=running.events,
            header=running.header,
            sessions=StoreReader(self.store) if reader else None,
        )


def _run(work: Callable[[Tree], Any], backend: Backend | None = None) -> Any:
    async def main() -> Any:
        store = SessionStore(backend or MemoryBackend())
        try:
            tree = await Tree(store).build()
            return await work(tree)
        finally:
            await store.close()

    return asyncio.run(main())


async def _search(tree: Tree, tool: SessionSearch | None = None, **arguments: Any) -> ToolOutcome:
    return await (tool or SessionSearch()).run(arguments, tree.context())


async def _refusal(tree: Tree, arguments: dict[str, Any], *, reader: bool = True) -> ToolError:
    with pytest.raises(ToolError) as caught:
        await SessionSearch().run(arguments, tree.context(reader=reader))
    return caught.value


def _backend(kind: str, tmp_path: Path) -> Backend:
    if kind == "jsonl":
        return JsonlBackend(tmp_path / "root")
    if kind == "sqlite":
        return SqliteBackend(tmp_path / "sessions.sqlite")
    return MemoryBackend()


@pytest.mark.parametrize("kind", ["memory", "jsonl", "sqlite"])
def test_a_fork_child_finds_what_its_parent_learned_after_the_fork_and_then_compacted(
    kind: str, tmp_path: Path
) -> None:
    async def work(tree: Tree) -> ToolOutcome:
        return await _search(tree, query="deploy key id is")

    outcome = _run(work, _backend(kind, tmp_path))
    assert not outcome.is_error and CONSTANT in outcome.text and outcome.meta == {"hits": 1}
    assert (
        "#4 user/message [shadowed: condensed away by seq 6] in session p "
        "(fork parent; not in this session's history)"
    ) in outcome.text
    assert "OTHER-KEY" not in outcome.text  # another line's session is out of reach
    assert "Read one in full with seq=<seq> (and session=<id> for another session's hit)." in outcome.text


def test_every_event_of_the_line_is_found_once_in_the_lowest_session_holding_it() -> None:
    async def work(tree: Tree) -> dict[str, ToolOutcome]:
        words = ["TEAL", "PARENT-EARLY-3", "GRAND-ONLY-11", "child goes on", "SIBLING-ONLY-5"]
        return {word: await _search(tree, query=word) for word in [*words, "DESC-ONLY-6", "OTHER-ONLY-7"]}

    found = _run(work)
    # inherited through the fork seeds: found in this session only, not again in p or g
    assert found["TEAL"].meta == {"hits": 1}
    assert "#0 user/message [current] in session c (this session)" in found["TEAL"].text
    assert found["PARENT-EARLY-3"].meta == {"hits": 1} and "in session c (this session)" in (
        found["PARENT-EARLY-3"].text
    )
    # what g did after p forked from it: g's own, marked so
    grand = found["GRAND-ONLY-11"].text
    assert "#2 user/message [current] in session g (fork grandparent; not in this session's history)" in grand
    assert found["child goes on"].meta == {"hits": 1}
    for word in ("SIBLING-ONLY-5", "DESC-ONLY-6", "OTHER-ONLY-7"):  # off the line
        assert found[word].text.startswith("No event in this session (c), session p (fork parent, "), word
        assert found[word].meta is None


def test_hits_come_session_by_session_and_page_on_across_the_line() -> None:
    async def work(tree: Tree) -> list[ToolOutcome]:
        _say(tree.c, "c says: the marker")
        _say(tree.p, "p says: the marker")
        await tree.store.flush(tree.p)
        _say(tree.g, "g says: the marker")
        await tree.store.flush(tree.g)
        pages = [await _search(tree, query="the marker", limit=1)]
        pages.append(await _search(tree, query="the marker", limit=1, session="p"))
        pages.append(await _search(tree, query="the marker", limit=1, session="g"))
        pages.append(await _search(tree, query="the marker", limit=5))
        return pages

    first, second, third, every = _run(work)
    assert "c says" in first.text and 'call session_search again with session="p"' in first.text
    assert "p says" in second.text and 'session="g"' in second.text
    assert "g says" in third.text and "More may" not in third.text
    assert every.meta == {"hits": 3}
    assert every.text.index("c says") < every.text.index("p says") < every.text.index("g says")


def test_before_seq_in_an_ancestor_pages_on_inside_it_then_up_the_line() -> None:
    async def work(tree: Tree) -> list[ToolOutcome]:
        for number in range(3):
            _say(tree.p, f"p note {number}: the needle")
        await tree.store.flush(tree.p)
        head = await _search(tree, query="the needle", limit=2)
        return [head, await _search(tree, query="the needle", limit=2, session="p", before_seq=8)]

    head, rest = _run(work)
    assert "p note 2" in head.text and "p note 1" in head.text
    assert 'before_seq=8 and session="p"' in head.text
    assert "p note 0" in rest.text and "p note 1" not in rest.text and rest.meta == {"hits": 1}


def test_a_read_in_an_ancestor_marks_which_events_are_also_this_sessions_history() -> None:
    async def work(tree: Tree) -> tuple[ToolOutcome, ToolOutcome]:
        after = await SessionSearch().run({"seq": 4, "session": "p", "before": 1}, tree.context())
        before = await SessionSearch().run({"seq": 0, "session": "g", "after": 0}, tree.context())
        return after, before

    after, before = _run(work)
    assert (
        "> #4 user/message [shadowed: condensed away by seq 6] in session p (fork parent; not in"
        in after.text
    )
    assert CONSTANT in after.text
    assert (
        "#3 user/message [current] in session p (fork parent; also in this session's history)" in after.text
    )
    assert "in session p (fork parent); > marks seq 4." in after.text
    assert "> #0 user/message [current] in session g (fork grandparent; also in" in before.text


def test_sessions_off_the_line_and_made_up_ids_are_refused_alike() -> None:
    asked = ["s", "d", "u", "nobody", "../p", "p/../p", "/etc/passwd", "g\x00", " p", "P"]

    async def work(tree: Tree) -> list[ToolError]:
        refusals = []
        for sid in asked:
            refusals.append(await _refusal(tree, {"query": "deploy", "session": sid}))
            refusals.append(await _refusal(tree, {"seq": 0, "session": sid}))
        return refusals

    refusals = _run(work)
    assert {error.code for error in refusals} == {"SESSION_OUT_OF_REACH"}
    # the same words for a session the store holds and one it does not: nothing is revealed
    texts = {error.message.replace(repr(asked[index // 2]), "<id>") for index, error in enumerate(refusals)}
    assert texts == {
        "session_search cannot reach session <id>: it reaches only this session (c) and the sessions "
        "it was forked from (p, g). Other sessions (forks of these, or any other line) are out of its "
        "reach."
    }


def test_the_line_itself_is_reachable_by_id() -> None:
    async def work(tree: Tree) -> list[ToolOutcome]:
        return [await _search(tree, query="TEAL", session=sid) for sid in ("c", "p", "g")]

    mine, parent, grand = _run(work)
    assert mine.meta == {"hits": 1}
    # from p up, TEAL sits in the part c inherited: no hit there (it was c's)
    assert parent.text.startswith("No event in session p (fork parent, from seq 4) or session g")
    assert grand.text.startswith("No event in session g (fork grandparent, from seq 2) contains")


def test_without_a_store_handle_only_the_own_log_is_reachable_and_the_answer_says_so() -> None:
    async def work(tree: Tree) -> tuple[ToolOutcome, ToolError]:
        found = await SessionSearch().run({"query": "deploy key id is"}, tree.context(reader=False))
        return found, await _refusal(tree, {"query": "deploy", "session": "p"}, reader=False)

    found, refused = _run(work)
    assert found.text.startswith("No event in this session (c) contains")
    assert "This session was forked from session p, which session_search cannot reach here." in found.text
    assert refused.code == "SESSION_OUT_OF_REACH" and "only this session (c)." in refused.message


class Damaged(StoreReader):
    """A reader whose ``inspect`` of one session fails as a damaged log would."""

    def __init__(self, store: SessionStore, broken: str) -> None:
        super().__init__(store)
        self.broken = broken

    async def inspect(self, session_id: str) -> Session:
        if session_id == self.broken:
            raise CorruptSession(f"session {session_id!r}: unparsable committed event")
        return await super().inspect(session_id)


def test_an_unreadable_ancestor_is_said_never_raised() -> None:
    async def work(tree: Tree) -> tuple[ToolOutcome, ToolOutcome, ToolError]:
        context = tree.context()
        context.sessions = Damaged(tree.store, "p")
        search = await SessionSearch().run({"query": "GRAND-ONLY-11"}, context)
        own = await SessionSearch().run({"query": "TEAL"}, context)
        with pytest.raises(ToolError) as caught:
            await SessionSearch().run({"seq": 0, "session": "p"}, context)
        return search, own, caught.value

    search, own, read = _run(work)
    assert search.text.startswith("No event in this session (c) contains")
    assert "Session p (fork parent) could not be read (CorruptSession)" in search.text
    assert own.meta == {"hits": 1}  # a hit page that stops early does not read p at all
    assert read.code == "SESSION_UNREADABLE" and "CorruptSession" in read.message


def test_a_parent_the_store_lacks_ends_the_line_there() -> None:
    async def work(tree: Tree) -> ToolOutcome:
        orphan = Session.from_restore(
            "o", [], {"version": 0, "id": "o", "createdAt": 1, "parentSession": "gone", "seedLength": 0}
        )
        _say(orphan, "orphan text")
        context = ToolContext(
            Path("."), events=orphan.events, header=orphan.header, sessions=StoreReader(tree.store)
        )
        return await SessionSearch().run({"query": "orphan"}, context)

    outcome = _run(work)
    assert outcome.meta == {"hits": 1}
    assert "The fork line ends at session gone, which the store does not hold." in outcome.text


def test_the_cap_holds_over_long_ids_and_many_ancestors() -> None:
    long = "x" * 180

    async def main() -> tuple[list[ToolOutcome], ToolOutcome]:
        store = SessionStore(MemoryBackend())
        top = await store.create(id=f"{long}-0")
        _say(top, "needle " + "y" * 3_000)
        for number in range(1, 6):
            top = await store.adopt(top.fork(id=f"{long}-{number}"))
            _say(top, f"needle {number} " + "y" * 3_000)
            await store.flush(top)
        context = ToolContext(Path("."), events=top.events, header=top.header, sessions=StoreReader(store))
        tool = SessionSearch(max_output_chars=1_000, snippet_chars=200, max_event_chars=300, max_ancestors=3)
        answers = [await tool.run({"query": "needle", "limit": limit}, context) for limit in (1, 5, 20)]
        answers.append(await tool.run({"seq": 1, "session": f"{long}-3", "after": 10}, context))
        cut = await tool.run({"query": "nothing"}, context)
        await store.close()
        return answers, cut

    answers, cut = asyncio.run(main())
    assert all(len(answer.text) <= 1_000 for answer in answers)
    assert "The fork line goes on past 3 ancestors (to session " in cut.text and len(cut.text) <= 1_000


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    texts=st.lists(
        st.tuples(st.integers(min_value=0, max_value=2), st.text(min_size=0, max_size=2_500)),
        min_size=1,
        max_size=12,
    ),
    budget=st.integers(min_value=1_000, max_value=3_000),
    limit=st.integers(min_value=1, max_value=20),
)
def test_any_answer_over_a_line_stays_inside_the_budget_and_names_each_hits_session(
    texts: list[tuple[int, str]], budget: int, limit: int
) -> None:
    """Texts go to g, p (forked from g) or c (forked from p), each holding the needle; every
    search and read keeps to the budget, and every hit header names a session of the line."""

    async def main() -> list[ToolOutcome]:
        store = SessionStore(MemoryBackend())
        g = await store.create(id="g")
        _say(g, "needle at the root")
        p = await store.adopt(g.fork(id="p"))
        c = await store.adopt(p.fork(id="c"))
        sessions = (g, p, c)
        for where, text in texts:
            _say(sessions[where], text + " needle")
        for session in sessions:
            await store.flush(session)
        tool = SessionSearch(max_output_chars=budget, snippet_chars=200, max_event_chars=600)
        context = ToolContext(Path("."), events=c.events, header=c.header, sessions=StoreReader(store))
        answers = [await tool.run({"query": "needle", "limit": limit}, context)]
        for sid in ("c", "p", "g"):
            answers.append(await tool.run({"query": "needle", "session": sid, "limit": limit}, context))
            answers.append(await tool.run({"seq": 0, "session": sid, "after": 10}, context))
        await store.close()
        return answers

    answers = asyncio.run(main())
    for answer in answers:
        assert len(answer.text) <= budget and not answer.is_error
    for line in answers[0].text.splitlines():
        if re.match(r"#\d+ user/message \[", line):  # a hit's header (texts are random)
            assert (
                " in session c (this session)" in line
                or " in session p (fork parent; " in line
                or (" in session g (fork grandparent; " in line)
            ), line

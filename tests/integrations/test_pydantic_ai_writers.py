"""Many writers of one conversation, on real backends (a JSONL root, an SQLite file, PostgreSQL):
two stores over the same storage, as two processes would be. ``expected_revision`` rides on the
backend's expected-seq check, so a stale writer always gets ``ConversationConflict`` and nothing
of its change is reachable, even when it loses the race between its check and its write; a
failed write leaves the conversation as it was."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable, Iterator, Sequence
from pathlib import Path

import pytest
from pydantic_ai.conversation import Conversation, ConversationTypeAdapter
from pydantic_ai.conversation_store import ConversationConflict

from harness.events.event import Event
from harness.integrations.pydantic_ai import HarnessConversationStore
from harness.query.forks import store_lineage
from harness.stores import SessionStore
from harness.stores.backend import Backend
from harness.stores.faults import DelegatingBackend, FaultyBackend
from harness.testing.samples import run
from tests.integrations.pydantic_ai_support import make_backend, reply, turn, user
from tests.stores.pg import drop_schema

BACKENDS = ["jsonl", "sqlite", "postgres"]


class HookedBackend(DelegatingBackend):
    """A backend whose next append to a given session first runs a hook (another writer)."""

    def __init__(self, inner: Backend) -> None:
        super().__init__(inner)
        self.hooks: dict[str, Callable[[], Awaitable[None]]] = {}

    async def append(self, session_id: str, batch: Sequence[Event]) -> None:
        hook = self.hooks.pop(session_id, None)
        if hook is not None:
            await hook()
        await self.inner.append(session_id, batch)


@pytest.fixture
def storage(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[], Backend]]:
    kind = request.param
    pg: tuple[str, str] | None = None
    if kind == "postgres":
        from tests.stores.pg import server_dsn

        pg = (server_dsn(), f"t_{uuid.uuid4().hex[:12]}")
    try:
        yield lambda: make_backend(kind, tmp_path, pg)
    finally:
        if pg is not None:
            drop_schema(*pg)


def two_stores(storage: Callable[[], Backend]) -> tuple[HarnessConversationStore, HarnessConversationStore]:
    first, second = SessionStore(storage()), SessionStore(storage())
    return HarnessConversationStore(first), HarnessConversationStore(second)


async def close(*stores: HarnessConversationStore) -> None:
    for store in stores:
        await store.sessions.close()


@pytest.mark.parametrize("storage", BACKENDS, indirect=True)
def test_a_stale_writer_in_another_process_conflicts(storage: Callable[[], Backend]) -> None:
    async def go() -> None:
        a, b = two_stores(storage)
        await a.save(Conversation(conversation_id="c", messages=turn(1)))
        mine, theirs = await a.load("c"), await b.load("c")
        assert mine is not None and theirs is not None
        mine.messages.append(user("from a"))
        await a.save(mine)
        theirs.messages.append(user("from b"))
        with pytest.raises(ConversationConflict):
            await b.save(theirs)
        again = await b.load("c")  # b's cache notices a's write
        assert again is not None and again.messages == [*turn(1), user("from a")]
        again.messages.append(user("from b, retried"))
        await b.save(again)
        with pytest.raises(ConversationConflict):
            await a.save(mine)  # a's copy is stale now
        final = await a.load("c")
        assert final is not None and final.messages == [*turn(1), user("from a"), user("from b, retried")]
        await close(a, b)

    run(go())


@pytest.mark.parametrize("storage", BACKENDS, indirect=True)
def test_a_save_that_loses_the_race_after_its_check_writes_nothing(storage: Callable[[], Backend]) -> None:
    async def go() -> None:
        a = HarnessConversationStore(SessionStore(storage()))
        hooked = HookedBackend(storage())
        b = HarnessConversationStore(SessionStore(hooked))
        await a.save(Conversation(conversation_id="c", messages=turn(1)))
        mine, theirs = await a.load("c"), await b.load("c")
        assert mine is not None and theirs is not None
        mine.messages.append(user("from a"))
        theirs.messages.append(user("from b"))

        async def a_first() -> None:
            await a.save(mine)

        hooked.hooks["c"] = a_first  # b passes its revision check, then a writes first
        with pytest.raises(ConversationConflict):
            await b.save(theirs)
        loaded = await b.load("c")
        assert loaded is not None and loaded.messages == [*turn(1), user("from a")]
        await close(a, b)

    run(go())


@pytest.mark.parametrize("storage", BACKENDS, indirect=True)
def test_a_branch_that_loses_the_race_is_abandoned_and_unreachable(storage: Callable[[], Backend]) -> None:
    async def go() -> None:
        a = HarnessConversationStore(SessionStore(storage()))
        hooked = HookedBackend(storage())
        b = HarnessConversationStore(SessionStore(hooked))
        await a.save(Conversation(conversation_id="c", messages=[*turn(1), *turn(2)]))
        mine, theirs = await a.load("c"), await b.load("c")
        assert mine is not None and theirs is not None
        mine.messages.append(user("from a"))
        # b rewrites the history (a new session, forked), and a saves before b moves the tip
        rewritten = ConversationTypeAdapter.validate_json(ConversationTypeAdapter.dump_json(theirs))
        rewritten.messages[4:] = [user("question 2, rewritten")]

        async def a_first() -> None:
            await a.save(mine)

        hooked.hooks["c"] = a_first
        with pytest.raises(ConversationConflict):
            await b.save(rewritten)
        loaded = await b.load("c")
        assert loaded is not None and loaded.messages == [*turn(1), *turn(2), user("from a")]
        assert await b.session_of("c") == "c"
        assert [r.conversation_id for r in await b.list_conversations()] == ["c"]
        lineage = await store_lineage(b.sessions, "c")
        (orphan,) = lineage.descendant_ids()
        session = await b.sessions.inspect(orphan)
        assert any(e.type == "pydantic-ai/abandoned" for e in session.events)
        await close(a, b)

    run(go())


@pytest.mark.parametrize("storage", BACKENDS, indirect=True)
def test_a_stale_save_after_a_branch_conflicts(storage: Callable[[], Backend]) -> None:
    async def go() -> None:
        a, b = two_stores(storage)
        await a.save(Conversation(conversation_id="c", messages=turn(1)))
        mine, theirs = await a.load("c"), await b.load("c")
        assert mine is not None and theirs is not None
        branched = await a.branch("c", at=2, expected_revision=mine.revision)
        theirs.messages.append(user("on the old head"))
        with pytest.raises(ConversationConflict):
            await b.save(theirs)
        branched.messages.append(reply("on the branch"))
        await a.save(branched)
        loaded = await b.load("c")
        assert loaded is not None and loaded.messages == [*turn(1)[:2], reply("on the branch")]
        await close(a, b)

    run(go())


@pytest.mark.parametrize("storage", BACKENDS, indirect=True)
def test_two_tasks_saving_at_once_one_wins(storage: Callable[[], Backend]) -> None:
    async def go() -> None:
        a, _ = two_stores(storage)
        await a.save(Conversation(conversation_id="c", messages=turn(1)))
        copies = [await a.load("c") for _ in range(4)]
        for index, copy in enumerate(copies):
            assert copy is not None
            copy.messages.append(user(f"writer {index}"))
        outcomes = await asyncio.gather(*(a.save(c) for c in copies if c is not None), return_exceptions=True)
        wins = [o for o in outcomes if not isinstance(o, BaseException)]
        assert len(wins) == 1
        assert all(isinstance(o, ConversationConflict) for o in outcomes if isinstance(o, BaseException))
        loaded = await a.load("c")
        assert loaded is not None and len(loaded.messages) == 5
        await close(a)

    run(go())


@pytest.mark.parametrize("storage", BACKENDS, indirect=True)
def test_a_failed_write_leaves_the_conversation_as_it_was(storage: Callable[[], Backend]) -> None:
    async def go() -> None:
        faulty = FaultyBackend(storage())
        store = HarnessConversationStore(SessionStore(faulty))
        await store.save(Conversation(conversation_id="c", messages=turn(1)))
        loaded = await store.load("c")
        assert loaded is not None
        revision = loaded.revision
        loaded.messages.append(user("lost?"))
        faulty.fail_next_append()
        with pytest.raises(OSError):
            await store.save(loaded)
        assert loaded.revision == revision  # not advanced: the save did not happen
        again = await store.load("c")
        assert again is not None and again.messages == turn(1)
        await store.save(loaded)  # the same copy saves once the backend works
        final = await store.load("c")
        assert final is not None and final.messages == [*turn(1), user("lost?")]
        # a write that landed but whose reply was lost: the copy is stale, nothing is doubled
        final.messages.append(user("landed"))
        faulty.fail_next_append(after_write=True)
        with pytest.raises(OSError):
            await store.save(final)
        with pytest.raises(ConversationConflict):
            await store.save(final)
        reread = await store.load("c")
        assert reread is not None and reread.messages == [*turn(1), user("lost?"), user("landed")]
        await store.sessions.close()

    run(go())


@pytest.mark.parametrize("storage", ["memory", *BACKENDS], indirect=True)
def test_a_failed_first_write_does_not_block_the_conversation(storage: Callable[[], Backend]) -> None:
    async def go() -> None:
        faulty = FaultyBackend(storage())
        store = HarnessConversationStore(SessionStore(faulty))
        faulty.fail_next_append()
        with pytest.raises(OSError):
            await store.save(Conversation(conversation_id="c", messages=turn(1)))
        assert await store.load("c") is None
        await store.save(Conversation(conversation_id="c", messages=turn(2)))
        loaded = await store.load("c")
        assert loaded is not None and loaded.messages == turn(2)
        await store.sessions.close()

    run(go())

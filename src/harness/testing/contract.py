"""The contract every storage backend keeps, run through ``SessionStore``.

Each backend's test module subclasses ``StoreContract`` and says how to make a
backend (and a second one on the same storage). Every test here then runs
against it, eventsourcing-style. A backend written outside harness runs it too::

    from harness.testing.contract import StoreContract

    class TestMyBackend(StoreContract):
        def make_backend(self, tmp_path): return MyBackend(tmp_path / "data")
        def second_backend(self, tmp_path, first): return MyBackend(tmp_path / "data")

It needs ``pytest`` (a test dependency, not one of harness's); ``harness.testing.tail_contract``
is the same for a backend with a live tail.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import msgspec
import pytest

import harness
from harness.errors import (
    CorruptSession,
    InvalidSessionId,
    LeaseLost,
    PersistenceFailed,
    SessionConflict,
    SessionDeleted,
    SessionExists,
    SessionHasForks,
    SessionInUse,
    SessionNotFound,
)
from harness.events.event import Event
from harness.events.json import loads
from harness.session.header import SessionHeader
from harness.stores.backend import Backend, StoredLog, read_whole
from harness.stores.faults import FaultyBackend
from harness.stores.store import SessionStore
from harness.stores.summary import summarize
from harness.testing.samples import chunk, full_header, header, run, sample_events
from harness.testing.samples import wire as wire_events


def wire(session: harness.Session) -> list[dict[str, Any]]:
    return [loads(event.encode()) for event in session.events]


CHUNK = {"turn": 1, "step": 1, "chunk": {"type": "text-delta", "index": 0, "text": "x"}}


def one_turn(session: harness.Session, turn: int = 1, *, close: bool = True) -> None:
    session.append("turn/start", {"turn": turn})
    session.append("step/start", {"turn": turn, "step": 1})
    session.append("user/message", harness.user_message(f"task {turn}"), surface_op="append")
    call = harness.tool_call_block(f"call-{turn}", "read_file", '{"path":"a.txt"}')
    reply = harness.assistant_message([harness.text_block("reading it"), call], provider="p", model="m")
    session.append("assistant/message", {"turn": turn, "step": 1, "message": reply}, surface_op="append")
    started = session.append(
        "tool/call",
        {"turn": turn, "step": 1, "callId": f"call-{turn}", "name": "read_file", "arguments": "{}"},
    )
    if not close:
        return
    result = harness.tool_result_message(f"call-{turn}", "42 lines")
    session.append(
        "tool/result",
        {"turn": turn, "step": 1, "message": result},
        surface_op="append",
        source_event_seqs=[started.seq],
    )
    session.append("step/end", {"turn": turn, "step": 1})
    session.append("turn/end", {"turn": turn, "reason": {"kind": "completed"}})


class StoreContract:
    """Subclass and implement ``make_backend``; ``second_backend`` must open the same storage;
    ``corrupt_header`` damages a stored header the way that storage can be damaged."""

    def make_backend(self, tmp_path: Path) -> Backend:
        raise NotImplementedError

    def second_backend(self, tmp_path: Path, first: Backend) -> Backend:
        raise NotImplementedError

    def corrupt_header(self, tmp_path: Path, backend: Backend, session_id: str) -> None:
        """Overwrite the stored header of ``session_id`` with bytes that are not a header."""
        raise NotImplementedError

    # ---- round trip ------------------------------------------------------------------

    def test_round_trip_through_a_new_store(self, tmp_path: Path) -> None:
        async def scenario() -> None:
            store = SessionStore(self.make_backend(tmp_path))
            session = await store.create(cwd="/work/project")
            one_turn(session)
            session.append("session/title", {"title": "Counting lines"})
            await store.flush(session)
            await store.close()

            again = SessionStore(self.second_backend(tmp_path, store.backend))
            loaded = await again.load(session.id)
            assert wire(loaded)[: len(session.events)] == wire(session)
            assert loaded.events[-1].type == "session/end-seed"
            assert loaded.first_live_seq == len(session.events)
            assert [m.raw for m in loaded.derive_messages()] == [m.raw for m in session.derive_messages()]
            assert loaded.header.cwd == "/work/project"
            (info,) = await again.list()
            assert (info.id, info.cwd, info.title) == (session.id, "/work/project", "Counting lines")
            assert info.event_count == len(session.events) + 1 or info.event_count == len(session.events)
            await again.close()

        run(scenario())

    def test_f46_create_alone_writes_nothing_and_is_not_listed(self, tmp_path: Path) -> None:
        async def scenario() -> None:
            store = SessionStore(self.make_backend(tmp_path))
            session = await store.create()
            await store.flush(session)
            assert await store.list() == []
            with pytest.raises(SessionNotFound):
                await SessionStore(self.second_backend(tmp_path, store.backend)).inspect(session.id)
            await store.close()

        run(scenario())

    def test_unknown_id_is_not_found(self, tmp_path: Path) -> None:
        async def scenario() -> None:
            store = SessionStore(self.make_backend(tmp_path))
            with pytest.raises(SessionNotFound):
                await store.load("no-such-session")
            await store.close()

        run(scenario())

    # ---- conflicts and atomicity -----------------------------------------------------

    def test_f47_wrong_first_seq_and_reappend_are_conflicts(self, tmp_path: Path) -> None:
        async def scenario() -> None:
            backend = self.make_backend(tmp_path)
            store = SessionStore(backend)
            session = await store.create()
            one_turn(session)
            await store.flush(session)
            events = list(session.events)
            with pytest.raises(SessionConflict, match="seq mismatch"):
                await backend.append(session.id, events[2:4])
            skipped = harness.Event.create("turn/start", len(events) + 1, 1, {"turn": 2})
            with pytest.raises(SessionConflict, match="seq mismatch"):
                await backend.append(session.id, [skipped])
            assert await backend.stored_length(session.id) == len(events)
            await backend.append(session.id, [])
            assert await backend.stored_length(session.id) == len(events)
            await store.close()

        run(scenario())

    def test_a_batch_is_all_or_nothing(self, tmp_path: Path) -> None:
        async def scenario() -> None:
            backend = self.make_backend(tmp_path)
            store = SessionStore(backend)
            session = await store.create()
            one_turn(session)
            await store.flush(session)
            length = len(session.events)
            good = harness.Event.create("turn/start", length, 1, {"turn": 2})
            gap = harness.Event.create("step/start", length + 2, 1, {"turn": 2, "step": 1})
            with pytest.raises(SessionConflict):
                await backend.append(session.id, [good, gap])
            assert await backend.stored_length(session.id) == length
            await store.close()

        run(scenario())

    def test_a_second_store_cannot_load_or_create_a_live_session(self, tmp_path: Path) -> None:
        async def scenario() -> None:
            first = SessionStore(self.make_backend(tmp_path))
            session = await first.create(id="owned")
            one_turn(session)
            await first.flush(session)
            stored = await first.backend.stored_length("owned")
            second = SessionStore(self.second_backend(tmp_path, first.backend))
            for attempt in (second.load("owned"), second.create(id="owned")):
                with pytest.raises(SessionInUse) as refused:
                    await attempt
                owner = refused.value.owner
                assert owner is not None and owner.store == first.store_id, owner
                assert owner.pid == os.getpid() and owner.host
                assert first.store_id in str(refused.value) and f"pid {os.getpid()}" in str(refused.value)
            assert (await second.owner("owned")) == owner
            assert await second.backend.stored_length("owned") == stored  # nothing was written
            one_turn(session, 2)
            await first.flush(session)  # the owner goes on as if nothing happened
            await first.release(session)
            assert await second.owner("owned") is None
            again = await second.load("owned")  # free now
            assert wire(again)[: len(session.events)] == wire(session)
            with pytest.raises(SessionInUse):
                await first.load("owned")
            await second.close()
            await first.close()

        run(scenario())

    def test_load_waits_for_the_owner_to_let_go_then_gives_up(self, tmp_path: Path) -> None:
        async def scenario() -> None:
            first = SessionStore(self.make_backend(tmp_path))
            session = await first.create(id="waited")
            one_turn(session)
            await first.flush(session)
            second = SessionStore(self.second_backend(tmp_path, first.backend))
            with pytest.raises(SessionInUse):  # held the whole time: refused after the wait
                await second.load("waited", wait=0.05)
            with pytest.raises(ValueError, match="wait"):
                await second.load("waited", wait=-1)

            async def let_go() -> None:
                await asyncio.sleep(0.1)
                one_turn(session, 2)
                await first.release(session)

            releasing = asyncio.ensure_future(let_go())
            again = await second.load("waited", wait=30)  # comes as soon as the owner lets go
            await releasing
            assert wire(again)[: len(session.events)] == wire(session)
            await second.close()
            await first.close()

        run(scenario())

    def test_reclaim_reattaches_an_unchanged_session_and_loads_a_changed_one(self, tmp_path: Path) -> None:
        async def scenario() -> None:
            first = SessionStore(self.make_backend(tmp_path))
            session = await first.create(id="shared")
            one_turn(session)
            await first.flush(session)
            await first.release(session)
            stored = len(session.events)
            again = await first.reclaim(session)  # no one wrote: the same object, nothing added
            assert again is session, "reclaimed by a new load"
            assert len(session.events) == stored
            one_turn(session, 2)
            await first.release(session)  # flushes turn 2
            assert await first.stored_length("shared") == len(session.events)
            second = SessionStore(self.second_backend(tmp_path, first.backend))
            other = await second.load("shared")
            one_turn(other, 3)
            await second.release(other)
            fresh = await first.reclaim(session)  # another writer wrote: loaded afresh
            assert fresh is not session
            assert wire(fresh)[: len(other.events)] == wire(other)
            assert fresh.events[-1].type == "session/end-seed"
            session.append("todo/write", {"todos": []})  # never stored: a stale copy
            await first.release(fresh)
            assert await first.reclaim(session) is not session
            await second.close()
            await first.close()

        run(scenario())

    def test_take_over_fences_the_old_owner(self, tmp_path: Path) -> None:
        async def scenario() -> None:
            first = SessionStore(self.make_backend(tmp_path), write_window_s=10)
            session = await first.create(id="taken")
            one_turn(session)
            one_turn(session, 2, close=False)  # turn 2 is running
            await first.flush(session)
            stored = len(session.events)
            second = SessionStore(self.second_backend(tmp_path, first.backend))
            taken = await second.load("taken", take_over=True)
            closers = [event.type for event in taken.events[stored:]]
            assert closers == ["tool/result", "step/end", "turn/end", "harness/repair", "session/end-seed"]
            note = taken.events[stored + 3].data
            assert taken.events[stored + 3].ignorable
            assert note["reason"] == "taken-over" and note["closedTurn"] == 2
            assert note["previousOwner"]["store"] == first.store_id
            assert note["repairedBy"]["store"] == second.store_id
            owner = await first.owner("taken")
            assert owner is not None and owner.store == second.store_id
            assert owner.took_over is not None and owner.took_over.store == first.store_id
            session.append("session/title", {"title": "too late"})  # the old owner goes on
            for _attempt in range(2):  # refused each time, nothing written
                with pytest.raises(LeaseLost) as lost:
                    await first.flush(session)
                assert lost.value.by is not None and lost.value.by.store == second.store_id
                assert second.store_id in str(lost.value)
            assert first.pending(session) == len(session.events) - stored
            await second.flush(taken)
            check = SessionStore(self.second_backend(tmp_path, first.backend))
            assert wire(await check.inspect("taken")) [: len(taken.events)] == wire(taken)
            assert await check.backend.stored_length("taken") == len(taken.events)
            unwritten = await first.discard(session)
            assert [event.type for event in unwritten][-1] == "session/title"
            await second.close()
            await first.close()
            await check.close()

        run(scenario())

    # ---- load, inspect, repair ---------------------------------------------------------

    def test_load_equals_inspect_plus_committed_closers(self, tmp_path: Path) -> None:
        async def scenario() -> None:
            store = SessionStore(self.make_backend(tmp_path))
            session = await store.create()
            one_turn(session)
            one_turn(session, 2, close=False)  # turn 2 is running, with a started call
            await store.flush(session)
            stored = len(session.events)
            reader = SessionStore(self.second_backend(tmp_path, store.backend))
            running = await reader.inspect(session.id)  # owned by a live writer: shown as stored
            assert [e.type for e in running.events[stored:]] == ["session/end-seed"]
            with pytest.raises(SessionInUse):
                await reader.load(session.id)  # a live turn is never repaired by another
            await store.release(session)  # its writer stops with the turn open, as a crash would
            inspected = await reader.inspect(session.id)
            assert await reader.backend.stored_length(session.id) == stored  # inspect wrote nothing
            assert [e.type for e in inspected.events[stored:]] == [
                "tool/result",
                "step/end",
                "turn/end",
                "session/end-seed",
            ]
            loaded = await reader.load(session.id)
            # Equal but for the repair's record of who closed the turn and the end-seed's time.
            assert wire(loaded)[: stored + 3] == wire(inspected)[: stored + 3]
            note = loaded.events[stored + 3]
            assert note.type == "harness/repair" and note.ignorable
            assert note.data["reason"] == "owner-gone" and note.data["closedTurn"] == 2
            assert note.data["repairedBy"]["store"] == reader.store_id
            assert loaded.events[-1].type == inspected.events[-1].type == "session/end-seed"
            assert await reader.backend.stored_length(session.id) == stored + 4  # closers are durable
            await reader.flush(loaded)
            assert await reader.backend.stored_length(session.id) == stored + 5  # and the end-seed
            again = await SessionStore(self.second_backend(tmp_path, store.backend)).inspect(session.id)
            assert [e.type for e in again.events].count("turn/end") == 2
            assert harness.repair_closers(list(again.events)) == []
            await reader.close()

        run(scenario())

    def test_loading_a_live_session_returns_it(self, tmp_path: Path) -> None:
        async def scenario() -> None:
            store = SessionStore(self.make_backend(tmp_path))
            session = await store.create()
            one_turn(session)
            assert await store.load(session.id) is session
            assert await store.backend.stored_length(session.id) == len(session.events)
            await store.close()

        run(scenario())

    # ---- write-behind (FORMAT §13 H) ---------------------------------------------------

    def _faulty(self, tmp_path: Path, delay_s: float = 0.0) -> FaultyBackend:
        return FaultyBackend(self.make_backend(tmp_path), delay_s=delay_s)

    async def _appends_settled(self, backend: FaultyBackend, count: int) -> None:
        """Wait (10 s at most) for ``count`` backend appends, then a little longer for any extra."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 10
        while len(backend.appends) < count and loop.time() < deadline:
            await asyncio.sleep(0.02)
        await asyncio.sleep(0.1)

    def _without_stall(self, tmp_path: Path, scenario: Callable[[Path], Awaitable[bool]]) -> None:
        """Run ``scenario`` (False: the machine stalled past its window, so it proved nothing)
        until it runs unstalled, three times at most, each in a fresh directory."""
        for attempt in range(3):
            root = tmp_path / f"attempt-{attempt}"
            root.mkdir()
            if run(scenario(root)):
                return
        pytest.fail("the machine stalled past the write window in three attempts running")

    def test_h68_events_inside_one_window_make_one_batch(self, tmp_path: Path) -> None:
        async def scenario(root: Path) -> bool:
            backend = self._faulty(root)
            store = SessionStore(backend, write_window_s=1.5)
            session = await store.create()
            loop = asyncio.get_running_loop()
            start = loop.time()
            session.append("turn/start", {"turn": 1})
            await asyncio.sleep(0.15)
            stalled = loop.time() - start >= 1.5  # no turn of the loop between this and the append
            session.append("step/start", {"turn": 1, "step": 1})
            await self._appends_settled(backend, 1)
            if not stalled:
                assert [size for _, size in backend.appends] == [2]
                assert backend.starts[0] - start >= 1.49
            await store.close()
            return not stalled

        self._without_stall(tmp_path, scenario)

    def test_h69_a_steady_stream_is_one_batch_per_window(self, tmp_path: Path) -> None:
        # 20 events 60 ms apart (1.14 s) inside a 1.5 s window: one batch of 20, written when
        # the window that the first event armed ends (1.5 s), not one window after the last
        # event (2.64 s, a sliding window). 2.07 s splits the two with 0.57 s to spare.
        async def scenario(root: Path) -> bool:
            backend = self._faulty(root)
            store = SessionStore(backend, write_window_s=1.5)
            session = await store.create()
            loop = asyncio.get_running_loop()
            start = loop.time()
            for index in range(20):
                session.append("todo/write", {"todos": [{"content": f"t{index}", "status": "pending"}]})
                if index < 19:
                    await asyncio.sleep(0.06)
            stalled = loop.time() - start >= 1.5
            await self._appends_settled(backend, 1)
            if not stalled:
                assert [size for _, size in backend.appends] == [20]
                assert 1.49 <= backend.starts[0] - start < 2.07, backend.starts[0] - start
            await store.close()
            return not stalled

        self._without_stall(tmp_path, scenario)

    def test_h70_background_failure_is_retained_and_rearmed_by_a_new_event(self, tmp_path: Path) -> None:
        async def scenario() -> None:
            backend = self._faulty(tmp_path)
            store = SessionStore(backend, write_window_s=0.05)
            session = await store.create()
            backend.fail_next_append(PersistenceFailed("disk full (injected)"))
            session.append("turn/start", {"turn": 1})
            await asyncio.sleep(0.3)
            assert backend.appends == [] and store.pending(session) == 1  # retained, not retried
            session.append("step/start", {"turn": 1, "step": 1})
            await asyncio.sleep(0.2)
            assert [size for _, size in backend.appends] == [2]  # old + new in one batch
            assert store.pending(session) == 0
            await store.close()

        run(scenario())

    def test_h71_an_event_admitted_during_a_write_follows_right_after(self, tmp_path: Path) -> None:
        # The first write is held open by the test. A second event admitted meanwhile has its
        # window counted from its own admission: once that window is over and the first write
        # is let go, the second write starts at once (well inside one window), not a whole
        # window after the first write ended. The order is made by cause (the held write), and
        # each bound has a full window (1.2 s) of slack for a loaded machine.
        window = 1.2

        async def scenario() -> None:
            backend = self._faulty(tmp_path)
            backend.hold()
            store = SessionStore(backend, write_window_s=window)
            session = await store.create()
            loop = asyncio.get_running_loop()
            session.append("turn/start", {"turn": 1})
            deadline = loop.time() + 10
            while not backend.starts and loop.time() < deadline:
                await asyncio.sleep(0.02)
            assert len(backend.starts) == 1 and backend.appends == []  # the first write is held
            admitted = loop.time()
            session.append("step/start", {"turn": 1, "step": 1})
            await asyncio.sleep(window + 0.3)  # the second event's window is over
            assert len(backend.starts) == 1, "a second write started while the first was running"
            released = loop.time()
            backend.release()
            deadline = loop.time() + 10
            while len(backend.appends) < 2 and loop.time() < deadline:
                await asyncio.sleep(0.02)
            assert [size for _, size in backend.appends] == [1, 1]
            assert backend.starts[1] - admitted >= window - 0.01  # its own window was kept
            lag = backend.starts[1] - released
            assert lag < window, lag  # started right after the first, not a window later
            await store.close()

        run(scenario())

    def test_h72_concurrent_flushes_share_one_barrier(self, tmp_path: Path) -> None:
        async def scenario() -> None:
            backend = self._faulty(tmp_path, delay_s=0.05)
            store = SessionStore(backend, write_window_s=10)
            session = await store.create()
            session.append("turn/start", {"turn": 1})
            first = asyncio.ensure_future(store.flush(session))
            await asyncio.sleep(0.01)
            session.append("step/start", {"turn": 1, "step": 1})  # admitted meanwhile
            await asyncio.gather(first, store.flush(session))
            assert await backend.stored_length(session.id) == 2
            assert store.pending(session) == 0
            await store.close()

        run(scenario())

    def test_a_failed_flush_keeps_its_events_and_the_next_flush_writes_them(self, tmp_path: Path) -> None:
        async def scenario() -> None:
            backend = self._faulty(tmp_path)
            store = SessionStore(backend, write_window_s=10)
            session = await store.create()
            one_turn(session)
            backend.fail_next_append(PersistenceFailed("fsync failed (injected)"))
            with pytest.raises(PersistenceFailed):
                await store.flush(session)
            assert await backend.stored_length(session.id) == 0
            assert store.pending(session) == len(session.events)
            await store.flush(session)
            assert await backend.stored_length(session.id) == len(session.events)
            await store.close()

        run(scenario())

    def test_a_flush_retried_after_a_lost_reply_neither_duplicates_nor_loses(self, tmp_path: Path) -> None:
        async def scenario() -> None:
            backend = self._faulty(tmp_path)
            store = SessionStore(backend, write_window_s=10)
            session = await store.create()
            one_turn(session)
            backend.fail_next_append(ConnectionError("reply lost (injected)"), after_write=True)
            with pytest.raises(PersistenceFailed):
                await store.flush(session)
            session.append("session/title", {"title": "after the lost reply"})
            await store.flush(session)
            check = await SessionStore(self.second_backend(tmp_path, backend.inner)).inspect(session.id)
            assert wire(check)[: len(session.events)] == wire(session)
            assert await backend.stored_length(session.id) == len(session.events)
            await store.close()

        run(scenario())

    def test_a_partial_write_is_resumed_without_duplicates(self, tmp_path: Path) -> None:
        async def scenario() -> None:
            backend = self._faulty(tmp_path)
            store = SessionStore(backend, write_window_s=10)
            session = await store.create()
            one_turn(session)
            backend.fail_next_append(OSError(5, "EIO (injected)"), partial=3)
            with pytest.raises(PersistenceFailed):
                await store.flush(session)
            await store.flush(session)
            check = await SessionStore(self.second_backend(tmp_path, backend.inner)).inspect(session.id)
            assert wire(check)[: len(session.events)] == wire(session)
            await store.close()

        run(scenario())

    # ---- cancellation ----------------------------------------------------------------

    def test_a_cancelled_flush_loses_nothing(self, tmp_path: Path) -> None:
        """Cancelling a flush (a timeout, a cancelled task) cancels the wait, not the write."""

        async def scenario() -> None:
            backend = self.make_backend(tmp_path)
            store = SessionStore(backend, write_window_s=10)
            session = await store.create()
            session.append("turn/start", {"turn": 1})
            await store.flush(session)
            for delay in (None, 0.0, 0.0001, 0.0005, 0.002):
                for _ in range(5):
                    session.append("assistant/chunk", CHUNK)
                waiter = asyncio.ensure_future(store.flush(session))
                if delay is not None:
                    await asyncio.sleep(delay)
                waiter.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await waiter
            with contextlib.suppress(TimeoutError):
                session.append("assistant/chunk", CHUNK)
                await asyncio.wait_for(store.flush(session), timeout=0)
            await store.flush(session)
            assert store.pending(session) == 0
            assert await backend.stored_length(session.id) == len(session.events)
            check = await SessionStore(self.second_backend(tmp_path, backend)).inspect(session.id)
            assert wire(check)[: len(session.events)] == wire(session)  # then the open turn's closers
            await store.close()

        run(scenario())

    def test_cancelling_one_flusher_leaves_the_others_waiting_for_the_write(self, tmp_path: Path) -> None:
        async def scenario() -> None:
            backend = self._faulty(tmp_path, delay_s=0.05)
            store = SessionStore(backend, write_window_s=10)
            session = await store.create()
            one_turn(session)
            first = asyncio.ensure_future(store.flush(session))
            second = asyncio.ensure_future(store.flush(session))
            await asyncio.sleep(0.01)
            first.cancel()
            await second  # not cancelled: it returns once the shared write is durable
            assert first.cancelled()
            assert await backend.stored_length(session.id) == len(session.events)
            await store.close()

        run(scenario())

    # ---- live adoption (FORMAT §10) ----------------------------------------------------

    def test_adopting_a_session_made_in_memory_persists_all_of_it(self, tmp_path: Path) -> None:
        async def scenario() -> None:
            session = harness.Session.create()
            one_turn(session)
            store = SessionStore(self.make_backend(tmp_path), write_window_s=10)
            assert await store.adopt(session) is session
            assert store.pending(session) == len(session.events)
            session.append("session/title", {"title": "adopted"})
            await store.flush(session)
            assert await store.adopt(session) is session  # already live here: itself
            check = await SessionStore(self.second_backend(tmp_path, store.backend)).inspect(session.id)
            assert wire(check)[: len(session.events)] == wire(session)  # then the view's end-seed
            await store.close()

        run(scenario())

    def test_adopting_a_stored_prefix_writes_only_what_follows(self, tmp_path: Path) -> None:
        async def scenario() -> None:
            storage = self.make_backend(tmp_path)
            first = SessionStore(storage, write_window_s=10)
            original = await first.create()
            one_turn(original)
            await first.flush(original)
            stored = len(original.events)
            await first.close()

            # The same session rebuilt elsewhere (another process, a copy), then carried on.
            copy = harness.Session.from_restore(original.id, wire(original), original.header)
            one_turn(copy, 2)
            backend = FaultyBackend(self.second_backend(tmp_path, storage))
            second = SessionStore(backend, write_window_s=10)
            await second.adopt(copy)
            assert second.pending(copy) == len(copy.events) - stored
            await second.flush(copy)
            assert [size for _, size in backend.appends] == [len(copy.events) - stored]  # nothing again
            check = await SessionStore(self.second_backend(tmp_path, backend.inner)).inspect(copy.id)
            assert wire(check)[: len(copy.events)] == wire(copy)
            await second.close()

        run(scenario())

    def test_adoption_refuses_a_session_that_differs_from_what_is_stored(self, tmp_path: Path) -> None:
        async def scenario() -> None:
            store = SessionStore(self.make_backend(tmp_path), write_window_s=10)
            original = await store.create()
            one_turn(original)
            await store.flush(original)
            await store.release(original)
            stored = len(original.events)

            events = wire(original)
            events[2]["data"]["content"][0]["text"] = "another task"
            differing = harness.Session.from_restore(original.id, events, original.header)
            shorter = harness.Session.from_restore(original.id, wire(original)[:3], original.header)
            moved = harness.Session.from_restore(
                original.id, wire(original), {**original.header.to_json(), "cwd": "/elsewhere"}
            )
            refusals = [
                (differing, "event 2 differs"),
                (shorter, f"{stored} events are stored"),
                (moved, "header"),
            ]
            for session, reason in refusals:
                with pytest.raises(SessionConflict, match=reason):
                    await store.adopt(session)
            assert await store.backend.stored_length(original.id) == stored  # nothing written

            again = harness.Session.from_restore(original.id, wire(original), original.header)
            await store.adopt(again)
            with pytest.raises(SessionExists):
                await store.adopt(harness.Session.from_restore(original.id, wire(original), original.header))
            await store.close()

        run(scenario())

    # ---- the bare Backend API ----------------------------------------------------------
    # No SessionStore in between. Reads go through ``read_whole``: ``read`` may hand over a stream.

    @contextlib.asynccontextmanager
    async def _opened(self, tmp_path: Path, again: Backend | None = None) -> AsyncIterator[Backend]:
        """A new backend (with ``again``, a second one on its storage), closed when the block ends."""
        backend = self.make_backend(tmp_path) if again is None else self.second_backend(tmp_path, again)
        try:
            yield backend
        finally:
            await backend.close()

    @contextlib.asynccontextmanager
    async def _two(self, tmp_path: Path) -> AsyncIterator[tuple[Backend, Backend]]:
        """Two backends on one storage (the same object where the backend is its storage)."""
        first = self.make_backend(tmp_path)
        second = self.second_backend(tmp_path, first)
        try:
            yield first, second
        finally:
            await first.close()
            await second.close()

    def test_is_a_backend(self, tmp_path: Path) -> None:
        async def scenario() -> None:
            async with self._opened(tmp_path) as backend:
                assert isinstance(backend, Backend)

        run(scenario())

    def test_a_backend_round_trip_is_lossless_and_keeps_key_order(self, tmp_path: Path) -> None:
        events = sample_events()

        async def scenario() -> StoredLog:
            async with self._opened(tmp_path) as backend:
                await backend.create(header())
                await backend.append("s1", events[:2])
                await backend.append("s1", events[2:])
                assert await backend.stored_length("s1") == len(events)
                return await read_whole(backend, "s1")

        log = run(scenario())
        assert log.torn is None
        assert log.header.to_json(line=True) == header().to_json(line=True)
        assert log.events == wire_events(events)
        for got, event in zip(log.events, events, strict=True):
            assert list(got) == list(loads(event.encode()))  # key order
            assert list(got["data"] or {}) == list(event.to_json()["data"] or {})

    def test_a_header_reads_back_as_its_stored_line_says(self, tmp_path: Path) -> None:
        """A header without a delegation depth is stored with depth 0 (the header line always
        has one), and reads back so, here and through a new backend."""
        backend = self.make_backend(tmp_path)

        async def scenario() -> None:
            try:
                await backend.create(header())
                await backend.append("s1", [chunk(0)])
                log = await read_whole(backend, "s1")
                stored = SessionHeader(**{**msgspec.structs.asdict(header()), "delegation_depth": 0})
                assert log.header == stored
            finally:
                await backend.close()
            async with self._opened(tmp_path, backend) as again:
                log = await read_whole(again, "s1")
                assert log.header.to_json() == {**header().to_json(), "delegationDepth": 0}

        run(scenario())

    def test_every_header_field_round_trips(self, tmp_path: Path) -> None:
        async def scenario() -> StoredLog:
            async with self._opened(tmp_path) as backend:
                await backend.create(full_header())
                await backend.append("child", [chunk(0)])
                return await read_whole(backend, "child")

        assert run(scenario()).header == full_header()

    def test_data_survives_a_new_backend_and_reads_are_fresh(self, tmp_path: Path) -> None:
        events = sample_events()

        async def scenario() -> None:
            first = self.make_backend(tmp_path)
            try:
                await first.create(header())
                await first.append("s1", events)
            finally:
                await first.close()
            async with self._opened(tmp_path, first) as again:
                read = await read_whole(again, "s1")
                read.events[0]["data"]["turn"] = 99
                log = await read_whole(again, "s1")
                assert log.events == wire_events(events)
                assert log.events[0]["data"]["turn"] == 1
                assert log.header.to_json(line=True) == header().to_json(line=True)

        run(scenario())

    def test_create_alone_stores_nothing_and_an_empty_batch_is_a_no_op(self, tmp_path: Path) -> None:
        async def scenario() -> None:
            async with self._opened(tmp_path) as backend:
                await backend.create(header())
                assert await backend.stored_length("s1") == 0
                assert await backend.list() == []
                with pytest.raises(SessionNotFound, match="never appended"):
                    await read_whole(backend, "s1")
                await backend.append("s1", [])
                assert await backend.stored_length("s1") == 0

        run(scenario())

    def test_create_of_a_known_id_is_refused_here_and_by_another_backend(self, tmp_path: Path) -> None:
        async def scenario() -> None:
            async with self._two(tmp_path) as (backend, other):
                await backend.create(header())
                with pytest.raises(SessionExists):
                    await backend.create(header())
                await backend.append("s1", [chunk(0)])
                with pytest.raises(SessionExists):
                    await backend.create(header())
                with pytest.raises(SessionExists):
                    await other.create(header())

        run(scenario())

    def test_unknown_ids_are_not_found(self, tmp_path: Path) -> None:
        async def scenario() -> None:
            async with self._opened(tmp_path) as backend:
                with pytest.raises(SessionNotFound):
                    await read_whole(backend, "nope")
                with pytest.raises(SessionNotFound):
                    await backend.stored_length("nope")
                with pytest.raises(SessionNotFound):
                    await backend.append("nope", [chunk(0)])
                with pytest.raises(SessionNotFound):
                    await backend.append("nope", [])

        run(scenario())

    def test_invalid_ids_are_refused(self, tmp_path: Path) -> None:
        backend = self.make_backend(tmp_path)

        async def scenario() -> None:
            try:
                for bad in ("", "a\x00b"):
                    with pytest.raises(InvalidSessionId):
                        await read_whole(backend, bad)
                    with pytest.raises(InvalidSessionId):
                        await backend.append(bad, [chunk(0)])
            finally:
                await backend.close()

        run(scenario())

    # Ids a backend must keep apart; a layout that cannot hold some (dsh's UTF-8 ``TEXT`` ids,
    # no lone surrogates) narrows the list and tests the refusal itself.
    isolation_ids: tuple[str, ...] = (
        *("a", "b/c", "..", ".", "~x", "开发", "\ud800lone", " spaced ", 'q"uote', "back\\slash"),
        *("\\ud800", "a'; DROP TABLE events; --", "tab\there", "é"),
    )

    def test_sessions_are_isolated_whatever_their_ids(self, tmp_path: Path) -> None:
        ids = [*self.isolation_ids, *(f"session-{n}" for n in range(20))]

        async def scenario() -> None:
            async with self._opened(tmp_path) as backend:
                for n, session_id in enumerate(ids):
                    await backend.create(header(session_id, created_at=n))
                for seq in range(3):
                    for n, session_id in enumerate(ids):
                        if seq <= n % 3:
                            await backend.append(session_id, [chunk(seq, f"{session_id}:{seq}")])
                for n, session_id in enumerate(ids):
                    log = await read_whole(backend, session_id)
                    assert log.header.id == session_id
                    assert [e["data"]["chunk"]["text"] for e in log.events] == [
                        f"{session_id}:{seq}" for seq in range(n % 3 + 1)
                    ]
                    assert await backend.stored_length(session_id) == n % 3 + 1
                listed = await backend.list()  # in an order of the backend's choosing
                counts = {info.id: info.event_count for info in listed}
                assert len(listed) == len(counts) == len(ids)
                assert counts == {session_id: n % 3 + 1 for n, session_id in enumerate(ids)}

        run(scenario())

    def test_lost_reservation_conflicts_once(self, tmp_path: Path) -> None:
        """Two backends reserve one id; the one that publishes second conflicts, then goes on."""
        first = self.make_backend(tmp_path)
        second = self.second_backend(tmp_path, first)
        if second is first:
            run(first.close())
            pytest.skip("one backend object is the whole storage: no second reservation to lose")

        async def scenario() -> None:
            try:
                await first.create(header())
                await second.create(header())
                await first.append("s1", [chunk(0)])
                with pytest.raises(SessionConflict, match="seq mismatch") as info:
                    await second.append("s1", [chunk(0, "mine")])
                assert (info.value.expected, info.value.got) == (1, 0)
                assert await second.stored_length("s1") == 1
                await second.append("s1", [chunk(1)])
                events = (await read_whole(first, "s1")).events
                assert [e["data"]["chunk"]["text"] for e in events] == ["hi", "hi"]
            finally:
                await first.close()
                await second.close()

        run(scenario())

    def test_seq_mismatches_conflict_without_writing(self, tmp_path: Path) -> None:
        async def scenario() -> None:
            async with self._opened(tmp_path) as backend:
                await backend.create(header())
                with pytest.raises(
                    SessionConflict, match=r"append seq mismatch .* expected 0 at index 0, got 1"
                ) as info:
                    await backend.append("s1", [chunk(1)])
                assert (info.value.expected, info.value.got) == (0, 1)
                await backend.append("s1", [chunk(0), chunk(1), chunk(2)])
                with pytest.raises(SessionConflict, match="expected 3 at index 0, got 4") as info:
                    await backend.append("s1", [chunk(4)])  # a gap
                assert (info.value.expected, info.value.got) == (3, 4)
                with pytest.raises(SessionConflict, match="expected 3 at index 0, got 0"):
                    await backend.append("s1", [chunk(0)])  # stored, but ends before the stored end
                with pytest.raises(SessionConflict, match="expected 5 at index 2, got 6"):
                    await backend.append("s1", [chunk(3), chunk(4), chunk(6)])  # a gap inside the batch
                with pytest.raises(SessionConflict, match="expected 4 at index 1, got 3"):
                    await backend.append("s1", [chunk(3), chunk(3)])
                assert await backend.stored_length("s1") == 3
                assert [e["seq"] for e in (await read_whole(backend, "s1")).events] == [0, 1, 2]

        run(scenario())

    def test_repair_appends_closers(self, tmp_path: Path) -> None:
        async def scenario() -> None:
            async with self._opened(tmp_path) as backend:
                await backend.create(header())
                await backend.append("s1", [Event.create("turn/start", 0, 5, {"turn": 1})])
                log = await read_whole(backend, "s1")
                assert log.torn is None
                closers = [Event.create("turn/end", 1, 5, {"turn": 1, "reason": {"kind": "interrupted"}})]
                await backend.repair("s1", log, closers)
                assert (await read_whole(backend, "s1")).events == [*log.events, *wire_events(closers)]

        run(scenario())

    def test_two_backends_racing_for_the_same_seq(self, tmp_path: Path) -> None:
        async def scenario() -> None:
            async with self._two(tmp_path) as (a, b):
                await a.create(header("race"))
                await a.append("race", [chunk(0)])
                for round_ in range(10):
                    n = 1 + round_ * 2
                    results = await asyncio.gather(
                        a.append("race", [chunk(n, "a"), chunk(n + 1, "a")]),
                        b.append("race", [chunk(n, "b"), chunk(n + 1, "b")]),
                        return_exceptions=True,
                    )
                    assert sum(r is None for r in results) == 1, results
                    assert sum(isinstance(r, SessionConflict) for r in results) == 1, results
                events = (await read_whole(b, "race")).events
                assert [e["seq"] for e in events] == list(range(21))
                for n in range(1, 21, 2):  # each pair was written by one backend
                    assert events[n]["data"]["chunk"]["text"] == events[n + 1]["data"]["chunk"]["text"]

        run(scenario())

    def test_a_session_whose_header_is_corrupt_is_listed_with_the_reason(self, tmp_path: Path) -> None:
        """Never silently dropped (FORMAT §13 case 57 names one such reason): the listing
        keeps the session, says why it cannot be read, and a read refuses it as corrupt."""

        async def scenario() -> None:
            async with self._opened(tmp_path) as backend:
                for session_id in ("good", "bad"):
                    await backend.create(header(session_id, created_at=10))
                    await backend.append(session_id, [chunk(0), chunk(1, time=1500)])
                self.corrupt_header(tmp_path, backend, "bad")
                async with self._opened(tmp_path, backend) as again:
                    listed = {info.id: info for info in await again.list()}
                    assert sorted(listed) == ["bad", "good"]
                    good, bad = listed["good"], listed["bad"]
                    assert good.problem is None and good.created_at == 10
                    assert isinstance(bad.problem, str) and "header" in bad.problem
                    assert bad.event_count == 2 and bad.last_activity == 1500
                    with pytest.raises(CorruptSession):
                        await read_whole(again, "bad")
                    assert len((await read_whole(again, "good")).events) == 2

        run(scenario())

    def test_list_fields_match_summarize(self, tmp_path: Path) -> None:
        async def scenario() -> None:
            async with self._opened(tmp_path) as backend:
                await backend.create(header("one", cwd="/w/one", created_at=10))
                await backend.create(header("two", cwd=None, created_at=20))
                await backend.create(header("never", created_at=5))
                await backend.append("one", sample_events())
                not_a_str = Event.create("session/title", 6, 2000, {"title": 7})
                await backend.append("one", [not_a_str])
                await backend.append("one", [Event.create("plugin/x", 7, 1500, {})])
                await backend.append("two", [Event.create("session/title", 0, 30, {"title": "a"})])
                await backend.append(
                    "two", [Event.create("session/title", 1, 40, {"title": "b"}), chunk(2, time=35)]
                )
                listed = await backend.list()  # in an order of the backend's choosing
                assert sorted(info.id for info in listed) == ["one", "two"]
                one, two = sorted(listed, key=lambda info: info.id)
                assert (one.created_at, one.cwd, one.event_count, one.last_activity, one.title) == (
                    10,
                    "/w/one",
                    8,
                    1500,
                    "first",
                )
                assert (two.created_at, two.cwd, two.event_count, two.last_activity, two.title) == (
                    20,
                    None,
                    3,
                    35,
                    "b",
                )
                for info in listed:  # the location is the backend's own (see its tests)
                    log = await read_whole(backend, info.id)
                    assert info == summarize(log.header, log.events, location=info.location)

        run(scenario())

    def test_a_backend_works_across_event_loops(self, tmp_path: Path) -> None:
        backend = self.make_backend(tmp_path)
        run(backend.create(header()))
        run(backend.append("s1", [chunk(0)]))
        assert run(backend.stored_length("s1")) == 1
        run(backend.close())

    # ---- delete ----------------------------------------------------------------------

    def test_delete_removes_the_session_and_nothing_else(self, tmp_path: Path) -> None:
        async def scenario() -> None:
            store = SessionStore(self.make_backend(tmp_path))
            gone = await store.create(id="gone", cwd="/work/project")
            kept = await store.create(id="kept", cwd="/work/project")
            one_turn(gone)
            one_turn(kept)
            kept.append("session/title", {"title": "stays"})
            await store.flush(gone)
            await store.flush(kept)
            await store.release(gone)
            before = wire(kept)
            await store.delete("gone")
            assert [info.id for info in await store.list()] == ["kept"]
            for view in (store.load, store.inspect):
                with pytest.raises(SessionNotFound):
                    await view("gone")
            backend = store.backend
            with pytest.raises(SessionNotFound):
                await backend.read("gone")
            with pytest.raises(SessionNotFound):
                await backend.stored_length("gone")
            other = SessionStore(self.second_backend(tmp_path, backend))
            with pytest.raises(SessionNotFound):
                await other.inspect("gone")
            assert [info.id for info in await other.list()] == ["kept"]
            assert wire(await other.inspect("kept"))[: len(before)] == before
            (info,) = await other.list()
            assert info.title == "stays"
            await other.close()
            await store.close()

        run(scenario())

    def test_deleting_what_is_not_stored_is_refused(self, tmp_path: Path) -> None:
        async def scenario() -> None:
            store = SessionStore(self.make_backend(tmp_path))
            with pytest.raises(SessionNotFound):
                await store.delete("never-created")
            with pytest.raises(InvalidSessionId):
                await store.delete("")
            session = await store.create(id="once")
            one_turn(session)
            await store.flush(session)
            await store.delete("once")
            with pytest.raises(SessionNotFound) as twice:
                await store.delete("once")
            assert not isinstance(twice.value, SessionDeleted)  # a plain "no such session"
            with pytest.raises(SessionNotFound):
                await self.second_backend(tmp_path, store.backend).delete("once")
            await store.close()

        run(scenario())

    def test_a_deleted_id_can_be_created_again_from_nothing(self, tmp_path: Path) -> None:
        async def scenario() -> None:
            store = SessionStore(self.make_backend(tmp_path))
            first = await store.create(id="again", cwd="/work/project")
            one_turn(first)
            one_turn(first, 2)
            await store.flush(first)
            await store.release(first)
            await store.delete("again")
            second = await store.create(id="again", cwd="/work/project")
            second.append("session/title", {"title": "new"})
            await store.flush(second)
            await store.release(second)
            loaded = await SessionStore(self.second_backend(tmp_path, store.backend)).inspect("again")
            assert [event.type for event in loaded.events] == ["session/title", "session/end-seed"]
            await store.close()

        run(scenario())

    def test_a_session_owned_elsewhere_is_not_deleted(self, tmp_path: Path) -> None:
        async def scenario() -> None:
            writer = SessionStore(self.make_backend(tmp_path), write_window_s=10)
            session = await writer.create(id="shared")
            one_turn(session)
            await writer.flush(session)
            deleter = SessionStore(self.second_backend(tmp_path, writer.backend))
            with pytest.raises(SessionInUse) as refused:
                await deleter.delete("shared")
            assert refused.value.owner is not None and refused.value.owner.store == writer.store_id
            one_turn(session, 2)
            await writer.flush(session)  # nothing was deleted
            assert [info.id for info in await deleter.list()] == ["shared"]
            await writer.release(session)
            await deleter.delete("shared")  # free now
            assert await deleter.list() == []
            with pytest.raises(SessionNotFound):
                await deleter.inspect("shared")
            await deleter.close()
            await writer.close()

        run(scenario())

    def test_deleting_a_live_session_detaches_it(self, tmp_path: Path) -> None:
        async def scenario() -> None:
            store = SessionStore(self.make_backend(tmp_path), write_window_s=10)
            session = await store.create(id="live")
            one_turn(session)
            await store.flush(session)
            one_turn(session, 2)  # queued, not yet written
            await store.delete("live")
            with pytest.raises(SessionDeleted):
                await store.flush(session)
            with pytest.raises(SessionDeleted):
                store.pending(session)
            session.append("session/title", {"title": "after"})  # in memory only
            assert await store.list() == []
            with pytest.raises(SessionNotFound):
                await store.inspect("live")
            unwritten = await store.create(id="unwritten")  # live, never flushed: its reservation goes
            await store.delete("unwritten")
            with pytest.raises(SessionDeleted):
                await store.flush(unwritten)
            await store.close()  # nothing left to flush: no error
            again = SessionStore(self.second_backend(tmp_path, store.backend))
            assert await again.list() == []
            await again.close()

        run(scenario())

    def test_delete_refuses_a_parent_of_stored_forks_unless_told(self, tmp_path: Path) -> None:
        async def scenario() -> None:
            store = SessionStore(self.make_backend(tmp_path))
            parent = await store.create(id="parent", cwd="/work/project")
            one_turn(parent)
            await store.flush(parent)
            child = await store.adopt(parent.fork(id="child"))
            one_turn(child, 2)
            await store.flush(child)
            child_events = wire(child)
            with pytest.raises(SessionHasForks) as refused:
                await store.delete("parent")
            assert refused.value.forks == ("child",)
            assert "child" in str(refused.value)
            assert sorted(info.id for info in await store.list()) == ["child", "parent"]
            await store.delete("parent", orphan_forks=True)
            assert [info.id for info in await store.list()] == ["child"]
            again = SessionStore(self.second_backend(tmp_path, store.backend))
            assert wire(await again.inspect("child"))[: len(child_events)] == child_events  # its copy
            await store.close()  # the child's owner lets it go
            await again.delete("child")  # a fork itself has no forks: deleted at once
            assert await again.list() == []
            await again.close()

        run(scenario())

    def test_list_names_each_fork_parent(self, tmp_path: Path) -> None:
        async def scenario() -> None:
            store = SessionStore(self.make_backend(tmp_path))
            parent = await store.create(id="p", cwd="/work/project")
            one_turn(parent)
            await store.flush(parent)
            child = await store.adopt(parent.fork(id="c"))
            await store.flush(child)
            parents = {info.id: info.parent for info in await store.list()}
            assert parents == {"p": None, "c": "p"}
            await store.close()

        run(scenario())

    def test_discard_detaches_a_session_without_writing_what_it_holds(self, tmp_path: Path) -> None:
        async def scenario() -> None:
            store = SessionStore(self.make_backend(tmp_path), write_window_s=10)
            session = await store.create(id="lost-race")
            one_turn(session)
            await store.flush(session)
            stored = len(session.events)
            one_turn(session, 2)
            unwritten = await store.discard(session)
            assert [event.seq for event in unwritten] == list(range(stored, len(session.events)))
            with pytest.raises(SessionNotFound):
                await store.flush(session)  # detached: no longer this store's
            again = await store.load("lost-race")  # loads what is stored, live again
            assert wire(again)[:stored] == wire(session)[:stored]
            assert len(again.events) == stored + 1  # the stored events and a new end-seed
            await store.close()
            check = SessionStore(self.second_backend(tmp_path, store.backend))
            (info,) = await check.list()
            assert info.event_count == stored + 1
            await check.close()

        run(scenario())

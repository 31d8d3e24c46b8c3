"""What ``HarnessSessionService`` adds to ADK's contract: stale writers refused (never merged),
appends durable when they return, the compaction as a Surface replace over a log that keeps
every event, shared state repaired after a crash between two writes, bad state refused."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from google.adk.errors import StaleSessionError as AdkStaleSessionError
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions, EventCompaction
from google.genai import types

from harness.errors import InvalidEventData, PersistenceFailed, SessionConflict, SessionInUse
from harness.integrations.adk import HarnessSessionService, StaleSessionError, session_log_id, user_log_id
from harness.integrations.adk.events import EVENT_KEY
from harness.stores.faults import FaultyBackend
from harness.stores.jsonl.backend import JsonlBackend
from harness.stores.memory import MemoryBackend
from harness.stores.store import SessionStore
from harness.testing.samples import run
from tests.integrations.adk.scenarios import rich_events, text


def test_a_stale_copy_is_refused_and_nothing_is_written() -> None:
    async def go() -> None:
        store = SessionStore(MemoryBackend())
        service = HarnessSessionService(store)
        await service.create_session(app_name="a", user_id="u", session_id="s")
        one = await service.get_session(app_name="a", user_id="u", session_id="s")
        two = await service.get_session(app_name="a", user_id="u", session_id="s")
        assert one is not None and two is not None
        await service.append_event(one, text("user", "first", at=1.0, event_id="e1"))
        with pytest.raises(StaleSessionError) as refused:
            await service.append_event(
                two, text("user", "second", at=2.0, event_id="e2", state_delta={"x": 1})
            )
        assert refused.type is AdkStaleSessionError  # ADK's own: what its Runner catches
        assert isinstance(refused.value.__cause__, SessionConflict)
        assert two.events == [] and "x" not in two.state  # the caller's copy is untouched too
        stored = await service.get_session(app_name="a", user_id="u", session_id="s")
        assert stored is not None and [e.id for e in stored.events] == ["e1"] and "x" not in stored.state
        fresh = await service.get_session(app_name="a", user_id="u", session_id="s")
        assert fresh is not None
        await service.append_event(fresh, text("user", "second", at=2.0, event_id="e2"))  # read again: fine
        with pytest.raises(StaleSessionError):  # ``one`` saw e1 only; the store holds e1, e2
            await service.append_event(one, text("user", "third", at=3.0, event_id="e3"))
        await service.close()
        await store.close()

    run(go())


def test_a_writer_of_another_store_waits_for_the_owner_then_makes_a_held_copy_stale(tmp_path: Path) -> None:
    async def go() -> None:
        first = SessionStore(JsonlBackend(tmp_path, compression="none"))
        second = SessionStore(JsonlBackend(tmp_path, compression="none"))
        mine, theirs = HarnessSessionService(first), HarnessSessionService(second)
        session = await mine.create_session(app_name="a", user_id="u", session_id="s")
        await mine.append_event(session, text("user", "one", at=1.0, event_id="e1"))  # owned by ``first``
        copy = await theirs.get_session(app_name="a", user_id="u", session_id="s")  # reads need no owner
        assert copy is not None and [e.id for e in copy.events] == ["e1"]
        with pytest.raises(StaleSessionError) as refused:  # ``first`` owns it: nothing written
            await theirs.append_event(copy, text("user", "two", at=2.0, event_id="e2"))
        assert isinstance(refused.value.__cause__, SessionInUse)
        await mine.close()  # ``first`` lets the session go
        copy = await theirs.get_session(app_name="a", user_id="u", session_id="s")
        assert copy is not None
        await theirs.append_event(copy, text("user", "two", at=2.0, event_id="e2"))
        await theirs.close()
        with pytest.raises(StaleSessionError):  # ``mine``'s copy saw e1 only: the store says so
            await mine.append_event(session, text("user", "three", at=3.0, event_id="e3"))
        again = await mine.get_session(app_name="a", user_id="u", session_id="s")  # every read is fresh
        assert again is not None and [e.id for e in again.events] == ["e1", "e2"]
        await mine.append_event(again, text("user", "three", at=3.0, event_id="e3"))
        for service, store in ((mine, first), (theirs, second)):
            await service.close()
            await store.close()
        check = HarnessSessionService(SessionStore(JsonlBackend(tmp_path, compression="none")))
        final = await check.get_session(app_name="a", user_id="u", session_id="s")
        assert final is not None and [e.id for e in final.events] == ["e1", "e2", "e3"]

    run(go())


def test_an_append_is_durable_when_it_returns_and_events_round_trip(tmp_path: Path) -> None:
    async def go() -> None:
        store = SessionStore(JsonlBackend(tmp_path, compression="none"), write_window_s=60)
        service = HarnessSessionService(store)
        session = await service.create_session(app_name="a", user_id="u", session_id="s")
        appended = [await service.append_event(session, event) for event in rich_events()]
        # no flush, no close: a process reading the root now sees every event, field for field
        other = HarnessSessionService(SessionStore(JsonlBackend(tmp_path, compression="none")))
        got = await other.get_session(app_name="a", user_id="u", session_id="s")
        assert got is not None
        assert [e.model_dump(mode="json") for e in got.events] == [
            e.model_dump(mode="json") for e in appended
        ]
        assert got.events == appended  # pydantic equality: types too (a set stays a set)
        await service.close()
        await store.close()

    run(go())


def test_a_compaction_replaces_its_range_on_the_surface_and_the_log_keeps_every_event() -> None:
    async def go() -> None:
        store = SessionStore(MemoryBackend())
        service = HarnessSessionService(store)
        session = await service.create_session(app_name="a", user_id="u", session_id="k")
        for n in range(4):
            author = "user" if n % 2 == 0 else "agent"
            await service.append_event(session, text(author, f"t{n}", at=50.0 + n, event_id=f"k{n}"))
        summary = types.Content(role="model", parts=[types.Part(text="they said t0 to t2")])
        compaction = EventCompaction(start_timestamp=50.0, end_timestamp=52.0, compacted_content=summary)
        event = Event(id="sum", author="user", timestamp=60.0, actions=EventActions(compaction=compaction))
        await service.append_event(session, event)
        log = await store.inspect(session_log_id("a", "u", "k"))
        kept = [e.data.get(EVENT_KEY, e.data.get("message", {}).get(EVENT_KEY)) for e in log.events[1:6]]
        assert [k["id"] for k in kept] == ["k0", "k1", "k2", "k3", "sum"]  # nothing left the log
        replace = log.events[5]
        assert replace.surface_op is not None and replace.surface_op != "append"
        assert list(replace.source_event_seqs or ()) == [1, 2, 3]
        texts = [m.raw["content"][0]["text"] for m in log.derive_messages()]
        assert texts == ["they said t0 to t2", "t3"]  # the model-visible history is the compacted one
        got = await service.get_session(app_name="a", user_id="u", session_id="k")
        assert got is not None and [e.id for e in got.events] == ["k0", "k1", "k2", "k3", "sum"]
        await service.close()
        await store.close()

    run(go())


def test_a_crash_between_the_session_write_and_the_shared_state_write_is_repaired_on_read() -> None:
    async def go() -> None:
        backend = MemoryBackend()
        store = SessionStore(backend)
        service = HarnessSessionService(store)
        session = await service.create_session(app_name="a", user_id="u", session_id="s")

        async def dies(*args: object, **kwargs: object) -> None:
            raise SystemExit("the process died after the session event was durable")

        service._shared.add = dies  # type: ignore[method-assign]
        with pytest.raises(SystemExit):
            await service.append_event(
                session, text("agent", "x", at=5.0, event_id="e1", state_delta={"user:k": 1})
            )
        await service.close()
        await store.close()  # the process is gone, and its ownership with it
        reader = HarnessSessionService(SessionStore(backend))
        assert await reader.get_user_state(app_name="a", user_id="u") == {}  # not there yet
        got = await reader.get_session(app_name="a", user_id="u", session_id="s")
        assert got is not None and got.state == {"user:k": 1}  # the read wrote it late
        assert await reader.get_user_state(app_name="a", user_id="u") == {"k": 1}
        later = await reader.get_session(app_name="a", user_id="u", session_id="s")
        assert later is not None
        await reader.append_event(later, text("agent", "y", at=9.0, event_id="e2", state_delta={"user:k": 2}))
        stale_repair = HarnessSessionService(SessionStore(backend))
        await stale_repair.get_session(app_name="a", user_id="u", session_id="s")
        assert await stale_repair.get_user_state(app_name="a", user_id="u") == {"k": 2}  # no step back
        log = await SessionStore(backend).inspect(user_log_id("a", "u"))
        assert sum(e.type == "adk/state" for e in log.events) == 2  # each delta written once

    run(go())


def test_state_that_is_not_json_is_refused_before_anything_is_written() -> None:
    async def go() -> None:
        store = SessionStore(MemoryBackend())
        service = HarnessSessionService(store)
        with pytest.raises(InvalidEventData):
            await service.create_session(app_name="a", user_id="u", session_id="s", state={"f": float("nan")})
        assert await store.list() == []
        made = await service.create_session(app_name="a", user_id="u", session_id="s", state={"f": 1.5})
        assert made.state == {"f": 1.5}
        await service.close()
        await store.close()

    run(go())


def test_two_services_on_one_store_share_its_live_sessions() -> None:
    async def go() -> None:
        store = SessionStore(MemoryBackend())
        one, two = HarnessSessionService(store), HarnessSessionService(store)
        made = await one.create_session(app_name="a", user_id="u", session_id="s", state={"app:n": 0})
        await one.append_event(made, text("user", "1", at=1.0, event_id="e1", state_delta={"app:n": 1}))
        seen = await two.get_session(app_name="a", user_id="u", session_id="s")
        assert seen is not None
        await two.append_event(seen, text("user", "2", at=2.0, event_id="e2", state_delta={"app:n": 2}))
        with pytest.raises(AdkStaleSessionError):  # ``made`` is behind what ``two`` wrote
            await one.append_event(made, text("user", "3", at=3.0, event_id="e3"))
        again = await one.get_session(app_name="a", user_id="u", session_id="s")
        assert again is not None and again.state == {"app:n": 2}
        await one.append_event(again, text("user", "3", at=3.0, event_id="e3"))
        await two.append_event(again, text("user", "4", at=4.0, event_id="e4"))  # its marker moved on
        final = await two.get_session(app_name="a", user_id="u", session_id="s")
        assert final is not None and [e.id for e in final.events] == ["e1", "e2", "e3", "e4"]
        await one.close()
        await two.close()
        await store.close()

    run(go())


@pytest.mark.parametrize("after_write", [False, True])
def test_a_failed_write_is_reported_and_a_retry_stores_the_event_once(after_write: bool) -> None:
    async def go() -> None:
        inner = MemoryBackend()
        backend = FaultyBackend(inner)
        store = SessionStore(backend)
        service = HarnessSessionService(store)
        session = await service.create_session(app_name="a", user_id="u", session_id="s")
        backend.fail_next_append(after_write=after_write)  # a lost reply when after_write
        event = text("user", "once", at=1.0, event_id="e1")
        with pytest.raises(PersistenceFailed):
            await service.append_event(session, event)
        assert session.events == []  # the caller's session did not take it
        now = await service.get_session(app_name="a", user_id="u", session_id="s")  # what is stored
        assert now is not None and [e.id for e in now.events] == (["e1"] if after_write else [])
        await service.append_event(now, event)  # the caller retries: a re-delivery if it landed
        stored = await HarnessSessionService(SessionStore(inner)).get_session(
            app_name="a", user_id="u", session_id="s"
        )
        assert stored is not None and [e.id for e in stored.events] == ["e1"]  # never twice
        await service.close()
        await store.close()

    run(go())


@pytest.mark.parametrize("backend", ["memory", "jsonl", "sqlite", "postgres"])
def test_two_copies_of_one_revision_appended_at_once_one_wins_one_is_stale(
    backend: str, tmp_path: Path, pg_schema: tuple[str, str] | None
) -> None:
    """``asyncio.gather`` of two appends from copies of the same revision: the check, the append
    and its flush run as one per session, so the second sees the first's event and is refused."""
    from tests.integrations.adk.support import service_on

    async def go() -> None:
        async with service_on(backend, tmp_path, pg_schema) as service:
            await service.create_session(app_name="a", user_id="u", session_id="s")
            copies = [await service.get_session(app_name="a", user_id="u", session_id="s") for _ in range(3)]
            outcomes = await asyncio.gather(
                *(
                    service.append_event(copy, text("user", name, at=1.0, event_id=name))
                    for copy, name in zip(copies, ("A", "B", "C"), strict=True)
                    if copy is not None
                ),
                return_exceptions=True,
            )
            won = [o for o in outcomes if isinstance(o, Event)]
            stale = [o for o in outcomes if isinstance(o, AdkStaleSessionError)]
            assert len(won) == 1 and len(stale) == 2, outcomes
            stored = await service.get_session(app_name="a", user_id="u", session_id="s")
            assert stored is not None and [e.id for e in stored.events] == [won[0].id]

    run(go())


def test_tool_calls_and_results_read_as_harness_own() -> None:
    """A function call is a ``tool-call`` block, a lone function response a ``tool/result``: the
    log line, the search text and the telemetry parts show the tool, its arguments and its
    result; ``get_session`` still returns every event exactly as appended."""
    from harness.present.summary import event_summary
    from harness.query.text import event_text
    from harness.telemetry.content import message_parts

    async def go() -> None:
        store = SessionStore(MemoryBackend())
        service = HarnessSessionService(store)
        session = await service.create_session(app_name="app", user_id="u", session_id="s")
        events = rich_events()
        for event in events:
            await service.append_event(session, event)
        found = await service.get_session(app_name="app", user_id="u", session_id="s")
        assert found is not None and [e.model_dump() for e in found.events] == [
            e.model_dump() for e in events
        ]
        stored = (await store.inspect(session_log_id("app", "u", "s"))).events
        call, result = stored[2], stored[3]
        assert call.type == "assistant/message" and result.type == "tool/result"
        assert '→ get_weather {"city":"Paris","days":[1,2]}' in event_summary(call, 200)
        assert event_summary(result, 200) == '{"temp":21.5,"sky":null}'
        assert "get_weather" in event_text(call) and "Paris" in event_text(call)
        assert "21.5" in event_text(result)
        parts = message_parts(call.data["message"])
        assert (
            parts is not None
            and {
                "type": "tool_call",
                "id": "call-1",
                "name": "get_weather",
                "arguments": {"city": "Paris", "days": [1, 2]},
            }
            in parts["parts"]
        )
        answered = message_parts(result.data["message"])
        assert answered is not None and answered["role"] == "tool"
        assert answered["parts"][0]["id"] == "call-1"
        await service.close()
        await store.close()

    run(go())

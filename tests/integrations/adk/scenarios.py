"""ADK session-service scenarios written from ADK's documented behaviour (``BaseSessionService``,
``GetSessionConfig``, the ``app:``/``user:``/``temp:`` state prefixes, ``InMemorySessionService``).

Each scenario drives a service and records what a caller can observe (``Seen``): sessions as
JSON with their events, state and ids, errors by type. The differential test runs every
scenario on ADK's ``InMemorySessionService`` and on ``HarnessSessionService`` over each backend
and requires the same record. Random ids are labelled in order of appearance; timestamps ADK
takes from the clock are masked (events carry fixed ones wherever their values matter).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from google.adk.errors.already_exists_error import AlreadyExistsError
from google.adk.errors.session_not_found_error import SessionNotFoundError
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions, EventCompaction
from google.adk.sessions.base_session_service import BaseSessionService, GetSessionConfig
from google.adk.sessions.session import Session
from google.genai import types

APP = "weather"


class Seen:
    """The observable results of a scenario."""

    def __init__(self) -> None:
        self.log: list[tuple[str, Any]] = []
        self._labels: dict[str, str] = {}

    def label(self, value: str) -> str:
        return self._labels.setdefault(value, f"#{len(self._labels)}")

    def session(self, what: str, session: Session | None, *, times: bool = False) -> None:
        if session is None:
            self.log.append((what, None))
            return
        dumped = session.model_dump(mode="json")
        dumped["id"] = self.label(dumped["id"])
        if not times:
            dumped.pop("last_update_time")
        self.log.append((what, dumped))

    def value(self, what: str, value: Any) -> None:
        self.log.append((what, value))

    async def error(self, what: str, call: Awaitable[Any]) -> None:
        try:
            result = await call
        except Exception as error:
            self.log.append((what, f"raised {type(error).__name__}"))
            return
        self.log.append((what, f"returned {type(result).__name__}"))


Scenario = Callable[[BaseSessionService, Seen], Awaitable[None]]


def text(author: str, words: str, *, at: float, event_id: str, **actions: Any) -> Event:
    role = "user" if author == "user" else "model"
    return Event(
        id=event_id,
        invocation_id="inv-1",
        author=author,
        timestamp=at,
        content=types.Content(role=role, parts=[types.Part(text=words)]),
        actions=EventActions(**actions),
    )


def rich_events() -> list[Event]:
    """Events using much of what an ADK event can hold."""
    call = types.FunctionCall(id="call-1", name="get_weather", args={"city": "Paris", "days": [1, 2]})
    answer = types.FunctionResponse(id="call-1", name="get_weather", response={"temp": 21.5, "sky": None})
    return [
        text("user", "Weather in Paris?", at=10.0, event_id="e1"),
        Event(
            id="e2",
            invocation_id="inv-1",
            author="forecaster",
            branch="root.forecaster",
            timestamp=11.25,
            content=types.Content(
                role="model",
                parts=[types.Part(text="thinking", thought=True), types.Part(function_call=call)],
            ),
            long_running_tool_ids={"call-1"},
            usage_metadata=types.GenerateContentResponseUsageMetadata(
                prompt_token_count=12, total_token_count=20
            ),
            custom_metadata={"trace": {"span": "a1", "n": [1, 2.5, None]}},
        ),
        Event(
            id="e3",
            invocation_id="inv-1",
            author="forecaster",
            timestamp=12.5,
            content=types.Content(role="user", parts=[types.Part(function_response=answer)]),
            actions=EventActions(artifact_delta={"report.txt": 1}, skip_summarization=True),
        ),
        Event(
            id="e4",
            invocation_id="inv-1",
            author="forecaster",
            timestamp=13.0,
            content=types.Content(
                role="model", parts=[types.Part(text='21.5 °C, unicode ✓ \u2028 "quoted"')]
            ),
            actions=EventActions(
                transfer_to_agent="planner", escalate=False, state_delta={"last_city": "Paris"}
            ),
            turn_complete=True,
        ),
    ]


async def create_get_and_list(service: BaseSessionService, seen: Seen) -> None:
    made = await service.create_session(app_name=APP, user_id="ann", session_id="s1", state={"k": 1})
    seen.session("created", made)
    seen.session("got", await service.get_session(app_name=APP, user_id="ann", session_id="s1"))
    generated = await service.create_session(app_name=APP, user_id="ann")
    seen.value("generated id is a non-empty string", isinstance(generated.id, str) and bool(generated.id))
    seen.session(
        "got generated", await service.get_session(app_name=APP, user_id="ann", session_id=generated.id)
    )
    seen.session("other user", await service.get_session(app_name=APP, user_id="bob", session_id="s1"))
    seen.session("other app", await service.get_session(app_name="other", user_id="ann", session_id="s1"))
    seen.session("missing", await service.get_session(app_name=APP, user_id="ann", session_id="nope"))
    listed = await service.list_sessions(app_name=APP, user_id="ann")
    seen.value("listed ids", sorted(seen.label(s.id) for s in listed.sessions))
    seen.value("listed without events", [s.events for s in listed.sessions])
    seen.value("nobody's", (await service.list_sessions(app_name=APP, user_id="zed")).sessions)
    seen.value("unknown app", (await service.list_sessions(app_name="none")).sessions)


async def duplicate_ids(service: BaseSessionService, seen: Seen) -> None:
    await service.create_session(app_name=APP, user_id="ann", session_id="dup")
    await seen.error("same id", service.create_session(app_name=APP, user_id="ann", session_id="dup"))
    await seen.error(
        "same id, padded", service.create_session(app_name=APP, user_id="ann", session_id=" dup ")
    )
    await seen.error("other user", service.create_session(app_name=APP, user_id="bob", session_id="dup"))
    await seen.error("other app", service.create_session(app_name="b", user_id="ann", session_id="dup"))
    seen.value("errors are", [AlreadyExistsError.__name__])


async def events_round_trip(service: BaseSessionService, seen: Seen) -> None:
    session = await service.create_session(app_name=APP, user_id="ann", session_id="s")
    for event in rich_events():
        returned = await service.append_event(session, event)
        seen.value("returned", returned.model_dump(mode="json"))
    seen.session("caller's session", session, times=True)
    got = await service.get_session(app_name=APP, user_id="ann", session_id="s")
    seen.session("stored", got, times=True)
    assert got is not None
    seen.value("types survive", [type(e.long_running_tool_ids).__name__ for e in got.events])


async def state_prefixes(service: BaseSessionService, seen: Seen) -> None:
    first = await service.create_session(
        app_name=APP,
        user_id="ann",
        session_id="a1",
        state={"mine": 1, "app:units": "C", "user:lang": "fr", "temp:scratch": "x"},
    )
    seen.session("created", first)
    delta = {"mine": 2, "app:version": 3, "user:city": "Paris", "temp:step": 9, "fresh": [1, {"a": None}]}
    event = text("agent", "noted", at=20.0, event_id="d1", state_delta=delta)
    returned = await service.append_event(first, event)
    seen.value("returned delta (temp trimmed)", returned.actions.state_delta)
    seen.value("caller's state keeps temp", first.state)
    seen.session("stored", await service.get_session(app_name=APP, user_id="ann", session_id="a1"))
    second = await service.create_session(app_name=APP, user_id="ann", session_id="a2")
    seen.value("same user's other session", second.state)
    other = await service.create_session(app_name=APP, user_id="bob", session_id="b1")
    seen.value("another user", other.state)
    seen.value(
        "another app", (await service.create_session(app_name="x", user_id="ann", session_id="z")).state
    )
    await service.append_event(
        other, text("agent", "b", at=21.0, event_id="d2", state_delta={"app:units": "F"})
    )
    again = await service.get_session(app_name=APP, user_id="ann", session_id="a1")
    assert again is not None
    seen.value("app state is shared", again.state)
    seen.value("user state of ann", await service.get_user_state(app_name=APP, user_id="ann"))
    seen.value("user state of bob", await service.get_user_state(app_name=APP, user_id="bob"))
    seen.value("user state of nobody", await service.get_user_state(app_name=APP, user_id="nobody"))
    listed = await service.list_sessions(app_name=APP)
    seen.value(
        "listed states",
        sorted((seen.label(s.id), s.user_id, sorted(s.state.items())) for s in listed.sessions),
    )


async def get_session_config(service: BaseSessionService, seen: Seen) -> None:
    session = await service.create_session(app_name=APP, user_id="ann", session_id="c")
    for n in range(6):
        await service.append_event(
            session, text("user" if n % 2 == 0 else "agent", f"m{n}", at=100.0 + n, event_id=f"c{n}")
        )

    async def window(**config: Any) -> None:
        got = await service.get_session(
            app_name=APP, user_id="ann", session_id="c", config=GetSessionConfig(**config)
        )
        assert got is not None
        seen.value(f"window {config}", [e.id for e in got.events])

    for config in (
        {},
        {"num_recent_events": 0},
        {"num_recent_events": 2},
        {"num_recent_events": 60},
        {"after_timestamp": 103.0},
        {"after_timestamp": 102.5},
        {"after_timestamp": 999.0},
        {"after_timestamp": 0.0},
        {"num_recent_events": 4, "after_timestamp": 104.0},
        {"num_recent_events": 2, "after_timestamp": 100.0},
    ):
        await window(**config)
    try:
        GetSessionConfig(num_recent_events=-1)
    except ValueError:
        seen.value("negative num_recent_events", "refused")


async def listing_order(service: BaseSessionService, seen: Seen) -> None:
    for name, user in (("x", "ann"), ("y", "bob"), ("z", "ann")):
        await service.create_session(app_name=APP, user_id=user, session_id=name)
    for name, user, at in (("z", "ann", 300.0), ("x", "ann", 100.0), ("y", "bob", 200.0)):
        session = await service.get_session(app_name=APP, user_id=user, session_id=name)
        assert session is not None
        await service.append_event(session, text("user", name, at=at, event_id=f"l-{name}"))
    every = await service.list_sessions(app_name=APP)
    seen.value(
        "all users, oldest update first", [(s.id, s.user_id, s.last_update_time) for s in every.sessions]
    )
    ann = await service.list_sessions(app_name=APP, user_id="ann")
    seen.value("ann's", [(s.id, s.last_update_time, s.events) for s in ann.sessions])


async def deleting(service: BaseSessionService, seen: Seen) -> None:
    session = await service.create_session(
        app_name=APP, user_id="ann", session_id="gone", state={"user:keep": 1}
    )
    await service.append_event(session, text("user", "hi", at=5.0, event_id="g1"))
    await service.create_session(app_name=APP, user_id="ann", session_id="kept")
    await service.delete_session(app_name=APP, user_id="ann", session_id="gone")
    seen.session("deleted", await service.get_session(app_name=APP, user_id="ann", session_id="gone"))
    seen.value("left", [s.id for s in (await service.list_sessions(app_name=APP, user_id="ann")).sessions])
    seen.value("user state stays", await service.get_user_state(app_name=APP, user_id="ann"))
    await seen.error(
        "delete missing", service.delete_session(app_name=APP, user_id="ann", session_id="never")
    )
    await seen.error(
        "append to deleted", service.append_event(session, text("user", "again", at=6.0, event_id="g2"))
    )
    seen.value("not found is", SessionNotFoundError.__name__)
    again = await service.create_session(app_name=APP, user_id="ann", session_id="gone")
    seen.session("created again", again)


async def partial_and_redelivered(service: BaseSessionService, seen: Seen) -> None:
    session = await service.create_session(app_name=APP, user_id="ann", session_id="p")
    partial = text("agent", "stream", at=1.0, event_id="p1")
    partial.partial = True
    await service.append_event(session, partial)
    seen.value("partial not kept in the caller's session", [e.id for e in session.events])
    whole = text("agent", "whole", at=2.0, event_id="p2", state_delta={"n": 1})
    await service.append_event(session, whole)
    await service.append_event(session, whole)  # the same event again: stored once
    stored = await service.get_session(app_name=APP, user_id="ann", session_id="p")
    seen.session("stored", stored)


async def compaction_is_kept(service: BaseSessionService, seen: Seen) -> None:
    session = await service.create_session(app_name=APP, user_id="ann", session_id="k")
    for n in range(4):
        await service.append_event(
            session, text("user" if n % 2 == 0 else "agent", f"t{n}", at=50.0 + n, event_id=f"k{n}")
        )
    summary = types.Content(role="model", parts=[types.Part(text="they said t0..t2")])
    compaction = EventCompaction(start_timestamp=50.0, end_timestamp=52.0, compacted_content=summary)
    await service.append_event(
        session,
        Event(
            id="k-sum",
            invocation_id="inv-9",
            author="user",
            timestamp=60.0,
            actions=EventActions(compaction=compaction),
        ),
    )
    await service.append_event(session, text("user", "after", at=61.0, event_id="k5"))
    seen.session(
        "every event, the compaction included",
        await service.get_session(app_name=APP, user_id="ann", session_id="k"),
    )


async def copies_are_independent(service: BaseSessionService, seen: Seen) -> None:
    session = await service.create_session(app_name=APP, user_id="ann", session_id="i", state={"a": [1]})
    got = await service.get_session(app_name=APP, user_id="ann", session_id="i")
    assert got is not None
    got.state["a"].append(2)
    got.state["b"] = 1
    got.events.append(text("user", "not appended", at=1.0, event_id="i0"))
    seen.session("unchanged", await service.get_session(app_name=APP, user_id="ann", session_id="i"))
    seen.value("creator's copy", session.state)


SCENARIOS: dict[str, Scenario] = {
    scenario.__name__: scenario
    for scenario in (
        create_get_and_list,
        duplicate_ids,
        events_round_trip,
        state_prefixes,
        get_session_config,
        listing_order,
        deleting,
        partial_and_redelivered,
        compaction_is_kept,
        copies_are_independent,
    )
}

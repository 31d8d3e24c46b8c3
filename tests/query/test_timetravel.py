"""Time travel (issue 13 item 1): ``surface_at``, ``messages_at`` and ``request_at`` answer with
the live fold at every seq, follow a growing session and refuse bad seqs with ``InvalidQuery``
(the real-run property is in ``test_request_at_runs.py``)."""

from __future__ import annotations

import asyncio
import gc
import random
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import hypothesis.strategies as st
import pytest
from hypothesis import given

import harness
from harness.agent.loop import Agent, AgentSettings
from harness.errors import InvalidQuery
from harness.query import timetravel
from harness.query.timetravel import (
    TimeTravel,
    messages_at,
    request_at,
    request_before,
    request_points,
    surface_at,
    time_travel,
)
from harness.session.request import build_request
from harness.testing.scripted import EchoTool, ScriptedProvider, calls_reply, error_reply, text_reply
from tests.test_properties import SETTINGS, Built, fold_key, valid_logs


def raws(messages: Sequence[harness.Message]) -> list[Mapping[str, Any]]:
    return [message.raw for message in messages]


def replay(session: harness.Session) -> Iterator[tuple[harness.Session, harness.Event]]:
    """Append ``session``'s events one by one to a new session, yielding after each."""
    copy = harness.Session.create(session.header)
    for event in session.events:
        appended = copy.append(
            event.type,
            event.data,
            surface_op=event.surface_op,
            source_event_seqs=event.source_event_seqs,
            ignorable=event.ignorable,
        )
        yield copy, appended


def prefix(session: harness.Session, seq: int) -> harness.Session:
    """The session restored from its events ``0..seq`` (an independent oracle)."""
    return harness.Session.from_restore(session.id, list(session.events)[: seq + 1], session.header)


# ---- the Surface and the history at every seq -----------------------------------------------


@SETTINGS
@given(built=valid_logs(), order=st.randoms(use_true_random=False))
def test_every_seq_answers_what_the_live_session_held_right_after_it(
    built: Built, order: random.Random
) -> None:
    """Live oracle: replay the log append by append, recording the live Surface and history
    after each; time travel, queried in random order while the replay grows (so it folds
    incrementally), gives the same at every seq, and ``fold_surface`` of the prefix agrees."""
    live_states: list[tuple[tuple[Any, ...], list[Mapping[str, Any]]]] = []
    traveller: TimeTravel | None = None
    copy: harness.Session | None = None
    for copy, _ in replay(built.session):
        if traveller is None:
            traveller = TimeTravel(copy)
        fold = harness.fold_surface(list(copy.events))
        live_states.append((fold_key(fold), raws(copy.derive_messages())))
        assert fold.nodes == tuple(copy.surface.nodes)
        if order.random() < 0.3:  # a query mid-growth, at a random seq so far
            seq = order.randrange(len(copy.events))
            assert fold_key(traveller.surface_at(seq)) == live_states[seq][0]
            assert raws(traveller.messages_at(seq)) == live_states[seq][1]
    if traveller is None:
        return
    seqs = list(range(len(live_states)))
    order.shuffle(seqs)
    for seq in seqs:
        assert fold_key(traveller.surface_at(seq)) == live_states[seq][0]
        assert raws(traveller.messages_at(seq)) == live_states[seq][1]
    assert copy is not None and raws(traveller.messages_at(len(seqs) - 1)) == raws(copy.derive_messages())


@SETTINGS
@given(built=valid_logs())
def test_every_request_point_rebuilds_the_request_of_the_restored_prefix(built: Built) -> None:
    session = built.session
    points = request_points(session)
    messages = [  # model answers (not replacements, which cite what they replace)
        event
        for event in session.events
        if event.type == "assistant/message" and event.surface_op == "append"
    ]
    for message in messages:  # the request that produced each message is found
        sources = message.source_event_seqs or ()
        expected = min(sources) - 1 if sources else message.seq - 1
        assert request_before(session, message.seq) == expected
        assert expected in points
    traveller = time_travel(session)
    for seq in range(len(session.events)):  # the header in force, as the live fold finds it
        assert traveller.header_at(seq) == harness.fold_request_header(session.events[: seq + 1])
    for point in points:
        restored = prefix(session, point)
        if harness.fold_request_header(restored.events) is None:
            with pytest.raises(InvalidQuery, match="no request/header is in force"):
                request_at(session, point)
            continue
        assert request_at(session, point) == build_request(restored)


def test_a_compacted_and_pruned_history_is_seen_as_it_was_before_and_after() -> None:
    session = harness.Session.create()
    first = session.append("user/message", harness.user_message("the constant is 42"), surface_op="append")
    session.append("user/message", harness.user_message("noted"), surface_op="append")
    call = session.append(
        "tool/call", {"turn": 1, "step": 1, "callId": "c1", "name": "ls", "arguments": "{}"}
    )
    result = session.append(
        "tool/result",
        {"turn": 1, "step": 1, "message": harness.tool_result_message("c1", [harness.text_block("x" * 50)])},
        surface_op="append",
        source_event_seqs=[call.seq],
    )
    before = len(session.events) - 1
    pruned_message = harness.tool_result_message(
        "c1", [harness.text_block("x…")], id=result.data["message"]["id"]
    )
    pruned = session.append(
        "tool/result",
        {"turn": 1, "step": 1, "message": pruned_message},
        surface_op=harness.Replace(result.seq, result.seq),
        source_event_seqs=[result.seq],
    )
    summary = session.append(
        "user/message",
        harness.user_message("summary: a constant was given"),
        surface_op=harness.Replace(first.seq, first.seq + 1),
        source_event_seqs=[first.seq, first.seq + 1],
    )
    assert list(surface_at(session, before).nodes) == [0, 1, 3]
    assert surface_at(session, before).replace_generation == 0
    assert list(surface_at(session, pruned.seq).nodes) == [0, 1, pruned.seq]
    assert list(surface_at(session, summary.seq).nodes) == [summary.seq, pruned.seq]
    assert surface_at(session, summary.seq).replace_generation == 2
    assert [m.text for m in messages_at(session, before)][:2] == ["the constant is 42", "noted"]
    assert messages_at(session, summary.seq)[0].text == "summary: a constant was given"
    assert raws(messages_at(session, summary.seq)) == raws(session.derive_messages())


def test_the_shared_traveller_follows_the_session_and_its_memo_never_goes_stale() -> None:
    session = harness.Session.create()
    a = session.append("user/message", harness.user_message("a"), surface_op="append")
    assert time_travel(session) is time_travel(session)
    assert raws(messages_at(session, a.seq)) == raws(session.derive_messages())
    b = session.append("user/message", harness.user_message("b"), surface_op="append")
    assert [m.text for m in messages_at(session, b.seq)] == ["a", "b"]
    r = session.append(
        "user/message", harness.user_message("ab"), surface_op=harness.Replace(a.seq, b.seq),
        source_event_seqs=[a.seq, b.seq],
    )  # fmt: skip
    c = session.append("user/message", harness.user_message("c"), surface_op="append")
    assert [m.text for m in messages_at(session, r.seq)] == ["ab"]
    assert [m.text for m in messages_at(session, c.seq)] == ["ab", "c"]
    assert [m.text for m in messages_at(session, b.seq)] == ["a", "b"]  # the past is unchanged
    assert [m.text for m in messages_at(session, c.seq)] == ["ab", "c"]


def test_evicted_generations_are_recomputed_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    """With a memo budget of a few slots every other query evicts; answers do not change."""
    session = harness.Session.create()
    for index in range(12):
        a = session.append("user/message", harness.user_message(f"a{index}"), surface_op="append")
        session.append("user/message", harness.user_message(f"b{index}"), surface_op="append")
        if index % 2:
            replace = harness.Replace(a.seq, a.seq + 1)
            sources = [a.seq, a.seq + 1]
            message = harness.user_message(f"r{index}")
            session.append("user/message", message, surface_op=replace, source_event_seqs=sources)
    expected = [raws(prefix(session, seq).derive_messages()) for seq in range(len(session.events))]
    monkeypatch.setattr(timetravel, "_MEMO_BUDGET", 6)
    traveller = TimeTravel(session)
    order = random.Random(5)
    for _ in range(3):
        seqs = list(range(len(session.events)))
        order.shuffle(seqs)
        for seq in seqs:
            assert raws(traveller.messages_at(seq)) == expected[seq]
        assert len(traveller._generations) <= 2


def test_the_shared_cache_does_not_keep_a_session_alive() -> None:
    session = harness.Session.create()
    session.append("user/message", harness.user_message("a"), surface_op="append")
    surface_at(session, 0)
    gc.collect()  # sessions earlier tests left to the collector must not count below
    assert len(timetravel._shared) >= 1
    before = len(timetravel._shared)
    del session
    gc.collect()
    assert len(timetravel._shared) == before - 1


def test_the_view_build_request_reads_is_exactly_the_prefix() -> None:
    session = harness.Session.create()
    for text in "abcde":
        session.append("user/message", harness.user_message(text), surface_op="append")
    view = timetravel._Prefix(session.events, 3)
    expected = session.events[:3]
    assert len(view) == 3 and tuple(view) == expected and view[-1] is expected[-1] and view[0] is expected[0]
    assert view[1:] == expected[1:] and view[::-1] == expected[::-1]
    with pytest.raises(IndexError):
        view[3]
    assert harness.fold_request_header(view) is None


# ---- refusals -------------------------------------------------------------------------------


@pytest.mark.parametrize("seq", [-1, 3, 10**9, True, 1.0, "1", None])
def test_a_seq_outside_the_log_is_an_invalid_query(seq: Any) -> None:
    session = harness.Session.create()
    for text in ("a", "b", "c"):
        session.append("user/message", harness.user_message(text), surface_op="append")
    for query in (surface_at, messages_at, request_at, request_before):
        with pytest.raises(InvalidQuery, match=r"is out of range: session .* has 3 events \(seqs 0\.\.2\)"):
            query(session, seq)
    assert issubclass(InvalidQuery, ValueError) and issubclass(InvalidQuery, harness.HarnessError)


def test_an_empty_session_has_no_seq_to_ask_about() -> None:
    with pytest.raises(InvalidQuery, match="has no events"):
        surface_at(harness.Session.create(), 0)
    assert request_points(harness.Session.create()) == ()


def scripted_run() -> tuple[harness.Session, ScriptedProvider]:
    session = harness.Session.create()
    provider = ScriptedProvider(
        [calls_reply(("c1", "look", '{"a":1}')), error_reply("SERVER"), text_reply("done")]
    )
    agent = Agent(
        session, provider, [EchoTool("look")], AgentSettings(model="m-1", system="Be terse."),
        workspace=".", record_baseline=False,
    )  # fmt: skip
    asyncio.run(agent.run_turn("look around"))  # the server error ends turn 1
    asyncio.run(agent.run_turn("again"))
    return session, provider


def test_request_at_a_seq_that_is_no_request_point_says_so_and_where_the_request_was() -> None:
    session, _ = scripted_run()
    kinds = [event.type for event in session.events]
    user = kinds.index("user/message")
    with pytest.raises(InvalidQuery, match=rf"seq {user} \(user/message\) is not a request point"):
        request_at(session, user)
    message = kinds.index("assistant/message")
    point = request_before(session, message)
    with pytest.raises(InvalidQuery, match=rf"the request in force there was sent at seq {point}"):
        request_at(session, message)
    assert request_at(session, point).messages[-1].text == "look around"
    with pytest.raises(InvalidQuery, match="no model request was sent at or before seq 0"):
        request_before(session, 0)


def test_a_request_point_without_a_header_in_force_is_refused() -> None:
    session = harness.Session.create()
    session.append("step/start", {"turn": 1, "step": 1})
    session.append(
        "assistant/chunk", {"turn": 1, "step": 1, "chunk": {"type": "text-delta", "index": 0, "text": "x"}}
    )
    assert request_points(session) == (0,)
    with pytest.raises(InvalidQuery, match="no request/header is in force at seq 0"):
        request_at(session, 0)


def test_request_at_equals_every_request_a_scripted_provider_received() -> None:
    """Three requests (a tool step, a failed attempt, the next turn's answer) and no
    request/context after the first: every one is a request point and is rebuilt exactly."""
    session, provider = scripted_run()
    points = request_points(session)
    assert len(provider.requests) == 3
    assert [request_at(session, point) for point in points] == provider.requests
    assert [event.type for event in session.events].count("request/context") == 1

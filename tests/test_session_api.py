"""The public Session API (SPEC §1–3): observers, immutability, incremental
history, request headers and requests, and the lossless JSON codec."""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import pytest

import harness
import harness.surface.projection
from harness.events import json as hjson

HEADER = {"version": 0, "id": "api-session", "createdAt": 1767225600000}


def clock_from(start: int = 1000) -> Callable[[], int]:
    counter: Iterator[int] = itertools.count(start)
    return lambda: next(counter)


def new_session() -> harness.Session:
    return harness.Session.create(HEADER, clock=clock_from())


def one_turn(session: harness.Session, *, calls: int = 1) -> None:
    """turn/start … turn/end with ``calls`` tool calls and their results."""
    turn = sum(1 for e in session.events if e.type == "turn/start") + 1
    session.append("turn/start", {"turn": turn})
    session.append("step/start", {"turn": turn, "step": 1})
    session.append("user/message", harness.user_message(f"task {turn}"), surface_op="append")
    blocks = [harness.tool_call_block(f"c{turn}-{k}", "bash", "{}") for k in range(calls)]
    session.append(
        "assistant/message",
        {"turn": turn, "step": 1, "message": harness.assistant_message(blocks, provider="p", model="m")},
        surface_op="append",
        source_event_seqs=[],
    )
    for k in range(calls):
        call = session.append(
            "tool/call",
            {"turn": turn, "step": 1, "callId": f"c{turn}-{k}", "name": "bash", "arguments": "{}"},
        )
        result = harness.tool_result_message(f"c{turn}-{k}", "ok", is_error=False)
        session.append(
            "tool/result",
            {"turn": turn, "step": 1, "message": result},
            surface_op="append",
            source_event_seqs=[call.seq],
        )
    session.append("step/end", {"turn": turn, "step": 1})
    session.append("turn/end", {"turn": turn, "reason": {"kind": "completed"}})


# ---- observers ------------------------------------------------------------------------------


def test_observers_see_every_event_in_seq_order() -> None:
    session = new_session()
    seen_a: list[int] = []
    seen_b: list[int] = []
    session.subscribe(lambda e: seen_a.append(e.seq))
    session.subscribe(lambda e: seen_b.append(e.seq))
    one_turn(session, calls=2)
    expected = list(range(len(session.events)))
    assert seen_a == expected
    assert seen_b == expected


def test_an_observer_sees_the_event_already_committed() -> None:
    session = new_session()
    lengths: list[int] = []
    session.subscribe(lambda e: lengths.append(len(session.events)))
    event = session.append("turn/start", {"turn": 1})
    assert lengths == [1]
    assert session.events[0] is event


def test_a_raising_observer_is_logged_and_isolated(caplog: pytest.LogCaptureFixture) -> None:
    session = new_session()
    after: list[int] = []

    def broken(event: harness.Event) -> None:
        raise RuntimeError(f"observer broke on {event.seq}")

    session.subscribe(broken)
    session.subscribe(lambda e: after.append(e.seq))
    with caplog.at_level(logging.ERROR):
        first = session.append("turn/start", {"turn": 1})
        second = session.append("step/start", {"turn": 1, "step": 1})
    # The append is not undone and later observers still run.
    assert [e.seq for e in session.events] == [0, 1]
    assert (first.seq, second.seq) == (0, 1)
    assert after == [0, 1]
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 2
    assert all(r.exc_info is not None and isinstance(r.exc_info[1], RuntimeError) for r in errors)
    assert "observer broke on 0" in caplog.text
    # The session is not stuck in its notification loop: a later observer still gets events.
    late: list[int] = []
    session.subscribe(lambda e: late.append(e.seq))
    session.append("step/end", {"turn": 1, "step": 1})
    assert late == [2]
    assert after == [0, 1, 2]


def test_a_reentrant_append_is_delivered_to_all_observers_after_the_current_event() -> None:
    session = new_session()
    order: list[tuple[str, int]] = []
    inner: list[harness.Event] = []

    def appender(event: harness.Event) -> None:
        order.append(("a", event.seq))
        if event.type == "turn/start":
            inner.append(session.append("plugin/echo", {"of": event.seq}))
            inner.append(session.append("plugin/echo", {"of": event.seq}))
            # Committed at once, but not yet delivered to anyone else.
            assert [e.seq for e in session.events] == [0, 1, 2]
            assert ("b", 0) not in order

    session.subscribe(appender)
    session.subscribe(lambda e: order.append(("b", e.seq)))
    session.append("turn/start", {"turn": 1})
    assert [e.seq for e in inner] == [1, 2]
    assert order == [("a", 0), ("b", 0), ("a", 1), ("b", 1), ("a", 2), ("b", 2)]
    session.append("turn/end", {"turn": 1, "reason": {"kind": "completed"}})
    assert order[-2:] == [("a", 3), ("b", 3)]


def test_a_reentrant_append_from_a_raising_observer_still_lands() -> None:
    session = new_session()
    seen: list[int] = []

    def append_then_raise(event: harness.Event) -> None:
        if event.seq == 0:
            session.append("plugin/echo", None)
            raise RuntimeError("after appending")

    session.subscribe(append_then_raise)
    session.subscribe(lambda e: seen.append(e.seq))
    session.append("turn/start", {"turn": 1})
    assert len(session.events) == 2
    assert seen == [0, 1]


def test_events_left_undelivered_by_an_escaping_interrupt_go_out_first_next_time() -> None:
    session = new_session()
    seen: list[int] = []

    def interrupting(event: harness.Event) -> None:
        if event.seq == 0:
            session.append("plugin/echo", None)  # queued behind event 0
            raise KeyboardInterrupt  # not an Exception: it leaves append, event 1 undelivered

    session.subscribe(interrupting)
    session.subscribe(lambda e: seen.append(e.seq))
    with pytest.raises(KeyboardInterrupt):
        session.append("turn/start", {"turn": 1})
    assert seen == [] and len(session.events) == 2
    session.append("plugin/echo", None)
    assert seen == [1, 2]  # seq order: the leftover before the new event


def test_unsubscribe_stops_delivery_and_is_idempotent() -> None:
    session = new_session()
    seen: list[int] = []
    unsubscribe = session.subscribe(lambda e: seen.append(e.seq))
    session.append("turn/start", {"turn": 1})
    unsubscribe()
    session.append("turn/end", {"turn": 1, "reason": {"kind": "completed"}})
    unsubscribe()
    session.append("plugin/x", None)
    assert seen == [0]


def test_a_refused_append_notifies_nobody() -> None:
    session = new_session()
    seen: list[int] = []
    session.subscribe(lambda e: seen.append(e.seq))
    with pytest.raises(harness.InvalidEvent):
        session.append("user/message", harness.user_message("x"))  # no surface op
    with pytest.raises(harness.InvalidEventData):
        session.append("plugin/x", {"n": float("nan")})
    assert seen == []
    assert len(session.events) == 0


# ---- immutability ---------------------------------------------------------------------------


def test_an_event_cannot_be_reassigned() -> None:
    session = new_session()
    session.append("turn/start", {"turn": 1})
    event = session.events[0]
    with pytest.raises((AttributeError, TypeError)):
        session.events[0].seq = 5  # type: ignore[misc]
    for name, value in [("type", "x/y"), ("time", 0), ("data", {}), ("ignorable", True)]:
        with pytest.raises((AttributeError, TypeError)):
            setattr(event, name, value)
    assert session.events[0].seq == 0
    assert session.events[0].to_json()["type"] == "turn/start"


def test_event_data_is_deeply_read_only() -> None:
    session = new_session()
    event = session.append("user/message", harness.user_message("hi", id="u-1"), surface_op="append")
    data: Any = event.data
    content: Any = data["content"]
    mutations: list[Callable[[], object]] = [
        lambda: data.__setitem__("id", "x"),
        lambda: data.__delitem__("id"),
        lambda: data.update(id="x"),
        lambda: data.pop("id"),
        lambda: data.popitem(),
        lambda: data.setdefault("new", 1),
        lambda: data.clear(),
        lambda: data.__ior__({"id": "x"}),
        lambda: content.__setitem__(0, {}),
        lambda: content.append({}),
        lambda: content[0].__setitem__("text", "changed"),
        lambda: data["source"].__setitem__("kind", "tool"),
    ]
    for mutation in mutations:
        with pytest.raises((TypeError, AttributeError)):
            mutation()
    with pytest.raises(TypeError):
        data["id"] = "x"
    assert harness.thaw(session.events[0].data) == {
        "content": [{"type": "text", "text": "hi"}],
        "source": {"kind": "user"},
        "role": "user",
        "id": "u-1",
    }


def test_the_caller_keeps_no_handle_on_the_log() -> None:
    session = new_session()
    data: dict[str, Any] = {"todos": [{"content": "a", "status": "pending"}]}
    event = session.append("todo/write", data)
    data["todos"][0]["status"] = "completed"
    data["todos"].append({"content": "b", "status": "pending"})
    data["extra"] = 1
    assert harness.thaw(event.data) == {"todos": [{"content": "a", "status": "pending"}]}
    assert hjson.loads(harness.encode_event(session.events[0]))["data"] == {
        "todos": [{"content": "a", "status": "pending"}]
    }


def test_thawed_data_is_a_mutable_copy() -> None:
    session = new_session()
    event = session.append("todo/write", {"todos": [{"content": "a", "status": "pending"}]})
    copy = harness.thaw(event.data)
    copy["todos"].append("more")
    assert len(event.data["todos"]) == 1


def test_the_log_view_is_read_only() -> None:
    session = new_session()
    one_turn(session)
    events: Any = session.events
    with pytest.raises((TypeError, AttributeError)):
        events[0] = events[1]
    with pytest.raises((TypeError, AttributeError)):
        del events[0]
    with pytest.raises(AttributeError):
        events.append(events[0])
    loose: Any = session
    with pytest.raises(AttributeError):
        loose.events = []
    sliced = session.events[0:2]
    assert isinstance(sliced, tuple)
    assert [e.seq for e in session.events] == list(range(len(session.events)))


def test_the_surface_nodes_are_read_only() -> None:
    session = new_session()
    one_turn(session)
    nodes: Any = session.surface.nodes
    with pytest.raises((TypeError, AttributeError)):
        nodes[0] = 99
    with pytest.raises(AttributeError):
        nodes.append(99)
    surface: Any = session.surface
    with pytest.raises((AttributeError, TypeError)):
        surface.replace_generation = 3
    for name in ("apply", "advance", "check"):
        assert not hasattr(surface, name), name
    assert list(session.surface.nodes) == [2, 3, 5]


def test_derived_messages_are_read_only() -> None:
    session = new_session()
    one_turn(session)
    messages = session.derive_messages()
    message: Any = messages[0]
    with pytest.raises(TypeError):
        message.raw["id"] = "x"
    with pytest.raises((TypeError, AttributeError)):
        message.raw["content"].append({})
    with pytest.raises((TypeError, AttributeError)):
        message.id = "x"
    with pytest.raises((TypeError, AttributeError)):
        message.content[0].raw["text"] = "x"
    # Mutating the returned list does not touch the session's history.
    messages.clear()
    assert len(session.derive_messages()) == 3


def test_a_derived_message_cannot_be_rebound() -> None:
    """Message objects are shared with the session's cache: rebinding ``.raw`` must fail,
    otherwise every later ``derive_messages()`` hands out the tampered history."""
    session = new_session()
    one_turn(session)
    message: Any = session.derive_messages()[0]
    with pytest.raises((TypeError, AttributeError)):
        message.raw = {"id": "tampered"}
    assert session.derive_messages()[0].raw == session.events[2].data


def test_the_session_header_is_read_only() -> None:
    session = new_session()
    header: Any = session.header
    with pytest.raises((TypeError, AttributeError)):
        header.id = "other"
    assert session.id == "api-session"


# ---- derive_messages ------------------------------------------------------------------------


def test_derive_messages_reuses_message_objects_after_plain_appends() -> None:
    session = new_session()
    one_turn(session)
    first = session.derive_messages()
    second = session.derive_messages()
    assert first is not second
    assert all(a is b for a, b in zip(first, second, strict=True))
    one_turn(session, calls=0)
    third = session.derive_messages()
    assert all(a is b for a, b in zip(first, third[: len(first)], strict=False))
    assert [m.raw for m in third[len(first) :]] == [
        session.events[seq].data
        if session.events[seq].type == "user/message"
        else session.events[seq].data["message"]
        for seq in list(session.surface.nodes)[len(first) :]
        if not (
            session.events[seq].type == "assistant/message"
            and not session.events[seq].data["message"]["content"]
        )
    ]


def test_derive_messages_projects_only_new_nodes(monkeypatch: pytest.MonkeyPatch) -> None:
    session = new_session()
    for _ in range(50):
        one_turn(session, calls=2)
    session.derive_messages()
    calls: list[int] = []
    original = harness.surface.projection.project

    def counting(event: harness.Event) -> Mapping[str, Any] | None:
        calls.append(event.seq)
        return original(event)

    monkeypatch.setattr("harness.session.session.project", counting)
    session.append("user/message", harness.user_message("one more"), surface_op="append")
    messages = session.derive_messages()
    assert calls == [len(session.events) - 1]
    assert messages[-1].text == "one more"
    session.derive_messages()
    assert len(calls) == 1  # nothing new, nothing projected


def test_a_replace_rebuilds_the_history() -> None:
    session = new_session()
    one_turn(session)  # nodes 2 (user), 3 (assistant), 5 (tool result)
    before = session.derive_messages()
    assert len(before) == 3
    checkpoint = session.append(
        "user/message",
        harness.user_message("summary of the start", id="cp"),
        surface_op=harness.Replace(2, 5),
        source_event_seqs=[2, 3, 5],
    )
    assert list(session.surface.nodes) == [checkpoint.seq]
    assert session.surface.replace_generation == 1
    after = session.derive_messages()
    assert [m.id for m in after] == ["cp"]
    assert after[0].raw == checkpoint.data
    one_turn(session, calls=0)
    again = session.derive_messages()
    assert again[0] is after[0]
    assert [m.raw for m in again] == [
        m.raw
        for m in harness.Session.from_restore(
            session.id, list(session.events), session.header
        ).derive_messages()
    ]


def test_an_empty_assistant_message_is_a_node_without_a_message() -> None:
    session = new_session()
    session.append("user/message", harness.user_message("hi"), surface_op="append")
    session.append(
        "assistant/message",
        {"turn": 1, "step": 1, "message": harness.assistant_message([], provider="p", model="m")},
        surface_op="append",
        source_event_seqs=[],
    )
    assert list(session.surface.nodes) == [0, 1]
    assert [m.role for m in session.derive_messages()] == ["user"]


# ---- request headers ------------------------------------------------------------------------


def epoch(**raw: Any) -> harness.EpochHeader:
    return harness.EpochHeader(raw)


def test_fold_request_header_takes_the_latest() -> None:
    session = new_session()
    assert harness.fold_request_header(session.events) is None
    first = harness.EpochHeader.build(provider="p", model="a")
    second = harness.EpochHeader.build(provider="p", model="b", system="sys")
    session.append("request/header", {"header": dict(first.raw), "reason": "initial"})
    session.append("plugin/x", None)
    assert harness.fold_request_header(session.events) == first
    session.append("request/header", {"header": dict(second.raw), "reason": "change"})
    session.append("turn/start", {"turn": 1})
    folded = harness.fold_request_header(session.events)
    assert folded == second
    assert folded is not None and folded.model == "b" and folded.system == "sys"


def test_epoch_header_equality_ignores_config_key_order() -> None:
    a = epoch(config={"provider": "p", "model": "m", "maxTokens": 10, "reasoningEffort": "high"})
    b = epoch(config={"reasoningEffort": "high", "maxTokens": 10, "model": "m", "provider": "p"})
    assert a == b
    assert hash(a) == hash(b)


def test_epoch_header_canonical_form_drops_empty_parts() -> None:
    bare = epoch(config={"provider": "p", "model": "m"})
    assert bare == epoch(config={"provider": "p", "model": "m"}, system="")
    assert bare == epoch(config={"provider": "p", "model": "m"}, tools=[])
    assert bare == epoch(config={"provider": "p", "model": "m"}, adapterDefaults={})
    assert bare == epoch(config={"provider": "p", "model": "m"}, adapterDefaults={"maxTokens": False})
    assert bare == epoch(
        config={"provider": "p", "model": "m"},
        system="",
        tools=[],
        adapterDefaults={"reasoningEffort": False},
    )
    assert hash(bare) == hash(epoch(config={"provider": "p", "model": "m"}, system="", tools=[]))


def test_epoch_header_differences_are_changes() -> None:
    config = {"provider": "p", "model": "m", "maxTokens": 10}
    base = epoch(config=config)
    assert base != epoch(config={**config, "maxTokens": 11})
    assert base != epoch(config={**config, "temperature": 0.5})
    assert base != epoch(config={**config, "model": "n"})
    assert base != epoch(config=config, system="be brief")
    assert base != epoch(config=config, adapterDefaults={"maxTokens": True})
    assert base != epoch(config=config, tools=[{"name": "bash", "description": "", "parameters": {}}])


def test_epoch_header_compares_tools_in_order() -> None:
    bash = {"name": "bash", "description": "run", "parameters": {"type": "object"}}
    read = {"name": "read", "description": "read", "parameters": {"type": "object"}}
    config = {"provider": "p", "model": "m"}
    assert epoch(config=config, tools=[bash, read]) == epoch(config=config, tools=[dict(bash), dict(read)])
    assert epoch(config=config, tools=[bash, read]) != epoch(config=config, tools=[read, bash])
    changed = {**bash, "parameters": {"type": "object", "required": ["cmd"]}}
    assert epoch(config=config, tools=[bash]) != epoch(config=config, tools=[changed])


def test_epoch_header_compares_numbers_by_json_value() -> None:
    """JSON has one number type: ``1`` and ``1.0`` are the same value (the reference
    compares JavaScript numbers), so a re-read ``temperature: 1.0`` is not a change."""
    assert epoch(config={"provider": "p", "model": "m", "temperature": 1}) == epoch(
        config={"provider": "p", "model": "m", "temperature": 1.0}
    )


def test_epoch_header_is_read_only() -> None:
    header: Any = harness.EpochHeader.build(provider="p", model="m")
    with pytest.raises(TypeError):
        header.raw["config"] = {}
    with pytest.raises((TypeError, AttributeError)):
        header.raw = {"config": {"provider": "q", "model": "m"}}
    assert header.provider == "p"


def test_epoch_header_build_omits_absent_optionals() -> None:
    header = harness.EpochHeader.build(
        provider="p",
        model="m",
        max_tokens=256000,
        adapter_defaults={"maxTokens": True, "reasoningEffort": False},
    )
    assert harness.thaw(header.raw) == {
        "config": {"provider": "p", "model": "m", "maxTokens": 256000},
        "adapterDefaults": {"maxTokens": True},
    }


def test_classify_request_header() -> None:
    a = harness.EpochHeader.build(provider="p", model="m", system="s")
    same = epoch(system="s", config={"model": "m", "provider": "p"})
    other = harness.EpochHeader.build(provider="p", model="m", system="t")
    assert harness.classify_request_header(None, a, first_request_of_loop=True) == "initial"
    assert harness.classify_request_header(None, a, first_request_of_loop=False) == "initial"
    assert harness.classify_request_header(a, same, first_request_of_loop=True) == "resume"
    assert harness.classify_request_header(a, other, first_request_of_loop=True) == "resume"
    assert harness.classify_request_header(a, other, first_request_of_loop=False) == "change"
    assert harness.classify_request_header(a, same, first_request_of_loop=False) is None


# ---- build_request --------------------------------------------------------------------------


def test_build_request_freezes_header_and_history() -> None:
    session = new_session()
    tools = [{"name": "bash", "description": "Run a command", "parameters": {"type": "object"}}]
    header = harness.EpochHeader.build(provider="p", model="m", system="You are a coding agent.", tools=tools)
    session.append("request/header", {"header": dict(header.raw), "reason": "initial"})
    one_turn(session)
    options = harness.build_request(session)
    assert isinstance(options, harness.GenerateOptions)
    assert options.header == header
    assert options.system == "You are a coding agent."
    assert [harness.thaw(t) for t in options.tools] == tools
    assert options.config["model"] == "m"
    assert isinstance(options.messages, tuple)
    assert [m.raw for m in options.messages] == [m.raw for m in session.derive_messages()]
    assert options.session_id == session.id
    with pytest.raises((AttributeError, TypeError)):
        options.messages = ()  # type: ignore[misc]
    with pytest.raises((AttributeError, TypeError)):
        options.header = header  # type: ignore[misc]
    # Later appends do not reach a request already built.
    count = len(options.messages)
    one_turn(session)
    assert len(options.messages) == count
    assert len(harness.build_request(session).messages) > count


def test_build_request_with_an_explicit_header() -> None:
    session = new_session()
    session.append("user/message", harness.user_message("hi"), surface_op="append")
    header = harness.EpochHeader.build(provider="p", model="m")
    options = harness.build_request(session, header, purpose="compaction")
    assert options.header is header
    assert options.system is None
    assert options.tools == ()
    assert options.purpose == "compaction"
    assert [m.text for m in options.messages] == ["hi"]


def test_build_request_without_a_header_is_refused() -> None:
    session = new_session()
    session.append("user/message", harness.user_message("hi"), surface_op="append")
    with pytest.raises(harness.NoRequestHeader):
        harness.build_request(session)
    assert issubclass(harness.NoRequestHeader, harness.HarnessError)


# ---- the JSON codec -------------------------------------------------------------------------


def test_snapshot_freezes_and_refuses_with_a_path() -> None:
    frozen = harness.snapshot({"a": [1, {"b": "c"}]})
    assert isinstance(frozen, harness.FrozenDict)
    assert isinstance(frozen["a"], harness.FrozenList)
    assert frozen == {"a": (1, {"b": "c"})}
    assert harness.snapshot(frozen) is frozen
    for bad in [float("nan"), float("inf"), -0.0, {1}, (1,), 2**53, b"x", object()]:
        with pytest.raises(harness.InvalidEventData) as refusal:
            harness.snapshot({"message": {"content": [0, 1, {"x": bad}]}})
        assert refusal.value.path == "data.message.content[2].x"
    with pytest.raises(harness.InvalidEventData) as refusal:
        harness.snapshot({1: "x"})
    assert refusal.value.path == "data"


def test_append_names_the_path_of_bad_data() -> None:
    session = new_session()
    message = {
        "id": "u",
        "role": "user",
        "source": {"kind": "user"},
        "content": [{}, {}, {"x": float("nan")}],
    }
    with pytest.raises(harness.InvalidEventData) as refusal:
        session.append("user/message", {"message": message}, surface_op="append")
    assert refusal.value.path == "data.message.content[2].x"
    assert len(session.events) == 0


def test_dumps_is_compact_and_keeps_key_order() -> None:
    assert hjson.dumps({"z": 1, "a": [True, None], "m": {"y": "é", "b": 2}}) == (
        '{"z":1,"a":[true,null],"m":{"y":"é","b":2}}'.encode()
    )
    assert list(hjson.loads(b'{"z":1,"a":2,"m":3}')) == ["z", "a", "m"]


def test_a_lone_surrogate_is_escaped_and_decodes_back() -> None:
    assert hjson.dumps("\ud800") == b'"\\ud800"'
    assert hjson.loads(b'"\\ud800"') == "\ud800"
    assert hjson.loads(hjson.dumps({"t": "a\udfffb", "ok": "😀"})) == {"t": "a\udfffb", "ok": "😀"}
    session = new_session()
    # The log keeps a lone surrogate (JavaScript strings may hold one); user_message refuses
    # to make one, since no model request can carry it, so the JSON is spelled out here.
    message = {"id": "u", "role": "user", "content": [{"type": "text", "text": "x\ud800y"}],
               "source": {"kind": "user"}}
    event = session.append("user/message", message, surface_op="append")
    line = harness.encode_event(event)
    assert b"\\ud800" in line
    line.decode("utf-8")  # the bytes are valid UTF-8
    restored = harness.Session.from_restore(session.id, [hjson.loads(line)], session.header)
    assert restored.events[0] == event


@pytest.mark.parametrize(
    "text",
    ["NaN", "Infinity", "-Infinity", "[NaN]", '{"a":Infinity}', '["\\ud800",NaN]', '["\\ud800",-Infinity]'],
)
def test_loads_refuses_non_finite_numbers(text: str) -> None:
    with pytest.raises(ValueError):
        hjson.loads(text)
    with pytest.raises(ValueError):
        hjson.loads(text.encode())


def test_loads_refuses_malformed_json() -> None:
    for bad in [b"", b"{", b'{"a":1,}', b"[1 2]", b"\xff"]:
        with pytest.raises(ValueError):
            hjson.loads(bad)


def test_loads_gives_plain_mutable_values() -> None:
    value = hjson.loads(b'{"a":[1,{"b":2}]}')
    assert type(value) is dict
    assert type(value["a"]) is list
    value["a"].append(3)


# ---- the wire form of an event --------------------------------------------------------------


def test_event_to_json_uses_the_wire_key_order() -> None:
    session = new_session()
    session.append("user/message", harness.user_message("a", id="a"), surface_op="append")
    event = session.append(
        "user/message",
        harness.user_message("b", id="b"),
        surface_op=harness.Replace(0, 0),
        source_event_seqs=[0],
        ignorable=True,
    )
    wire = event.to_json()
    assert list(wire) == ["type", "seq", "time", "data", "sourceEventSeqs", "surfaceOp", "ignorable"]
    assert harness.thaw(wire["surfaceOp"]) == {"op": "replace", "start": 0, "end": 0}
    assert list(wire["surfaceOp"]) == ["op", "start", "end"]
    assert list(wire["sourceEventSeqs"]) == [0]
    assert wire["ignorable"] is True
    line = harness.encode_event(event)
    assert line.startswith(b'{"type":"user/message","seq":1,"time":')
    assert line.endswith(
        b',"sourceEventSeqs":[0],"surfaceOp":{"op":"replace","start":0,"end":0},"ignorable":true}'
    )
    assert list(hjson.loads(line)) == list(wire)


def test_event_to_json_omits_absent_fields() -> None:
    session = new_session()
    plain = session.append("turn/start", {"turn": 1})
    assert list(plain.to_json()) == ["type", "seq", "time", "data"]
    surface = session.append("user/message", harness.user_message("a"), surface_op="append")
    assert list(surface.to_json()) == ["type", "seq", "time", "data", "surfaceOp"]
    assert harness.encode_event(plain) == b'{"type":"turn/start","seq":0,"time":1000,"data":{"turn":1}}'


def test_an_ignorable_append_round_trips() -> None:
    session = new_session()
    session.append("turn/start", {"turn": 1})
    event = session.append("vendor/telemetry", {"k": [1, 2]}, ignorable=True)
    assert event.ignorable is True
    assert event.to_json()["ignorable"] is True
    for seed in (
        [e.to_json() for e in session.events],
        [hjson.loads(harness.encode_event(e)) for e in session.events],
        list(session.events),
    ):
        restored = harness.Session.from_restore(session.id, seed, session.header)
        assert restored.events[1] == event
        assert restored.events[1].ignorable is True
        assert restored.events[0].ignorable is False
        assert harness.encode_event(restored.events[1]) == harness.encode_event(event)


def test_ignorable_must_be_a_bool() -> None:
    session = new_session()
    with pytest.raises(harness.InvalidEvent):
        session.append("plugin/x", None, ignorable=1)  # type: ignore[arg-type]
    assert len(session.events) == 0

"""FORMAT §13 group D (cases 32–35): end-seed marker, lossless append, fork (FORMAT §0, §7.3, §7.7)."""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Callable
from typing import Any

import pytest

from harness import (
    Event,
    ForkError,
    InvalidEvent,
    InvalidEventData,
    InvalidSeed,
    Session,
    fork_seed,
    snapshot,
    thaw,
    user_message,
)

SESSION_ID = "seed-d"
HEADER: dict[str, Any] = {"version": 0, "id": SESSION_ID, "createdAt": 1, "cwd": "/home/ana/proj"}


# ---- local helpers ----------------------------------------------------------------------


def ticking(start: int = 1000) -> Callable[[], int]:
    counter = itertools.count(start)
    return lambda: next(counter)


def new_session(session_id: str = SESSION_ID) -> Session:
    return Session.create({**HEADER, "id": session_id}, clock=ticking())


def restore(seed: list[Any], *, clock: Callable[[], int] | None = None) -> Session:
    return Session.from_restore(SESSION_ID, seed, dict(HEADER), clock=clock or ticking(9000))


def wire(kind: str, seq: int, data: Any, **extra: Any) -> dict[str, Any]:
    return {"type": kind, "seq": seq, "time": 100 + seq, "data": data, **extra}


def closed_turn(session: Session, turn: int = 1) -> None:
    session.append("turn/start", {"turn": turn})
    session.append("user/message", user_message(f"hello {turn}", id=f"u-{turn}"), surface_op="append")
    session.append("turn/end", {"turn": turn, "reason": {"kind": "completed"}})


def log_state(session: Session) -> tuple[list[dict[str, Any]], list[int], int]:
    return (
        [event.to_json() for event in session.events],
        list(session.surface.nodes),
        session.surface.replace_generation,
    )


# ---- case 32 ----------------------------------------------------------------------------


def test_d32_fresh_session_has_no_events_and_empty_seed_gets_end_seed() -> None:
    """32. Fresh session → no events; empty seed → `[end-seed@0]`, firstLiveSeq 0; re-seeding that log → no new marker, firstLiveSeq 1."""  # noqa: E501
    fresh = Session.create()
    assert len(fresh.events) == 0
    assert list(fresh.events) == []
    assert fresh.first_live_seq == 0

    seeded = restore([], clock=lambda: 777)
    assert [event.to_json() for event in seeded.events] == [
        {"type": "session/end-seed", "seq": 0, "time": 777, "data": {}}
    ]
    marker = seeded.events[0]
    assert marker.surface_op is None
    assert marker.source_event_seqs is None
    assert seeded.first_live_seq == 0
    assert list(seeded.surface.nodes) == []


def test_d32_reseeding_a_log_that_ends_with_end_seed_adds_no_marker() -> None:
    """32. … re-seeding that log → no new marker, firstLiveSeq 1."""
    first = restore([], clock=lambda: 777)
    wire_log = [event.to_json() for event in first.events]
    again = restore(wire_log, clock=lambda: 888)
    assert [event.to_json() for event in again.events] == wire_log
    assert again.first_live_seq == 1
    # Event objects work as seed items too.
    again_from_events = restore(list(first.events), clock=lambda: 999)
    assert len(again_from_events.events) == 1
    assert again_from_events.first_live_seq == 1
    assert again_from_events.events[0].time == 777


# ---- case 33 ----------------------------------------------------------------------------


def test_d33_valid_seed_is_kept_and_end_seed_follows() -> None:
    """33. Valid 3-event seed → events 0–2 unchanged, end-seed at 3, firstLiveSeq 3."""
    seed = [
        wire("turn/start", 0, {"turn": 1}),
        wire("user/message", 1, thaw(user_message("hi", id="u-1")), surfaceOp="append"),
        wire("turn/end", 2, {"turn": 1, "reason": {"kind": "completed"}}),
    ]
    original = json.loads(json.dumps(seed))
    session = restore(seed, clock=lambda: 4242)
    assert len(session.events) == 4
    assert [event.to_json() for event in session.events[:3]] == original
    assert seed == original  # the caller's seed is not touched
    marker = session.events[3]
    assert (marker.type, marker.seq, marker.time, marker.data) == ("session/end-seed", 3, 4242, {})
    assert session.first_live_seq == 3
    assert list(session.surface.nodes) == [1]
    # The next append continues after the marker.
    assert session.append("turn/start", {"turn": 2}).seq == 4
    assert session.first_live_seq == 3


def test_d33_refused_seed_creates_nothing() -> None:
    """33. Valid 3-event seed → … (an invalid one is refused as a whole, naming index and rule)."""
    seed = [
        wire("turn/start", 0, {"turn": 1}),
        wire("user/message", 1, thaw(user_message("hi", id="u-1")), surfaceOp="append"),
        wire("turn/end", 5, {"turn": 1, "reason": {"kind": "completed"}}),
    ]
    with pytest.raises(InvalidSeed) as info:
        restore(seed)
    assert info.value.index == 2
    assert info.value.rule == "contiguity"


# ---- case 34 ----------------------------------------------------------------------------


class _Custom:
    pass


def _cyclic() -> list[Any]:
    items: list[Any] = [1]
    items.append(items)
    return items


BAD_DATA: list[tuple[str, Any, str]] = [
    ("nan", {"a": [0, {"b": float("nan")}]}, "data.a[1].b"),
    ("infinity", {"a": [0, {"b": math.inf}]}, "data.a[1].b"),
    ("minus-infinity", {"x": -math.inf}, "data.x"),
    ("negative-zero", {"a": {"z": -0.0}}, "data.a.z"),
    ("set", {"a": [{1, 2}]}, "data.a[0]"),
    ("frozenset", {"a": frozenset()}, "data.a"),
    ("plain-tuple", {"a": [0, (1, 2)]}, "data.a[1]"),
    ("custom-object", {"a": {"b": _Custom()}}, "data.a.b"),
    ("bytes", {"a": b"x"}, "data.a"),
    ("int-key", {"a": {1: "x"}}, "data.a"),
    ("bool-key", {"a": [{True: "x"}]}, "data.a[0]"),
    ("none-key", {None: 1}, "data"),
    ("too-big-int", {"a": [2**53]}, "data.a[0]"),
    ("too-small-int", {"a": -(2**53)}, "data.a"),
    ("top-level-nan", float("nan"), "data"),
]


@pytest.mark.parametrize(("value", "path"), [(v, p) for _, v, p in BAD_DATA], ids=[n for n, _, _ in BAD_DATA])
def test_d34_append_refuses_lossy_data_naming_the_path(value: Any, path: str) -> None:
    """34. Append data with NaN, Infinity, unsupported objects, sparse/cyclic structures → rejected; nested dense data → accepted."""  # noqa: E501
    session = new_session()
    closed_turn(session)
    before = log_state(session)
    with pytest.raises(InvalidEventData) as info:
        session.append("plugin/event", value)
    assert isinstance(info.value, InvalidEvent)
    assert info.value.path == path
    assert str(info.value).startswith(path)
    assert log_state(session) == before
    # Surface types are checked the same way, before any Surface rule.
    with pytest.raises(InvalidEventData):
        session.append("user/message", {"content": [], "x": value}, surface_op="append")
    assert log_state(session) == before


def test_d34_append_refuses_cyclic_data() -> None:
    """34. Append data with NaN, Infinity, unsupported objects, sparse/cyclic structures → rejected; nested dense data → accepted."""  # noqa: E501
    session = new_session()
    before = log_state(session)
    with pytest.raises(InvalidEventData) as info:
        session.append("plugin/event", {"a": _cyclic()})
    assert info.value.path.startswith("data.a")
    assert log_state(session) == before
    cyclic_dict: dict[str, Any] = {}
    cyclic_dict["self"] = cyclic_dict
    with pytest.raises(InvalidEventData) as info:
        session.append("plugin/event", {"b": cyclic_dict})
    assert info.value.path.startswith("data.b")
    assert log_state(session) == before


def test_d34_seed_refuses_lossy_data() -> None:
    """34. Append data with NaN, Infinity, unsupported objects … → rejected (seed: "not losslessly JSON-serializable")."""  # noqa: E501
    seed = [wire("turn/start", 0, {"turn": 1}), wire("plugin/event", 1, {"a": [math.nan]})]
    with pytest.raises(InvalidSeed) as info:
        restore(seed)
    assert info.value.index == 1
    assert info.value.rule == "lossless"
    assert "not losslessly JSON-serializable" in str(info.value)


def test_d34_nested_dense_data_is_accepted() -> None:
    """34. … nested dense data → accepted."""
    data: dict[str, Any] = {
        "a": [1, {"b": [None, True, False, 2**53 - 1, -(2**53 - 1), 0.5, 0.0, 3.0]}],
        "unicode": "开发 ✓ \U0001f600",
        "empty": {"list": [], "object": {}},
        "deep": [[[[{"x": [[["y"]]]}]]]],
    }
    expected = json.loads(json.dumps(data))
    session = new_session()
    event = session.append("plugin/event", data)
    assert event.seq == 0
    assert thaw(event.data) == expected
    assert json.loads(json.dumps(thaw(event.to_json()))) == {
        "type": "plugin/event",
        "seq": 0,
        "time": 1000,
        "data": expected,
    }
    # Null data and read-only values handed out by harness are accepted as well.
    assert session.append("plugin/event", None).data is None
    assert thaw(session.append("plugin/event", event.data).data) == expected
    assert thaw(session.append("plugin/event", snapshot([1, [2]])).data) == [1, [2]]


def test_d34_event_keeps_a_frozen_snapshot() -> None:
    """34. Append data … → accepted data is a snapshot: later caller mutation changes nothing; the event refuses mutation."""  # noqa: E501
    data: dict[str, Any] = {"a": [1, {"b": 2}], "c": {"d": "e"}}
    session = new_session()
    event = session.append("plugin/event", data)
    data["a"][1]["b"] = 3
    data["a"].append(4)
    data["c"]["d"] = "changed"
    data["new"] = True
    expected = {"a": [1, {"b": 2}], "c": {"d": "e"}}
    assert thaw(event.data) == expected
    assert thaw(session.events[0].data) == expected

    with pytest.raises(TypeError):
        event.data["x"] = 1
    with pytest.raises(TypeError):
        event.data["a"][1]["b"] = 9
    with pytest.raises(TypeError):
        event.data["a"][0] = 9
    with pytest.raises(TypeError):
        del event.data["c"]
    with pytest.raises(TypeError):
        event.data["c"].update({"d": "x"})
    with pytest.raises(TypeError):
        event.data.pop("a")
    with pytest.raises(AttributeError):
        event.data["a"].append(5)
    with pytest.raises(AttributeError):
        event.seq = 5  # type: ignore[misc]
    assert thaw(session.events[0].data) == expected


def test_d34_derived_messages_are_read_only() -> None:
    """34. … nothing returned by the session can be mutated (derived messages share the frozen data)."""
    session = new_session()
    raw = thaw(user_message("hi", id="u-1"))
    session.append("user/message", raw, surface_op="append")
    raw["content"][0]["text"] = "changed"
    [message] = session.derive_messages()
    assert message.text == "hi"
    with pytest.raises(TypeError):
        message.raw["id"] = "other"  # type: ignore[index]


# ---- case 35 ----------------------------------------------------------------------------


def test_d35_fork_inside_open_turn_is_refused() -> None:
    """35. Fork inside an open turn → `OPEN_TURN`; boundary = length or on an empty source → `INVALID_BOUNDARY`; …"""  # noqa: E501
    session = new_session()
    closed_turn(session)
    session.append("turn/start", {"turn": 2})
    session.append("step/start", {"turn": 2, "step": 1})
    before = log_state(session)
    with pytest.raises(ForkError) as info:
        session.fork()
    assert info.value.code == "OPEN_TURN"
    with pytest.raises(ForkError) as info:
        fork_seed(session.events)
    assert info.value.code == "OPEN_TURN"
    # A boundary inside the closed first turn is also open at that point.
    for boundary in (0, 1):
        with pytest.raises(ForkError) as info:
            session.fork(boundary)
        assert info.value.code == "OPEN_TURN"
    assert log_state(session) == before
    # The boundary at the first turn's end is fine.
    child = session.fork(2, id="child-open")
    assert [event.type for event in child.events] == [
        "turn/start",
        "user/message",
        "turn/end",
        "session/end-seed",
    ]


def test_d35_invalid_boundaries_are_refused() -> None:
    """35. … boundary = length or on an empty source → `INVALID_BOUNDARY`; …"""
    session = new_session()
    closed_turn(session)
    bad: list[Any] = [len(session.events), len(session.events) + 5, -1, 0.5, "1", True, 2**60]
    for boundary in bad:
        with pytest.raises(ForkError) as info:
            session.fork(boundary)
        assert info.value.code == "INVALID_BOUNDARY", boundary
        with pytest.raises(ForkError) as info:
            fork_seed(session.events, boundary)
        assert info.value.code == "INVALID_BOUNDARY", boundary

    empty = new_session("empty")
    with pytest.raises(ForkError) as info:
        empty.fork()
    assert info.value.code == "INVALID_BOUNDARY"
    with pytest.raises(ForkError) as info:
        fork_seed([])
    assert info.value.code == "INVALID_BOUNDARY"

    # An index whose event carries another seq is a mismatch.
    shifted = [
        Event.create("turn/start", 0, 1, {"turn": 1}),
        Event.create("turn/end", 7, 2, {"turn": 1, "reason": {}}),
    ]
    with pytest.raises(ForkError) as info:
        fork_seed(shifted, 1)
    assert info.value.code == "INVALID_BOUNDARY"


def test_d35_default_fork_copies_everything_then_end_seed() -> None:
    """35. … default fork → child has all events, `seedLength`, `parentSession`, then an end-seed."""
    parent = new_session()
    closed_turn(parent, 1)
    closed_turn(parent, 2)
    parent_log = [event.to_json() for event in parent.events]
    before = log_state(parent)

    child = parent.fork(id="child-1")
    assert child.id == "child-1"
    assert child.id != parent.id
    assert [event.to_json() for event in child.events[:6]] == parent_log
    assert len(child.events) == 7
    marker = child.events[6]
    assert (marker.type, marker.seq, marker.data) == ("session/end-seed", 6, {})
    assert child.first_live_seq == 6
    assert list(child.surface.nodes) == list(parent.surface.nodes) == [1, 4]
    assert child.header.parent_session == SESSION_ID
    assert child.header.seed_length == 6
    assert child.header.cwd == "/home/ana/proj"
    header_json = child.header.to_json()
    assert header_json["parentSession"] == SESSION_ID
    assert header_json["seedLength"] == 6
    assert header_json["cwd"] == "/home/ana/proj"
    # The parent is untouched, and the two logs evolve independently.
    assert log_state(parent) == before
    child.append("turn/start", {"turn": 3})
    assert len(parent.events) == 6

    seed = fork_seed(parent.events)
    assert [event.to_json() for event in seed] == parent_log


def test_d35_fork_at_boundary_takes_the_prefix() -> None:
    """35. … (Fork seed = source events `[0..boundary]`, FORMAT §7.7.)"""
    parent = new_session()
    closed_turn(parent, 1)
    closed_turn(parent, 2)
    child = parent.fork(2, id="child-2")
    assert [event.seq for event in child.events] == [0, 1, 2, 3]
    assert child.events[3].type == "session/end-seed"
    assert child.header.seed_length == 3
    assert child.header.parent_session == SESSION_ID
    assert child.first_live_seq == 3
    assert [event.seq for event in fork_seed(parent.events, 2)] == [0, 1, 2]

"""Crash repair only commits what loads again (issue 12 item 3; FORMAT §7.4, §8).

A turn a crash left open is closed on ``load`` by synthetic closers. When the log's
own values make those closers unloadable (a pending tool call whose id is missing,
empty or not a string; a turn that is not a positive integer) harness refuses the
session at load, as dsh does for the ids, and never commits a repair it could not
read back. The property: for any open-turn log, ``load`` either refuses it with a
typed error and leaves the file as it was, or commits closers after which the
session re-loads cleanly with nothing left to repair.
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import harness
from harness.errors import CorruptSession, UnsupportedFormat
from harness.stores.jsonl import JsonlBackend
from harness.stores.store import SessionStore
from tests.legacy_cases import HEADER, ev, jsonl
from tests.stores.test_jsonl_format import place

SID = "repair-prop"
MISSING: Any = object()  # a key left out
REFUSALS = (CorruptSession, UnsupportedFormat)


def present(**fields: Any) -> dict[str, Any]:
    """``fields`` without the ones set to ``MISSING``."""
    return {key: value for key, value in fields.items() if value is not MISSING}


def call_block(call_id: Any) -> dict[str, Any]:
    return present(type="tool-call", id=call_id, name="bash", arguments="{}")


def assistant(turn: Any, step: Any, call_ids: list[Any], message_id: str) -> dict[str, Any]:
    message = {
        "id": message_id,
        "role": "assistant",
        "source": {"kind": "model", "provider": "p", "model": "m"},
        "content": [call_block(call_id) for call_id in call_ids],
    }
    return ev("assistant/message", present(turn=turn, step=step, message=message), surfaceOp="append")


def result(turn: Any, step: Any, call_id: Any, message_id: str) -> dict[str, Any]:
    message = {
        "id": message_id,
        "role": "user",
        "source": present(kind="tool", callId=call_id),
        "content": [
            present(type="tool-result", toolCallId=call_id, content=[{"type": "text", "text": "ok"}])
        ],
    }
    return ev("tool/result", present(turn=turn, step=step, message=message), surfaceOp="append")


def turn_start(turn: Any) -> dict[str, Any]:
    return ev("turn/start", present(turn=turn))


def write(root: Path, events: list[dict[str, Any]]) -> Path:
    return place(root, jsonl(events, SID).encode(), "none", sid=SID, cwd=HEADER["cwd"])


def store(root: Path) -> SessionStore:
    return SessionStore(JsonlBackend(root, "none", threaded=False))


async def _load(root: Path) -> harness.Session:
    async with store(root) as opened:
        return await opened.load(SID)


async def _inspect(root: Path) -> harness.Session:
    async with store(root) as opened:
        return await opened.inspect(SID)


def load(root: Path) -> harness.Session:
    return asyncio.run(_load(root))


def inspect(root: Path) -> harness.Session:
    return asyncio.run(_inspect(root))


def open_step(*call_ids: Any, turn: Any = 1) -> list[dict[str, Any]]:
    return [
        turn_start(turn),
        ev("step/start", present(turn=turn, step=1)),
        assistant(turn, 1, list(call_ids), "a-1"),
    ]


# ---- the named cases ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "call_id", [MISSING, "", 7, None, 1.5], ids=["id-missing", "id-empty", "id-number", "id-null", "id-float"]
)
def test_pending_call_without_a_usable_id_is_refused_at_load(call_id: Any, tmp_path: Path) -> None:
    path = write(tmp_path, open_step(call_id))
    before = path.read_bytes()
    with pytest.raises(CorruptSession, match="crash repair"):
        load(tmp_path)
    assert path.read_bytes() == before  # nothing committed
    with pytest.raises(CorruptSession, match="crash repair"):
        inspect(tmp_path)


def test_started_pending_call_without_an_id_is_refused_too(tmp_path: Path) -> None:
    events = [
        *open_step(""),
        ev("tool/call", {"turn": 1, "step": 1, "callId": "", "name": "bash", "arguments": "{}"}),
    ]
    path = write(tmp_path, events)
    before = path.read_bytes()
    with pytest.raises(CorruptSession, match="must have tool source"):
        load(tmp_path)
    assert path.read_bytes() == before


def test_answered_or_closed_calls_without_ids_need_no_repair(tmp_path: Path) -> None:
    # The call's step ended: nothing is pending, so the repair is a plain turn/end.
    events = [*open_step(""), ev("step/end", {"turn": 1, "step": 1})]
    write(tmp_path, events)
    session = load(tmp_path)
    assert [e.type for e in session.events[-3:]] == ["turn/end", "harness/repair", "session/end-seed"]
    assert inspect(tmp_path).events[-3].type == "turn/end"  # as committed by the load


@pytest.mark.parametrize(
    "turn",
    [0, -1, "1", MISSING],
    ids=["turn-0", "turn-negative", "turn-string", "turn-missing"],
)
def test_open_turn_without_a_positive_turn_number_is_refused_at_load(turn: Any, tmp_path: Path) -> None:
    # Its closing turn/end would be a malformed turn/end on the next load (dsh's rule too).
    path = write(tmp_path, [turn_start(turn)])
    before = path.read_bytes()
    with pytest.raises(CorruptSession, match="crash repair"):
        load(tmp_path)
    assert path.read_bytes() == before


def test_turn_numbered_null_is_no_open_turn_as_in_dsh(tmp_path: Path) -> None:
    # dsh's repair scan reads {turn: null} as "no turn open": nothing to repair, it loads.
    path = write(tmp_path, [*open_step("c1", turn=None)])
    before = path.read_bytes()
    session = load(tmp_path)
    assert [e.type for e in session.events][-1] == "session/end-seed"
    assert path.read_bytes().startswith(before) and b'"tool/result"' not in path.read_bytes()


def test_open_turn_with_null_data_is_refused_at_load(tmp_path: Path) -> None:
    path = write(tmp_path, [ev("turn/start", None)])
    before = path.read_bytes()
    # refused for its null data wherever it stands (as dsh does), before any repair
    with pytest.raises(CorruptSession, match="turn/start at seq 0 has null data"):
        load(tmp_path)
    assert path.read_bytes() == before


def test_usable_pending_calls_are_answered_and_reload(tmp_path: Path) -> None:
    write(tmp_path, open_step("c1", "c2"))
    loaded = load(tmp_path)
    types = [e.type for e in loaded.events[3:]]
    closers = ["tool/result", "tool/result", "step/end", "turn/end", "harness/repair"]
    assert types == [*closers, "session/end-seed"]
    again = inspect(tmp_path)
    assert harness.repair_closers(list(again.events)) == []
    assert len(again.events) == len(loaded.events)


# ---- the property ---------------------------------------------------------------------------

CALL_IDS = st.one_of(
    st.sampled_from(["c1", "c2", "c3"]),
    st.sampled_from([MISSING, "", 0, 3, None, 2.5, ["c1"], {"id": "c1"}]),
)
TURNS = st.one_of(st.just(1), st.sampled_from([2, 1.0, 0, -3, "1", None, MISSING]))
STEPS = st.sampled_from([1, 2, 0, "s", None])


@st.composite
def open_turn_logs(draw: st.DrawFn) -> list[dict[str, Any]]:
    """A log whose last turn was left open by a crash at a random point."""
    events: list[dict[str, Any]] = []
    if draw(st.booleans()):
        events += [
            ev("turn/start", {"turn": 1}),
            ev("turn/end", {"turn": 1, "reason": {"kind": "completed"}}),
        ]
    turn = draw(TURNS)
    start = turn_start(turn)
    if draw(st.booleans()):  # the pre-react-loop form, normalised before the repair
        start["data"] = {**start["data"], "trigger": {"kind": "user"}}
    events.append(start)
    counter = 0
    for _ in range(draw(st.integers(0, 3))):
        step = draw(STEPS)
        events.append(ev("step/start", present(turn=turn, step=step)))
        calls = draw(st.lists(CALL_IDS, max_size=3))
        counter += 1
        reply = assistant(turn, step, calls, f"a-{counter}")
        if draw(st.booleans()):  # the pre-identity form: {content, provenance}
            message = reply["data"].pop("message")
            reply["data"] |= {"content": message["content"], "provenance": {"provider": "p", "model": "m"}}
        events.append(reply)
        for call_id in calls:
            if draw(st.booleans()):
                events.append(ev("tool/call", present(turn=turn, step=step, callId=call_id, name="bash")))
            if draw(st.booleans()):
                counter += 1
                events.append(result(turn, step, call_id, f"r-{counter}"))
        if draw(st.booleans()):
            events.append(ev("step/end", present(turn=turn, step=step)))
    if draw(st.booleans()):
        events.append(ev("session/title", {"title": "t"}))
    return events


def check_load_repair_inspect(events: list[dict[str, Any]]) -> None:
    """``load`` refuses (typed, file untouched) or repairs into a log that re-loads cleanly."""
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        path = write(root, events)
        before = path.read_bytes()
        try:
            loaded = load(root)
        except REFUSALS as error:
            assert path.read_bytes() == before
            with pytest.raises(type(error)):
                inspect(root)
            return
        again = inspect(root)
        assert harness.repair_closers(list(again.events)) == []
        assert [e.to_json() for e in again.events] == [e.to_json() for e in loaded.events]
        committed = path.read_bytes()
        load(root)  # a second load has nothing to repair and writes nothing
        assert path.read_bytes() == committed


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(open_turn_logs())
def test_load_then_repair_then_inspect_never_fails(events: list[dict[str, Any]]) -> None:
    check_load_repair_inspect(events)

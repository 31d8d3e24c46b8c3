"""FORMAT §13 group C (cases 19–31): the Surface rules (FORMAT §6, §7.2 step 8).

Every rule is exercised on both paths where FORMAT says "(seed or append)":
``Session.from_restore`` with wire dicts (``InvalidSeed`` naming index and rule) and
``Session.append`` (``SurfaceRuleError``). A refusal must leave the log, the nodes,
the replace generation and the derived messages exactly as they were.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import pytest

from harness import (
    Event,
    InvalidEvent,
    InvalidSeed,
    Message,
    Replace,
    Replacement,
    Session,
    SurfaceManager,
    SurfaceRuleError,
    assistant_message,
    fold_surface,
    snapshot,
    thaw,
    tool_result_message,
    user_message,
)

SESSION_ID = "surface-c"
HEADER: dict[str, Any] = {"version": 0, "id": SESSION_ID, "createdAt": 1}

State = tuple[list[dict[str, Any]], list[int], int, list[Message]]


# ---- local helpers ----------------------------------------------------------------------


def ticking(start: int = 1000) -> Callable[[], int]:
    counter = itertools.count(start)
    return lambda: next(counter)


def new_session() -> Session:
    return Session.create(dict(HEADER), clock=ticking())


def user_data(text: str = "hi", msg_id: str = "u-0") -> dict[str, Any]:
    data: dict[str, Any] = thaw(user_message(text, id=msg_id))
    return data


def assistant_data(text: str = "ok", msg_id: str = "a-0") -> dict[str, Any]:
    message = assistant_message(text, provider="deepseek-official", model="deepseek-v4-flash", id=msg_id)
    return {"turn": 1, "step": 1, "message": thaw(message)}


def tool_data(
    text: str = "42 a.txt",
    *,
    call_id: str = "call-1",
    msg_id: str = "t-1",
    is_error: bool | None = False,
    meta: Any = None,
) -> dict[str, Any]:
    data: dict[str, Any] = {
        "turn": 1,
        "step": 1,
        "message": thaw(tool_result_message(call_id, text, is_error=is_error, id=msg_id)),
    }
    if meta is not None:
        data["meta"] = meta
    return data


def wire(kind: str, seq: int, data: Any, **extra: Any) -> dict[str, Any]:
    """A wire event dict; ``extra`` holds ``surfaceOp``/``sourceEventSeqs``."""
    return {"type": kind, "seq": seq, "time": 1000 + seq, "data": data, **extra}


def replace_op(start: int, end: int) -> dict[str, Any]:
    return {"op": "replace", "start": start, "end": end}


def restore(seed: list[dict[str, Any]]) -> Session:
    return Session.from_restore(SESSION_ID, seed, dict(HEADER), clock=ticking(5000))


def refused_seed(seed: list[dict[str, Any]], index: int, fragment: str) -> InvalidSeed:
    with pytest.raises(InvalidSeed) as info:
        restore(seed)
    error = info.value
    assert error.index == index
    assert error.rule == "surface"
    assert fragment in str(error)
    return error


def state(session: Session) -> State:
    return (
        [event.to_json() for event in session.events],
        list(session.surface.nodes),
        session.surface.replace_generation,
        session.derive_messages(),
    )


def refused_append(session: Session, fragment: str, kind: str, data: Any, **kwargs: Any) -> SurfaceRuleError:
    before = state(session)
    with pytest.raises(SurfaceRuleError) as info:
        session.append(kind, data, **kwargs)
    assert isinstance(info.value, InvalidEvent)
    assert fragment in str(info.value)
    assert state(session) == before
    return info.value


def two_user_nodes() -> Session:
    session = new_session()
    session.append("user/message", user_data("one", "u-0"), surface_op="append")
    session.append("user/message", user_data("two", "u-1"), surface_op="append")
    return session


TWO_USER_SEED: list[dict[str, Any]] = [
    wire("user/message", 0, user_data("one", "u-0"), surfaceOp="append"),
    wire("user/message", 1, user_data("two", "u-1"), surfaceOp="append"),
]


# ---- case 19 ----------------------------------------------------------------------------


def test_c19_user_message_without_surface_op_seed_is_refused() -> None:
    """19. user/message without surfaceOp (seed or append) → "requires a surfaceOp marker"; log unchanged."""
    seed = [wire("turn/start", 0, {"turn": 1}), wire("user/message", 1, user_data())]
    error = refused_seed(seed, 1, "requires a surfaceOp marker")
    assert "index 1" in str(error)


def test_c19_user_message_without_surface_op_append_is_refused() -> None:
    """19. user/message without surfaceOp (seed or append) → "requires a surfaceOp marker"; log unchanged."""
    session = new_session()
    session.append("turn/start", {"turn": 1})
    refused_append(session, "requires a surfaceOp marker", "user/message", user_data())
    for kind, data in (("assistant/message", assistant_data()), ("tool/result", tool_data())):
        refused_append(session, "requires a surfaceOp marker", kind, data)
    assert len(session.events) == 1
    assert list(session.surface.nodes) == []


# ---- case 20 ----------------------------------------------------------------------------


def test_c20_turn_start_cannot_carry_surface_fields_seed() -> None:
    """20. turn/start with `sourceEventSeqs` / `surfaceOp` → "cannot carry …"."""
    refused_seed([wire("turn/start", 0, {"turn": 1}, surfaceOp="append")], 0, "cannot carry")
    refused_seed([wire("turn/start", 0, {"turn": 1}, sourceEventSeqs=[])], 0, "cannot carry")
    refused_seed([*TWO_USER_SEED, wire("turn/start", 2, {"turn": 1}, sourceEventSeqs=[0])], 2, "cannot carry")


def test_c20_turn_start_cannot_carry_surface_fields_append() -> None:
    """20. turn/start with `sourceEventSeqs` / `surfaceOp` → "cannot carry …"."""
    session = two_user_nodes()
    refused_append(session, "cannot carry", "turn/start", {"turn": 1}, surface_op="append")
    refused_append(session, "cannot carry", "turn/start", {"turn": 1}, surface_op=Replace(0, 0))
    refused_append(session, "cannot carry", "turn/start", {"turn": 1}, source_event_seqs=[0])
    refused_append(session, "cannot carry", "turn/start", {"turn": 1}, source_event_seqs=[])
    assert session.append("turn/start", {"turn": 1}).seq == 2


def test_c20_turn_start_with_null_surface_fields_in_seed_is_refused() -> None:
    """20. turn/start with `sourceEventSeqs` / `surfaceOp` → "cannot carry …" (a present JSON null is carried)."""  # noqa: E501
    refused_seed([wire("turn/start", 0, {"turn": 1}, surfaceOp=None)], 0, "cannot carry")
    refused_seed([wire("turn/start", 0, {"turn": 1}, sourceEventSeqs=None)], 0, "cannot carry")


# ---- case 21 ----------------------------------------------------------------------------


def test_c21_sources_must_be_an_array_and_non_empty_seed() -> None:
    """21. sources `"x"` → "must be an array"; `[]` on user/message → "must not be empty"; `[]` on assistant/message → ok."""  # noqa: E501
    refused_seed(
        [wire("user/message", 0, user_data(), surfaceOp="append", sourceEventSeqs="x")], 0, "must be an array"
    )
    refused_seed(
        [wire("user/message", 0, user_data(), surfaceOp="append", sourceEventSeqs={"0": 0})],
        0,
        "must be an array",
    )
    refused_seed(
        [wire("user/message", 0, user_data(), surfaceOp="append", sourceEventSeqs=[])], 0, "must not be empty"
    )
    refused_seed(
        [wire("tool/result", 0, tool_data(), surfaceOp="append", sourceEventSeqs=[])], 0, "must not be empty"
    )
    session = restore(
        [wire("assistant/message", 0, assistant_data(), surfaceOp="append", sourceEventSeqs=[])]
    )
    assert session.events[0].source_event_seqs == ()
    assert session.events[0].to_json()["sourceEventSeqs"] == []
    assert list(session.surface.nodes) == [0]


def test_c21_sources_must_be_an_array_and_non_empty_append() -> None:
    """21. sources `"x"` → "must be an array"; `[]` on user/message → "must not be empty"; `[]` on assistant/message → ok."""  # noqa: E501
    session = new_session()
    refused_append(
        session, "must be an array", "user/message", user_data(), surface_op="append", source_event_seqs="x"
    )
    refused_append(
        session, "must not be empty", "user/message", user_data(), surface_op="append", source_event_seqs=[]
    )
    refused_append(
        session, "must not be empty", "tool/result", tool_data(), surface_op="append", source_event_seqs=[]
    )
    event = session.append("assistant/message", assistant_data(), surface_op="append", source_event_seqs=[])
    assert event.seq == 0
    assert event.source_event_seqs == ()
    assert list(session.surface.nodes) == [0]


# ---- case 22 ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sources", "fragment"),
    [
        ([0, 0], "duplicates"),
        (["0"], "non-negative safe integers"),
        ([0.5], "non-negative safe integers"),
        ([-1], "non-negative safe integers"),
        ([True], "non-negative safe integers"),
        ([2.0**53], "non-negative safe integers"),
        ([1], "must reference earlier events"),
        ([0, 2], "must reference earlier events"),
    ],
)
def test_c22_source_items_checked_seed(sources: list[Any], fragment: str) -> None:
    """22. sources `[0,0]` → duplicates; `["0"]`, `[0.5]`, `[-1]` → non-negative safe integers; own seq → "must reference earlier events"."""  # noqa: E501
    seed = [
        wire("turn/start", 0, {"turn": 1}),
        wire("user/message", 1, user_data(), surfaceOp="append", sourceEventSeqs=sources),
    ]
    refused_seed(seed, 1, fragment)


@pytest.mark.parametrize(
    ("sources", "fragment"),
    [
        ([0, 0], "duplicates"),
        (["0"], "non-negative safe integers"),
        ([0.5], "non-negative safe integers"),
        ([-1], "non-negative safe integers"),
        ([2**53], "non-negative safe integers"),
        ([1], "must reference earlier events"),
        ([5], "must reference earlier events"),
    ],
)
def test_c22_source_items_checked_append(sources: list[Any], fragment: str) -> None:
    """22. sources `[0,0]` → duplicates; `["0"]`, `[0.5]`, `[-1]` → non-negative safe integers; own seq → "must reference earlier events"."""  # noqa: E501
    session = new_session()
    session.append("turn/start", {"turn": 1})
    refused_append(
        session, fragment, "user/message", user_data(), surface_op="append", source_event_seqs=sources
    )


def test_c22_source_check_order_follows_format() -> None:
    """22. sources `[0,0]` → duplicates; … own seq → "must reference earlier events" (checked in FORMAT's order)."""  # noqa: E501
    session = new_session()
    session.append("turn/start", {"turn": 1})
    # non-negative safe integers is checked before duplicates, duplicates before "earlier".
    refused_append(
        session,
        "non-negative safe integers",
        "user/message",
        user_data(),
        surface_op="append",
        source_event_seqs=[7, 7, -1],
    )
    refused_append(
        session, "duplicates", "user/message", user_data(), surface_op="append", source_event_seqs=[7, 7]
    )


def test_c22_integral_float_sources_are_accepted_as_integers() -> None:
    """22. sources … non-negative safe integers (readers accept an integral float `0.0`, FORMAT §0)."""
    session = restore(
        [
            wire("turn/start", 0, {"turn": 1}),
            wire("user/message", 1, user_data(), surfaceOp="append", sourceEventSeqs=[0.0]),
        ]
    )
    assert session.events[1].source_event_seqs == (0,)
    assert type(session.events[1].source_event_seqs[0]) is int


# ---- case 23 ----------------------------------------------------------------------------


def test_c23_replace_must_cite_every_shadowed_node_seed() -> None:
    """23. Replace `{0,1}` citing `[0]` → "missing 1"; citing `[0,1]` → nodes `[2]`, generation 1."""
    bad = wire("user/message", 2, user_data("sum", "u-2"), surfaceOp=replace_op(0, 1), sourceEventSeqs=[0])
    error = refused_seed([*TWO_USER_SEED, bad], 2, "missing 1")
    assert "missing 0" not in str(error)
    good = wire(
        "user/message", 2, user_data("sum", "u-2"), surfaceOp=replace_op(0, 1), sourceEventSeqs=[0, 1]
    )
    session = restore([*TWO_USER_SEED, good])
    assert list(session.surface.nodes) == [2]
    assert session.surface.replace_generation == 1
    assert session.events[2].surface_op == Replace(0, 1)


def test_c23_replace_must_cite_every_shadowed_node_append() -> None:
    """23. Replace `{0,1}` citing `[0]` → "missing 1"; citing `[0,1]` → nodes `[2]`, generation 1."""
    session = two_user_nodes()
    refused_append(
        session,
        "missing 1",
        "user/message",
        user_data("sum", "u-2"),
        surface_op=replace_op(0, 1),
        source_event_seqs=[0],
    )
    # No sources at all: every shadowed node is missing.
    refused_append(session, "missing 0, 1", "user/message", user_data("sum", "u-2"), surface_op=Replace(0, 1))
    event = session.append(
        "user/message", user_data("sum", "u-2"), surface_op=replace_op(0, 1), source_event_seqs=[0, 1]
    )
    assert event.seq == 2
    assert event.surface_op == Replace(0, 1)
    assert event.to_json()["surfaceOp"] == {"op": "replace", "start": 0, "end": 1}
    assert list(session.surface.nodes) == [2]
    assert session.surface.replace_generation == 1
    assert [m.id for m in session.derive_messages()] == ["u-2"]


# ---- case 24 ----------------------------------------------------------------------------


def test_c24_replace_bounds_must_be_current_nodes_seed() -> None:
    """24. Replace with absent start 42 → "start seq 42 not found in surface"; absent end → "end seq … not found"; start after end → "is after end"."""  # noqa: E501
    refused_seed(
        [
            *TWO_USER_SEED,
            wire("user/message", 2, user_data(), surfaceOp=replace_op(42, 1), sourceEventSeqs=[1]),
        ],
        2,
        "start seq 42 not found in surface",
    )
    error = refused_seed(
        [
            *TWO_USER_SEED,
            wire("user/message", 2, user_data(), surfaceOp=replace_op(0, 43), sourceEventSeqs=[0]),
        ],
        2,
        "end seq 43",
    )
    assert "not found" in str(error)
    refused_seed(
        [
            *TWO_USER_SEED,
            wire("user/message", 2, user_data(), surfaceOp=replace_op(1, 0), sourceEventSeqs=[0, 1]),
        ],
        2,
        "is after end",
    )


def test_c24_replace_bounds_must_be_current_nodes_append() -> None:
    """24. Replace with absent start 42 → "start seq 42 not found in surface"; absent end → "end seq … not found"; start after end → "is after end"."""  # noqa: E501
    session = two_user_nodes()
    refused_append(
        session,
        "start seq 42 not found in surface",
        "user/message",
        user_data(),
        surface_op=replace_op(42, 1),
        source_event_seqs=[1],
    )
    error = refused_append(
        session, "end seq 43", "user/message", user_data(), surface_op=Replace(0, 43), source_event_seqs=[0]
    )
    assert "not found" in str(error)
    refused_append(
        session,
        "is after end",
        "user/message",
        user_data(),
        surface_op=replace_op(1, 0),
        source_event_seqs=[0, 1],
    )
    # A seq that exists in the log but is no longer a node is "not found" as well.
    session.append("user/message", user_data("r", "u-2"), surface_op=Replace(0, 0), source_event_seqs=[0])
    refused_append(
        session,
        "start seq 0 not found in surface",
        "user/message",
        user_data(),
        surface_op=Replace(0, 1),
        source_event_seqs=[0, 1],
    )


def test_c24_bounds_are_located_before_sources_are_checked() -> None:
    """24. Replace with absent start 42 → "start seq 42 not found in surface" (positions are located before sources are checked)."""  # noqa: E501
    session = two_user_nodes()
    refused_append(
        session,
        "start seq 42 not found in surface",
        "user/message",
        user_data(),
        surface_op=replace_op(42, 1),
        source_event_seqs="x",
    )


# ---- case 25 ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "op",
    [
        {"op": "replace", "start": 0, "end": 0, "extra": 1},
        {"op": "swap", "start": 0, "end": 0},
        {"op": "replace", "start": 0},
        {"start": 0, "end": 0},
        {"op": "replace", "start": -1, "end": 0},
        {"op": "replace", "start": 0, "end": 0.5},
        {"op": "replace", "start": "0", "end": 0},
        {"op": "replace", "start": True, "end": 0},
    ],
)
def test_c25_malformed_replace_object_is_refused(op: dict[str, Any]) -> None:
    """25. Replace object with an extra key or `op:"swap"` → "invalid replace surfaceOp"."""
    refused_seed(
        [*TWO_USER_SEED, wire("user/message", 2, user_data(), surfaceOp=op, sourceEventSeqs=[0])],
        2,
        "invalid replace surfaceOp",
    )
    session = two_user_nodes()
    refused_append(
        session,
        "invalid replace surfaceOp",
        "user/message",
        user_data(),
        surface_op=op,
        source_event_seqs=[0],
    )


def test_c25_invalid_replace_value_object_on_append() -> None:
    """25. Replace object with an extra key or `op:"swap"` → "invalid replace surfaceOp" (also a `Replace` with a negative bound)."""  # noqa: E501
    session = two_user_nodes()
    refused_append(
        session,
        "invalid replace surfaceOp",
        "user/message",
        user_data(),
        surface_op=Replace(-1, 0),
        source_event_seqs=[0],
    )


@pytest.mark.parametrize("op", ["prepend", [], ["append"], 1, "APPEND"])
def test_c25_non_object_surface_op_is_invalid(op: Any) -> None:
    """25. (FORMAT §6 step 3) null/array/other surfaceOp → "invalid surfaceOp"."""
    error = refused_seed([wire("user/message", 0, user_data(), surfaceOp=op)], 0, "invalid surfaceOp")
    assert "requires a surfaceOp marker" not in str(error)
    session = new_session()
    refused_append(session, "invalid surfaceOp", "user/message", user_data(), surface_op=op)


def test_c25_null_surface_op_in_seed_is_invalid_not_missing() -> None:
    """25. (FORMAT §6 step 3) a present `surfaceOp: null` → "invalid surfaceOp", not "requires a surfaceOp marker"."""  # noqa: E501
    error = refused_seed([wire("user/message", 0, user_data(), surfaceOp=None)], 0, "invalid surfaceOp")
    assert "requires a surfaceOp marker" not in str(error)


# ---- case 26 ----------------------------------------------------------------------------


def nested_replacement_session() -> Session:
    session = two_user_nodes()
    session.append("user/message", user_data("r1", "u-2"), surface_op=Replace(0, 0), source_event_seqs=[0])
    assert list(session.surface.nodes) == [2, 1]
    session.append(
        "user/message", user_data("r2", "u-3"), surface_op=replace_op(2, 1), source_event_seqs=[2, 1]
    )
    return session


def test_c26_nested_replacement_folds_to_one_node() -> None:
    """26. Nested replacement (section 6 example) → nodes `[3]`; fold lists `{2,0,0,[0]}`, `{3,2,1,[2,1]}`."""
    session = nested_replacement_session()
    assert list(session.surface.nodes) == [3]
    assert session.surface.replace_generation == 2
    assert [m.id for m in session.derive_messages()] == ["u-3"]

    fold = fold_surface(session.events)
    assert list(fold.nodes) == [3]
    assert fold.replace_generation == 2
    assert list(fold.replacements) == [Replacement(2, 0, 0, (0,)), Replacement(3, 2, 1, (2, 1))]
    first, second = fold.replacements
    assert (first.seq, first.start, first.end, list(first.shadowed_seqs)) == (2, 0, 0, [0])
    assert (second.seq, second.start, second.end, list(second.shadowed_seqs)) == (3, 2, 1, [2, 1])


def test_c26_nested_replacement_restores_from_seed() -> None:
    """26. Nested replacement (section 6 example) → nodes `[3]`; fold lists `{2,0,0,[0]}`, `{3,2,1,[2,1]}`."""
    seed = [event.to_json() for event in nested_replacement_session().events]
    session = restore(seed)
    assert list(session.surface.nodes) == [3]
    assert session.surface.replace_generation == 2
    fold = fold_surface(session.events)
    assert list(fold.nodes) == [3]
    assert list(fold.replacements) == [Replacement(2, 0, 0, (0,)), Replacement(3, 2, 1, (2, 1))]


# ---- case 27 ----------------------------------------------------------------------------


def test_c27_tool_result_replace_must_shadow_one_tool_result_seed() -> None:
    """27. tool/result replace over two nodes → "exactly one current node"; over a user/message → "must target a current tool/result"."""  # noqa: E501
    two_tools = [
        wire("tool/result", 0, tool_data(call_id="c-0", msg_id="t-0"), surfaceOp="append"),
        wire("tool/result", 1, tool_data(call_id="c-1", msg_id="t-1"), surfaceOp="append"),
    ]
    refused_seed(
        [
            *two_tools,
            wire(
                "tool/result",
                2,
                tool_data("x", call_id="c-0", msg_id="t-0"),
                surfaceOp=replace_op(0, 1),
                sourceEventSeqs=[0, 1],
            ),
        ],
        2,
        "exactly one current node",
    )
    refused_seed(
        [
            wire("user/message", 0, user_data(), surfaceOp="append"),
            wire("tool/result", 1, tool_data(), surfaceOp=replace_op(0, 0), sourceEventSeqs=[0]),
        ],
        1,
        "must target a current tool/result",
    )


def test_c27_tool_result_replace_must_shadow_one_tool_result_append() -> None:
    """27. tool/result replace over two nodes → "exactly one current node"; over a user/message → "must target a current tool/result"."""  # noqa: E501
    session = new_session()
    session.append("tool/result", tool_data(call_id="c-0", msg_id="t-0"), surface_op="append")
    session.append("tool/result", tool_data(call_id="c-1", msg_id="t-1"), surface_op="append")
    session.append("user/message", user_data(), surface_op="append")
    session.append("assistant/message", assistant_data(), surface_op="append")
    refused_append(
        session,
        "exactly one current node",
        "tool/result",
        tool_data("x", call_id="c-0", msg_id="t-0"),
        surface_op=Replace(0, 1),
        source_event_seqs=[0, 1],
    )
    refused_append(
        session,
        "must target a current tool/result",
        "tool/result",
        tool_data(),
        surface_op=Replace(2, 2),
        source_event_seqs=[2],
    )
    refused_append(
        session,
        "must target a current tool/result",
        "tool/result",
        tool_data(),
        surface_op=Replace(3, 3),
        source_event_seqs=[3],
    )
    # Sources are checked before the tool-result rule (FORMAT §6 step 5).
    refused_append(
        session,
        "missing 1",
        "tool/result",
        tool_data("x", call_id="c-0", msg_id="t-0"),
        surface_op=Replace(0, 1),
        source_event_seqs=[0],
    )


# ---- case 28 ----------------------------------------------------------------------------


def _original_tool() -> dict[str, Any]:
    return tool_data("a very long tool output", meta={"lines": [1, 2], "ok": True})


def _changed_call_id(data: dict[str, Any]) -> None:
    data["message"] = thaw(tool_result_message("call-2", "short", is_error=False, id="t-1"))


def _changed_is_error(data: dict[str, Any]) -> None:
    data["message"]["content"][0]["isError"] = True


def _dropped_is_error(data: dict[str, Any]) -> None:
    del data["message"]["content"][0]["isError"]


def _changed_message_id(data: dict[str, Any]) -> None:
    data["message"]["id"] = "t-other"


def _changed_meta_element(data: dict[str, Any]) -> None:
    data["meta"]["lines"][1] = 3


def _changed_step(data: dict[str, Any]) -> None:
    data["step"] = 2


def _added_error(data: dict[str, Any]) -> None:
    data["error"] = {"name": "AbortError", "code": "ABORTED_BEFORE_DISPATCH"}


def _added_unknown_field(data: dict[str, Any]) -> None:
    data["extra"] = 1


def _changed_source(data: dict[str, Any]) -> None:
    data["message"]["source"]["extra"] = "x"


REWRITE_VIOLATIONS: list[Callable[[dict[str, Any]], None]] = [
    _changed_call_id,
    _changed_is_error,
    _dropped_is_error,
    _changed_message_id,
    _changed_meta_element,
    _changed_step,
    _added_error,
    _added_unknown_field,
    _changed_source,
]


def _rewritten(change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    data = _original_tool()
    data["message"]["content"][0]["content"] = [{"type": "text", "text": "short"}]
    change(data)
    return data


@pytest.mark.parametrize("change", REWRITE_VIOLATIONS, ids=lambda f: f.__name__.strip("_"))
def test_c28_tool_result_rewrite_may_change_only_content_seed(
    change: Callable[[dict[str, Any]], None],
) -> None:
    """28. tool/result replace changing callId, `isError`, message id or a meta element → "may change only content"."""  # noqa: E501
    seed = [
        wire("tool/result", 0, _original_tool(), surfaceOp="append"),
        wire("tool/result", 1, _rewritten(change), surfaceOp=replace_op(0, 0), sourceEventSeqs=[0]),
    ]
    refused_seed(seed, 1, "may change only content")


@pytest.mark.parametrize("change", REWRITE_VIOLATIONS, ids=lambda f: f.__name__.strip("_"))
def test_c28_tool_result_rewrite_may_change_only_content_append(
    change: Callable[[dict[str, Any]], None],
) -> None:
    """28. tool/result replace changing callId, `isError`, message id or a meta element → "may change only content"."""  # noqa: E501
    session = new_session()
    session.append("tool/result", _original_tool(), surface_op="append")
    refused_append(
        session,
        "may change only content",
        "tool/result",
        _rewritten(change),
        surface_op=Replace(0, 0),
        source_event_seqs=[0],
    )


def test_c28_meta_number_to_boolean_is_a_change() -> None:
    """28. tool/result replace changing … a meta element → "may change only content" (`1` → `true` is a change in JSON)."""  # noqa: E501
    session = new_session()
    session.append("tool/result", tool_data(meta={"n": 1}), surface_op="append")
    changed = tool_data("short", meta={"n": True})
    refused_append(
        session,
        "may change only content",
        "tool/result",
        changed,
        surface_op=Replace(0, 0),
        source_event_seqs=[0],
    )
    seed = [
        wire("tool/result", 0, tool_data(meta={"n": 1}), surfaceOp="append"),
        wire("tool/result", 1, changed, surfaceOp=replace_op(0, 0), sourceEventSeqs=[0]),
    ]
    refused_seed(seed, 1, "may change only content")


def test_c28_equal_meta_new_inner_text_is_accepted() -> None:
    """28. … equal meta, new inner text → ok."""
    session = new_session()
    session.append("tool/result", _original_tool(), surface_op="append")
    new = _rewritten(lambda data: None)
    event = session.append("tool/result", new, surface_op=Replace(0, 0), source_event_seqs=[0])
    assert event.seq == 1
    assert list(session.surface.nodes) == [1]
    assert session.surface.replace_generation == 1
    [message] = session.derive_messages()
    assert message.id == "t-1"
    assert thaw(message.raw["content"][0]["content"]) == [{"type": "text", "text": "short"}]
    # The same rewrite also passes on the seed path.
    seed = [
        wire("tool/result", 0, _original_tool(), surfaceOp="append"),
        wire(
            "tool/result", 1, _rewritten(lambda data: None), surfaceOp=replace_op(0, 0), sourceEventSeqs=[0]
        ),
    ]
    restored = restore(seed)
    assert list(restored.surface.nodes) == [1]
    assert restored.surface.replace_generation == 1


# ---- case 29 ----------------------------------------------------------------------------

B = 400_000


def _window_event(seq: int, kind: str, data: Any, op: Any, sources: tuple[int, ...] | None) -> Event:
    return Event.create(kind, seq, 2000 + seq - B, snapshot(data), op, sources)


def test_c29_window_mode_folds_from_base_seq() -> None:
    """29. Window B=400000: append, append, replace `{B,B}` → `[B+2, B+1]`; a replace naming B−1 → not found."""  # noqa: E501
    events: list[Event] = []
    manager = SurfaceManager(events, base_seq=B)
    assert manager.next_seq == B

    def feed(event: Event) -> None:
        manager.advance(event)
        events.append(event)

    feed(
        _window_event(
            B, "tool/result", tool_data("long output", call_id="w-1", msg_id="tw-1"), "append", None
        )
    )
    feed(_window_event(B + 1, "user/message", user_data("next", "uw-1"), "append", None))
    # A tool/result rewrite looks its original up at seq − B.
    rewrite = tool_data("short", call_id="w-1", msg_id="tw-1")
    feed(_window_event(B + 2, "tool/result", rewrite, Replace(B, B), (B,)))
    assert list(manager.nodes) == [B + 2, B + 1]
    assert manager.replace_generation == 1

    below = _window_event(B + 3, "user/message", user_data("r", "uw-2"), Replace(B - 1, B - 1), (B - 1,))
    with pytest.raises(SurfaceRuleError) as info:
        manager.validate_next(below)
    assert f"start seq {B - 1} not found in surface" in str(info.value)
    assert list(manager.nodes) == [B + 2, B + 1]
    assert manager.replace_generation == 1
    assert manager.next_seq == B + 3

    fold = fold_surface(events, base_seq=B)
    assert list(fold.nodes) == [B + 2, B + 1]
    assert fold.replace_generation == 1
    assert list(fold.replacements) == [Replacement(B + 2, B, B, (B,))]


def test_c29_window_mode_expects_base_seq_first() -> None:
    """29. Window B=400000: … a fold over a window starting at seq B expects B, B+1, …"""
    manager = SurfaceManager([], base_seq=B)
    with pytest.raises(SurfaceRuleError, match="not contiguous"):
        manager.validate_next(_window_event(0, "user/message", user_data(), "append", None))
    assert manager.next_seq == B
    assert list(manager.nodes) == []


def test_c29_window_tool_result_rewrite_rule_reads_original_at_offset() -> None:
    """29. Window B=400000: … originals are looked up at `seq − B`."""
    events: list[Event] = []
    manager = SurfaceManager(events, base_seq=B)
    first = _window_event(B, "tool/result", tool_data("long", call_id="w-1", msg_id="tw-1"), "append", None)
    manager.advance(first)
    events.append(first)
    changed = tool_data("short", call_id="w-1", msg_id="tw-other")
    with pytest.raises(SurfaceRuleError, match="may change only content"):
        manager.validate_next(_window_event(B + 1, "tool/result", changed, Replace(B, B), (B,)))


# ---- case 30 ----------------------------------------------------------------------------


def test_c30_empty_assistant_message_is_a_node_without_projection() -> None:
    """30. Empty-content assistant/message: node kept, no projected message; log-only events never change history."""  # noqa: E501
    session = new_session()
    session.append("user/message", user_data("hi", "u-0"), surface_op="append")
    empty = assistant_data(msg_id="a-empty")
    empty["message"]["content"] = []
    session.append("assistant/message", empty, surface_op="append", source_event_seqs=[])
    assert list(session.surface.nodes) == [0, 1]
    assert [m.id for m in session.derive_messages()] == ["u-0"]
    session.append("assistant/message", assistant_data("hello", "a-1"), surface_op="append")
    assert list(session.surface.nodes) == [0, 1, 2]
    assert [m.id for m in session.derive_messages()] == ["u-0", "a-1"]
    # The empty node can still be replaced: it is a real node.
    session.append("user/message", user_data("r", "u-r"), surface_op=Replace(1, 1), source_event_seqs=[1])
    assert list(session.surface.nodes) == [0, 3, 2]
    assert [m.id for m in session.derive_messages()] == ["u-0", "u-r", "a-1"]


def test_c30_empty_assistant_message_from_seed() -> None:
    """30. Empty-content assistant/message: node kept, no projected message; log-only events never change history."""  # noqa: E501
    empty = assistant_data(msg_id="a-empty")
    empty["message"]["content"] = []
    session = restore(
        [
            wire("user/message", 0, user_data("hi", "u-0"), surfaceOp="append"),
            wire("assistant/message", 1, empty, surfaceOp="append", sourceEventSeqs=[]),
        ]
    )
    assert list(session.surface.nodes) == [0, 1]
    assert [m.id for m in session.derive_messages()] == ["u-0"]


def test_c30_log_only_events_never_change_history() -> None:
    """30. … log-only events never change history."""
    session = new_session()
    session.append("user/message", user_data("hi", "u-0"), surface_op="append")
    session.append("assistant/message", assistant_data("yo", "a-0"), surface_op="append")
    nodes, generation = list(session.surface.nodes), session.surface.replace_generation
    history = session.derive_messages()
    for kind, data in (
        ("turn/start", {"turn": 1}),
        ("step/start", {"turn": 1, "step": 1}),
        ("assistant/chunk", {"turn": 1, "step": 1, "chunk": {"type": "text-delta", "index": 0, "text": "x"}}),
        ("tool/call", {"turn": 1, "step": 1, "callId": "c", "name": "bash", "arguments": "{}"}),
        ("todo/write", {"todos": []}),
        ("plugin/event", None),
        ("step/end", {"turn": 1, "step": 1}),
        ("turn/end", {"turn": 1, "reason": {"kind": "completed"}}),
    ):
        session.append(kind, data)
        assert list(session.surface.nodes) == nodes
        assert session.surface.replace_generation == generation
        assert session.derive_messages() == history
    assert len(session.events) == 10


# ---- case 31 ----------------------------------------------------------------------------


def test_c31_rejected_candidate_leaves_surface_unchanged() -> None:
    """31. A rejected candidate leaves nodes/generation unchanged; the next valid append folds normally."""
    session = two_user_nodes()
    session.append("user/message", user_data("r", "u-2"), surface_op=Replace(0, 0), source_event_seqs=[0])
    assert list(session.surface.nodes) == [2, 1]
    assert session.surface.replace_generation == 1
    history = [m.id for m in session.derive_messages()]

    refused_append(
        session, "missing 1", "user/message", user_data(), surface_op=Replace(2, 1), source_event_seqs=[2]
    )
    refused_append(
        session, "not found", "user/message", user_data(), surface_op=Replace(0, 1), source_event_seqs=[0, 1]
    )
    refused_append(
        session, "duplicates", "user/message", user_data(), surface_op="append", source_event_seqs=[1, 1]
    )
    refused_append(session, "requires a surfaceOp marker", "tool/result", tool_data())
    with pytest.raises(InvalidEvent):
        session.append("user/message", {"x": float("nan")}, surface_op="append")
    assert [m.id for m in session.derive_messages()] == history

    event = session.append(
        "user/message", user_data("r2", "u-3"), surface_op=Replace(2, 1), source_event_seqs=[2, 1]
    )
    assert event.seq == 3
    assert list(session.surface.nodes) == [3]
    assert session.surface.replace_generation == 2
    assert [m.id for m in session.derive_messages()] == ["u-3"]
    assert list(fold_surface(session.events).nodes) == [3]


def test_c31_validate_next_does_not_mutate_the_manager() -> None:
    """31. A rejected candidate leaves nodes/generation unchanged; the next valid append folds normally."""
    session = two_user_nodes()
    manager = SurfaceManager(list(session.events))
    for event in session.events:
        manager.advance(event)
    bad = Event.create("user/message", 2, 1, snapshot(user_data()), Replace(0, 1), (0,))
    with pytest.raises(SurfaceRuleError, match="missing 1"):
        manager.validate_next(bad)
    good = Event.create("user/message", 2, 1, snapshot(user_data()), Replace(0, 1), (0, 1))
    manager.validate_next(good)  # a valid check commits nothing either
    assert list(manager.nodes) == [0, 1]
    assert manager.replace_generation == 0
    assert manager.next_seq == 2
    manager.advance(good)
    assert list(manager.nodes) == [2]
    assert manager.replace_generation == 1

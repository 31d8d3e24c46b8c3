"""``encode_lossless``: the C-level acceptance test ``Session.append`` tries before the walk.

It may only ever accept what ``check_json`` accepts, with the bytes ``dumps_kept`` writes;
everything else goes to ``check_json``, which gives the exact error. A differential
property over valid and invalid values (tuples, enums, subclasses, UUIDs, NaN, -0.0,
big integers, odd keys, frozen containers, lone surrogates, deep and cyclic values),
the orjson and CPython behaviours the proof rests on, and ``Session.append`` with the
fast path on and off.
"""

from __future__ import annotations

import collections
import dataclasses
import datetime
import decimal
import enum
import gc
import os
import sys
import uuid
from typing import Any

import hypothesis.strategies as st
import orjson
import pytest
from hypothesis import HealthCheck, given, settings

import harness
import harness.events.json as json_module
import harness.session.session as session_module
from harness.errors import InvalidEvent, InvalidEventData
from harness.events.json import (
    MAX_DEPTH,
    MAX_SAFE_INTEGER,
    FrozenDict,
    FrozenList,
    check_json,
    dumps_kept,
    encode_lossless,
    encode_lossless_pure,
)

pytestmark = pytest.mark.skipif(sys.implementation.name != "cpython", reason="the fast path is CPython's")

SETTINGS = settings(
    max_examples=int(os.environ.get("HARNESS_PROPERTY_EXAMPLES", "400")),
    deadline=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.function_scoped_fixture,
    ],
)


@pytest.fixture(autouse=True, params=["pure", "accelerated"])
def walk(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every test here runs on the pure-Python proof and on the optional C walk (``make accel``),
    whichever of them ``HARNESS_ACCEL`` makes the default.

    The C walk is required when ``HARNESS_REQUIRE_ACCEL=1`` or ``CI=true`` (``make test`` builds
    it first); otherwise a tree without it skips the accelerated half."""
    if request.param == "pure":
        monkeypatch.setattr(json_module, "_plain_json", None)
        return "pure"
    try:
        from harness.events._typewalk import plain_json
    except ImportError:
        if os.environ.get("HARNESS_REQUIRE_ACCEL") == "1" or os.environ.get("CI") == "true":
            pytest.fail("the optional C walk is required here but not built (make accel)")
        pytest.skip("the optional C walk is not built (make accel)")
    monkeypatch.setattr(json_module, "_plain_json", plain_json)
    return "accelerated"


class Color(enum.Enum):
    RED = 1


class Level(enum.IntEnum):
    LOW = 1


class Mode(enum.StrEnum):
    FAST = "fast"


class Flags(enum.IntFlag):
    A = 1


class Ratio(float, enum.Enum):
    HALF = 0.5


class Text(str):
    pass


class Count(int):
    pass


class Real(float):
    pass


class Table(dict):  # type: ignore[type-arg]
    pass


class Items(list):  # type: ignore[type-arg]
    pass


Pair = collections.namedtuple("Pair", "a b")


@dataclasses.dataclass
class Point:
    x: int = 1


WEIRD_SCALARS: list[Any] = [
    float("nan"),
    float("inf"),
    float("-inf"),
    -0.0,
    MAX_SAFE_INTEGER + 1,
    -MAX_SAFE_INTEGER - 1,
    2**64,
    -(2**63) - 1,
    Color.RED,
    Level.LOW,
    Mode.FAST,
    Flags.A,
    Ratio.HALF,
    Text("x"),
    Text("null"),
    Count(3),
    Real(1.5),
    uuid.UUID(int=7),
    datetime.datetime(2024, 1, 2, 3, 4, 5),
    datetime.date(2024, 1, 2),
    decimal.Decimal("1.5"),
    b"bytes",
    bytearray(b"x"),
    1j,
    {1, 2},
    frozenset({1}),
    Point(),
    Pair(1, 2),
    orjson.Fragment(b'{"a":1}'),
    object(),
    FrozenDict,  # a class object, as a value
]

SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-MAX_SAFE_INTEGER - 2, MAX_SAFE_INTEGER + 2),
    st.sampled_from([MAX_SAFE_INTEGER, -MAX_SAFE_INTEGER, 0, 1, -1]),
    st.floats(),  # NaN, infinities and -0.0 included
    st.sampled_from([0.0, -0.0, -0.05, 1e16, -1e-7, 5e-324, -5e-324, 3.0]),
    st.text(max_size=6),
    st.sampled_from(["\ud800", "a\udfffb", "é✓😀", "null", "-0.0", "NaN", "\x00", "\u2028"]),
    st.sampled_from(WEIRD_SCALARS),
)

KEYS = st.one_of(
    st.text(max_size=4),
    st.sampled_from(["a", "null", "-0.0", "\ud800"]),
    st.sampled_from([Text("k"), Mode.FAST, 1, None, True, 1.5, (1,)]),
)


def _containers(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    lists = st.lists(children, max_size=3)
    dicts = st.dictionaries(st.text(max_size=3), children, max_size=3)
    odd_dicts = st.dictionaries(KEYS, children, max_size=3)
    return st.one_of(
        lists,
        dicts,
        odd_dicts,
        lists.map(tuple),
        lists.map(FrozenList),
        dicts.map(FrozenDict),
        lists.map(Items),
        dicts.map(Table),
        dicts.map(collections.OrderedDict),
        lists.map(lambda items: FrozenList([FrozenDict(k=item) for item in items])),
    )


VALUES = st.recursive(SCALARS, _containers, max_leaves=12)
PLAIN = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-MAX_SAFE_INTEGER, MAX_SAFE_INTEGER),
        st.text(alphabet='abc é😀()[]{}",:', max_size=8),
    ),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=3), children, max_size=3)
    ),
    max_leaves=12,
)


def _walk(value: Any, path: str = "data") -> tuple[str, str] | None:
    """The old decision: None (accepted) or the refusal's (path, reason)."""
    try:
        check_json(value, path)
    except InvalidEventData as error:
        return error.path, error.reason
    return None


def _assert_agrees(value: Any) -> None:
    fast = encode_lossless(value)
    if fast is not None:
        assert _walk(value) is None, "the fast path accepted what check_json refuses"
        assert type(fast) is bytes
        assert fast == dumps_kept(value)


@SETTINGS
@given(VALUES)
def test_fast_path_accepts_only_what_the_walk_accepts(value: Any) -> None:
    _assert_agrees(value)
    _assert_agrees([value])
    _assert_agrees({"a": value, "b": [1, value]})


@SETTINGS
@given(PLAIN)
def test_fast_path_accepts_plain_json(value: Any) -> None:
    """Not vacuous: plain JSON without floats or lone surrogates takes the fast path."""
    assert encode_lossless(value) == dumps_kept(value)


@pytest.mark.parametrize("value", WEIRD_SCALARS, ids=lambda value: type(value).__name__)
def test_every_weird_value_is_left_to_the_walk(value: Any) -> None:
    for wrapped in (value, [value], {"k": value}, FrozenDict(k=FrozenList([value])), [[{"x": [value]}]]):
        assert _walk(wrapped) is not None
        assert encode_lossless(wrapped) is None


ODD_KEYS: list[Any] = [1, None, True, 1.5, Text("k"), Mode.FAST, Level.LOW, (1,)]


@pytest.mark.parametrize("key", ODD_KEYS, ids=lambda key: type(key).__name__)
def test_odd_keys_are_left_to_the_walk(key: Any) -> None:
    for value in ({key: 1}, {"a": 1, key: 2}, [{key: [1]}], FrozenDict({key: 1})):
        assert _walk(value) is not None
        assert encode_lossless(value) is None


def test_floats_next_to_null_or_negative_zero_text_take_the_walk() -> None:
    # The pure proof reads the text; the C walk reads each float (no text scan, so these pass).
    assert encode_lossless_pure({"a": 1.5}) == b'{"a":1.5}'
    assert encode_lossless_pure({"a": 1.5, "b": None}) is None  # NaN would be written as null
    assert encode_lossless_pure({"a": 1.5, "b": "x-0.0"}) is None  # -0.0 would be written as -0.0
    assert encode_lossless_pure({"a": -0.05}) is None  # "-0.0" in its text: left to the walk, which accepts
    for value in ({"a": 1.5, "b": None}, {"a": 1.5, "b": "x-0.0"}, {"a": -0.05}):
        assert encode_lossless(value) in (None, dumps_kept(value))
    for bad in (float("nan"), float("inf"), float("-inf"), -0.0):
        assert encode_lossless({"a": 1.5, "b": bad}) is None and encode_lossless([bad]) is None
    assert _walk({"a": -0.05}) is None
    assert encode_lossless({"a": None, "b": "-0.0"}) == b'{"a":null,"b":"-0.0"}'  # no float: no scan


def test_frozen_containers_take_the_fast_path() -> None:
    value = FrozenDict(a=FrozenList([FrozenDict(b=1), [2, {"c": "d"}]]), e=FrozenList())
    assert encode_lossless(value) == dumps_kept(value) == b'{"a":[{"b":1},[2,{"c":"d"}]],"e":[]}'


def _nested(levels: int, leaf: Any) -> Any:
    value = leaf
    for index in range(levels):
        value = [value] if index % 2 else {"k": value}
    return value


@pytest.mark.parametrize("levels", [250, 253, 254, 255, 300, MAX_DEPTH - 1, MAX_DEPTH, MAX_DEPTH + 1, 2000])
def test_depth_agrees(levels: int) -> None:
    for leaf in (1, (1,), float("nan")):
        _assert_agrees(_nested(levels, leaf))
    if levels >= 300:  # beyond orjson's recursion limit: always the walk
        assert encode_lossless(_nested(levels, 1)) is None


def test_cycles_are_left_to_the_walk() -> None:
    cyclic: list[Any] = []
    cyclic.append(cyclic)
    table: dict[str, Any] = {}
    table["self"] = [table]
    for value in (cyclic, table):
        assert encode_lossless(value) is None
        assert _walk(value) is not None


def test_lone_surrogates_are_left_to_the_walk() -> None:
    value = {"a": "\ud800", "b": ["x\udfff"]}
    assert encode_lossless(value) is None
    assert _walk(value) is None  # the walk accepts them; dumps escapes them


# ---- the behaviours the proof rests on (orjson 3.x, CPython) ----------------------------------


def test_orjson_behaviours_relied_on() -> None:
    strict = orjson.OPT_STRICT_INTEGER
    assert orjson.dumps(MAX_SAFE_INTEGER, option=strict) == b"9007199254740991"
    assert orjson.dumps(-MAX_SAFE_INTEGER, option=strict) == b"-9007199254740991"
    for big in (MAX_SAFE_INTEGER + 1, -MAX_SAFE_INTEGER - 1, 2**64):
        with pytest.raises(TypeError):
            orjson.dumps(big, option=strict)
    for key in (1, None, True, 1.5, (1,)):
        with pytest.raises(TypeError):
            orjson.dumps({key: 1}, option=strict)
    for value in (float("nan"), float("inf"), float("-inf")):
        assert orjson.dumps(value) == b"null"
        assert orjson.dumps([value]) == b"[null]"
    assert orjson.dumps(-0.0) == b"-0.0"
    assert orjson.dumps([-0.0, {"a": -0.0}]) == b'[-0.0,{"a":-0.0}]'
    with pytest.raises(TypeError):
        orjson.dumps("\ud800")
    with pytest.raises(TypeError):
        orjson.dumps(_nested(300, 1))
    # What orjson writes natively although check_json refuses it (the type walk catches it):
    assert orjson.dumps((1, 2)) == b"[1,2]"
    assert orjson.dumps(Level.LOW) == b"1"
    assert orjson.dumps(Mode.FAST) == b'"fast"'
    assert orjson.dumps(uuid.UUID(int=7)) == b'"00000000-0000-0000-0000-000000000007"'
    assert orjson.dumps(Text("x")) == b'"x"'
    assert orjson.dumps(Table(a=1)) == b'{"a":1}'


def test_gc_referents_behaviours_relied_on() -> None:
    untracked = {"a": 1, "b": "x"}
    assert not gc.is_tracked(untracked)
    assert sorted(map(repr, gc.get_referents(untracked))) == ["'x'", "1"]  # an untracked dict's values too
    assert set(gc.get_referents({Text("k"): 1})) == {Text("k"), 1}  # keys too when not all exact str
    assert sorted(map(repr, gc.get_referents([1, (2,)]))) == ["(2,)", "1"]
    assert FrozenDict in gc.get_referents(FrozenDict(a=1))  # a heap type's instance refers to its class
    assert FrozenList in gc.get_referents(FrozenList([1]))
    assert gc.get_referents("text", 1, 1.5, None) == []  # scalars have no referents


# ---- Session.append with the fast path on and off -------------------------------------------


def _append_outcome(monkeypatch: pytest.MonkeyPatch, fast: bool, kind: str, data: Any) -> tuple[Any, ...]:
    with monkeypatch.context() as patch:
        if not fast:
            patch.setattr(session_module, "encode_lossless", lambda value: None)
        session = harness.Session.create({"version": 0, "id": "s", "createdAt": 1}, clock=lambda: 5)
        try:
            if kind == "assistant/message":
                event = session.append(kind, data, surface_op="append", source_event_seqs=[])
            else:
                event = session.append(kind, data)
        except InvalidEvent as error:
            return (type(error), str(error), getattr(error, "path", None))
        return ("ok", event.data_json, event.seq)


def _message(content: Any) -> dict[str, Any]:
    return {
        "message": {
            "role": "assistant",
            "id": "m1",
            "source": {"kind": "model", "provider": "p", "model": "m"},
            "content": content,
        }
    }


@SETTINGS
@given(VALUES, st.sampled_from(["assistant/chunk", "assistant/message", "tool/call"]))
def test_append_is_unchanged_by_the_fast_path(value: Any, kind: str) -> None:
    monkeypatch = pytest.MonkeyPatch()
    try:
        if kind == "assistant/message":
            data: Any = _message([{"type": "text", "text": "x", "extra": value}])
        elif kind == "tool/call":
            data = {"callId": value, "name": "n", "input": value}
        else:
            data = {"chunk": value}
        assert _append_outcome(monkeypatch, True, kind, data) == _append_outcome(
            monkeypatch, False, kind, data
        )
    finally:
        monkeypatch.undo()


@SETTINGS
@given(VALUES)
def test_the_c_walk_accepts_only_what_check_json_accepts(walk: str, value: Any) -> None:
    """``check_json`` returns at once when the C walk proves a value: it must prove only what
    the pure walk accepts."""
    proved = json_module._plain_json is not None and json_module._plain_json(value)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(json_module, "_plain_json", None)
        pure = _walk(value)
    if proved:
        assert pure is None, "the C walk proved what check_json refuses"
    assert _walk(value) == pure  # check_json's outcome, with or without the C walk

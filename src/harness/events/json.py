"""Lossless JSON values: validation, read-only snapshots and the byte codec.

Event data must survive a JSON round trip unchanged (FORMAT §0). ``snapshot``
walks a caller's value once: it refuses anything that is not lossless JSON,
naming the path of the first bad value, and returns a deep read-only copy made
of ``FrozenDict`` (a ``dict`` that refuses mutation) and ``FrozenList`` (a
``tuple``), so nothing a caller does later can reach the log.

Decisions where FORMAT leaves room for Python:

* Refused: non-finite floats, ``-0.0``, integers beyond ±(2^53−1) (a JavaScript
  reader would silently round them), non-``str`` keys, plain tuples, sets, bytes,
  enums, ``str``/``int`` subclasses and every other non-JSON object.
* Accepted: ``FrozenDict`` and ``FrozenList``, the read-only values harness hands
  out, so data read from one event can be put into another without thawing it.
* Integral floats (``3.0``) stay floats in data; envelope integers are normalised
  by the event layer.

``dumps`` writes ``JSON.stringify``-compatible bytes (no whitespace, raw UTF-8,
lone surrogates escaped as ``\\udXXX``); ``loads`` refuses ``NaN``/``Infinity``.

Depth: data may nest ``MAX_DEPTH`` (512) arrays/objects, the one write limit;
``loads`` reads ``MAX_READ_DEPTH`` (10,000) levels, so every log dsh reads loads.
orjson is the fast path; where it or Python's recursion stops earlier, the
explicit-stack walkers of ``jsondeep`` take over with the same results.
"""

from __future__ import annotations

import gc
import json as _stdlib_json
import math
import os
import re
import sys
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final, TypeAlias

import orjson

from harness.errors import InvalidEventData
from harness.events.frozen import FrozenDict, FrozenList
from harness.events.jsondeep import UnrepresentableJson, adopt_deep, encode_deep, equal_deep, parse, thaw_deep

__all__ = [
    "ACCELERATED",
    "MAX_DEPTH",
    "MAX_READ_DEPTH",
    "MAX_SAFE_INTEGER",
    "FrozenDict",
    "FrozenList",
    "JsonValue",
    "UnrepresentableJson",
    "adopt",
    "check_json",
    "check_members",
    "decode_frozen",
    "dumps",
    "dumps_kept",
    "encode_json",
    "encode_lossless",
    "encode_lossless_pure",
    "is_safe_int",
    "json_equal",
    "loads",
    "snapshot",
    "thaw",
]

MAX_SAFE_INTEGER = 2**53 - 1
MAX_DEPTH = 512
"""The write limit: data nested deeper than this many arrays/objects is refused."""
MAX_READ_DEPTH = 10_000
"""The read limit: a stored line nested deeper than this is valid JSON harness refuses."""

JsonValue: TypeAlias = Any
"""A JSON value: None, bool, int, float, str, a list/tuple of values or a str-keyed mapping."""


def is_safe_int(value: object) -> bool:
    """True for an ``int`` (not ``bool``) with |n| ≤ 2^53−1."""
    return type(value) is int and -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER


class _Bad(Exception):
    """Internal: carries the reason and the reversed path of a refused value."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        self.path: list[str | int] = []


def _refusal(value: object) -> str:
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return f"non-finite number {value!r} is not JSON"
        return "negative zero does not survive a JSON round trip"
    if type(value) is int:
        return f"integer {value} is outside the safe range ±(2^53−1)"
    if type(value) is tuple:
        return "a plain tuple is not a JSON array (use a list)"
    return f"{type(value).__name__} is not a JSON value"


def _check_scalar(value: Any) -> None:
    kind = type(value)
    if kind is str or value is None or kind is bool:
        return
    if kind is int:
        if -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER:
            return
    elif kind is float and math.isfinite(value) and (value != 0.0 or math.copysign(1.0, value) > 0):
        return
    raise _Bad(_refusal(value))


_IDENTIFIER = re.compile(r"^[A-Za-z_$][A-Za-z0-9_$]*$")


def format_path(root: str, parts: Iterable[str | int]) -> str:
    """Render a JSON path like ``data.message.content[2].x``."""
    out = [root]
    for part in parts:
        if isinstance(part, int):
            out.append(f"[{part}]")
        elif _IDENTIFIER.match(part):
            out.append(f".{part}")
        else:
            out.append(f"[{_stdlib_json.dumps(part, ensure_ascii=False)}]")
    return "".join(out)


def _check_dict(value: Any, depth: int) -> None:
    if depth >= MAX_DEPTH:
        raise _Bad(f"nested deeper than {MAX_DEPTH} levels (or cyclic)")
    for key, item in value.items():
        if type(key) is not str:
            raise _Bad(f"object key {key!r} is not a string")
        kind = type(item)
        if kind is str or item is None or kind is bool:
            continue
        if kind is int:
            if -MAX_SAFE_INTEGER <= item <= MAX_SAFE_INTEGER:
                continue
        elif kind is dict or kind is FrozenDict:
            try:
                _check_dict(item, depth + 1)
            except _Bad as bad:
                bad.path.append(key)
                raise
            continue
        elif kind is list or kind is FrozenList:
            try:
                _check_list(item, depth + 1)
            except _Bad as bad:
                bad.path.append(key)
                raise
            continue
        elif kind is float and math.isfinite(item) and (item != 0.0 or math.copysign(1.0, item) > 0):
            continue
        refused = _Bad(_refusal(item))
        refused.path.append(key)
        raise refused


def _check_list(value: Any, depth: int) -> None:
    if depth >= MAX_DEPTH:
        raise _Bad(f"nested deeper than {MAX_DEPTH} levels (or cyclic)")
    for index, item in enumerate(value):
        kind = type(item)
        if kind is str or item is None or kind is bool:
            continue
        try:
            if kind is dict or kind is FrozenDict:
                _check_dict(item, depth + 1)
            elif kind is list or kind is FrozenList:
                _check_list(item, depth + 1)
            else:
                _check_scalar(item)
        except _Bad as bad:
            bad.path.append(index)
            raise


def check_json(value: Any, path: str = "data") -> None:
    """Raise ``InvalidEventData`` (naming the path) unless ``value`` is lossless JSON."""
    plain_json = _plain_json
    if plain_json is not None and plain_json(value):
        return  # the optional C walk proved it (it accepts a subset of what the walk below does)
    kind = type(value)
    try:
        if kind is dict or kind is FrozenDict:
            _check_dict(value, 0)
        elif kind is list or kind is FrozenList:
            _check_list(value, 0)
        else:
            _check_scalar(value)
    except _Bad as bad:
        raise InvalidEventData(format_path(path, reversed(bad.path)), bad.reason) from None
    except RecursionError:
        # The caller's own stack was deep already: the same walk without recursion.
        found = _first_bad(value)
        if found is not None:
            raise InvalidEventData(format_path(path, found[0]), found[1]) from None


def check_members(value: Any, path: str) -> None:
    """``check_json`` of each member of an object on its own: for an event's wire form,
    whose ``data`` may be nested ``MAX_DEPTH`` levels below the envelope."""
    if type(value) is not dict and type(value) is not FrozenDict:
        check_json(value, path)
        return
    for key, item in value.items():
        if type(key) is not str:
            raise InvalidEventData(path, f"object key {key!r} is not a string")
        check_json(item, format_path(path, (key,)))


def _first_bad(value: Any) -> tuple[list[str | int], str] | None:
    """``check_json``'s walk with an explicit stack: the path and reason of the first bad value."""
    kind = type(value)
    if kind is not dict and kind is not FrozenDict and kind is not list and kind is not FrozenList:
        try:
            _check_scalar(value)
        except _Bad as bad:
            return [], bad.reason
        return None
    path: list[str | int] = []
    frames: list[tuple[Any, bool]] = []

    def enter(container: Any) -> None:
        is_object = type(container) is dict or type(container) is FrozenDict
        frames.append((iter(container.items() if is_object else enumerate(container)), is_object))

    enter(value)
    while frames:
        items, is_object = frames[-1]
        for key, item in items:
            if is_object and type(key) is not str:
                return path, f"object key {key!r} is not a string"
            kind = type(item)
            if kind is dict or kind is FrozenDict or kind is list or kind is FrozenList:
                path.append(key)
                if len(frames) >= MAX_DEPTH:
                    return path, f"nested deeper than {MAX_DEPTH} levels (or cyclic)"
                enter(item)
                break
            try:
                _check_scalar(item)
            except _Bad as bad:
                return [*path, key], bad.reason
        else:
            frames.pop()
            if frames:
                path.pop()
    return None


def encode_json(value: Any, path: str = "data") -> bytes:
    """Validate ``value`` as lossless JSON and return its encoding: a snapshot as bytes."""
    check_json(value, path)
    return dumps_kept(value)


def decode_frozen(data: bytes) -> Any:
    """Decode JSON bytes into a read-only value."""
    return adopt(loads(data))


def snapshot(value: Any, path: str = "data") -> Any:
    """Validate ``value`` as lossless JSON and return a deep read-only copy.

    Raises ``InvalidEventData`` naming the path of the first bad value (for
    example ``data.message.content[2].x``). A read-only value is returned as is.
    """
    check_json(value, path)
    if type(value) is FrozenDict or type(value) is FrozenList:
        return value
    return adopt(loads(dumps(value)))


def adopt(value: Any) -> Any:
    """Freeze a value freshly decoded from JSON and handed over by the caller.

    No validation (JSON decoding already guarantees JSON values). Nested plain
    containers are replaced in place inside the given value, which the caller must
    not use afterwards.
    """
    kind = type(value)
    try:
        if kind is dict:
            return _adopt_dict(value)
        if kind is list:
            return _adopt_list(value)
    except RecursionError:
        return adopt_deep(value)  # the subtrees frozen so far are kept as they are
    return value


def _adopt_dict(value: dict[str, Any]) -> FrozenDict:
    for key, item in value.items():
        kind = type(item)
        if kind is dict:
            value[key] = _adopt_dict(item)
        elif kind is list:
            value[key] = _adopt_list(item)
    return FrozenDict(value)


def _adopt_list(value: list[Any]) -> FrozenList:
    for index, item in enumerate(value):
        kind = type(item)
        if kind is dict:
            value[index] = _adopt_dict(item)
        elif kind is list:
            value[index] = _adopt_list(item)
    return FrozenList(value)


def json_equal(left: Any, right: Any) -> bool:
    """Deep equality of JSON values as JSON sees them.

    Unlike ``==``, ``true`` is not ``1`` and ``false`` is not ``0``; ``1`` and ``1.0``
    are the same JSON number; arrays may be lists or tuples, objects any mapping.
    """
    try:
        return _json_equal(left, right)
    except RecursionError:
        return equal_deep(left, right)


def _json_equal(left: Any, right: Any) -> bool:
    if isinstance(left, bool) or isinstance(right, bool):
        return type(left) is type(right) and left == right
    if isinstance(left, Mapping):
        if not isinstance(right, Mapping) or len(left) != len(right):
            return False
        return all(key in right and _json_equal(item, right[key]) for key, item in left.items())
    if isinstance(left, list | tuple):
        if not isinstance(right, list | tuple) or len(left) != len(right):
            return False
        return all(_json_equal(a, b) for a, b in zip(left, right, strict=True))
    if isinstance(left, int | float) and isinstance(right, int | float):
        return left == right
    return type(left) is type(right) and bool(left == right)


def thaw(value: Any) -> Any:
    """A deep mutable copy (``dict``/``list``) of a JSON value."""
    try:
        return _thaw(value)
    except RecursionError:
        return thaw_deep(value)


def _thaw(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {key: _thaw(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_thaw(item) for item in value]
    return value


def _default(value: Any) -> Any:
    if type(value) is FrozenList:
        return list(value)
    raise TypeError(f"{type(value).__name__} is not a JSON value")


_LONE_SURROGATE = re.compile(r"[\ud800-\udfff]")


def _dumps_with_surrogates(value: Any) -> bytes:
    try:
        text = _stdlib_json.dumps(
            value, ensure_ascii=False, separators=(",", ":"), allow_nan=False, default=_default
        )
    except RecursionError:
        return encode_deep(value, dumps)
    # Join surrogate pairs into the code points they spell, then escape the lone halves.
    text = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
    text = _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
    return text.encode("utf-8")


def dumps(value: Any) -> bytes:
    """Encode a JSON value the way ``JSON.stringify`` does (compact, raw UTF-8).

    Any depth: where orjson stops (254 levels) an explicit-stack encoder writes the
    same bytes.
    """
    try:
        return orjson.dumps(value, default=_default)
    except TypeError as error:
        reason = str(error)
        if "surrogates" in reason:
            return _dumps_with_surrogates(value)
        if "Recursion limit" in reason:
            return encode_deep(value, dumps)
        raise


def dumps_kept(value: Any) -> bytes:
    """``dumps`` for bytes that will be kept (event data): an exact-size copy.

    orjson's result sits in a larger allocation; keeping many of them costs memory
    and, measured here, several µs per event in allocator work. A copy is ~0.1 µs.
    """
    try:
        return bytes(memoryview(orjson.dumps(value, default=_default)))  # ``dumps``, inline: hot
    except TypeError:
        return bytes(memoryview(dumps(value)))


_STRICT: Final = orjson.OPT_STRICT_INTEGER
_PLAIN: Final = frozenset({dict, list, str, int, float, bool, type(None)})
_FROZEN: Final = frozenset({FrozenDict, FrozenList})
_TREE: Final = _PLAIN | _FROZEN | {type}
_CONTAINERS: Final = frozenset({dict, list, FrozenDict, FrozenList})
_referents = gc.get_referents
_FAST: Final = sys.implementation.name == "cpython"  # the walk below relies on CPython's traversal


def _load_accelerator() -> Callable[[Any], bool] | None:
    if os.environ.get("HARNESS_ACCEL", "1") == "0":
        return None
    try:
        from harness.events._typewalk import plain_json
    except ImportError:
        return None
    return plain_json


_plain_json = _load_accelerator()
ACCELERATED: Final = _plain_json is not None
"""True when the optional C type walk (``make accel``) is built and not disabled by
``HARNESS_ACCEL=0``: ``encode_lossless`` then proves plain values in one C call."""


def encode_lossless(value: Any) -> bytes | None:
    """``dumps_kept(value)`` when C-level work proves ``value`` lossless JSON, else None.

    With the optional accelerator (``ACCELERATED``), one C walk over exact JSON types
    (finite floats that are not ``-0.0``, safe integers, ``str`` keys, at most
    ``MAX_DEPTH`` levels) comes first; a value it does not prove takes the pure-Python
    proof below (``encode_lossless_pure``), exactly as without it.
    """
    plain_json = _plain_json
    if plain_json is not None and plain_json(value):
        try:
            out = orjson.dumps(value, option=_STRICT)
        except TypeError:  # a lone surrogate, or deeper than orjson writes
            return None
        return bytes(memoryview(out))
    return encode_lossless_pure(value)


def encode_lossless_pure(value: Any) -> bytes | None:
    """``encode_lossless`` without the accelerator: the proof in C-level Python calls.

    None means "not proven" (a refused value, or one that needs the exact walk: lone
    surrogates, floats next to a ``null`` or a ``-0.0`` in the text, deep nesting): the
    caller then runs ``check_json``, which accepts or names the bad value. Never accepts
    what ``check_json`` refuses; the bytes are those ``dumps_kept`` writes.

    The proof: orjson encodes the value with ``OPT_STRICT_INTEGER`` (so every integer is
    within ±(2^53−1), every key a string, no cycle, no lone surrogate, at most 254 levels),
    and ``gc.get_referents``, level by level, shows every value reachable from it to be of
    an exact JSON type (``dict``/``list``/``str``/``int``/``float``/``bool``/``None`` or a
    frozen container), which rules out tuples, enums, UUIDs and every subclass orjson
    writes natively. orjson writes NaN and infinities as ``null`` and ``-0.0`` as is: when
    a float is present, neither may appear in the text.
    """
    if not _FAST:
        return None
    try:
        out = orjson.dumps(value, default=_default, option=_STRICT)
    except TypeError:
        return None
    kind = type(value)  # a plain container's referents at once; else the general loop
    level = _referents(value) if kind is dict or kind is list else [value]
    floats = False
    while True:
        kinds = set(map(type, level))
        if not kinds <= _PLAIN:
            if not kinds <= _TREE:
                return None
            if type in kinds:  # a frozen container's referents include its class
                level = [item for item in level if item is not FrozenDict and item is not FrozenList]
                kinds = set(map(type, level))
                if type in kinds:
                    return None
        if float in kinds:
            floats = True
        if kinds.isdisjoint(_CONTAINERS):
            break
        level = _referents(*level)
    if floats and (b"null" in out or b"-0.0" in out):
        return None
    return bytes(memoryview(out))


def loads(data: bytes | str) -> Any:
    """Decode JSON text into plain ``dict``/``list`` values. Refuses NaN/Infinity.

    Raises ``ValueError`` on malformed input and its subclass ``UnrepresentableJson``
    on valid JSON harness cannot hold: a number beyond a double's range (``1e400``),
    nesting deeper than ``MAX_READ_DEPTH``, or bytes that are JSON only once their
    invalid UTF-8 is replaced. A reader must not take the second kind for a torn line.
    Lone surrogate escapes (``"\\ud800"``), which JavaScript writers emit, are accepted.
    """
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        pass  # orjson's limits are not the format's: decide with the unlimited parser
    return parse(data, MAX_READ_DEPTH)

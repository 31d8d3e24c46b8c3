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
"""

from __future__ import annotations

import json as _stdlib_json
import math
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any, NoReturn, TypeAlias

import orjson

from harness.errors import InvalidEventData

__all__ = [
    "MAX_SAFE_INTEGER",
    "FrozenDict",
    "FrozenList",
    "JsonValue",
    "adopt",
    "check_json",
    "decode_frozen",
    "dumps",
    "dumps_kept",
    "encode_json",
    "is_safe_int",
    "json_equal",
    "loads",
    "snapshot",
    "thaw",
]

MAX_SAFE_INTEGER = 2**53 - 1
MAX_DEPTH = 512

JsonValue: TypeAlias = Any
"""A JSON value: None, bool, int, float, str, a list/tuple of values or a str-keyed mapping."""


class FrozenDict(dict[str, Any]):
    """A read-only JSON object. Equal to a ``dict`` with the same items.

    Every mutating method raises ``TypeError``. Construct one with ``snapshot``
    (validating) or ``FrozenDict(mapping)`` (trusting the values to be frozen).
    Calling ``dict`` methods unbound (``dict.__setitem__(d, ...)``, ``d.__init__(...)``)
    bypasses the type on purpose and is not guarded: blocking it would cost every
    append a Python-level constructor.
    """

    __slots__ = ()

    def _refuse(self, *_args: object, **_kwargs: object) -> NoReturn:
        raise TypeError("this JSON object is read-only; thaw() it to get a mutable copy")

    __setitem__ = _refuse
    __delitem__ = _refuse
    __ior__ = _refuse
    clear = _refuse
    pop = _refuse
    popitem = _refuse
    setdefault = _refuse
    update = _refuse

    def __reduce__(self) -> tuple[type[FrozenDict], tuple[dict[str, Any]]]:
        return (FrozenDict, (dict(self),))

    def __copy__(self) -> FrozenDict:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> FrozenDict:
        return self

    def __repr__(self) -> str:
        return f"FrozenDict({dict.__repr__(self)})"


class FrozenList(tuple[Any, ...]):
    """A read-only JSON array (a ``tuple``). Equal to a ``list`` or ``tuple`` with the same items."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        if isinstance(other, list):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))
        return tuple.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        return not self == other

    __hash__ = tuple.__hash__

    def __repr__(self) -> str:
        return f"FrozenList({list(self)!r})"


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
        raise InvalidEventData(path, "nested too deeply (or cyclic)") from None


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
    if kind is dict:
        return _adopt_dict(value)
    if kind is list:
        return _adopt_list(value)
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
    if isinstance(left, bool) or isinstance(right, bool):
        return type(left) is type(right) and left == right
    if isinstance(left, Mapping):
        if not isinstance(right, Mapping) or len(left) != len(right):
            return False
        return all(key in right and json_equal(item, right[key]) for key, item in left.items())
    if isinstance(left, list | tuple):
        if not isinstance(right, list | tuple) or len(left) != len(right):
            return False
        return all(json_equal(a, b) for a, b in zip(left, right, strict=True))
    if isinstance(left, int | float) and isinstance(right, int | float):
        return left == right
    return type(left) is type(right) and bool(left == right)


def thaw(value: Any) -> Any:
    """A deep mutable copy (``dict``/``list``) of a JSON value."""
    if isinstance(value, Mapping):
        return {key: thaw(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [thaw(item) for item in value]
    return value


def _default(value: Any) -> Any:
    if type(value) is FrozenList:
        return list(value)
    raise TypeError(f"{type(value).__name__} is not a JSON value")


_LONE_SURROGATE = re.compile(r"[\ud800-\udfff]")


def _dumps_with_surrogates(value: Any) -> bytes:
    text = _stdlib_json.dumps(
        value, ensure_ascii=False, separators=(",", ":"), allow_nan=False, default=_default
    )
    # Join surrogate pairs into the code points they spell, then escape the lone halves.
    text = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
    text = _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
    return text.encode("utf-8")


def dumps(value: Any) -> bytes:
    """Encode a JSON value the way ``JSON.stringify`` does (compact, raw UTF-8)."""
    try:
        return orjson.dumps(value, default=_default)
    except TypeError as error:
        if "surrogates" in str(error):
            return _dumps_with_surrogates(value)
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


def _refuse_constant(token: str) -> NoReturn:
    raise ValueError(f"{token} is not valid JSON")


_STDLIB_DECODER: Callable[[str], Any] = _stdlib_json.JSONDecoder(parse_constant=_refuse_constant).decode


def loads(data: bytes | str) -> Any:
    """Decode JSON text into plain ``dict``/``list`` values. Refuses NaN/Infinity.

    Raises ``ValueError`` on malformed input. Lone surrogate escapes
    (``"\\ud800"``), which JavaScript writers emit, are accepted.
    """
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as error:
        if "surrogate" not in str(error):
            raise ValueError(str(error)) from None
    text = data.decode("utf-8") if isinstance(data, bytes | bytearray) else data
    return _STDLIB_DECODER(text)

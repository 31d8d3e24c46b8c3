"""The slow paths of the JSON codec: no nesting limit but the one harness sets.

orjson, the fast path, refuses valid JSON for limits of its own: documents nested
deeper than 1,024 levels (reading) or 254 (writing), numbers that overflow a double
and lone surrogate escapes, which JavaScript writers emit. A limit of a parser is not
a property of the bytes, so ``harness.events.json`` falls back to these walkers when
orjson refuses, and to the iterative ``adopt``/``thaw``/``equal`` here when Python's
recursion limit would stop the recursive ones. Every function here uses an explicit
stack: nesting costs memory, never the call stack.

``parse`` tells two failures apart: ``ValueError`` for text that is not JSON (a torn
line is one) and ``UnrepresentableJson`` for valid JSON harness cannot hold
losslessly (a number beyond a double's range, nesting deeper than the read limit,
bytes that are not UTF-8). A reader must never treat the second kind as crash debris.
"""

from __future__ import annotations

import json.decoder
import re
from collections.abc import Callable, Mapping
from typing import Any, Final

from harness.events.frozen import FrozenDict, FrozenList

__all__ = ["UnrepresentableJson", "adopt_deep", "encode_deep", "equal_deep", "parse", "thaw_deep"]


class UnrepresentableJson(ValueError):
    """Valid JSON harness cannot hold losslessly: an infinite number, nesting deeper
    than the read limit, or text that is JSON only once its invalid UTF-8 is replaced.

    ``value`` is the document as far as it can be held (infinities as ``inf``, what
    lies beyond the read limit dropped, invalid UTF-8 replaced by U+FFFD): enough for
    a reader to see which event a line claims to be, never to keep it.
    """

    def __init__(self, reason: str, value: Any) -> None:
        super().__init__(reason)
        self.value = value


_SPACE: Final = re.compile(r"[ \t\n\r]*")
_NUMBER: Final = re.compile(r"-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?")
_I64_MIN: Final = -(2**63)
_U64_MAX: Final = 2**64 - 1
_LITERALS: Final = {"t": ("true", True), "f": ("false", False), "n": ("null", None)}
_END: Any = object()

_scanstring: Callable[[str, int, bool], tuple[str, int]] = json.decoder.scanstring  # type: ignore[attr-defined]
"""The standard library's (C) string-literal decoder: escapes, surrogates, control characters."""


def _skip(text: str, pos: int) -> int:
    """The position after the whitespace at ``pos``."""
    match = _SPACE.match(text, pos)
    assert match is not None  # the pattern matches the empty string
    return match.end()


def parse(
    data: bytes | bytearray | memoryview | str,
    max_depth: int,
    parse_int: Callable[[str], Any] | None = None,
) -> Any:
    """Decode one JSON document into plain ``dict``/``list`` values, as orjson would.

    Integers outside the 64-bit range become floats (orjson's rule) unless ``parse_int``
    is given, which then makes every integer token's value; lone surrogate escapes are
    kept. Raises ``ValueError`` for text that is not JSON and ``UnrepresentableJson``
    for valid JSON beyond harness (see the module doc).
    """
    if isinstance(data, str):
        return _parse_text(data, max_depth, parse_int)
    raw = bytes(data)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        # JSON once replaced (as a JavaScript reader decodes it) is a committed line we
        # cannot keep byte for byte; anything else is just not JSON.
        value = _parse_text(raw.decode("utf-8", "replace"), max_depth, parse_int)
        raise UnrepresentableJson(f"invalid UTF-8 at byte {error.start} of the text", value) from None
    return _parse_text(text, max_depth, parse_int)


def _fail(text: str, pos: int, what: str) -> ValueError:
    found = repr(text[pos]) if pos < len(text) else "the end"
    return ValueError(f"{what} at char {pos} (found {found})")


def _number(token: str, integral: bool) -> tuple[Any, bool]:
    """The value of a number token and whether it is finite."""
    if integral and len(token) <= 20:
        value = int(token)
        if _I64_MIN <= value <= _U64_MAX:
            return value, True
    number = float(token)
    return number, number - number == 0.0


def _parse_text(text: str, max_depth: int, parse_int: Callable[[str], Any] | None) -> Any:
    # ``stack`` holds the open containers (built values) up to ``max_depth``; deeper
    # ones are only checked for grammar, as the brackets of ``overflow``.
    stack: list[Any] = []
    keys: list[str] = []  # the pending key of each open object on ``stack``
    overflow = bytearray()
    problem: str | None = None
    number = _NUMBER.match
    size = len(text)
    pos = _skip(text, 0)
    while True:
        # A value starts at ``pos``.
        char = text[pos] if pos < size else ""
        value: Any
        if char == "{" or char == "[":
            deep = len(stack) >= max_depth
            if deep and problem is None:
                problem = f"nested deeper than {max_depth} levels"
            pos = _skip(text, pos + 1)
            if text.startswith("}" if char == "{" else "]", pos):
                value = {} if char == "{" else []
                pos += 1
            else:
                if deep:
                    overflow.append(ord(char))
                else:
                    stack.append({} if char == "{" else [])
                if char == "{":
                    pos = _key(text, pos, keys, overflow)
                continue
        elif char == '"':
            value, pos = _scanstring(text, pos + 1, True)
        elif char in _LITERALS:
            word, value = _LITERALS[char]
            if not text.startswith(word, pos):
                raise _fail(text, pos, "invalid literal")
            pos += len(word)
        else:
            match = number(text, pos)
            if match is None:
                raise _fail(text, pos, "expected a value")
            integral = match.group(1) is None and match.group(2) is None
            if integral and parse_int is not None:
                value, finite = parse_int(match.group()), True
            else:
                value, finite = _number(match.group(), integral)
            if not finite and problem is None:
                token = match.group()
                shown = token if len(token) <= 24 else f"{token[:20]}… ({len(token)} characters)"
                problem = f"number {shown} is out of a double's range"
            pos = match.end()
        # A value ended: hand it to its container, then close what it closed.
        while True:
            pos = _skip(text, pos)
            char = text[pos] if pos < size else ""
            if overflow:
                kind = overflow[-1]
                if char == ",":
                    pos = _skip(text, pos + 1)
                    if kind == 0x7B:
                        pos = _key(text, pos, keys, overflow)
                    break
                if char != ("}" if kind == 0x7B else "]"):
                    raise _fail(text, pos, "expected ',' or a closing bracket")
                overflow.pop()
                pos += 1
                continue
            if not stack:
                if pos != size:
                    raise _fail(text, pos, "extra data after the document")
                if problem is not None:
                    raise UnrepresentableJson(problem, value)
                return value
            container = stack[-1]
            is_object = type(container) is dict
            if is_object:
                container[keys[-1]] = value
            else:
                container.append(value)
            if char == ",":
                pos = _skip(text, pos + 1)
                if is_object:
                    keys.pop()
                    pos = _key(text, pos, keys, overflow)
                break
            if char != ("}" if is_object else "]"):
                raise _fail(text, pos, "expected ',' or a closing bracket")
            pos += 1
            value = stack.pop()
            if is_object:
                keys.pop()


def _key(text: str, pos: int, keys: list[str], overflow: bytearray) -> int:
    """Read ``"key" :`` at ``pos`` (pushing the key unless inside ``overflow``); the
    position of the value that follows."""
    if not text.startswith('"', pos):
        raise _fail(text, pos, "expected a string key")
    key, pos = _scanstring(text, pos + 1, True)
    pos = _skip(text, pos)
    if not text.startswith(":", pos):
        raise _fail(text, pos, "expected ':'")
    if not overflow:
        keys.append(key)
    return _skip(text, pos + 1)


def encode_deep(value: Any, scalar: Callable[[Any], bytes]) -> bytes:
    """``value`` as compact JSON, arrays and objects walked with an explicit stack;
    ``scalar`` encodes every other value and every key (orjson's bytes, so the result
    is what orjson would write without its depth limit)."""
    parts: list[bytes] = []
    frames: list[list[Any]] = []  # [items iterator, is an object, next item is the first]
    item = value
    while True:
        if isinstance(item, dict):
            parts.append(b"{")
            frames.append([iter(item.items()), True, True])
        elif isinstance(item, list) or type(item) is tuple or type(item) is FrozenList:
            parts.append(b"[")
            frames.append([iter(item), False, True])
        else:
            parts.append(scalar(item))
        while frames:
            frame = frames[-1]
            item = next(frame[0], _END)
            if item is not _END:
                break
            frames.pop()
            parts.append(b"}" if frame[1] else b"]")
        else:
            return b"".join(parts)
        if not frame[2]:
            parts.append(b",")
        frame[2] = False
        if frame[1]:
            key, item = item
            if type(key) is not str:
                raise TypeError("Dict key must be str")
            parts.append(scalar(key) + b":")


def adopt_deep(value: Any) -> Any:
    """``adopt`` with an explicit stack: freeze the plain containers of a fresh decode in
    place, children first. Containers already frozen are left as they are."""
    kind = type(value)
    if kind is not dict and kind is not list:
        return value
    frames: list[list[Any]] = [[value, iter(value.items() if kind is dict else enumerate(value)), None]]
    result: Any = value
    while frames:
        frame = frames[-1]
        for key, item in frame[1]:
            kind = type(item)
            if kind is dict or kind is list:
                frames.append([item, iter(item.items() if kind is dict else enumerate(item)), key])
                break
        else:
            frames.pop()
            container = frame[0]
            frozen = FrozenDict(container) if type(container) is dict else FrozenList(container)
            if frames:
                frames[-1][0][frame[2]] = frozen
            else:
                result = frozen
    return result


def thaw_deep(value: Any) -> Any:
    """``thaw`` with an explicit stack: a deep mutable copy (``dict``/``list``)."""

    def fresh(item: Any) -> Any:
        if isinstance(item, Mapping):
            return {}
        if isinstance(item, list | tuple):
            return []
        return _END

    root = fresh(value)
    if root is _END:
        return value
    pending = [(value, root)]
    while pending:
        source, target = pending.pop()
        if isinstance(source, Mapping):
            for key, item in source.items():
                copy = fresh(item)
                target[key] = item if copy is _END else copy
                if copy is not _END:
                    pending.append((item, copy))
        else:
            for item in source:
                copy = fresh(item)
                target.append(item if copy is _END else copy)
                if copy is not _END:
                    pending.append((item, copy))
    return root


def equal_deep(left: Any, right: Any) -> bool:
    """``json_equal`` with an explicit stack (the same rules)."""
    pending = [(left, right)]
    while pending:
        left, right = pending.pop()
        if isinstance(left, bool) or isinstance(right, bool):
            if not (type(left) is type(right) and left == right):
                return False
        elif isinstance(left, Mapping):
            if not isinstance(right, Mapping) or len(left) != len(right):
                return False
            for key, item in left.items():
                if key not in right:
                    return False
                pending.append((item, right[key]))
        elif isinstance(left, list | tuple):
            if not isinstance(right, list | tuple) or len(left) != len(right):
                return False
            pending.extend(zip(left, right, strict=True))
        elif isinstance(left, int | float) and isinstance(right, int | float):
            if left != right:
                return False
        elif not (type(left) is type(right) and bool(left == right)):
            return False
    return True

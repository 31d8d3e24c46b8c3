"""The fast path of a restore: stored lines to checked ``Event``s (FORMAT §7.2, §9.2).

``fast_events`` turns the lines of a healthy log (storage rows: event lines and packed
chunk rows) into the events ``Session.from_checked`` adopts, applying on the way every
rule the exact pipeline applies before the Surface: nothing legacy (``is_current``), a
valid envelope, the message and request-header shapes, data stored as the bytes
``dumps`` writes. It is a fast path only: at the first thing it does not settle itself
(a line that does not decode with orjson, a legacy or invalid event, a shape check
that fails, a float seq) it raises ``StreamRejected``, and the store reads the log the
exact way, which then gives the precise outcome (an error, a legacy rewrite).

Two kinds of line never become a Python tree:

* a chunk event (``assistant/chunk`` text, reasoning or tool-call delta) and a packed
  chunk row in the spelling harness and dsh write, matched by a regular expression
  that admits only *canonical* JSON: known keys in FORMAT's order, integers of at most
  15 digits without sign or leading zero (safe, and written back the same), strings
  whose escapes are only the ones ``dumps`` writes (``\\"``, ``\\\\``, ``\\b \\f \\n \\r
  \\t``, ``\\u00XX`` for the other control characters), no whitespace; with the line's
  UTF-8 checked too (``bytes.isascii`` or a strict decode, both C), such a data text is
  exactly ``dumps(loads(text))``, so its bytes are kept as ``data_json``;
* every other line is decoded with ``orjson.loads`` (the exact pipeline's decoder) and
  its data re-encoded with ``dumps_kept``, as the exact pipeline does: whether its
  bytes are canonical cannot be told without the tree (duplicate keys, number
  spellings, ``\\u`` escapes), and messages need the tree for their shape check anyway.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Final

import orjson

from harness.events.envelope import ENVELOPE_KEYS
from harness.events.event import APPEND, Event, Replace, SurfaceOp
from harness.events.json import MAX_SAFE_INTEGER, dumps_kept
from harness.events.packed import PACKED_ROW_TYPES, PackedRowError, expand_row
from harness.events.vocabulary import SURFACE_TYPES
from harness.messages.shapes import message_event_problem, request_header_problem
from harness.stores.backend import StreamRejected
from harness.stores.legacy import is_current

__all__ = ["fast_events"]

_CHUNK: Final = "assistant/chunk"
_NUM: Final = rb"(?:0|[1-9][0-9]{0,14})"
"""A canonical integer that is safe (< 10^15 < 2^53) and that ``dumps`` writes the same."""
_SIGNED: Final = rb"-?" + _NUM
"""An envelope integer: only its value is kept (``-0`` reads as 0, as ``loads`` reads it)."""
_STR: Final = rb'"(?:[^"\\\x00-\x1f]++|\\["\\bfnrt]|\\u00(?:0[0-7bef]|1[0-9a-f]))*+"'
"""A JSON string exactly as ``dumps`` writes it (raw UTF-8, checked apart, and the escapes
``dumps`` uses; any other escape, ``\\/`` or ``\\u00e9`` say, is not matched)."""

_CHUNK_DATA: Final = (
    rb'\{"turn":' + _NUM + rb',"step":' + _NUM + rb',"chunk":\{"type":(?:"text-delta"|"reasoning-delta")'
    rb',"index":' + _NUM + rb',"text":' + _STR + rb"\}\}"
    rb'|\{"turn":'
    + _NUM
    + rb',"step":'
    + _NUM
    + rb',"chunk":\{"type":"tool-call-delta","index":'
    + _NUM
    + rb',"id":'
    + _STR
    + rb'(?:,"name":'
    + _STR
    + rb')?,"argumentsDelta":'
    + _STR
    + rb"\}\}"
)
_CHUNK_LINE: Final = re.compile(
    rb'\{"type":"assistant/chunk","seq":('
    + _NUM
    + rb'),"time":('
    + _SIGNED
    + rb'),"data":('
    + _CHUNK_DATA
    + rb")\}"
)
_GAPS: Final = rb"((?:" + _SIGNED + rb"(?:," + _SIGNED + rb")*)?)"
_PIECES: Final = rb"(" + _STR + rb"(?:," + _STR + rb")*)"
_ROW_HEAD: Final = (
    rb',"seq0":('
    + _NUM
    + rb'),"time0":('
    + _SIGNED
    + rb'),"data":\{"turn":('
    + _NUM
    + rb'),"step":('
    + _NUM
    + rb'),"index":('
    + _NUM
    + rb'),"dt":\['
    + _GAPS
    + rb"\],"
)
_TEXT_ROW: Final = re.compile(
    rb'\{"type":"(text|reasoning)-chunks"' + _ROW_HEAD + rb'"texts":\[' + _PIECES + rb"\]\}\}"
)
_TOOL_ROW: Final = re.compile(
    rb'\{"type":"(tool-call)-chunks"' + _ROW_HEAD + rb'"id":(' + _STR + rb')(?:,"name":(' + _STR + rb"))?"
    rb',"args":\[' + _PIECES + rb"\]\}\}"
)
_STRING: Final = re.compile(_STR)
_ROW_PREFIXES: Final = (
    b'{"type":"text-chunks"',
    b'{"type":"reasoning-chunks"',
    b'{"type":"tool-call-chunks"',
)
_REPLACE_KEYS: Final = frozenset({"op", "start", "end"})
_MISSING: Any = object()


def _utf8(line: bytes) -> bool:
    if line.isascii():
        return True
    try:
        line.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _reject(index: int, why: str) -> StreamRejected:
    return StreamRejected(f"the fast restore leaves the event at seq {index} to the exact read: {why}")


def _event(record: Any, index: int) -> Event:
    """The event a decoded wire object stands for, checked as the exact pipeline checks it
    before the Surface (``StreamRejected`` for anything it would not take as it is)."""
    if type(record) is not dict or not is_current(record):
        raise _reject(index, "not a current event object")
    if not record.keys() <= ENVELOPE_KEYS or "data" not in record:
        raise _reject(index, "its envelope keys")
    kind = record["type"]
    seq = record.get("seq")
    moment = record.get("time")
    if type(seq) is not int or seq != index:
        raise _reject(index, f"seq {seq!r}")
    if type(moment) is not int or not -MAX_SAFE_INTEGER <= moment <= MAX_SAFE_INTEGER:
        raise _reject(index, "its time")
    ignorable = "ignorable" in record
    if ignorable and record["ignorable"] is not True:  # present means true (FORMAT §2)
        raise _reject(index, "its ignorable")
    data = record["data"]
    if kind == "request/header":
        if request_header_problem(data) is not None:
            raise _reject(index, "its request header shape")
    elif kind in SURFACE_TYPES and message_event_problem(kind, data) is not None:
        raise _reject(index, "its message shape")
    op = record.get("surfaceOp", _MISSING)
    surface_op: SurfaceOp | None = None
    if op is not _MISSING:
        if type(op) is str and op == APPEND:
            surface_op = APPEND
        elif type(op) is dict and op.keys() == _REPLACE_KEYS and op["op"] == "replace":
            start, end = op["start"], op["end"]
            if type(start) is not int or type(end) is not int:
                raise _reject(index, "its surfaceOp")
            surface_op = Replace(start, end)
        else:
            raise _reject(index, "its surfaceOp")
    sources = record.get("sourceEventSeqs", _MISSING)
    seqs: tuple[int, ...] | None = None
    if sources is not _MISSING:
        if type(sources) is not list:
            raise _reject(index, "its sourceEventSeqs")
        seqs = tuple(sources)
        for item in seqs:
            if type(item) is not int:
                raise _reject(index, "its sourceEventSeqs")
    return Event(kind, index, moment, dumps_kept(data), surface_op, seqs, ignorable)


def _row_members(match: re.Match[bytes], tool: bool, index: int) -> list[Event]:
    """The chunk events of a packed row matched in its canonical spelling (as ``expand_row``
    makes them: member k has seq ``seq0 + k`` and time ``time0 + sum(dt[:k])``)."""
    seq0, time0 = int(match[2]), int(match[3])
    if seq0 != index:
        raise _reject(index, f"a packed row at seq0 {seq0}")
    pieces = _STRING.findall(match[10 if tool else 8])
    gaps = match[7]
    steps = [int(gap) for gap in gaps.split(b",")] if gaps else []
    if len(steps) != len(pieces) - 1:
        raise _reject(index, "a packed row's dt")
    if tool:
        name = match[9]
        head = (
            b'{"turn":%s,"step":%s,"chunk":{"type":"tool-call-delta","index":%s,"id":%s%s,"argumentsDelta":'
            % (
                match[4],
                match[5],
                match[6],
                match[8],
                b"" if name is None else b',"name":' + name,
            )
        )
    else:
        head = b'{"turn":%s,"step":%s,"chunk":{"type":"%s-delta","index":%s,"text":' % (
            match[4],
            match[5],
            match[1],
            match[6],
        )
    members: list[Event] = []
    moment = time0
    for offset, piece in enumerate(pieces):
        if offset:
            moment += steps[offset - 1]
            if not -MAX_SAFE_INTEGER <= moment <= MAX_SAFE_INTEGER:
                raise _reject(index + offset, "a packed member's time")
        members.append(Event(_CHUNK, index + offset, moment, head + piece + b"}}"))
    return members


def _is_row_tag(kind: object) -> bool:
    return type(kind) is str and kind in PACKED_ROW_TYPES


def fast_events(
    lines: Iterable[bytes | str | tuple[int, bytes | str]],
    *,
    packed: bool = True,
    finished: Callable[[int], None] | None = None,
) -> Iterator[Event]:
    """The checked events of ``lines`` (one storage row each, no newline, from seq 0).

    A row may come keyed, as ``(seq, line)`` with the seq it is stored under (SQLite):
    that seq must be the seq of the row's first event, as the exact read checks.

    ``packed``: the storage holds packed chunk rows (FORMAT §9.2), expanded here; else a
    row tagged like one is an event of that type. Raises ``StreamRejected`` at anything
    the exact read must judge. ``finished`` is told the event count after the last line
    (it may raise ``StreamRejected`` itself).
    """
    index = 0
    for row in lines:
        if isinstance(row, tuple):  # a keyed row: its stored seq must be this index
            stored, raw = row
            if stored != index:
                raise _reject(index, f"a row stored at seq {stored!r}")
        else:
            raw = row
        if type(raw) is bytes:
            line = raw
        elif isinstance(raw, str):
            try:
                line = raw.encode("utf-8")
            except UnicodeEncodeError:  # a lone surrogate: the exact read decides
                raise _reject(index, "a line that is not UTF-8") from None
        else:
            line = bytes(raw)
        if line.startswith(b'{"type":"assistant/chunk","seq":'):
            match = _CHUNK_LINE.fullmatch(line)
            if match is not None and (line.isascii() or _utf8(line)):
                seq, moment, data = match.groups()
                if int(seq) != index:
                    raise _reject(index, f"seq {seq!r}")
                yield Event(_CHUNK, index, int(moment), data)
                index += 1
                continue
        elif packed and line.startswith(_ROW_PREFIXES):
            tool = line.startswith(_ROW_PREFIXES[2])
            match = (_TOOL_ROW if tool else _TEXT_ROW).fullmatch(line)
            if match is not None and (line.isascii() or _utf8(line)):
                members = _row_members(match, tool, index)
                index += len(members)
                yield from members
                continue
        try:
            record = orjson.loads(line)
        except orjson.JSONDecodeError:
            raise _reject(index, "a line orjson does not decode") from None
        if packed and type(record) is dict and _is_row_tag(record.get("type")):
            try:
                expanded = expand_row(record)
            except PackedRowError:
                raise _reject(index, "an invalid packed row") from None
            for member in expanded:
                yield _event(member, index)
                index += 1
            continue
        yield _event(record, index)
        index += 1
    if finished is not None:
        finished(index)

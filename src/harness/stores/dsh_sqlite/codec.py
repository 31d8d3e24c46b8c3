"""Schema 17's physical rows: what one ``events`` row holds and how a write batch becomes rows.

Ported rule for rule from dsh's ``session-persistence-sqlite`` (``src/codec.ts`` and
``src/compression.ts``); ``docs/dsh-sqlite.md`` says the same in prose.

* **Scalar row**: one event. ``data`` is the JSON of the event's data as ``TEXT``; when that JSON
  is 4,096 bytes or more it is compressed with Zstandard level 3 and stored as a ``BLOB`` only if
  the frame is smaller. ``source_event_seqs`` is the provenance BLOB (below) or ``NULL`` when the
  event has none; ``surface_op`` the JSON of the Surface op or ``NULL``; ``ignorable`` 1 or ``NULL``.
* **Packed row** (``ignorable = 0``, the discriminator): 3 to 1,024 adjacent delta chunks of one
  block. ``type`` is ``text-chunks``, ``reasoning-chunks`` or ``tool-call-chunks``; ``seq`` and
  ``time`` are the first member's; ``data`` is ``{"turn","step","index","dt",("id","name"?)
  "texts"|"args"}`` (at most 1 MiB of UTF-8, compressed by the same rule);
  ``source_event_seqs`` and ``surface_op`` are ``NULL``.
* **Provenance**: the first seq as an unsigned LEB128 varint, each later one as the ZigZag
  varint of its difference from the one before; ``[]`` is the empty BLOB. A varint is canonical
  (no trailing zero group), at most 9 bytes, and in range.

A row that breaks a rule raises ``RowMalformed``; whether that is a torn tail or corruption is
the scanner's business (``scan.py``). Committed JSON that dsh reads but harness cannot hold
raises ``RowUnreadable``, which is corruption wherever it is.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final, NamedTuple, TypeAlias

import orjson
import zstandard

from harness.events.event import Event, Replace
from harness.events.json import MAX_SAFE_INTEGER, UnrepresentableJson, dumps, loads
from harness.events.packed import expand_row

__all__ = [
    "MAX_PACKED_DATA_BYTES",
    "MAX_PACKED_MEMBERS",
    "MIN_PACKED_MEMBERS",
    "PACKED_TAGS",
    "ZSTD_LEVEL",
    "ZSTD_THRESHOLD",
    "BoundRow",
    "RowMalformed",
    "RowUnreadable",
    "StoredRow",
    "bind_event",
    "decode_row",
    "decode_seqs",
    "encode_data",
    "encode_seqs",
    "pack_batch",
]

ZSTD_THRESHOLD: Final = 4096
"""Serialized data of at least this many bytes is compressed (when the frame is smaller)."""
ZSTD_LEVEL: Final = 3
MIN_PACKED_MEMBERS: Final = 3
MAX_PACKED_MEMBERS: Final = 1024
MAX_PACKED_DATA_BYTES: Final = 1 << 20
PACKED_TAGS: Final = {"text-delta": "text-chunks", "reasoning-delta": "reasoning-chunks"}
_TOOL_TAG: Final = "tool-call-chunks"
_CHUNK_TAGS: Final = frozenset({"text-chunks", "reasoning-chunks", _TOOL_TAG})
_PACKED: Final = 0
_MAX_ZIGZAG: Final = MAX_SAFE_INTEGER * 2


class RowMalformed(ValueError):
    """A physical row that breaks schema 17's rules (dsh's "malformed storage row")."""


class RowUnreadable(ValueError):
    """A row whose JSON dsh would parse but harness cannot hold (a number beyond a double,
    invalid UTF-8, nesting past the read limit): committed corruption wherever it is."""


class BoundRow(NamedTuple):
    """One physical row ready to insert: ``(seq, type, time, data, source_event_seqs,
    surface_op, ignorable)``."""

    seq: int
    type: str
    time: int
    data: str | bytes
    source_event_seqs: bytes | None
    surface_op: str | None
    ignorable: int | None


class StoredRow(NamedTuple):
    """One physical row as read, column types already checked (``schema.event_row``)."""

    seq: int
    type: str
    time: int
    data: str | bytes  # TEXT (as UTF-8 bytes read from SQLite: ``bytes`` with ``blob=False``) or BLOB
    data_is_blob: bool
    source_event_seqs: bytes | None
    surface_op: bytes | None
    ignorable: int | None


# ---- provenance varints ------------------------------------------------------------------


def encode_seqs(values: Sequence[int]) -> bytes:
    """``sourceEventSeqs`` as schema 17's BLOB: unsigned first, then ZigZag deltas."""
    out = bytearray()
    previous = 0
    for index, value in enumerate(values):
        if type(value) is not int or not 0 <= value <= MAX_SAFE_INTEGER:
            raise ValueError("sourceEventSeqs must contain non-negative safe integers")
        if index == 0:
            encoded = value
        elif value >= previous:
            encoded = (value - previous) * 2
        else:
            encoded = (previous - value) * 2 - 1
        while encoded >= 0x80:
            out.append((encoded & 0x7F) | 0x80)
            encoded >>= 7
        out.append(encoded)
        previous = value
    return bytes(out)


def _varint(blob: bytes, offset: int, limit: int) -> tuple[int, int]:
    value = 0
    shift = 0
    while offset < len(blob):
        byte = blob[offset]
        offset += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            if shift and not byte & 0x7F:
                raise RowMalformed("malformed source_event_seqs storage value: non-canonical varint")
            if value > limit:
                raise RowMalformed("malformed source_event_seqs storage value: varint is out of range")
            return value, offset
        shift += 7
        if shift > 56:
            raise RowMalformed("malformed source_event_seqs storage value: varint is out of range")
    raise RowMalformed("malformed source_event_seqs storage value: truncated varint")


def decode_seqs(blob: bytes) -> list[int]:
    """The seqs a provenance BLOB holds; ``RowMalformed`` for any breach of the codec."""
    values: list[int] = []
    previous = 0
    offset = 0
    while offset < len(blob):
        first = not values
        raw, offset = _varint(blob, offset, MAX_SAFE_INTEGER if first else _MAX_ZIGZAG)
        value = raw if first else previous + (raw // 2 if raw % 2 == 0 else -((raw + 1) // 2))
        if not 0 <= value <= MAX_SAFE_INTEGER:
            raise RowMalformed("malformed source_event_seqs storage value: decoded seq is out of range")
        values.append(value)
        previous = value
    return values


# ---- data column -------------------------------------------------------------------------


def encode_data(serialized: bytes) -> str | bytes:
    """The ``data`` column for this JSON: ``TEXT`` under 4 KiB, else a level-3 zstd frame
    when it is smaller than the text."""
    if len(serialized) < ZSTD_THRESHOLD:
        return serialized.decode("utf-8")
    frame = zstandard.ZstdCompressor(level=ZSTD_LEVEL).compress(serialized)
    return frame if len(frame) < len(serialized) else serialized.decode("utf-8")


def _unzstd(blob: bytes, limit: int | None) -> bytes:
    parts: list[bytes] = []
    size = 0
    rest = blob
    try:
        while True:
            stream = zstandard.ZstdDecompressor().decompressobj()
            part = stream.decompress(rest)
            size += len(part)
            if limit is not None and size > limit:
                raise RowMalformed(f"data exceeds {limit} UTF-8 bytes")
            parts.append(part)
            if not stream.eof:
                raise RowMalformed("truncated zstd frame in data")
            rest = stream.unused_data
            if not rest:
                return b"".join(parts)
    except zstandard.ZstdError as error:
        raise RowMalformed(f"data is not a zstd frame: {error}") from None


def _data_bytes(row: StoredRow, limit: int | None) -> bytes:
    """The JSON text of the row's data: decompressed and checked to be UTF-8 for a BLOB."""
    data = row.data
    if not row.data_is_blob:
        return data if isinstance(data, bytes) else data.encode("utf-8", "surrogatepass")
    raw = _unzstd(data if isinstance(data, bytes) else data.encode("utf-8"), limit)
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        raise RowMalformed("decompressed data is not UTF-8") from None
    return raw


def _parse(raw: bytes, what: str) -> Any:
    try:
        return loads(raw)
    except UnrepresentableJson as error:
        raise RowUnreadable(f"{what} is JSON harness cannot read: {error}") from None
    except ValueError as error:
        raise RowMalformed(f"{what} is not JSON: {error}") from None


# ---- reading rows ------------------------------------------------------------------------


def _safe_read(value: object) -> int | None:
    """``Number.isSafeInteger`` of a parsed JSON value (``3.0`` counts, as in JavaScript)."""
    if type(value) is float and value.is_integer():
        value = int(value)
    if type(value) is int and -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER:
        return value
    return None


def _is_number(value: object) -> bool:
    return type(value) is int or type(value) is float


_TEXT_KEYS: Final = frozenset({"turn", "step", "index", "dt", "texts"})
_TOOL_KEYS: Final = frozenset({"turn", "step", "index", "id", "dt", "args"})
_TOOL_KEYS_NAMED: Final = _TOOL_KEYS | {"name"}


def _check_packed(tag: str, seq0: int, time0: int, data: Any) -> None:
    """dsh's ``validateRow`` for a packed row's parsed data."""
    if not isinstance(data, dict):
        raise RowMalformed(f"malformed {tag} storage row: invalid data fields")
    if tag == _TOOL_TAG:
        named = data.keys() == _TOOL_KEYS_NAMED
        if not named and data.keys() != _TOOL_KEYS:
            raise RowMalformed(f"malformed {tag} storage row: invalid tool-call data fields")
        if type(data["id"]) is not str or (named and type(data["name"]) is not str):
            raise RowMalformed(f"malformed {tag} storage row: id and optional name must be strings")
        payload = data["args"]
        key = "args"
    else:
        if data.keys() != _TEXT_KEYS:
            raise RowMalformed(f"malformed {tag} storage row: invalid text data fields")
        payload = data["texts"]
        key = "texts"
    if not (_is_number(data["turn"]) and _is_number(data["step"]) and _is_number(data["index"])):
        raise RowMalformed(f"malformed {tag} storage row: turn/step/index must be numbers")
    if (
        type(payload) is not list
        or not MIN_PACKED_MEMBERS <= len(payload) <= MAX_PACKED_MEMBERS
        or any(type(member) is not str for member in payload)
    ):
        raise RowMalformed(
            f"malformed {tag} storage row: {key} must contain "
            f"{MIN_PACKED_MEMBERS}..{MAX_PACKED_MEMBERS} strings"
        )
    gaps = data["dt"]
    if type(gaps) is not list or any(_safe_read(gap) is None for gap in gaps):
        raise RowMalformed(f"malformed {tag} storage row: dt must be an array of safe integers")
    if len(gaps) != len(payload) - 1:
        raise RowMalformed(f"malformed {tag} storage row: dt length must match the member count")
    if seq0 + len(payload) - 1 > MAX_SAFE_INTEGER:
        raise RowMalformed(f"malformed {tag} storage row: member seqs exceed safe integers")
    moment = time0
    for gap in gaps:
        moment += _safe_read(gap) or 0
        if not -MAX_SAFE_INTEGER <= moment <= MAX_SAFE_INTEGER:
            raise RowMalformed(f"malformed {tag} storage row: member times exceed safe integers")


def decode_row(row: StoredRow) -> list[dict[str, Any]]:
    """The wire events one physical row stands for (dsh's ``decodeRow``), in dsh's key order:
    ``type, seq, time, data, sourceEventSeqs?, surfaceOp?, ignorable?``."""
    if row.ignorable != _PACKED:
        return [_decode_scalar(row)]
    tag = row.type
    if tag not in _CHUNK_TAGS:
        raise RowMalformed(f"malformed {tag} storage row: packed discriminator requires a chunk tag")
    if row.source_event_seqs is not None or row.surface_op is not None:
        raise RowMalformed(f"malformed {tag} storage row: packed surface fields must be null")
    raw = _data_bytes(row, MAX_PACKED_DATA_BYTES)
    if len(raw) > MAX_PACKED_DATA_BYTES:
        raise RowMalformed(f"malformed {tag} storage row: data exceeds {MAX_PACKED_DATA_BYTES} UTF-8 bytes")
    data = _parse(raw, f"the data of the {tag} row at seq {row.seq}")
    _check_packed(tag, row.seq, row.time, data)
    return expand_row({"type": tag, "seq0": row.seq, "time0": row.time, "data": data})


def _decode_scalar(row: StoredRow) -> dict[str, Any]:
    event: dict[str, Any] = {
        "type": row.type,
        "seq": row.seq,
        "time": row.time,
        "data": _parse(_data_bytes(row, None), f"the data of the row at seq {row.seq}"),
    }
    if row.source_event_seqs is not None:
        event["sourceEventSeqs"] = decode_seqs(row.source_event_seqs)
    if row.surface_op is not None:
        event["surfaceOp"] = _parse(row.surface_op, f"the surface_op of the row at seq {row.seq}")
    if row.ignorable == 1:
        event["ignorable"] = True
    return event


# ---- writing rows ------------------------------------------------------------------------


def _surface_op_text(event: Event) -> str | None:
    op = event.surface_op
    if op is None:
        return None
    if isinstance(op, Replace):
        return f'{{"op":"replace","start":{op.start},"end":{op.end}}}'
    return dumps(op).decode("utf-8")


def bind_event(event: Event) -> BoundRow:
    """The scalar row of one event (dsh's ``bindRecord`` of an event)."""
    seqs = event.source_event_seqs
    return BoundRow(
        event.seq,
        event.type,
        event.time,
        encode_data(event.data_json),
        None if seqs is None else encode_seqs(seqs),
        _surface_op_text(event),
        1 if event.ignorable else None,
    )


class _Chunk(NamedTuple):
    """A packable ``assistant/chunk``: its block (what must match along a run) and piece."""

    kind: str
    turn: int | float
    step: int | float
    position: int | float  # the chunk's ``index`` (the block's position in the message)
    call_id: str | None
    name: str | None
    named: bool
    piece: bytes  # the piece as JSON (a string literal)


_TEXT_CHUNK_KEYS: Final = frozenset({"type", "index", "text"})
_TOOL_CHUNK_KEYS: Final = frozenset({"type", "index", "id", "argumentsDelta"})
_TOOL_CHUNK_KEYS_NAMED: Final = _TOOL_CHUNK_KEYS | {"name"}


def _classify(event: Event) -> _Chunk | None:
    """dsh's ``classify``: an exact text/reasoning/tool-call delta chunk, else ``None``."""
    if (
        event.type != "assistant/chunk"
        or event.surface_op is not None
        or event.source_event_seqs is not None
        or event.ignorable
        or not 0 <= event.seq <= MAX_SAFE_INTEGER
        or not -MAX_SAFE_INTEGER <= event.time <= MAX_SAFE_INTEGER
    ):
        return None
    try:
        data = orjson.loads(event.data_json)
    except orjson.JSONDecodeError:
        return None
    if type(data) is not dict or data.keys() != {"turn", "step", "chunk"}:
        return None
    turn, step, chunk = data["turn"], data["step"], data["chunk"]
    if not (_is_number(turn) and _is_number(step)) or type(chunk) is not dict:
        return None
    index: int | float = chunk.get("index")  # type: ignore[assignment]  # checked next
    if not _is_number(index):
        return None
    kind = chunk.get("type")
    if kind in PACKED_TAGS:
        text = chunk.get("text")
        if chunk.keys() != _TEXT_CHUNK_KEYS or type(text) is not str:
            return None
        return _Chunk(kind, turn, step, index, None, None, False, dumps(text))
    if kind == "tool-call-delta":
        named = chunk.keys() == _TOOL_CHUNK_KEYS_NAMED
        if not named and chunk.keys() != _TOOL_CHUNK_KEYS:
            return None
        name = chunk.get("name")
        piece = chunk["argumentsDelta"]
        if (named and type(name) is not str) or type(chunk["id"]) is not str or type(piece) is not str:
            return None
        return _Chunk(kind, turn, step, index, chunk["id"], name, named, dumps(piece))
    return None


def _continues(previous: tuple[Event, _Chunk], following: tuple[Event, _Chunk]) -> bool:
    """dsh's ``continues``: the next member of the same block, one seq later."""
    (left, a), (right, b) = previous, following
    if right.seq != left.seq + 1 or not -MAX_SAFE_INTEGER <= right.time - left.time <= MAX_SAFE_INTEGER:
        return False
    if a.kind != b.kind or a.turn != b.turn or a.step != b.step or a.position != b.position:
        return False
    return a.kind != "tool-call-delta" or (a.call_id == b.call_id and a.named == b.named and a.name == b.name)


def _packed_data(run: Sequence[tuple[Event, _Chunk]]) -> bytes:
    """The packed row's data JSON, in dsh's key order (``buildRow``)."""
    first = run[0][1]
    gaps = b",".join([b"%d" % (run[i][0].time - run[i - 1][0].time) for i in range(1, len(run))])
    head = b'{"turn":%s,"step":%s,"index":%s,"dt":[%s]' % (
        dumps(first.turn),
        dumps(first.step),
        dumps(first.position),
        gaps,
    )
    pieces = b",".join([chunk.piece for _, chunk in run])
    if first.kind == "tool-call-delta":
        name = b',"name":' + dumps(first.name) if first.named else b""
        return head + b',"id":' + dumps(first.call_id) + name + b',"args":[' + pieces + b"]}"
    return head + b',"texts":[' + pieces + b"]}"


def _packed_row(run: Sequence[tuple[Event, _Chunk]], data: bytes) -> BoundRow:
    first, chunk = run[0]
    tag = _TOOL_TAG if chunk.kind == "tool-call-delta" else PACKED_TAGS[chunk.kind]
    return BoundRow(first.seq, tag, first.time, encode_data(data), None, None, _PACKED)


def _emit_run(out: list[BoundRow], run: list[tuple[Event, _Chunk]]) -> None:
    """dsh's ``emitBoundedRun``: rows of as many members as fit (≤1,024, ≤1 MiB of data),
    a member that cannot start a fitting row of three stays scalar."""
    offset = 0
    while len(run) - offset >= MIN_PACKED_MEMBERS:
        high = min(len(run) - offset, MAX_PACKED_MEMBERS)
        largest = _packed_data(run[offset : offset + high])
        if len(largest) <= MAX_PACKED_DATA_BYTES:
            out.append(_packed_row(run[offset : offset + high], largest))
            offset += high
            continue
        low, high = MIN_PACKED_MEMBERS, high - 1
        accepted, accepted_data = 0, b""
        while low <= high:
            middle = (low + high) // 2
            candidate = _packed_data(run[offset : offset + middle])
            if len(candidate) <= MAX_PACKED_DATA_BYTES:
                accepted, accepted_data = middle, candidate
                low = middle + 1
            else:
                high = middle - 1
        if accepted == 0:
            out.append(bind_event(run[offset][0]))
            offset += 1
            continue
        out.append(_packed_row(run[offset : offset + accepted], accepted_data))
        offset += accepted
    out.extend(bind_event(event) for event, _ in run[offset:])


_Run: TypeAlias = list[tuple[Event, _Chunk]]


def pack_batch(events: Sequence[Event]) -> list[BoundRow]:
    """The physical rows of one append batch (dsh's ``packChunkRuns`` + ``bindRecord``):
    every maximal run of exact delta chunks of one block packed, everything else scalar."""
    out: list[BoundRow] = []
    run: _Run = []
    for event in events:
        chunk = _classify(event)
        if chunk is None:
            if run:
                _emit_run(out, run)
                run = []
            out.append(bind_event(event))
            continue
        member = (event, chunk)
        if run and _continues(run[-1], member):
            run.append(member)
            continue
        if run:
            _emit_run(out, run)
        run = [member]
    if run:
        _emit_run(out, run)
    return out

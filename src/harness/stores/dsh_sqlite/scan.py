"""Reading schema 17's physical rows back into a log: column checks and the torn-tail rule.

``event_row`` applies dsh's column rules (``decodeEventRow``) to one fetched row; a breach is
committed corruption wherever the row is. ``scan`` is dsh's ``scanRows``: rows are expanded in
order and must continue the seqs without a gap; the first row that does not decode, or does not
continue, starts a **torn tail** (cut by the next repair) when no later row holds a valid
``turn/end``, and is **committed corruption** otherwise (a later finished turn proves the write
that row belongs to committed).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Final, NamedTuple

from harness.errors import CorruptSession
from harness.stores.dsh_sqlite.codec import RowMalformed, RowUnreadable, StoredRow, decode_row
from harness.stores.dsh_sqlite.schema import safe_int

__all__ = ["ROW_COLUMNS", "Scan", "event_row", "scan"]

ROW_COLUMNS: Final = (
    "seq, typeof(type), type, time, typeof(data), data, typeof(source_event_seqs), source_event_seqs, "
    "typeof(surface_op), surface_op, ignorable"
)
"""The columns ``event_row`` takes, in its order (the ``typeof``s tell TEXT from BLOB)."""

Corrupt = Callable[[str], CorruptSession]


class Scan(NamedTuple):
    """What ``scan`` found: the committed events and, when a torn tail follows them, the seq
    of its first physical row (everything from that row on is cut by a repair)."""

    events: list[dict[str, Any]]
    torn_from: int | None
    torn_detail: str | None


def _text(kind: object, value: object, column: str, corrupt: Corrupt, *, nullable: bool) -> str | None:
    if kind == b"null" and nullable:
        return None
    if kind != b"text" or not isinstance(value, bytes):
        raise corrupt(f"stored event {column} must be a string{' or null' if nullable else ''}")
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        raise corrupt(f"stored event {column} is not valid UTF-8 text") from None


def event_row(raw: Sequence[Any], corrupt: Corrupt) -> StoredRow:
    """One fetched ``ROW_COLUMNS`` row as a ``StoredRow`` (dsh's ``decodeEventRow``)."""
    seq_value, type_kind, type_value, time_value, data_kind, data, seqs_kind, seqs, op_kind, op, ignorable = (
        raw
    )
    seq = safe_int(seq_value, minimum=0)
    if seq is None:
        raise corrupt(f"stored event seq must be a non-negative safe integer, got {seq_value!r}")
    where = f" (the row at seq {seq})"
    if ignorable is not None and (type(ignorable) is not int or ignorable not in (0, 1)):
        raise corrupt(f"stored event ignorable must be 0, 1, or null{where}")
    kind = _text(type_kind, type_value, "type", lambda d: corrupt(d + where), nullable=False)
    if not kind:
        raise corrupt(f"stored event type must not be empty{where}")
    moment = safe_int(time_value)
    if moment is None:
        raise corrupt(f"stored event time must be a safe integer{where}")
    if data_kind not in (b"text", b"blob") or not isinstance(data, bytes):
        raise corrupt(f"stored event data must be a string or blob{where}")
    if seqs_kind not in (b"blob", b"null"):
        raise corrupt(f"stored event source_event_seqs must be a blob or null{where}")
    if op_kind not in (b"text", b"null"):
        raise corrupt(f"stored event surface_op must be a string or null{where}")
    return StoredRow(
        seq,
        kind,
        moment,
        data,
        data_kind == b"blob",
        None if seqs is None else bytes(seqs),
        None if op is None else bytes(op),
        ignorable,
    )


def _last_turn_end(rows: Sequence[StoredRow]) -> int:
    """The index of the last row holding a valid ``turn/end`` (-1 if none). Packed rows hold
    only chunks, so only scalar ``turn/end`` rows are tried."""
    for index in range(len(rows) - 1, -1, -1):
        row = rows[index]
        if row.ignorable == 0 or row.type != "turn/end":
            continue
        try:
            decode_row(row)
        except RowMalformed:
            continue
        except RowUnreadable:
            pass  # dsh reads it: it proves the prefix committed all the same
        return index
    return -1


def scan(rows: Sequence[StoredRow], corrupt: Corrupt, base: int = 0) -> Scan:
    """dsh's ``scanRows`` over rows ordered by seq, expected to start at logical seq ``base``."""
    committed_until = _last_turn_end(rows)
    events: list[dict[str, Any]] = []
    expected = base
    for index, row in enumerate(rows):
        problem: str | None = None
        try:
            members = decode_row(row)
        except RowMalformed as error:
            members, problem = [], str(error)
        except RowUnreadable as error:
            raise corrupt(f"committed event at seq {row.seq}: {error}") from None
        if problem is None:
            for member in members:
                if member["seq"] != expected:
                    problem = f"the row at seq {row.seq} does not continue the log at seq {expected}"
                    break
                expected += 1
        if problem is not None:
            if index <= committed_until:
                raise corrupt(f"invalid committed physical row at seq {row.seq}: {problem}")
            return Scan(events, row.seq, problem)
        events.extend(members)
    return Scan(events, None, None)

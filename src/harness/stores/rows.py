"""What the database backends share: reading a stored header line and streaming event rows.

SQLite and PostgreSQL both keep a session's header line and one row per event holding its
exact wire line. ``header_from_text`` applies the header rules (a foreign version is
``UnsupportedFormat``, checked first; anything else wrong is corruption); ``page_events`` is
the ``WireStream`` body over pages of fetched rows, which lets each page go once it is
decoded and rejects (``StreamRejected``) anything but an object carrying its row's seq.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

from harness.errors import CorruptSession, InvalidHeader, UnsupportedFormat
from harness.events.envelope import as_safe_int, envelope_problem
from harness.events.event import APPEND, Event, Replace, SurfaceOp
from harness.events.json import UnrepresentableJson, dumps_kept, loads
from harness.events.packed import PackedRowError, expand_row, is_packed_row
from harness.session.header import SESSION_FORMAT_VERSION, SessionHeader, validate_header
from harness.stores.backend import ReadProgress, StreamRejected

__all__ = [
    "decode_row",
    "event_from_wire",
    "header_from_text",
    "page_events",
    "page_rows",
    "row_events",
    "row_pages",
    "title_from_line",
    "title_seq",
]

_TYPE = operator.attrgetter("type")


def header_from_text(
    session_id: str, text: object, corrupt: Callable[[str], CorruptSession]
) -> SessionHeader:
    """The stored header line of ``session_id`` as a ``SessionHeader``; ``corrupt(detail)``
    makes the error for a damaged one."""
    try:
        raw = loads(text) if isinstance(text, str | bytes) else None
    except UnrepresentableJson as error:  # judged like the JSONL header line: version first
        raw = error.value
    except ValueError:
        raw = None
    if not isinstance(raw, dict):
        raise corrupt("the session header is not a JSON object")
    version = raw.get("version")
    if isinstance(version, int | float) and not isinstance(version, bool):
        number = as_safe_int(version)
        if number != SESSION_FORMAT_VERSION:
            when = (
                "written by a newer harness — upgrade the harness"
                if number is None or number > SESSION_FORMAT_VERSION
                else f"older than the supported v{SESSION_FORMAT_VERSION}, no upgrade path"
            )
            raise UnsupportedFormat(f"stored session {session_id!r} has format version {version!r}: {when}")
    if raw.get("type") != "session":
        raise corrupt("the session header is not tagged type 'session'")
    try:
        return validate_header(raw, session_id)
    except InvalidHeader as error:
        raise corrupt(f"invalid session header: {error}") from None


def decode_row(
    line: Any, seq: int, corrupt: Callable[[str], CorruptSession], *, packed: bool = False
) -> list[dict[str, Any]]:
    """The events the stored row at ``seq`` holds: its event, or a packed row's members
    when ``packed``. ``corrupt(detail)`` makes the error for a damaged row (the exact read)."""
    try:
        record = loads(line)
        members = expand_row(record) if packed and is_packed_row(record) else [record]
    except UnrepresentableJson as error:
        raise corrupt(f"committed event at seq {seq} is JSON harness cannot read: {error}") from None
    except (ValueError, PackedRowError) as error:
        raise corrupt(f"unparsable committed event at seq {seq}: {error}") from None
    first = members[0]
    if type(first) is not dict or first.get("seq") != seq:
        raise corrupt(f"the event row at seq {seq} does not hold the event with that seq")
    return members


def title_seq(batch: Sequence[Event]) -> int | None:
    """The seq of the last event of ``batch`` that sets the title ``list()`` reports."""
    if type(batch) is list and "session/title" not in map(_TYPE, reversed(batch)):
        return None  # the loop below finds no title event: the same ``==`` of each type, in order
    for event in reversed(batch):
        if event.type == "session/title":
            data = event.data
            if isinstance(data, Mapping) and isinstance(data.get("title"), str):
                return event.seq
    return None


def page_events(
    pages: Iterable[Sequence[Any]],
    progress: ReadProgress,
    length: int,
    *,
    keyed: bool = False,
    packed: bool = False,
) -> Iterator[dict[str, Any]]:
    """Decode the stored rows of ``pages`` (in seq order) as the events with seqs 0 …
    ``length`` − 1, expanding packed chunk rows when ``packed``.

    A row is its line (bytes or text), or, when ``keyed``, a ``(seq, line)`` pair whose
    ``seq`` column must be the seq of the row's first event (the exact read's rule).
    ``progress`` counts events. Each page is dropped once decoded.
    """
    expected = 0
    index = 0
    for page in pages:
        for row in page:
            if keyed:
                seq, line = row
                if seq != expected:
                    raise StreamRejected(f"row {index} is stored at seq {seq!r}, not {expected}")
            else:
                line = row
            try:
                record = loads(line)
            except ValueError:
                raise StreamRejected(f"unparsable row {index}") from None
            if type(record) is not dict:
                raise StreamRejected(f"row {index} is not an object")
            if packed and is_packed_row(record):
                try:
                    members = expand_row(record)
                except PackedRowError:
                    raise StreamRejected(f"row {index} is an invalid packed row") from None
            else:
                members = [record]
            for event in members:
                if event.get("seq") != expected:
                    raise StreamRejected(f"row {index} does not hold seq {expected}")
                expected += 1
                yield event
            index += 1
            progress.done = expected
        del page
    if expected != length:
        raise StreamRejected(f"{expected} events stored where {length} are recorded")


def row_pages(rows: list[Any], size: int = 1024) -> Iterator[list[Any]]:
    """``rows`` in pages of ``size``, each row let go from ``rows`` once its page is handed out."""
    for start in range(0, len(rows), size):
        page = rows[start : start + size]
        rows[start : start + size] = [None] * len(page)
        yield page


def page_rows(pages: Iterable[list[Any]], progress: ReadProgress) -> Iterator[Any]:
    """Every row of ``pages`` in order (``WireStream.lines``); ``progress`` counts rows."""
    for page in pages:
        yield from page
        progress.done += len(page)


def title_from_line(line: object) -> str | None:
    """The title a stored ``session/title`` line sets (``list()``), or ``None``."""
    if line is None:
        return None
    try:
        event = loads(line) if isinstance(line, str | bytes) else None
    except ValueError:
        return None
    data = event.get("data") if isinstance(event, dict) else None
    value = data.get("title") if isinstance(data, dict) else None
    return value if isinstance(value, str) else None


def event_from_wire(obj: dict[str, Any], corrupt: Callable[[str], CorruptSession]) -> Event:
    """An ``Event`` from a committed wire object, its envelope checked (``corrupt(detail)``
    makes the error). Surface rules are not checked: a tail reports what was committed, it
    does not restore a session."""
    problem = envelope_problem(obj)
    if problem is not None:
        raise corrupt(f"event at seq {obj.get('seq')!r}: {problem}")
    raw_op = obj.get("surfaceOp")
    sources = obj.get("sourceEventSeqs")
    op: SurfaceOp | None
    try:
        if raw_op is None:
            op = None
        elif raw_op == APPEND:
            op = APPEND
        elif isinstance(raw_op, dict) and raw_op.get("op") == "replace":
            op = Replace(int(raw_op["start"]), int(raw_op["end"]))
        else:
            raise ValueError(f"unknown surfaceOp {raw_op!r}")
        seqs = tuple(int(seq) for seq in sources) if isinstance(sources, list) else None
    except (KeyError, TypeError, ValueError) as error:
        raise corrupt(f"event at seq {obj['seq']}: {error}") from None
    return Event(
        obj["type"],
        as_safe_int(obj["seq"], negative_zero=True),  # type: ignore[arg-type]
        as_safe_int(obj["time"], negative_zero=True),  # type: ignore[arg-type]
        dumps_kept(obj["data"]),
        op,
        seqs,
        obj.get("ignorable") is True,
    )


def row_events(
    line: Any, seq: int, from_seq: int, corrupt: Callable[[str], CorruptSession], out: list[Event]
) -> int:
    """For a tail: append to ``out`` the events of the stored row at ``seq`` (its event, or a
    packed row's members) whose seq is ``from_seq`` or more, each checked to carry the next
    seq; return the seq after the row."""
    for obj in decode_row(line, seq, corrupt, packed=True):
        member = obj.get("seq")
        if type(member) is not int or member != seq:
            raise corrupt(f"event seq {member!r} where {seq} was due")
        if member >= from_seq:
            out.append(event_from_wire(obj, corrupt))
        seq += 1
    return seq

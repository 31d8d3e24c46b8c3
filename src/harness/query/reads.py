"""Bounded reads, for callers that must not hold a whole log: a prompt, a browser, a terminal.

* ``window(source, seq, before=N, after=M)``: one event with up to N events before it and M
  after it (with ``where``, the neighbours are the nearest events the filter keeps; the
  target is always in);
* ``page(source, where=..., start=..., limit=...)``: up to ``limit`` events the filter keeps,
  from seq ``start`` on, and a cursor for the next page (``None`` on the last one).

Both return ``EventRecord`` values, so every event comes with its classification, turn, step
and shadowing. Sizes are bounded (``MAX_WINDOW`` per side, ``MAX_PAGE`` per page); a size out
of bounds raises ``InvalidQuery``. A cursor is opaque text that names where the next page
starts and the filter it belongs to: given with another filter, or damaged, it raises
``InvalidQuery``; since a log only grows, a cursor stays usable as the session grows.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from typing import Any, Final

import msgspec

from harness.errors import InvalidQuery
from harness.query.filters import EventFilter, matching_seqs
from harness.query.index import QuerySource, index_of
from harness.query.records import EventRecord

__all__ = ["MAX_PAGE", "MAX_WINDOW", "EventPage", "EventWindow", "page", "window"]

MAX_WINDOW: Final = 1_000
"""The most events a window holds on each side of its target."""

MAX_PAGE: Final = 10_000
"""The most events one page holds."""

_CURSOR_PREFIX: Final = "hq1."


class EventWindow(msgspec.Struct, frozen=True, kw_only=True):
    """An event (``target``) and its neighbours: ``records`` in seq order, the target among
    them; ``length`` is how many events the log held when read."""

    target: EventRecord
    records: tuple[EventRecord, ...]
    length: int

    @property
    def first(self) -> int:
        """The seq of the window's first event."""
        return self.records[0].seq

    @property
    def last(self) -> int:
        """The seq of the window's last event."""
        return self.records[-1].seq

    def to_json(self) -> dict[str, Any]:
        return {
            "target": self.target.seq,
            "first": self.first,
            "last": self.last,
            "length": self.length,
            "records": [record.to_json() for record in self.records],
        }


class EventPage(msgspec.Struct, frozen=True, kw_only=True):
    """One page: ``records`` in seq order and the cursor of the next page (``None``: no more)."""

    records: tuple[EventRecord, ...]
    next_cursor: str | None
    length: int

    def to_json(self) -> dict[str, Any]:
        return {
            "records": [record.to_json() for record in self.records],
            "nextCursor": self.next_cursor,
            "length": self.length,
        }


def _count(name: str, value: object, most: int, least: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not least <= value <= most:
        raise InvalidQuery(f"{name} must be an integer from {least} to {most}, got {value!r}")
    return value


def window(
    source: QuerySource,
    seq: int,
    *,
    before: int = 5,
    after: int = 5,
    where: EventFilter | None = None,
) -> EventWindow:
    """The event at ``seq`` and up to ``before``/``after`` neighbours (see the module doc).
    ``EventNotFound`` when there is no such seq."""
    before = _count("before", before, MAX_WINDOW)
    after = _count("after", after, MAX_WINDOW)
    index = index_of(source)
    target = index.record(seq)
    if where is None or where.empty:
        first, last = max(0, seq - before), min(len(index) - 1, seq + after)
        seqs = list(range(first, last + 1))
    else:
        earlier: list[int] = []
        if before:
            for found in matching_seqs(index, where, start=seq - 1, reverse=True) if seq else ():
                earlier.append(found)
                if len(earlier) >= before:
                    break
        later: list[int] = []
        if after:
            for found in matching_seqs(index, where, start=seq + 1):
                later.append(found)
                if len(later) >= after:
                    break
        seqs = [*reversed(earlier), seq, *later]
    return EventWindow(target=target, records=tuple(index.record(s) for s in seqs), length=len(index))


def _filter_digest(where: EventFilter) -> str:
    return hashlib.sha256(where.key().encode()).hexdigest()[:16]


def _encode_cursor(next_seq: int, where: EventFilter) -> str:
    body = json.dumps({"n": next_seq, "f": _filter_digest(where)}, separators=(",", ":")).encode()
    return _CURSOR_PREFIX + base64.urlsafe_b64encode(body).decode().rstrip("=")


def _decode_cursor(cursor: object, where: EventFilter) -> int:
    if not isinstance(cursor, str) or not cursor.startswith(_CURSOR_PREFIX):
        raise InvalidQuery(f"not a page cursor: {cursor!r}")
    text = cursor[len(_CURSOR_PREFIX) :]
    try:
        body = json.loads(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))
    except (ValueError, binascii.Error):
        raise InvalidQuery(f"a damaged page cursor: {cursor!r}") from None
    next_seq = body.get("n") if isinstance(body, dict) else None
    if isinstance(next_seq, bool) or not isinstance(next_seq, int) or next_seq < 0:
        raise InvalidQuery(f"a damaged page cursor: {cursor!r}")
    if body.get("f") != _filter_digest(where):
        raise InvalidQuery("the page cursor belongs to another query (its filter differs)")
    return next_seq


def page(
    source: QuerySource,
    *,
    where: EventFilter | None = None,
    start: int = 0,
    limit: int = 100,
    cursor: str | None = None,
) -> EventPage:
    """Up to ``limit`` records of the events ``where`` keeps, from seq ``start`` or from where
    ``cursor`` (a previous page's ``next_cursor``, with the same filter) left off."""
    limit = _count("limit", limit, MAX_PAGE, least=1)
    where = where if where is not None else EventFilter()
    if cursor is not None:
        if start != 0:
            raise InvalidQuery("give either start or cursor, not both")
        start = _decode_cursor(cursor, where)
    elif isinstance(start, bool) or not isinstance(start, int) or start < 0:
        raise InvalidQuery(f"start must be a non-negative integer, got {start!r}")
    index = index_of(source)
    records: list[EventRecord] = []
    next_cursor: str | None = None
    for seq in matching_seqs(index, where, start=start):
        if len(records) == limit:  # one match beyond the page: there is a next page, starting here
            next_cursor = _encode_cursor(seq, where)
            break
        records.append(index.record(seq))
    return EventPage(records=tuple(records), next_cursor=next_cursor, length=len(index))

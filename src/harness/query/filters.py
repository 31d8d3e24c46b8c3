"""``EventFilter``: which events a query keeps.

A filter is a set of clauses. An event passes when it satisfies **every** clause given (AND
across clauses) and a clause is satisfied by **any** of its values (OR within one); a clause
left empty does not filter, so ``EventFilter()`` keeps everything. The clauses:

* ``seqs`` / ``times``: inclusive ``Range`` values over the seq or the event time (epoch ms);
  either end may be open;
* ``types``: event types, exact (``tool/result``) or a whole family (``compaction/*``);
* ``classifications``: ``current``, ``shadowed``, ``log-only``;
* ``turns`` / ``steps``: the number of the turn, or of the step (steps restart at 1 in each
  turn, so ``turns=(2,), steps=(1,)`` is the first step of turn 2);
* ``text``: literal needles found in the event's semantic text (``harness.query.text``),
  case-insensitively and whitespace-flexibly (``harness.query.match``): never a pattern.

Every value is checked when the filter is made; a bad one raises ``InvalidQuery`` naming the
clause. A filter is frozen and hashable; ``key()`` is its canonical text (cursors bind to it).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Final

from harness.errors import InvalidQuery
from harness.query.index import QueryIndex, QuerySource, index_of
from harness.query.match import TextNeedle
from harness.query.records import CLASSIFICATIONS, Classification, EventRecord
from harness.query.text import TEXT_TYPES, event_text

__all__ = ["EventFilter", "Range", "filter_events", "matching_seqs"]

_FAMILY_SUFFIX: Final = "/*"


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


@dataclass(frozen=True, slots=True)
class Range:
    """An inclusive range ``start``..``end``; ``None`` leaves that end open."""

    start: int | None = None
    end: int | None = None

    def __post_init__(self) -> None:
        for name in ("start", "end"):
            value = getattr(self, name)
            if value is not None and not _is_int(value):
                raise InvalidQuery(f"a range's {name} must be an integer or None, got {value!r}")
        if self.start is not None and self.end is not None and self.start > self.end:
            raise InvalidQuery(f"a range's start {self.start} is after its end {self.end}")

    def __contains__(self, value: object) -> bool:
        return (
            _is_int(value)
            and (self.start is None or self.start <= value)  # type: ignore[operator]
            and (self.end is None or value <= self.end)  # type: ignore[operator]
        )

    def to_json(self) -> list[int | None]:
        """``[start, end]``."""
        return [self.start, self.end]


def _clause(name: str, values: Any) -> tuple[Any, ...]:
    if isinstance(values, list | tuple):
        return tuple(values)
    if isinstance(values, str | int | Range) and not isinstance(values, bool):
        return (values,)  # one value given bare
    raise InvalidQuery(f"{name} must be a tuple of values, got {values!r}")


@dataclass(frozen=True, slots=True)
class EventFilter:
    """The clauses of an event query (see the module doc). A single value may be given bare
    (``types="tool/result"``); it is kept as a one-value tuple."""

    seqs: tuple[Range, ...] = ()
    times: tuple[Range, ...] = ()
    types: tuple[str, ...] = ()
    classifications: tuple[Classification, ...] = ()
    turns: tuple[int, ...] = ()
    steps: tuple[int, ...] = ()
    text: tuple[str, ...] = ()
    _needles: tuple[TextNeedle, ...] = field(default=(), init=False, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        for name in ("seqs", "times", "types", "classifications", "turns", "steps", "text"):
            object.__setattr__(self, name, _clause(name, getattr(self, name)))
        for name in ("seqs", "times"):
            for index, value in enumerate(getattr(self, name)):
                if not isinstance(value, Range):
                    raise InvalidQuery(f"{name}[{index}] must be a Range, got {value!r}")
        for index, value in enumerate(self.types):
            if not isinstance(value, str) or not value.removesuffix(_FAMILY_SUFFIX):
                raise InvalidQuery(f"types[{index}] must be an event type or 'family/*', got {value!r}")
        for index, value in enumerate(self.classifications):
            if value not in CLASSIFICATIONS:
                raise InvalidQuery(
                    f"classifications[{index}] must be one of {', '.join(CLASSIFICATIONS)}, got {value!r}"
                )
        for name in ("turns", "steps"):
            for index, value in enumerate(getattr(self, name)):
                if not _is_int(value) or value < 1:
                    raise InvalidQuery(f"{name}[{index}] must be a positive integer, got {value!r}")
        needles = []
        for index, value in enumerate(self.text):
            try:
                needles.append(TextNeedle(value))
            except InvalidQuery as error:
                raise InvalidQuery(f"text[{index}]: {error}") from None
        object.__setattr__(self, "_needles", tuple(needles))

    @property
    def empty(self) -> bool:
        """Whether no clause is given (the filter keeps every event)."""
        clauses = (self.seqs, self.times, self.types, self.classifications, self.turns, self.steps, self.text)
        return not any(clauses)

    def to_json(self) -> dict[str, Any]:
        """The clauses given, as JSON."""
        out: dict[str, Any] = {}
        for name in ("seqs", "times"):
            if getattr(self, name):
                out[name] = [value.to_json() for value in getattr(self, name)]
        for name in ("types", "classifications", "turns", "steps", "text"):
            if getattr(self, name):
                out[name] = list(getattr(self, name))
        return out

    def key(self) -> str:
        """The filter's canonical text: equal filters have equal keys."""
        return json.dumps(self.to_json(), sort_keys=True, ensure_ascii=True, separators=(",", ":"))

    def matches(self, index: QueryIndex, seq: int) -> bool:
        """Whether the event at ``seq`` of ``index`` passes every clause."""
        return _Compiled(self).matches(index, index.check_seq(seq))

    def admits(
        self,
        *,
        seq: int,
        type: str,
        time: int,
        classification: Classification,
        turn: int | None,
        step: int | None,
        text: str,
    ) -> bool:
        """Whether an event described by its fields passes every clause: what ``matches``
        answers for the event at ``seq`` of an index when the fields are that event's
        record (``text`` its semantic text). For readers that keep records elsewhere (the
        full-text index); ``tests/query/test_filters.py`` holds the two to one answer."""
        return _Compiled(self).admits(seq, type, time, classification, turn or 0, step or 0, text)


class _Compiled:
    """A filter turned into the checks the scan runs, cheapest first."""

    __slots__ = ("classes", "exact", "families", "needles", "seqs", "steps", "times", "turns")

    def __init__(self, where: EventFilter) -> None:
        self.seqs = where.seqs
        self.times = where.times
        self.exact = frozenset(value for value in where.types if not value.endswith(_FAMILY_SUFFIX))
        self.families = tuple(value[:-1] for value in where.types if value.endswith(_FAMILY_SUFFIX))
        self.classes = frozenset(QueryIndex.code_of(value) for value in where.classifications)
        self.turns = frozenset(where.turns)
        self.steps = frozenset(where.steps)
        self.needles = where._needles

    def bounds(self, length: int) -> list[tuple[int, int]]:
        """The seq runs the scan must visit: the seq clause's ranges, clipped and merged."""
        if not self.seqs:
            return [(0, length - 1)] if length else []
        runs = sorted(
            (max(0, r.start or 0), min(length - 1, length - 1 if r.end is None else r.end)) for r in self.seqs
        )
        merged: list[tuple[int, int]] = []
        for low, high in runs:
            if low > high:
                continue
            if merged and low <= merged[-1][1] + 1:
                merged[-1] = (merged[-1][0], max(merged[-1][1], high))
            else:
                merged.append((low, high))
        return merged

    def matches(self, index: QueryIndex, seq: int) -> bool:
        event = index.events[seq]
        if self.seqs and not any(seq in r for r in self.seqs):
            return False
        return self.passes(index, seq, event)

    def admits(
        self, seq: int, kind: str, time: int, classification: str, turn: int, step: int, text: str
    ) -> bool:
        """``passes`` over an event's fields instead of an index (the same clauses, in order)."""
        if self.seqs and not any(seq in r for r in self.seqs):
            return False
        if (self.exact or self.families) and (
            kind not in self.exact and not any(kind.startswith(family) for family in self.families)
        ):
            return False
        if self.classes and QueryIndex.code_of(classification) not in self.classes:
            return False
        if self.turns and turn not in self.turns:
            return False
        if self.steps and step not in self.steps:
            return False
        if self.times and not any(time in r for r in self.times):
            return False
        return not self.needles or (
            kind in TEXT_TYPES and bool(text) and any(needle.matches(text) for needle in self.needles)
        )

    def passes(self, index: QueryIndex, seq: int, event: Any) -> bool:
        """Every clause but the seq clause (the scan's bounds already hold it)."""
        if self.exact or self.families:
            kind = event.type
            if kind not in self.exact and not any(kind.startswith(family) for family in self.families):
                return False
        if self.classes and index.class_code(seq) not in self.classes:
            return False
        if self.turns and index.turn_number(seq) not in self.turns:
            return False
        if self.steps and index.step_number(seq) not in self.steps:
            return False
        if self.times and not any(event.time in r for r in self.times):
            return False
        if self.needles:
            if event.type not in TEXT_TYPES:
                return False
            text = event_text(event)
            if not text or not any(needle.matches(text) for needle in self.needles):
                return False
        return True


def matching_seqs(
    source: QuerySource, where: EventFilter | None = None, *, start: int = 0, reverse: bool = False
) -> Iterator[int]:
    """The seqs of the events ``where`` keeps, ascending from ``start`` (or, with
    ``reverse``, descending from ``start``; ``start=-1`` means the last event)."""
    index = index_of(source)
    compiled = _Compiled(where if where is not None else EventFilter())
    events = index.events
    length = len(index)
    runs = compiled.bounds(length)
    passes = compiled.passes
    if not reverse:
        for low, high in runs:
            for seq in range(max(low, start), high + 1):
                if passes(index, seq, events[seq]):
                    yield seq
        return
    top = length - 1 if start < 0 else start
    for low, high in reversed(runs):
        for seq in range(min(high, top), low - 1, -1):
            if passes(index, seq, events[seq]):
                yield seq


def filter_events(
    source: QuerySource, where: EventFilter | None = None, *, limit: int | None = None
) -> list[EventRecord]:
    """The records of the events ``where`` keeps, in seq order (at most ``limit``)."""
    if limit is not None and (not _is_int(limit) or limit < 0):
        raise InvalidQuery(f"limit must be a non-negative integer or None, got {limit!r}")
    index = index_of(source)
    out: list[EventRecord] = []
    if limit == 0:
        return out
    for seq in matching_seqs(index, where):
        out.append(index.record(seq))
        if limit is not None and len(out) >= limit:
            break
    return out

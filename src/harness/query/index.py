"""``QueryIndex``: one linear pass over a log that every query reads from.

Building an index folds the log with ``fold_surface`` (the Surface's one set of rules, the
same fold restore and request building use) and classifies each event from the result:

* ``current``: a node of the final Surface (``fold.nodes``);
* ``shadowed``: a node some later replace took out (it is in that replacement's
  ``shadowed_seqs``); ``shadowed_by`` is the replacing seq, and the compaction is the one
  whose checkpoint that replacement is (a prune's or another host's replace has none);
* ``log-only``: every other event (it was never a node).

The same pass records the turn and step each event sits in (from the ``turn/*`` and
``step/*`` boundaries; a turn left open by a crash runs to the next ``turn/start``) and
gathers each compaction's bracket by its ``compactionId``. Relations only a trace needs
(citations, tool chains) are built on first use. An index is a snapshot of the log's first
``len(index)`` events: the log only grows, so they stay valid, but their classification can
change once a later replace lands; ``index_of(session)`` rebuilds when the session grew.
Nothing here does I/O.
"""

from __future__ import annotations

import weakref
from bisect import bisect_right
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, Final, TypeAlias

from harness.errors import EventNotFound
from harness.events.envelope import as_safe_int
from harness.events.event import Event
from harness.events.json import loads
from harness.query.records import (
    CLASSIFICATIONS,
    CURRENT,
    LOG_ONLY,
    SHADOWED,
    Classification,
    CompactionBracket,
    EventRecord,
    Span,
)
from harness.session.session import Session
from harness.surface.fold import Replacement, SurfaceFold, fold_surface

__all__ = ["QueryIndex", "QuerySource", "classify", "index_of"]


_LOG_ONLY, _CURRENT, _SHADOWED = 0, 1, 2
_NAMES: Final[tuple[Classification, ...]] = (LOG_ONLY, CURRENT, SHADOWED)  # by code
_CODES: Final[Mapping[str, int]] = {name: code for code, name in enumerate(_NAMES)}
_SCANNED: Final = frozenset(
    {"turn/start", "turn/end", "step/start", "step/end"}
    | {"compaction/start", "compaction/summary", "compaction/end"}
)


def data_of(event: Event) -> Mapping[str, Any]:
    """The event's data decoded as plain JSON when it is an object, else ``{}`` (never raises)."""
    try:
        data = loads(event.data_json)
    except ValueError:
        return {}
    return data if isinstance(data, Mapping) else {}


def _number(data: Mapping[str, Any], key: str, default: int) -> int:
    value = as_safe_int(data.get(key))
    return value if value is not None and not isinstance(data.get(key), bool) else default


class _Draft:
    """A compaction bracket while the scan gathers it."""

    __slots__ = ("checkpoint", "end", "error", "replacement", "start", "summary", "turn")

    def __init__(self) -> None:
        self.start: int | None = None
        self.summary: int | None = None
        self.checkpoint: int | None = None
        self.end: int | None = None
        self.error: str | None = None
        self.turn: int | None = None
        self.replacement: Replacement | None = None

    def freeze(self, compaction_id: str) -> CompactionBracket:
        replacement = self.replacement
        return CompactionBracket(
            compaction_id=compaction_id,
            start=self.start,
            summary=self.summary,
            checkpoint=self.checkpoint,
            end=self.end,
            error=self.error,
            turn=self.turn,
            replace_start=replacement.start if replacement else None,
            replace_end=replacement.end if replacement else None,
            replaced=replacement.shadowed_seqs if replacement else (),
        )


class QueryIndex:
    """The classification, turns, steps and compaction brackets of a log (see the module doc).

    Build one with ``QueryIndex(events)`` or ``index_of(source)``; every query function takes
    an index, a ``Session`` or a log, so a caller asking many questions builds it once.
    Raises ``SurfaceRuleError`` if the log breaks a Surface rule (no session's log does).
    """

    __slots__ = (
        "__weakref__",
        "_brackets",
        "_checkpoints",
        "_classes",
        "_events",
        "_extra",
        "_fold",
        "_length",
        "_prunes",
        "_replacements",
        "_shadowed_by",
        "_step_at",
        "_step_starts",
        "_steps",
        "_turn_at",
        "_turn_starts",
        "_turns",
    )

    def __init__(self, events: Sequence[Event]) -> None:
        length = len(events)
        fold = fold_surface(events)
        classes = bytearray(length)
        for seq in fold.nodes:
            classes[seq] = _CURRENT
        shadowed_by: dict[int, int] = {}
        for replacement in fold.replacements:
            for seq in replacement.shadowed_seqs:
                classes[seq] = _SHADOWED
                shadowed_by[seq] = replacement.seq
        self._events = events
        self._length = length
        self._fold = fold
        self._classes = bytes(classes)
        self._shadowed_by = shadowed_by
        self._replacements = {replacement.seq: replacement for replacement in fold.replacements}
        self._extra: dict[str, Any] = {}  # the relations built on first use (see ``relations``)
        drafts = self._scan(events, length)
        self._checkpoints: dict[int, str] = {}
        self._prunes: dict[int, int] = {}
        for replacement in fold.replacements:
            self._link_replacement(events, replacement, drafts)
        self._brackets = {cid: draft.freeze(cid) for cid, draft in drafts.items()}

    # ---- the pass -----------------------------------------------------------------------

    def _scan(self, events: Sequence[Event], length: int) -> dict[str, _Draft]:
        turn_at = [0] * length
        step_at = [0] * length
        turns: list[Span] = []
        steps: list[Span] = []
        drafts: dict[str, _Draft] = {}
        turn = step = 0  # the open turn's and step's numbers (0: none)
        turn_start = step_start = -1
        turns_seen = 0
        steps_seen = 0

        def close_step(last: int, end: int | None) -> None:
            nonlocal step, step_start
            if step_start >= 0:
                step_at[step_start : last + 1] = [step] * (last + 1 - step_start)
                steps.append(Span(turn, step, step_start, end))
            step, step_start = 0, -1

        def close_turn(last: int, end: int | None) -> None:
            nonlocal turn, turn_start
            if turn_start >= 0:
                turn_at[turn_start : last + 1] = [turn] * (last + 1 - turn_start)
                turns.append(Span(turn, None, turn_start, end))
            turn, turn_start = 0, -1

        for seq in range(length):
            event = events[seq]
            kind = event.type
            if kind not in _SCANNED:
                continue
            if kind == "step/start":
                close_step(seq - 1, None)
                steps_seen += 1
                step = _number(data_of(event), "step", steps_seen)
                step_start = seq
            elif kind == "step/end":
                if step_start < 0:  # an end with no start: a one-event step
                    step, step_start = _number(data_of(event), "step", steps_seen + 1), seq
                close_step(seq, seq)
            elif kind == "turn/start":
                close_step(seq - 1, None)
                close_turn(seq - 1, None)
                turns_seen += 1
                turn = _number(data_of(event), "turn", turns_seen)
                turn_start = seq
                steps_seen = 0
            elif kind == "turn/end":
                close_step(seq - 1, None)
                if turn_start < 0:
                    turn, turn_start = _number(data_of(event), "turn", turns_seen + 1), seq
                close_turn(seq, seq)
            else:  # compaction/start, compaction/summary, compaction/end
                data = data_of(event)
                compaction_id = data.get("compactionId")
                if not isinstance(compaction_id, str):
                    continue
                draft = drafts.get(compaction_id)
                if draft is None:
                    draft = drafts[compaction_id] = _Draft()
                if kind == "compaction/start" and draft.start is None:
                    draft.start = seq
                    value = data.get("turn")
                    draft.turn = value if isinstance(value, int) and not isinstance(value, bool) else None
                elif kind == "compaction/summary" and draft.summary is None:
                    draft.summary = seq
                elif kind == "compaction/end" and draft.end is None:
                    draft.end = seq
                    error = data.get("error")
                    draft.error = error if isinstance(error, str) else None
        close_step(length - 1, None)
        close_turn(length - 1, None)
        steps.sort(key=lambda span: span.start)  # a step closed by its turn's start comes out late
        self._turn_at = turn_at
        self._step_at = step_at
        self._turns = tuple(turns)
        self._steps = tuple(steps)
        self._turn_starts = [span.start for span in self._turns]
        self._step_starts = [span.start for span in self._steps]
        return drafts

    def _link_replacement(
        self, events: Sequence[Event], replacement: Replacement, drafts: dict[str, _Draft]
    ) -> None:
        """Tie one replacement to its compaction (a checkpoint) or its prune."""
        event = events[replacement.seq]
        if event.type == "user/message":
            source = data_of(event).get("source")
            compaction_id = source.get("compactionId") if isinstance(source, Mapping) else None
            if not isinstance(compaction_id, str):  # fall back on the bracket's start among its sources
                cited = event.source_event_seqs or ()
                if cited and 0 <= cited[0] < len(events) and events[cited[0]].type == "compaction/start":
                    compaction_id = data_of(events[cited[0]]).get("compactionId")
            if isinstance(compaction_id, str):
                draft = drafts.setdefault(compaction_id, _Draft())
                if draft.checkpoint is None:
                    draft.checkpoint = replacement.seq
                    draft.replacement = replacement
                    self._checkpoints[replacement.seq] = compaction_id
        elif replacement.seq > 0 and events[replacement.seq - 1].type == "compaction/prune":
            self._prunes[replacement.seq] = replacement.seq - 1

    # ---- reading ------------------------------------------------------------------------

    @classmethod
    def of(cls, source: QuerySource) -> QueryIndex:
        """``index_of(source)``."""
        return index_of(source)

    @property
    def events(self) -> Sequence[Event]:
        """The log the index was built over (read only its first ``len(self)`` events)."""
        return self._events

    @property
    def fold(self) -> SurfaceFold:
        """The ``fold_surface`` result the classification comes from."""
        return self._fold

    def __len__(self) -> int:
        return self._length

    def __repr__(self) -> str:
        counts = self.counts()
        return f"QueryIndex({self._length} events, " + ", ".join(f"{k} {v}" for k, v in counts.items()) + ")"

    def check_seq(self, seq: object) -> int:
        """``seq`` as an int, or ``EventNotFound`` when no event of the index has it."""
        if isinstance(seq, bool) or not isinstance(seq, int) or not 0 <= seq < self._length:
            raise EventNotFound(seq, self._length)
        return seq

    def event(self, seq: int) -> Event:
        """The event at ``seq`` (``EventNotFound`` if none)."""
        return self._events[self.check_seq(seq)]

    def classification(self, seq: int) -> Classification:
        """``current``, ``shadowed`` or ``log-only`` (``EventNotFound`` if no such seq)."""
        return _NAMES[self._classes[self.check_seq(seq)]]

    def classifications(self) -> tuple[Classification, ...]:
        """Every event's classification, in seq order."""
        names = _NAMES
        return tuple(names[code] for code in self._classes)

    def counts(self) -> dict[Classification, int]:
        """How many events each classification holds."""
        classes = self._classes
        return {name: classes.count(_CODES[name]) for name in CLASSIFICATIONS}

    def class_code(self, seq: int) -> int:
        """The classification's internal code (for filters; no bounds check)."""
        return self._classes[seq]

    @staticmethod
    def code_of(classification: str) -> int:
        """The internal code of a classification name."""
        return _CODES[classification]

    def turn_number(self, seq: int) -> int:
        """The number of the turn ``seq`` sits in, 0 outside every turn (no bounds check)."""
        return self._turn_at[seq]

    def step_number(self, seq: int) -> int:
        """The number of the step ``seq`` sits in, 0 outside every step (no bounds check)."""
        return self._step_at[seq]

    def shadowed_by(self, seq: int) -> int | None:
        """The seq of the replace that took ``seq`` off the Surface, ``None`` if none did."""
        return self._shadowed_by.get(self.check_seq(seq))

    def replacement(self, seq: int) -> Replacement | None:
        """The replacement ``seq`` made, when it is a replacing event."""
        return self._replacements.get(self.check_seq(seq))

    def compaction_of_replacement(self, seq: int) -> CompactionBracket | None:
        """The compaction whose checkpoint is the replacement at ``seq``."""
        compaction_id = self._checkpoints.get(seq)
        return self._brackets[compaction_id] if compaction_id is not None else None

    def prune_of(self, seq: int) -> int | None:
        """The ``compaction/prune`` seq that announced the replacement at ``seq``, if any."""
        return self._prunes.get(seq)

    def record(self, seq: int) -> EventRecord:
        """The event at ``seq`` with its classification, turn, step and shadowing."""
        seq = self.check_seq(seq)
        return self._record(seq)

    def _record(self, seq: int) -> EventRecord:
        by = self._shadowed_by.get(seq)
        return EventRecord(
            event=self._events[seq],
            classification=_NAMES[self._classes[seq]],
            turn=self._turn_at[seq] or None,
            step=self._step_at[seq] or None,
            shadowed_by=by,
            compaction_id=self._checkpoints.get(by) if by is not None else None,
        )

    def records(self, seqs: Iterable[int] | None = None) -> Iterator[EventRecord]:
        """The records of ``seqs`` (default: every event), in the order given."""
        if seqs is None:
            seqs = range(self._length)
        for seq in seqs:
            yield self.record(seq)

    @property
    def turns(self) -> tuple[Span, ...]:
        """Every turn, in log order."""
        return self._turns

    @property
    def steps(self) -> tuple[Span, ...]:
        """Every step, in log order."""
        return self._steps

    def turn_span(self, seq: int) -> Span | None:
        """The turn ``seq`` sits in, ``None`` between turns."""
        return self._span(self._turns, self._turn_starts, self.check_seq(seq), self._turn_at)

    def step_span(self, seq: int) -> Span | None:
        """The step ``seq`` sits in, ``None`` outside every step."""
        return self._span(self._steps, self._step_starts, self.check_seq(seq), self._step_at)

    @staticmethod
    def _span(spans: Sequence[Span], starts: list[int], seq: int, at: list[int]) -> Span | None:
        if not at[seq]:
            return None
        position = bisect_right(starts, seq) - 1
        return spans[position] if position >= 0 else None

    @property
    def brackets(self) -> tuple[CompactionBracket, ...]:
        """Every compaction the log records, in the order they started."""
        return tuple(self._brackets.values())

    def bracket(self, compaction_id: str) -> CompactionBracket | None:
        """The compaction with this id, if the log records one."""
        return self._brackets.get(compaction_id)

    def relation(self, name: str, build: Any) -> Any:
        """A relation built on first use by ``build(self)`` and kept (citations, tool chains)."""
        value = self._extra.get(name)
        if value is None:
            value = self._extra[name] = build(self)
        return value


QuerySource: TypeAlias = Session | QueryIndex | Sequence[Event]
"""What a query reads: a session, an index already built, or a whole log (seqs from 0)."""

_CACHE: weakref.WeakKeyDictionary[Session, QueryIndex] = weakref.WeakKeyDictionary()


def index_of(source: QuerySource) -> QueryIndex:
    """The index of ``source``: itself when it is one; for a ``Session``, one kept for the
    session and rebuilt when it has grown since; for a log, a new one."""
    if isinstance(source, QueryIndex):
        return source
    if isinstance(source, Session):
        index = _CACHE.get(source)
        if index is None or len(index) != len(source):
            index = _CACHE[source] = QueryIndex(source.events)
        return index
    return QueryIndex(source)


def classify(source: QuerySource) -> tuple[Classification, ...]:
    """Every event's classification, in seq order: ``index_of(source).classifications()``."""
    return index_of(source).classifications()

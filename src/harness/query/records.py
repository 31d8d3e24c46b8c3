"""The values a query returns: an event's record, its classification, turn and step spans and
compaction brackets."""

from __future__ import annotations

from typing import Any, Final, Literal, TypeAlias

import msgspec

from harness.events.event import Event

__all__ = [
    "CLASSIFICATIONS",
    "CURRENT",
    "LOG_ONLY",
    "SHADOWED",
    "Classification",
    "CompactionBracket",
    "EventRecord",
    "Span",
]

Classification: TypeAlias = Literal["current", "shadowed", "log-only"]
"""Where an event stands: a Surface node now (``current``), a node that a later replace took
out (``shadowed``), or never a node at all (``log-only``)."""

CURRENT: Final = "current"
SHADOWED: Final = "shadowed"
LOG_ONLY: Final = "log-only"
CLASSIFICATIONS: Final[tuple[Classification, ...]] = (CURRENT, SHADOWED, LOG_ONLY)


class Span(msgspec.Struct, frozen=True):
    """A turn (``step`` is ``None``) or a step of one: ``start`` is the seq of its
    ``turn/start``/``step/start``, ``end`` that of its ``turn/end``/``step/end``, ``None``
    while it is open (or when a crash left it so)."""

    turn: int
    step: int | None
    start: int
    end: int | None

    def contains(self, seq: int) -> bool:
        """Whether ``seq`` lies inside the span (its boundaries included)."""
        return self.start <= seq and (self.end is None or seq <= self.end)

    def to_json(self) -> dict[str, Any]:
        """``{turn, step?, start, end}``."""
        out: dict[str, Any] = {"turn": self.turn}
        if self.step is not None:
            out["step"] = self.step
        out["start"] = self.start
        out["end"] = self.end
        return out


class CompactionBracket(msgspec.Struct, frozen=True, kw_only=True):
    """One compaction as the log recorded it (FORMAT §11.4): the seqs of its
    ``compaction/start``, ``compaction/summary``, checkpoint ``user/message`` and
    ``compaction/end`` (``None`` for a step it never reached: a failed run has no summary or
    checkpoint, a crashed one no end), the error its end recorded, the turn that owned it
    (``None``: manual, between turns) and what its checkpoint stands for: the Surface span
    ``replace_start``..``replace_end`` it replaced and the seqs of the nodes in it."""

    compaction_id: str
    start: int | None = None
    summary: int | None = None
    checkpoint: int | None = None
    end: int | None = None
    error: str | None = None
    turn: int | None = None
    replace_start: int | None = None
    replace_end: int | None = None
    replaced: tuple[int, ...] = ()

    @property
    def committed(self) -> bool:
        """Whether its checkpoint landed (the compaction replaced something)."""
        return self.checkpoint is not None

    @property
    def seqs(self) -> tuple[int, ...]:
        """The bracket's own events, in log order."""
        return tuple(seq for seq in (self.start, self.summary, self.checkpoint, self.end) if seq is not None)

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict (camelCase keys, like the log's)."""
        return {
            "compactionId": self.compaction_id,
            "start": self.start,
            "summary": self.summary,
            "checkpoint": self.checkpoint,
            "end": self.end,
            "error": self.error,
            "turn": self.turn,
            "replaceStart": self.replace_start,
            "replaceEnd": self.replace_end,
            "replaced": list(self.replaced),
        }


class EventRecord(msgspec.Struct, frozen=True, kw_only=True):
    """One event with where it stands: its ``classification``, the turn and step it sits in
    (``None`` outside one) and, when shadowed, the seq of the replace that took it out
    (``shadowed_by``) and the compaction that replace belongs to (``compaction_id``;
    ``None`` for a prune or another host's replace). ``event`` is the event itself."""

    event: Event
    classification: Classification
    turn: int | None = None
    step: int | None = None
    shadowed_by: int | None = None
    compaction_id: str | None = None

    @property
    def seq(self) -> int:
        return self.event.seq

    @property
    def type(self) -> str:
        return self.event.type

    @property
    def time(self) -> int:
        return self.event.time

    def to_json(self, *, event: bool = True) -> dict[str, Any]:
        """``{seq, type, time, classification, turn, step, shadowedBy?, compactionId?, event?}``;
        ``event=False`` leaves the event's wire form out."""
        out: dict[str, Any] = {
            "seq": self.seq,
            "type": self.type,
            "time": self.time,
            "classification": self.classification,
            "turn": self.turn,
            "step": self.step,
        }
        if self.shadowed_by is not None:
            out["shadowedBy"] = self.shadowed_by
        if self.compaction_id is not None:
            out["compactionId"] = self.compaction_id
        if event:
            out["event"] = self.event.to_json()
        return out

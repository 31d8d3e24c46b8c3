"""The immutable ``Event`` and its Surface operation (SPEC §1, FORMAT §2)."""

from __future__ import annotations

from typing import Any, Final, Literal, TypeAlias

import msgspec

from harness.events.json import FrozenDict, FrozenList

__all__ = ["APPEND", "Event", "Replace", "SurfaceOp"]

APPEND: Final = "append"


class Replace(msgspec.Struct, frozen=True):
    """Replace the Surface nodes from seq ``start`` to seq ``end`` (by position, inclusive)."""

    start: int
    end: int

    def to_json(self) -> FrozenDict:
        """The wire form ``{"op":"replace","start":…,"end":…}``."""
        return FrozenDict(op="replace", start=self.start, end=self.end)


SurfaceOp: TypeAlias = Literal["append"] | Replace
"""``"append"`` or ``Replace(start, end)``."""


class Event(msgspec.Struct, frozen=True, gc=False):
    """One immutable fact in a session's log.

    ``data`` is a read-only JSON value (``FrozenDict``/``FrozenList``/scalars).
    ``surface_op`` and ``source_event_seqs`` are set only on Surface types
    (``user/message``, ``assistant/message``, ``tool/result``). Events are made by
    ``Session.append`` and by restore; both validate before an event exists.
    """

    type: str
    seq: int
    time: int
    data: Any
    surface_op: SurfaceOp | None = None
    source_event_seqs: tuple[int, ...] | None = None
    ignorable: bool = False

    def to_json(self) -> dict[str, Any]:
        """The wire form with FORMAT's key order and wire names."""
        out: dict[str, Any] = {"type": self.type, "seq": self.seq, "time": self.time, "data": self.data}
        if self.source_event_seqs is not None:
            out["sourceEventSeqs"] = FrozenList(self.source_event_seqs)
        op = self.surface_op
        if op is not None:
            out["surfaceOp"] = op.to_json() if isinstance(op, Replace) else op
        if self.ignorable:
            out["ignorable"] = True
        return out

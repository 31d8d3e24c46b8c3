"""The immutable ``Event`` and its Surface operation (SPEC §1, FORMAT §2).

An event keeps its data as the JSON bytes it was snapshotted to at append time
(``data_json``); ``event.data`` decodes them into a fresh read-only value on each
access. That makes an append cheap (no tree of containers to build), keeps a
restored session close to its file size in memory, and gives the stores the bytes
they write without encoding anything again.
"""

from __future__ import annotations

from typing import Any, Final, Literal, TypeAlias

import msgspec

from harness.events.json import FrozenDict, decode_frozen, dumps, encode_json

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


_TYPE_JSON: dict[str, bytes] = {}
"""The JSON text of event types already encoded (a log uses a few dozen): ``encode`` runs
once per event written, and this saves its ``dumps`` call of the type."""
_TYPE_JSON_MAX: Final = 1024


def _type_json(kind: str) -> bytes:
    """``dumps(kind)``, remembered for the next event of that type (up to ``_TYPE_JSON_MAX`` types)."""
    text = dumps(kind)
    if type(kind) is str and len(_TYPE_JSON) < _TYPE_JSON_MAX:
        _TYPE_JSON[kind] = text
    return text


class Event(msgspec.Struct, frozen=True, gc=False):
    """One immutable fact in a session's log.

    ``data`` is a read-only JSON value (``FrozenDict``/``FrozenList``/scalars),
    decoded from ``data_json`` on each access: read it once and keep it when you
    need it repeatedly. ``surface_op`` and ``source_event_seqs`` are set only on
    Surface types (``user/message``, ``assistant/message``, ``tool/result``).

    Events are made by ``Session.append`` and by restore, which validate them.
    To make one by hand use ``Event.create`` (the raw constructor takes the
    already-encoded ``data_json`` and trusts it).
    """

    type: str
    seq: int
    time: int
    data_json: bytes
    surface_op: SurfaceOp | None = None
    source_event_seqs: tuple[int, ...] | None = None
    ignorable: bool = False

    def __post_init__(self) -> None:
        if type(self.data_json) is not bytes:
            raise TypeError("Event(...) takes the data's JSON bytes; use Event.create(...) for a value")

    @classmethod
    def create(
        cls,
        type: str,
        seq: int,
        time: int,
        data: Any,
        surface_op: SurfaceOp | None = None,
        source_event_seqs: tuple[int, ...] | None = None,
        ignorable: bool = False,
    ) -> Event:
        """An event holding a snapshot of ``data`` (refused with ``InvalidEventData``
        unless lossless JSON). Envelope and Surface rules are checked by the session."""
        return cls(type, seq, time, encode_json(data), surface_op, source_event_seqs, ignorable)

    @property
    def data(self) -> Any:
        """The event's data as a fresh read-only JSON value."""
        return decode_frozen(self.data_json)

    def to_json(self) -> dict[str, Any]:
        """The wire form with FORMAT's key order and wire names."""
        out: dict[str, Any] = {"type": self.type, "seq": self.seq, "time": self.time, "data": self.data}
        if self.source_event_seqs is not None:
            out["sourceEventSeqs"] = list(self.source_event_seqs)
        op = self.surface_op
        if op is not None:
            out["surfaceOp"] = op.to_json() if isinstance(op, Replace) else op
        if self.ignorable:
            out["ignorable"] = True
        return out

    def encode(self) -> bytes:
        """The wire line (no newline): ``type, seq, time, data, sourceEventSeqs?, surfaceOp?, ignorable?``."""
        kind = _TYPE_JSON.get(self.type)
        if kind is None:
            kind = _type_json(self.type)
        if self.ignorable is False:  # the two shapes nearly every event has: one format, no list
            seqs = self.source_event_seqs
            op = self.surface_op
            if seqs is None and op is None:
                tail = b"}"
            elif type(seqs) is tuple and not seqs and type(op) is str:  # a str op is written "append"
                tail = b',"sourceEventSeqs":[],"surfaceOp":"append"}'
            else:
                tail = b""
            if tail:
                return b'{"type":%b,"seq":%d,"time":%d,"data":%b%b' % (
                    kind,
                    self.seq,
                    self.time,
                    self.data_json,
                    tail,
                )
        parts = [
            b'{"type":',
            kind,
            b',"seq":%d,"time":%d,"data":' % (self.seq, self.time),
            self.data_json,
        ]
        seqs = self.source_event_seqs
        if seqs is not None:
            parts.append(b',"sourceEventSeqs":[]' if not seqs else b',"sourceEventSeqs":' + dumps(list(seqs)))
        op = self.surface_op
        if op is not None:
            if isinstance(op, Replace):
                parts.append(b',"surfaceOp":{"op":"replace","start":%d,"end":%d}' % (op.start, op.end))
            else:
                parts.append(b',"surfaceOp":"append"')
        if self.ignorable:
            parts.append(b',"ignorable":true')
        parts.append(b"}")
        return b"".join(parts)

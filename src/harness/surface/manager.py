"""The Surface: the ordered node seqs the model sees, folded from the log (FORMAT §6).

``SurfaceManager`` applies the Surface rules one event at a time. ``check``
validates a candidate without touching any state and returns a ``Transition``;
``apply`` commits it. A refused candidate therefore leaves the nodes and the
replace generation exactly as they were.

Window mode: a manager built with ``base_seq=B`` folds a contiguous window of the
log that starts at seq B; a replace naming a seq below B is "not found".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final, NamedTuple

from harness.errors import SurfaceRuleError
from harness.events.envelope import as_safe_int
from harness.events.event import APPEND, Event, Replace, SurfaceOp
from harness.events.json import MAX_SAFE_INTEGER, json_equal
from harness.events.vocabulary import SURFACE_TYPES

__all__ = ["MISSING", "SurfaceManager", "SurfaceRuleError", "SurfaceView", "Transition", "parse_surface_op"]

_REPLACE_KEYS: Final = frozenset({"op", "start", "end"})


class _Missing:
    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Final = _Missing()
"""Marks an absent ``surfaceOp``/``sourceEventSeqs`` (distinct from a JSON ``null``)."""


_new_tuple = tuple.__new__


class Transition(NamedTuple):
    """A validated, not yet applied, Surface step."""

    seq: int
    surface_op: SurfaceOp | None
    source_event_seqs: tuple[int, ...] | None
    start_pos: int  # first shadowed position (replace) or -1
    end_pos: int  # last shadowed position (replace) or -1

    @property
    def shadowed_count(self) -> int:
        return 0 if self.start_pos < 0 else self.end_pos - self.start_pos + 1


def parse_surface_op(raw: object) -> SurfaceOp:
    """Normalise a surface op given as ``"append"``, ``Replace`` or its wire object."""
    if raw == APPEND and type(raw) is str:
        return APPEND
    if isinstance(raw, Replace):
        if as_safe_int(raw.start) is None or as_safe_int(raw.end) is None or raw.start < 0 or raw.end < 0:
            raise SurfaceRuleError("invalid replace surfaceOp: start and end must be non-negative integers")
        return raw
    if isinstance(raw, Mapping):
        if set(raw) != _REPLACE_KEYS or raw.get("op") != "replace":
            raise SurfaceRuleError("invalid replace surfaceOp: expected exactly {op: 'replace', start, end}")
        start = as_safe_int(raw["start"], negative_zero=True)  # -0.0 is 0, as in dsh
        end = as_safe_int(raw["end"], negative_zero=True)
        if start is None or end is None or start < 0 or end < 0:
            raise SurfaceRuleError("invalid replace surfaceOp: start and end must be non-negative integers")
        return Replace(start, end)
    raise SurfaceRuleError(f"invalid surfaceOp {raw!r}: expected 'append' or a replace object")


def _check_sources(kind: str, seq: int, raw: object) -> tuple[int, ...]:
    if not isinstance(raw, list | tuple):
        raise SurfaceRuleError(f"{kind} sourceEventSeqs must be an array")
    if not raw:
        if kind != "assistant/message":
            raise SurfaceRuleError(f"{kind} sourceEventSeqs must not be empty")
        return ()
    out: list[int] = []
    for item in raw:
        value = item if type(item) is int else as_safe_int(item, negative_zero=True)
        if value is None or value < 0 or value > MAX_SAFE_INTEGER:
            raise SurfaceRuleError(f"{kind} sourceEventSeqs must contain non-negative safe integers")
        out.append(value)
    if len(out) > 1 and len(set(out)) != len(out):
        raise SurfaceRuleError(f"{kind} sourceEventSeqs contains duplicates")
    for value in out:
        if value >= seq:
            raise SurfaceRuleError(
                f"{kind} sourceEventSeqs must reference earlier events (got {value} at {seq})"
            )
    return tuple(out)


def _masked_tool_result(data: Any) -> Any:
    """``data`` with ``message.content`` replaced by ``[{...content[0], content: None}]``."""
    if not isinstance(data, Mapping):
        return data
    message = data.get("message")
    if not isinstance(message, Mapping):
        return data
    content = message.get("content")
    if not isinstance(content, list | tuple) or not content or not isinstance(content[0], Mapping):
        return data
    first = dict(content[0])
    first["content"] = None
    masked_message = dict(message)
    masked_message["content"] = [first]
    masked = dict(data)
    masked["message"] = masked_message
    return masked


class SurfaceManager:
    """Folds Surface operations one event at a time.

    ``events`` is the log the manager reads originals from (``events[seq - base_seq]``);
    it is read, never written, by the manager.
    """

    __slots__ = ("_base", "_events", "_generation", "_next_seq", "_nodes")

    def __init__(self, events: Sequence[Event], *, base_seq: int = 0) -> None:
        self._events = events
        self._base = base_seq
        self._next_seq = base_seq
        self._nodes: list[int] = []
        self._generation = 0

    @property
    def nodes(self) -> Sequence[int]:
        """The current node seqs, in model order (a read-only view)."""
        return _NodesView(self._nodes)

    @property
    def replace_generation(self) -> int:
        """How many replaces have been applied."""
        return self._generation

    @property
    def base_seq(self) -> int:
        return self._base

    @property
    def next_seq(self) -> int:
        """The seq the next event must carry."""
        return self._next_seq

    def __len__(self) -> int:
        return len(self._nodes)

    def node_list(self) -> list[int]:
        """A copy of the node seqs."""
        return list(self._nodes)

    def check(
        self,
        kind: str,
        seq: int,
        surface_op: object,
        source_event_seqs: object,
        data: Any,
    ) -> Transition:
        """Validate one candidate event without changing any state.

        ``surface_op``/``source_event_seqs`` may be raw wire values; only ``MISSING``
        means absent (a JSON ``null`` is a value, and an invalid one). Raises
        ``SurfaceRuleError`` with the rule's wording.
        """
        if seq != self._next_seq:
            raise SurfaceRuleError(f"event seq {seq} is not contiguous (expected {self._next_seq})")
        if kind not in SURFACE_TYPES:
            if surface_op is not MISSING:
                raise SurfaceRuleError(f"{kind} cannot carry a surfaceOp")
            if source_event_seqs is not MISSING:
                raise SurfaceRuleError(f"{kind} cannot carry sourceEventSeqs")
            return _new_tuple(Transition, (seq, None, None, -1, -1))
        if surface_op is MISSING:
            raise SurfaceRuleError(f"{kind} requires a surfaceOp marker")
        op = parse_surface_op(surface_op)
        if op == APPEND:
            sources = None if source_event_seqs is MISSING else _check_sources(kind, seq, source_event_seqs)
            return _new_tuple(Transition, (seq, op, sources, -1, -1))
        assert isinstance(op, Replace)
        nodes = self._nodes
        try:
            start_pos = nodes.index(op.start)
        except ValueError:
            raise SurfaceRuleError(f"replace start seq {op.start} not found in surface") from None
        try:
            end_pos = nodes.index(op.end)
        except ValueError:
            raise SurfaceRuleError(f"replace end seq {op.end} not found in surface") from None
        if start_pos > end_pos:
            raise SurfaceRuleError(f"replace start seq {op.start} is after end seq {op.end} in surface")
        shadowed = nodes[start_pos : end_pos + 1]
        sources = None if source_event_seqs is MISSING else _check_sources(kind, seq, source_event_seqs)
        cited = set(sources or ())
        missing = [node for node in shadowed if node not in cited]
        if missing:
            listed = ", ".join(str(node) for node in missing)
            raise SurfaceRuleError(f"{kind} replace sourceEventSeqs missing {listed}")
        if kind == "tool/result":
            self._check_tool_result_rewrite(shadowed, data)
        return Transition(seq, op, sources, start_pos, end_pos)

    def _check_tool_result_rewrite(self, shadowed: list[int], data: Any) -> None:
        if len(shadowed) != 1:
            raise SurfaceRuleError("tool/result replace must shadow exactly one current node")
        original = self._events[shadowed[0] - self._base]
        if original.type != "tool/result":
            raise SurfaceRuleError("tool/result replace must target a current tool/result")
        if not json_equal(_masked_tool_result(original.data), _masked_tool_result(data)):
            raise SurfaceRuleError("tool/result replace may change only content of the tool result")

    def apply(self, transition: Transition) -> None:
        """Commit a transition returned by ``check`` for the very next seq."""
        if transition.seq != self._next_seq:
            raise RuntimeError("stale Surface transition")
        op = transition.surface_op
        if op is not None:
            if transition.start_pos < 0:
                self._nodes.append(transition.seq)
            else:
                self._nodes[transition.start_pos : transition.end_pos + 1] = [transition.seq]
                self._generation += 1
        self._next_seq += 1

    def validate_next(self, event: Event) -> Transition:
        """Check that ``event`` can be the next event; change nothing.

        Returns the transition ``apply`` would commit; raises ``SurfaceRuleError``.
        """
        op = event.surface_op
        kind = event.type
        # only a tool/result replace reads the data: decoding every event's data would double a fold
        data = event.data if kind == "tool/result" and isinstance(op, Replace) else None
        return self.check(
            kind,
            event.seq,
            MISSING if op is None else op,
            MISSING if event.source_event_seqs is None else event.source_event_seqs,
            data,
        )

    def advance(self, event: Event) -> Transition:
        """Validate and apply ``event``."""
        transition = self.validate_next(event)
        self.apply(transition)
        return transition


class SurfaceView:
    """A read-only window on a ``SurfaceManager``: what ``Session.surface`` returns.

    It reflects the live state (``nodes`` is a live read-only view; ``replace_generation``
    is read at each access) and offers no way to change it.
    """

    __slots__ = ("_manager",)

    def __init__(self, manager: SurfaceManager) -> None:
        self._manager = manager

    @property
    def nodes(self) -> Sequence[int]:
        """The current node seqs, in model order."""
        return self._manager.nodes

    @property
    def replace_generation(self) -> int:
        """How many replaces have been applied."""
        return self._manager.replace_generation

    @property
    def base_seq(self) -> int:
        return self._manager.base_seq

    def __len__(self) -> int:
        return len(self._manager)

    def __repr__(self) -> str:
        return f"Surface(nodes={len(self)}, replace_generation={self.replace_generation})"


class _NodesView(Sequence[int]):
    """A read-only view of a list of seqs."""

    __slots__ = ("_items",)

    def __init__(self, items: list[int]) -> None:
        self._items = items

    def __len__(self) -> int:
        return len(self._items)

    def __getitem__(self, index: Any) -> Any:
        result = self._items[index]
        return tuple(result) if isinstance(index, slice) else result

    def __iter__(self) -> Any:
        return iter(self._items)

    def __contains__(self, value: object) -> bool:
        return value in self._items

    def __eq__(self, other: object) -> bool:
        if isinstance(other, _NodesView):
            return self._items == other._items
        if isinstance(other, list | tuple):
            return self._items == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"nodes({self._items!r})"

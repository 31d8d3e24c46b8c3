"""``fold_surface``: the one fold of Surface operations over a log (SPEC §2).

Restore, request building and analysis tools all use it, so they can never
disagree about what the model saw.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from harness.events.event import Event
from harness.surface.manager import SurfaceManager

__all__ = ["Replacement", "SurfaceFold", "fold_surface"]


class Replacement(msgspec.Struct, frozen=True):
    """One applied replace: the replacing ``seq``, the op's ``start``/``end`` and the shadowed seqs."""

    seq: int
    start: int
    end: int
    shadowed_seqs: tuple[int, ...]


class SurfaceFold(msgspec.Struct, frozen=True):
    """The result of folding a log: node seqs, generation and every replacement."""

    nodes: tuple[int, ...]
    replace_generation: int
    replacements: tuple[Replacement, ...]


def fold_surface(events: Sequence[Event], *, base_seq: int = 0) -> SurfaceFold:
    """Fold ``events`` (a contiguous window starting at ``base_seq``).

    Raises ``SurfaceRuleError`` at the first event that breaks a Surface rule.
    """
    manager = SurfaceManager(events, base_seq=base_seq)
    replacements: list[Replacement] = []
    for event in events:
        transition = manager.validate_next(event)
        if transition.start_pos >= 0:
            op = transition.surface_op
            shadowed = tuple(manager.node_list()[transition.start_pos : transition.end_pos + 1])
            replacements.append(Replacement(event.seq, op.start, op.end, shadowed))  # type: ignore[union-attr]
        manager.apply(transition)
    return SurfaceFold(tuple(manager.node_list()), manager.replace_generation, tuple(replacements))

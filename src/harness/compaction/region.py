"""Choosing what to compact (FORMAT §11.2): head-anchored ranges that never split a tool pair.

The tool-pairing balance of a cut is the number of tool calls the nodes before it opened
minus the tool results they gave; a cut is safe only where it is 0, so a call and its result
always land on the same side. ``select_compactable_range`` keeps a tail worth at least
``retain_tokens`` and moves the cut towards the head until it is balanced; ``check_region``
validates an explicit range the same way.
"""

from __future__ import annotations

import msgspec

from harness.compaction.meter import DEFAULT_METER, Measurement, TokenMeter
from harness.errors import InvalidRegion
from harness.session.session import Session

__all__ = ["Region", "check_region", "select_compactable_range"]


class Region(msgspec.Struct, frozen=True):
    """A span of current Surface nodes: ``start``/``end`` seqs, every node seq in it (in
    Surface order, which need not be seq order) and their summed price."""

    start: int
    end: int
    seqs: tuple[int, ...]
    tokens: int


def _region(measurement: Measurement, first: int, last: int) -> Region:
    nodes = measurement.nodes[first : last + 1]
    return Region(
        start=nodes[0].seq,
        end=nodes[-1].seq,
        seqs=tuple(node.seq for node in nodes),
        tokens=sum(node.tokens for node in nodes),
    )


def select_compactable_range(
    session: Session, retain_tokens: int, *, meter: TokenMeter | None = None
) -> Region | None:
    """The head-anchored range to compact, keeping a tail worth ``retain_tokens``.

    Sums node prices from the tail until they reach ``retain_tokens`` (that node and all after
    it are kept), then moves the cut headward to the nearest balanced one. ``None`` when the
    tail already covers the whole Surface or no balanced cut is left before it. With
    ``retain_tokens=0`` only the last balanced unit is kept.
    """
    if retain_tokens < 0:
        raise InvalidRegion(f"retain_tokens must not be negative, got {retain_tokens}")
    measurement = (meter or DEFAULT_METER).measure(session)
    nodes = measurement.nodes
    keep = 0
    kept = 0
    for index in range(len(nodes) - 1, -1, -1):
        kept += nodes[index].tokens
        if kept >= retain_tokens:
            keep = index
            break
    balances = measurement.balances()
    while keep > 0 and balances[keep] != 0:
        keep -= 1
    if keep == 0:
        return None
    return _region(measurement, 0, keep - 1)


def check_region(measurement: Measurement, start: int, end: int) -> Region:
    """The region from seq ``start`` to seq ``end`` (by Surface position), or ``InvalidRegion``
    when either is not a current node, ``start`` comes after ``end``, or a cut splits a pair."""
    positions = {node.seq: index for index, node in enumerate(measurement.nodes)}
    first = positions.get(start)
    if first is None:
        raise InvalidRegion(f"compaction start seq {start} not found in surface")
    last = positions.get(end)
    if last is None:
        raise InvalidRegion(f"compaction end seq {end} not found in surface")
    if first > last:
        raise InvalidRegion(f"compaction start seq {start} is after end seq {end} in surface")
    balances = measurement.balances()
    if balances[first] != 0:
        raise InvalidRegion(f"compaction start seq {start} splits a tool call from its result")
    if balances[last + 1] != 0:
        raise InvalidRegion(f"compaction end seq {end} splits a tool call from its result")
    return _region(measurement, first, last)

"""What the log says about compaction right now: the open turn and the compaction lock.

The lock is the log itself (FORMAT §11.4): a ``compaction/start`` with no ``compaction/end`` of
the same ``compactionId`` after it is *live* when no ``session/end-seed`` follows it, and blocks
every new compaction; one that an end-seed follows was left by an earlier process lifecycle
(a crash, a kill) and is stale history that blocks nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

from harness.events.event import Event

__all__ = ["END_SEED", "live_compaction_start", "open_turn", "stale_compaction_starts"]

END_SEED: Final = "session/end-seed"


def _compaction_id(event: Event) -> object:
    data = event.data
    return data.get("compactionId") if isinstance(data, Mapping) else None


def open_turn(events: Sequence[Event]) -> int | None:
    """The number of the open turn (a ``turn/start`` not yet ended), else ``None``."""
    for index in range(len(events) - 1, -1, -1):
        event = events[index]
        if event.type == "turn/end":
            return None
        if event.type == "turn/start":
            data = event.data
            number = data.get("turn") if isinstance(data, Mapping) else None
            return number if type(number) is int else 0
    return None


def live_compaction_start(events: Sequence[Event]) -> Event | None:
    """The ``compaction/start`` that holds the lock now, if any.

    Walks back from the tail: an end-seed reached first means every older unmatched start is
    stale; a start whose id has no later end is live.
    """
    ended: set[object] = set()
    for index in range(len(events) - 1, -1, -1):
        event = events[index]
        kind = event.type
        if kind == END_SEED:
            return None
        if kind == "compaction/end":
            ended.add(_compaction_id(event))
        elif kind == "compaction/start" and _compaction_id(event) not in ended:
            return event
    return None


def stale_compaction_starts(events: Sequence[Event]) -> list[Event]:
    """Unmatched ``compaction/start`` events that a later end-seed made stale (oldest first)."""
    ended: set[object] = set()
    seed_seen = False
    out: list[Event] = []
    for index in range(len(events) - 1, -1, -1):
        event = events[index]
        if event.type == END_SEED:
            seed_seen = True
        elif event.type == "compaction/end":
            ended.add(_compaction_id(event))
        elif event.type == "compaction/start" and _compaction_id(event) not in ended and seed_seen:
            out.append(event)
    out.reverse()
    return out

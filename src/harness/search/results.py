"""What a search and a catch-up return: ``SearchHit``, ``SearchPage``, ``IndexReport``."""

from __future__ import annotations

import re
from typing import Any, Final

import msgspec

from harness.query.match import TextNeedle
from harness.query.records import Classification

__all__ = ["SNIPPET_CONTEXT", "IndexReport", "SearchHit", "SearchPage", "StaleSession", "snippet"]

SNIPPET_CONTEXT: Final = 80
"""Characters of text kept on each side of the match in a snippet."""

_SPACE: Final = re.compile(r"\s+")


class SearchHit(msgspec.Struct, frozen=True, kw_only=True):
    """One event that holds the searched text.

    ``score`` orders the hits (lower is better: the negated relevance the backend's
    ranking gives, ``0.0`` when the search could not be ranked). ``snippet`` is one line
    of the event's semantic text around the first match (whitespace runs shown as one
    space, cut ends marked ``…``), and ``match`` the ``(start, end)`` of the match in it.
    Classification, turn, step and shadowing are as of the index's last catch-up.
    """

    session_id: str
    seq: int
    type: str
    time: int
    classification: Classification
    turn: int | None
    step: int | None
    shadowed_by: int | None
    compaction_id: str | None
    score: float
    snippet: str
    match: tuple[int, int]

    def to_json(self) -> dict[str, Any]:
        return {
            "session": self.session_id,
            "seq": self.seq,
            "type": self.type,
            "time": self.time,
            "classification": self.classification,
            "turn": self.turn,
            "step": self.step,
            "shadowedBy": self.shadowed_by,
            "compactionId": self.compaction_id,
            "score": self.score,
            "snippet": self.snippet,
            "match": list(self.match),
        }


class StaleSession(msgspec.Struct, frozen=True):
    """A session the index could not bring up to date, and why (a damaged log, say): a
    search still answers from what was indexed of it before, if anything."""

    session_id: str
    problem: str

    def to_json(self) -> dict[str, Any]:
        return {"session": self.session_id, "problem": self.problem}


class SearchPage(msgspec.Struct, frozen=True, kw_only=True):
    """One page of hits, best first, and the cursor of the next page (``None``: the last).

    ``ranked`` is false when no word of the query is three characters or more: the index
    cannot narrow such a search, every event is checked and the hits come in store order.
    ``stale`` lists the sessions the catch-up before the search could not index."""

    hits: tuple[SearchHit, ...]
    next_cursor: str | None
    ranked: bool
    stale: tuple[StaleSession, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "hits": [hit.to_json() for hit in self.hits],
            "nextCursor": self.next_cursor,
            "ranked": self.ranked,
            "stale": [item.to_json() for item in self.stale],
        }


class IndexReport(msgspec.Struct, frozen=True, kw_only=True):
    """What a catch-up (or a rebuild) did.

    ``sessions``: sessions the store lists; ``updated``: sessions read and indexed because
    they changed; ``reset``: of those, the ones indexed again from seq 0 (new, rewritten
    or replaced); ``removed``: sessions gone from the store, dropped from the index;
    ``events``: events newly indexed (only events with semantic text make rows);
    ``reclassified``: indexed events whose classification changed (a later compaction
    shadowed them); ``stale``: sessions that could not be read."""

    location: str
    sessions: int
    updated: int
    reset: int
    removed: int
    events: int
    rows: int
    reclassified: int
    stale: tuple[StaleSession, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "location": self.location,
            "sessions": self.sessions,
            "updated": self.updated,
            "reset": self.reset,
            "removed": self.removed,
            "events": self.events,
            "rows": self.rows,
            "reclassified": self.reclassified,
            "stale": [item.to_json() for item in self.stale],
        }


def _flat(text: str) -> str:
    return _SPACE.sub(" ", text)


def snippet(text: str, needle: TextNeedle, context: int = SNIPPET_CONTEXT) -> tuple[str, tuple[int, int]]:
    """One line of ``text`` around the first match of ``needle``: ``(snippet, (start, end))``
    with the match's place in the snippet. Without a match, the text's start."""
    found = needle.search(text)
    start, end = (found.start(), found.end()) if found is not None else (0, 0)
    low, high = max(0, start - context), min(len(text), end + context)
    before = _flat(text[low:start]).lstrip() if low == 0 else _flat(text[low:start])
    matched = _flat(text[start:end])
    after = _flat(text[end:high])
    if high == len(text):
        after = after.rstrip()
    lead = "…" if low > 0 else ""
    tail = "…" if high < len(text) else ""
    first = len(lead) + len(before)
    return lead + before + matched + after + tail, (first, first + len(matched))

"""The contract between the search engine and where an index lives (``Backing``).

Two backings implement it: ``SidecarIndex`` (SQLite FTS5, for JSONL roots, SQLite stores
and memory stores) and ``PostgresIndex`` (a ``tsvector`` column with a GIN index in the
store's own database). The engine (``harness.search.index``) does everything else: it
decides what to index (``plan_session``), and checks and shapes every candidate.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import msgspec

from harness.query.filters import EventFilter
from harness.query.records import Classification
from harness.search.cursor import Key
from harness.search.plan import SessionPlan, SessionState

__all__ = ["Backing", "Candidate", "CandidateQuery", "Key"]


class CandidateQuery(msgspec.Struct, frozen=True, kw_only=True):
    """What a backing narrows by: every trigram in ``terms`` (folded; none: every row),
    ``session`` when given, and a superset of ``where`` (the engine checks the rest)."""

    terms: tuple[str, ...]
    where: EventFilter
    session: str | None


class Candidate(msgspec.Struct, frozen=True, kw_only=True):
    """A row that may be a hit, with its ranking score (lower is better)."""

    session_id: str
    seq: int
    type: str
    time: int
    classification: Classification
    turn: int | None
    step: int | None
    shadowed_by: int | None
    compaction_id: str | None
    text: str
    score: float

    @property
    def key(self) -> Key:
        return (self.score, self.session_id, self.seq)


class Backing(Protocol):
    """Where an index lives (see the module doc)."""

    @property
    def location(self) -> str: ...

    async def states(self) -> dict[str, SessionState]:
        """The state of every indexed session."""
        ...

    async def classes(self, session_id: str) -> bytes:
        """The classification codes of a session's indexed events (empty when none)."""
        ...

    async def apply(self, plan: SessionPlan) -> bool:
        """Write ``plan`` in one transaction; ``False`` (nothing written) when the session's
        stored state is no longer ``plan.expect``."""
        ...

    async def drop(self, session_ids: Sequence[str]) -> None:
        """Remove these sessions and their rows."""
        ...

    async def clear(self) -> None:
        """Remove everything (a rebuild starts from nothing)."""
        ...

    async def narrow(self, query: CandidateQuery) -> CandidateQuery | None:
        """``query`` with the terms that narrow best (any subset of them is a superset of
        the hits), or ``None`` when some term is in no row: nothing can match. Called once
        per search, so that every batch of it ranks by the same terms."""
        ...

    async def candidates(self, query: CandidateQuery, after: Key | None, limit: int) -> list[Candidate]:
        """Up to ``limit`` rows in key order (score, session id, seq) after ``after``."""
        ...

    async def close(self) -> None: ...

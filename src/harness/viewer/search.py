"""Store-wide search for the sessions page, through the query index (``harness.search``).

The viewer never writes to the store, and a JSONL root or an SQLite store keeps its index in
a sidecar file beside the sessions. So for those the viewer keeps an index of its own, in
the user's cache directory (one file per store, named by a digest of the store's path) or
where ``index_path`` says, and brings it up to date before each search: answers are as fresh
as the store. A PostgreSQL store keeps its index in its own schema; the viewer reads it as
``harness index`` last left it (no catch-up, which would write there) and says so.
"""

from __future__ import annotations

import hashlib
import os
from typing import Any, Final

from harness.errors import HarnessError
from harness.query.filters import EventFilter
from harness.search import SearchHit, SearchIndex, open_search_index
from harness.search.index import sidecar_path
from harness.stores.store import SessionStore

__all__ = ["HITS", "StoreSearch", "viewer_index_path"]

HITS: Final = 50
"""Hits per page of the sessions page's search."""


def _cache_home() -> str:
    return os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")


def viewer_index_path(store: SessionStore) -> str | None:
    """Where the viewer keeps its own index of ``store`` (``None``: the store holds its index)."""
    sidecar = sidecar_path(store.backend)
    if sidecar is None:
        return None
    digest = hashlib.sha256(os.path.abspath(sidecar).encode("utf-8", "surrogateescape")).hexdigest()[:24]
    return os.path.join(_cache_home(), "harness", "viewer-index", f"{digest}.sqlite")


class StoreSearch:
    """The sessions page's search over one store (see the module doc); opened on first use."""

    def __init__(self, store: SessionStore, index_path: str | None = None) -> None:
        self._store = store
        self._private = index_path if index_path is not None else viewer_index_path(store)
        self._index: SearchIndex | None = None

    @property
    def fresh(self) -> bool:
        """Whether each search first catches up with the store (not for a database index)."""
        return self._private is not None

    def _opened(self) -> SearchIndex:
        if self._index is None:
            if self._private is not None:
                os.makedirs(os.path.dirname(self._private) or ".", exist_ok=True)
                self._index = open_search_index(self._store, path=self._private)
            else:
                self._index = open_search_index(self._store)
        return self._index

    async def search(self, text: str, *, cursor: str | None, where: EventFilter | None) -> dict[str, Any]:
        """A page of hits as the template shows them, or the problem that stopped the search."""
        try:
            page = await self._opened().search(
                text, filter=where, limit=HITS, cursor=cursor, catch_up=self.fresh
            )
        except HarnessError as error:
            return {"hits": [], "next": None, "stale": [], "problem": str(error), "fresh": self.fresh}
        return {
            "hits": [_hit(hit) for hit in page.hits],
            "next": page.next_cursor,
            "ranked": page.ranked,
            "stale": [(stale.session_id, stale.problem) for stale in page.stale],
            "problem": None,
            "fresh": self.fresh,
        }

    async def close(self) -> None:
        if self._index is not None:
            await self._index.close()
            self._index = None


def _hit(hit: SearchHit) -> dict[str, Any]:
    return {
        "session": hit.session_id,
        "seq": hit.seq,
        "type": hit.type,
        "classification": hit.classification,
        "turn": hit.turn,
        "snippet": hit.snippet,
        "time": hit.time,
    }

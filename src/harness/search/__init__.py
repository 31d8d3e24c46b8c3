"""Full-text search across a store (``docs/querying-search.md``): a layer above ``query``.

``open_search_index(store)`` gives the store's ``SearchIndex``: an SQLite FTS5 sidecar for
a JSONL root or an SQLite store, a ``tsvector`` column with a GIN index for PostgreSQL.
It is kept up to date incrementally, one transaction per session, from a per-session
cursor; ``search(text, filter=..., session=..., limit=..., cursor=...)`` returns a
``SearchPage`` of ranked ``SearchHit`` values with snippets and classifications. The text
matches exactly as the query layer's text filter does (``TextNeedle``), and the filter is
``harness.query.EventFilter``: the index only narrows, the query layer decides.

- ``index`` (``SearchIndex``, ``open_search_index``, ``forget_deleted``): catch-up, rebuild,
  search, and dropping a deleted session at once;
- ``results`` (``SearchHit``, ``SearchPage``, ``IndexReport``, ``StaleSession``);
- ``fold`` (``fold_text``, ``query_terms``): the folding and the trigrams the index uses;
- ``plan`` (``SessionState``, ``plan_session``): what one catch-up writes for a session;
- ``sidecar`` (SQLite FTS5) and ``pgindex`` (PostgreSQL): where the index lives.

Every name here is imported on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness._lazy import exported_names, lazy_exports

if TYPE_CHECKING:  # the table below as imports, for type checkers and IDEs (a test checks they agree)
    from harness.errors import SearchIndexCorrupt as SearchIndexCorrupt
    from harness.errors import SearchIndexError as SearchIndexError
    from harness.search.index import INDEX_SIDECAR as INDEX_SIDECAR
    from harness.search.index import MAX_HITS as MAX_HITS
    from harness.search.index import SearchIndex as SearchIndex
    from harness.search.index import forget_deleted as forget_deleted
    from harness.search.index import open_search_index as open_search_index
    from harness.search.results import IndexReport as IndexReport
    from harness.search.results import SearchHit as SearchHit
    from harness.search.results import SearchPage as SearchPage
    from harness.search.results import StaleSession as StaleSession

_EXPORTS = {
    "harness.errors": ("SearchIndexCorrupt", "SearchIndexError"),
    "harness.search.index": (
        "MAX_HITS",
        "INDEX_SIDECAR",
        "SearchIndex",
        "forget_deleted",
        "open_search_index",
    ),
    "harness.search.results": ("IndexReport", "SearchHit", "SearchPage", "StaleSession"),
}

if not TYPE_CHECKING:  # at run time: the table's names, each imported on first use (PEP 562)
    __all__ = exported_names(_EXPORTS)
    __getattr__, __dir__ = lazy_exports(__name__, globals(), _EXPORTS)

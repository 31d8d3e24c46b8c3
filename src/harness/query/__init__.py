"""Querying a session's log (``docs/querying.md``): pure folds over ``session.events``, no I/O.

A layer beside compaction and recovery, below the agent: the CLI, a viewer, the agent's own
recall tool and the retention evaluation all ask the log their questions through it.

- ``index`` (``QueryIndex``, ``index_of``, ``classify``): one linear pass that classifies each
  event as ``current``, ``shadowed`` or ``log-only`` from ``fold_surface`` and records turns,
  steps and compaction brackets;
- ``text`` (``event_text``): the semantic text of an event; ``match`` (``TextNeedle``): the
  literal, case-insensitive, whitespace-flexible text match;
- ``filters`` (``EventFilter``, ``Range``, ``filter_events``, ``matching_seqs``): clauses ANDed
  across, ORed within;
- ``tracing`` (``trace``): an event's sources, citations, replacement, compaction, tool chain,
  turn and step;
- ``reads`` (``window``, ``page``): bounded reads with classification;
- ``forks`` (``lineage``, ``store_lineage``): fork ancestors and descendants across a store;
- ``line`` (``fork_line``, ``ForkLine``, ``StoreReader``): a session and its fork ancestors
  through a read-only handle on the store, each with the part of its log the line did not
  inherit (what the recall tool reaches);
- ``timetravel``: the Surface, the model history and the model request as they were right
  after any event (``surface_at``, ``messages_at``, ``request_at``, ``request_before``).

Every name here is imported on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness._lazy import lazy_exports

if TYPE_CHECKING:
    from harness.errors import EventNotFound, InvalidQuery, QueryError
    from harness.query.filters import EventFilter, Range, filter_events, matching_seqs
    from harness.query.forks import Lineage, LineageNode, lineage, store_lineage
    from harness.query.index import QueryIndex, QuerySource, classify, index_of
    from harness.query.line import ForkLine, LineMember, SessionReader, StoreReader, fork_line
    from harness.query.match import TextNeedle
    from harness.query.reads import MAX_PAGE, MAX_WINDOW, EventPage, EventWindow, page, window
    from harness.query.records import (
        CLASSIFICATIONS,
        Classification,
        CompactionBracket,
        EventRecord,
        Span,
    )
    from harness.query.text import TEXT_TYPES, event_text
    from harness.query.timetravel import (
        TimeTravel,
        messages_at,
        request_at,
        request_before,
        request_points,
        surface_at,
        time_travel,
    )
    from harness.query.tracing import Approval, ToolChain, Trace, trace

__all__ = [
    "CLASSIFICATIONS",
    "MAX_PAGE",
    "MAX_WINDOW",
    "TEXT_TYPES",
    "Approval",
    "Classification",
    "CompactionBracket",
    "EventFilter",
    "EventNotFound",
    "EventPage",
    "EventRecord",
    "EventWindow",
    "ForkLine",
    "InvalidQuery",
    "LineMember",
    "Lineage",
    "LineageNode",
    "QueryError",
    "QueryIndex",
    "QuerySource",
    "Range",
    "SessionReader",
    "Span",
    "StoreReader",
    "TextNeedle",
    "TimeTravel",
    "ToolChain",
    "Trace",
    "classify",
    "event_text",
    "filter_events",
    "fork_line",
    "index_of",
    "lineage",
    "matching_seqs",
    "messages_at",
    "page",
    "request_at",
    "request_before",
    "request_points",
    "store_lineage",
    "surface_at",
    "time_travel",
    "trace",
    "window",
]

_EXPORTS = {
    "harness.errors": ("EventNotFound", "InvalidQuery", "QueryError"),
    "harness.query.filters": ("EventFilter", "Range", "filter_events", "matching_seqs"),
    "harness.query.forks": ("Lineage", "LineageNode", "lineage", "store_lineage"),
    "harness.query.index": ("QueryIndex", "QuerySource", "classify", "index_of"),
    "harness.query.line": ("ForkLine", "LineMember", "SessionReader", "StoreReader", "fork_line"),
    "harness.query.match": ("TextNeedle",),
    "harness.query.reads": ("MAX_PAGE", "MAX_WINDOW", "EventPage", "EventWindow", "page", "window"),
    "harness.query.records": (
        "CLASSIFICATIONS",
        "Classification",
        "CompactionBracket",
        "EventRecord",
        "Span",
    ),
    "harness.query.text": ("TEXT_TYPES", "event_text"),
    "harness.query.timetravel": (
        "TimeTravel",
        "messages_at",
        "request_at",
        "request_before",
        "request_points",
        "surface_at",
        "time_travel",
    ),
    "harness.query.tracing": ("Approval", "ToolChain", "Trace", "trace"),
}

if not TYPE_CHECKING:  # at run time each name is imported on first use (PEP 562)
    __getattr__, __dir__ = lazy_exports(__name__, globals(), _EXPORTS)

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

from harness._lazy import exported_names, lazy_exports

if TYPE_CHECKING:  # the table below as imports, for type checkers and IDEs (a test checks they agree)
    from harness.errors import EventNotFound as EventNotFound
    from harness.errors import InvalidQuery as InvalidQuery
    from harness.errors import QueryError as QueryError
    from harness.query.filters import EventFilter as EventFilter
    from harness.query.filters import Range as Range
    from harness.query.filters import filter_events as filter_events
    from harness.query.filters import matching_seqs as matching_seqs
    from harness.query.forks import Lineage as Lineage
    from harness.query.forks import LineageNode as LineageNode
    from harness.query.forks import lineage as lineage
    from harness.query.forks import store_lineage as store_lineage
    from harness.query.index import QueryIndex as QueryIndex
    from harness.query.index import QuerySource as QuerySource
    from harness.query.index import classify as classify
    from harness.query.index import index_of as index_of
    from harness.query.line import ForkLine as ForkLine
    from harness.query.line import LineMember as LineMember
    from harness.query.line import SessionReader as SessionReader
    from harness.query.line import StoreReader as StoreReader
    from harness.query.line import fork_line as fork_line
    from harness.query.match import TextNeedle as TextNeedle
    from harness.query.reads import MAX_PAGE as MAX_PAGE
    from harness.query.reads import MAX_WINDOW as MAX_WINDOW
    from harness.query.reads import EventPage as EventPage
    from harness.query.reads import EventWindow as EventWindow
    from harness.query.reads import page as page
    from harness.query.reads import window as window
    from harness.query.records import CLASSIFICATIONS as CLASSIFICATIONS
    from harness.query.records import Classification as Classification
    from harness.query.records import CompactionBracket as CompactionBracket
    from harness.query.records import EventRecord as EventRecord
    from harness.query.records import Span as Span
    from harness.query.text import TEXT_TYPES as TEXT_TYPES
    from harness.query.text import event_text as event_text
    from harness.query.timetravel import TimeTravel as TimeTravel
    from harness.query.timetravel import messages_at as messages_at
    from harness.query.timetravel import request_at as request_at
    from harness.query.timetravel import request_before as request_before
    from harness.query.timetravel import request_points as request_points
    from harness.query.timetravel import surface_at as surface_at
    from harness.query.timetravel import time_travel as time_travel
    from harness.query.tracing import Approval as Approval
    from harness.query.tracing import ToolChain as ToolChain
    from harness.query.tracing import Trace as Trace
    from harness.query.tracing import trace as trace

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

if not TYPE_CHECKING:  # at run time: the table's names, each imported on first use (PEP 562)
    __all__ = exported_names(_EXPORTS)
    __getattr__, __dir__ = lazy_exports(__name__, globals(), _EXPORTS)

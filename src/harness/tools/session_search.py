"""``session_search``: the agent searches its own session's log, compacted history included.

Compaction only changes what the model sees: the events a checkpoint replaced stay in the log.
This read-only tool lets the model reach them. It has two modes (exactly one per call):

* **search** (``query``): the events whose semantic text (``harness.query.text``) holds
  ``query`` as literal text, case-insensitively and whitespace-flexibly (never a regular
  expression: ``a.b*`` finds those four characters), newest first, at most ``limit`` hits, each
  a header (seq, type, classification, turn and step) and a snippet around the hit; ``scope``
  keeps only ``shadowed`` (compacted away) or ``current`` events; ``before_seq`` pages on to
  older hits;
* **read** (``seq``): the event at ``seq`` with up to ``before``/``after`` neighbours, each
  with its semantic text (events with none show their header only).

It is built on ``harness.query`` (``EventFilter`` with a text clause, ``matching_seqs``,
``window``), in memory over the log ``ToolContext.events`` gives (the running session's own;
no index yet, so each call folds a snapshot of the log once, in a worker thread). It reaches
only that session: a fork child's log holds its fork seed, so the history the agent inherited
through a fork is searchable, but nothing else in the store is. Its own traffic
(``session_search`` calls, their results, and the call blocks of the assistant messages that
made them) never counts as a hit, so a search does not find itself.

Output is capped: each event's text at ``max_event_chars``, each snippet at
``snippet_chars``, the whole answer at ``max_output_chars`` (8,000 by default); every cut is
marked in the text, and a closing bracketed note says how to read on.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any, Final

from harness.errors import EventNotFound, InvalidQuery
from harness.events.event import Event
from harness.query.filters import EventFilter, Range, matching_seqs
from harness.query.index import QueryIndex
from harness.query.match import TextNeedle
from harness.query.reads import window
from harness.query.records import EventRecord
from harness.query.text import event_text
from harness.tools.base import ToolContext, ToolError, ToolOutcome, ToolSpec
from harness.tools.schema import check_arguments

__all__ = ["SESSION_SEARCH", "SessionSearch"]

_NOTE_ROOM: Final = 400
"""Characters of the output budget kept for the closing note."""

SESSION_SEARCH: Final = "session_search"
"""The tool's name (the checkpoint message mentions it when the tool is offered)."""

_DESCRIPTION = (
    "Search this session's own full history, including earlier parts that were condensed into a "
    "summary and are no longer shown to you. Use it to recover an exact detail (a value, a path, "
    "an error, an instruction) that the summary left out. Give `query` to find events whose text "
    "contains it (literal text, not a regular expression; case and spacing do not matter); hits "
    "come newest first with their seq numbers. Give `seq` instead to read that event in full with "
    "`before`/`after` neighbouring events. Output is capped in size; cuts are marked."
)


class SessionSearch:
    """The ``session_search`` tool (read-only, parallel-safe); see the module doc."""

    changes_world = False
    exclusive = False

    def __init__(
        self,
        *,
        max_output_chars: int = 8_000,
        max_event_chars: int = 2_000,
        snippet_chars: int = 300,
        max_hits: int = 20,
        max_neighbours: int = 10,
    ) -> None:
        """The caps are adjustable for tests; the defaults keep an answer a few thousand tokens.
        ``max_output_chars`` must leave room for the closing note (at least 1,000)."""
        if max_output_chars < 1_000:
            raise ValueError("max_output_chars must be at least 1000")
        self.max_output_chars = max_output_chars
        self.max_event_chars = max_event_chars
        self.snippet_chars = snippet_chars
        self.max_hits = max_hits
        self.max_neighbours = max_neighbours
        count = {"type": "integer", "minimum": 0, "maximum": max_neighbours}
        self.spec = ToolSpec(
            name=SESSION_SEARCH,
            description=_DESCRIPTION,
            parameters={
                "type": "object",
                "properties": {
                    "query": {
                        "type": "string",
                        "minLength": 1,
                        "maxLength": 500,
                        "description": "Literal text to find (not a pattern).",
                    },
                    "scope": {
                        "type": "string",
                        "enum": ["all", "shadowed", "current"],
                        "description": "Search everything (default), only condensed-away history "
                        "(`shadowed`), or only what you can still see (`current`).",
                    },
                    "limit": {
                        "type": "integer",
                        "minimum": 1,
                        "maximum": max_hits,
                        "description": "Most hits to show. Default 5.",
                    },
                    "before_seq": {
                        "type": "integer",
                        "minimum": 0,
                        "description": "Only hits older than this seq (to page on).",
                    },
                    "seq": {
                        "type": "integer",
                        "minimum": 0,
                        "description": "Read this event (instead of searching).",
                    },
                    "before": {**count, "description": "Events to show before `seq`. Default 2."},
                    "after": {**count, "description": "Events to show after `seq`. Default 2."},
                },
                "additionalProperties": False,
            },
        )

    async def run(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolOutcome:
        """Search or read, as the arguments ask (a pure fold over ``context.events``)."""
        args = check_arguments(self.spec.name, self.spec.parameters, arguments)
        search = {"query", "scope", "limit", "before_seq"} & args.keys()
        read = {"seq", "before", "after"} & args.keys()
        if ("query" in args) == ("seq" in args):
            raise ToolError(
                "INVALID_ARGUMENTS",
                "Invalid arguments for session_search: give exactly one of 'query' (to search) "
                "or 'seq' (to read an event).",
            )
        if search and read:
            raise ToolError(
                "INVALID_ARGUMENTS",
                f"Invalid arguments for session_search: {', '.join(sorted(search))} go with 'query', "
                f"{', '.join(sorted(read))} with 'seq'; do not mix them.",
            )
        events = tuple(context.events)  # a snapshot, taken here: the log may grow while the call runs
        if not events:
            raise ToolError("NO_SESSION_LOG", "There is no session log to search in this context.")
        return await asyncio.to_thread(self._answer, events, args)

    def _answer(self, events: tuple[Event, ...], args: dict[str, Any]) -> ToolOutcome:
        """The answer over the snapshot ``events`` (in a worker thread: events are immutable)."""
        index = QueryIndex(events)
        own = _own_traffic(index)
        try:
            if "query" in args:
                return self._search(index, own, args)
            return self._read(index, own, args)
        except (InvalidQuery, EventNotFound) as error:
            raise ToolError("INVALID_ARGUMENTS", f"Invalid arguments for session_search: {error}") from None

    def _search(self, index: QueryIndex, own: _Own, args: dict[str, Any]) -> ToolOutcome:
        query: str = args["query"]
        try:
            needle = TextNeedle(query)
        except InvalidQuery:
            raise ToolError(
                "INVALID_ARGUMENTS",
                "Invalid arguments for session_search: 'query' holds no word to look for.",
            ) from None
        scope = args.get("scope", "all")
        limit = args.get("limit", 5)
        top = min(args.get("before_seq", len(index)), len(index)) - 1
        where = EventFilter(
            text=(query,),
            classifications=() if scope == "all" else (scope,),
            seqs=(Range(0, top),) if top >= 0 else (),
        )
        out = _Budget(self.max_output_chars - _NOTE_ROOM)
        shown = 0
        last: int | None = None
        more = False
        if top >= 0:
            for seq in matching_seqs(index, where, start=top, reverse=True):
                text = own.text(index.events[seq])
                hit = needle.search(text) if text else None
                if hit is None:  # the needle sat only in session_search's own traffic
                    continue
                if shown == limit:
                    more = True
                    break
                entry = (
                    _header(index.record(seq))
                    + "\n"
                    + _snippet(text, hit.start(), hit.end(), self.snippet_chars)
                )
                if not out.add(entry):
                    more = True
                    break
                shown += 1
                last = seq
        if not shown:
            where_text = "" if scope == "all" else f" among {scope} events"
            older = f" before seq {top + 1}" if "before_seq" in args else ""
            return ToolOutcome(f"No event{where_text}{older} contains {query!r}.")
        notes = [f"[{shown} hit{'s' if shown != 1 else ''}, newest first."]
        if more and last is not None:
            notes.append(f"More may be older: call session_search again with before_seq={last}.")
        notes.append("Read one in full with seq=<seq>.]")
        return ToolOutcome(out.text(" ".join(notes)), meta={"hits": shown})

    def _read(self, index: QueryIndex, own: _Own, args: dict[str, Any]) -> ToolOutcome:
        seq: int = args["seq"]
        if seq >= len(index):
            raise ToolError(
                "EVENT_NOT_FOUND",
                f"There is no event {seq}: this session's log has seqs 0 to {len(index) - 1}.",
            )
        found = window(index, seq, before=args.get("before", 2), after=args.get("after", 2))
        out = _Budget(self.max_output_chars - _NOTE_ROOM)
        shown = 0
        for record in found.records:
            text = own.text(record.event)
            entry = _header(record) + ("\n" + _cut(text, self.max_event_chars) if text else "")
            if record.seq == seq:
                entry = entry.replace("#", "> #", 1)
            if not out.add(entry):
                break
            shown += 1
        last = found.records[shown - 1].seq if shown else seq
        note = f"[Events {found.first}–{last} of 0–{len(index) - 1}; > marks seq {seq}."
        if last < found.last:
            note += f" Output cut at {self.max_output_chars} characters: read on with seq={last + 1}."
        return ToolOutcome(out.text(note + "]"))


class _Own:
    """Recognises ``session_search``'s own traffic, so that it never counts as a hit."""

    __slots__ = ("call_ids",)

    def __init__(self, call_ids: set[str]) -> None:
        self.call_ids = call_ids

    def text(self, event: Event) -> str:
        """The event's semantic text without this tool's calls and results."""
        if event.type == "tool/call":
            data = event.data
            return (
                "" if isinstance(data, Mapping) and data.get("name") == SESSION_SEARCH else event_text(event)
            )
        if event.type == "tool/result":
            data = event.data
            message = data.get("message") if isinstance(data, Mapping) else None
            source = message.get("source") if isinstance(message, Mapping) else None
            if isinstance(source, Mapping) and source.get("callId") in self.call_ids:
                return ""
            return event_text(event)
        if event.type == "assistant/message" and self.call_ids:
            return _assistant_text(event)
        return event_text(event)


def _own_traffic(index: QueryIndex) -> _Own:
    ids: set[str] = set()
    for seq in matching_seqs(index, EventFilter(types=("tool/call",))):
        data = index.events[seq].data
        if (
            isinstance(data, Mapping)
            and data.get("name") == SESSION_SEARCH
            and isinstance(data.get("callId"), str)
        ):
            ids.add(data["callId"])
    return _Own(ids)


def _assistant_text(event: Event) -> str:
    """An assistant message's semantic text, leaving out its ``session_search`` call blocks."""
    data = event.data
    message = data.get("message") if isinstance(data, Mapping) else None
    content = message.get("content") if isinstance(message, Mapping) else None
    if not isinstance(content, Sequence) or not any(
        isinstance(block, Mapping) and block.get("name") == SESSION_SEARCH for block in content
    ):
        return event_text(event)
    parts: list[str] = []
    for block in content:
        if not isinstance(block, Mapping):
            continue
        if block.get("type") in ("text", "reasoning") and isinstance(block.get("text"), str):
            parts.append(block["text"])
        elif block.get("type") == "tool-call" and block.get("name") != SESSION_SEARCH:
            parts += [
                value for value in (block.get("name"), block.get("arguments")) if isinstance(value, str)
            ]
    return "\n".join(stripped for part in parts if (stripped := part.strip()))


def _header(record: EventRecord) -> str:
    where = []
    if record.turn is not None:
        where.append(f"turn {record.turn}")
    if record.step is not None:
        where.append(f"step {record.step}")
    state: str = record.classification
    if record.classification == "shadowed":
        state = "shadowed: condensed away" + (
            f" by seq {record.shadowed_by}" if record.shadowed_by is not None else ""
        )
    return f"#{record.seq} {record.type} [{state}]" + (f" ({', '.join(where)})" if where else "")


def _cut(text: str, most: int) -> str:
    """``text`` in at most ``most`` characters, the cut (if any) marked inside them."""
    if len(text) <= most:
        return text
    keep = max(0, most - 48)
    return f"{text[:keep]} [… cut: {len(text) - keep} more characters]"


def _snippet(text: str, start: int, end: int, width: int) -> str:
    """About ``width`` characters of ``text`` around the hit ``start``..``end``, cuts marked."""
    if len(text) <= width:
        return text
    room = max(0, width - (end - start))
    low = max(0, start - room // 2)
    high = min(len(text), max(end, low + width))
    low = max(0, min(low, high - width))
    return ("…" if low else "") + text[low:high] + ("…" if high < len(text) else "")


class _Budget:
    """Entries joined by blank lines, refused once they would pass ``most`` characters (the
    first entry is always taken, cut to fit)."""

    __slots__ = ("entries", "most", "size")

    def __init__(self, most: int) -> None:
        self.most = most
        self.entries: list[str] = []
        self.size = 0

    def add(self, entry: str) -> bool:
        cost = len(entry) + (2 if self.entries else 0)
        if self.size + cost > self.most:
            if self.entries:
                return False
            entry = _cut(entry, self.most)
            cost = len(entry)
        self.entries.append(entry)
        self.size += cost
        return True

    def text(self, note: str) -> str:
        return "\n\n".join(self.entries) + "\n\n" + note

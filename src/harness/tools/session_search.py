"""``session_search``: the agent searches its own session's log, compacted history included, and
the logs of the session's fork ancestors.

Compaction only changes what the model sees: the events a checkpoint replaced stay in the log.
This read-only tool lets the model reach them. It has two modes (exactly one per call):

* **search** (``query``): the events whose semantic text (``harness.query.text``) holds
  ``query`` as literal text, case-insensitively and whitespace-flexibly (never a regular
  expression: ``a.b*`` finds those four characters), newest first, at most ``limit`` hits, each
  a header (seq, type, classification, turn and step, and the session that holds it) and a
  snippet around the hit; ``scope`` keeps only ``shadowed`` (compacted away) or ``current``
  events; ``before_seq`` pages on to older hits. A match starts at a word
  (``TextNeedle(word_start=True)``: ``TTL`` does not find ``settle``) unless none does; then
  the matches inside words are shown and the answer says so; ``partial=true`` asks for those
  from the start;
* **read** (``seq``): the event at ``seq`` with up to ``before``/``after`` neighbours, each
  with its semantic text (events with none show their header only).

**Reach: the fork line, nothing else.** The tool reads the running session's own log
(``ToolContext.events``) and, through the read-only ``ToolContext.sessions``, the stored logs
of its fork ancestors (``parentSession``, then that session's parent...; ``harness.query.line``).
A fork child's log already holds its parent's events up to the fork point (its fork seed),
so a search covers each session of the line once: this session's whole log (seed included,
classified as this session sees it), then each ancestor from the point where the line forked
from it: what the parent did after the fork, which compaction may since have hidden there
too. Hits say which session holds them and whether that event is also in this session's own
history. ``session`` names a session of the line: a search starts there (then goes on up the
line), a read reads that session's log. Any other id (a sibling fork, a descendant, a session
of another line, a made-up or path-like id) is refused with ``SESSION_OUT_OF_REACH``, the same
answer whether or not the store holds it: the ids the tool reads come from headers on the
line, never from the model.

Each call folds a snapshot of the own log, and reads each ancestor it gets to from the store
(``inspect``: a detached view, nothing written), once, in a worker thread; no index yet. Its
own traffic (``session_search`` calls, their results, and the call blocks of the assistant
messages that made them) never counts as a hit, so a search does not find itself.

Output is capped: each event's text at ``max_event_chars``, each snippet at
``snippet_chars``, the whole answer at ``max_output_chars`` (8,000 by default); every cut is
marked in the text, and a closing bracketed note says how to read on.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any, Final

from harness.errors import EventNotFound, HarnessError, InvalidQuery
from harness.events.event import Event
from harness.query.filters import EventFilter, Range, matching_seqs
from harness.query.index import QueryIndex
from harness.query.line import ForkLine, LineMember, SessionReader, fork_line
from harness.query.match import TextNeedle
from harness.query.reads import window
from harness.tools.base import ToolContext, ToolError, ToolOutcome, ToolSpec
from harness.tools.recall_text import SESSION_SEARCH, Budget, cut, header, own_traffic, snippet
from harness.tools.schema import check_arguments

__all__ = ["SESSION_SEARCH", "SessionSearch"]

_NOTE_ROOM: Final = 400
"""Characters of the output budget kept for the closing note."""

_ID_SHOWN: Final = 200
"""The most characters of a session id an answer shows (a longer one is cut, marked)."""

_DESCRIPTION = (
    "Search this session's own full history, including earlier parts that were condensed into a "
    "summary and are no longer shown to you, and the history of the sessions it was forked from. "
    "Use it to recover an exact detail (a value, a path, an error, an instruction) that the "
    "summary left out. Give `query` to find events whose text contains it (literal text, not a "
    "regular expression; case and spacing do not matter; a match starts at a word unless you set "
    "`partial`); hits come newest first with their seq "
    "numbers and the session that holds them. Give `seq` instead to read that event in full with "
    "`before`/`after` neighbouring events. Output is capped in size; cuts are marked."
)


class _Found:
    """How far a search got: hits shown, the last one, whether more may follow."""

    __slots__ = ("ancestors", "last", "more", "shown")

    def __init__(self) -> None:
        self.shown = 0
        self.last: tuple[LineMember, int] | None = None
        self.more = False
        self.ancestors = False


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
        max_ancestors: int = 16,
    ) -> None:
        """The caps are adjustable for tests; the defaults keep an answer a few thousand tokens.
        ``max_output_chars`` must leave room for the closing note (at least 1,000);
        ``max_ancestors`` bounds how far up the fork line the tool reads."""
        if max_output_chars < 1_000:
            raise ValueError("max_output_chars must be at least 1000")
        if max_ancestors < 0:
            raise ValueError("max_ancestors must not be negative")
        self.max_output_chars = max_output_chars
        self.max_event_chars = max_event_chars
        self.snippet_chars = snippet_chars
        self.max_hits = max_hits
        self.max_neighbours = max_neighbours
        self.max_ancestors = max_ancestors
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
                    "partial": {
                        "type": "boolean",
                        "description": "Also match inside longer words (by default a match starts "
                        "at a word: `TTL` does not find `settle`).",
                    },
                    "seq": {
                        "type": "integer",
                        "minimum": 0,
                        "description": "Read this event (instead of searching).",
                    },
                    "before": {**count, "description": "Events to show before `seq`. Default 2."},
                    "after": {**count, "description": "Events to show after `seq`. Default 2."},
                    "session": {
                        "type": "string",
                        "minLength": 1,
                        "maxLength": _ID_SHOWN,
                        "description": "A session id from a hit: this session (the default) or "
                        "one it was forked from. A search starts there and goes on to the "
                        "sessions that one was forked from; a read reads that session.",
                    },
                },
                "additionalProperties": False,
            },
        )

    async def run(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolOutcome:
        """Search or read, as the arguments ask, over the fork line of the running session."""
        args = check_arguments(self.spec.name, self.spec.parameters, arguments)
        search = {"query", "scope", "limit", "before_seq", "partial"} & args.keys()
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
        line = await self._line(context)
        first = 0
        if "session" in args:
            member = line.member(args["session"])
            if member is None:
                raise ToolError("SESSION_OUT_OF_REACH", _out_of_reach(args["session"], line))
            first = member.depth
        logs = _Logs(events, context.sessions)
        try:
            if "query" in args:
                return await self._search(line, first, logs, args)
            return await self._read(line.members[first], logs, args)
        except (InvalidQuery, EventNotFound) as error:
            raise ToolError("INVALID_ARGUMENTS", f"Invalid arguments for session_search: {error}") from None

    async def _line(self, context: ToolContext) -> ForkLine:
        if context.header is None:  # a log without its header: only the log itself, unnamed
            return ForkLine(members=(LineMember("", 0),), end="root")
        return await fork_line(context.sessions, context.header, most=self.max_ancestors)

    # ---- search ---------------------------------------------------------------------------

    async def _search(self, line: ForkLine, first: int, logs: _Logs, args: dict[str, Any]) -> ToolOutcome:
        query: str = args["query"]
        partial: bool = args.get("partial", False)
        try:
            needle = TextNeedle(query, word_start=not partial)
        except InvalidQuery:
            raise ToolError(
                "INVALID_ARGUMENTS",
                "Invalid arguments for session_search: 'query' holds no word to look for.",
            ) from None
        answer, shown = await self._search_with(line, first, logs, args, needle, partial=partial)
        if not shown and not partial:  # no match starts at a word: show those inside words
            inside, shown = await self._search_with(line, first, logs, args, TextNeedle(query), partial=True)
            if shown:
                return inside
        return answer

    async def _search_with(
        self,
        line: ForkLine,
        first: int,
        logs: _Logs,
        args: dict[str, Any],
        needle: TextNeedle,
        *,
        partial: bool,
    ) -> tuple[ToolOutcome, int]:
        """The answer with ``needle`` and how many hits it shows (``partial``: the needle also
        matches inside words)."""
        query: str = args["query"]
        lined = len(line.members) > 1 or line.end != "root"
        room = _NOTE_ROOM + (2 * _ID_SHOWN if lined else 0)
        out = Budget(self.max_output_chars - room)
        found = _Found()
        searched: list[LineMember] = []
        resume: LineMember | None = None  # the next session to search, when the page is full
        unread: tuple[LineMember, HarnessError] | None = None
        for member in line.members[first:]:
            if found.more or found.shown == args.get("limit", 5):
                resume = None if found.more else member
                break
            try:
                log = await logs.of(member)
            except HarnessError as error:
                unread = (member, error)
                break
            searched.append(member)
            top = len(log) - 1
            if member.depth == first and "before_seq" in args:
                top = min(args["before_seq"], len(log)) - 1
            low = min(member.start, len(log))
            if top >= low:
                await asyncio.to_thread(self._scan, log, member, Range(low, top), needle, args, out, found)
        notes: list[str] = []
        if not found.more and resume is None:  # the search got to the end of what it could reach
            notes += _line_notes(line, unread, reachable=logs.reader is not None)
        if not found.shown:
            scope = args.get("scope", "all")
            where_text = "" if scope == "all" else f" among {scope} events"
            older = f" before seq {args['before_seq']}" if "before_seq" in args else ""
            span = "" if not lined else " in " + _span(searched)
            answer = f"No event{where_text}{older}{span} contains {query!r}."
            return ToolOutcome(self._capped(" ".join([answer, *notes]))), 0
        shown = found.shown
        page = [f"[{shown} hit{'s' if shown != 1 else ''}, newest first"]
        page[0] += ", each session of the fork line in turn." if lined else "."
        if partial and not args.get("partial", False):
            page.append("No match starts at a word, so these match inside longer words.")
        again = "partial=true, " if partial else ""
        if found.more and found.last is not None:
            member, seq = found.last
            page.append(
                f"More may be older: call session_search again with {again}before_seq={seq}{_in(member)}."
            )
        elif resume is not None:
            page.append(
                "More may be in older sessions of the fork line: call session_search again with "
                f'{again}session="{_shown(resume.id)}".'
            )
        page.append(
            "Read one in full with seq=<seq>"
            + (" (and session=<id> for another session's hit)." if found.ancestors else ".")
        )
        note = " ".join(page + notes) + "]"
        return ToolOutcome(self._capped(out.text(note)), meta={"hits": shown}), shown

    def _scan(
        self,
        log: tuple[Event, ...],
        member: LineMember,
        seqs: Range,
        needle: TextNeedle,
        args: dict[str, Any],
        out: Budget,
        found: _Found,
    ) -> None:
        """Add the hits of ``log`` within ``seqs``, newest first (in a worker thread: events are
        immutable, and the search waits for it)."""
        index = QueryIndex(log)
        own = own_traffic(index)
        scope = args.get("scope", "all")
        where = EventFilter(
            text=(args["query"],),
            classifications=() if scope == "all" else (scope,),
            seqs=(seqs,),
        )
        assert seqs.end is not None
        for seq in matching_seqs(index, where, start=seqs.end, reverse=True):
            text = own.text(index.events[seq])
            hit = needle.search(text) if text else None
            if hit is None:  # only in session_search's own traffic, or only inside words
                continue
            if found.shown == args.get("limit", 5):
                found.more = True
                return
            entry = (
                header(index.record(seq), _place(member, seq))
                + "\n"
                + snippet(text, hit.start(), hit.end(), self.snippet_chars)
            )
            if not out.add(entry):
                found.more = True
                return
            found.shown += 1
            found.last = (member, seq)
            found.ancestors = found.ancestors or member.depth > 0

    # ---- read -----------------------------------------------------------------------------

    async def _read(self, member: LineMember, logs: _Logs, args: dict[str, Any]) -> ToolOutcome:
        try:
            log = await logs.of(member)
        except HarnessError as error:
            raise ToolError(
                "SESSION_UNREADABLE",
                f"Session {_shown(member.id)} ({member.relation}) could not be read: {type(error).__name__}.",
            ) from None
        return await asyncio.to_thread(self._read_log, log, member, args)

    def _read_log(self, log: tuple[Event, ...], member: LineMember, args: dict[str, Any]) -> ToolOutcome:
        seq: int = args["seq"]
        whose = "this session's log" if member.depth == 0 else f"the log of session {_shown(member.id)}"
        if seq >= len(log):
            span = f"has seqs 0 to {len(log) - 1}" if log else "has no events"
            raise ToolError("EVENT_NOT_FOUND", f"There is no event {seq}: {whose} {span}.")
        index = QueryIndex(log)
        own = own_traffic(index)
        found = window(index, seq, before=args.get("before", 2), after=args.get("after", 2))
        lined = member.depth > 0 or bool(member.id)
        out = Budget(self.max_output_chars - _NOTE_ROOM - (_ID_SHOWN if lined else 0))
        shown = 0
        for record in found.records:
            text = own.text(record.event)
            entry = header(record, _place(member, record.seq) if lined else "")
            entry += "\n" + cut(text, self.max_event_chars) if text else ""
            if record.seq == seq:
                entry = entry.replace("#", "> #", 1)
            if not out.add(entry):
                break
            shown += 1
        last = found.records[shown - 1].seq if shown else seq
        note = f"[Events {found.first}–{last} of 0–{len(index) - 1}"
        note += f" in session {_shown(member.id)} ({member.relation})" if member.depth else ""
        note += f"; > marks seq {seq}."
        if last < found.last:
            note += (
                f" Output cut at {self.max_output_chars} characters: read on with "
                f"seq={last + 1}{_in(member)}."
            )
        return ToolOutcome(self._capped(out.text(note + "]")))

    def _capped(self, text: str) -> str:
        """The last guard of the output cap (the budgets above keep within it already)."""
        return cut(text, self.max_output_chars)


class _Logs:
    """The logs of the line's sessions: the own snapshot, and each ancestor read from the store."""

    __slots__ = ("own", "reader")

    def __init__(self, own: tuple[Event, ...], reader: SessionReader | None) -> None:
        self.own = own
        self.reader = reader

    async def of(self, member: LineMember) -> tuple[Event, ...]:
        if member.depth == 0:
            return self.own
        assert self.reader is not None  # the line has ancestors only when there is a reader
        return tuple((await self.reader.inspect(member.id)).events)


def _shown(session_id: str) -> str:
    """A session id as an answer shows it (ids come from stored headers: untrusted, any length)."""
    return session_id if len(session_id) <= _ID_SHOWN else session_id[: _ID_SHOWN - 1] + "…"


def _in(member: LineMember) -> str:
    """The ``session=`` argument that names ``member`` again (none for this session)."""
    return f' and session="{_shown(member.id)}"' if member.depth else ""


def _place(member: LineMember, seq: int) -> str:
    """Which session of the line holds event ``seq``, for its header line."""
    if member.depth == 0:
        return f" in session {_shown(member.id)} (this session)" if member.id else " in this session"
    history = "also in" if member.holds_own_history(seq) else "not in"
    return f" in session {_shown(member.id)} ({member.relation}; {history} this session's history)"


def _span(searched: list[LineMember]) -> str:
    """The sessions a search went through, in words."""
    if not searched:
        return "no readable session"
    parts = [
        (f"this session ({_shown(m.id)})" if m.id else "this session")
        if m.depth == 0
        else f"session {_shown(m.id)} ({m.relation}, from seq {m.start})"
        for m in searched
    ]
    return ", ".join(parts[:-1]) + (" or " if len(parts) > 1 else "") + parts[-1]


def _line_notes(
    line: ForkLine, unread: tuple[LineMember, HarnessError] | None, *, reachable: bool
) -> list[str]:
    """What the search could not reach on the fork line, if anything."""
    if unread is not None:
        member, error = unread
        return [
            f"Session {_shown(member.id)} ({member.relation}) could not be read "
            f"({type(error).__name__}); it and older sessions of the line were not searched."
        ]
    stop = _shown(line.stop or "")
    if line.end == "cut" and not reachable:
        return [f"This session was forked from session {stop}, which session_search cannot reach here."]
    if line.end == "cut":
        ancestors = len(line.members) - 1
        return [
            f"The fork line goes on past {ancestors} ancestors (to session {stop}); those were not searched."
        ]
    if line.end == "missing":
        return [f"The fork line ends at session {stop}, which the store does not hold."]
    if line.end == "unreadable":
        return [f"The fork line ends at session {stop}, whose header could not be read."]
    if line.end == "cycle":
        return [f"The fork line comes back to session {stop}; it ends there."]
    return []


def _out_of_reach(asked: str, line: ForkLine) -> str:
    """The refusal for a session off the line: the same words whether or not it exists."""
    own = line.members[0]
    reach = f"this session ({_shown(own.id)})" if own.id else "this session"
    ancestors = [_shown(m.id) for m in line.members[1:]]
    if ancestors:
        reach += " and the sessions it was forked from (" + ", ".join(ancestors) + ")"
    return (
        f"session_search cannot reach session {asked!r}: it reaches only {reach}. Other sessions "
        "(forks of these, or any other line) are out of its reach."
    )

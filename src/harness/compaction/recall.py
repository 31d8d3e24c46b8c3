"""Recall through the tool: can a model get a compacted-away fact back with ``session_search``?

``recall_probe(events, probe)`` plays the part of a model that half-remembers a fact: it calls the
real ``SessionSearch`` tool (its argument checks, its literal search, its size caps) the way
the model would, over the log ``events``, and reads only what the tool answers:

1. search for the probe's ``recall_query`` with the tool's defaults (5 hits, newest first);
2. read each hit in turn (``seq`` with the default neighbours, two before and two after);
3. when the answer says older hits exist (``before_seq=N``, with ``partial=true`` when the
   tool fell back to matches inside words), page on and repeat,

stopping as soon as a tool answer carries the fact, or after ``max_calls`` calls. A probe
whose query finds nothing, or whose fact sits past the tool's cuts, is not recalled: that is
what the tool allows, not what the log holds.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

import msgspec

from harness.compaction.probes import Probe
from harness.events.event import Event
from harness.query.text import event_text
from harness.tools.base import ToolContext, ToolError
from harness.tools.session_search import SessionSearch

__all__ = ["MAX_RECALL_CALLS", "Recall", "in_log", "recall_probe"]

MAX_RECALL_CALLS: Final = 12
"""The most tool calls one recall may make (a model that keeps digging gives up at some point)."""

_HIT: Final = re.compile(r"^#(\d+) [a-z]+/[a-z-]+ \[", re.MULTILINE)
_PAGE: Final = re.compile(r"again with (partial=true, )?before_seq=(\d+)")


class Recall(msgspec.Struct, frozen=True, kw_only=True):
    """One recall: the query, every call's arguments in order, and which call's answer held
    the fact (``found_by``, an index into ``calls``; ``None`` when none did)."""

    query: str | None
    calls: tuple[dict[str, Any], ...]
    found_by: int | None
    chars_read: int

    @property
    def found(self) -> bool:
        """Whether a tool answer carried the fact."""
        return self.found_by is not None

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "query": self.query,
            "calls": [dict(call) for call in self.calls],
            "foundBy": self.found_by,
            "charsRead": self.chars_read,
        }


def in_log(events: Sequence[Event], probe: Probe) -> bool:
    """Whether any event's semantic text (what ``session_search`` can see) holds the fact."""
    return any(probe.found_in(event_text(event)) for event in events)


async def recall_probe(
    events: Sequence[Event],
    probe: Probe,
    *,
    tool: SessionSearch | None = None,
    max_calls: int = MAX_RECALL_CALLS,
) -> Recall:
    """Try to get ``probe``'s fact back through ``tool`` (default: ``SessionSearch()`` with
    its default caps) over ``events``; see the module doc."""
    search = tool or SessionSearch()
    context = ToolContext(Path("."), events=events)
    query = probe.recall_query
    calls: list[dict[str, Any]] = []
    chars = 0

    async def ask(arguments: dict[str, Any]) -> str:
        nonlocal chars
        calls.append(arguments)
        try:
            text = (await search.run(arguments, context)).text
        except ToolError as error:
            text = f"{error.code}: {error.message}"
        chars += len(text)
        return text

    if query is None:
        return Recall(query=None, calls=(), found_by=None, chars_read=0)
    page: dict[str, Any] = {"query": query}
    read: set[int] = set()
    while len(calls) < max_calls:
        answer = await ask(page)
        if probe.found_in(answer):
            return Recall(query=query, calls=tuple(calls), found_by=len(calls) - 1, chars_read=chars)
        for seq in (int(hit) for hit in _HIT.findall(answer)):
            if seq in read or len(calls) >= max_calls:
                continue
            read.add(seq)
            if probe.found_in(await ask({"seq": seq})):
                return Recall(query=query, calls=tuple(calls), found_by=len(calls) - 1, chars_read=chars)
        more = _PAGE.search(answer)
        if more is None:
            break
        page = {"query": query, "before_seq": int(more.group(2))}
        if more.group(1):
            page["partial"] = True
    return Recall(query=query, calls=tuple(calls), found_by=None, chars_read=chars)

"""The text pieces of ``session_search``'s answers: its own traffic left out of hits, event
headers, snippets and cuts, and the character budget of one answer."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

from harness.events.event import Event
from harness.query.filters import EventFilter, matching_seqs
from harness.query.index import QueryIndex
from harness.query.records import EventRecord
from harness.query.text import event_text

__all__ = ["SESSION_SEARCH", "Budget", "OwnTraffic", "cut", "header", "own_traffic", "snippet"]

SESSION_SEARCH: Final = "session_search"
"""The tool's name (the checkpoint message mentions it when the tool is offered)."""


class OwnTraffic:
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


def own_traffic(index: QueryIndex) -> OwnTraffic:
    """The ``session_search`` traffic of the log ``index`` folds (its calls' ids)."""
    ids: set[str] = set()
    for seq in matching_seqs(index, EventFilter(types=("tool/call",))):
        data = index.events[seq].data
        if (
            isinstance(data, Mapping)
            and data.get("name") == SESSION_SEARCH
            and isinstance(data.get("callId"), str)
        ):
            ids.add(data["callId"])
    return OwnTraffic(ids)


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


def header(record: EventRecord, place: str = "") -> str:
    """An event's header line: ``#<seq> <type> [<classification>] (turn T, step S)``, then
    ``place`` (which session of the fork line holds it)."""
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
    return f"#{record.seq} {record.type} [{state}]" + (f" ({', '.join(where)})" if where else "") + place


def cut(text: str, most: int) -> str:
    """``text`` in at most ``most`` characters, the cut (if any) marked inside them."""
    if len(text) <= most:
        return text
    keep = max(0, most - 48)
    return f"{text[:keep]} [… cut: {len(text) - keep} more characters]"


def snippet(text: str, start: int, end: int, width: int) -> str:
    """About ``width`` characters of ``text`` around the hit ``start``..``end``, cuts marked."""
    if len(text) <= width:
        return text
    room = max(0, width - (end - start))
    low = max(0, start - room // 2)
    high = min(len(text), max(end, low + width))
    low = max(0, min(low, high - width))
    return ("…" if low else "") + text[low:high] + ("…" if high < len(text) else "")


class Budget:
    """Entries joined by blank lines, refused once they would pass ``most`` characters (the
    first entry is always taken, cut to fit)."""

    __slots__ = ("entries", "most", "size")

    def __init__(self, most: int) -> None:
        self.most = most
        self.entries: list[str] = []
        self.size = 0

    def add(self, entry: str) -> bool:
        """Take ``entry`` if it fits (the first one always, cut to fit); say whether it did."""
        cost = len(entry) + (2 if self.entries else 0)
        if self.size + cost > self.most:
            if self.entries:
                return False
            entry = cut(entry, self.most)
            cost = len(entry)
        self.entries.append(entry)
        self.size += cost
        return True

    def text(self, note: str) -> str:
        """The entries, then ``note`` after a blank line."""
        return "\n\n".join(self.entries) + "\n\n" + note

"""How the CLI shows events, messages and sessions: one-line summaries and rich tables."""

from __future__ import annotations

import datetime as _dt
from collections.abc import Mapping, Sequence
from typing import Any

from rich.markup import escape
from rich.table import Table

from harness.events.event import Event, Replace
from harness.messages.model import Message
from harness.stores.backend import SessionInfo

__all__ = ["event_summary", "events_table", "messages_table", "sessions_table", "short", "when"]


def short(text: str, width: int = 60) -> str:
    """``text`` on one line, cut to ``width`` characters with an ellipsis."""
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def when(ms: int | None) -> str:
    """An epoch-ms time as local ``YYYY-MM-DD HH:MM:SS``."""
    if ms is None:
        return ""
    return _dt.datetime.fromtimestamp(ms / 1000).strftime("%Y-%m-%d %H:%M:%S")


def _message_text(message: Mapping[str, Any]) -> str:
    parts: list[str] = []
    for block in message.get("content") or ():
        if not isinstance(block, Mapping):
            continue
        kind = block.get("type")
        if kind in ("text", "reasoning"):
            parts.append(str(block.get("text", "")))
        elif kind == "tool-call":
            parts.append(f"[call {block.get('name')} {block.get('arguments')}]")
        elif kind == "tool-result":
            inner = [str(b.get("text", "")) for b in block.get("content") or () if isinstance(b, Mapping)]
            parts.append(("[error] " if block.get("isError") else "") + " ".join(inner))
        else:
            parts.append(f"[{kind}]")
    return " ".join(parts)


def event_summary(event: Event, width: int = 60) -> str:
    """What an event says, in one short line."""
    data = event.data
    if not isinstance(data, Mapping):
        return short(repr(data), width)
    kind = event.type
    if kind == "user/message":
        return short(_message_text(data), width)
    if kind in ("assistant/message", "tool/result"):
        message = data.get("message")
        return short(_message_text(message) if isinstance(message, Mapping) else "", width)
    if kind == "assistant/chunk":
        chunk = data.get("chunk") or {}
        text = chunk.get("text") or chunk.get("argumentsDelta") or ""
        return short(f"{chunk.get('type')} {text}", width)
    if kind == "turn/end":
        reason = data.get("reason")
        return f"turn {data.get('turn')} {reason.get('kind') if isinstance(reason, Mapping) else reason}"
    if kind in ("turn/start", "step/start", "step/end"):
        return " ".join(f"{key} {data[key]}" for key in ("turn", "step") if key in data)
    if kind == "request/header":
        header = data.get("header") or {}
        config = header.get("config") or {}
        return short(f"{data.get('reason')}: {config.get('provider')}/{config.get('model')}", width)
    if kind == "tool/call":
        return short(f"{data.get('name')} {data.get('arguments')}", width)
    if kind == "session/title":
        return short(str(data.get("title")), width)
    return short(", ".join(f"{key}={value}" for key, value in data.items()), width)


def _op(event: Event) -> str:
    op = event.surface_op
    if op is None:
        return ""
    return f"replace {op.start}..{op.end}" if isinstance(op, Replace) else "append"


def events_table(events: Sequence[Event]) -> Table:
    table = Table(show_edge=False, header_style="bold")
    for column in ("seq", "time", "type", "surface", "sources", "summary"):
        table.add_column(column, no_wrap=column != "summary", overflow="fold")
    for event in events:
        sources = "" if event.source_event_seqs is None else ",".join(map(str, event.source_event_seqs))
        table.add_row(
            str(event.seq),
            when(event.time),
            escape(event.type),
            _op(event),
            sources,
            escape(event_summary(event)),
        )
    return table


def messages_table(messages: Sequence[Message]) -> Table:
    table = Table(show_edge=False, header_style="bold")
    for column in ("#", "role", "source", "content"):
        table.add_column(column, overflow="fold")
    for index, message in enumerate(messages):
        source = message.source
        label = source.kind + (f":{source.raw.get('plugin')}" if source.kind == "plugin" else "")
        table.add_row(
            str(index), escape(message.role), escape(label), escape(short(_message_text(message.raw), 200))
        )
    return table


def sessions_table(sessions: Sequence[SessionInfo]) -> Table:
    table = Table(show_edge=False, header_style="bold")
    for column in ("id", "created", "last activity", "events", "cwd", "title"):
        table.add_column(column, overflow="fold")
    for info in sessions:
        table.add_row(
            escape(info.id),
            when(info.created_at),
            when(info.last_activity),
            str(info.event_count),
            escape(info.cwd or ""),
            escape(info.title or ""),
        )
    return table

"""How the CLI shows events, messages and sessions: rich tables that fit the terminal.

The tables are laid out for 80 columns first (a pipe gets 80 too): every row keeps
its seq, time, type and surface mark, and the summary takes the width left; a wider
terminal gets the sources column, full dates and longer summaries. Session ids are
never wrapped or cut, so they can be copied from any width.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Sequence

from rich import box
from rich.console import Group, RenderableType
from rich.markup import escape
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from harness.events.event import Event, Replace
from harness.messages.model import Message
from harness.present.summary import event_summary, is_failure, message_text, plural, short
from harness.stores.backend import SessionInfo

__all__ = [
    "compact_table",
    "event_summary",
    "events_table",
    "fold_seqs",
    "messages_table",
    "plural",
    "sessions_table",
    "short",
    "tail_line",
    "when",
]



def compact_table(*, title: str | None = None, caption: str | None = None) -> Table:
    """The borderless table the read commands print (a rule under the header, one space
    between columns), with an optional dim title above and caption below, flush left."""
    return Table(
        box=box.SIMPLE_HEAD,
        show_edge=False,
        pad_edge=False,
        padding=(0, 1),
        collapse_padding=True,
        header_style="bold",
        title=title,
        title_justify="left",
        title_style="dim",
        caption=caption,
        caption_justify="left",
        caption_style="dim",
    )


_WIDE: int = 120  # from here on: full dates and the surface op spelled out
_SOURCES: int = 100  # from here on: the sources column
_GAP: int = 2  # the space between two columns
_MIN_SUMMARY: int = 24
_FAILURE_LINES: int = 3
_SOURCE_NARROW: int = 24


def when(ms: int | None) -> str:
    """An epoch-ms time as local ``YYYY-MM-DD HH:MM:SS``."""
    if ms is None:
        return ""
    return _dt.datetime.fromtimestamp(ms / 1000).strftime("%Y-%m-%d %H:%M:%S")


def _day(ms: int) -> str:
    return _dt.datetime.fromtimestamp(ms / 1000).strftime("%Y-%m-%d")


def fold_seqs(seqs: Sequence[int] | None, width: int = 12) -> str:
    """A list of seqs in at most ``width`` characters: runs become ``a..b``, and a list
    still too long becomes a count (``"10 seqs"``)."""
    if seqs is None:
        return ""
    if not seqs:
        return "none"
    runs: list[str] = []
    start = previous = seqs[0]
    for seq in [*seqs[1:], None]:
        if seq is not None and seq == previous + 1:
            previous = seq
            continue
        runs.append(str(start) if start == previous else f"{start}..{previous}")
        if seq is not None:
            start = previous = seq
    text = ",".join(runs)
    return text if len(text) <= width else plural(len(seqs), "seq")


def _op(event: Event, wide: bool) -> str:
    op = event.surface_op
    if op is None:
        return ""
    if isinstance(op, Replace):
        return f"replace {op.start}..{op.end}" if wide else "R"
    return "append" if wide else "+"


def _summary(event: Event, width: int, wide: bool) -> str:
    op = event.surface_op
    if isinstance(op, Replace) and not wide:
        lead = f"replaces {op.start}..{op.end}: "
        return short(lead + event_summary(event, max(width - len(lead), 1) * 2), width)
    return event_summary(event, width)


def events_table(events: Sequence[Event], width: int = 80) -> RenderableType:
    """The Event Log as a table that fits ``width`` columns (see the module doc)."""
    wide = width >= _WIDE
    with_sources = width >= _SOURCES
    times = [event.time for event in events]
    days = {_day(t) for t in times}
    cut = 0 if wide else 11 if len(days) <= 1 else 5  # HH:MM:SS or MM-DD HH:MM:SS; the title has the day

    def stamp(ms: int) -> str:
        return when(ms)[cut:]

    seq_w = max([len("seq"), *(len(str(e.seq)) for e in events)])
    time_w = max([len("time"), *(len(stamp(t)) for t in times)])
    type_w = min(max([len("type"), *(len(e.type) for e in events)]), 32 if wide else 20)
    ops = [_op(e, wide) for e in events]
    op_title = "surface" if wide else "S"
    op_w = max([len(op_title), *(len(o) for o in ops)])
    sources = [fold_seqs(e.source_event_seqs, 14 if wide else 10) for e in events]
    src_w = max([len("sources"), *(len(s) for s in sources)]) if with_sources else 0
    fixed = seq_w + time_w + type_w + op_w + (src_w + _GAP if with_sources else 0) + 4 * _GAP
    if width - fixed < _MIN_SUMMARY:  # fold the type column before starving the summary
        type_w = max(len("type"), type_w - (_MIN_SUMMARY - (width - fixed)))
        fixed = seq_w + time_w + type_w + op_w + (src_w + _GAP if with_sources else 0) + 4 * _GAP
    summary_w = max(width - fixed, 8)

    title = None
    if days and not wide:
        first, last = min(days), max(days)
        title = f"{first} (local time)" if first == last else f"{first} … {last} (local time)"
    table = compact_table(
        title=title,
        caption="S: + appends to the Surface, R replaces a range of it" if not wide and any(ops) else None,
    )
    table.add_column("seq", justify="right", no_wrap=True, min_width=seq_w)
    table.add_column("time", no_wrap=True, min_width=time_w, max_width=time_w)
    table.add_column("type", overflow="fold", width=type_w)
    table.add_column(op_title, no_wrap=True, min_width=op_w, max_width=op_w)
    if with_sources:
        table.add_column("sources", no_wrap=True, min_width=src_w, max_width=src_w)
    # One line each, cut to fit; a failure may take up to three lines so its message shows.
    table.add_column("summary", overflow="fold", max_width=summary_w)
    for event, op, folded in zip(events, ops, sources, strict=True):
        failed = is_failure(event)
        text = _summary(event, summary_w * (_FAILURE_LINES if failed else 1), wide)
        summary = Text(text, style="red" if failed else "")
        row: list[RenderableType] = [str(event.seq), stamp(event.time), escape(event.type), op]
        if with_sources:
            row.append(folded)
        row.append(summary)
        table.add_row(*row)
    return table


def _source_label(message: Message, wide: bool) -> str:
    """``user``, ``model``, ``tool``, ``plugin:NAME``; below ``_WIDE`` columns a plugin's npm
    scope is dropped (``@deepseek-ai/dsh-system-prompt`` → ``dsh-system-prompt``) and the
    label is cut to ``_SOURCE_NARROW`` characters."""
    source = message.source
    if source.kind != "plugin":
        return source.kind
    plugin = str(source.raw.get("plugin"))
    if wide:
        return f"plugin:{plugin}"
    return short(f"plugin:{plugin.rsplit('/', 1)[-1]}", _SOURCE_NARROW)


def tail_line(event: Event, width: int = 80) -> Text:
    """One event as ``harness tail`` prints it: seq, time, type and a summary cut so the line
    fits ``width`` columns (it used to take 100 characters whatever the width, so every
    line wrapped on an 80-column terminal)."""
    lead = f"{event.seq:>6}  {when(event.time)}  "
    room = max(width - len(lead) - len(event.type) - 2, 16)
    line = Text.assemble((f"{event.seq:>6}", "dim"), f"  {when(event.time)}  ", (event.type, "bold"), "  ")
    line.append(event_summary(event, room), style="red" if is_failure(event) else "")
    return line


def messages_table(messages: Sequence[Message], width: int = 80) -> RenderableType:
    """The derived model history, one line per message (index, role, source, content cut
    to fit), laid out for ``width`` columns like ``events_table``: the content gets what the
    other columns leave, so it never wraps one word per line."""
    wide = width >= _WIDE
    labels = [_source_label(message, wide) for message in messages]
    index_w = max([1, *(len(str(index)) for index in range(len(messages)))])
    role_w = max([len("role"), *(len(message.role) for message in messages)])
    source_w = max([len("source"), *(len(label) for label in labels)])
    content_w = max(width - index_w - role_w - source_w - 3 * _GAP, _MIN_SUMMARY // 2)
    table = compact_table()
    table.add_column("#", justify="right", no_wrap=True, min_width=index_w)
    table.add_column("role", no_wrap=True, min_width=role_w)
    table.add_column("source", no_wrap=True, min_width=source_w, max_width=source_w)
    table.add_column("content", no_wrap=True, max_width=content_w)
    for index, (message, label) in enumerate(zip(messages, labels, strict=True)):
        content = short(message_text(message.raw), content_w)
        table.add_row(str(index), Text(message.role), Text(label), Text(content))
    return table


def _session_note(info: SessionInfo) -> Text:
    if info.problem is not None:
        problem = info.problem
        if info.location:  # the log's path is shown once, not inside every reason
            problem = problem.replace(f"({info.location}, ", "(").replace(f" ({info.location})", "")
        return Text(f"cannot load: {problem}", style="red")
    return Text(" · ".join(part for part in (info.title, info.cwd) if part))


def sessions_table(sessions: Sequence[SessionInfo], width: int = 80) -> RenderableType:
    """The stored sessions. Ids are never wrapped or cut: when the longest does not leave
    room for the other columns, each session is a line of its own (id first)."""
    id_w = max([2, *(len(info.id) for info in sessions)])
    wide = width >= _WIDE
    stamp_w = 19 if wide else 16
    if id_w + stamp_w + 6 + 3 * _GAP + 12 > width:
        lines: list[RenderableType] = []
        for info in sessions:
            # The id alone on its line: a terminal may soft-wrap it, nothing breaks it.
            lines.append(Text(info.id, style="bold", no_wrap=True, overflow="ignore"))
            stamp = when(info.last_activity)[:stamp_w]
            detail = Text(f"{stamp}  {plural(info.event_count, 'event')}  ".lstrip())
            detail.append_text(_session_note(info))
            lines.append(Padding(detail, (0, 0, 0, 2)))
        return Group(*lines)
    table = Table(
        box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, padding=(0, 1), header_style="bold"
    )
    table.add_column("id", no_wrap=True, min_width=id_w, overflow="ignore")
    if wide:
        table.add_column("created", no_wrap=True)
    table.add_column("last activity", no_wrap=True, min_width=stamp_w, max_width=stamp_w)
    table.add_column("events", justify="right", no_wrap=True)
    table.add_column("title · cwd" if not wide else "title", overflow="fold", ratio=1)
    if wide:
        table.add_column("cwd", overflow="fold", ratio=1)
    for info in sessions:
        row: list[RenderableType] = [escape(info.id)]
        if wide:
            row.append(when(info.created_at))
        row += [when(info.last_activity)[:stamp_w], str(info.event_count)]
        if wide:
            if info.problem is not None:
                row += [_session_note(info), escape(info.cwd or "")]
            else:
                row += [escape(info.title or ""), escape(info.cwd or "")]
        else:
            row.append(_session_note(info))
        table.add_row(*row)
    return table

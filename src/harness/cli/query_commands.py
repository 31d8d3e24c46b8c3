"""The query commands over ``harness.query`` (issue 13): ``trace``, ``show``, ``request`` and
``lineage`` (``surface --at`` is ``surface``'s option, shown by ``harness.cli.surface_at``).

Each takes a stored id or a session file (as ``log`` and ``surface`` do), prints plain text
laid out for 80 columns or, with ``--json``, one JSON document. Session content is printed as
text, never as rich markup. A refused question (an unknown seq, a seq where no request was
sent, an unknown id) is one line on stderr and exit 1.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from typing import Any, Final

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from harness.cli.app import (
    _errors,
    _fail,
    _inspect,
    _print_json,
    _store_option,
    _with_store,
    app,
)
from harness.cli.render import compact_table, fold_seqs, messages_table
from harness.errors import HarnessError, InvalidQuery
from harness.events.json import thaw
from harness.messages.request import GenerateOptions
from harness.present.summary import event_summary, plural, short, value_text
from harness.query import (
    EventRecord,
    Lineage,
    Trace,
    index_of,
    lineage,
    request_at,
    request_before,
    store_lineage,
    trace,
    window,
)
from harness.session.session import Session
from harness.stores.store import SessionStore

__all__ = ["MARKS", "request_body"]

MARKS: Final = {"current": "C", "shadowed": "S", "log-only": "-"}
"""The one-letter classification marks of ``show``."""

_PLAIN_ROUTES: Final = frozenset({"openai-compatible"})
"""Routes served by ``OpenAICompatibleProvider``: a body without thinking fields."""

_WIDE: Final = 100
_GAP: Final = 2  # the space between two columns
_DEEP: Final = 12  # lineage indents no deeper than this; deeper levels show their depth


def _console() -> Console:
    return Console(highlight=False)


def _line(console: Console, *parts: str | tuple[str, str]) -> None:
    """One line of plain text (``(text, style)`` parts styled), never parsed as markup."""
    console.print(Text.assemble(*parts), soft_wrap=False)


def _seqs(seqs: Sequence[int]) -> str:
    return fold_seqs(list(seqs), 60) if seqs else "none"


# ---- trace ---------------------------------------------------------------------------------


def _where(record: EventRecord) -> str:
    parts: list[str] = [record.classification]
    if record.shadowed_by is not None:
        parts.append(f"shadowed by {record.shadowed_by}")
    if record.compaction_id is not None:
        parts.append(f"compaction {record.compaction_id}")
    return ", ".join(parts)


def _trace_lines(found: Trace, width: int) -> list[tuple[str, str]]:
    """``(label, value)`` rows of a trace, only the relations it has."""
    rows: list[tuple[str, str]] = [("where", _where(found.record))]
    if found.turn is not None:
        end = "open" if found.turn.end is None else str(found.turn.end)
        text = f"turn {found.turn.turn} (seqs {found.turn.start}..{end})"
        if found.step is not None and found.step.step is not None:
            step_end = "open" if found.step.end is None else str(found.step.end)
            text += f", step {found.step.step} ({found.step.start}..{step_end})"
        rows.append(("turn", text))
    else:
        rows.append(("turn", "none (between turns)"))
    if found.sources:
        rows.append(("sources", _seqs(found.sources)))
    if found.chunks:
        rows.append(("chunks", _seqs(found.chunks)))
    if found.cited_by:
        rows.append(("cited by", _seqs(found.cited_by)))
    if found.replaced:
        rows.append(("replaced", _seqs(found.replaced)))
    if found.replacement_chain:
        rows.append(("shadowed", " -> ".join(str(seq) for seq in found.replacement_chain)))
    if found.prune is not None:
        rows.append(("pruned by", f"compaction/prune at {found.prune}"))
    for label, bracket in (("compaction", found.shadowing), ("own bracket", found.bracket)):
        if bracket is None:
            continue
        steps = ", ".join(
            f"{name} {seq}"
            for name, seq in (
                ("start", bracket.start),
                ("summary", bracket.summary),
                ("checkpoint", bracket.checkpoint),
                ("end", bracket.end),
            )
            if seq is not None
        )
        text = f"{bracket.compaction_id}: {steps}"
        if bracket.replace_start is not None:
            text += f"; stands for {bracket.replace_start}..{bracket.replace_end}"
            text += f" ({plural(len(bracket.replaced), 'node')})"
        if bracket.error:
            text += f"; failed: {short(bracket.error, width)}"
        rows.append((label, text))
    for chain in found.tools:
        links = [
            f"{name} {seq}"
            for name, seq in (("message", chain.request), ("call", chain.call))
            if seq is not None
        ]
        for approval in chain.approvals:
            decided = (
                f", decided {approval.decided} ({approval.outcome})" if approval.decided is not None else ""
            )
            links.append(f"approval {approval.asked}{decided}")
        if chain.results:
            links.append(f"result {', '.join(str(seq) for seq in chain.results)}")
        rows.append(("tool", f"{chain.name or '?'} {chain.call_id or '(no id)'}: {'; '.join(links)}"))
    return rows


@app.command("trace")
def trace_command(
    ctx: typer.Context,
    session_id: str = typer.Argument(..., metavar="ID|PATH"),
    seq: int = typer.Argument(..., metavar="SEQ"),
    as_json: bool = typer.Option(False, "--json", help="Print the trace as JSON."),
    store: str | None = _store_option(),
) -> None:
    """What one event is tied to: sources, citations, tool chain, compaction, turn.

    Both directions: the events it cites and those citing it, the tool call it belongs to
    (message, call, approvals, results), the replace and compaction that shadowed it, the
    compaction it is part of, and its turn and step."""
    session = _inspect(ctx, session_id)
    with _errors():
        found = trace(index_of(session), seq)
    if as_json:
        _print_json({"session": session.id, **found.to_json(), "event": found.record.event.to_json()})
        return
    console = _console()
    event = found.record.event
    _line(console, (f"seq {event.seq}  ", "bold"), (event.type, "bold"))
    _line(console, "  ", event_summary(event, max(console.width - 2, 20)))
    grid = Table.grid(padding=(0, 2))
    grid.add_column(justify="right", no_wrap=True, style="dim")
    grid.add_column(overflow="fold")
    for label, value in _trace_lines(found, max(console.width - 16, 20)):
        grid.add_row(label, Text(value))
    console.print(grid)


# ---- show ----------------------------------------------------------------------------------


def _records_table(records: Sequence[EventRecord], target: int, width: int) -> Table:
    wide = width >= _WIDE
    table = compact_table(caption="C current, S shadowed (replaced later), - log-only; > the event asked for")
    seq_w = max(3, *(len(str(r.seq)) + 1 for r in records))
    type_w = min(max(4, *(len(r.type) for r in records)), 30 if wide else 20)
    table.add_column("seq", justify="right", no_wrap=True, min_width=seq_w)
    table.add_column("C", no_wrap=True, min_width=1, max_width=1)
    table.add_column("type", overflow="fold", width=type_w)
    fixed = seq_w + 1 + type_w + 3 * _GAP
    if wide:
        turn_w = max(4, *(len(f"{r.turn}.{r.step}") for r in records))
        by_w = max(2, *(len(str(r.shadowed_by or "")) for r in records))
        table.add_column("turn", no_wrap=True, justify="right", min_width=turn_w)
        table.add_column("by", no_wrap=True, justify="right", min_width=by_w)
        fixed += turn_w + by_w + 2 * _GAP
    summary_w = max(width - fixed, 16)
    table.add_column("summary", no_wrap=True, overflow="ellipsis", max_width=summary_w)
    for record in records:
        mark = ">" if record.seq == target else ""
        style = "bold" if record.seq == target else ""
        row: list[Text | str] = [
            Text(f"{mark}{record.seq}", style=style),
            MARKS[record.classification],
            Text(record.type, style=style),
        ]
        if wide:
            turn = "" if record.turn is None else str(record.turn)
            if record.step is not None:
                turn += f".{record.step}"
            row += [turn, "" if record.shadowed_by is None else str(record.shadowed_by)]
        row.append(Text(event_summary(record.event, summary_w)))
        table.add_row(*row)
    return table


@app.command()
def show(
    ctx: typer.Context,
    session_id: str = typer.Argument(..., metavar="ID|PATH"),
    seq: int = typer.Argument(..., metavar="SEQ"),
    before: int = typer.Option(5, "--before", metavar="N", help="Events before SEQ (at most 1000)."),
    after: int = typer.Option(5, "--after", metavar="N", help="Events after SEQ (at most 1000)."),
    as_json: bool = typer.Option(False, "--json", help="Print the window as JSON (events in wire form)."),
    store: str | None = _store_option(),
) -> None:
    """One event and its neighbours, each marked current, shadowed or log-only."""
    session = _inspect(ctx, session_id)
    with _errors():
        found = window(index_of(session), seq, before=before, after=after)
    if as_json:
        _print_json({"session": session.id, **found.to_json()})
        return
    console = _console()
    _line(
        console,
        f"seqs {found.first}..{found.last} of {plural(found.length, 'event')} ",
        (f"around {seq}", "bold"),
    )
    console.print(_records_table(found.records, seq, console.width))


# ---- request -------------------------------------------------------------------------------


def request_body(options: GenerateOptions) -> dict[str, Any]:
    """The chat-completions body ``options`` is sent as: the provider's own ``request_body``
    (``materialize`` then ``build_body``; a header the agent loop logged is materialized
    already, so nothing changes). The header's route picks the provider: ``openai-compatible``
    is ``OpenAICompatibleProvider`` (no thinking fields), any other ``DeepSeekProvider``. The
    provider is made with a placeholder key and never sends anything."""
    from harness.providers.deepseek import DeepSeekProvider, OpenAICompatibleProvider
    from harness.providers.serialize import RequestRefused

    route = options.header.provider
    kind = OpenAICompatibleProvider if route in _PLAIN_ROUTES else DeepSeekProvider
    provider = kind(kind.default_base_url, api_key="unused: nothing is sent", route=route)
    try:
        return provider.request_body(options)
    except RequestRefused as refused:
        _fail(f"this request cannot be expressed as a body: {refused}")
    finally:
        asyncio.run(provider.aclose())


def _has_request_before(session: Session, seq: int) -> bool:
    """Whether a request other than one at ``seq`` was sent at or before ``seq``."""
    try:
        return request_before(session, seq) != seq
    except InvalidQuery:
        return False


@app.command()
def request(
    ctx: typer.Context,
    session_id: str = typer.Argument(..., metavar="ID|PATH"),
    seq: int = typer.Argument(..., metavar="SEQ"),
    find: bool = typer.Option(
        False, "--before", help="SEQ is any event: show the request that produced it (the latest before)."
    ),
    as_json: bool = typer.Option(
        False, "--json", help="Print the chat-completions body as the provider serializes it."
    ),
    store: str | None = _store_option(),
) -> None:
    """The model request as sent at request point SEQ (--before: behind any event).

    A request point is a request/context or the event before a response's first chunk. Shows
    the config, system prompt, tools and messages; --json the chat-completions body."""
    session = _inspect(ctx, session_id)
    with _errors():
        point = request_before(session, seq) if find else seq
        try:
            options = request_at(session, point)
        except InvalidQuery as refused:
            if find or not _has_request_before(session, seq):
                raise
            _fail(f"{refused} (--before shows it)")
    if as_json:
        _print_json(request_body(options))
        return
    console = _console()
    header = options.header
    config = {key: value for key, value in thaw(header.config).items() if key not in ("provider", "model")}
    lead = f"request at seq {point}" + (f" (the one behind seq {seq})" if point != seq else "")
    _line(console, (lead, "bold"), f": {header.provider} {header.model}")
    _line(console, "  config: ", ", ".join(f"{k}={value_text(v)}" for k, v in config.items()) or "none")
    system = header.system
    _line(console, "  system: ", short(system, max(console.width - 12, 20)) if system else "none")
    names = [str(tool.get("name", "?")) for tool in header.tools]
    _line(console, f"  {plural(len(names), 'tool')}: ", short(", ".join(names), max(console.width - 12, 20)))
    _line(console, f"  {plural(len(options.messages), 'message')}:")
    console.print(messages_table(options.messages))


# ---- lineage -------------------------------------------------------------------------------


def _file_header(path: str) -> Any:
    from harness.stores.jsonl.reader import read_log_file

    with _errors():
        return read_log_file(path).header


def _print_lineage(found: Lineage) -> None:
    console = _console()

    def node(depth: int, sid: str, note: str = "", style: str = "") -> None:
        indent = "  " * min(depth, _DEEP) + (f"[{depth}] " if depth > _DEEP else "")
        console.print(
            Text.assemble(indent, ("" if depth == 0 else "└ ", "dim"), (sid, style), (note, "dim")),
            soft_wrap=True,  # an id is never cut or folded
        )

    ancestors = list(reversed(found.ancestors))
    top = 0
    if found.end == "missing":
        node(0, str(found.missing_parent), "  (missing from the store)", "red")
        top = 1
    elif found.end == "cycle":
        _line(console, ("parent chain loops: ", "red"), " -> ".join([*found.cycle, found.cycle[0]]))
    for depth, sid in enumerate(ancestors, start=top):
        node(depth, sid)
    base = top + len(ancestors)
    node(base, found.target, "  (this session)", "bold")
    for child in found.descendants:
        for item, _, depth in child.walk():
            node(base + depth + 1, item.id)
    forks = len(found.descendant_ids())
    _line(
        console,
        (f"{plural(len(found.ancestors), 'ancestor')}, {plural(forks, 'descendant')}", "dim"),
    )


@app.command("lineage")
def lineage_command(
    ctx: typer.Context,
    session_id: str = typer.Argument(..., metavar="ID|PATH"),
    as_json: bool = typer.Option(False, "--json", help="Print the lineage as JSON."),
    store: str | None = _store_option(),
) -> None:
    """A session's fork ancestors (parentSession) and its descendants in the store.

    A session file is placed among the store's sessions by the id and parent its header
    names."""
    given = _file_header(session_id) if os.path.isfile(session_id) else None

    async def work(store: SessionStore) -> Lineage:
        if given is None:
            return await store_lineage(store, session_id)
        headers = []
        for info in await store.list():
            if info.problem is not None or info.id == given.id:
                continue
            try:
                headers.append((await store.backend.read(info.id)).header)
            except HarnessError:  # as store_lineage: an unreadable session counts as absent
                continue
        return lineage([*headers, given], given.id)

    found: Lineage = _with_store(ctx, work)
    if as_json:
        _print_json(found.to_json())
        return
    _print_lineage(found)

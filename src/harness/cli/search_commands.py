"""``harness search`` and ``harness index``: full-text search across the store (``harness.search``).

``search TEXT`` catches the store's index up and prints the ranked hits, two lines each (where
the hit is, then the text around it, the match in bold), laid out for 80 columns; ``index``
catches up (or ``--rebuild``s) and says what it did. Both take ``--json``. Session content is
printed as text, never read as markup; a refusal is one line on stderr and exit 1.
"""

from __future__ import annotations

import os
from typing import Any, Final

import typer
from rich.console import Console
from rich.text import Text

from harness.cli.app import (
    _fail,
    _options,
    _print_json,
    _store_option,
    _with_store,
    app,
)
from harness.cli.render import plural
from harness.query import EventFilter
from harness.search import IndexReport, SearchHit, SearchIndex, SearchPage, open_search_index
from harness.stores.capabilities import SessionFiles
from harness.stores.store import SessionStore

__all__ = ["MARKS", "fit_snippet"]

MARKS: Final = {"current": "C", "shadowed": "S", "log-only": "-"}
"""The one-letter classification marks (as ``show`` prints them)."""


def _console() -> Console:
    return Console(highlight=False)


def _missing_root(ctx: typer.Context) -> str | None:
    """The JSONL root the options chose when it does not exist (a read command creates none)."""
    options = _options(ctx)
    if options.spec.scheme != "jsonl" or os.path.isdir(options.root):
        return None
    return options.root


def _index_of(store: SessionStore) -> SearchIndex:
    """The store's index; for a JSONL root that does not exist, an empty one in memory (a read
    command creates no directory and no file: it finds nothing, as ``sessions`` does)."""
    backend = store.backend
    if isinstance(backend, SessionFiles) and not os.path.isdir(backend.root):
        return open_search_index(store, path=":memory:")
    return open_search_index(store)


def fit_snippet(snippet: str, match: tuple[int, int], width: int) -> tuple[str, tuple[int, int]]:
    """``snippet`` cut to ``width`` characters around its match (cut ends marked ``…``)."""
    if len(snippet) <= width:
        return snippet, match
    start, end = match
    room = max(width - 2, 8)
    low = max(0, min(start - room // 3, len(snippet) - room))
    high = min(len(snippet), low + room)
    lead = "…" if low > 0 and not snippet[low:].startswith("…") else ""
    tail = "…" if high < len(snippet) and not snippet[:high].endswith("…") else ""
    cut = lead + snippet[low:high] + tail
    shift = len(lead) - low
    return cut, (max(start + shift, len(lead)), min(end + shift, len(cut) - len(tail)))


def _where(hit: SearchHit) -> str:
    parts = [f"#{hit.seq}", hit.type, MARKS[hit.classification]]
    if hit.turn is not None:
        parts.append(f"turn {hit.turn}" + (f".{hit.step}" if hit.step is not None else ""))
    if hit.shadowed_by is not None:
        parts.append(f"by {hit.shadowed_by}")
    return "  ".join(parts)


def _print_page(console: Console, text: str, page: SearchPage) -> None:
    width = max(console.width, 40)
    for hit in page.hits:
        console.print(
            Text.assemble((hit.session_id, "bold"), "  ", _where(hit)), soft_wrap=True
        )  # an id is never cut
        line, (start, end) = fit_snippet(hit.snippet, hit.match, width - 2)
        console.print(
            Text.assemble("  ", line[:start], (line[start:end], "bold"), line[end:]),
            soft_wrap=False,
            overflow="ellipsis",
            no_wrap=True,
        )
    if not page.hits:
        console.print(Text(f"no event holds {text!r}", style="dim"), soft_wrap=True)
    else:
        order = "best first" if page.ranked else "in store order (no word of 3+ characters to rank by)"
        console.print(
            Text(f"{plural(len(page.hits), 'hit')}, {order}; C current, S shadowed, - log-only", style="dim"),
            soft_wrap=True,
        )
    if page.next_cursor is not None:
        console.print(Text.assemble(("more: --cursor ", "dim"), page.next_cursor), soft_wrap=True)
    for stale in page.stale:
        console.print(
            Text.assemble(("not indexed: ", "red"), stale.session_id, (f" ({stale.problem})", "dim")),
            soft_wrap=True,
        )


@app.command()
def search(
    ctx: typer.Context,
    text: str = typer.Argument(..., metavar="TEXT", help="Literal text (never a pattern or query syntax)."),
    session: str | None = typer.Option(None, "--session", metavar="ID", help="Search this session only."),
    types: list[str] = typer.Option(
        [], "--type", metavar="T", help="Only this event type, or family/* (repeatable)."
    ),
    shadowed: bool = typer.Option(False, "--shadowed", help="Only events a compaction replaced."),
    current: bool = typer.Option(False, "--current", help="Only events the model still sees."),
    limit: int = typer.Option(20, "--limit", metavar="N", help="Hits per page (1 to 500)."),
    cursor: str | None = typer.Option(
        None, "--cursor", metavar="C", help="The next page (from a previous search)."
    ),
    store: str | None = _store_option(),
    as_json: bool = typer.Option(False, "--json", help="Print the page as JSON."),
) -> None:
    """Search every session of the store for TEXT (shadowed history included).

    TEXT matches literally, case-insensitively, whitespace-flexibly, in each event's semantic
    text (messages, tool calls and results, todos, approvals, failures). The store's index
    is brought up to date first. Hits are ranked; each shows where it is (session, seq,
    type, C/S/- classification, turn.step) and the text around the match."""
    if shadowed and current:
        _fail("--shadowed and --current exclude each other: give one", 2)
    classes: tuple[Any, ...] = ("shadowed",) if shadowed else ("current",) if current else ()

    async def work(sessions: SessionStore) -> SearchPage:
        where = EventFilter(types=tuple(types), classifications=classes)
        async with _index_of(sessions) as index:
            return await index.search(text, filter=where, session=session, limit=limit, cursor=cursor)

    page: SearchPage = _with_store(ctx, work)
    if as_json:
        _print_json({"query": text, **page.to_json()})
        return
    missing = _missing_root(ctx)
    if missing is not None:  # say so, rather than that no event holds the text
        _console().print(Text(f"no stored sessions under {missing}", style="dim"), soft_wrap=True)
        return
    _print_page(_console(), text, page)


def _print_report(console: Console, report: IndexReport, rebuilt: bool) -> None:
    verb = "rebuilt" if rebuilt else "caught up"
    console.print(Text.assemble((f"index {verb}: ", "bold"), report.location), soft_wrap=True)
    console.print(
        Text(
            f"  {plural(report.sessions, 'session')} in the store, {report.updated} read "
            f"({report.reset} from the start), {report.removed} removed",
        ),
        soft_wrap=True,
    )
    console.print(
        Text(
            f"  {plural(report.events, 'event')} indexed ({plural(report.rows, 'row')} with text), "
            f"{report.reclassified} reclassified"
        ),
        soft_wrap=True,
    )
    for stale in report.stale:
        console.print(
            Text.assemble(("  not indexed: ", "red"), stale.session_id, (f" ({stale.problem})", "dim")),
            soft_wrap=True,
        )


@app.command("index")
def index_command(
    ctx: typer.Context,
    rebuild: bool = typer.Option(False, "--rebuild", help="Throw the index away and build it again."),
    store: str | None = _store_option(),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
) -> None:
    """Bring the store's full-text index up to date (search does it too), or rebuild it.

    A JSONL root keeps the index in <root>/.harness-index.sqlite, an SQLite store beside its
    file, PostgreSQL in search_* tables of its schema."""

    async def work(sessions: SessionStore) -> IndexReport:
        async with _index_of(sessions) as index:
            return await (index.rebuild() if rebuild else index.catch_up())

    report: IndexReport = _with_store(ctx, work)
    if as_json:
        _print_json({"rebuilt": rebuild, **report.to_json()})
        return
    missing = _missing_root(ctx)
    if missing is not None:  # nothing was indexed, and no index file was made
        _console().print(
            Text(f"no stored sessions under {missing}: nothing to index", style="dim"), soft_wrap=True
        )
        return
    _print_report(_console(), report, rebuild)

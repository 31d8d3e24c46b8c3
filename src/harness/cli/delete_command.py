"""``harness delete ID``: delete a stored session for good (``SessionStore.delete``).

It shows what it is about to delete and asks (``--yes`` does not ask; without a terminal to
ask at it refuses unless ``--yes``). A session that stored forks name as parent is refused
unless ``--orphan-forks``. The session's rows also leave the store's search index, when the
store has one. ``--json`` prints what was deleted.
"""

from __future__ import annotations

import asyncio
from typing import Any

import typer
from rich.console import Console
from rich.text import Text

from harness.cli.app import _errors, _fail, _options, _print_json, _store_option, app
from harness.cli.render import plural
from harness.errors import SessionHasForks, SessionNotFound
from harness.search.index import forget_deleted
from harness.stores.backend import SessionInfo
from harness.stores.store import SessionStore

__all__: list[str] = []


def _describe(info: SessionInfo) -> Text:
    parts = [("session ", ""), (info.id, "bold"), (f" ({plural(info.event_count, 'event')}", "")]
    if info.title:
        parts.append((f", {info.title!r}", ""))
    if info.cwd:
        parts.append((f", cwd {info.cwd}", ""))
    parts.append((")", ""))
    if info.problem:
        parts.append((f" — damaged: {info.problem}", "red"))
    return Text.assemble(*parts)


@app.command()
def delete(
    ctx: typer.Context,
    session_id: str = typer.Argument(..., metavar="ID", help="The session to delete."),
    yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask for confirmation."),
    orphan_forks: bool = typer.Option(
        False, "--orphan-forks", help="Delete it even if stored forks name it as their parent."
    ),
    store: str | None = _store_option(),
    as_json: bool = typer.Option(False, "--json", help="Print what was deleted as JSON."),
) -> None:
    """Delete a stored session for good: its log and its search index rows.

    Shows the session and asks first (--yes skips the question). A session that stored forks
    name as their parent is refused unless --orphan-forks (each fork keeps its own copy of
    what it inherited). Nothing else in the store changes."""
    console = Console(stderr=as_json, highlight=False)

    async def main() -> dict[str, Any] | None:
        from harness.cli.terminal import confirm

        sessions = SessionStore(_options(ctx).backend(reading=True))
        try:
            info = next((i for i in await sessions.list() if i.id == session_id), None)
            if info is None:
                raise SessionNotFound(f"no stored session {session_id!r}")
            forks = await sessions.forks(session_id)
            if forks and not orphan_forks:
                raise SessionHasForks(
                    f"session {session_id!r} is the parent of {plural(len(forks), 'stored fork')} "
                    f"({', '.join(forks)}): delete them first, or pass --orphan-forks "
                    "(each fork keeps its own copy of the events it inherited)",
                    forks=forks,
                )
            if not yes:
                console.print(Text.assemble("about to delete ", _describe(info)), soft_wrap=True)
                if forks:
                    console.print(f"its forks keep their copies: {', '.join(forks)}", soft_wrap=True)
                if not await confirm(console, "Delete it for good?", default=False):
                    return None
            await sessions.delete(session_id, orphan_forks=True)  # the forks were checked above
            indexed = await forget_deleted(sessions, session_id)
            return {
                "deleted": session_id,
                "events": info.event_count,
                "orphanedForks": list(forks),
                "index": "dropped" if indexed else "none",
            }
        finally:
            await sessions.close()

    with _errors():
        done = asyncio.run(main())
    if done is None:
        _fail("not deleted: not confirmed (pass --yes to delete without asking)", 1)
    if as_json:
        _print_json(done)
        return
    events = plural(done["events"], "event")
    console.print(Text.assemble("deleted session ", (session_id, "bold"), f" ({events})"), soft_wrap=True)

"""The ``harness`` Typer application.

Errors are one clear line on stderr and a non-zero exit, never a traceback. Every
read command takes ``--json`` for scripts.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, NoReturn

import typer
from rich.console import Console
from rich.markup import escape
from rich.text import Text

from harness.cli.help import HarnessGroup
from harness.cli.ownership import EXIT_IN_USE, in_use_line, live_line, taken_over_line
from harness.cli.progress import loading_bar
from harness.errors import (
    HarnessError,
    LeaseLost,
    SessionInUse,
    SessionNotFound,
    SessionOwner,
    StorageError,
    StoreNotFound,
    StoreSpecError,
    UnsupportedFormat,
)
from harness.events.event import Event
from harness.events.json import dumps, thaw
from harness.session.session import Session
from harness.stores.backend import Backend, SessionInfo, StoredLog, read_whole
from harness.stores.open import StoreSpec, open_backend, parse_store_spec
from harness.stores.store import SessionStore, restore_stored

app = typer.Typer(
    name="harness",
    cls=HarnessGroup,
    help="Durable, auditable sessions for LLM agents.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _data_home() -> str:
    return os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")


DEFAULT_ROOT = os.path.join(_data_home(), "harness", "sessions")
"""Where sessions go by default: JSONL (format v0) under the user data directory."""


def _spec(text: str) -> StoreSpec:
    """``text`` as a store spec, or exit 2 naming what is wrong (an unknown scheme, no path)."""
    try:
        return parse_store_spec(text)
    except StoreSpecError as error:
        _fail(str(error), 2)


class _Options:
    """The store the root options chose, as one spec. ``compression`` is ``None`` unless given:
    a JSONL root then reads (and writes) in the encoding its logs already use, zstd when empty.
    ``db_schema`` applies to a PostgreSQL URL that names no ``?schema=``."""

    def __init__(self, spec: StoreSpec, compression: str | None, db_schema: str = "harness") -> None:
        self.spec = spec
        self.compression = compression
        self.db_schema = db_schema

    @property
    def root(self) -> str:
        """The JSONL root (``DEFAULT_ROOT`` when the store is not a JSONL root)."""
        return self.spec.target if self.spec.scheme == "jsonl" else DEFAULT_ROOT

    @property
    def sqlite(self) -> str | None:
        return self.spec.target if self.spec.scheme == "sqlite" else None

    @property
    def db(self) -> str | None:
        return self.spec.target if self.spec.scheme == "postgresql" else None

    def backend(self, *, reading: bool = False) -> Backend:
        """The chosen backend (``open_backend``). ``reading``: a read command, which never
        creates a store, so an SQLite file that does not exist is refused (a typo would
        silently list nothing and leave an empty database behind)."""
        options: dict[str, Any] = {}
        if self.spec.scheme == "jsonl":
            options["compression"] = self.compression
        elif self.spec.scheme == "postgresql" and "schema" not in self.spec.options:
            options["schema"] = self.db_schema
        try:
            return open_backend(self.spec, create=not reading, **options)
        except (StoreSpecError, StoreNotFound) as error:
            _fail(str(error), 2)


def _fail(message: str, code: int = 1) -> NoReturn:
    """Print ``error: message`` on stderr and exit ``code``. ``message`` is plain text, never
    markup: it may quote an id or a path the user typed (``[/]`` must print as it is)."""
    line = Text.assemble(("error:", "bold red"), " ", message)
    Console(stderr=True).print(line, highlight=False, soft_wrap=True)
    raise typer.Exit(code)


@contextmanager
def _errors(code: int = 1) -> Iterator[None]:
    """Turn a harness error into ``error: …`` on stderr and exit ``code`` (an OS error: 2).
    ``check`` passes 2, keeping 1 for "a finding blocks"."""
    try:
        yield
    except SessionNotFound as error:
        _fail(str(error), code)
    except SessionInUse as error:
        _fail(in_use_line(error), EXIT_IN_USE)
    except LeaseLost as error:
        _fail(taken_over_line(error), code)
    except HarnessError as error:
        _fail(str(error), code)
    except OSError as error:
        _fail(f"{error.strerror or error}: {error.filename or ''}".rstrip(": "), 2)
    except RecursionError:
        _fail("the session holds data nested too deeply for this command (Python's recursion limit)", code)


def _options(ctx: typer.Context) -> _Options:
    options = ctx.find_root().obj
    assert isinstance(options, _Options)
    return options


def _store_option() -> Any:
    """``--store SPEC`` after a command name (``harness log ID --store sqlite:s.db``): the
    same store the root ``--store`` would choose. Declaring it is all a command does: its
    callback (run after the root options, before the command) applies it (``_choose_store``)."""
    return typer.Option(
        None,
        "--store",
        metavar="SPEC",
        callback=_choose_store,
        help="The store: DIR or jsonl:DIR, sqlite:FILE, or postgresql://URL (as the root --store).",
    )


def _choose_store(ctx: typer.Context, spec: str | None) -> str | None:
    """Apply a ``--store`` given after the command, as the root ``--store`` would. It is the
    option nearest the command, so it wins over any store option given before the command
    (``--store``, ``--root``, ``--sqlite``, ``--db``) or by the environment."""
    if not spec:
        return spec
    options = _options(ctx)
    ctx.find_root().obj = _Options(_spec(spec), options.compression, options.db_schema)
    return spec


def _with_store(ctx: typer.Context, work: Callable[[SessionStore], Any]) -> Any:
    async def main() -> Any:
        store = SessionStore(_options(ctx).backend(reading=True))
        try:
            return await work(store)
        finally:
            await store.close()

    with _errors():
        return asyncio.run(main())


def _print_json(value: Any) -> None:
    try:
        text = json.dumps(value, ensure_ascii=False, indent=2)
    except RecursionError:  # the stdlib encoder recurses; deep data is printed compact instead
        text = dumps(value).decode("utf-8")
    sys.stdout.write(text + "\n")


def _print_version(value: bool) -> None:
    if value:
        from harness import __version__

        typer.echo(f"harness {__version__}")
        raise typer.Exit()


_DEPRECATED = (
    ("store_root", "--root", "HARNESS_ROOT", "DIR"),
    ("sqlite", "--sqlite", "HARNESS_SQLITE", "sqlite:FILE"),
    ("db", "--db", "HARNESS_DATABASE_URL", "postgresql://URL"),
    ("db_schema", "--db-schema", "HARNESS_DATABASE_SCHEMA", "postgresql://URL?schema=NAME"),
)


def _warn_deprecated(ctx: typer.Context) -> None:
    """One line on stderr naming the old store options in use (they still work, for one
    release) and the ``--store`` spec each becomes."""
    used = []
    for param, option, env, form in _DEPRECATED:
        source = getattr(ctx.get_parameter_source(param), "name", None)
        if source == "COMMANDLINE":
            used.append(f"{option} (--store {form})")
        elif source == "ENVIRONMENT":
            used.append(f"{env} (HARNESS_STORE={form})")
    if used:
        text = f" deprecated, use --store instead: {', '.join(used)}"
        line = Text.assemble(("warning:", "bold yellow"), text)
        Console(stderr=True).print(line, highlight=False, soft_wrap=True)


@app.callback()
def root(
    ctx: typer.Context,
    store_root: str = typer.Option(
        DEFAULT_ROOT,
        "--root",
        envvar="HARNESS_ROOT",
        metavar="DIR",
        help="Deprecated: --store DIR.",
        hidden=True,
    ),
    compression: str = typer.Option(
        "zstd",
        "--compression",
        envvar="HARNESS_COMPRESSION",
        metavar="zstd|none",
        help="JSONL encoding: zstd or none (default: what the root's logs use; zstd for a new root).",
        show_default=False,
    ),
    sqlite: str | None = typer.Option(
        None,
        "--sqlite",
        envvar="HARNESS_SQLITE",
        metavar="FILE",
        help="Deprecated: --store sqlite:FILE.",
        hidden=True,
    ),
    db: str | None = typer.Option(
        None,
        "--db",
        envvar="HARNESS_DATABASE_URL",
        metavar="URL",
        help="Deprecated: --store postgresql://URL.",
        hidden=True,
    ),
    db_schema: str = typer.Option(
        "harness",
        "--db-schema",
        envvar="HARNESS_DATABASE_SCHEMA",
        metavar="NAME",
        help="Deprecated: --store postgresql://URL?schema=NAME.",
        hidden=True,
    ),
    store: str | None = typer.Option(
        None,
        "--store",
        envvar="HARNESS_STORE",
        metavar="SPEC",
        help=(
            "The store: DIR or jsonl:DIR (default: ~/.local/share/harness/sessions), sqlite:FILE, "
            "postgresql://URL?schema=NAME, or memory:."
        ),
    ),
    version: bool = typer.Option(
        False, "--version", callback=_print_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """Durable, auditable sessions for LLM agents."""
    if compression not in ("zstd", "none"):
        _fail(f"--compression must be zstd or none, not {compression!r}", 2)
    _warn_deprecated(ctx)
    if store:
        others = [
            f"--{name}"
            for name in ("root", "sqlite", "db")
            if getattr(ctx.get_parameter_source(name if name != "root" else "store_root"), "name", None)
            == "COMMANDLINE"
        ]
        if others:
            _fail(f"--store and {', '.join(others)} both choose the store: give one of them", 2)
        source = getattr(ctx.get_parameter_source("compression"), "name", None)
        chosen_compression = compression if source in ("COMMANDLINE", "ENVIRONMENT") else None
        ctx.obj = _Options(_spec(store), chosen_compression, db_schema)
        return
    if db and sqlite:
        # An option given on the command line beats one from the environment.
        explicit = {
            name
            for name in ("db", "sqlite")
            if getattr(ctx.get_parameter_source(name), "name", None) == "COMMANDLINE"
        }
        if explicit == {"db", "sqlite"}:
            _fail("--db and --sqlite select different stores: give one of them", 2)
        if explicit == {"sqlite"}:
            db = None
        else:
            sqlite = None
    given = getattr(ctx.get_parameter_source("compression"), "name", None) in ("COMMANDLINE", "ENVIRONMENT")
    if db:  # a URL, or a libpq key=value string ("host=h dbname=d")
        chosen = _spec(db) if db.startswith(("postgresql:", "postgres:")) else StoreSpec("postgresql", db)
    elif sqlite:
        chosen = _spec(f"sqlite:{sqlite}")
    else:
        chosen = _spec(f"jsonl:{store_root}")
    ctx.obj = _Options(chosen, compression if given else None, db_schema)


@app.command()
def demo(
    engine: bool = typer.Option(
        False, "--engine", help="Show the Session engine alone: log, Surface, restore, crash repair."
    ),
) -> None:
    """Offline demo: an agent is killed mid-tool, checked, resumed and its log shown.

    A scripted model drives the agent; it is killed in the middle of a tool call, resumed
    after a world check, and the stored log is shown beside its Surface."""
    from harness.demos.engine import DemoCheckFailed, run_demo

    if engine:
        run_demo()
        return
    from harness.demos.agent import run_agent_demo

    try:
        run_agent_demo()
    except DemoCheckFailed as error:
        _fail(f"the demo did not end as it must: {error}")


@app.command()
def sessions(
    ctx: typer.Context,
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
    store: str | None = _store_option(),
) -> None:
    """List stored sessions, latest activity first; damaged ones with the reason.

    Each session shows its id, last activity, events, title and cwd. A session that cannot
    be loaded (a damaged header) is listed with the reason; one a live writer owns is named
    below the table with its owner."""
    from harness.cli.render import plural, sessions_table

    async def listed(store: SessionStore) -> tuple[list[SessionInfo], dict[str, SessionOwner]]:
        found = await store.list()
        owners = {}
        for info in found:
            if info.problem is None and (owner := await store.owner(info.id)) is not None:
                owners[info.id] = owner
        return found, owners

    infos, owners = _with_store(ctx, listed)
    infos = sorted(infos, key=lambda info: info.last_activity or 0, reverse=True)
    if as_json:
        _print_json(
            [
                {
                    "id": i.id,
                    "createdAt": i.created_at,
                    "cwd": i.cwd,
                    "eventCount": i.event_count,
                    "lastActivity": i.last_activity,
                    "title": i.title,
                    "location": i.location,
                    "problem": i.problem,
                    "owner": owners[i.id].to_json() if i.id in owners else None,
                }
                for i in infos
            ]
        )
        return
    console = Console()
    if not infos:
        options = _options(ctx)
        where = f" under {options.root}" if options.spec.scheme == "jsonl" else ""
        console.print(Text(f"no stored sessions{where}", style="dim"), soft_wrap=True)
        return
    console.print(sessions_table(infos, console.width), crop=False)  # an id wider than the screen stays whole
    for session_id, owner in owners.items():
        line = Text.assemble(("live", "yellow"), f": {session_id} is owned by {owner.describe()}")
        console.print(line, highlight=False, soft_wrap=True)
    unloadable = sum(1 for info in infos if info.problem is not None)
    if unloadable:
        console.print(
            f"[red]{plural(unloadable, 'session')} cannot be loaded[/] (the reason is shown above; "
            "`harness verify ID` gives the whole report)",
            highlight=False,
        )


_ID_OR_PATH = "A stored session's id, or a session log file (read as verify reads it)."


def _inspect(ctx: typer.Context, session_id: str, notes: list[str] | None = None) -> Session:
    """The session as ``inspect`` restores it, with a progress bar on stderr while it loads.

    An argument naming a regular file is read as a session log (as ``verify`` reads one), so
    an auditor can point ``log`` and ``surface`` at a file handed to them; nothing is written.
    For a file, ``notes`` gets what the reading added that the file does not hold: a torn
    tail left out, the closers a load would commit.
    """
    if os.path.isfile(session_id):
        from harness.cli.render import plural
        from harness.stores.jsonl.reader import read_log_file

        with _errors():
            stored = read_log_file(session_id).stored_log()
            restored, closers = restore_stored(stored.header.id, stored)
        if notes is not None and stored.torn is not None:
            notes.append(
                f"the file ends in a torn tail after byte {stored.torn.committed_offset} "
                f"({_torn_detail(stored.torn.detail)}); it is left out here, and a load would cut it"
            )
        if notes is not None and closers:
            seqs = f"seq {closers[0].seq}" + (f"..{closers[-1].seq}" if len(closers) > 1 else "")
            notes.append(
                f"{seqs}: {plural(len(closers), 'closer')} a load would commit for the open turn "
                "(not in the file)"
            )
        return restored

    owners: list[SessionOwner] = []

    async def load() -> Session | None:
        store = SessionStore(_options(ctx).backend(reading=True))
        try:
            owner = await store.owner(session_id)
            restored = await store.inspect(session_id, progress=advance)
            owner = owner or await store.owner(session_id)  # one that started while we read
            if owner is not None:
                owners.append(owner)
            return restored
        except SessionNotFound:
            if _looks_like_path(session_id):  # ids may hold "/": the store was asked first
                return None
            raise
        finally:
            await store.close()

    # _errors() outside the bar: an error line is printed once the bar is gone
    with _errors(), loading_bar(Console(stderr=True), f"loading {escape(session_id)}") as advance:
        session = asyncio.run(load())
    if session is None:
        _fail(f"no such file: {session_id} (and no stored session has that id)", 2)
    for owner in owners:
        Console(stderr=True).print(Text(live_line(session, owner), style="yellow"), highlight=False)
    return session


@app.command()
def log(
    ctx: typer.Context,
    session_id: str = typer.Argument(..., metavar="ID|PATH", help=_ID_OR_PATH),
    types: list[str] = typer.Option(
        [], "--type", metavar="TYPE", help="Only these event types (repeatable; a prefix ends in /)."
    ),
    since: int = typer.Option(0, "--since", metavar="SEQ", help="Only events with seq ≥ this."),
    as_json: bool = typer.Option(False, "--json", help="Print the events as JSON lines (wire form)."),
    store: str | None = _store_option(),
) -> None:
    """The Event Log of a session (what a load would see, closers included)."""
    from harness.cli.render import events_table

    notes: list[str] = []
    session = _inspect(ctx, session_id, notes)

    def wanted(kind: str) -> bool:
        return not types or any(kind == t or (t.endswith("/") and kind.startswith(t)) for t in types)

    events = [e for e in session.events if e.seq >= since and wanted(e.type)]
    if as_json:
        for event in events:
            sys.stdout.write(event.encode().decode("utf-8") + "\n")
        return
    console = Console()
    if not events:
        console.print(f"no events of {escape(session_id)} match", style="dim", soft_wrap=True)
        return
    console.print(events_table(events, console.width))
    for note in notes:
        console.print(Text.assemble(("note", "yellow"), ": ", note), highlight=False)


@app.command()
def surface(
    ctx: typer.Context,
    session_id: str = typer.Argument(..., metavar="ID|PATH", help=_ID_OR_PATH),
    as_json: bool = typer.Option(False, "--json", help="Print the messages as JSON."),
    at: int | None = typer.Option(None, "--at", metavar="SEQ", help="As it was right after event SEQ."),
    store: str | None = _store_option(),
) -> None:
    """The model history a session derives from its Surface (now, or right after --at SEQ)."""
    from harness.cli.render import messages_table, plural

    session = _inspect(ctx, session_id)
    if at is not None:
        from harness.cli.surface_at import show_surface_at

        with _errors():
            return show_surface_at(session, at, as_json, _print_json)
    messages = session.derive_messages()
    if as_json:
        _print_json(
            {
                "nodes": list(session.surface.nodes),
                "replaceGeneration": session.surface.replace_generation,
                "messages": [thaw(m.raw) for m in messages],
            }
        )
        return
    console = Console(highlight=False)
    console.print(
        f"{plural(len(session.surface), 'node')}, replace generation {session.surface.replace_generation}, "
        f"{plural(len(messages), 'message')}"
    )
    console.print(messages_table(messages, console.width))


def _verify_log(label: str, read: Callable[[], StoredLog]) -> dict[str, Any]:
    report: dict[str, Any] = {
        "target": label,
        "valid": False,
        "events": None,
        "tornTail": None,
        "problem": None,
    }
    try:
        stored = read()
        report["id"] = stored.header.id
        if stored.torn is not None:
            report["tornTail"] = {
                "committedOffset": stored.torn.committed_offset,
                "detail": stored.torn.detail,
            }
        session, closers = restore_stored(stored.header.id, stored)
        report.update(valid=True, events=len(stored.events), closers=len(closers), exit=0)
        report["nodes"] = len(session.surface)
    except (UnsupportedFormat, SessionNotFound) as error:
        report.update(problem=str(error), exit=2)
    except HarnessError as error:
        report.update(problem=str(error), exit=1)
    except OSError as error:
        report.update(problem=f"{error.strerror or error}: {error.filename or label}", exit=2)
    return report


def _torn_detail(detail: str) -> str:
    """A torn tail's detail without its own "torn tail at byte N: " lead (the line that
    shows it names the byte already)."""
    return re.sub(r"^torn tail at byte \d+: ", "", detail)


def _looks_like_path(target: str) -> bool:
    """A ``verify`` argument meant as a file: it names a directory or a log file name."""
    return os.sep in target or target.startswith(("~", ".")) or target.endswith((".jsonl", ".zstd", ".zst"))


@app.command()
def verify(
    ctx: typer.Context,
    target: str = typer.Argument(..., metavar="PATH|ID"),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
    store: str | None = _store_option(),
) -> None:
    """Validate a session file or a stored session (exit 0 valid, 1 invalid, 2 unreadable).

    A torn tail is a warning (exit 0); for an invalid log the first problem is printed."""
    from harness.cli.render import plural

    if os.path.isfile(target):
        from harness.stores.jsonl.reader import read_log_file

        report = _verify_log(target, lambda: read_log_file(target).stored_log())
    elif os.path.exists(target):
        report = {"target": target, "valid": False, "problem": "not a regular file", "exit": 2}
    elif (sqlite := _options(ctx).sqlite) and not os.path.exists(sqlite):
        problem = f"no SQLite file at {sqlite} (a read command creates none)"
        report = {"target": target, "valid": False, "problem": problem, "exit": 2}
    else:
        options = _options(ctx)
        unknown = False

        def read_stored() -> StoredLog:
            nonlocal unknown

            async def main() -> StoredLog:
                backend = options.backend(reading=True)
                try:
                    return await read_whole(backend, target)
                finally:
                    await backend.close()

            try:
                return asyncio.run(main())
            except SessionNotFound:
                unknown = True
                raise

        report = _verify_log(target, read_stored)
        if unknown and _looks_like_path(target):
            # Ids may hold "/", so the store was asked first; a path it does not know is a missing file.
            report.update(problem=f"no such file: {target}", exit=2)
    if as_json:
        _print_json(report)
    else:
        console = Console()
        if report["valid"]:
            events = plural(report["events"], "committed event")
            console.print(f"[green]valid[/]: {escape(target)} — {events}", highlight=False, soft_wrap=True)
            if report["tornTail"]:
                console.print(
                    f"[yellow]warning[/]: torn tail after byte {report['tornTail']['committedOffset']} "
                    f"({escape(_torn_detail(str(report['tornTail']['detail'])))}); "
                    "a load cuts it and repairs the log",
                    highlight=False,
                )
            if report.get("closers"):
                closers = plural(report["closers"], "closer")
                console.print(f"[yellow]note[/]: the last turn is open; a load adds {closers}")
        else:
            label = "unreadable" if report["exit"] == 2 else "invalid"
            Console(stderr=True).print(
                f"[bold red]{label}[/]: {escape(str(report['problem']))}", highlight=False, soft_wrap=True
            )
    raise typer.Exit(report["exit"])


@app.command()
def tail(
    ctx: typer.Context,
    session_id: str = typer.Argument(..., metavar="ID"),
    from_seq: int = typer.Option(0, "--from", min=0, metavar="N", help="Start at this seq (default 0)."),
    as_json: bool = typer.Option(False, "--json", help="Print each event as one JSON line (wire form)."),
    store: str | None = _store_option(),
) -> None:
    """Follow a session live: its events from --from on, then each one as it commits (Ctrl-C stops).

    A JSONL root or a harness SQLite file is polled every 0.1 s, reading only what is new.

    PostgreSQL tells the tail of each commit (LISTEN/NOTIFY)."""
    from harness.cli.render import tail_line
    from harness.stores.leases import TailingBackend

    console = Console(highlight=False, soft_wrap=True)

    def show(event: Event) -> None:
        if as_json:
            sys.stdout.write(event.encode().decode("utf-8") + "\n")
            sys.stdout.flush()
            return
        console.print(tail_line(event, console.width))

    async def follow() -> None:
        backend = _options(ctx).backend(reading=True)
        store = SessionStore(backend)
        try:
            if not isinstance(backend, TailingBackend):
                raise StorageError(
                    "tail follows JSONL, harness SQLite and PostgreSQL sessions "
                    f"(this store is {type(backend).__name__})"
                )
            await backend.stored_length(session_id)  # an unknown id fails here, before the banner
            if not as_json:
                owner = await store.owner(session_id)
                live = f" — live, owner {escape(owner.describe())}" if owner is not None else ""
                Console(stderr=True).print(f"[dim]following {escape(session_id)}{live} — Ctrl-C stops[/]")
            events = store.tail(session_id, from_seq)
            try:
                async for event in events:
                    show(event)
            finally:
                await events.aclose()
        finally:
            await store.close()

    with _errors():
        try:
            asyncio.run(follow())
        except KeyboardInterrupt:
            raise typer.Exit(130) from None


def _escape_unencodable() -> None:
    """A stored string may hold a lone surrogate (JavaScript writes one as ``\\ud800``),
    which no UTF-8 stream can encode: print it as that escape (valid inside JSON output
    too) instead of failing with ``UnicodeEncodeError`` halfway through a command."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")


def main() -> None:
    """Console-script entry point."""
    _escape_unencodable()
    app()

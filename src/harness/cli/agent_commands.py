"""The commands that run agents: ``run``, ``chat``, ``resume`` and ``export``.

They share the store options of the ``harness`` root command. The model is DeepSeek (or
any OpenAI-compatible endpoint: ``DEEPSEEK_BASE_URL``), the key comes from
``DEEPSEEK_API_KEY`` and never enters the log. World-changing tools ask for approval:
at a prompt in ``chat`` and ``resume`` on a terminal; a headless run denies them unless
``--yes``.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.text import Text

from harness.agent.approval import Approver, FixedApprover
from harness.agent.loop import Agent, AgentSettings, TurnOutcome
from harness.cli.app import _errors, _fail, _options, _store_option, app
from harness.cli.live import LivePrinter
from harness.cli.mcp_commands import McpConfigOption, config_path, open_hub
from harness.cli.otel import OTEL_HELP, live_telemetry
from harness.cli.outcome import (
    EXIT_BLOCKED,
    EXIT_CODES_HELP,
    EXIT_INTERRUPTED,
    EXIT_USAGE,
    Denial,
    denials,
    finish,
    outcome_json,
)
from harness.cli.ownership import TakeOverOption, WaitOption, load_owned
from harness.cli.terminal import (
    Interrupts,
    LineReader,
    PromptApprover,
    PromptInterrupted,
    ask_line,
    chat_help,
    checked_prompt,
    confirm,
    decode_text,
    interruptible_turn,
    is_chat_command,
)
from harness.compaction import ExtractiveSummarizer, LlmSummarizer, Summarizer
from harness.errors import InvalidMessage
from harness.events.event import Event
from harness.present.summary import plural
from harness.providers.base import Provider
from harness.query.line import StoreReader
from harness.recovery import WorldReport
from harness.recovery.render import render_report
from harness.session.session import Session
from harness.stores.store import SessionStore
from harness.tools.base import Tool

if TYPE_CHECKING:
    from harness.providers.credentials import CredentialCheck
    from harness.tools.mcp.hub import McpHub

__all__ = ["DEFAULT_MODEL", "PromptApprover", "system_prompt"]

DEFAULT_MODEL = "deepseek-v4-flash"
RESUME_PROMPT = "Carry on with the task from where the session stopped."


def system_prompt(workspace: Path) -> str:
    """The system prompt of a harness agent (our own wording)."""
    return (
        f"You are a careful coding agent. Your workspace is {workspace}; every path you use is "
        "inside it. Look before you change anything, make the smallest change that does the job, "
        "and say briefly what you did and what is left."
    )


def _provider(*, for_check: bool = False) -> Provider:
    from harness.providers.deepseek import DeepSeekProvider

    if for_check:
        # A world check reads the route and context window only; it sends nothing, so
        # neither the key nor the endpoint ($DEEPSEEK_BASE_URL) may stop it.
        return DeepSeekProvider(DeepSeekProvider.default_base_url, api_key="unused-by-a-world-check")
    return DeepSeekProvider()


def _tools(hub: McpHub | None = None) -> list[Tool]:
    """The built-in tools, then the MCP servers' tools (``hub``)."""
    from harness.tools.registry import default_tools
    from harness.tools.session_search import SessionSearch

    return [*default_tools(), SessionSearch(), *(hub.tools if hub is not None else ())]


async def _hub(
    option: str | None, root: Path, session: Session | None, console: Console | None
) -> McpHub | None:
    """The MCP servers of ``--mcp-config``, the workspace's ``.mcp.json`` or (a resumed
    session) the file its log names, connected."""
    path = config_path(option, root, session.events if session is not None else ())
    return await open_hub(path, root, [tool.spec.name for tool in _tools()], console)


async def _closed(hub: McpHub | None) -> None:
    if hub is not None:
        await hub.aclose()


def _summarizer(provider: Provider, model: str) -> Summarizer:
    """Automatic compaction summarizes with the model, and offline when that fails."""
    from harness.compaction.fallback import FallbackSummarizer

    return FallbackSummarizer(LlmSummarizer(provider, model=model), ExtractiveSummarizer())


def _approver(yes: bool, interactive: bool, console: Console, reader: LineReader | None = None) -> Approver:
    if yes:
        return FixedApprover("allowed-once")
    if interactive and sys.stdin.isatty():
        return PromptApprover(console, reader)
    return FixedApprover("unavailable")


async def _run_turns(
    store: SessionStore,
    session: Session,
    prompts: list[str],
    *,
    model: str,
    workspace: Path,
    approver: Approver,
    console: Console,
    context: list[dict[str, Any]] | None = None,
    provider: Provider | None = None,
    tools: list[Tool] | None = None,
    effort: str | None = None,
    interrupts: Interrupts | None = None,
) -> TurnOutcome | None:
    provider = provider or _provider()
    agent = Agent(
        session,
        provider,
        tools if tools is not None else _tools(),
        AgentSettings(model=model, system=system_prompt(workspace), reasoning_effort=effort),
        workspace=workspace,
        checkpoint=store.flush,
        approver=approver,
        summarizer=_summarizer(provider, model),
        sessions=StoreReader(store),
    )
    printer = LivePrinter(console)
    unsubscribe = session.subscribe(printer)
    outcome = None
    try:
        with interrupts or Interrupts() as routing:
            for index, prompt in enumerate(prompts):
                first = (context or []) if index == 0 else []
                outcome = await interruptible_turn(agent, prompt, first, routing, console)
                await store.flush(session)
                printer.stored()
    finally:
        unsubscribe()
        await provider.aclose()
    return outcome


def _prompt_argument(text: str, what: str) -> str:
    """A prompt given on the command line (``-``: read from stdin), refused (exit 2, nothing
    opened or appended) when it is empty or is not valid UTF-8."""
    try:
        if text == "-":
            data = getattr(sys.stdin, "buffer", sys.stdin).read()
            raw = data if isinstance(data, bytes) else data.encode("utf-8", "surrogateescape")
            text = decode_text(raw, f"{what} on stdin").strip()
        return checked_prompt(text, what)
    except InvalidMessage as error:
        _fail(f"{error}; nothing was sent or recorded", EXIT_USAGE)


def _owned_options(session_id: str | None, take_over: bool, wait: float | None) -> None:
    """--take-over and --wait apply to a stored session: refused (exit 2) without --session."""
    if session_id is None and (take_over or wait is not None):
        option = "--take-over" if take_over else "--wait"
        _fail(f"{option} applies to a stored session: give --session ID too", EXIT_USAGE)
    if take_over and wait is not None:
        _fail("--take-over and --wait exclude each other: take the session over now, or wait", EXIT_USAGE)


def _workspace(path: str | None) -> Path:
    root = Path(path or os.getcwd()).resolve()
    if not root.is_dir():
        _fail(f"workspace {root} is not a directory", 2)
    return root


def _repair_note(session: Session, console: Console) -> list[dict[str, Any]]:
    """Say what the load's crash repair added (the closers before the end-seed); return it
    as JSON too."""
    events = list(session.events)
    closers = [event for event in events[: session.first_live_seq] if _is_closer(event)]
    repaired: list[dict[str, Any]] = []
    for event in closers:
        data = event.data
        if event.type == "tool/result":
            call = data["message"]["source"].get("callId")
            code = data.get("error", {}).get("code")
            console.print(f"[yellow]repaired[/]: tool call {escape(str(call))} → {escape(str(code))}")
            repaired.append({"seq": event.seq, "callId": call, "code": code})
        elif event.type == "turn/end":
            turn = escape(str(data.get("turn")))
            console.print(f"[yellow]repaired[/]: turn {turn} closed as interrupted", highlight=False)
            repaired.append({"seq": event.seq, "turn": data.get("turn"), "reason": "interrupted"})
    return repaired


def _is_closer(event: Event) -> bool:
    data = event.data
    if event.type == "turn/end":
        reason = data.get("reason") if isinstance(data, dict) else None
        return isinstance(reason, dict) and reason.get("kind") == "interrupted"
    if event.type == "tool/result":
        error = data.get("error") if isinstance(data, dict) else None
        return isinstance(error, dict) and error.get("code") in ("TOOL_OUTCOME_UNKNOWN", "TOOL_NOT_STARTED")
    return False


# Options several commands share (one definition each).
ModelOption = Annotated[str, typer.Option("--model", envvar="HARNESS_MODEL", metavar="ID", help="Model id.")]
EffortOption = Annotated[
    str | None,
    typer.Option(
        "--effort", envvar="HARNESS_EFFORT", metavar="LEVEL", help="Reasoning effort: off, low, high or max."
    ),
]
WorkspaceOption = Annotated[
    str | None, typer.Option("--workspace", "-w", metavar="DIR", help="Workspace root (default: cwd).")
]


def _session_id(value: str | None) -> str | None:
    if value is not None and not value.strip():
        raise typer.BadParameter("needs a session id (`harness sessions` lists them), not an empty string")
    return value


SessionOption = Annotated[
    str | None,
    typer.Option("--session", metavar="ID", help="Continue this stored session.", callback=_session_id),
]
YesOption = Annotated[bool, typer.Option("--yes", "-y", help="Allow every world-changing tool call.")]
OtelOption = Annotated[bool, typer.Option("--otel", help=OTEL_HELP)]


@app.command(
    help="Run one task headless. World-changing tools are denied unless --yes.\n\n" + EXIT_CODES_HELP
)
def run(
    ctx: typer.Context,
    task: str = typer.Argument(
        ..., metavar="TASK", help="What the agent should do ('-' reads it from stdin)."
    ),
    model: ModelOption = DEFAULT_MODEL,
    effort: EffortOption = None,
    workspace: WorkspaceOption = None,
    session_id: SessionOption = None,
    yes: YesOption = False,
    as_json: bool = typer.Option(False, "--json", help="Print the outcome as JSON."),
    mcp_config: McpConfigOption = None,
    otel: OtelOption = False,
    take_over: TakeOverOption = False,
    wait: WaitOption = None,
    store: str | None = _store_option(),
) -> None:
    """Run one task headless; its help lists the exit codes (``EXIT_CODES_HELP``)."""
    _owned_options(session_id, take_over, wait)
    task = _prompt_argument(task, "the task")
    root = _workspace(workspace)
    console = Console(stderr=as_json)
    started: list[Session] = []  # for the line a second Ctrl-C prints

    async def main() -> tuple[Session, TurnOutcome | None, list[Denial]]:
        store = SessionStore(_options(ctx).backend())
        hub = None
        try:
            if session_id is not None:
                session = await load_owned(store, session_id, take_over=take_over, wait=wait)
            else:
                session = await store.create(cwd=str(root))
            started.append(session)
            start = len(session.events)
            hub = await _hub(mcp_config, root, session, console)
            if hub is not None:
                hub.record(session)
            approver = _approver(yes, False, console)
            with live_telemetry(session, otel, console):
                outcome = await _run_turns(
                    store,
                    session,
                    [task],
                    model=model,
                    workspace=root,
                    approver=approver,
                    console=console,
                    tools=_tools(hub),
                    effort=effort,
                )
            return session, outcome, denials(session, start)
        finally:
            await _closed(hub)
            await store.close()

    with _errors(), _stopped_at_once(started, console):
        session, outcome, denied = asyncio.run(main())
    finish(session, outcome, denied, as_json, console)


@contextmanager
def _stopped_at_once(started: list[Session], console: Console) -> Iterator[None]:
    """A second Ctrl-C stops the turn at once (it is still closed in the log): exit 130."""
    try:
        yield
    except KeyboardInterrupt:
        if started:
            console.print(f"[dim]stopped · session {escape(started[0].id)}[/]", highlight=False)
        raise typer.Exit(EXIT_INTERRUPTED) from None


async def _world_check(
    session: Session,
    root: Path,
    tools: list[Tool],
    provider: Provider,
    model: str | None,
    hub: McpHub | None,
    credentials: CredentialCheck | None,
) -> WorldReport:
    """The world check, with the MCP servers as connected now (none configured: every server
    the log used is reported as no longer configured) and the key check."""
    from harness.recovery import check_world

    return await asyncio.to_thread(
        check_world,
        session,
        root,
        tools,
        provider,
        model=model,
        mcp=hub.states if hub is not None else [],
        credentials=credentials,
    )


@app.command(
    help="Load a session, check the world against its log, and continue with one turn.\n\n"
    "The load commits its crash repair. Blocking findings stop here unless confirmed (or --yes). "
    "With --json, one JSON document: the repair, the check and the outcome.\n\n" + EXIT_CODES_HELP
)
def resume(
    ctx: typer.Context,
    session_id: str = typer.Argument(..., metavar="ID"),
    prompt: str = typer.Argument(
        RESUME_PROMPT, metavar="PROMPT", help="The message that continues the session."
    ),
    model: ModelOption = DEFAULT_MODEL,
    effort: EffortOption = None,
    workspace: WorkspaceOption = None,
    yes: bool = typer.Option(
        False, "--yes", "-y", help="Continue past blocking findings and allow world-changing calls."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the world check and outcome as JSON."),
    mcp_config: McpConfigOption = None,
    otel: OtelOption = False,
    take_over: TakeOverOption = False,
    wait: WaitOption = None,
    store: str | None = _store_option(),
) -> None:
    """Load, repair, check the world, continue (see the command help for the exit codes)."""
    _owned_options(session_id, take_over, wait)
    prompt = _prompt_argument(prompt, "the prompt")
    console = Console(stderr=as_json)
    found: dict[str, Any] = {"repaired": [], "check": None}  # what --json reports besides the outcome
    started: list[Session] = []
    telemetry = ExitStack()

    async def main() -> tuple[Session, TurnOutcome | None, list[Denial]]:
        from harness.providers.credentials import check_credentials
        from harness.recovery import record_report

        store = SessionStore(_options(ctx).backend())
        hub = None
        try:
            session = await load_owned(store, session_id, take_over=take_over, wait=wait)
            started.append(session)
            telemetry.enter_context(live_telemetry(session, otel, console))  # sees the check too
            root = _workspace(workspace or session.header.cwd)
            found["repaired"] = _repair_note(session, console)
            provider = _provider()
            hub = await _hub(mcp_config, root, session, console)
            tools = _tools(hub)
            credentials = await check_credentials(provider)
            report = await _world_check(session, root, tools, provider, model, hub, credentials)
            record_report(session, report)
            if hub is not None:
                hub.record(session)
            await store.flush(session)
            found["check"] = report.to_json()
            if not as_json:
                console.print(render_report(report))
            if report.blocking and yes:
                console.print("[yellow]--yes: going on past the blocking findings[/]")
            elif report.blocking and not await _confirm_blocking(console):
                await provider.aclose()
                found["stopped"] = "blocking"
                return session, None, []
            start = len(session.events)
            drift = report.drift_user_message()
            approver = _approver(yes, True, console)
            outcome = await _run_turns(
                store,
                session,
                [prompt],
                model=model,
                workspace=root,
                approver=approver,
                console=console,
                context=[dict(drift)] if drift is not None else None,
                provider=provider,
                tools=tools,
                effort=effort,
            )
            return session, outcome, denials(session, start)
        finally:
            telemetry.close()
            await _closed(hub)
            await store.close()

    with _errors(), _stopped_at_once(started, console):
        session, outcome, denied = asyncio.run(main())
    if found.get("stopped"):
        console.print("[red]stopped: the world check found blocking problems (use --yes to go on)[/]")
        if as_json:
            document = {**outcome_json(session, None, []), **found, "exit": EXIT_BLOCKED}
            sys.stdout.write(json.dumps(document, ensure_ascii=False) + "\n")
        raise typer.Exit(EXIT_BLOCKED)
    finish(session, outcome, denied, as_json, console, {**found, "stopped": None})


async def _confirm_blocking(console: Console) -> bool:
    if not sys.stdin.isatty():
        return False
    return await confirm(console, "Blocking findings above. Continue anyway?", default=False)


@app.command()
def check(
    ctx: typer.Context,
    session_id: str = typer.Argument(..., metavar="ID"),
    model: str | None = typer.Option(
        None, "--model", envvar="HARNESS_MODEL", metavar="ID", help="Model id to compare."
    ),
    workspace: WorkspaceOption = None,
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
    mcp_config: McpConfigOption = None,
    credentials: bool = typer.Option(
        False, "--credentials", help="Also check that the provider accepts the API key (GET /models)."
    ),
    store: str | None = _store_option(),
) -> None:
    """Check the outside world against a stored session; writes nothing.

    MCP servers are connected again to compare them with the log. Exit 0 when nothing blocks,
    1 when a finding blocks, 2 when the check could not run (no such session, a log that does
    not load, a bad option)."""

    async def main() -> Any:
        store = SessionStore(_options(ctx).backend(reading=True))
        try:
            session = await store.inspect(session_id)
        finally:
            await store.close()
        root = Path(workspace or session.header.cwd or os.getcwd()).resolve()
        provider = _provider(for_check=True)
        hub = None
        try:
            key = await _key_check(credentials)
            hub = await _hub(mcp_config, root, session, None)
            return await _world_check(session, root, _tools(hub), provider, model, hub, key)
        finally:
            await _closed(hub)
            await provider.aclose()

    with _errors(2):
        report = asyncio.run(main())
    if as_json:
        sys.stdout.write(json.dumps(report.to_json(), ensure_ascii=False, indent=2) + "\n")
    else:
        Console().print(render_report(report))
    raise typer.Exit(1 if report.blocking else 0)


async def _key_check(wanted: bool) -> CredentialCheck:
    """``check --credentials``: the key check of a provider built as ``run`` builds it."""
    from harness.errors import ProviderConfigError
    from harness.providers.credentials import CredentialCheck, check_credentials

    if not wanted:
        reason = "harness check sends nothing to the provider without --credentials"
        return CredentialCheck("unchecked", reason=reason)
    try:
        provider = _provider()
    except ProviderConfigError as error:
        if "no API key" not in str(error):
            raise
        return CredentialCheck("missing", reason=str(error))
    try:
        return await check_credentials(provider)
    finally:
        await provider.aclose()


@app.command()
def chat(
    ctx: typer.Context,
    model: ModelOption = DEFAULT_MODEL,
    effort: EffortOption = None,
    workspace: WorkspaceOption = None,
    session_id: SessionOption = None,
    yes: YesOption = False,
    mcp_config: McpConfigOption = None,
    otel: OtelOption = False,
    take_over: TakeOverOption = False,
    wait: WaitOption = None,
    store: str | None = _store_option(),
) -> None:
    """Talk with the agent in a terminal; /help lists the chat commands.

    /exit (or Ctrl-D) leaves; Ctrl-C cancels a running turn, and leaves at the prompt."""
    _owned_options(session_id, take_over, wait)
    root = _workspace(workspace)
    console = Console()

    async def main() -> tuple[Session, bool]:
        store = SessionStore(_options(ctx).backend())
        stopped = False
        hub = None
        telemetry = ExitStack()
        try:
            session = await (
                load_owned(store, session_id, take_over=take_over, wait=wait)
                if session_id
                else store.create(cwd=str(root))
            )
            telemetry.enter_context(live_telemetry(session, otel, console))
            hub = await _hub(mcp_config, root, session, console)
            if hub is not None:
                hub.record(session)
            banner = f"session {session.id} · {model} · /help, /exit"
            console.print(Text(banner, style="dim"), highlight=False, soft_wrap=True)
            reader = LineReader()
            approver = _approver(yes, True, console, reader)
            leaving = asyncio.Event()  # Ctrl-C between a turn and the next prompt: leave there
            with Interrupts(default=leaving.set) as interrupts:
                while not leaving.is_set():
                    try:
                        line = await ask_line(console, reader, "[bold]you>[/] ", interrupts=interrupts)
                        text = checked_prompt(line.strip(), "the message") if line.strip() else ""
                    except (EOFError, PromptInterrupted):
                        break
                    except InvalidMessage as error:
                        console.print(f"[red]not sent: {escape(str(error))}[/]", highlight=False)
                        continue
                    if not text:
                        continue  # an empty line sends nothing: just ask again
                    if is_chat_command(text):
                        if text == "/exit":
                            break
                        if text == "/help":
                            chat_help(console)
                        elif text == "/compact":
                            await _chat_compact(session, store, model, console, interrupts)
                        else:
                            console.print(
                                f"[red]unknown command {escape(text)}[/] (/help lists them)", highlight=False
                            )
                        continue
                    try:
                        await _run_turns(
                            store,
                            session,
                            [text],
                            model=model,
                            workspace=root,
                            approver=approver,
                            console=console,
                            tools=_tools(hub),
                            effort=effort,
                            interrupts=interrupts,
                        )
                    except KeyboardInterrupt:  # stopped at once: the turn is closed in the log
                        stopped = True
                        break
            return session, stopped
        finally:
            telemetry.close()
            await _closed(hub)
            await store.close()

    with _errors():
        session, stopped = asyncio.run(main())
    console.print(Text(f"session {session.id}", style="dim"), highlight=False, soft_wrap=True)
    if stopped:
        raise typer.Exit(130)


async def _chat_compact(
    session: Session, store: SessionStore, model: str, console: Console, interrupts: Interrupts
) -> None:
    """``/compact`` in chat: a manual compaction between turns (model first, offline fallback);
    Ctrl-C cancels it."""
    from harness.compaction import compact_now
    from harness.errors import CompactionError

    provider = _provider()
    cancel = asyncio.Event()
    try:
        with interrupts.routed_to(cancel.set):
            result = await compact_now(
                session, _summarizer(provider, model), checkpoint=store.flush, cancel=cancel
            )
    except CompactionError as error:
        console.print(f"[red]compaction failed ({escape(error.code)}): {escape(str(error))}[/]")
        return
    finally:
        await provider.aclose()
    if result is None:
        console.print("[dim]nothing to compact yet[/]")
    else:
        console.print(
            f"[green]compacted {plural(len(result.shadowed_seqs), 'Surface node')} into one checkpoint[/] "
            f"[dim]({result.shadowed_tokens} → {plural(result.checkpoint_tokens, 'token')})[/]"
        )


@app.command()
def export(
    ctx: typer.Context,
    session_ids: list[str] = typer.Argument(None, metavar="[ID]...", show_default=False),
    format: str = typer.Option(
        "markdown",
        "--format",
        metavar="FORMAT",
        help="markdown, openai (chat-completions JSON) or otlp (OpenTelemetry traces, OTLP/JSON).",
    ),
    as_json: bool = typer.Option(
        False, "--json", help="Print one JSON document: session, format, message count and the export."
    ),
    output: str | None = typer.Option(None, "--output", "-o", metavar="FILE", help="otlp: write to FILE."),
    endpoint: str | None = typer.Option(
        None,
        "--endpoint",
        metavar="URL",
        help="otlp: post to this OTLP/HTTP endpoint (a base URL; /v1/traces is appended). Default: "
        "OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT when no --output is given.",
    ),
    header: list[str] = typer.Option(
        [], "--header", metavar="NAME=VALUE", help="otlp: an HTTP header for the endpoint (repeatable)."
    ),
    protocol: str | None = typer.Option(
        None, "--protocol", metavar="PROTO", help="otlp: http/json (default) or http/protobuf."
    ),
    content: bool = typer.Option(
        False, "--content", help="otlp: include message content (redacted); off by default."
    ),
    to: str | None = typer.Option(
        None,
        "--to",
        metavar="SPEC",
        help="Copy the sessions (all when no ID is given) into this store instead: DIR or jsonl:DIR, "
        "sqlite:FILE or postgresql://URL. The events are copied unchanged.",
    ),
    layout: str = typer.Option(
        "harness",
        "--layout",
        metavar="harness|dsh",
        help="With --to sqlite:FILE for a new file: harness's own layout or DeepSeek Harness's (schema 17). "
        "An existing file keeps its layout.",
    ),
    to_compression: str | None = typer.Option(
        None,
        "--to-compression",
        metavar="zstd|none",
        help="With --to DIR: the encoding of the logs written (default: what the root uses; zstd if new).",
    ),
    store: str | None = _store_option(),
) -> None:
    """Print a session's history (Markdown, OpenAI messages, OTLP traces), or copy sessions.

    With --to the sessions (all when no ID is given) are copied into a JSONL root, either
    SQLite layout (harness's or DeepSeek Harness's, --layout) or PostgreSQL, events unchanged."""
    from harness.present.export import to_markdown, to_openai

    if to is not None:
        from harness.cli.convert import export_to

        export_to(ctx, session_ids or [], to, layout, to_compression, as_json)
        return
    if not session_ids or len(session_ids) != 1:
        _fail("export prints one session: give its ID (or --to SPEC to copy sessions)", 2)
    session_id = session_ids[0]
    if format not in ("markdown", "openai", "otlp"):
        _fail(f"--format must be markdown, openai or otlp, not {format!r}", 2)
    if format != "otlp" and (output or endpoint or header or protocol or content):
        _fail("--output, --endpoint, --header, --protocol and --content go with --format otlp", 2)

    async def main() -> Session:
        store = SessionStore(_options(ctx).backend(reading=True))
        try:
            return await store.inspect(session_id)
        finally:
            await store.close()

    with _errors():
        session = asyncio.run(main())
        if format == "otlp":
            from harness.cli.otel import export_otlp

            export_otlp(
                session,
                output=output,
                endpoint=endpoint,
                headers=header,
                protocol=protocol,
                content=content,
                as_json=as_json,
            )
            return
    content_out: Any = to_openai(session) if format == "openai" else to_markdown(session)
    if as_json:
        document = {
            "session": session.id,
            "format": format,
            "messages": len(session.derive_messages()),
            "content": content_out,
        }
        sys.stdout.write(json.dumps(document, ensure_ascii=False, indent=2) + "\n")
    elif format == "openai":
        sys.stdout.write(json.dumps(content_out, ensure_ascii=False, indent=2) + "\n")
    else:
        sys.stdout.write(content_out)

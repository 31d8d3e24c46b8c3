"""MCP servers on the command line: ``--mcp-config FILE`` for the agent commands, the
workspace's ``.mcp.json`` otherwise, and ``harness mcp list`` (docs/mcp.md).

A resumed session whose workspace has no ``.mcp.json`` and that is given no
``--mcp-config`` reconnects through the file its last ``mcp/connect`` events name, when it
still exists: ``harness resume`` reconnects every server the session used.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from harness.cli.app import _errors, _fail, app
from harness.cli.help import HarnessGroup
from harness.events.event import Event
from harness.tools.mcp.config import find_mcp_config, load_mcp_config
from harness.tools.mcp.records import MCP_CONNECT, McpServerState, read_connect

if TYPE_CHECKING:
    from harness.tools.mcp.hub import McpHub

__all__ = ["McpConfigOption", "config_path", "open_hub", "print_states"]

McpConfigOption = Annotated[
    str | None,
    typer.Option(
        "--mcp-config",
        envvar="HARNESS_MCP_CONFIG",
        metavar="FILE",
        help="MCP servers to connect (an mcpServers JSON file; default: the workspace's .mcp.json).",
    ),
]

mcp_app = typer.Typer(cls=HarnessGroup, help="MCP servers: list them and their tools.", no_args_is_help=True)
app.add_typer(mcp_app, name="mcp")


def _recorded_config(events: Sequence[Event]) -> Path | None:
    for event in reversed(events):
        if event.type == MCP_CONNECT:
            state = read_connect(event.seq, event.data)
            if state is not None and state.config and Path(state.config).is_file():
                return Path(state.config)
    return None


def config_path(option: str | None, workspace: Path, events: Sequence[Event] = ()) -> Path | None:
    """The MCP configuration to use: ``option`` (which must be a file: exit 2 otherwise), the
    workspace's ``.mcp.json``, or the file ``events`` last recorded; None when there is none."""
    if option is not None:
        path = Path(option).expanduser()
        if not path.is_file():
            _fail(f"--mcp-config {option}: no such file", 2)
        return path.resolve()
    found = find_mcp_config(workspace)
    return found.resolve() if found is not None else _recorded_config(events)


def _needs_sdk() -> None:
    import importlib.util

    if importlib.util.find_spec("mcp") is None:
        _fail(
            "MCP servers are configured, but the mcp SDK is not installed: "
            "pip install 'harness-sessions[mcp]'"
        )


async def open_hub(
    path: Path | None, workspace: Path, taken: Iterable[str], console: Console | None
) -> McpHub | None:
    """The connected servers of the file at ``path`` (None when there is no file or it lists
    none); each server's state is printed on ``console`` unless it is None."""
    if path is None:
        return None
    servers = load_mcp_config(path)
    if not servers:
        return None
    _needs_sdk()
    from harness.tools.mcp.hub import McpHub

    hub = McpHub(servers, cwd=workspace, config=str(path), taken=taken)
    await hub.connect()
    if console is not None:
        print_states(console, hub.states)
    return hub


def print_states(console: Console, states: Sequence[McpServerState]) -> None:
    """One line per server: its name, what it reported, its tools, or why it is unreachable."""
    for state in states:
        line = Text("mcp ", style="dim")
        line.append(state.name, style="bold")
        if state.reachable:
            who = " ".join(part for part in (state.server_name, state.server_version) if part)
            line.append(f" ({who})" if who else "")
            line.append(f" · {len(state.tools)} tool{'s' if len(state.tools) != 1 else ''}", style="dim")
        else:
            line.append(" unreachable: ", style="yellow")
            line.append((state.error or "").splitlines()[0] if state.error else "no answer")
        console.print(line, highlight=False, soft_wrap=True)


def _table(states: Sequence[McpServerState]) -> Table:
    table = Table(show_header=True, header_style="bold", expand=False)
    for column in ("server", "transport", "reachable", "reports", "tools"):
        table.add_column(column, no_wrap=column != "tools")
    for state in states:
        who = " ".join(part for part in (state.server_name, state.server_version) if part)
        tools = ", ".join(f"{tool.exposed}{'' if tool.read_only else ' (asks)'}" for tool in state.tools)
        table.add_row(
            Text(state.name),
            Text(f"{state.transport} {state.endpoint}"),
            Text("yes", style="green") if state.reachable else Text("no", style="red"),
            Text(who or "-"),
            Text(tools or ((state.error or "").splitlines()[0] if state.error else "-")),
        )
    return table


@mcp_app.command("list")
def list_servers(
    mcp_config: McpConfigOption = None,
    workspace: str | None = typer.Option(
        None, "--workspace", "-w", metavar="DIR", help="Workspace whose .mcp.json is read (default: cwd)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the servers as JSON."),
) -> None:
    """Connect each configured MCP server, list its tools, and say which are unreachable.

    Exit 0 when every server answered, 1 when one did not, 2 when there is no configuration."""
    root = Path(workspace or os.getcwd()).resolve()
    path = config_path(mcp_config, root)
    if path is None:
        _fail(f"no MCP configuration: give --mcp-config FILE or put a .mcp.json in {root}", 2)

    async def main() -> list[McpServerState]:
        hub = await open_hub(path, root, (), None)
        if hub is None:
            return []
        try:
            return list(hub.states)
        finally:
            await hub.aclose()

    with _errors():
        states = asyncio.run(main())
    if as_json:
        document: dict[str, Any] = {"config": str(path), "servers": [state.to_json() for state in states]}
        sys.stdout.write(json.dumps(document, ensure_ascii=False, indent=2) + "\n")
    else:
        console = Console()
        console.print(Text(f"MCP servers of {path}", style="bold"), highlight=False, soft_wrap=True)
        console.print(_table(states))
    raise typer.Exit(0 if all(state.reachable for state in states) else 1)
